"""The asyncio pull worker: ``Worker``'s protocol on one event loop, with coroutine
functions as handlers.

Tasks and what each owns:

- one **poller** per queue long-polls ``POST /v1/queues/{q}/lease`` for as many tasks as
  the queue has free handler slots (``concurrency``), and starts a handler task for each
  lease;
- each **handler** task awaits the queue's handler and, beside it, a **keeper** that
  extends the lease every ``lease_for / 3`` until the handler ends;
- one **acker** sends outcomes in batches (``POST /v1/acks``) every ``ack_interval`` or
  as soon as ``ack_batch`` are pending.

Unreachable server: every task backs off and tries again; the worker logs once when the
connection is lost and once when it is back, and no task of it raises.

Shutdown (``await stop(grace)``): the pollers are cancelled at once, which closes an open
long poll, so the server releases whatever it was about to hand over; running handlers
get ``grace`` seconds to finish and their outcomes are acked; a handler still running
after that is cancelled: its outcome is never sent and its lease expires.

Everything the worker creates belongs to the event loop that ran ``start``.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import signal
from typing import Awaitable, Callable, Dict, List, Optional, Tuple

from ._workers import ConnectionLog, failed, fields, log, outcome_of, pause_after
from .async_client import AsyncClient
from .errors import Conflict, NotFound, PunctualError, Unavailable
from .results import Lease
from .types import Duration, Outcome, duration_seconds

AsyncHandler = Callable[[Lease], Awaitable[Optional[Outcome]]]


class _Queue:
    """One registered queue: its handler and its slots."""

    def __init__(self, name: str, handler: AsyncHandler, concurrency: int) -> None:
        self.name = name
        self.handler = handler
        self.concurrency = concurrency
        self.in_flight = 0
        self.freed: asyncio.Event  # set when a handler ends; made by start, on its loop


class AsyncWorker:
    """Runs coroutine handlers for the tasks of one or more queues.

    The arguments are ``Worker``'s; ``client`` is an ``AsyncClient`` (by default one of
    ``$PUNCTUAL_SERVER``, closed by ``stop``).
    """

    # Made by start, on the event loop the worker runs on.
    _stopped: asyncio.Event
    _polls_cut: asyncio.Event
    _ack_added: asyncio.Event

    def __init__(
        self,
        client: Optional[AsyncClient] = None,
        lease_for: Duration = 30.0,
        *,
        wait: Duration = 5.0,
        ack_interval: float = 0.05,
        ack_batch: int = 100,
        max_backoff: float = 5.0,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        self._owns_client = client is None
        self.client = client if client is not None else AsyncClient()
        self.lease_for = duration_seconds(lease_for)
        if self.lease_for < 1:
            raise ValueError("lease_for must be at least 1 second")
        self.wait = duration_seconds(wait)
        self.ack_interval = ack_interval
        self.ack_batch = ack_batch
        self.max_backoff = max_backoff
        self.log = logger or log
        self._connection = ConnectionLog(self.log, self.client.server)
        self._queues: Dict[str, _Queue] = {}
        self._started = False
        self._stopping = False
        self._abandoned = False
        self._acker_stopping = False
        self._pollers: List["asyncio.Task[None]"] = []
        self._acker: Optional["asyncio.Task[None]"] = None
        self._running: Dict["asyncio.Task[None]", Lease] = {}
        self._acks: List[Tuple[str, Outcome]] = []
        self._signal_stop: Optional["asyncio.Task[None]"] = None

    # -- registration ----------------------------------------------------------------

    def register(self, queue: str, fn: AsyncHandler, concurrency: int = 4) -> None:
        """Run ``fn`` (an ``async def``) for the tasks of ``queue``, up to ``concurrency``
        at once."""
        if self._started:
            raise RuntimeError("register handlers before starting the worker")
        if not (inspect.iscoroutinefunction(fn)
                or inspect.iscoroutinefunction(getattr(fn, "__call__", None))):
            raise TypeError("an AsyncWorker handler is a coroutine function (async def); "
                            "Worker runs plain functions")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if queue in self._queues:
            raise ValueError(f"queue {queue!r} already has a handler")
        self._queues[queue] = _Queue(queue, fn, concurrency)

    def handler(self, queue: str, concurrency: int = 4) -> Callable[[AsyncHandler], AsyncHandler]:
        """Decorator form of ``register``."""
        def decorate(fn: AsyncHandler) -> AsyncHandler:
            self.register(queue, fn, concurrency)
            return fn
        return decorate

    # -- life cycle ------------------------------------------------------------------

    async def start(self) -> "AsyncWorker":
        """Start every task and return at once."""
        if self._started:
            raise RuntimeError("the worker was already started")
        if not self._queues:
            raise RuntimeError("no handler registered")
        self._started = True
        self._stopped = asyncio.Event()
        self._polls_cut = asyncio.Event()
        self._ack_added = asyncio.Event()
        for q in self._queues.values():
            q.freed = asyncio.Event()
            self._pollers.append(asyncio.ensure_future(self._poll_loop(q)))
        self._acker = asyncio.ensure_future(self._ack_loop())
        self.log.info("worker started for %s", ", ".join(self._queues),
                      extra={"event": "worker_started", "queues": list(self._queues)})
        return self

    async def run(self, grace: float = 10.0) -> None:
        """Start, and return once stopped: by ``stop`` or by SIGINT/SIGTERM (where the
        event loop can take signal handlers)."""
        if not self._started:
            await self.start()
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._stop_on_signal, grace)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread, or no signals on this platform
        try:
            await self._stopped.wait()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _stop_on_signal(self, grace: float) -> None:
        if self._signal_stop is None:
            self._signal_stop = asyncio.ensure_future(self.stop(grace))

    async def __aenter__(self) -> "AsyncWorker":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self, grace: float = 10.0) -> None:
        """Stop leasing; give running handlers ``grace`` seconds; ack what finished."""
        if not self._started:
            return
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        for poller in self._pollers:
            poller.cancel()
        await asyncio.gather(*self._pollers, return_exceptions=True)
        self._polls_cut.set()
        running = list(self._running)
        if running:
            _, late = await asyncio.wait(running, timeout=grace)
            if late:
                self._abandoned = True
                self.log.warning(
                    "%d handler(s) still running after the %.1fs grace period: cancelled, not "
                    "acked, their leases will expire", len(late), grace,
                    extra={"event": "handlers_abandoned",
                           "lease_ids": [self._running[t].lease_id for t in late if t in self._running]})
                for task in late:
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)
        self._acker_stopping = True
        self._ack_added.set()
        if self._acker is not None:
            await self._acker
        if self._owns_client:
            await self.client.aclose()
        self.log.info("worker stopped", extra={"event": "worker_stopped"})
        self._stopped.set()

    # -- polling ---------------------------------------------------------------------

    async def _poll_loop(self, q: _Queue) -> None:
        failures = 0
        while True:  # until stop cancels it
            while q.in_flight >= q.concurrency:
                q.freed.clear()
                await q.freed.wait()
            free = q.concurrency - q.in_flight
            try:
                leases = await self.client.lease(
                    q.name, max=min(free, 1000), lease_for=self.lease_for, wait=self.wait,
                    retries=0,
                )
            except Unavailable as exc:
                self._connection.down(exc)
                failures += 1
                await asyncio.sleep(pause_after(failures, self.max_backoff))
                continue
            except PunctualError as exc:  # refused (a push queue, a bad token): say so, go on
                failures += 1
                self.log.error("lease on %s refused: %s", q.name, exc,
                               extra={"event": "lease_refused", "queue": q.name, "code": exc.code})
                await asyncio.sleep(max(1.0, pause_after(failures, self.max_backoff)))
                continue
            except Exception as exc:  # never let the poller die
                failures += 1
                self.log.exception("lease on %s failed: %s", q.name, exc,
                                   extra={"event": "lease_failed", "queue": q.name})
                await asyncio.sleep(pause_after(failures, self.max_backoff))
                continue
            failures = 0
            self._connection.up()
            # No await from here to the next lease: a stop cannot drop these leases.
            for lease in leases:
                q.in_flight += 1
                self.log.debug("leased %s/%s attempt %d", q.name, lease.key, lease.attempt,
                               extra={"event": "leased", **fields(lease)})
                task = asyncio.ensure_future(self._handle(q, lease))
                self._running[task] = lease
                task.add_done_callback(self._running.pop)

    # -- handlers --------------------------------------------------------------------

    async def _handle(self, q: _Queue, lease: Lease) -> None:
        keeper = asyncio.ensure_future(self._keep_alive(lease))
        try:
            try:
                outcome = outcome_of(await q.handler(lease))
            except Exception as exc:
                outcome = failed(self.log, lease, exc)
        finally:
            keeper.cancel()
            q.in_flight -= 1
            q.freed.set()
        if self._abandoned:
            self.log.warning("handler for %s/%s finished after the grace period: not acked",
                             q.name, lease.key, extra={"event": "ack_dropped", **fields(lease)})
            return
        self._acks.append((lease.lease_id, outcome))
        self._ack_added.set()

    async def _keep_alive(self, lease: Lease) -> None:
        """Extend ``lease`` every ``lease_for / 3`` until cancelled or lost."""
        failures = 0
        retry_in = self.lease_for / 3
        while True:
            await asyncio.sleep(retry_in)
            retry_in = self.lease_for / 3
            try:
                await self.client.extend(lease.lease_id, self.lease_for)
                failures = 0
                self._connection.up()
            except (Conflict, NotFound) as exc:
                self.log.warning("lease %s lost: %s", lease.lease_id, exc,
                                 extra={"event": "lease_lost", "lease_id": lease.lease_id})
                return
            except Unavailable as exc:
                self._connection.down(exc)
                failures += 1
                retry_in = min(retry_in, pause_after(failures, self.max_backoff))
            except Exception as exc:
                self.log.exception("extending lease %s failed: %s", lease.lease_id, exc,
                                   extra={"event": "extend_failed", "lease_id": lease.lease_id})
                retry_in = min(retry_in, 1.0)

    # -- acks ------------------------------------------------------------------------

    async def _gathered(self) -> bool:
        """Wait for an outcome, then for a moment more so that a burst goes in one call;
        False once stopping with none left."""
        while not self._acks:
            if self._acker_stopping:
                return False
            self._ack_added.clear()
            await self._ack_added.wait()
        loop = asyncio.get_running_loop()
        until = loop.time() + self.ack_interval
        while len(self._acks) < self.ack_batch and not self._acker_stopping:
            left = until - loop.time()
            if left <= 0:
                break
            self._ack_added.clear()
            try:
                await asyncio.wait_for(self._ack_added.wait(), left)
            except asyncio.TimeoutError:
                break
        return True

    async def _ack_loop(self) -> None:
        failures = 0
        while await self._gathered():
            batch, self._acks = self._acks[:1000], self._acks[1000:]
            try:
                results = await self.client.ack_many(batch)
            except Unavailable as exc:
                self._connection.down(exc)
                failures += 1
                self._acks[:0] = batch
                if self._acker_stopping and failures > 3:
                    self.log.error("%d ack(s) not sent: the server is unreachable", len(self._acks),
                                   extra={"event": "acks_dropped", "count": len(self._acks)})
                    self._acks = []
                    return
                await asyncio.sleep(pause_after(failures, self.max_backoff))
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
