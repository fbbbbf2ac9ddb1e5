"""Every API call as a ``Call``: its method, path, query, headers and body, and how its
answer is read. One function per operation of the OpenAPI document (``operations``
maps them to the clients' methods); ``Client`` and ``AsyncClient`` take each from here.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from ._core import Call, nothing
from .calendars import Calendar
from .results import (
    Access,
    AckResult,
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
from .types import Duration, Outcome, TaskSpec, duration_json, time_of

#: An outcome as ``ack`` takes it: a ``Done``, ``Retry``, ``Reschedule`` or ``Fail``, the
#: API's JSON (``{"outcome": "retry", "delay": "5m"}``), or None for done.
AckOutcome = Union[Outcome, Mapping[str, Any], None]


def _seg(value: str) -> str:
    """A path segment, percent-encoded (a key with ``/`` is sent as ``%2F``)."""
    return quote(value, safe="")


def _queue(queue: str) -> str:
    return f"/v1/queues/{_seg(queue)}"


def _task(queue: str, key: str) -> str:
    return f"{_queue(queue)}/tasks/{_seg(key)}"


def _if_match(if_version: Optional[int]) -> Dict[str, str]:
    return {} if if_version is None else {"if-match": str(if_version)}


def _count(name: str) -> Any:
    return lambda data: int(data[name])


def outcome_json(outcome: AckOutcome) -> Dict[str, Any]:
    if outcome is None:
        return {"outcome": "done"}
    if isinstance(outcome, Mapping):
        return dict(outcome)
    return outcome.to_json()


# -- tasks ----------------------------------------------------------------------------


def _traceparent(traceparent: Optional[str]) -> Dict[str, str]:
    """The W3C ``traceparent`` header the server keeps with the tasks scheduled."""
    return {} if traceparent is None else {"traceparent": traceparent}


def schedule(
    queue: str, key: str, body: Dict[str, Any], traceparent: Optional[str] = None
) -> Call[ScheduleResult]:
    return Call("PUT", _task(queue, key), ScheduleResult.from_json, body=body,
                headers=_traceparent(traceparent))


def schedule_many(
    queue: str, tasks: Iterable[Union[TaskSpec, Mapping[str, Any]]], traceparent: Optional[str] = None
) -> Call[List[BatchResult]]:
    items = [t.to_json() if isinstance(t, TaskSpec) else dict(t) for t in tasks]
    return Call(
        "POST", f"{_queue(queue)}/tasks",
        lambda data: [BatchResult.from_json(r) for r in data.get("results") or []],
        body={"tasks": items}, headers=_traceparent(traceparent),
    )


def get(queue: str, key: str) -> Call[Task]:
    return Call("GET", _task(queue, key), Task.from_json)


def history(queue: str, key: str) -> Call[TaskHistory]:
    return Call("GET", f"{_task(queue, key)}/history", TaskHistory.from_json)


def cancel(queue: str, key: str) -> Call[None]:
    return Call("DELETE", _task(queue, key), nothing)


def cancel_tag(queue: str, tag: str) -> Call[int]:
    return Call("DELETE", f"{_queue(queue)}/tags/{_seg(tag)}", _count("cancelled"))


def list_page(
    queue: str, state: Optional[str], tag: Optional[str], limit: Optional[int], cursor: Optional[str]
) -> Call[Page]:
    params = {"state": state, "tag": tag, "limit": limit, "cursor": cursor}
    return Call("GET", f"{_queue(queue)}/tasks", Page.from_json, params=params)


def purge(queue: str, state: str) -> Call[int]:
    return Call("DELETE", f"{_queue(queue)}/tasks", _count("cancelled"), params={"state": state})


# -- queues ---------------------------------------------------------------------------


def queues() -> Call[List[QueueSummary]]:
    return Call("GET", "/v1/queues", lambda data: [QueueSummary.from_json(q) for q in data["queues"]])


def queue_stats(queue: str) -> Call[QueueStats]:
    return Call("GET", _queue(queue), QueueStats.from_json)


def groups_page(queue: str, limit: Optional[int], cursor: Optional[str]) -> Call[GroupsPage]:
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"{_queue(queue)}/groups", GroupsPage.from_json, params=params)


def get_settings(queue: str) -> Call[QueueSettings]:
    return Call("GET", f"{_queue(queue)}/settings", QueueSettings.from_json)


def put_settings(
    queue: str, settings: Mapping[str, Any], if_version: Optional[int]
) -> Call[QueueSettings]:
    return Call("PUT", f"{_queue(queue)}/settings", QueueSettings.from_json,
                body=dict(settings), headers=_if_match(if_version))


def patch_settings(
    queue: str, changes: Mapping[str, Any], if_version: Optional[int]
) -> Call[QueueSettings]:
    return Call("PATCH", f"{_queue(queue)}/settings", QueueSettings.from_json,
                body=dict(changes), headers=_if_match(if_version))


def delete_settings(queue: str, if_version: Optional[int]) -> Call[None]:
    return Call("DELETE", f"{_queue(queue)}/settings", nothing, headers=_if_match(if_version))


def pause(queue: str) -> Call[QueueSettings]:
    return Call("POST", f"{_queue(queue)}/pause", QueueSettings.from_json)


def resume(queue: str) -> Call[QueueSettings]:
    return Call("POST", f"{_queue(queue)}/resume", QueueSettings.from_json)


# -- calendars ------------------------------------------------------------------------


def calendars() -> Call[List[Calendar]]:
    return Call("GET", "/v1/calendars", lambda data: [Calendar.from_json(c) for c in data["calendars"]])


def get_calendar(name: str) -> Call[Calendar]:
    return Call("GET", f"/v1/calendars/{_seg(name)}", Calendar.from_json)


def put_calendar(name: str, body: Dict[str, Any], if_version: Optional[int]) -> Call[Calendar]:
    return Call("PUT", f"/v1/calendars/{_seg(name)}", Calendar.from_json,
                body=body, headers=_if_match(if_version))


def delete_calendar(name: str, if_version: Optional[int]) -> Call[None]:
    return Call("DELETE", f"/v1/calendars/{_seg(name)}", nothing, headers=_if_match(if_version))


# -- dead tasks -----------------------------------------------------------------------


def dead_page(queue: str, limit: Optional[int], cursor: Optional[str]) -> Call[Page]:
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"{_queue(queue)}/dead", Page.from_json, params=params)


def retry_dead(queue: str, key: str) -> Call[Task]:
    return Call("POST", f"{_queue(queue)}/dead/{_seg(key)}/retry", Task.from_json)


def retry_dead_many(queue: str, tag: Optional[str], keys: Optional[Sequence[str]]) -> Call[int]:
    if tag is not None and keys is not None:
        raise ValueError("give tag or keys, not both")
    body: Dict[str, Any] = {}
    if tag is not None:
        body["tag"] = tag
    if keys is not None:
        body["keys"] = list(keys)
    return Call("POST", f"{_queue(queue)}/dead/retry", _count("retried"), body=body)


def delete_dead(queue: str, key: str) -> Call[None]:
    return Call("DELETE", f"{_queue(queue)}/dead/{_seg(key)}", nothing)


# -- pull workers ---------------------------------------------------------------------


def lease(
    queue: str, max: int, lease_for: Duration, wait: Duration, retries: Optional[int]
) -> Call[List[Lease]]:
    wait_json = duration_json(wait, "wait")
    # A wait given as text is not parsed here: allow the API's longest, 60 s.
    held = wait_json / 1000.0 if isinstance(wait_json, int) else 60.0
    body = {"max": max, "lease": duration_json(lease_for, "lease"), "wait": wait_json}
    return Call(
        "POST", f"{_queue(queue)}/lease",
        lambda data: [Lease.from_json(item) for item in data.get("leases") or []],
        body=body, retries=retries, long_poll=held,
    )


def ack(lease_id: str, outcome: AckOutcome, retries: Optional[int]) -> Call[None]:
    return Call("POST", f"/v1/leases/{_seg(lease_id)}/ack", nothing,
                body=outcome_json(outcome), retries=retries)


def ack_many(acks: Iterable[Tuple[str, AckOutcome]]) -> Call[List[AckResult]]:
    """Not retried: a result per item says what was applied."""
    items = [{**outcome_json(outcome), "lease_id": lease_id} for lease_id, outcome in acks]
    return Call(
        "POST", "/v1/acks",
        lambda data: [AckResult.from_json(r) for r in data.get("results") or []],
        body={"acks": items}, retries=0,
    )


def extend(lease_id: str, lease_for: Duration) -> Call[_dt.datetime]:
    return Call("POST", f"/v1/leases/{_seg(lease_id)}/extend",
                lambda data: time_of(data, "expires_at"),
                body={"lease": duration_json(lease_for, "lease")})


# -- operations -----------------------------------------------------------------------


def access() -> Call[Access]:
    return Call("GET", "/v1/access", Access.from_json)


def audit_page(limit: Optional[int], cursor: Optional[str]) -> Call[AuditPage]:
    return Call("GET", "/v1/audit", AuditPage.from_json, params={"limit": limit, "cursor": cursor})
