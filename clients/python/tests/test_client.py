"""The rest of the API through the client, and the pure helpers.

Guards against calls the scenarios do not reach: a wrong path or body for batches,
paging, settings with If-Match, pause and purge, batch acks and extension.
"""
from __future__ import annotations

import datetime as dt

import pytest

import punctual
from punctual.types import duration_json, parse_duration, parse_time


def test_signature_vector_from_the_docs() -> None:
    header = "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af"
    assert punctual.verify_signature(b"{}", header, "whsec", now=1700000000)
    assert punctual.sign(b"{}", "whsec", 1700000000) == header
    assert not punctual.verify_signature(b"{}", header, "whsec", now=1700000000 + 301)
    assert not punctual.verify_signature(b"{}", "garbage", "whsec")
    assert not punctual.verify_signature(b"{}", "", "whsec")


def test_signature_with_rotated_secrets() -> None:
    """A server rotating its secret signs with both, the new one first; a receiver
    rotating its own checks against both. Any v1 under any secret passes."""
    body, t = b'{"key":"order-1"}', 1700000000
    both = punctual.sign(body, ["whsec-new", "whsec-old"], t)
    assert both == punctual.sign(body, "whsec-new", t) + "," + punctual.sign(body, "whsec-old", t).split(",")[1]
    assert both.count("v1=") == 2
    for secrets in (["whsec-new"], ["whsec-old"], ["whsec-new", "whsec-old"], "whsec-old", (b"whsec-new",)):
        assert punctual.verify_signature(body, both, secrets, now=t), secrets
    assert not punctual.verify_signature(body, both, ["whsec-other"], now=t)
    assert not punctual.verify_signature(body, both, [], now=t)
    single = punctual.sign(body, "whsec-new", t)
    assert punctual.verify_signature(body, single, ["whsec-other", "whsec-new"], now=t)
    assert punctual.verify_signature(body, single + ",v2=abc,x", ["whsec-new"], now=t), "unknown fields ignored"
    assert not punctual.verify_signature(body.replace(b"1", b"2"), both, ["whsec-new", "whsec-old"], now=t)
    assert not punctual.verify_signature(body, both, ["whsec-new", "whsec-old"], now=t + 301)
    assert not punctual.verify_signature(body, f"t={t}", ["whsec-new"], now=t)
    assert not punctual.verify_signature(body, both.split(",", 1)[1], ["whsec-new"], now=t)
    with pytest.raises(punctual.InvalidSignature, match="mismatch"):
        punctual.check_signature(body, both, ["whsec-other", "whsec-other-2"], now=t)


def test_durations_and_times() -> None:
    assert duration_json(1.5) == 1500
    assert duration_json(dt.timedelta(minutes=30)) == 1_800_000
    assert duration_json("1h 30m") == "1h 30m"
    with pytest.raises(ValueError):
        punctual.Client("http://127.0.0.1:1").schedule("q", "k", due_at=dt.datetime(2030, 1, 1))
    assert parse_time("2026-11-30T12:00:00.000Z") == dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)
    assert parse_duration("1d 2h 3m 4s 5ms") == dt.timedelta(days=1, hours=2, minutes=3, seconds=4, milliseconds=5)
    assert parse_duration("1m 30s") == dt.timedelta(seconds=90) and parse_duration(1500).total_seconds() == 1.5
    for bad in ["", "soon", "1h x", "1.5h"]:
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert punctual.UniqueFor(dt.timedelta(hours=1)).to_json() == 3_600_000
    assert punctual.UniqueFor("90s", dead=True).to_json() == {"window": "90s", "dead": True}
    assert punctual.UniqueFor.from_json({"window": "1m 30s", "dead": True}) == punctual.UniqueFor(
        dt.timedelta(seconds=90), dead=True)


