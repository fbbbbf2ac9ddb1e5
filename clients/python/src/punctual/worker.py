"""A threaded pull worker: handlers per queue, leases kept alive, acks batched.

Threads and what each owns:

- one **poller** per queue long-polls ``POST /v1/queues/{q}/lease`` for as many tasks
  as the queue has free handler slots, and hands each lease to the queue's pool;
- a **pool** of ``concurrency`` daemon threads per queue runs the handlers;
- one **extender** extends every running lease each ``lease_for / 3``, so a handler may
  run longer than its lease; it stops at the end of a shutdown's grace period, so the
  leases of handlers still running then expire and their tasks come back;
- one **acker** sends outcomes in batches (``POST /v1/acks``) every ``ack_interval``
  or as soon as ``ack_batch`` are pending.

Unreachable server: every thread backs off and tries again; the worker logs once when
the connection is lost and once when it is back, and never raises out of its threads.

Shutdown (``stop(grace)``): the pollers stop at once — an open long poll is cut, so the
server releases whatever it was about to hand over — running handlers get ``grace``
seconds to finish and their outcomes are acked; a handler still running after that is
abandoned: its outcome is never sent and its lease expires.
"""
from __future__ import annotations

import logging
import queue as _queue
import signal
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import httpx

from ._workers import ConnectionLog, failed, fields, log, outcome_of, pause_after
from .client import Client
from .errors import Conflict, NotFound, PunctualError, Unavailable
from .results import Lease
from .types import Duration, Outcome, duration_seconds

Handler = Callable[[Lease], Optional[Outcome]]

try:  # httpcore ships with httpx; used only to make an open long poll interruptible.
    import httpcore as _httpcore
except ImportError:  # pragma: no cover
    _httpcore = None  # type: ignore[assignment]


class _CuttableBackend(_httpcore.NetworkBackend if _httpcore else object):  # type: ignore[misc]
    """A network backend that remembers its sockets, so ``cut`` can wake a blocked read.

    Closing a socket from another thread does not wake a thread blocked reading it;
    ``shutdown`` does. Once cut, a connection opened afterwards is shut down at once: a
    poller that checked for a stop just before it began still cannot start a long poll.
    """

    def __init__(self) -> None:
        self._inner = _httpcore.SyncBackend()
        self._lock = threading.Lock()
        self._sockets: List[socket.socket] = []
        self._cut = False

    def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                    local_address: Optional[str] = None, socket_options: Any = None) -> Any:
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        sock = stream.get_extra_info("socket")
        if sock is not None:
            with self._lock:
                if self._cut:
                    _shutdown(sock)
                    return stream
                self._sockets = [s for s in self._sockets if s.fileno() != -1]
                self._sockets.append(sock)
        return stream

    def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                            socket_options: Any = None) -> Any:
        return self._inner.connect_unix_socket(path, timeout, socket_options)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _cuttable_transport() -> Tuple[httpx.BaseTransport, Optional[_CuttableBackend]]:
    """An httpx transport whose open requests ``backend.cut()`` can abort.

    httpx has no public hook for the network backend, so this swaps the pool of an
    ``HTTPTransport``; should that attribute ever move, polls simply are not cut and a
    stop waits for the open long poll (at most ``wait``) to answer.
    """
    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if _httpcore is None or not isinstance(pool, _httpcore.ConnectionPool):
        return transport, None
    backend = _CuttableBackend()
    pool.close()
    setattr(transport, "_pool", _httpcore.ConnectionPool(network_backend=backend))
    return transport, backend


class _Queue:
    """One registered queue: its handler, its slots, its pool and its poller."""

    def __init__(self, name: str, handler: Handler, concurrency: int) -> None:
        self.name = name
        self.handler = handler
        self.concurrency = concurrency
        self.in_flight = 0
        self.slots = threading.Condition()
        self.work: "_queue.Queue[Optional[Lease]]" = _queue.Queue()
        self.threads: List[threading.Thread] = []
        self.poll_client: Optional[Client] = None
        self.backend: Optional[_CuttableBackend] = None


