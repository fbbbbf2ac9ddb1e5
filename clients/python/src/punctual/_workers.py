"""What the threaded ``Worker`` and the asyncio ``AsyncWorker`` share: a handler's
result read as an outcome, the pause after failures, the connection state that is logged
once when lost and once when back, and the fields of their log records.
"""
from __future__ import annotations

import logging
import random
import threading
from typing import Any, Dict, Optional

from .results import Lease
from .types import Done, Fail, Outcome, Reschedule, Retry

log = logging.getLogger("punctual")


def outcome_of(result: object) -> Outcome:
    """What a handler's return value means: None is done; an outcome is itself."""
    if result is None:
        return Done()
    if isinstance(result, (Done, Retry, Reschedule, Fail)):
        return result
    raise TypeError(
        f"a handler returns None, Done(), Retry(), Reschedule() or Fail(), not {type(result).__name__}"
    )


def failed(logger: logging.Logger, lease: Lease, exc: Exception) -> Retry:
    """The outcome of a handler that raised: a retry with the exception's text, logged."""
    text = str(exc) or type(exc).__name__
    logger.warning("handler for %s/%s raised: %s", lease.queue, lease.key, text, exc_info=exc,
                   extra={"event": "handler_error", **fields(lease)})
    return Retry(error=text)


def fields(lease: Lease) -> Dict[str, Any]:
    """The extra fields of a log record about ``lease``."""
    return {"queue": lease.queue, "key": lease.key, "attempt": lease.attempt,
            "delivery_id": lease.delivery_id}


def pause_after(failures: int, max_backoff: float) -> float:
    """Seconds to wait after ``failures`` failures in a row: doubling from 0.2 s up to
    ``max_backoff``, scaled by a uniform draw in [0.5, 1)."""
    return min(max_backoff, 0.1 * 2.0 ** min(failures, 10)) * random.uniform(0.5, 1.0)


class ConnectionLog:
    """Whether the server answered the last call: a change is logged once (thread-safe)."""

    def __init__(self, logger: logging.Logger, server: str) -> None:
        self._log = logger
        self._server = server
        self._lock = threading.Lock()
        self._connected: Optional[bool] = None

    def down(self, error: Exception) -> None:
        with self._lock:
            if self._connected is False:
                return
            self._connected = False
        self._log.warning("lost connection to %s: %s; retrying with backoff", self._server, error,
                          extra={"event": "connection_lost", "server": self._server})

    def up(self) -> None:
        with self._lock:
            was, self._connected = self._connected, True
        if was is False:
            self._log.info("connected again to %s", self._server,
                           extra={"event": "connection_restored", "server": self._server})