def test_schedule_every_field_and_batch(client: punctual.Client, queue_name: str) -> None:
    due = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    r = client.schedule(
        queue_name, "full", payload={"a": 1}, due_at=due,
        repeat=punctual.Repeat(cron="0 9 * * MON-FRI", tz="Asia/Shanghai", times=3),
        tags=["t1", "t2"], max_attempts=5,
        backoff=punctual.Backoff(initial="2s", factor=3, max="1m"),
    )
    assert r.outcome == "created"
    t = r.task
    assert t.max_attempts == 5 and t.tags == ["t1", "t2"] and t.repeat and t.repeat.cron
    assert client.schedule(queue_name, "full", delay="1h", if_exists="keep").outcome == "kept"
    assert client.schedule(queue_name, "full", delay=3600, repeat={"every": "24h"}).outcome == "replaced"

    results = client.schedule_many(queue_name, [
        punctual.TaskSpec("b1", delay="1h", tags=["batch"]),
        {"key": "b2", "delay": "nonsense"},
        punctual.TaskSpec("b3", delay=dt.timedelta(hours=2), tags=["batch"]),
    ])
    assert [r.key for r in results] == ["b1", "b2", "b3"]
    assert results[0].ok and results[2].ok
    assert isinstance(results[1].error, punctual.InvalidArgument) and results[1].error.field == "tasks[1].delay"

    keys = [task.key for task in client.list(queue_name, page_size=1)]
    assert sorted(keys) == ["b1", "b3", "full"]

    ranked = client.schedule_many(queue_name, [
        punctual.TaskSpec("p1", delay="1h", priority=7),
        punctual.TaskSpec("p2", delay="1h", priority=10),
    ])
    assert ranked[0].ok and client.get(queue_name, "p1").priority == 7
    assert isinstance(ranked[1].error, punctual.InvalidArgument)
    assert ranked[1].error.field == "tasks[1].priority"
    client.cancel(queue_name, "p1")

    burst = client.schedule_many(queue_name, [punctual.TaskSpec("d1", delay="1h", debounce="10m")])
    assert burst[0].ok
    created = client.get(queue_name, "d1").created_at
    assert created is not None
    debounced = client.schedule_many(queue_name, [
        punctual.TaskSpec("d1", delay="2h", payload={"n": 2}, debounce=600),
        punctual.TaskSpec("d2", delay="1h", debounce=0),
        punctual.TaskSpec("d3", delay="1h", debounce="10m", if_exists="keep"),
    ])
    assert debounced[0].outcome == "replaced"
    moved = client.get(queue_name, "d1")
    assert moved.payload == {"n": 2} and moved.due_at is not None
    assert moved.due_at <= created + dt.timedelta(minutes=10)
    assert isinstance(debounced[1].error, punctual.InvalidArgument)
    assert debounced[1].error.field == "tasks[1].debounce.max_wait"
    assert isinstance(debounced[2].error, punctual.InvalidArgument)
    assert debounced[2].error.field == "tasks[2].debounce"
    client.cancel(queue_name, "d1")

    grouped = client.schedule_many(queue_name, [
        punctual.TaskSpec("g1", delay="1h", group="tenant-1"),
        punctual.TaskSpec("g2", delay="1h", group="tenant\u0007"),
    ])
    assert grouped[0].ok and client.get(queue_name, "g1").group == "tenant-1"
    assert isinstance(grouped[1].error, punctual.InvalidArgument)
    assert grouped[1].error.field == "tasks[1].group"
    assert client.get(queue_name, "full").group is None
    client.cancel(queue_name, "g1")

    assert client.cancel_tag(queue_name, "batch") == 2
    client.cancel(queue_name, "full")
    with pytest.raises(punctual.NotFound):
        client.cancel(queue_name, "full")


def test_queues_settings_pause_purge(client: punctual.Client, queue_name: str) -> None:
    client.schedule(queue_name, "x", delay="1h")
    assert any(q.name == queue_name for q in client.queues())
    assert client.queue_stats(queue_name).scheduled == 1
    with pytest.raises(punctual.NotFound):
        client.get_settings(queue_name)
    s = client.put_settings(queue_name, {"defaults": {"max_attempts": 7}})
    assert s.defaults.max_attempts == 7
    with pytest.raises(punctual.Conflict):
        client.patch_settings(queue_name, {"concurrency": 3}, if_version=s.version + 5)
    s2 = client.patch_settings(queue_name, {"concurrency": 3}, if_version=s.version)
    assert s2.concurrency == 3
    assert client.pause(queue_name).paused is True
    assert client.lease(queue_name, wait=0) == []
    assert client.resume(queue_name).paused is False
    client.delete_settings(queue_name, if_version=client.get_settings(queue_name).version)
    assert client.purge(queue_name, "scheduled") == 1


