"""The asyncio client: ``Client``'s methods as coroutines, over ``httpx.AsyncClient``.

It sends the same calls (``_calls``) with the same retry policy and error mapping
(``_core.send_async``, pausing with ``asyncio.sleep``); only the sending differs. One
``AsyncClient`` holds one connection pool: share it between the tasks of one event
loop, and close it (``await client.aclose()``, or ``async with``) when done.

    async with punctual.AsyncClient() as client:
        await client.schedule("flow.remind", "step-42", delay="24h", payload={"to": "ana"})
        async for task in client.list("flow.remind"):
            print(task.key, task.due_at)
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, AsyncIterator, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import httpx

from . import _calls as calls
from ._calls import AckOutcome
from ._core import Call, Connection, T, send_async
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

__all__ = ["AsyncClient"]


class AsyncClient:
    """An asyncio client of one punctual server; the arguments are ``Client``'s."""

    def __init__(
        self,
        server: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 10.0,
        retries: int = 3,
        *,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        backoff_base: float = 0.1,
        backoff_max: float = 2.0,
    ) -> None:
        self._connection = Connection(server, token, timeout, retries, backoff_base, backoff_max)
        self._http = httpx.AsyncClient(
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

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        return await send_async(self._http, self._connection, call)

    # -- scheduling ------------------------------------------------------------------

    async def schedule(
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
        """As ``Client.schedule``: create or update one task."""
        return await self._send(calls.schedule(queue, key, task_body(
            payload=payload, delay=delay, due_at=due_at, repeat=repeat, tags=tags,
            max_attempts=max_attempts, backoff=backoff, if_exists=if_exists, target=target,
            priority=priority, debounce=debounce, group=group, unique_for=unique_for,
            calendar=calendar, align=align, misfire=misfire, misfire_after=misfire_after,
            catch_up_max=catch_up_max, overlap=overlap, jitter=jitter,
        ), traceparent))

    async def schedule_many(
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
        return await self._send(calls.schedule_many(queue, tasks, traceparent))

    async def get(self, queue: str, key: str) -> Task:
        """The task; ``NotFound`` when there is none."""
        return await self._send(calls.get(queue, key))

    async def history(self, queue: str, key: str) -> TaskHistory:
        """What happened to the task, oldest first, also once it is gone (within the
        queue's history retention); ``NotFound`` when there is no task and no history
        of the key."""
        return await self._send(calls.history(queue, key))

    async def cancel(self, queue: str, key: str) -> None:
        """Cancel one task (a leased one for good); ``NotFound`` when unknown."""
        await self._send(calls.cancel(queue, key))

    async def cancel_tag(self, queue: str, tag: str) -> int:
        """Cancel every task of the queue carrying ``tag``; the number cancelled."""
        return await self._send(calls.cancel_tag(queue, tag))

    async def list_page(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        tag: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page:
        """One page of the queue's tasks in due order."""
        return await self._send(calls.list_page(queue, state, tag, limit, cursor))

    async def list(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        tag: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[Task]:
        """Every task of the queue (optionally of one state or tag), page after page."""
        cursor: Optional[str] = None
        while True:
            page = await self.list_page(queue, state=state, tag=tag, limit=page_size, cursor=cursor)
            for task in page.tasks:
                yield task
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # -- queues ----------------------------------------------------------------------

    async def queues(self) -> List[QueueSummary]:
        """Every queue with its counts."""
        return await self._send(calls.queues())

    async def queue_stats(self, queue: str) -> QueueStats:
        """One queue's counts, how overdue its oldest due task is, and its fire lag."""
        return await self._send(calls.queue_stats(queue))

    async def groups_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> GroupsPage:
        """One page of the queue's groups that have tasks, by name, with their counts."""
        return await self._send(calls.groups_page(queue, limit, cursor))

    async def get_settings(self, queue: str) -> QueueSettings:
        """The queue's stored settings; ``NotFound`` when it has none."""
        return await self._send(calls.get_settings(queue))

    async def put_settings(
        self, queue: str, settings: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> QueueSettings:
        """Create or replace the settings (the API's JSON: ``{"group_concurrency": 1}``);
        with ``if_version``, ``Conflict`` if they moved."""
        return await self._send(calls.put_settings(queue, settings, if_version))

    async def patch_settings(
        self, queue: str, changes: Mapping[str, Any], *, if_version: Optional[int] = None
    ) -> QueueSettings:
        """Merge the given top-level fields into the settings."""
        return await self._send(calls.patch_settings(queue, changes, if_version))

    async def delete_settings(self, queue: str, *, if_version: Optional[int] = None) -> None:
        """Remove the settings (the tasks stay and take built-in defaults)."""
        await self._send(calls.delete_settings(queue, if_version))

    async def pause(self, queue: str) -> QueueSettings:
        """Stop leasing and delivering the queue's tasks; the settings."""
        return await self._send(calls.pause(queue))

    async def resume(self, queue: str) -> QueueSettings:
        """Lease and deliver again; the settings."""
        return await self._send(calls.resume(queue))

    async def purge(self, queue: str, state: str = "all") -> int:
        """Cancel every task of the queue in ``state`` (scheduled, dead, all)."""
        return await self._send(calls.purge(queue, state))

    # -- calendars -------------------------------------------------------------------

    async def calendars(self) -> List[Calendar]:
        """Every working-time calendar, by name (those of the config file too)."""
        return await self._send(calls.calendars())

    async def get_calendar(self, name: str) -> Calendar:
        """The calendar; ``NotFound`` when there is none."""
        return await self._send(calls.get_calendar(name))

    async def put_calendar(
        self,
        name: str,
        *,
        tz: str,
        hours: Mapping[str, Sequence[str]],
        holidays: Optional[Iterable[DateLike]] = None,
        workdays: Optional[Iterable[Union[Workday, DateLike]]] = None,
        if_version: Optional[int] = None,
    ) -> Calendar:
        """As ``Client.put_calendar``: create or replace the calendar."""
        body = calendar_body(tz=tz, hours=hours, holidays=holidays, workdays=workdays)
        return await self._send(calls.put_calendar(name, body, if_version))

    async def delete_calendar(self, name: str, *, if_version: Optional[int] = None) -> None:
        """Remove the calendar; ``NotFound`` when unknown, ``Conflict`` when
        ``if_version`` names another version."""
        await self._send(calls.delete_calendar(name, if_version))

    # -- dead tasks ------------------------------------------------------------------

    async def dead_page(
        self, queue: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page:
        """One page of the queue's dead tasks."""
        return await self._send(calls.dead_page(queue, limit, cursor))

    async def dead(self, queue: str, *, page_size: Optional[int] = None) -> AsyncIterator[Task]:
        """Every dead task of the queue, page after page."""
        cursor: Optional[str] = None
        while True:
            page = await self.dead_page(queue, limit=page_size, cursor=cursor)
            for task in page.tasks:
                yield task
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def retry_dead(self, queue: str, key: str) -> Task:
        """Back to scheduled, due now, attempts reset."""
        return await self._send(calls.retry_dead(queue, key))

    async def retry_dead_many(
        self, queue: str, *, tag: Optional[str] = None, keys: Optional[Sequence[str]] = None
    ) -> int:
        """Retry every dead task of the queue, or those with ``tag``, or ``keys``."""
        return await self._send(calls.retry_dead_many(queue, tag, keys))

    async def delete_dead(self, queue: str, key: str) -> None:
        """Remove a dead task for good."""
        await self._send(calls.delete_dead(queue, key))

    # -- pull workers ----------------------------------------------------------------

    async def lease(
        self,
        queue: str,
        *,
        max: int = 1,
        lease_for: Duration = 30.0,
        wait: Duration = 0,
        retries: Optional[int] = None,
    ) -> List[Lease]:
        """Lease up to ``max`` due tasks, waiting up to ``wait`` for one (long poll)."""
        return await self._send(calls.lease(queue, max, lease_for, wait, retries))

    async def ack(self, lease_id: str, outcome: AckOutcome = None, *, retries: Optional[int] = None) -> None:
        """Acknowledge one lease (None: done). ``Conflict`` when the lease is gone."""
        await self._send(calls.ack(lease_id, outcome, retries))

    async def ack_many(self, acks: Iterable[Tuple[str, AckOutcome]]) -> List[AckResult]:
        """Acknowledge many leases in one call; a result per item, in order.

        Not retried: the caller sees per item what was applied.
        """
        return await self._send(calls.ack_many(acks))

    async def extend(self, lease_id: str, lease_for: Duration = 30.0) -> _dt.datetime:
        """Extend a live lease; its new ``expires_at``. ``Conflict`` when no longer live."""
        return await self._send(calls.extend(lease_id, lease_for))

    # -- operations ------------------------------------------------------------------

    async def access(self) -> Access:
        """What this client's token may do, and on which queues."""
        return await self._send(calls.access())

    async def audit_page(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> AuditPage:
        """One page of the audit log, newest first (``limit``: the server's 100 by
        default, at most 1000). Needs the admin permission."""
        return await self._send(calls.audit_page(limit, cursor))

    async def audit(self, *, page_size: Optional[int] = None) -> AsyncIterator[AuditEntry]:
        """Every entry of the audit log, newest first, page after page."""
        cursor: Optional[str] = None
        while True:
            page = await self.audit_page(limit=page_size, cursor=cursor)
            for entry in page.entries:
                yield entry
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def ready(self) -> bool:
        """True when ``/readyz`` answers 2xx (the store is reachable)."""
        try:
            return (await self._http.get("/readyz")).status_code < 300
        except httpx.TransportError:
            return False
