"""The synchronous client for the whole HTTP API of punctual (API.md).

One ``Client`` holds one ``httpx.Client`` (a connection pool) and is safe to share
between threads. Calls that are safe to repeat (every call but the batch ack, whose
answer is per item) are retried on 503 and on connection errors, with exponential
backoff and jitter, ``retries`` times; then ``Unavailable`` is raised.
"""
from __future__ import annotations

import json
import os
import random
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote

import httpx

from .calendars import Calendar, DateLike, Workday, calendar_body
from .errors import PunctualError, Unavailable, error_from_response
from .types import (
    AckResult,
    Backoff,
    BatchResult,
    Completed,
    Duration,
    GroupCounts,
    GroupsPage,
    Json,
    Lease,
    Misfire,
    Outcome,
    Overlap,
    Page,
    Repeat,
    ScheduleResult,
    Target,
    Task,
    TaskSpec,
    Time,
    UniqueFor,
    duration_json,
    parse_time,
    task_body,
)

DEFAULT_SERVER = "http://127.0.0.1:7575"

QueryValue = Union[str, int, None]


def _seg(value: str) -> str:
    """A path segment, percent-encoded (a key with ``/`` is sent as ``%2F``)."""
    return quote(value, safe="")


def _completed(answer: Mapping[str, Any]) -> Optional[Completed]:
    """The completion that kept a schedule (or a batch item), when a dedupe window did."""
    data = answer.get("completed")
    return Completed.from_json(data) if isinstance(data, dict) else None


def _outcome_json(outcome: Union[Outcome, Mapping[str, Any], None]) -> Dict[str, Any]:
    if outcome is None:
        return {"outcome": "done"}
    if isinstance(outcome, Mapping):
        return dict(outcome)
    return outcome.to_json()


