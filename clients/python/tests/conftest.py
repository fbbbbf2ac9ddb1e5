"""Fixtures: the real `punctual serve` on a free port with a temporary data directory.

The binary comes from $PUNCTUAL_BIN, else <repo root>/target/debug/punctual. Tests
wait on conditions with `wait_until`, never on fixed sleeps.
"""
from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, TypeVar

import httpx
import pytest

import punctual

REPO = Path(__file__).resolve().parents[3]
T = TypeVar("T")


def binary() -> str:
    path = os.environ.get("PUNCTUAL_BIN") or str(REPO / "target" / "debug" / "punctual")
    if not os.path.exists(path):
        pytest.fail(f"no punctual binary at {path}: build it or set PUNCTUAL_BIN")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], Optional[T]], timeout: float = 10.0,
               interval: float = 0.03, what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Server:
    """One `punctual serve` process; restartable on the same port and data directory."""

    def __init__(self, data: Path, *, args: Optional[List[str]] = None,
                 env: Optional[Dict[str, str]] = None, port: Optional[int] = None) -> None:
        self.data = data
        self.port = port or free_port()
        self.args = args or []
        self.env = env or {}
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = data.parent / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Server":
        env = dict(os.environ, **self.env)
        env.pop("PUNCTUAL_TOKENS", None)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [binary(), "serve", "--listen", f"127.0.0.1:{self.port}", "--data", str(self.data),
             "--grace-period", "1s", *self.args],
            stdout=log, stderr=log, env=env,
        )
        log.close()

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"punctual exited: {self.log_path.read_text()[-2000:]}")
            try:
                return httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(ready, timeout=15, what="/readyz")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def client(self, **kwargs: object) -> punctual.Client:
        return punctual.Client(self.url, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One server shared by the tests that need nothing special (queues are unique)."""
    with tempfile.TemporaryDirectory(prefix="punctual-py-") as d:
        srv = Server(Path(d) / "data").start()
        try:
            yield srv
        finally:
            srv.stop()


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start a server of the test's own (config file, tokens, restarts)."""
    started: List[Server] = []
    counter = itertools.count()

    def make(**kwargs: object) -> Server:
        srv = Server(tmp_path / f"data-{next(counter)}", **kwargs)  # type: ignore[arg-type]
        started.append(srv)
        return srv.start()

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[punctual.Client]:
    c = server.client()
    yield c
    c.close()


@pytest.fixture
def queue_name(request: pytest.FixtureRequest) -> str:
    return f"py.{request.node.name[:40]}.{uuid.uuid4().hex[:8]}"


class Records(logging.Handler):
    """Collects the `punctual` logger's records (thread-safe: logging locks handlers)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self, name: str) -> List[logging.LogRecord]:
        return [r for r in list(self.records) if getattr(r, "event", None) == name]


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger("punctual")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


class Seen:
    """What a handler saw, and an event per delivery for tests to wait on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leases: List[punctual.Lease] = []
        self.at: List[float] = []
        self.cv = threading.Condition(self.lock)

    def add(self, lease: punctual.Lease) -> None:
        with self.cv:
            self.leases.append(lease)
            self.at.append(time.monotonic())
            self.cv.notify_all()

    def wait_for(self, n: int, timeout: float = 10.0) -> List[punctual.Lease]:
        with self.cv:
            ok = self.cv.wait_for(lambda: len(self.leases) >= n, timeout=timeout)
            assert ok, f"timed out after {timeout}s waiting for delivery {n} (saw {len(self.leases)})"
            return list(self.leases)


@pytest.fixture
def seen() -> Seen:
    return Seen()


def gone(c: punctual.Client, queue: str, key: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            c.get(queue, key)
            return False
        except punctual.NotFound:
            return True
    return check
