// A task's history and the audit log against the real server. Guards against a history
// or an audit entry read wrong (an event's kind, its state after the event, what a
// replace changed named otherwise than a Task's members, a member the event leaves out
// that is not absent, an entry's detail re-cased), a history of an unknown key that is
// not a NotFoundError, and an audit log whose pages or iterator lose or repeat an entry.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidArgumentError, NotFoundError } from "punctual-client";
import { fromWire, SHAPES } from "../dist/esm/wire.js";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());
const client = new Client({ server: server.url });

test("history: schedule, replace, cancel; gone afterwards, its events kept", async () => {
  const queue = uniqueQueue("history");
  const before = Date.now() - 1000;
  await client.schedule(queue, "order/1", { delay: "1h", payload: { n: 1 } });
  await client.schedule(queue, "order/1", { delay: "2h", payload: { n: 2 } });
  await client.cancel(queue, "order/1");

  const history = await client.history(queue, "order/1");
  assert.equal(history.queue, queue);
  assert.equal(history.key, "order/1");
  assert.equal(history.retentionMs, 7 * 24 * 3_600_000);
  assert.deepEqual(history.events.map((e) => e.event), ["created", "replaced", "cancelled"]);
  assert.deepEqual(history.events.map((e) => e.state), ["scheduled", "scheduled", "gone"]);
  const [created, replaced, cancelled] = history.events;
  assert.ok(Date.parse(created.at) > before && Date.parse(created.at) <= Date.parse(cancelled.at));
  assert.equal(created.changed, undefined);
  assert.deepEqual([...replaced.changed].sort(), ["dueAt", "payload"], "named as a Task's members");
  assert.ok(Date.parse(replaced.dueAt) - Date.parse(created.dueAt) > 59 * 60_000);
  assert.equal(cancelled.dueAt, undefined);
  for (const e of history.events) {
    // A server without tokens names nobody; a schedule is neither a try nor a lease.
    for (const member of ["by", "attempt", "lease", "leaseExpiresAt", "outcome", "error", "tag", "tookMs", "status", "answer",
      "node", "deliveryId"]) {
      assert.equal(e[member], undefined, `${e.event}.${member}`);
    }
  }

  await assert.rejects(client.get(queue, "order/1"), NotFoundError);
  const err = await client.history(queue, "never-scheduled").catch((e) => e);
  assert.ok(err instanceof NotFoundError, String(err));
  assert.equal(err.status, 404);
});

test("history: a try that failed, and a cancel by tag", async () => {
  const queue = uniqueQueue("history");
  await client.schedule(queue, "k", { maxAttempts: 1, tags: ["a"] });
  const [lease] = await client.lease(queue, { lease: "30s" });
  await client.ack(lease.leaseId, { outcome: "fail", error: "card declined" });
  const events = (await client.history(queue, "k")).events;
  assert.deepEqual(events.map((e) => [e.event, e.state]), [["created", "scheduled"], ["leased", "leased"], ["acked", "dead"]]);
  const [, leased, acked] = events;
  assert.equal(leased.attempt, 1);
  assert.equal(typeof leased.lease, "number");
  assert.equal(leased.leaseExpiresAt, lease.expiresAt);
  assert.deepEqual([acked.attempt, acked.lease, acked.outcome, acked.error], [1, leased.lease, "dead", "card declined"]);

  const due = new Date(Date.now() + 3_600_000);
  await client.schedule(queue, "t", { dueAt: due, tags: ["a"] });
  await client.schedule(queue, "t", { dueAt: due, tags: ["b"] });
  assert.equal(await client.cancelTag(queue, "b"), 1);
  const tagged = (await client.history(queue, "t")).events;
  assert.deepEqual(tagged.map((e) => [e.event, e.state]), [["created", "scheduled"], ["replaced", "scheduled"], ["cancelled", "gone"]]);
  assert.deepEqual(tagged[1].changed, ["tags"]);
  assert.equal(tagged[2].tag, "b");
});