class Client:
    """A client of one punctual server.

    ``server`` defaults to ``$PUNCTUAL_SERVER`` (else ``http://127.0.0.1:7575``) and
    ``token`` to ``$PUNCTUAL_TOKEN``. ``timeout`` (seconds) bounds each request; a long
    poll gets its ``wait`` on top. ``retries`` is how many times a repeatable call is
    tried again after a 503 or a connection error.
    """

    def __init__(
        self,
        server: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 10.0,
        retries: int = 3,
        *,
        transport: Optional[httpx.BaseTransport] = None,
        backoff_base: float = 0.1,
        backoff_max: float = 2.0,
    ) -> None:
        self.server = (server or os.environ.get("PUNCTUAL_SERVER") or DEFAULT_SERVER).rstrip("/")
        self.token = token if token is not None else os.environ.get("PUNCTUAL_TOKEN") or None
        self.timeout = timeout
        self.retries = retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        headers = {"user-agent": "punctual-python/0.1", "accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        self._http = httpx.Client(
            base_url=self.server, headers=headers, timeout=timeout, transport=transport
        )

    def with_transport(self, transport: httpx.BaseTransport) -> "Client":
        """A client of the same server and token over another transport."""
        return Client(
            self.server, self.token, self.timeout, self.retries, transport=transport,
            backoff_base=self.backoff_base, backoff_max=self.backoff_max,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Optional[Mapping[str, QueryValue]] = None,
        headers: Optional[Mapping[str, str]] = None,
        retries: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> httpx.Response:
        """Send one call; retry it on 503 and connection errors; raise on refusals."""
        attempts = 1 + (self.retries if retries is None else retries)
        query = {k: v for k, v in (params or {}).items() if v is not None}
        content = None
        send_headers = dict(headers or {})
        if body is not None:
            content = json.dumps(body).encode("utf-8")
            send_headers["content-type"] = "application/json"
        last: Optional[PunctualError] = None
        for attempt in range(attempts):
            if attempt:
                delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
                time.sleep(delay * random.uniform(0.5, 1.0))
            try:
                response = self._http.request(
                    method, path, content=content, params=query, headers=send_headers,
                    timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                last = Unavailable(
                    f"cannot reach punctual at {self.server}: {exc or type(exc).__name__}",
                    status=None,
                )
                last.__cause__ = exc
                continue
            if response.status_code < 300:
                return response
            error = error_from_response(response.status_code, response.content)
            if isinstance(error, Unavailable):
                last = error
                continue
            raise error
        assert last is not None
        raise last

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        return response.json() if response.content else None

    @staticmethod
    def _if_match(if_version: Optional[int]) -> Optional[Dict[str, str]]:
        return None if if_version is None else {"if-match": str(if_version)}

    # -- scheduling ------------------------------------------------------------------

    def schedule(
        self,
        queue: str,
        key: str,
        *,
        payload: Json = None,
        delay: Optional[Duration] = None,
        due_at: Optional[Time] = None,
        repeat: Union[Repeat, Mapping[str, Any], None] = None,
        tags: Optional[List[str]] = None,
        max_attempts: Optional[int] = None,
        backoff: Union[Backoff, Mapping[str, Any], None] = None,
        if_exists: Optional[str] = None,
        target: Union[Target, Mapping[str, Any], None] = None,
        priority: Optional[int] = None,
        debounce: Optional[Duration] = None,
        group: Optional[str] = None,
        unique_for: Union[Duration, UniqueFor, None] = None,
        calendar: Optional[str] = None,
        align: Optional[str] = None,
        misfire: Optional[Misfire] = None,
        misfire_after: Optional[Duration] = None,
        catch_up_max: Optional[int] = None,
        overlap: Optional[Overlap] = None,
        jitter: Optional[Duration] = None,
    ) -> ScheduleResult:
        """Create or update one task. Neither ``delay`` nor ``due_at``: due now.

        ``if_exists``: ``replace`` (the server's default), ``keep`` or ``error``
        (``Conflict`` when it exists). ``priority``: 0–9 (the server's default 0);
        among the queue's tasks already due, higher ones are leased first.
        ``debounce``: a max wait; a burst of debounced schedules of the key replaces
        the scheduled task each time but never makes it due later than the burst's
        first schedule + ``debounce`` (a lease ends the burst). ``group``: due tasks are
        handed out round robin between a queue's groups, and the queue's
        ``group_concurrency`` setting limits each group's live leases. ``unique_for``: a
        dedupe window (a duration, or ``UniqueFor(window, dead=True)``); within it after
        the key's task completed, a schedule of the key answers ``kept`` with
        ``completed`` and no task, and stores nothing. ``calendar``: a working-time
        calendar (``put_calendar``); ``delay`` counts its working time (a whole number of
        days counts working days) and ``due_at`` with ``align="next_open"`` moves to its
        next opening; the answer's ``due_at`` is the instant resolved; with ``repeat``
        the repeat runs in its working time. ``misfire``: what becomes of occurrences
        missed while no server ran or the queue was paused, ``"fire_once"`` (default),
        ``"fire_all"`` (at most ``catch_up_max``, 1–1000, default 10) or ``"skip"`` (a
        first try leased later than ``misfire_after``, default 1 minute, past its due
        time does not fire). ``overlap``: ``"skip"`` (default) or ``"queue"``, what
        becomes of a repeat's occurrences due while its firing is leased. ``jitter``
        (up to 12h, shorter than a repeat's ``every``): each due time moves later by a
        uniform draw below it. Leases show ``scheduled_for`` and ``missed``.
        """
        body = task_body(
            payload=payload, delay=delay, due_at=due_at, repeat=repeat, tags=tags,
            max_attempts=max_attempts, backoff=backoff, if_exists=if_exists, target=target,
            priority=priority, debounce=debounce, group=group, unique_for=unique_for,
            calendar=calendar, align=align, misfire=misfire, misfire_after=misfire_after,
            catch_up_max=catch_up_max, overlap=overlap, jitter=jitter,
        )
        data = self._json("PUT", f"/v1/queues/{_seg(queue)}/tasks/{_seg(key)}", body=body)
        return ScheduleResult(
            outcome=data["outcome"],
            task=None if data.get("task") is None else Task.from_json(data["task"]),
            completed=_completed(data),
        )

    def schedule_many(
        self, queue: str, tasks: Iterable[Union[TaskSpec, Mapping[str, Any]]]
    ) -> List[BatchResult]:
        """Schedule many tasks in one call; a result per item, in order.

        Valid items are stored even when others are refused: check ``result.error``.
        A mapping item is sent as the API's JSON (``{"key": …, "delay": "30s"}``).
        """
        items = [t.to_json() if isinstance(t, TaskSpec) else dict(t) for t in tasks]
        data = self._json("POST", f"/v1/queues/{_seg(queue)}/tasks", body={"tasks": items})
        results: List[BatchResult] = []
        for item in data.get("results", []):
            err = item.get("error")
            if isinstance(err, dict):
                exc = error_from_response(400, json.dumps({"error": err}).encode())
                results.append(BatchResult(key=item.get("key"), error=exc))
            else:
                results.append(BatchResult(
                    key=item.get("key"), outcome=item.get("outcome"), completed=_completed(item),
                ))
        return results

    def get(self, queue: str, key: str) -> Task:
        """The task; ``NotFound`` when there is none."""
        return Task.from_json(self._json("GET", f"/v1/queues/{_seg(queue)}/tasks/{_seg(key)}"))

    def cancel(self, queue: str, key: str) -> None:
        """Cancel one task (a leased one for good); ``NotFound`` when unknown."""
        self._request("DELETE", f"/v1/queues/{_seg(queue)}/tasks/{_seg(key)}")

    def cancel_tag(self, queue: str, tag: str) -> int:
        """Cancel every task of the queue carrying ``tag``; the number cancelled."""
        data = self._json("DELETE", f"/v1/queues/{_seg(queue)}/tags/{_seg(tag)}")
        return int(data["cancelled"])

    def list_page(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        tag: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page:
        """One page of the queue's tasks in due order."""
        data = self._json(
            "GET", f"/v1/queues/{_seg(queue)}/tasks",
            params={"state": state, "tag": tag, "limit": limit, "cursor": cursor},
        )
        return Page([Task.from_json(t) for t in data["tasks"]], data.get("next_cursor"))

    def list(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        tag: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[Task]:
        """Every task of the queue (optionally of one state or tag), page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.list_page(queue, state=state, tag=tag, limit=page_size, cursor=cursor)
            yield from page.tasks
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # -- queues ----------------------------------------------------------------------

    def queues(self) -> List[Dict[str, Any]]:
        """Every queue with its counts: ``name, scheduled, leased, dead, next_due_at, paused``."""
        return list(self._json("GET", "/v1/queues")["queues"])

    def queue_stats(self, queue: str) -> Dict[str, Any]:
        """One queue's counts, plus ``oldest_overdue_ms`` and ``lag_ms``."""
        return dict(self._json("GET", f"/v1/queues/{_seg(queue)}"))

    def groups_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> GroupsPage:
        """One page of the queue's groups that have tasks, by name, with their counts."""
        data = self._json(
            "GET", f"/v1/queues/{_seg(queue)}/groups", params={"limit": limit, "cursor": cursor},
        )
        groups = [GroupCounts.from_json(g) for g in data.get("groups", [])]
        return GroupsPage(groups, data.get("next_cursor"))

    def get_settings(self, queue: str) -> Dict[str, Any]:
        """The queue's stored settings; ``NotFound`` when it has none."""
        return dict(self._json("GET", f"/v1/queues/{_seg(queue)}/settings"))

    def put_settings(
        self, queue: str, settings: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> Dict[str, Any]:
        """Create or replace the settings; with ``if_version``, ``Conflict`` if it moved."""
        return dict(self._json(
            "PUT", f"/v1/queues/{_seg(queue)}/settings", body=dict(settings),
            headers=self._if_match(if_version),
        ))

    def patch_settings(
        self, queue: str, changes: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> Dict[str, Any]:
        """Merge the given top-level fields into the settings."""
        return dict(self._json(
            "PATCH", f"/v1/queues/{_seg(queue)}/settings", body=dict(changes),
            headers=self._if_match(if_version),
        ))

    def delete_settings(self, queue: str, *, if_version: Optional[int] = None) -> None:
        """Remove the settings (the tasks stay and take built-in defaults)."""
        self._request(
            "DELETE", f"/v1/queues/{_seg(queue)}/settings", headers=self._if_match(if_version)
        )

    def pause(self, queue: str) -> Dict[str, Any]:
        """Stop leasing and delivering the queue's tasks; the settings."""
        return dict(self._json("POST", f"/v1/queues/{_seg(queue)}/pause"))

    def resume(self, queue: str) -> Dict[str, Any]:
        """Lease and deliver again; the settings."""
        return dict(self._json("POST", f"/v1/queues/{_seg(queue)}/resume"))

    def purge(self, queue: str, state: str = "all") -> int:
        """Cancel every task of the queue in ``state`` (scheduled, dead, all)."""
        data = self._json("DELETE", f"/v1/queues/{_seg(queue)}/tasks", params={"state": state})
        return int(data["cancelled"])

    # -- calendars -------------------------------------------------------------------

    def calendars(self) -> List[Calendar]:
        """Every working-time calendar, by name (those of the config file too)."""
        return [Calendar.from_json(c) for c in self._json("GET", "/v1/calendars")["calendars"]]

    def get_calendar(self, name: str) -> Calendar:
        """The calendar; ``NotFound`` when there is none."""
        return Calendar.from_json(self._json("GET", f"/v1/calendars/{_seg(name)}"))

    def put_calendar(
        self,
        name: str,
        *,
        tz: str,
        hours: Mapping[str, Sequence[str]],
        holidays: Optional[Iterable[DateLike]] = None,
        workdays: Optional[Iterable[Union[Workday, DateLike]]] = None,
        if_version: Optional[int] = None,
    ) -> Calendar:
        """Create or replace the calendar: working ``hours`` per weekday (``{"mon":
        ["09:00-12:00", "13:30-18:00"]}``) in zone ``tz``, ``holidays`` (dates, or
        ``"start/end"`` ranges) and extra ``workdays``. With ``if_version``,
        ``Conflict`` when it is at another version (0: only if it does not exist yet).
        Tasks already scheduled keep their due times."""
        body = calendar_body(tz=tz, hours=hours, holidays=holidays, workdays=workdays)
        return Calendar.from_json(self._json(
            "PUT", f"/v1/calendars/{_seg(name)}", body=body, headers=self._if_match(if_version),
        ))

    def delete_calendar(self, name: str, *, if_version: Optional[int] = None) -> None:
        """Remove the calendar; ``NotFound`` when unknown, ``Conflict`` when
        ``if_version`` names another version."""
        self._request(
            "DELETE", f"/v1/calendars/{_seg(name)}", headers=self._if_match(if_version)
        )

    # -- dead tasks ------------------------------------------------------------------

    def dead_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page:
        data = self._json(
            "GET", f"/v1/queues/{_seg(queue)}/dead", params={"limit": limit, "cursor": cursor}
        )
        return Page([Task.from_json(t) for t in data["tasks"]], data.get("next_cursor"))

    def dead(self, queue: str, *, page_size: Optional[int] = None) -> Iterator[Task]:
        """Every dead task of the queue, page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.dead_page(queue, limit=page_size, cursor=cursor)
            yield from page.tasks
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def retry_dead(self, queue: str, key: str) -> Task:
        """Back to scheduled, due now, attempts reset."""
        return Task.from_json(
            self._json("POST", f"/v1/queues/{_seg(queue)}/dead/{_seg(key)}/retry")
        )

    def retry_dead_many(
        self, queue: str, *, tag: Optional[str] = None, keys: Optional[Sequence[str]] = None
    ) -> int:
        """Retry every dead task of the queue, or those with ``tag``, or ``keys``."""
        if tag is not None and keys is not None:
            raise ValueError("give tag or keys, not both")
        body: Dict[str, Any] = {}
        if tag is not None:
            body["tag"] = tag
        if keys is not None:
            body["keys"] = list(keys)
        data = self._json("POST", f"/v1/queues/{_seg(queue)}/dead/retry", body=body)
        return int(data["retried"])

    def delete_dead(self, queue: str, key: str) -> None:
        self._request("DELETE", f"/v1/queues/{_seg(queue)}/dead/{_seg(key)}")

    # -- pull workers ----------------------------------------------------------------

    def lease(
        self,
        queue: str,
        *,
        max: int = 1,
        lease_for: Duration = 30.0,
        wait: Duration = 0,
        retries: Optional[int] = None,
    ) -> List[Lease]:
        """Lease up to ``max`` due tasks, waiting up to ``wait`` for one (long poll)."""
        wait_ms = duration_json(wait, "wait")
        extra = (wait_ms / 1000.0) if isinstance(wait_ms, int) else 60.0
        body = {"max": max, "lease": duration_json(lease_for, "lease"), "wait": wait_ms}
        data = self._json(
            "POST", f"/v1/queues/{_seg(queue)}/lease", body=body, retries=retries,
            timeout=self.timeout + extra,
        )
        return [Lease.from_json(item) for item in data.get("leases", [])]

    def ack(
        self,
        lease_id: str,
        outcome: Union[Outcome, Mapping[str, Any], None] = None,
        *,
        retries: Optional[int] = None,
    ) -> None:
        """Acknowledge one lease (None: done). ``Conflict`` when the lease is gone."""
        self._request(
            "POST", f"/v1/leases/{_seg(lease_id)}/ack", body=_outcome_json(outcome),
            retries=retries,
        )

    def ack_many(
        self, acks: Iterable[Tuple[str, Union[Outcome, Mapping[str, Any], None]]]
    ) -> List[AckResult]:
        """Acknowledge many leases in one call; a result per item, in order.

        Not retried: the caller sees per item what was applied.
        """
        items = []
        for lease_id, outcome in acks:
            item = _outcome_json(outcome)
            item["lease_id"] = lease_id
            items.append(item)
        data = self._json("POST", "/v1/acks", body={"acks": items}, retries=0)
        results: List[AckResult] = []
        for item in data.get("results", []):
            status = int(item.get("status", 0))
            err = item.get("error")
            exc: Optional[Exception] = None
            if status != 204:
                if isinstance(err, dict):
                    payload = json.dumps({"error": err}).encode()
                elif isinstance(err, str):
                    payload = json.dumps({"error": {"message": err}}).encode()
                else:
                    payload = b""
                exc = error_from_response(status, payload)
            results.append(AckResult(lease_id=item.get("lease_id"), status=status, error=exc))
        return results

    def extend(self, lease_id: str, lease_for: Duration = 30.0) -> Any:
        """Extend a live lease; its new ``expires_at``. ``Conflict`` when no longer live."""
        data = self._json(
            "POST", f"/v1/leases/{_seg(lease_id)}/extend",
            body={"lease": duration_json(lease_for, "lease")},
        )
        return parse_time(data.get("expires_at"))

    # -- operations ------------------------------------------------------------------

    def ready(self) -> bool:
        """True when ``/readyz`` answers 2xx (the store is reachable)."""
        try:
            return self._http.get("/readyz").status_code < 300
        except httpx.TransportError:
            return False
