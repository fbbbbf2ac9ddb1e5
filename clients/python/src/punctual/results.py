"""What the server answers, as frozen dataclasses: each built from the API's JSON by its
``from_json``, the one place that reads that shape (the OpenAPI document's schema of
the same name).

Times are aware UTC ``datetime``s, durations ``timedelta``s, closed sets of words
``Literal`` types (a state is ``"scheduled"``, ``"leased"`` or ``"dead"``), a payload
whatever JSON it is. The objects that stand for a resource keep the JSON they were read
from in ``raw`` (left out of ``==`` and ``repr``), so a field this client does not know
yet is still at hand.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional

from .errors import PunctualError, error_from_detail
from .types import (
    Backoff,
    Json,
    Misfire,
    Overlap,
    Repeat,
    Target,
    UniqueFor,
    parse_duration,
    parse_time,
    time_of,
)

#: A task's state: waiting for its due time, handed to a worker, or out of attempts.
TaskState = Literal["scheduled", "leased", "dead"]
#: What a schedule did with the key.
ScheduleOutcome = Literal["created", "replaced", "kept"]
#: Where a queue's settings or a calendar come from: the API, or the server's config file.
Source = Literal["api", "config"]
#: What a token may do (API.md, "Conventions").
Permission = Literal["read", "schedule", "work", "admin"]
#: What happened to a task, in its history: ``retried`` and ``deleted`` are a dead task
#: put back or removed (by hand, or ``deleted`` by the dead-task retention).
HistoryEventKind = Literal[
    "created", "replaced", "cancelled", "purged", "leased", "extended", "released", "acked",
    "expired", "retried", "deleted", "imported",
]
#: A task's state after an event of its history: ``gone`` once there is no task.
HistoryState = Literal["scheduled", "leased", "dead", "gone"]
#: How an ``acked`` event's try ended.
AckedOutcome = Literal["done", "retry", "reschedule", "dead"]
#: What an entry of the audit log records.
AuditAction = Literal[
    "queue.settings.set", "queue.settings.clear", "queue.pause", "queue.resume", "queue.purge",
    "calendar.set", "calendar.remove", "access.reload",
]

Raw = Dict[str, Any]


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


def _millis(value: Optional[int]) -> Optional[_dt.timedelta]:
    return None if value is None else _dt.timedelta(milliseconds=int(value))


@dataclass(frozen=True)
class Task:
    """A task as the server shows it (API.md, "Task object").

    Policies show their effective values: ``backoff`` and ``max_attempts`` (the queue's
    defaults when the schedule gave none), ``calendar`` (None without one), ``misfire``
    (default ``fire_once``), ``misfire_after`` (default 1 minute; it applies under
    ``skip``), ``catch_up_max`` (default 10; it applies under ``fire_all``),
    ``overlap`` (default ``skip``) and ``jitter`` (None without one). ``traceparent``
    is the W3C trace context the task was scheduled with (None without one): a
    handler continues that trace.
    """

    queue: str
    key: str
    state: TaskState
    due_at: _dt.datetime
    payload: Json
    attempts: int
    max_attempts: int
    backoff: Backoff
    repeat: Optional[Repeat]
    tags: List[str]
    version: int
    created_at: _dt.datetime
    updated_at: _dt.datetime
    lease_expires_at: Optional[_dt.datetime]
    last_error: Optional[str]
    target: Optional[Target]
    priority: int
    group: Optional[str]
    unique_for: Optional[UniqueFor]
    calendar: Optional[str]
    misfire: Misfire
    misfire_after: _dt.timedelta
    catch_up_max: int
    overlap: Overlap
    jitter: Optional[_dt.timedelta]
    traceparent: Optional[str] = None
    raw: Raw = _raw()

    @property
    def cron_syntax(self) -> Optional[str]:
        """How the task's cron repeat is read: ``spring`` or ``quartz`` as the server
        shows them, else ``vixie``; None without a cron repeat."""
        if self.repeat is None or self.repeat.cron is None:
            return None
        return self.repeat.cron_syntax or "vixie"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Task":
        repeat, target = data.get("repeat"), data.get("target")
        unique_for, jitter = data.get("unique_for"), data.get("jitter")
        return cls(
            queue=data["queue"],
            key=data["key"],
            state=data["state"],
            due_at=time_of(data, "due_at"),
            payload=data.get("payload"),
            attempts=int(data.get("attempts") or 0),
            max_attempts=int(data["max_attempts"]),
            backoff=Backoff.from_json(data["backoff"]),
            repeat=None if repeat is None else Repeat.from_json(repeat),
            tags=list(data.get("tags") or []),
            version=int(data["version"]),
            created_at=time_of(data, "created_at"),
            updated_at=time_of(data, "updated_at"),
            lease_expires_at=parse_time(data.get("lease_expires_at")),
            last_error=data.get("last_error"),
            target=None if target is None else Target.from_json(target),
            priority=int(data.get("priority") or 0),
            group=data.get("group"),
            unique_for=None if unique_for is None else UniqueFor.from_json(unique_for),
            calendar=data.get("calendar"),
            misfire=data.get("misfire") or "fire_once",
            misfire_after=parse_duration(data.get("misfire_after") or "1m"),
            catch_up_max=int(data.get("catch_up_max") or 10),
            overlap=data.get("overlap") or "skip",
            jitter=None if jitter is None else parse_duration(jitter),
            traceparent=data.get("traceparent"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Lease:
    """A leased task, as the worker hands it to a handler.

    ``attempt`` is this try's ordinal (1 for the first); ``delivery_id`` is the same for
    every try of one occurrence: store it to make a handler idempotent.
    ``scheduled_for`` is the time the occurrence this lease stands for was scheduled for
    (before jitter, retries and misfires); ``missed`` counts the later occurrences of a
    repeat already due that will not fire of their own, this firing standing in for
    them (0 when on time).
    """

    lease_id: str
    expires_at: _dt.datetime
    attempt: int
    delivery_id: str
    task: Task
    scheduled_for: _dt.datetime
    missed: int = 0
    raw: Raw = _raw()

    @property
    def queue(self) -> str:
        return self.task.queue

    @property
    def key(self) -> str:
        return self.task.key

    @property
    def payload(self) -> Json:
        return self.task.payload

    @property
    def due_at(self) -> _dt.datetime:
        return self.task.due_at

    @property
    def tags(self) -> List[str]:
        return self.task.tags

    @property
    def priority(self) -> int:
        return self.task.priority

    @property
    def group(self) -> Optional[str]:
        return self.task.group

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Lease":
        return cls(
            lease_id=data["lease_id"],
            expires_at=time_of(data, "expires_at"),
            attempt=int(data["attempt"]),
            delivery_id=data["delivery_id"],
            task=Task.from_json(data["task"]),
            scheduled_for=time_of(data, "scheduled_for"),
            missed=int(data.get("missed") or 0),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Completed:
    """The task that completed under a key within its dedupe window, and so kept a
    schedule of that key: ``unique_until`` (``completed_at`` + the window) is when
    schedules of the key create tasks again."""

    queue: str
    key: str
    id: int
    state: Literal["done"]
    completed_at: _dt.datetime
    attempts: int
    occurrence: int
    unique_until: _dt.datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Completed":
        return cls(
            queue=data["queue"],
            key=data["key"],
            id=int(data["id"]),
            state="done",
            completed_at=time_of(data, "completed_at"),
            attempts=int(data.get("attempts") or 0),
            occurrence=int(data.get("occurrence") or 0),
            unique_until=time_of(data, "unique_until"),
        )

    @classmethod
    def in_answer(cls, answer: Mapping[str, Any]) -> Optional["Completed"]:
        """The completion that kept a schedule (or a batch item), when a dedupe window did."""
        data = answer.get("completed")
        return cls.from_json(data) if isinstance(data, Mapping) else None


@dataclass(frozen=True)
class ScheduleResult:
    """The answer to a schedule: ``outcome`` ``created``, ``replaced`` or ``kept``, and
    the task. Kept by the dedupe window of a task of the key that completed, there is no
    task (``task`` is None) and ``completed`` says what completed and until when it keeps
    the key; a dead task holding its key is kept as the ``task``, untouched."""

    outcome: ScheduleOutcome
    task: Optional[Task]
    completed: Optional[Completed] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ScheduleResult":
        task = data.get("task")
        return cls(
            outcome=data["outcome"],
            task=None if task is None else Task.from_json(task),
            completed=Completed.in_answer(data),
        )


@dataclass(frozen=True)
class BatchResult:
    """One item's result in ``schedule_many``: an ``outcome``, or an ``error``; kept by a
    dedupe window, ``completed`` is the completion that kept it."""

    key: Optional[str]
    outcome: Optional[ScheduleOutcome] = None
    error: Optional[PunctualError] = None
    completed: Optional[Completed] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "BatchResult":
        error = data.get("error")
        if isinstance(error, Mapping):
            return cls(key=data.get("key"), error=error_from_detail(400, error))
        return cls(key=data.get("key"), outcome=data.get("outcome"), completed=Completed.in_answer(data))


@dataclass(frozen=True)
class AckResult:
    """One item of a batch ack: ``status`` 204 when applied, else 400/404/409 and why."""

    lease_id: Optional[str]
    status: int
    error: Optional[PunctualError] = None

    @property
    def ok(self) -> bool:
        return self.status == 204

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "AckResult":
        status = int(data.get("status", 0))
        error: Optional[PunctualError] = None
        if status != 204:
            detail = data.get("error")
            if isinstance(detail, str):
                detail = {"message": detail}
            error = error_from_detail(status, detail if isinstance(detail, Mapping) else {})
        return cls(lease_id=data.get("lease_id"), status=status, error=error)


@dataclass(frozen=True)
class Page:
    """One page of a list: its tasks and the cursor of the next (None at the end)."""

    tasks: List[Task]
    next_cursor: Optional[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Page":
        return cls([Task.from_json(t) for t in data["tasks"]], data.get("next_cursor"))


@dataclass(frozen=True)
class GroupCounts:
    """One group of a queue with its tasks by state; ``leased`` is what the queue's
    ``group_concurrency`` counts (an expired lease until the reaper ends it)."""

    group: str
    scheduled: int
    leased: int
    dead: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GroupCounts":
        return cls(
            group=data["group"],
            scheduled=int(data.get("scheduled") or 0),
            leased=int(data.get("leased") or 0),
            dead=int(data.get("dead") or 0),
        )


@dataclass(frozen=True)
class GroupsPage:
    """One page of a queue's groups, by name, and the cursor of the next (None at the end)."""

    groups: List[GroupCounts]
    next_cursor: Optional[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GroupsPage":
        groups = [GroupCounts.from_json(g) for g in data.get("groups") or []]
        return cls(groups, data.get("next_cursor"))


@dataclass(frozen=True)
class QueueSummary:
    """A queue with its tasks by state (``GET /v1/queues``): ``next_due_at`` is the
    earliest due time of a scheduled task (None when it has none); a ``paused`` queue
    leases and delivers nothing until it is resumed."""

    name: str
    scheduled: int
    leased: int
    dead: int
    next_due_at: Optional[_dt.datetime]
    paused: bool
    raw: Raw = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "QueueSummary":
        return cls(**_summary_fields(data), raw=dict(data))


def _summary_fields(data: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "name": data["name"],
        "scheduled": int(data.get("scheduled") or 0),
        "leased": int(data.get("leased") or 0),
        "dead": int(data.get("dead") or 0),
        "next_due_at": parse_time(data.get("next_due_at")),
        "paused": bool(data.get("paused")),
    }


@dataclass(frozen=True)
class FireLag:
    """How late this server's recent leases of a queue were (lease time − due time), at
    the median and the 99th percentile; None while it has leased none."""

    p50: Optional[_dt.timedelta]
    p99: Optional[_dt.timedelta]


@dataclass(frozen=True)
class OutboxLag:
    """A queue's rows committed in the outboxes the server drains and not applied yet,
    and how long the oldest of them has waited (None when none)."""

    rows_waiting: int
    oldest_age: Optional[_dt.timedelta]


@dataclass(frozen=True)
class QueueStats:
    """One queue (``GET /v1/queues/{queue}``): the counts of ``QueueSummary``, how long
    its earliest due task has waited (``oldest_overdue``, zero when none is due), the
    recent fire ``lag``, and its ``outbox`` rows (None when the server drains no
    outbox). An unknown queue has zero counts."""

    name: str
    scheduled: int
    leased: int
    dead: int
    next_due_at: Optional[_dt.datetime]
    paused: bool
    oldest_overdue: _dt.timedelta
    lag: FireLag
    outbox: Optional[OutboxLag]
    raw: Raw = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "QueueStats":
        lag = data.get("lag_ms") or {}
        outbox = data.get("outbox")
        return cls(
            **_summary_fields(data),
            oldest_overdue=_dt.timedelta(milliseconds=int(data.get("oldest_overdue_ms") or 0)),
            lag=FireLag(p50=_millis(lag.get("p50")), p99=_millis(lag.get("p99"))),
            outbox=None if outbox is None else OutboxLag(
                rows_waiting=int(outbox.get("rows_waiting") or 0),
                oldest_age=_millis(outbox.get("oldest_age_ms")),
            ),
            raw=dict(data),
        )


@dataclass(frozen=True)
class TaskDefaults:
    """The policies a queue's tasks take when their schedule gives none."""

    max_attempts: int
    backoff: Backoff
    repeat: Optional[Repeat]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TaskDefaults":
        repeat = data.get("repeat")
        return cls(
            max_attempts=int(data["max_attempts"]),
            backoff=Backoff.from_json(data["backoff"]),
            repeat=None if repeat is None else Repeat.from_json(repeat),
        )


@dataclass(frozen=True)
class QueueSettings:
    """A queue's stored settings (API.md, "Queue settings").

    ``action`` is the push action as given (its keys depend on its ``kind``; no secret
    in it), None for pull workers. ``rate`` and ``group_rate`` are ``"COUNT/DURATION"``
    (None: no limit), ``group_concurrency`` None: no limit. ``version`` is what
    ``put_settings``, ``patch_settings`` and ``delete_settings`` take as ``if_version``
    (0: never changed).
    """

    queue: str
    source: Source
    defaults: TaskDefaults
    action: Optional[Dict[str, Any]]
    concurrency: int
    rate: Optional[str]
    shards: int
    targets: bool
    group_concurrency: Optional[int]
    group_rate: Optional[str]
    paused: bool
    version: int
    updated_at: _dt.datetime
    raw: Raw = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "QueueSettings":
        action, group_concurrency = data.get("action"), data.get("group_concurrency")
        return cls(
            queue=data["queue"],
            source=data.get("source") or "api",
            defaults=TaskDefaults.from_json(data["defaults"]),
            action=None if action is None else dict(action),
            concurrency=int(data["concurrency"]),
            rate=data.get("rate"),
            shards=int(data.get("shards") or 1),
            targets=bool(data.get("targets", True)),
            group_concurrency=None if group_concurrency is None else int(group_concurrency),
            group_rate=data.get("group_rate"),
            paused=bool(data.get("paused")),
            version=int(data.get("version") or 0),
            updated_at=time_of(data, "updated_at"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Access:
    """What the calling token may do: its ``permissions`` on the queues whose names
    match one of ``queues`` (``*`` any run of characters; ``["*"]`` every queue), and the
    ``name`` the server's logs call it by."""

    name: str
    permissions: List[Permission]
    queues: List[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Access":
        return cls(name=data["name"], permissions=list(data["permissions"]), queues=list(data["queues"]))


@dataclass(frozen=True)
class HistoryEvent:
    """One event of a task's history (``history``). Fields that do not apply to the event
    are None (``changed`` empty): ``by`` is the name of the token that made the change
    (None for the server's own work, such as an expiry, and on a server without tokens);
    ``attempt`` the try (leased, acked, expired); ``lease`` the lease's number;
    ``due_at`` when the task is due after the event; ``lease_expires_at`` when the lease
    ends (leased, extended); ``outcome`` how an acked try ended; ``error`` the handler's
    error or why a lease expired; ``changed`` what a replace changed (``due_at``,
    ``payload``, ``tags``, ``priority``, ``group``, ``target``, ``policies``); ``tag`` the
    tag of a cancel by tag; ``took``, ``status`` and ``answer`` what a push delivery's far
    end answered, and how fast; ``node`` the name of the server node that handed out a
    lease (leased; such as ``web-1:7575 (pid 4242)``, None for a lease taken through the
    library without a node name) and ``delivery_id`` the lease's ``Lease.delivery_id``
    (leased; the same for every try of one occurrence)."""

    at: _dt.datetime
    event: HistoryEventKind
    state: HistoryState
    by: Optional[str] = None
    attempt: Optional[int] = None
    lease: Optional[int] = None
    due_at: Optional[_dt.datetime] = None
    lease_expires_at: Optional[_dt.datetime] = None
    outcome: Optional[AckedOutcome] = None
    error: Optional[str] = None
    changed: List[str] = field(default_factory=list)
    tag: Optional[str] = None
    took: Optional[_dt.timedelta] = None
    status: Optional[int] = None
    answer: Optional[str] = None
    node: Optional[str] = None
    delivery_id: Optional[str] = None
    raw: Raw = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "HistoryEvent":
        attempt, lease, status = data.get("attempt"), data.get("lease"), data.get("status")
        return cls(
            at=time_of(data, "at"),
            event=data["event"],
            state=data["state"],
            by=data.get("by"),
            attempt=None if attempt is None else int(attempt),
            lease=None if lease is None else int(lease),
            due_at=parse_time(data.get("due_at")),
            lease_expires_at=parse_time(data.get("lease_expires_at")),
            outcome=data.get("outcome"),
            error=data.get("error"),
            changed=list(data.get("changed") or []),
            tag=data.get("tag"),
            took=_millis(data.get("took_ms")),
            status=None if status is None else int(status),
            answer=data.get("answer"),
            node=data.get("node"),
            delivery_id=data.get("delivery_id"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class TaskHistory:
    """What happened to a task (``GET /v1/queues/{queue}/tasks/{key}/history``), also once
    it is gone: its ``events``, oldest first (at most the latest 100), kept for
    ``retention`` after the latest (the queue's ``history_retention``)."""

    queue: str
    key: str
    retention: _dt.timedelta
    events: List[HistoryEvent]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TaskHistory":
        return cls(
            queue=data["queue"],
            key=data["key"],
            retention=_dt.timedelta(milliseconds=int(data["retention_ms"])),
            events=[HistoryEvent.from_json(e) for e in data.get("events") or []],
        )


@dataclass(frozen=True)
class AuditEntry:
    """One entry of the server's audit log (``audit``): an operator's change, when, and
    by which token's name (None on a server without tokens, and for a reload of the
    config file by SIGHUP). ``queue`` or ``calendar`` names what it changed (None when
    neither applies); ``detail`` is the JSON object the server adds, as it wrote it."""

    at: _dt.datetime
    action: AuditAction
    by: Optional[str] = None
    queue: Optional[str] = None
    calendar: Optional[str] = None
    detail: Optional[Dict[str, Any]] = None
    raw: Raw = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "AuditEntry":
        detail = data.get("detail")
        return cls(
            at=time_of(data, "at"),
            action=data["action"],
            by=data.get("by"),
            queue=data.get("queue"),
            calendar=data.get("calendar"),
            detail=None if detail is None else dict(detail),
            raw=dict(data),
        )


@dataclass(frozen=True)
class AuditPage:
    """One page of the audit log, newest first, and the cursor of the next (None at the end)."""

    entries: List[AuditEntry]
    next_cursor: Optional[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "AuditPage":
        return cls([AuditEntry.from_json(e) for e in data.get("entries") or []], data.get("next_cursor"))
