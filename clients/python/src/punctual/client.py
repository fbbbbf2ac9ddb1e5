"""The synchronous client for the whole HTTP API of punctual (API.md).

One ``Client`` holds one ``httpx.Client`` (a connection pool) and is safe to share
between threads. Each method takes its call from ``_calls`` and sends it with
``_core.send_sync``: calls that are safe to repeat (every call but the batch ack, whose
answer is per item) are retried on 503 and on connection errors, with exponential
backoff and jitter, ``retries`` times; then ``Unavailable`` is raised. ``AsyncClient``
has the same methods, over the same calls.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import httpx

from . import _calls as calls
from ._calls import AckOutcome
from ._core import DEFAULT_SERVER, Call, Connection, T, send_sync
from .calendars import Calendar, DateLike, Workday, calendar_body
from .results import (
    Access,
    AckResult,
    AuditEntry,
    AuditPage,
    BatchResult,
    GroupsPage,
    Lease,
    Page,
    QueueSettings,
    QueueStats,
    QueueSummary,
    ScheduleResult,
    Task,
    TaskHistory,
)
from .types import (
    Align,
    Backoff,
    Duration,
    IfExists,
    Json,
    Misfire,
    Overlap,
    Repeat,
    Target,
    TaskSpec,
    Time,
    UniqueFor,
    task_body,
)

__all__ = ["DEFAULT_SERVER", "Client"]

Item = TypeVar("Item")


def _every(fetch: Callable[[Optional[str]], Tuple[List[Item], Optional[str]]]) -> Iterator[Item]:
    """The items of every page ``fetch(cursor)`` answers (its items and the next page's
    cursor), from the first to the last."""
    cursor: Optional[str] = None
    while True:
        items, cursor = fetch(cursor)
        yield from items
        if not cursor:
            return


def _every_task(fetch: Callable[[Optional[str]], Page]) -> Iterator[Task]:
    """The tasks of every page ``fetch(cursor)`` answers, from the first to the last."""
    def tasks(cursor: Optional[str]) -> Tuple[List[Task], Optional[str]]:
        page = fetch(cursor)
        return page.tasks, page.next_cursor
    return _every(tasks)


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
        self._connection = Connection(server, token, timeout, retries, backoff_base, backoff_max)
        self._http = httpx.Client(
            base_url=self.server, headers=self._connection.headers(), timeout=timeout,
            transport=transport,
        )

    @property
    def server(self) -> str:
        return self._connection.server

    @property
    def token(self) -> Optional[str]:
        return self._connection.token

    @property
    def timeout(self) -> float:
        return self._connection.timeout

    @property
    def retries(self) -> int:
        return self._connection.retries

    def with_transport(self, transport: httpx.BaseTransport) -> "Client":
        """A client of the same server and token over another transport."""
        c = self._connection
        return Client(c.server, c.token, c.timeout, c.retries, transport=transport,
                      backoff_base=c.backoff_base, backoff_max=c.backoff_max)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        return send_sync(self._http, self._connection, call)

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
        if_exists: Optional[IfExists] = None,
        target: Union[Target, Mapping[str, Any], None] = None,
        priority: Optional[int] = None,
        debounce: Optional[Duration] = None,
        group: Optional[str] = None,
        unique_for: Union[Duration, UniqueFor, None] = None,
        calendar: Optional[str] = None,
        align: Optional[Align] = None,
        misfire: Optional[Misfire] = None,
        misfire_after: Optional[Duration] = None,
        catch_up_max: Optional[int] = None,
        overlap: Optional[Overlap] = None,
        jitter: Optional[Duration] = None,
        traceparent: Optional[str] = None,
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
        ``traceparent``: a W3C trace context (``00-<trace id>-<span id>-<flags>``), sent
        as the ``traceparent`` header; the task keeps it (or the server's schedule
        span's, when it exports traces) and every delivery continues that trace. A
        leased task shows it as ``task.traceparent``.
        """
        return self._send(calls.schedule(queue, key, task_body(
            payload=payload, delay=delay, due_at=due_at, repeat=repeat, tags=tags,
            max_attempts=max_attempts, backoff=backoff, if_exists=if_exists, target=target,
            priority=priority, debounce=debounce, group=group, unique_for=unique_for,
            calendar=calendar, align=align, misfire=misfire, misfire_after=misfire_after,
            catch_up_max=catch_up_max, overlap=overlap, jitter=jitter,
        ), traceparent))

    def schedule_many(
        self,
        queue: str,
        tasks: Iterable[Union[TaskSpec, Mapping[str, Any]]],
        *,
        traceparent: Optional[str] = None,
    ) -> List[BatchResult]:
        """Schedule many tasks in one call; a result per item, in order.

        Valid items are stored even when others are refused: check ``result.error``.
        A mapping item is sent as the API's JSON (``{"key": …, "delay": "30s"}``).
        ``traceparent``: as ``schedule``'s, kept by every task of the batch.
        """
        return self._send(calls.schedule_many(queue, tasks, traceparent))

    def get(self, queue: str, key: str) -> Task:
        """The task; ``NotFound`` when there is none."""
        return self._send(calls.get(queue, key))

    def history(self, queue: str, key: str) -> TaskHistory:
        """What happened to the task, oldest first, also once it is gone (within the
        queue's history retention); ``NotFound`` when there is no task and no history
        of the key."""
        return self._send(calls.history(queue, key))

    def cancel(self, queue: str, key: str) -> None:
        """Cancel one task (a leased one for good); ``NotFound`` when unknown."""
        self._send(calls.cancel(queue, key))

    def cancel_tag(self, queue: str, tag: str) -> int:
        """Cancel every task of the queue carrying ``tag``; the number cancelled."""
        return self._send(calls.cancel_tag(queue, tag))

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
        return self._send(calls.list_page(queue, state, tag, limit, cursor))

    def list(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        tag: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[Task]:
        """Every task of the queue (optionally of one state or tag), page after page."""
        return _every_task(lambda cursor: self.list_page(
            queue, state=state, tag=tag, limit=page_size, cursor=cursor))

    # -- queues ----------------------------------------------------------------------

    def queues(self) -> List[QueueSummary]:
        """Every queue with its counts."""
        return self._send(calls.queues())

    def queue_stats(self, queue: str) -> QueueStats:
        """One queue's counts, how overdue its oldest due task is, and its fire lag."""
        return self._send(calls.queue_stats(queue))

    def groups_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> GroupsPage:
        """One page of the queue's groups that have tasks, by name, with their counts."""
        return self._send(calls.groups_page(queue, limit, cursor))

    def get_settings(self, queue: str) -> QueueSettings:
        """The queue's stored settings; ``NotFound`` when it has none."""
        return self._send(calls.get_settings(queue))

    def put_settings(
        self, queue: str, settings: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> QueueSettings:
        """Create or replace the settings (the API's JSON: ``{"group_concurrency": 1}``);
        with ``if_version``, ``Conflict`` if they moved."""
        return self._send(calls.put_settings(queue, settings, if_version))

    def patch_settings(
        self, queue: str, changes: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> QueueSettings:
        """Merge the given top-level fields into the settings."""
        return self._send(calls.patch_settings(queue, changes, if_version))

    def delete_settings(self, queue: str, *, if_version: Optional[int] = None) -> None:
        """Remove the settings (the tasks stay and take built-in defaults)."""
        self._send(calls.delete_settings(queue, if_version))

    def pause(self, queue: str) -> QueueSettings:
        """Stop leasing and delivering the queue's tasks; the settings."""
        return self._send(calls.pause(queue))

    def resume(self, queue: str) -> QueueSettings:
        """Lease and deliver again; the settings."""
        return self._send(calls.resume(queue))

    def purge(self, queue: str, state: str = "all") -> int:
        """Cancel every task of the queue in ``state`` (scheduled, dead, all)."""
        return self._send(calls.purge(queue, state))

    # -- calendars -------------------------------------------------------------------

    def calendars(self) -> List[Calendar]:
        """Every working-time calendar, by name (those of the config file too)."""
        return self._send(calls.calendars())

    def get_calendar(self, name: str) -> Calendar:
        """The calendar; ``NotFound`` when there is none."""
        return self._send(calls.get_calendar(name))

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
        return self._send(calls.put_calendar(name, body, if_version))

    def delete_calendar(self, name: str, *, if_version: Optional[int] = None) -> None:
        """Remove the calendar; ``NotFound`` when unknown, ``Conflict`` when
        ``if_version`` names another version."""
        self._send(calls.delete_calendar(name, if_version))

    # -- dead tasks ------------------------------------------------------------------

    def dead_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page:
        """One page of the queue's dead tasks."""
        return self._send(calls.dead_page(queue, limit, cursor))

    def dead(self, queue: str, *, page_size: Optional[int] = None) -> Iterator[Task]:
        """Every dead task of the queue, page after page."""
        return _every_task(lambda cursor: self.dead_page(queue, limit=page_size, cursor=cursor))

    def retry_dead(self, queue: str, key: str) -> Task:
        """Back to scheduled, due now, attempts reset."""
        return self._send(calls.retry_dead(queue, key))

    def retry_dead_many(
        self, queue: str, *, tag: Optional[str] = None, keys: Optional[Sequence[str]] = None
    ) -> int:
        """Retry every dead task of the queue, or those with ``tag``, or ``keys``."""
        return self._send(calls.retry_dead_many(queue, tag, keys))

    def delete_dead(self, queue: str, key: str) -> None:
        """Remove a dead task for good."""
        self._send(calls.delete_dead(queue, key))

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
        return self._send(calls.lease(queue, max, lease_for, wait, retries))

    def ack(self, lease_id: str, outcome: AckOutcome = None, *, retries: Optional[int] = None) -> None:
        """Acknowledge one lease (None: done). ``Conflict`` when the lease is gone."""
        self._send(calls.ack(lease_id, outcome, retries))

    def ack_many(self, acks: Iterable[Tuple[str, AckOutcome]]) -> List[AckResult]:
        """Acknowledge many leases in one call; a result per item, in order.

        Not retried: the caller sees per item what was applied.
        """
        return self._send(calls.ack_many(acks))

    def extend(self, lease_id: str, lease_for: Duration = 30.0) -> _dt.datetime:
        """Extend a live lease; its new ``expires_at``. ``Conflict`` when no longer live."""
        return self._send(calls.extend(lease_id, lease_for))

    # -- operations ------------------------------------------------------------------

    def access(self) -> Access:
        """What this client's token may do, and on which queues."""
        return self._send(calls.access())

    def audit_page(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> AuditPage:
        """One page of the audit log, newest first (``limit``: the server's 100 by
        default, at most 1000). Needs the admin permission."""
        return self._send(calls.audit_page(limit, cursor))

    def audit(self, *, page_size: Optional[int] = None) -> Iterator[AuditEntry]:
        """Every entry of the audit log, newest first, page after page."""
        def entries(cursor: Optional[str]) -> Tuple[List[AuditEntry], Optional[str]]:
            page = self.audit_page(limit=page_size, cursor=cursor)
            return page.entries, page.next_cursor
        return _every(entries)

    def ready(self) -> bool:
        """True when ``/readyz`` answers 2xx (the store is reachable)."""
        try:
            return self._http.get("/readyz").status_code < 300
        except httpx.TransportError:
            return False
