"""Scenarios 1–15 of clients/SCENARIOS.md, against the real `punctual serve` (16 in test_calendars.py).

Each test is named after its scenario's number. They guard against a client that
works against a mock and not the server: a wrong body, a lease never extended, acks
lost at shutdown, a worker that dies when the server restarts, a verifier that
disagrees with the server's signatures.
"""
from __future__ import annotations

import datetime as dt
import http.server
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import punctual
from conftest import Records, Seen, Server, free_port, gone, wait_until


def worker_for(c: punctual.Client, **kwargs: Any) -> punctual.Worker:
    kwargs.setdefault("wait", 1.0)
    kwargs.setdefault("max_backoff", 0.5)
    return punctual.Worker(c, **kwargs)


def test_s01_schedule_lease_ack(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    result = client.schedule(queue_name, "k/1", payload={"order_id": 1234}, tags=["pi-9"])
    assert result.outcome == "created"
    task = client.get(queue_name, "k/1")
    assert task.state == "scheduled" and task.tags == ["pi-9"] and task.key == "k/1"

    worker = worker_for(client)

    @worker.handler(queue_name, concurrency=2)
    def handle(lease: punctual.Lease) -> None:
        seen.add(lease)

    with worker:
        [lease] = seen.wait_for(1)
        assert lease.payload == {"order_id": 1234}
        assert lease.attempt == 1 and lease.delivery_id
        assert lease.queue == queue_name and lease.key == "k/1" and lease.tags == ["pi-9"]
        wait_until(gone(client, queue_name, "k/1"), what="the task to be acked away")


def test_s02_retry_with_backoff(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    client.schedule(queue_name, "r", payload={"n": 1},
                    backoff=punctual.Backoff(initial="1s", factor=2, max="1s"))
    failed_at: List[float] = []
    worker = worker_for(client)

    def handle(lease: punctual.Lease) -> None:
        seen.add(lease)
        if lease.attempt == 1:
            failed_at.append(time.monotonic())
            raise RuntimeError("smtp timeout on attempt 1")

    worker.register(queue_name, handle)
    with worker:
        seen.wait_for(1)
        between = wait_until(
            lambda: (lambda t: t if t.last_error else None)(client.get(queue_name, "r")),
            what="last_error after the first try")
        assert between.last_error is not None and "smtp timeout on attempt 1" in between.last_error
        first, second = seen.wait_for(2)
        assert second.attempt == 2
        assert second.delivery_id == first.delivery_id
        # The failure is acked after the handler returned, so the backoff runs from later;
        # the server's jitter shortens a backoff wait by up to 20 % (policy/backoff.rs).
        assert seen.at[1] - failed_at[0] >= 0.8, seen.at[1] - failed_at[0]
        wait_until(gone(client, queue_name, "r"))


def test_s03_reschedule(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    client.schedule(queue_name, "again")
    worker = worker_for(client)
    acked = threading.Event()

    def handle(lease: punctual.Lease) -> Any:
        seen.add(lease)
        if len(seen.leases) == 1:
            acked.set()
            return punctual.Reschedule(delay=1.0)
        return None

    worker.register(queue_name, handle)
    with worker:
        [first] = seen.wait_for(1)
        assert acked.wait(5)
        rescheduled = wait_until(
            lambda: (lambda t: t if t.state == "scheduled" else None)(client.get(queue_name, "again")),
            what="the task scheduled again")
        assert rescheduled.attempts == 0
        assert first.due_at is not None and rescheduled.due_at is not None
        later = (rescheduled.due_at - first.due_at).total_seconds()
        assert 0.9 <= later <= 5.0, later
        _, second = seen.wait_for(2)
        assert second.delivery_id != first.delivery_id
        assert second.attempt == 1
        wait_until(gone(client, queue_name, "again"))


def test_s04_fail_dead_retry(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    client.schedule(queue_name, "f", payload={"order": 7})
    worker = worker_for(client)

    def handle(lease: punctual.Lease) -> Any:
        seen.add(lease)
        return punctual.Fail("order not found") if len(seen.leases) == 1 else None

    worker.register(queue_name, handle)
    with worker:
        seen.wait_for(1)
        dead = wait_until(
            lambda: (lambda t: t if t.state == "dead" else None)(client.get(queue_name, "f")),
            what="the task dead")
        assert dead.last_error == "order not found"
        assert [t.key for t in client.dead(queue_name)] == ["f"]
        retried = client.retry_dead(queue_name, "f")
        assert retried.state == "scheduled"
        _, again = seen.wait_for(2)
        assert again.attempt == 1
        wait_until(gone(client, queue_name, "f"))
    assert list(client.dead(queue_name)) == []


def test_s05_handler_longer_than_its_lease(client: punctual.Client, queue_name: str,
                                           seen: Seen, records: Records) -> None:
    client.schedule(queue_name, "slow")
    worker = worker_for(client, lease_for=2.0)
    release = threading.Event()

    def handle(lease: punctual.Lease) -> None:
        seen.add(lease)
        release.wait(5.0)  # the handler's work: 5 s, two and a half leases

    worker.register(queue_name, handle)
    with worker:
        seen.wait_for(1)
        wait_until(gone(client, queue_name, "slow"), timeout=10, what="the ack after 5 s")
        assert len(seen.leases) == 1
        assert not records.events("ack_refused") and not records.events("lease_lost")
    assert len(seen.leases) == 1


CHILD = textwrap.dedent("""
    import sys, threading, punctual
    server, queue = sys.argv[1], sys.argv[2]
    worker = punctual.Worker(punctual.Client(server), lease_for=2.0, wait=1.0)
    @worker.handler(queue, concurrency=1)
    def handle(lease):
        print("handling", lease.key, lease.attempt, lease.delivery_id, flush=True)
        threading.Event().wait()  # never finishes: the process is killed here
    worker.run()
""")


def test_s06_worker_killed_mid_handler(server: Server, client: punctual.Client,
                                       queue_name: str, seen: Seen, tmp: Path) -> None:
    client.schedule(queue_name, "crash", payload={"x": 1})
    child = subprocess.Popen([sys.executable, "-c", CHILD, server.url, queue_name],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line[:3] == ["handling", "crash", "1"], line
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=5)
    finally:
        if child.poll() is None:
            child.kill()
    assert client.get(queue_name, "crash").state == "leased"

    worker = worker_for(client)
    worker.register(queue_name, seen.add)
    with worker:
        [lease] = seen.wait_for(1, timeout=10)
        assert lease.attempt == 2
        assert lease.delivery_id == line[3]
        wait_until(gone(client, queue_name, "crash"))


def test_s07_server_restarted_while_workers_long_poll(
        make_server: Any, queue_name: str, seen: Seen, records: Records) -> None:
    srv: Server = make_server()
    c = srv.client(retries=0)
    worker = worker_for(c, wait=2.0, max_backoff=0.3)
    worker.register(queue_name, seen.add)
    with worker:
        c.schedule(queue_name, "before")
        seen.wait_for(1)
        srv.stop()
        wait_until(lambda: records.events("connection_lost"), what="the lost connection logged")
        srv.start()
        restarted = srv.client()
        restarted.schedule(queue_name, "after", payload={"after": True})
        leases = seen.wait_for(2, timeout=15)
        assert leases[1].key == "after" and leases[1].payload == {"after": True}
        wait_until(lambda: records.events("connection_restored"), what="'connected again'")
        wait_until(gone(restarted, queue_name, "after"))
        assert len(records.events("connection_lost")) == 1
        assert len(records.events("connection_restored")) == 1
        restarted.close()
    assert all(t.is_alive() is False for t in worker._threads)
    c.close()


def test_s08_graceful_shutdown(client: punctual.Client, queue_name: str) -> None:
    # Part one: a handler that finishes within the grace period is acked.
    started = threading.Event()
    finish = threading.Event()
    worker = worker_for(client, wait=5.0)

    def handle(lease: punctual.Lease) -> None:
        started.set()
        finish.wait(5)

    worker.register(queue_name, handle, concurrency=2)
    client.schedule(queue_name, "running")
    worker.start()
    assert started.wait(5)
    stopper = threading.Thread(target=worker.stop, kwargs={"grace": 5.0})
    stopper.start()
    # Once the open long poll is cut: before that, it could still take a task.
    wait_until(lambda: worker._polls_cut.is_set())
    # Scheduled after the stop request: stays scheduled, although a slot is free.
    client.schedule(queue_name, "late")
    finish.set()
    stopper.join(10)
    assert not stopper.is_alive()
    wait_until(gone(client, queue_name, "running"), timeout=2, what="the running handler's ack")
    assert client.get(queue_name, "late").state == "scheduled"

    # Part two: a handler that outlasts the grace period is not acked; its lease expires.
    other = queue_name + ".grace"
    client.schedule(other, "stuck")
    stuck = threading.Event()
    never = threading.Event()
    worker2 = worker_for(client, lease_for=1.5)

    def handle2(lease: punctual.Lease) -> None:
        stuck.set()
        never.wait(10)

    worker2.register(other, handle2)
    worker2.start()
    assert stuck.wait(5)
    t0 = time.monotonic()
    worker2.stop(grace=0.3)
    assert time.monotonic() - t0 < 3
    assert client.get(other, "stuck").state == "leased"
    back = wait_until(
        lambda: (lambda t: t if t.state == "scheduled" else None)(client.get(other, "stuck")),
        timeout=6, what="the lease to expire")
    assert back.attempts == 1
    never.set()
    [lease] = client.lease(other, max=1, wait=2)
    assert lease.attempt == 2
    client.ack(lease.lease_id)


class _Receiver(http.server.BaseHTTPRequestHandler):
    got: "List[Tuple[bytes, str]]"
    cv: threading.Condition

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with self.cv:
            self.got.append((body, self.headers.get("punctual-signature", "")))
            self.cv.notify_all()
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_s09_signature_verification(make_server: Any, tmp: Path, queue_name: str) -> None:
    got: List[Tuple[bytes, str]] = []
    cv = threading.Condition()
    handler = type("Receiver", (_Receiver,), {"got": got, "cv": cv})
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        secret = "whsec-test-" + queue_name
        config = tmp / "punctual.toml"
        config.write_text(textwrap.dedent(f"""
            [egress]
            allow = ["127.0.0.1"]

            [queues."{queue_name}".action]
            kind = "webhook"
            url = "http://127.0.0.1:{receiver.server_address[1]}/hook"
            secret_env = "PY_HOOK_SECRET"
            timeout = "5s"
        """))
        srv: Server = make_server(args=["--config", str(config)], env={"PY_HOOK_SECRET": secret})
        c = srv.client()
        c.schedule(queue_name, "signed", payload={"order_id": 1234})
        with cv:
            assert cv.wait_for(lambda: got, timeout=10), "no delivery"
        body, header = got[0]
        assert json.loads(body)["key"] == "signed"
        assert header.startswith("t=")
        assert punctual.verify_signature(body, header, secret)
        assert not punctual.verify_signature(body.replace(b"1234", b"1235"), header, secret)
        t = int(header.split(",")[0][2:])
        assert not punctual.verify_signature(body, header, secret, now=t + 301)
        assert punctual.verify_signature(body, header, secret, now=t + 299)
        assert not punctual.verify_signature(body, header, "wrong-secret")
        with pytest.raises(punctual.InvalidSignature):
            punctual.check_signature(body, header, "wrong-secret")
        wait_until(gone(c, queue_name, "signed"))
        c.close()
    finally:
        receiver.shutdown()
        receiver.server_close()


def test_s10_every_error_code_mapped(client: punctual.Client, queue_name: str,
                                     make_server: Any) -> None:
    with pytest.raises(punctual.NotFound) as not_found:
        client.get(queue_name, "missing")
    assert not_found.value.status == 404 and not_found.value.message

    client.schedule(queue_name, "once")
    with pytest.raises(punctual.Conflict) as conflict:
        client.schedule(queue_name, "once", if_exists="error")
    assert conflict.value.status == 409 and conflict.value.message

    with pytest.raises(punctual.InvalidArgument) as invalid:
        client.schedule(queue_name, "bad", delay="soon")
    assert invalid.value.field == "delay" and "soon" in invalid.value.message

    guarded: Server = make_server(args=["--token", "s3cret"])
    with pytest.raises(punctual.Unauthorized) as unauthorized:
        guarded.client(token="").get(queue_name, "x")
    assert unauthorized.value.status == 401
    with pytest.raises(punctual.NotFound):
        guarded.client(token="s3cret").get(queue_name, "x")

    nobody = punctual.Client(f"http://127.0.0.1:{free_port()}", retries=2, backoff_base=0.01)
    t0 = time.monotonic()
    with pytest.raises(punctual.Unavailable) as unavailable:
        nobody.get(queue_name, "x")
    assert "cannot reach" in unavailable.value.message and time.monotonic() - t0 < 5

    # The client's decoder of a 403 (scenario 11 gets one from the real server).
    body = json.dumps({"error": {"code": "forbidden",
                                 "message": "this token lacks the schedule permission on queue q"}})
    forbidden = punctual.error_from_response(403, body.encode())
    assert isinstance(forbidden, punctual.Forbidden)
    assert forbidden.message == "this token lacks the schedule permission on queue q"
    unavailable503 = punctual.error_from_response(503, b'{"error":{"code":"unavailable","message":"store down"}}')
    assert isinstance(unavailable503, punctual.Unavailable) and unavailable503.is_transient


def test_s11_scoped_token(make_server: Any, tmp: Path, queue_name: str) -> None:
    full_token = "full-" + queue_name.rsplit(".", 1)[-1]
    reader_token = "reader-" + queue_name.rsplit(".", 1)[-1]
    scoped_queue = "scoped." + queue_name
    config = tmp / "scoped.toml"
    config.write_text(textwrap.dedent(f"""
        tokens = ["{full_token}"]

        [[access]]
        token = "{reader_token}"
        permissions = ["read"]
        queues = ["scoped.*"]
    """))
    srv: Server = make_server(args=["--config", str(config)])
    full = srv.client(token=full_token)
    reader = srv.client(token=reader_token, retries=0)
    try:
        full.schedule(scoped_queue, "readable", payload={"v": 1}, delay="1h")
        task = reader.get(scoped_queue, "readable")
        assert task.key == "readable" and task.state == "scheduled" and task.payload == {"v": 1}

        with pytest.raises(punctual.Forbidden) as refused:
            reader.schedule(scoped_queue, "refused", payload={"v": 2})
        err = refused.value
        assert err.status == 403 and err.code == "forbidden"
        assert "schedule permission" in err.message and f"'{scoped_queue}'" in err.message, err.message
        with pytest.raises(punctual.NotFound):
            full.get(scoped_queue, "refused")

        with pytest.raises(punctual.Forbidden) as replaced:
            reader.schedule(scoped_queue, "readable", payload={"v": 3})
        assert replaced.value.status == 403 and "schedule permission" in replaced.value.message
        assert full.get(scoped_queue, "readable").payload == {"v": 1}

        full.schedule(queue_name, "elsewhere", delay="1h")
        assert full.get(queue_name, "elsewhere").state == "scheduled"
        with pytest.raises(punctual.Forbidden) as unread:
            reader.get(queue_name, "elsewhere")
        err = unread.value
        assert err.status == 403 and err.code == "forbidden"
        assert "read permission" in err.message and f"'{queue_name}'" in err.message, err.message
    finally:
        full.close()
        reader.close()


def test_s12_priorities(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    client.schedule(queue_name, "low", payload={"p": "low"})
    client.schedule(queue_name, "high", payload={"p": "high"}, priority=9)
    client.schedule(queue_name, "mid", payload={"p": "mid"}, priority=5)
    assert client.get(queue_name, "high").priority == 9
    low = client.get(queue_name, "low")
    assert low.priority == 0 and low.state == "scheduled"

    with pytest.raises(punctual.InvalidArgument) as refused:
        client.schedule(queue_name, "low", payload={"p": "changed"}, priority=10)
    assert refused.value.status == 400 and refused.value.field == "priority"
    unchanged = client.get(queue_name, "low")
    assert (unchanged.priority, unchanged.payload, unchanged.version) == (0, {"p": "low"}, low.version)
    with pytest.raises(punctual.InvalidArgument):
        client.schedule(queue_name, "urgent", priority=10)
    assert gone(client, queue_name, "urgent")()

    worker = worker_for(client)

    @worker.handler(queue_name, concurrency=1)
    def handle(lease: punctual.Lease) -> None:
        seen.add(lease)

    with worker:
        leases = seen.wait_for(3)
        assert [lease.key for lease in leases] == ["high", "mid", "low"]
        assert [lease.priority for lease in leases] == [9, 5, 0]
        for key in ("high", "mid", "low"):
            wait_until(gone(client, queue_name, key), what=f"{key} acked away")


def test_s13_debounce(client: punctual.Client, queue_name: str, seen: Seen) -> None:
    first = client.schedule(queue_name, "order-1", delay="2s", payload={"status": 1}, debounce="3s")
    second = client.schedule(queue_name, "order-1", delay=2, payload={"status": 2}, debounce=3)
    # Without debounce this one would be due 5 s from now, past the burst's bound.
    third = client.schedule(queue_name, "order-1", delay="5s", payload={"status": 3},
                            debounce=dt.timedelta(seconds=3))
    assert (first.outcome, second.outcome, third.outcome) == ("created", "replaced", "replaced")
    assert first.task.created_at is not None
    bound = first.task.created_at + dt.timedelta(seconds=3)
    due = [r.task.due_at for r in (first, second, third)]
    assert all(d is not None for d in due)
    assert due[0] <= due[1] <= bound, due
    assert due[1] <= due[2] <= bound, (due, bound)
    assert third.task.payload == {"status": 3}

    with pytest.raises(punctual.InvalidArgument) as refused:
        client.schedule(queue_name, "order-1", payload={"status": 4}, debounce=0)
    assert refused.value.status == 400 and refused.value.field == "debounce.max_wait"
    assert client.get(queue_name, "order-1").payload == {"status": 3}

    worker = worker_for(client)

    @worker.handler(queue_name)
    def handle(lease: punctual.Lease) -> None:
        seen.add(lease)

    with worker:
        [lease] = seen.wait_for(1)
        assert lease.key == "order-1" and lease.payload == {"status": 3}
        wait_until(gone(client, queue_name, "order-1"), what="the debounced task acked away")
    assert len(seen.leases) == 1


def test_s14_groups(client: punctual.Client, queue_name: str) -> None:
    settings = client.put_settings(queue_name, {"group_concurrency": 1})
    assert settings.group_concurrency == 1
    now = dt.datetime.now(dt.timezone.utc)
    for n, key in enumerate(["a1", "a2", "a3"]):
        client.schedule(queue_name, key, payload={"n": n}, group="customer-a",
                        due_at=now - dt.timedelta(seconds=3 - n))
    client.schedule_many(queue_name, [punctual.TaskSpec("b1", group="customer-b")])
    assert client.get(queue_name, "a2").group == "customer-a"
    assert client.get(queue_name, "b1").group == "customer-b"

    leases = client.lease(queue_name, max=10)
    assert sorted(lease.key for lease in leases) == ["a1", "b1"]
    assert {lease.key: lease.group for lease in leases} == {"a1": "customer-a", "b1": "customer-b"}

    page = client.groups_page(queue_name, limit=10)
    assert page.groups == [
        punctual.GroupCounts("customer-a", scheduled=2, leased=1, dead=0),
        punctual.GroupCounts("customer-b", scheduled=0, leased=1, dead=0),
    ]
    assert page.next_cursor is None

    [a1] = [lease for lease in leases if lease.key == "a1"]
    client.ack(a1.lease_id, punctual.Done())
    assert [lease.key for lease in client.lease(queue_name, max=10)] == ["a2"]

    with pytest.raises(punctual.InvalidArgument) as refused:
        client.schedule(queue_name, "c1", group="")
    assert refused.value.status == 400 and refused.value.field == "group"
    assert gone(client, queue_name, "c1")()


def test_s15_dedupe_window(client: punctual.Client, queue_name: str) -> None:
    hour = dt.timedelta(hours=1)
    first = client.schedule(queue_name, "order-1", payload={"n": 1}, unique_for="1h")
    assert first.outcome == "created" and first.completed is None
    assert client.get(queue_name, "order-1").unique_for == punctual.UniqueFor(hour)

    [lease] = client.lease(queue_name, max=10)
    assert lease.key == "order-1" and lease.task.unique_for == punctual.UniqueFor(hour)
    client.ack(lease.lease_id, punctual.Done())

    kept = client.schedule(queue_name, "order-1", payload={"n": 2}, unique_for=hour)
    assert kept.outcome == "kept" and kept.task is None
    done = kept.completed
    assert done is not None
    assert (done.queue, done.key, done.state, done.attempts, done.occurrence) == (
        queue_name, "order-1", "done", 0, 1)
    assert done.unique_until == done.completed_at + hour
    assert gone(client, queue_name, "order-1")()
    assert client.lease(queue_name, max=10) == []

    batch = client.schedule_many(queue_name, [
        punctual.TaskSpec("order-1", payload={"n": 3}, unique_for="1h"),
        punctual.TaskSpec("order-2", payload={"n": 1}, unique_for="1h"),
    ])
    assert [(r.key, r.outcome, r.ok) for r in batch] == [("order-1", "kept", True), ("order-2", "created", True)]
    assert batch[0].completed == done and batch[1].completed is None

    counting_dead = punctual.UniqueFor("1h", dead=True)
    client.schedule(queue_name, "order-3", delay="1h", unique_for=counting_dead)
    assert client.get(queue_name, "order-3").unique_for == punctual.UniqueFor(hour, dead=True)

    with pytest.raises(punctual.InvalidArgument) as refused:
        client.schedule(queue_name, "order-4", unique_for=0)
    assert refused.value.status == 400 and refused.value.field == "unique_for"
    assert gone(client, queue_name, "order-4")()
