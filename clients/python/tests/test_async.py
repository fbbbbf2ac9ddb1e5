"""The asyncio client and worker against the real `punctual serve`: the main scenarios
of clients/SCENARIOS.md again (named ``test_async_sNN_…`` after theirs), and every
``AsyncClient`` method once.

Guards against an ``AsyncClient`` that drifts from ``Client`` (a call built or read
otherwise, a retry that blocks the loop), and an ``AsyncWorker`` that loses an ack at
shutdown, lets a lease lapse under a long handler, or dies when the server goes away.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from typing import Any, AsyncIterator, Awaitable, Callable, List, Optional, TypeVar

import anyio
import pytest

import punctual
from conftest import Records, Server, free_port

pytestmark = pytest.mark.anyio
T = TypeVar("T")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # AsyncWorker is written for asyncio


@pytest.fixture
async def aclient(server: Server) -> AsyncIterator[punctual.AsyncClient]:
    async with punctual.AsyncClient(server.url) as client:
        yield client


async def eventually(check: Callable[[], Awaitable[Optional[T]]], timeout: float = 10.0,
                     what: str = "condition") -> T:
    """Await ``check()`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.03)


def gone(client: punctual.AsyncClient, queue: str, key: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        try:
            await client.get(queue, key)
            return False
        except punctual.NotFound:
            return True
    return check


def in_state(client: punctual.AsyncClient, queue: str, key: str,
             state: str) -> Callable[[], Awaitable[Optional[punctual.Task]]]:
    async def check() -> Optional[punctual.Task]:
        task = await client.get(queue, key)
        return task if task.state == state else None
    return check


class Seen:
    """What a handler saw, in order, with the loop's time of each delivery."""

    def __init__(self) -> None:
        self.leases: List[punctual.Lease] = []
        self.at: List[float] = []
        self.changed = asyncio.Condition()

    async def add(self, lease: punctual.Lease) -> None:
        async with self.changed:
            self.leases.append(lease)
            self.at.append(time.monotonic())
            self.changed.notify_all()

    async def wait_for(self, n: int, timeout: float = 10.0) -> List[punctual.Lease]:
        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(lambda: len(self.leases) >= n), timeout)
            except asyncio.TimeoutError:
                raise AssertionError(f"timed out waiting for delivery {n} (saw {len(self.leases)})")
            return list(self.leases)


def worker_for(client: punctual.AsyncClient, **kwargs: Any) -> punctual.AsyncWorker:
    kwargs.setdefault("wait", 1.0)
    kwargs.setdefault("max_backoff", 0.5)
    return punctual.AsyncWorker(client, **kwargs)


async def test_async_s01_schedule_lease_ack(aclient: punctual.AsyncClient, queue_name: str) -> None:
    result = await aclient.schedule(queue_name, "k/1", payload={"order_id": 1234}, tags=["pi-9"])
    assert result.outcome == "created"
    task = await aclient.get(queue_name, "k/1")
    assert task.state == "scheduled" and task.tags == ["pi-9"] and task.key == "k/1"

    seen = Seen()
    worker = worker_for(aclient)

    @worker.handler(queue_name, concurrency=2)
    async def handle(lease: punctual.Lease) -> None:
        await seen.add(lease)

    async with worker:
        [lease] = await seen.wait_for(1)
        assert lease.payload == {"order_id": 1234}
        assert lease.attempt == 1 and lease.delivery_id
        assert lease.queue == queue_name and lease.key == "k/1" and lease.tags == ["pi-9"]
        await eventually(gone(aclient, queue_name, "k/1"), what="the task to be acked away")


async def test_async_s02_retry_with_backoff(aclient: punctual.AsyncClient, queue_name: str) -> None:
    await aclient.schedule(queue_name, "r", backoff=punctual.Backoff(initial="1s", factor=2, max="1s"))
    seen = Seen()
    failed_at: List[float] = []
    worker = worker_for(aclient)

    async def handle(lease: punctual.Lease) -> None:
        await seen.add(lease)
        if lease.attempt == 1:
            failed_at.append(time.monotonic())
            raise RuntimeError("smtp timeout on attempt 1")

    worker.register(queue_name, handle)
    async with worker:
        await seen.wait_for(1)

        async def failed_once() -> Optional[punctual.Task]:
            task = await aclient.get(queue_name, "r")
            return task if task.last_error else None

        between = await eventually(failed_once, what="last_error after the first try")
        assert between.last_error is not None and "smtp timeout on attempt 1" in between.last_error
        first, second = await seen.wait_for(2)
        assert second.attempt == 2 and second.delivery_id == first.delivery_id
        assert seen.at[1] - failed_at[0] >= 0.8, seen.at[1] - failed_at[0]
        await eventually(gone(aclient, queue_name, "r"))


async def test_async_s04_fail_dead_retry(aclient: punctual.AsyncClient, queue_name: str) -> None:
    await aclient.schedule(queue_name, "f", payload={"order": 7})
    seen = Seen()
    worker = worker_for(aclient)

    @worker.handler(queue_name)
    async def handle(lease: punctual.Lease) -> Optional[punctual.Fail]:
        await seen.add(lease)
        return punctual.Fail("order not found") if len(seen.leases) == 1 else None

    async with worker:
        await seen.wait_for(1)
        dead = await eventually(in_state(aclient, queue_name, "f", "dead"), what="the task dead")
        assert dead.last_error == "order not found"
        assert [t.key async for t in aclient.dead(queue_name)] == ["f"]
        assert (await aclient.retry_dead(queue_name, "f")).state == "scheduled"
        _, again = await seen.wait_for(2)
        assert again.attempt == 1
        await eventually(gone(aclient, queue_name, "f"))


async def test_async_s05_handler_longer_than_its_lease(aclient: punctual.AsyncClient, queue_name: str,
                                                       records: Records) -> None:
    await aclient.schedule(queue_name, "slow")
    seen = Seen()
    worker = worker_for(aclient, lease_for=1.0)

    @worker.handler(queue_name)
    async def handle(lease: punctual.Lease) -> None:
        await seen.add(lease)
        await asyncio.sleep(2.5)  # the handler's work: two and a half leases

    async with worker:
        await seen.wait_for(1)
        await eventually(gone(aclient, queue_name, "slow"), what="the ack after 2.5 s")
        assert not records.events("ack_refused") and not records.events("lease_lost")
    assert len(seen.leases) == 1


async def test_async_s07_server_restarted_while_workers_long_poll(
        make_server: Any, queue_name: str, records: Records) -> None:
    srv: Server = await anyio.to_thread.run_sync(make_server)
    seen = Seen()
    async with punctual.AsyncClient(srv.url, retries=0) as client:
        worker = worker_for(client, wait=2.0, max_backoff=0.3)
        worker.register(queue_name, seen.add)
        async with worker:
            await client.schedule(queue_name, "before")
            await seen.wait_for(1)
            await anyio.to_thread.run_sync(srv.stop)

            async def lost() -> bool:
                return bool(records.events("connection_lost"))

            await eventually(lost, what="the lost connection logged")
            await anyio.to_thread.run_sync(srv.start)
            await client.schedule(queue_name, "after", payload={"after": True})
            leases = await seen.wait_for(2, timeout=15)
            assert leases[1].key == "after" and leases[1].payload == {"after": True}
            await eventually(gone(client, queue_name, "after"))
            assert len(records.events("connection_lost")) == 1
            assert len(records.events("connection_restored")) == 1


async def test_async_s08_graceful_shutdown(aclient: punctual.AsyncClient, queue_name: str) -> None:
    # Part one: a handler that finishes within the grace period is acked.
    started, finish = asyncio.Event(), asyncio.Event()
    worker = worker_for(aclient, wait=5.0)

    @worker.handler(queue_name, concurrency=2)
    async def handle(lease: punctual.Lease) -> None:
        started.set()
        await finish.wait()

    await aclient.schedule(queue_name, "running")
    await worker.start()
    await asyncio.wait_for(started.wait(), 5)
    stopper = asyncio.ensure_future(worker.stop(grace=5.0))
    await asyncio.wait_for(worker._polls_cut.wait(), 5)
    # Scheduled after the open long poll was cut: stays scheduled, although a slot is free.
    await aclient.schedule(queue_name, "late")
    finish.set()
    await asyncio.wait_for(stopper, 10)
    assert await gone(aclient, queue_name, "running")(), "the running handler's ack was sent"
    assert (await aclient.get(queue_name, "late")).state == "scheduled"

    # Part two: a handler that outlasts the grace period is cancelled, not acked; its
    # lease expires and the task comes back.
    other = queue_name + ".grace"
    await aclient.schedule(other, "stuck")
    stuck, cancelled = asyncio.Event(), asyncio.Event()
    worker2 = worker_for(aclient, lease_for=1.5)

    @worker2.handler(other)
    async def handle2(lease: punctual.Lease) -> None:
        stuck.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    await worker2.start()
    await asyncio.wait_for(stuck.wait(), 5)
    t0 = time.monotonic()
    await worker2.stop(grace=0.3)
    assert time.monotonic() - t0 < 3 and cancelled.is_set()
    assert (await aclient.get(other, "stuck")).state == "leased"
    back = await eventually(in_state(aclient, other, "stuck", "scheduled"), timeout=6,
                            what="the lease to expire")
    assert back.attempts == 1
    [lease] = await aclient.lease(other, max=1, wait=2)
    assert lease.attempt == 2
    await aclient.ack(lease.lease_id)


async def test_async_s10_every_error_code_mapped(aclient: punctual.AsyncClient, queue_name: str,
                                                 make_server: Any) -> None:
    with pytest.raises(punctual.NotFound) as not_found:
        await aclient.get(queue_name, "missing")
    assert not_found.value.status == 404 and not_found.value.message
    await aclient.schedule(queue_name, "once")
    with pytest.raises(punctual.Conflict) as conflict:
        await aclient.schedule(queue_name, "once", if_exists="error")
    assert conflict.value.status == 409
    with pytest.raises(punctual.InvalidArgument) as invalid:
        await aclient.schedule(queue_name, "bad", delay="soon")
    assert invalid.value.field == "delay" and "soon" in invalid.value.message

    guarded: Server = await anyio.to_thread.run_sync(lambda: make_server(args=["--token", "s3cret"]))
    async with punctual.AsyncClient(guarded.url, token="") as anonymous:
        with pytest.raises(punctual.Unauthorized) as unauthorized:
            await anonymous.get(queue_name, "x")
    assert unauthorized.value.status == 401
    async with punctual.AsyncClient(guarded.url, token="s3cret") as trusted:
        with pytest.raises(punctual.NotFound):
            await trusted.get(queue_name, "x")

    async with punctual.AsyncClient(f"http://127.0.0.1:{free_port()}", retries=2,
                                    backoff_base=0.01) as nobody:
        t0 = time.monotonic()
        with pytest.raises(punctual.Unavailable) as unavailable:
            await nobody.get(queue_name, "x")
    assert "cannot reach" in unavailable.value.message and time.monotonic() - t0 < 5


async def test_async_client_every_method(aclient: punctual.AsyncClient, queue_name: str) -> None:
    """Each AsyncClient method once, read back as typed results."""
    assert await aclient.ready()
    access = await aclient.access()
    assert set(access.permissions) == {"read", "schedule", "work", "admin"} and access.queues == ["*"]
    assert access.name == "anyone"

    # Many schedules at once on one client: the loop is not blocked by any of them.
    results = await asyncio.gather(*(
        aclient.schedule(queue_name, f"k{n:03}", delay="1h", tags=["burst"] if n % 2 else [],
                         group="even" if n % 2 == 0 else None)
        for n in range(40)))
    assert {r.outcome for r in results} == {"created"}
    listed = [t.key async for t in aclient.list(queue_name, page_size=7)]  # in due order
    assert sorted(listed) == [f"k{n:03}" for n in range(40)]
    page = await aclient.list_page(queue_name, tag="burst", limit=5)
    assert len(page.tasks) == 5 and page.next_cursor is not None
    assert (await aclient.groups_page(queue_name)).groups == [
        punctual.GroupCounts("even", scheduled=20, leased=0, dead=0)]
    assert await aclient.cancel_tag(queue_name, "burst") == 20
    await aclient.cancel(queue_name, "k000")

    batch = await aclient.schedule_many(queue_name, [
        punctual.TaskSpec("b1", payload={"n": 1}), {"key": "b2", "delay": "nonsense"}])
    assert batch[0].outcome == "created" and isinstance(batch[1].error, punctual.InvalidArgument)
    stats = await aclient.queue_stats(queue_name)
    assert (stats.name, stats.scheduled, stats.dead) == (queue_name, 20, 0)
    assert isinstance(stats.oldest_overdue, dt.timedelta)
    assert queue_name in [q.name for q in await aclient.queues()]

    settings = await aclient.put_settings(queue_name, {"defaults": {"max_attempts": 1}})
    assert settings.defaults.max_attempts == 1 and settings.source == "api"
    with pytest.raises(punctual.Conflict):
        await aclient.patch_settings(queue_name, {"concurrency": 3}, if_version=settings.version + 5)
    patched = await aclient.patch_settings(queue_name, {"concurrency": 3}, if_version=settings.version)
    assert patched.concurrency == 3 and (await aclient.get_settings(queue_name)) == patched
    assert (await aclient.pause(queue_name)).paused
    assert await aclient.lease(queue_name, wait=0) == []
    resumed = await aclient.resume(queue_name)
    assert not resumed.paused and resumed.version > patched.version

    [lease] = await aclient.lease(queue_name, max=5, lease_for=5, wait=1)
    assert lease.key == "b1" and lease.payload == {"n": 1}
    assert await aclient.extend(lease.lease_id, 10) > dt.datetime.now(dt.timezone.utc)
    [applied, unknown] = await aclient.ack_many([(lease.lease_id, punctual.Fail("nope")),
                                                 ("not-a-lease", None)])
    assert applied.ok and unknown.status == 404 and isinstance(unknown.error, punctual.NotFound)
    assert [t.key for t in (await aclient.dead_page(queue_name)).tasks] == ["b1"]
    assert await aclient.retry_dead_many(queue_name, keys=["b1"]) == 1
    [again] = await aclient.lease(queue_name, max=5, wait=1)
    await aclient.ack(again.lease_id, punctual.Fail("still nope"))
    await aclient.delete_dead(queue_name, "b1")
    assert [t async for t in aclient.dead(queue_name)] == []
    await aclient.delete_settings(queue_name, if_version=resumed.version)
    assert await aclient.purge(queue_name, "scheduled") == 19

    name = f"py-async-{uuid.uuid4().hex[:8]}"
    calendar = await aclient.put_calendar(name, tz="UTC", hours={"mon": ["09:00-17:00"]}, if_version=0)
    assert calendar.version == 1 and (await aclient.get_calendar(name)) == calendar
    assert name in [c.name for c in await aclient.calendars()]
    await aclient.delete_calendar(name, if_version=calendar.version)
    with pytest.raises(punctual.NotFound):
        await aclient.get_calendar(name)


async def test_async_worker_takes_coroutine_functions_only(aclient: punctual.AsyncClient) -> None:
    worker = punctual.AsyncWorker(aclient)
    with pytest.raises(TypeError, match="async def"):
        worker.register("q", lambda lease: None)  # type: ignore[arg-type,return-value]


async def test_schedule_sends_a_traceparent_that_the_task_keeps(aclient: punctual.AsyncClient) -> None:
    queue_name = f"pya.trace.{uuid.uuid4().hex[:8]}"
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    created = await aclient.schedule(queue_name, "traced", traceparent=traceparent)
    assert created.task is not None and created.task.traceparent == traceparent
    await aclient.schedule_many(queue_name, [{"key": "b1"}], traceparent=traceparent)
    assert (await aclient.get(queue_name, "b1")).traceparent == traceparent
