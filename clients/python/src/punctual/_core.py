"""The half of the clients that does no I/O: a call as data, and the policy of sending it.

``Client`` and ``AsyncClient`` are thin executors over this module: for each method
they take a ``Call`` from ``_calls`` and run ``send_sync`` or ``send_async`` on it.
Everything else (the URL, headers and body of each try, how many tries and the pause
before each, how an answer becomes a result or an exception) is decided here, once, so
the two cannot drift apart.

Retry policy: a call is tried ``1 + retries`` times (``Call.retries`` overrides the
client's: the batch ack and the worker's long polls are tried once). It is tried again
after a connection error or a 503 ``unavailable``, never after another refusal; the
pause before try n (n ≥ 1) is ``min(backoff_max, backoff_base · 2^(n-1))`` scaled by a
uniform draw in [0.5, 1) so that clients cut off together do not come back together.
When every try failed, the last ``Unavailable`` is raised.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, Iterator, Mapping, NamedTuple, Optional, TypeVar, Union

import httpx

from .errors import PunctualError, Unavailable, error_from_response

DEFAULT_SERVER = "http://127.0.0.1:7575"
USER_AGENT = "punctual-python/0.1"

T = TypeVar("T")
QueryValue = Union[str, int, None]


def nothing(_: Any) -> None:
    """How a call whose answer has no body (``204``) reads it."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call: what to send, and ``read``, which makes the result of the answer's
    decoded JSON (None when the answer has no body)."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: Any = None  # JSON; None sends no body
    params: Mapping[str, QueryValue] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    retries: Optional[int] = None  # None: the client's
    long_poll: float = 0.0  # seconds the server may hold the answer, on top of the timeout


class Outgoing(NamedTuple):
    """One try of a call, as ``httpx.Client.request`` takes it."""

    method: str
    url: str
    content: Optional[bytes]
    params: Dict[str, Union[str, int]]
    headers: Dict[str, str]
    timeout: float


class Connection:
    """Where and how a client sends calls: the server, the token and the retry policy.

    ``server`` defaults to ``$PUNCTUAL_SERVER`` (else ``http://127.0.0.1:7575``) and
    ``token`` to ``$PUNCTUAL_TOKEN``.
    """

    def __init__(
        self,
        server: Optional[str],
        token: Optional[str],
        timeout: float,
        retries: int,
        backoff_base: float,
        backoff_max: float,
    ) -> None:
        self.server = (server or os.environ.get("PUNCTUAL_SERVER") or DEFAULT_SERVER).rstrip("/")
        self.token = token if token is not None else os.environ.get("PUNCTUAL_TOKEN") or None
        self.timeout = timeout
        self.retries = retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max

    def headers(self) -> Dict[str, str]:
        """The headers of every request of the client."""
        headers = {"user-agent": USER_AGENT, "accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        return headers

    def pauses(self, call: "Call[Any]") -> Iterator[float]:
        """The pause before each try of ``call``, in seconds: 0 before the first."""
        tries = 1 + (self.retries if call.retries is None else call.retries)
        yield 0.0
        for attempt in range(1, tries):
            delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
            yield delay * random.uniform(0.5, 1.0)

    def outgoing(self, call: "Call[Any]") -> Outgoing:
        headers = dict(call.headers)
        content = None
        if call.body is not None:
            content = json.dumps(call.body).encode("utf-8")
            headers["content-type"] = "application/json"
        params = {name: value for name, value in call.params.items() if value is not None}
        return Outgoing(call.method, call.path, content, params, headers, self.timeout + call.long_poll)

    def unreachable(self, exc: httpx.TransportError) -> Unavailable:
        error = Unavailable(
            f"cannot reach punctual at {self.server}: {exc or type(exc).__name__}", status=None
        )
        error.__cause__ = exc
        return error

    def answer(self, call: "Call[T]", response: httpx.Response) -> T:
        """The result of a 2xx answer; the error of any other (``Unavailable`` for a 503)."""
        if response.status_code >= 300:
            raise error_from_response(response.status_code, response.content)
        return call.read(response.json() if response.content else None)


def send_sync(http: httpx.Client, connection: Connection, call: "Call[T]") -> T:
    """Run ``call`` on ``http``, trying again as ``connection`` says."""
    failure: Optional[PunctualError] = None
    for pause in connection.pauses(call):
        if pause:
            time.sleep(pause)
        out = connection.outgoing(call)
        try:
            response = http.request(out.method, out.url, content=out.content, params=out.params,
                                    headers=out.headers, timeout=out.timeout)
        except httpx.TransportError as exc:
            failure = connection.unreachable(exc)
            continue
        try:
            return connection.answer(call, response)
        except Unavailable as exc:
            failure = exc
    assert failure is not None, "a call is tried at least once"
    raise failure


async def send_async(http: httpx.AsyncClient, connection: Connection, call: "Call[T]") -> T:
    """``send_sync`` on an ``httpx.AsyncClient``, pausing with ``asyncio.sleep``."""
    failure: Optional[PunctualError] = None
    for pause in connection.pauses(call):
        if pause:
            await asyncio.sleep(pause)
        out = connection.outgoing(call)
        try:
            response = await http.request(out.method, out.url, content=out.content, params=out.params,
                                          headers=out.headers, timeout=out.timeout)
        except httpx.TransportError as exc:
            failure = connection.unreachable(exc)
            continue
        try:
            return connection.answer(call, response)
        except Unavailable as exc:
            failure = exc
    assert failure is not None, "a call is tried at least once"
    raise failure
