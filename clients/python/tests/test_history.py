"""A task's history and the audit log through both clients, against the real server.

Guards against a history or an audit entry read wrong (an event's kind, its state after
the event, what a replace changed, a field the event leaves out that does not read as
None), a history of an unknown key that is not ``NotFound``, and an audit log whose
pages or iterator lose or repeat an entry.
"""
from __future__ import annotations

import datetime as dt
from typing import Callable, List

import pytest

import punctual
from conftest import Server


def test_history_of_a_scheduled_replaced_cancelled_task(client: punctual.Client, queue_name: str) -> None:
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    client.schedule(queue_name, "order-1", delay="1h", payload={"n": 1})
    client.schedule(queue_name, "order-1", delay="2h", payload={"n": 2})
    client.cancel(queue_name, "order-1")

    history = client.history(queue_name, "order-1")
    assert (history.queue, history.key) == (queue_name, "order-1")
    assert history.retention == dt.timedelta(days=7)
    assert [e.event for e in history.events] == ["created", "replaced", "cancelled"]
    assert [e.state for e in history.events] == ["scheduled", "scheduled", "gone"]
    created, replaced, cancelled = history.events
    assert before < created.at <= replaced.at <= cancelled.at
    assert created.changed == [] and sorted(replaced.changed) == ["due_at", "payload"]
    assert created.due_at is not None and replaced.due_at is not None
    assert replaced.due_at - created.due_at > dt.timedelta(minutes=59)
    # A server without tokens names nobody, and a schedule is neither a try nor a lease.
    for event in history.events:
        assert (event.by, event.attempt, event.lease, event.outcome, event.error) == (None,) * 5
        assert (event.tag, event.took, event.status, event.answer, event.node, event.delivery_id) == (None,) * 6
    assert cancelled.due_at is None and cancelled.raw["event"] == "cancelled"

    with pytest.raises(punctual.NotFound):
        client.get(queue_name, "order-1")
    with pytest.raises(punctual.NotFound):
        client.history(queue_name, "never-scheduled")


def test_history_of_a_try_that_failed(client: punctual.Client, queue_name: str) -> None:
    client.schedule(queue_name, "k/1", max_attempts=1)  # a key with "/" is one path segment
    [lease] = client.lease(queue_name, lease_for=30)
    client.ack(lease.lease_id, punctual.Fail("card declined"))

    events = client.history(queue_name, "k/1").events
    assert [(e.event, e.state) for e in events] == [
        ("created", "scheduled"), ("leased", "leased"), ("acked", "dead")]
    leased, acked = events[1], events[2]
    assert leased.attempt == 1 and leased.lease is not None
    assert leased.lease_expires_at == lease.expires_at
    assert (acked.attempt, acked.lease, acked.outcome, acked.error) == (1, leased.lease, "dead", "card declined")


def test_every_field_of_an_event_read() -> None:
    """The fields the server tests do not reach (a token's name, a push delivery's
    answer), read from the API's JSON."""
    event = punctual.HistoryEvent.from_json({
        "at": "2026-12-06T05:56:06.219Z", "event": "acked", "by": "shop", "state": "scheduled",
        "attempt": 2, "lease": 7, "due_at": "2026-12-06T06:00:00.000Z",
        "lease_expires_at": "2026-12-06T05:56:36.219Z", "outcome": "retry", "error": "HTTP 503",
        "changed": ["target"], "tag": "t", "took_ms": 1500, "status": 503, "answer": "busy",
    })
    utc = dt.timezone.utc
    assert event == punctual.HistoryEvent(
        at=dt.datetime(2026, 12, 6, 5, 56, 6, 219000, tzinfo=utc), event="acked", state="scheduled", by="shop",
        attempt=2, lease=7, due_at=dt.datetime(2026, 12, 6, 6, 0, tzinfo=utc),
        lease_expires_at=dt.datetime(2026, 12, 6, 5, 56, 36, 219000, tzinfo=utc), outcome="retry",
        error="HTTP 503", changed=["target"], tag="t", took=dt.timedelta(milliseconds=1500), status=503,
        answer="busy")
    assert (event.node, event.delivery_id) == (None, None)  # a leased event's only
    leased = punctual.HistoryEvent.from_json({
        "at": "2026-12-06T05:56:06.219Z", "event": "leased", "state": "leased", "attempt": 2, "lease": 7,
        "lease_expires_at": "2026-12-06T05:56:36.219Z", "node": "web-1:7575 (pid 4242)",
        "delivery_id": "0000000000001-7f-1-1"})
    assert (leased.event, leased.node, leased.delivery_id) == (
        "leased", "web-1:7575 (pid 4242)", "0000000000001-7f-1-1")
    entry = punctual.AuditEntry.from_json({
        "at": "2026-12-06T05:56:06.219Z", "by": "ops", "action": "calendar.set", "calendar": "cn-office",
        "detail": {"version": 2, "hours_changed": True}})
    assert (entry.by, entry.action, entry.queue, entry.calendar) == ("ops", "calendar.set", None, "cn-office")
    assert entry.detail == {"version": 2, "hours_changed": True}


@pytest.fixture
def server_of_its_own(make_server: Callable[..., Server]) -> Server:
    """The audit log is the server's: a server of the test's own holds only its entries."""
    return make_server()


def test_audit_of_a_pause_and_a_resume(server_of_its_own: Server, queue_name: str) -> None:
    with server_of_its_own.client() as client:
        assert client.audit_page().entries == []
        client.pause(queue_name)
        client.resume(queue_name)

        first = client.audit_page(limit=1)
        assert [(e.action, e.queue) for e in first.entries] == [("queue.resume", queue_name)]
        assert first.next_cursor is not None
        second = client.audit_page(limit=1, cursor=first.next_cursor)
        [paused] = second.entries
        assert (paused.action, paused.queue, paused.calendar, paused.by) == ("queue.pause", queue_name, None, None)
        assert paused.at <= first.entries[0].at
        assert paused.detail is None or isinstance(paused.detail, dict)

        every: List[punctual.AuditEntry] = list(client.audit(page_size=1))
        assert every == first.entries + second.entries

        client.put_settings(queue_name, {"group_concurrency": 2})
        [settings] = client.audit_page(limit=1).entries
        assert (settings.action, settings.queue) == ("queue.settings.set", queue_name)
        assert settings.detail is not None and settings.detail["group_concurrency"] == 2
        with pytest.raises(punctual.InvalidArgument) as refused:
            client.audit_page(limit=1001)
        assert refused.value.field == "limit"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_async_history_and_audit(server_of_its_own: Server, queue_name: str) -> None:
    due = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    async with punctual.AsyncClient(server_of_its_own.url) as client:
        await client.schedule(queue_name, "k", due_at=due, tags=["a"])
        await client.schedule(queue_name, "k", due_at=due, tags=["b"])
        assert await client.cancel_tag(queue_name, "b") == 1
        history = await client.history(queue_name, "k")
        assert [(e.event, e.state, e.changed) for e in history.events] == [
            ("created", "scheduled", []), ("replaced", "scheduled", ["tags"]), ("cancelled", "gone", [])]
        assert history.events[2].tag == "b"
        with pytest.raises(punctual.NotFound):
            await client.history(queue_name, "other")

        await client.pause(queue_name)
        page = await client.audit_page()
        assert [(e.action, e.queue) for e in page.entries] == [("queue.pause", queue_name)]
        assert page.next_cursor is None
        assert [e async for e in client.audit(page_size=1)] == page.entries