def test_lease_extend_ack_batch_and_dead(client: punctual.Client, queue_name: str) -> None:
    for key in ("a", "b", "c"):
        client.schedule(queue_name, key, max_attempts=1)
    leases = client.lease(queue_name, max=3, lease_for=5)
    assert sorted(l.key for l in leases) == ["a", "b", "c"]
    assert client.extend(leases[0].lease_id, 10) > dt.datetime.now(dt.timezone.utc)
    results = client.ack_many([
        (leases[0].lease_id, None),
        (leases[1].lease_id, punctual.Fail("nope")),
        ("not-a-lease", punctual.Done()),
    ])
    assert [r.status for r in results[:2]] == [204, 204]
    assert results[2].status == 404 and isinstance(results[2].error, punctual.NotFound)
    client.ack(leases[2].lease_id, punctual.Fail("also nope"))
    with pytest.raises((punctual.Conflict, punctual.NotFound)):
        client.ack(leases[2].lease_id)
    assert sorted(t.key for t in client.dead(queue_name)) == sorted([leases[1].key, leases[2].key])
    client.delete_dead(queue_name, leases[1].key)
    assert client.retry_dead_many(queue_name) == 1
    assert client.purge(queue_name) == 1


def test_groups_page_by_page(client: punctual.Client, queue_name: str) -> None:
    client.schedule_many(queue_name, [
        punctual.TaskSpec(f"k{n}", delay="1h", group=group)
        for n, group in enumerate(["gamma", "alpha", "beta", "alpha"])
    ])
    first = client.groups_page(queue_name, limit=2)
    assert [(g.group, g.scheduled) for g in first.groups] == [("alpha", 2), ("beta", 1)]
    assert first.next_cursor is not None
    last = client.groups_page(queue_name, limit=2, cursor=first.next_cursor)
    assert last.groups == [punctual.GroupCounts("gamma", scheduled=1, leased=0, dead=0)]
    assert last.next_cursor is None
    assert client.groups_page(queue_name + ".none").groups == []


def test_unique_for_in_a_batch(client: punctual.Client, queue_name: str) -> None:
    results = client.schedule_many(queue_name, [
        punctual.TaskSpec("u1", delay="1h", unique_for=punctual.UniqueFor("2h", dead=True)),
        punctual.TaskSpec("u2", delay="1h", unique_for="0s"),
        punctual.TaskSpec("u3", delay="1h"),
    ])
    assert results[0].outcome == "created" and results[0].completed is None
    assert client.get(queue_name, "u1").unique_for == punctual.UniqueFor(dt.timedelta(hours=2), dead=True)
    assert isinstance(results[1].error, punctual.InvalidArgument)
    assert results[1].error.field == "tasks[1].unique_for"
    assert client.get(queue_name, "u3").unique_for is None
    assert client.purge(queue_name) == 2


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_traceparent_is_kept_with_the_task_and_a_leased_task_shows_it(
    client: punctual.Client, queue_name: str
) -> None:
    """The server (traces off here) keeps the header as given; a batch's goes to each."""
    created = client.schedule(queue_name, "traced", payload={"n": 1}, traceparent=TRACEPARENT)
    assert created.task is not None and created.task.traceparent == TRACEPARENT
    assert client.get(queue_name, "traced").traceparent == TRACEPARENT
    assert client.schedule(queue_name, "plain", delay="1h").task.traceparent is None  # type: ignore[union-attr]
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
    client.schedule_many(queue_name, [{"key": "b1", "delay": "1h"}], traceparent=other)
    assert client.get(queue_name, "b1").traceparent == other
    [lease] = client.lease(queue_name)
    assert (lease.task.key, lease.task.traceparent) == ("traced", TRACEPARENT)

