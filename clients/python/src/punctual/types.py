"""What a caller sends: durations and times, the task's policies, a schedule's body and
a handler's outcomes, with their conversions to (and, for the policies a task shows,
from) the API's JSON. What the server answers is in ``results``.

Durations given to the client are ``datetime.timedelta``, a number of **seconds**
(``int`` or ``float``, as ``time.sleep`` takes) or a string the server parses
(``"1500ms"``, ``"30s"``, ``"1h 30m"``, ``"PT30M"``). Times are aware ``datetime``
values, or strings in RFC 3339. Read back from the server, durations are ``timedelta``
and times aware UTC ``datetime``.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Mapping, Optional, Union

Duration = Union[_dt.timedelta, int, float, str]
Time = Union[_dt.datetime, str]
Json = Any

#: What becomes of occurrences missed while no server ran or the queue was paused:
#: one firing for all (``fire_once``, the default), each of them oldest first up to
#: ``catch_up_max`` (``fire_all``), or none (``skip``: later than ``misfire_after``).
Misfire = Literal["fire_once", "fire_all", "skip"]
#: What becomes of a repeat's occurrences due while its firing is leased: dropped
#: (``skip``, the default), the latest fired as soon as the firing ends (``queue``), or
#: each fired as a task of its own keyed ``<key>@<scheduled_for>`` beside the others
#: (``allow``: the repeat moves to its next occurrence at once).
Overlap = Literal["skip", "queue", "allow"]
#: How a cron repeat is read: Vixie cron (the server's default), Spring's or Quartz's
#: ``CronExpression``.
CronSyntax = Literal["vixie", "spring", "quartz"]
#: What a schedule of an existing key does: replaces it (the default), keeps it, or is
#: refused with ``Conflict``.
IfExists = Literal["replace", "keep", "error"]
#: How a ``due_at`` outside a calendar's working time moves: to its next opening.
Align = Literal["next_open"]


def duration_json(value: Duration, name: str = "duration") -> Union[int, str]:
    """A duration as the API takes it: integer milliseconds, or the string unchanged."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name}: a bool is not a duration")
    if isinstance(value, _dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)):
        seconds = float(value)
    else:
        raise TypeError(f"{name}: expected timedelta, seconds or a string, got {type(value).__name__}")
    if seconds < 0:
        raise ValueError(f"{name}: a duration cannot be negative")
    return int(round(seconds * 1000))


def duration_seconds(value: Duration) -> float:
    """A duration given to the worker, in seconds (strings are not parsed here)."""
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeError("expected a timedelta or a number of seconds")


def time_json(value: Time, name: str = "time") -> str:
    """A time as the API takes it: RFC 3339. A naive datetime is refused (which zone?)."""
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"{name}: a naive datetime is ambiguous; give it a tzinfo")
        return value.isoformat()
    raise TypeError(f"{name}: expected an aware datetime or an RFC 3339 string")


def parse_time(value: Optional[str]) -> Optional[_dt.datetime]:
    """An RFC 3339 time of a response (``2026-11-30T12:00:00.000Z``) as an aware datetime."""
    if value is None:
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    return _dt.datetime.fromisoformat(text)


_DURATION_PART = re.compile(r"(\d+)(ms|d|h|m|s)")


def parse_duration(value: Union[str, int]) -> _dt.timedelta:
    """A duration of a response as a ``timedelta``: the server writes whole units,
    largest first (``"1h 30m"``, ``"1s 500ms"``), or integer milliseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _dt.timedelta(milliseconds=value)
    text = value.replace(" ", "") if isinstance(value, str) else ""
    if not text or _DURATION_PART.sub("", text):
        raise ValueError(f"not a duration the server writes: {value!r}")
    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
    ms = sum(int(number) * units[unit] for number, unit in _DURATION_PART.findall(text))
    return _dt.timedelta(milliseconds=ms)


def time_of(data: Mapping[str, Any], name: str) -> _dt.datetime:
    """The time ``data[name]`` of a response, which the API always gives."""
    value = parse_time(data.get(name))
    if value is None:
        raise ValueError(f"the answer has no {name}")
    return value


@dataclass(frozen=True)
class Backoff:
    """Retry delays: ``initial``, times ``factor`` after each failure, at most ``max``."""

    initial: Duration
    factor: float
    max: Duration

    def to_json(self) -> Dict[str, Any]:
        return {
            "initial": duration_json(self.initial, "backoff.initial"),
            "factor": float(self.factor),
            "max": duration_json(self.max, "backoff.max"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Backoff":
        """As a task or a queue's defaults show it: the durations as ``timedelta``."""
        return cls(
            initial=parse_duration(data["initial"]),
            factor=float(data["factor"]),
            max=parse_duration(data["max"]),
        )


