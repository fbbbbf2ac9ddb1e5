"""Scenario 17 of clients/SCENARIOS.md, missed occurrences, and the timing policies' bodies.

Guards against a client that drops a timing policy on the way to the server (a repeat
that catches up nothing, a late task that fires anyway), one that misreads the
policies a task shows, a repeat under overlap ``allow`` whose occurrences do not fire as
tasks of their own, and a lease or a worker's delivery that does not say which
occurrence it stands for (``scheduled_for``) and how many it stands in for (``missed``).
"""
from __future__ import annotations

import datetime as dt
import uuid

import pytest

import punctual
from conftest import Seen, gone, wait_until

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri")


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def rfc3339(at: dt.datetime) -> str:
    """A time as the server writes it in an occurrence's key: UTC, milliseconds, ``Z``."""
    return at.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ticks_due(due: dt.datetime, at: dt.datetime) -> int:
    """The occurrences of a repeat every 1s after ``due`` that are due at ``at``."""
    return max(0, int((at - due) // dt.timedelta(seconds=1)))


def test_s17_missed_occurrences(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    office = f"py-office-{uuid.uuid4().hex[:8]}"
    client.put_calendar(office, tz="Asia/Shanghai", hours={d: ["09:00-18:00"] for d in WEEKDAYS}, if_version=0)
    policies = client.schedule(
        queue_name, "daily", repeat=punctual.Repeat(every="1d"), calendar=office,
        misfire="fire_all", catch_up_max=3, overlap="queue", jitter="30s",
    ).task
    assert policies is not None
    shown = (policies.calendar, policies.misfire, policies.misfire_after, policies.catch_up_max,
             policies.overlap, policies.jitter)
    assert shown == (office, "fire_all", dt.timedelta(minutes=1), 3, "queue", dt.timedelta(seconds=30))
    assert client.get(queue_name, "daily") == policies

    [batch] = client.schedule_many(queue_name, [punctual.TaskSpec(
        "digest", repeat=punctual.Repeat(every="1d"), misfire="skip", misfire_after=dt.timedelta(hours=2),
        jitter=30)])
    assert batch.outcome == "created", batch.error
    digest = client.get(queue_name, "digest")
    assert (digest.misfire, digest.misfire_after, digest.jitter) == (
        "skip", dt.timedelta(hours=2), dt.timedelta(seconds=30))

    plain = client.schedule(queue_name, "plain", delay="1h").task
    assert plain is not None
    assert (plain.calendar, plain.misfire, plain.misfire_after, plain.catch_up_max, plain.overlap, plain.jitter) == (
        None, "fire_once", dt.timedelta(minutes=1), 10, "skip", None)

    with pytest.raises(punctual.InvalidArgument) as invalid:
        client.schedule(queue_name, "sometimes", repeat=punctual.Repeat(every="1h"), overlap="sometimes")  # type: ignore[arg-type]
    assert invalid.value.field == "overlap"
    assert gone(client, queue_name, "sometimes")()

    # Under allow each occurrence fires as a task of its own, and the repeat moves on.
    allow_queue = queue_name + ".allow"
    allowed = client.schedule(allow_queue, "tick", payload={"n": 1}, repeat=punctual.Repeat(every="1s"),
                              overlap="allow").task
    assert allowed is not None and allowed.overlap == "allow" and allowed.due_at
    assert client.get(allow_queue, "tick").overlap == "allow"
    [occurrence] = wait_until(lambda: client.lease(allow_queue, wait=1), timeout=5, what="an occurrence")
    assert occurrence.scheduled_for and occurrence.scheduled_for >= allowed.due_at
    assert occurrence.key == "tick@" + rfc3339(occurrence.scheduled_for)
    assert (occurrence.payload, occurrence.missed) == ({"n": 1}, 0)
    repeat = client.get(allow_queue, "tick")
    assert repeat.state == "scheduled" and repeat.due_at and repeat.due_at > occurrence.scheduled_for

    # A due_at in the past means now: lateness takes real time, so the clock is waited on.
    late_queue = queue_name + ".late"
    tick = client.schedule(late_queue, "tick", repeat=punctual.Repeat(every="1s"), misfire="fire_all",
                           catch_up_max=2).task
    late = client.schedule(late_queue, "late", misfire="skip", misfire_after="1s").task
    once = client.schedule(late_queue, "once").task
    assert tick and late and once and tick.due_at and once.due_at and late.due_at
    assert (late.misfire, late.misfire_after) == ("skip", dt.timedelta(seconds=1))
    ready = max(tick.due_at, late.due_at, once.due_at) + dt.timedelta(seconds=3, milliseconds=20)
    wait_until(lambda: now() > ready, what="3 s past the due times")

    before = now()
    leases = {lease.key: lease for lease in client.lease(late_queue, max=10)}
    after = now()
    assert sorted(leases) == ["once", "tick"], "the late one under skip does not fire"
    assert gone(client, late_queue, "late")(), "a one-off skipped ends"
    assert (leases["once"].scheduled_for, leases["once"].missed) == (once.due_at, 0)
    first = leases["tick"]
    assert first.scheduled_for == tick.due_at and first.attempt == 1
    low, high = ticks_due(tick.due_at, before) - 2, ticks_due(tick.due_at, after) - 2
    assert low <= first.missed <= high and first.missed >= 1, (first.missed, low, high)
    client.ack(leases["once"].lease_id, punctual.Done())
    client.ack(first.lease_id, punctual.Retry(delay=0, error="again"))

    def handle(lease: punctual.Lease) -> punctual.Fail:
        seen.add(lease)
        return punctual.Fail("seen")  # dead: the repeat stops here

    worker = punctual.Worker(client, wait=1.0, max_backoff=0.5)
    worker.register(late_queue, handle)
    with worker:
        [again] = seen.wait_for(1)
    assert (again.key, again.attempt, again.delivery_id) == ("tick", 2, first.delivery_id)
    assert (again.scheduled_for, again.missed) == (tick.due_at, 0), "a retry stands for the same occurrence"


def test_timing_bodies() -> None:
    spec = punctual.TaskSpec("k", repeat=punctual.Repeat(every="1h"), calendar="office", misfire="fire_all",
                             catch_up_max=7, overlap="queue", jitter=dt.timedelta(seconds=30))
    assert spec.to_json() == {"key": "k", "repeat": {"every": "1h"}, "calendar": "office", "misfire": "fire_all",
                              "catch_up_max": 7, "overlap": "queue", "jitter": 30000}
    assert punctual.TaskSpec("k", misfire="skip", misfire_after="2h").to_json() == {
        "key": "k", "misfire": "skip", "misfire_after": "2h"}
    with pytest.raises(TypeError):
        punctual.TaskSpec("k", misfire="fire_all", catch_up_max="3").to_json()  # type: ignore[arg-type]