test("history: every member of an event read, those the server tests do not reach too", () => {
  const wire = {
    queue: "q",
    key: "k",
    retention_ms: 3_600_000,
    events: [{
      at: "2026-12-06T05:56:06.219Z", event: "acked", by: "shop", state: "scheduled", attempt: 2, lease: 7,
      due_at: "2026-12-06T06:00:00.000Z", lease_expires_at: "2026-12-06T05:56:36.219Z", outcome: "retry",
      error: "HTTP 503", changed: ["due_at", "policies"], tag: "t", took_ms: 1500, status: 503, answer: "busy",
    }, {
      at: "2026-12-06T05:56:06.219Z", event: "leased", state: "leased", attempt: 2, lease: 7,
      lease_expires_at: "2026-12-06T05:56:36.219Z", node: "web-1:7575 (pid 4242)", delivery_id: "0000000000001-7f-1-1",
    }],
  };
  assert.deepEqual(fromWire(wire, SHAPES.history), {
    queue: "q",
    key: "k",
    retentionMs: 3_600_000,
    events: [{
      at: "2026-12-06T05:56:06.219Z", event: "acked", by: "shop", state: "scheduled", attempt: 2, lease: 7,
      dueAt: "2026-12-06T06:00:00.000Z", leaseExpiresAt: "2026-12-06T05:56:36.219Z", outcome: "retry",
      error: "HTTP 503", changed: ["dueAt", "policies"], tag: "t", tookMs: 1500, status: 503, answer: "busy",
    }, {
      // node and deliveryId come on a leased event only (deepEqual: absent on the acked one).
      at: "2026-12-06T05:56:06.219Z", event: "leased", state: "leased", attempt: 2, lease: 7,
      leaseExpiresAt: "2026-12-06T05:56:36.219Z", node: "web-1:7575 (pid 4242)", deliveryId: "0000000000001-7f-1-1",
    }],
  });
});

test("audit: an entry's detail keeps the server's keys", () => {
  const wire = {
    entries: [{ at: "2030-01-01T00:00:00.000Z", action: "queue.settings.set", queue: "q", detail: { group_concurrency: 1, max_attempts: 5 } }],
    next_cursor: "c1",
  };
  assert.deepEqual(fromWire(wire, SHAPES.auditPage), {
    entries: [{ at: "2030-01-01T00:00:00.000Z", action: "queue.settings.set", queue: "q", detail: { group_concurrency: 1, max_attempts: 5 } }],
    nextCursor: "c1",
  });
});

test("audit: a pause and a resume, page by page and through the iterator", async () => {
  // The audit log is the server's: a server of the test's own holds only its entries.
  const own = await startServer();
  try {
    const admin = new Client({ server: own.url });
    const queue = uniqueQueue("audit");
    assert.deepEqual((await admin.auditPage()).entries, []);
    await admin.pause(queue);
    await admin.resume(queue);

    const first = await admin.auditPage({ limit: 1 });
    assert.deepEqual(first.entries.map((e) => [e.action, e.queue]), [["queue.resume", queue]]);
    assert.equal(typeof first.nextCursor, "string");
    const second = await admin.auditPage({ limit: 1, cursor: first.nextCursor });
    const [paused] = second.entries;
    assert.deepEqual([paused.action, paused.queue, paused.calendar, paused.by], ["queue.pause", queue, undefined, undefined]);
    assert.ok(Date.parse(paused.at) <= Date.parse(first.entries[0].at));

    const every = [];
    for await (const entry of admin.audit({ limit: 1 })) every.push(entry);
    assert.deepEqual(every, [...first.entries, ...second.entries]);

    await admin.putSettings(queue, { groupConcurrency: 2 });
    const [settings] = (await admin.auditPage({ limit: 1 })).entries;
    assert.deepEqual([settings.action, settings.queue], ["queue.settings.set", queue]);
    assert.equal(settings.detail.group_concurrency, 2, "the detail keeps the server's keys");
    const refused = await admin.auditPage({ limit: 1001 }).catch((e) => e);
    assert.ok(refused instanceof InvalidArgumentError, String(refused));
    assert.equal(refused.field, "limit");
  } finally {
    await own.close();
  }
});