@dataclass(frozen=True)
class Repeat:
    """Fire again: ``every`` (fixed rate) or ``cron`` (with ``tz``), not both.

    ``cron_syntax`` reads ``cron`` as ``vixie`` (the server's default), ``spring`` or
    ``quartz`` (``"0 0 9 ? * MON-FRI"`` as Spring's or Quartz's ``CronExpression``
    reads it); a task shows it in its ``repeat`` for spring and quartz
    (``Task.cron_syntax``). Read back, ``every`` is a ``timedelta`` and ``until`` a
    ``datetime``.
    """

    every: Optional[Duration] = None
    cron: Optional[str] = None
    tz: Optional[str] = None
    times: Optional[int] = None
    until: Optional[Time] = None
    cron_syntax: Optional[CronSyntax] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if self.every is not None:
            out["every"] = duration_json(self.every, "repeat.every")
        if self.cron is not None:
            out["cron"] = self.cron
        if self.tz is not None:
            out["tz"] = self.tz
        if self.times is not None:
            out["times"] = self.times
        if self.until is not None:
            out["until"] = time_json(self.until, "repeat.until")
        if self.cron_syntax is not None:
            out["cron_syntax"] = self.cron_syntax
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Repeat":
        every, times = data.get("every"), data.get("times")
        return cls(
            every=None if every is None else parse_duration(every),
            cron=data.get("cron"),
            tz=data.get("tz"),
            times=None if times is None else int(times),
            until=parse_time(data.get("until")),
            cron_syntax=data.get("cron_syntax"),
        )


@dataclass(frozen=True)
class Target:
    """A task's own HTTP target, delivered by the server (API.md, "HTTP targets").

    Read back, ``method``, ``headers`` and ``timeout`` (a ``timedelta``) show the
    effective values and ``has_body`` whether the task sends a ``body`` of its own.
    """

    url: str
    method: Optional[str] = None
    headers: Optional[Mapping[str, str]] = None
    timeout: Optional[Duration] = None
    body: Json = None
    has_body: bool = False  # True sends ``body`` even when it is None (JSON null)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"url": self.url}
        if self.method is not None:
            out["method"] = self.method
        if self.headers is not None:
            out["headers"] = dict(self.headers)
        if self.timeout is not None:
            out["timeout"] = duration_json(self.timeout, "target.timeout")
        if self.body is not None or self.has_body:
            out["body"] = self.body
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Target":
        timeout = data.get("timeout")
        return cls(
            url=data["url"],
            method=data.get("method"),
            headers=dict(data.get("headers") or {}),
            timeout=None if timeout is None else parse_duration(timeout),
            body=data.get("body"),
            has_body="body" in data,
        )


@dataclass(frozen=True)
class UniqueFor:
    """A dedupe window: for ``window`` after the key's task completed (done; with
    ``dead``, also after it went dead), a schedule of the key creates nothing and answers
    ``kept``. ``Task.unique_for`` reads it back with ``window`` a ``timedelta``."""

    window: Duration
    dead: bool = False

    def to_json(self) -> Union[int, str, Dict[str, Any]]:
        if self.dead:
            return {"window": duration_json(self.window, "unique_for.window"), "dead": True}
        return duration_json(self.window, "unique_for")

    @classmethod
    def from_json(cls, data: Union[str, int, Mapping[str, Any]]) -> "UniqueFor":
        """The task's form: a duration (held after done only) or ``{"window", "dead"}``."""
        if isinstance(data, Mapping):
            return cls(window=parse_duration(data["window"]), dead=bool(data.get("dead")))
        return cls(window=parse_duration(data))