class Worker:
    """Runs handlers for the tasks of one or more queues.

    ``lease_for`` (seconds or timedelta) is each lease's length, extended every third of
    it while the handler runs; ``wait`` is the long poll's hold; ``ack_interval`` and
    ``ack_batch`` bound how long an outcome waits to be sent; ``max_backoff`` caps the
    pause between attempts to reach an unreachable server.
    """

    def __init__(
        self,
        client: Optional[Client] = None,
        lease_for: Duration = 30.0,
        *,
        wait: Duration = 5.0,
        ack_interval: float = 0.05,
        ack_batch: int = 100,
        max_backoff: float = 5.0,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        self.client = client if client is not None else Client()
        self.lease_for = duration_seconds(lease_for)
        if self.lease_for < 1:
            raise ValueError("lease_for must be at least 1 second")
        self.wait = duration_seconds(wait)
        self.ack_interval = ack_interval
        self.ack_batch = ack_batch
        self.max_backoff = max_backoff
        self.log = logger or log
        self._queues: Dict[str, _Queue] = {}
        self._started = False
        self._stopping = threading.Event()
        # Set once stop has cut the long polls in flight: from then on no lease is taken.
        self._polls_cut = threading.Event()
        self._stopped = threading.Event()
        self._connection = ConnectionLog(self.log, self.client.server)
        self._abandoned = False
        self._outcome_lock = threading.Lock()
        self._running: Dict[str, float] = {}  # lease_id -> next extension (monotonic)
        self._running_cv = threading.Condition()
        self._extender_stop = threading.Event()
        self._acks: List[Tuple[str, Outcome]] = []
        self._acks_cv = threading.Condition()
        self._acker_stop = False
        self._threads: List[threading.Thread] = []

    # -- registration ----------------------------------------------------------------

    def register(self, queue: str, fn: Handler, concurrency: int = 4) -> None:
        """Run ``fn`` for the tasks of ``queue``, up to ``concurrency`` at once."""
        if self._started:
            raise RuntimeError("register handlers before starting the worker")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if queue in self._queues:
            raise ValueError(f"queue {queue!r} already has a handler")
        self._queues[queue] = _Queue(queue, fn, concurrency)

    def handler(self, queue: str, concurrency: int = 4) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``."""
        def decorate(fn: Handler) -> Handler:
            self.register(queue, fn, concurrency)
            return fn
        return decorate

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> "Worker":
        """Start every thread and return at once."""
        if self._started:
            raise RuntimeError("the worker was already started")
        if not self._queues:
            raise RuntimeError("no handler registered")
        self._started = True
        for q in self._queues.values():
            transport, q.backend = _cuttable_transport()
            q.poll_client = self.client.with_transport(transport)
            for i in range(q.concurrency):
                self._spawn(f"punctual-{q.name}-{i}", self._pool_loop, q, into=q.threads)
            self._spawn(f"punctual-poll-{q.name}", self._poll_loop, q)
        self._spawn("punctual-extender", self._extend_loop)
        self._spawn("punctual-acker", self._ack_loop)
        self.log.info("worker started for %s", ", ".join(self._queues),
                      extra={"event": "worker_started", "queues": list(self._queues)})
        return self

    def _spawn(self, name: str, target: Callable[..., None], *args: Any,
               into: Optional[List[threading.Thread]] = None) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        (into if into is not None else self._threads).append(thread)

    def run(self, grace: float = 10.0) -> None:
        """Start, and block until SIGINT/SIGTERM (in the main thread) or ``stop``."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: threading.Thread(
                    target=self.stop, args=(grace,), daemon=True).start())
        if not self._started:
            self.start()
        self._stopped.wait()

    def __enter__(self) -> "Worker":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self, grace: float = 10.0) -> None:
        """Stop leasing; give running handlers ``grace`` seconds; ack what finished."""
        if self._stopping.is_set():
            self._stopped.wait()
            return
        self._stopping.set()
        deadline = time.monotonic() + grace
        for q in self._queues.values():
            if q.backend is not None:
                q.backend.cut()
            with q.slots:
                q.slots.notify_all()
        self._polls_cut.set()
        for thread in self._threads:
            if thread.name.startswith("punctual-poll-"):
                thread.join(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
        with self._running_cv:
            while self._running and time.monotonic() < deadline:
                self._running_cv.wait(timeout=max(0.0, deadline - time.monotonic()))
        # Same lock order as _handle: outcome lock, then the running set.
        with self._outcome_lock:
            with self._running_cv:
                left = list(self._running)
            self._abandoned = bool(left)
        if left:
            self.log.warning(
                "%d handler(s) still running after the %.1fs grace period: not acked, "
                "their leases will expire", len(left), grace,
                extra={"event": "handlers_abandoned", "lease_ids": left})
        self._extender_stop.set()
        with self._running_cv:
            self._running_cv.notify_all()
        with self._acks_cv:
            self._acker_stop = True
            self._acks_cv.notify_all()
        for thread in self._threads:
            thread.join(timeout=self.client.timeout + 1.0)
        for q in self._queues.values():
            for _ in q.threads:
                q.work.put(None)
            if q.poll_client is not None:
                q.poll_client.close()
        self.log.info("worker stopped", extra={"event": "worker_stopped"})
        self._stopped.set()

    # -- polling ---------------------------------------------------------------------

    def _poll_loop(self, q: _Queue) -> None:
        assert q.poll_client is not None
        failures = 0
        while not self._stopping.is_set():
            with q.slots:
                while q.in_flight >= q.concurrency and not self._stopping.is_set():
                    q.slots.wait()
                free = q.concurrency - q.in_flight
            if self._stopping.is_set():
                break
            try:
                leases = q.poll_client.lease(
                    q.name, max=min(free, 1000), lease_for=self.lease_for, wait=self.wait,
                    retries=0,
                )
            except Unavailable as exc:
                if self._stopping.is_set():
                    break
                self._connection.down(exc)
                failures += 1
                self._stopping.wait(pause_after(failures, self.max_backoff))
                continue
            except PunctualError as exc:  # refused (a push queue, a bad token): say so, go on
                failures += 1
                self.log.error("lease on %s refused: %s", q.name, exc,
                               extra={"event": "lease_refused", "queue": q.name, "code": exc.code})
                self._stopping.wait(max(1.0, pause_after(failures, self.max_backoff)))
                continue
            except Exception as exc:  # never let the poller die
                failures += 1
                self.log.exception("lease on %s failed: %s", q.name, exc,
                                   extra={"event": "lease_failed", "queue": q.name})
                self._stopping.wait(pause_after(failures, self.max_backoff))
                continue
            failures = 0
            self._connection.up()
            for lease in leases:
                self._begin(q, lease)

    def _begin(self, q: _Queue, lease: Lease) -> None:
        with q.slots:
            q.in_flight += 1
        with self._running_cv:
            self._running[lease.lease_id] = time.monotonic() + self.lease_for / 3
            self._running_cv.notify_all()
        self.log.debug("leased %s/%s attempt %d", q.name, lease.key, lease.attempt,
                       extra={"event": "leased", "queue": q.name, "key": lease.key,
                              "attempt": lease.attempt, "delivery_id": lease.delivery_id})
        q.work.put(lease)

    # -- handlers --------------------------------------------------------------------

    def _pool_loop(self, q: _Queue) -> None:
        while True:
            lease = q.work.get()
            if lease is None:
                return
            self._handle(q, lease)

    def _handle(self, q: _Queue, lease: Lease) -> None:
        try:
            outcome = outcome_of(q.handler(lease))
        except Exception as exc:
            outcome = failed(self.log, lease, exc)
        with self._outcome_lock:
            abandoned = self._abandoned
            with self._running_cv:
                self._running.pop(lease.lease_id, None)
                self._running_cv.notify_all()
            if not abandoned:
                with self._acks_cv:
                    self._acks.append((lease.lease_id, outcome))
                    self._acks_cv.notify_all()
        if abandoned:
            self.log.warning("handler for %s/%s finished after the grace period: not acked",
                             q.name, lease.key, extra={"event": "ack_dropped", **fields(lease)})
        with q.slots:
            q.in_flight -= 1
            q.slots.notify_all()

    # -- lease extension -------------------------------------------------------------

    def _extend_loop(self) -> None:
        failures = 0
        while not self._extender_stop.is_set():
            with self._running_cv:
                now = time.monotonic()
                due = [lid for lid, at in self._running.items() if at <= now]
                if not due:
                    nearest = min(self._running.values(), default=now + 1.0)
                    self._running_cv.wait(timeout=max(0.01, nearest - now))
                    continue
            for lease_id in due:
                if self._extender_stop.is_set():
                    return
                retry_in = self.lease_for / 3
                try:
                    self.client.extend(lease_id, self.lease_for)
                    failures = 0
                    self._connection.up()
                except (Conflict, NotFound) as exc:
                    self.log.warning("lease %s lost: %s", lease_id, exc,
                                     extra={"event": "lease_lost", "lease_id": lease_id})
                    with self._running_cv:
                        self._running.pop(lease_id, None)
                    continue
                except Unavailable as exc:
                    self._connection.down(exc)
                    failures += 1
                    retry_in = min(retry_in, pause_after(failures, self.max_backoff))
                except Exception as exc:
                    self.log.exception("extending lease %s failed: %s", lease_id, exc,
                                       extra={"event": "extend_failed", "lease_id": lease_id})
                    retry_in = min(retry_in, 1.0)
                with self._running_cv:
                    if lease_id in self._running:
                        self._running[lease_id] = time.monotonic() + retry_in

    # -- acks ------------------------------------------------------------------------

    def _ack_loop(self) -> None:
        failures = 0
        while True:
            with self._acks_cv:
                while not self._acks and not self._acker_stop:
                    self._acks_cv.wait()
                if not self._acks and self._acker_stop:
                    return
                # Gather for a moment, so a burst of outcomes goes in one call.
                gather_until = time.monotonic() + self.ack_interval
                while (len(self._acks) < self.ack_batch and not self._acker_stop
                       and time.monotonic() < gather_until):
                    self._acks_cv.wait(timeout=max(0.0, gather_until - time.monotonic()))
                batch, self._acks = self._acks[:1000], self._acks[1000:]
            try:
                results = self.client.ack_many(batch)
            except Unavailable as exc:
                self._connection.down(exc)
                failures += 1
                with self._acks_cv:
                    self._acks[:0] = batch
                    stopping = self._acker_stop
                if stopping and failures > 3:
                    self.log.error("%d ack(s) not sent: the server is unreachable", len(batch),
                                   extra={"event": "acks_dropped", "count": len(batch)})
                    with self._acks_cv:
                        self._acks = []
                    return
                time.sleep(pause_after(failures, self.max_backoff))
                continue
            except Exception as exc:
                self.log.exception("sending %d ack(s) failed: %s", len(batch), exc,
                                   extra={"event": "ack_failed", "count": len(batch)})
                continue
            failures = 0
            self._connection.up()
            for result in results:
                if not result.ok:
                    self.log.warning("ack of lease %s refused (%d): %s", result.lease_id,
                                     result.status, result.error,
                                     extra={"event": "ack_refused", "lease_id": result.lease_id,
                                            "status": result.status})