def _policy_json(value: Any) -> Any:
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def task_body(
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
) -> Dict[str, Any]:
    """The JSON body of a ``PUT`` of a task (and of a batch item, without its key, and of
    an outbox ``schedule`` row: ``punctual.outbox``).

    ``priority`` is sent as given: the server checks its range (0–9) and answers
    ``InvalidArgument`` with field ``priority``. ``debounce`` is the burst's max wait,
    sent as ``{"max_wait": …}``; the server refuses 0 (field ``debounce.max_wait``) and
    a debounce with ``if_exists`` keep or error (field ``debounce``). ``group`` is sent
    as given: the server refuses an empty one or one with control characters (field
    ``group``). ``unique_for`` is a duration (the window after done) or a ``UniqueFor``
    (``dead=True``: after dead too); the server refuses 0 (field ``unique_for``).
    ``calendar`` names a working-time calendar: ``delay`` counts its working time, and
    ``due_at`` with ``align="next_open"`` moves to its next opening; the server refuses
    a calendar it does not serve (field ``calendar``); with ``repeat`` the repeat runs
    in its working time. The timing policies (``misfire``, ``misfire_after`` with
    ``skip`` only, ``catch_up_max`` 1–1000 with ``fire_all`` only, ``overlap``,
    ``jitter`` up to 12h) are sent as given: the server judges them and names the field
    it refuses (under ``overlap="allow"``, a key longer than 487 bytes: field
    ``overlap``).
    """
    if delay is not None and due_at is not None:
        raise ValueError("give delay or due_at, not both")
    body: Dict[str, Any] = {}
    if delay is not None:
        body["delay"] = duration_json(delay, "delay")
    if due_at is not None:
        body["due_at"] = time_json(due_at, "due_at")
    if payload is not None:
        body["payload"] = payload
    if repeat is not None:
        body["repeat"] = _policy_json(repeat)
    if tags is not None:
        body["tags"] = list(tags)
    if max_attempts is not None:
        body["max_attempts"] = max_attempts
    if backoff is not None:
        body["backoff"] = _policy_json(backoff)
    if if_exists is not None:
        if if_exists not in ("replace", "keep", "error"):
            raise ValueError("if_exists must be 'replace', 'keep' or 'error'")
        body["if_exists"] = if_exists
    if target is not None:
        body["target"] = _policy_json(target)
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"priority: expected an int, got {type(priority).__name__}")
        body["priority"] = priority
    if debounce is not None:
        body["debounce"] = {"max_wait": duration_json(debounce, "debounce")}
    if group is not None:
        if not isinstance(group, str):
            raise TypeError(f"group: expected a str, got {type(group).__name__}")
        body["group"] = group
    if unique_for is not None:
        if isinstance(unique_for, UniqueFor):
            body["unique_for"] = unique_for.to_json()
        else:
            body["unique_for"] = duration_json(unique_for, "unique_for")
    if calendar is not None:
        body["calendar"] = calendar
    if align is not None:
        if align != "next_open":
            raise ValueError("align must be 'next_open'")
        body["align"] = align
    if misfire is not None:
        body["misfire"] = misfire
    if misfire_after is not None:
        body["misfire_after"] = duration_json(misfire_after, "misfire_after")
    if catch_up_max is not None:
        if isinstance(catch_up_max, bool) or not isinstance(catch_up_max, int):
            raise TypeError(f"catch_up_max: expected an int, got {type(catch_up_max).__name__}")
        body["catch_up_max"] = catch_up_max
    if overlap is not None:
        body["overlap"] = overlap
    if jitter is not None:
        body["jitter"] = duration_json(jitter, "jitter")
    return body


@dataclass(frozen=True)
class TaskSpec:
    """One item of ``Client.schedule_many``: a key and the fields of ``Client.schedule``."""

    key: str
    payload: Json = None
    delay: Optional[Duration] = None
    due_at: Optional[Time] = None
    repeat: Union[Repeat, Mapping[str, Any], None] = None
    tags: Optional[List[str]] = None
    max_attempts: Optional[int] = None
    backoff: Union[Backoff, Mapping[str, Any], None] = None
    if_exists: Optional[IfExists] = None
    target: Union[Target, Mapping[str, Any], None] = None
    priority: Optional[int] = None
    debounce: Optional[Duration] = None
    group: Optional[str] = None
    unique_for: Union[Duration, UniqueFor, None] = None
    calendar: Optional[str] = None
    align: Optional[Align] = None
    misfire: Optional[Misfire] = None
    misfire_after: Optional[Duration] = None
    catch_up_max: Optional[int] = None
    overlap: Optional[Overlap] = None
    jitter: Optional[Duration] = None

    def to_json(self) -> Dict[str, Any]:
        body = task_body(
            payload=self.payload, delay=self.delay, due_at=self.due_at, repeat=self.repeat,
            tags=self.tags, max_attempts=self.max_attempts, backoff=self.backoff,
            if_exists=self.if_exists, target=self.target, priority=self.priority,
            debounce=self.debounce, group=self.group, unique_for=self.unique_for,
            calendar=self.calendar, align=self.align, misfire=self.misfire,
            misfire_after=self.misfire_after, catch_up_max=self.catch_up_max,
            overlap=self.overlap, jitter=self.jitter,
        )
        body["key"] = self.key
        return body


# Outcomes: what a handler returns (or what ``Client.ack`` sends).


@dataclass(frozen=True)
class Done:
    """The task is done (a repeating task is re-armed). Returning None means the same."""

    def to_json(self) -> Dict[str, Any]:
        return {"outcome": "done"}


@dataclass(frozen=True)
class Retry:
    """Try again after ``delay``, or after the task's backoff when ``delay`` is None."""

    delay: Optional[Duration] = None
    error: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"outcome": "retry"}
        if self.delay is not None:
            out["delay"] = duration_json(self.delay, "delay")
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Reschedule:
    """Fire again later as a new occurrence (attempts reset, a new delivery_id)."""

    delay: Optional[Duration] = None
    due_at: Optional[Time] = None

    def to_json(self) -> Dict[str, Any]:
        if (self.delay is None) == (self.due_at is None):
            raise ValueError("Reschedule takes exactly one of delay and due_at")
        out: Dict[str, Any] = {"outcome": "reschedule"}
        if self.delay is not None:
            out["delay"] = duration_json(self.delay, "delay")
        else:
            assert self.due_at is not None
            out["due_at"] = time_json(self.due_at, "due_at")
        return out


@dataclass(frozen=True)
class Fail:
    """Dead now, with ``error`` as its ``last_error``."""

    error: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"outcome": "fail"}
        if self.error is not None:
            out["error"] = self.error
        return out


Outcome = Union[Done, Retry, Reschedule, Fail]
