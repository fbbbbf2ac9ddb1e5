// The rest of the API through the client, beyond the sixteen scenarios: batch schedule with
// per-item errors, the paging iterator, cancel by tag, queue stats, settings with
// If-Match, pause/resume, purge, dead tasks in bulk, lease/extend/ack and batch acks.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, ConflictError, NotFoundError } from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());
const client = new Client({ server: server.url });

test("scheduleMany reports per item; list follows nextCursor; cancelTag; queue stats", async () => {
  const queue = uniqueQueue("api");
  const items = Array.from({ length: 7 }, (_, i) => ({ key: `k/${i}`, delay: `${i + 1}h`, tags: i % 2 ? ["odd"] : [] }));
  items.push({ key: "bad", delay: "never" });
  const results = await client.scheduleMany(queue, items);
  assert.equal(results.length, 8);
  assert.ok(results.slice(0, 7).every((r) => "outcome" in r && r.outcome === "created"));
  assert.equal(results[7].error.field, "tasks[7].delay");

  const ranked = await client.scheduleMany(queue, [
    { key: "p/7", delay: "1h", priority: 7 },
    { key: "p/10", delay: "1h", priority: 10 },
  ]);
  assert.equal(ranked[0].outcome, "created");
  assert.equal((await client.get(queue, "p/7")).priority, 7);
  assert.equal(ranked[1].error.field, "tasks[1].priority");
  await client.cancel(queue, "p/7");

  const burst = await client.scheduleMany(queue, [{ key: "d/1", delay: "1h", debounce: { maxWait: "10m" } }]);
  assert.equal(burst[0].outcome, "created");
  const created = Date.parse((await client.get(queue, "d/1")).createdAt);
  const debounced = await client.scheduleMany(queue, [
    { key: "d/1", delay: "2h", payload: { n: 2 }, debounce: { maxWait: 600_000 } },
    { key: "d/2", delay: "1h", debounce: { maxWait: 0 } },
    { key: "d/3", delay: "1h", debounce: { maxWait: "10m" }, ifExists: "keep" },
  ]);
  assert.equal(debounced[0].outcome, "replaced");
  const moved = await client.get(queue, "d/1");
  assert.deepEqual(moved.payload, { n: 2 });
  assert.ok(Date.parse(moved.dueAt) <= created + 600_000, "due by the burst's first schedule + maxWait");
  assert.equal(debounced[1].error.field, "tasks[1].debounce.maxWait");
  assert.equal(debounced[2].error.field, "tasks[2].debounce");

  const grouped = await client.scheduleMany(queue, [
    { key: "g/1", delay: "1h", group: "tenant-1" },
    { key: "g/2", delay: "1h", group: "tenant\u0007" },
  ]);
  assert.equal(grouped[0].outcome, "created");
  assert.equal((await client.get(queue, "g/1")).group, "tenant-1");
  assert.equal((await client.get(queue, "k/0")).group, null);
  assert.equal(grouped[1].error.field, "tasks[1].group");
  await client.cancel(queue, "g/1");
  await client.cancel(queue, "d/1");

  const keys = [];
  for await (const t of client.list(queue, { limit: 2 })) keys.push(t.key);
  assert.deepEqual(keys, items.slice(0, 7).map((i) => i.key), "every page, in due order");
  const page = await client.listPage(queue, { limit: 2 });
  assert.equal(page.tasks.length, 2);
  assert.ok(page.nextCursor);

  const got = await client.get(queue, "k/1");
  assert.equal(got.key, "k/1", "a key with / round-trips");
  assert.equal(await client.cancelTag(queue, "odd"), 3);
  const stats = await client.queue(queue);
  assert.equal(stats.scheduled, 4);
  assert.ok((await client.queues()).some((q) => q.name === queue));
  await client.cancel(queue, "k/0");
  await assert.rejects(client.cancel(queue, "k/0"), NotFoundError);
});

test("uniqueFor on scheduleMany items: the dead form read back, 0 refused per item", async () => {
  const queue = uniqueQueue("unique");
  const results = await client.scheduleMany(queue, [
    { key: "u/1", delay: "1h", uniqueFor: { window: 5_400_000, dead: true } },
    { key: "u/2", delay: "1h", uniqueFor: "0s" },
    { key: "u/3", delay: "1h", uniqueFor: { window: "2h", dead: false } },
    { key: "u/4", delay: "1h" },
  ]);
  assert.deepEqual(results[0], { key: "u/1", outcome: "created" });
  assert.deepEqual((await client.get(queue, "u/1")).uniqueFor, { window: "1h 30m", dead: true });
  assert.equal(results[1].error.field, "tasks[1].uniqueFor");
  assert.equal((await client.get(queue, "u/3")).uniqueFor, "2h");
  assert.equal((await client.get(queue, "u/4")).uniqueFor, null);
  assert.equal(await client.purge(queue), 3);
});

test("groupsPage lists a queue's groups by name, page by page", async () => {
  const queue = uniqueQueue("groups");
  await client.scheduleMany(queue, ["gamma", "alpha", "beta", "alpha"].map((group, i) => ({ key: `k/${i}`, delay: "1h", group })));
  const first = await client.groupsPage(queue, { limit: 2 });
  assert.deepEqual(first.groups.map((g) => [g.group, g.scheduled]), [["alpha", 2], ["beta", 1]]);
  assert.ok(first.nextCursor);
  const last = await client.groupsPage(queue, { limit: 2, cursor: first.nextCursor });
  assert.deepEqual(last.groups, [{ group: "gamma", scheduled: 1, leased: 0, dead: 0 }]);
  assert.equal(last.nextCursor, null);
  assert.deepEqual((await client.groupsPage(`${queue}.none`)).groups, []);
});

test("schedule takes every field: dueAt, repeat with cron and tz, maxAttempts, backoff, ifExists keep", async () => {
  const queue = uniqueQueue("api");
  const dueAt = new Date(Date.now() + 3_600_000);
  const r = await client.schedule(queue, "r", {
    dueAt,
    payload: { a: 1 },
    repeat: { cron: "0 9 * * MON-FRI", tz: "Asia/Shanghai", times: 3 },
    tags: ["x"],
    maxAttempts: 5,
    backoff: { initial: "2s", factor: 3, max: "1m" },
  });
  assert.equal(r.outcome, "created");
  assert.equal(r.task.maxAttempts, 5);
  assert.equal(r.task.repeat.cron, "0 9 * * MON-FRI");
  const kept = await client.schedule(queue, "r", { delay: "1s", ifExists: "keep" });
  assert.equal(kept.outcome, "kept");
  const every = await client.schedule(queue, "e", { delay: "1h", repeat: { every: "24h", until: new Date(Date.now() + 7 * 86_400_000) } });
  assert.equal(every.task.repeat.every !== undefined, true);
});

test("settings: put, patch with If-Match, a stale version is a conflict; pause, resume, delete", async () => {
  const queue = uniqueQueue("api");
  const s = await client.putSettings(queue, { defaults: { maxAttempts: 3 } });
  const p = await client.patchSettings(queue, { defaults: { maxAttempts: 4 } }, { ifVersion: s.version });
  assert.ok(p.version > s.version);
  await assert.rejects(client.patchSettings(queue, { defaults: { maxAttempts: 5 } }, { ifVersion: s.version }), ConflictError);
  assert.equal((await client.pause(queue)).paused, true);
  assert.equal((await client.getSettings(queue)).paused, true);
  assert.equal((await client.resume(queue)).paused, false);
  await client.deleteSettings(queue);
  await assert.rejects(client.getSettings(queue), NotFoundError);
});

test("settings' default repeat: sent as a schedule's repeat is (cronSyntax), shown as a task's repeat is", async () => {
  const queue = uniqueQueue("api");
  const until = new Date(Date.UTC(2030, 0, 1));
  const spring = { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cronSyntax: "spring", until };
  const s = await client.putSettings(queue, { defaults: { repeat: spring } });
  assert.deepEqual(s.defaults.repeat, { ...spring, until: "2030-01-01T00:00:00.000Z" });
  assert.equal(s.defaults.backoff.factor, 2);
  const vixie = await client.putSettings(queue, { defaults: { repeat: { every: 86_400_000 } } }, { ifVersion: s.version });
  assert.deepEqual(vixie.defaults.repeat, { every: "1d" });
  await client.deleteSettings(queue, { ifVersion: vixie.version });
});

test("lease, extend, ack one and many; dead tasks in bulk; purge", async () => {
  const queue = uniqueQueue("api");
  await client.scheduleMany(queue, ["a", "b", "c"].map((key) => ({ key, tags: ["t"] })));
  const leases = await client.lease(queue, { max: 3, lease: "10s", wait: "1s" });
  assert.equal(leases.length, 3);
  const ext = await client.extend(leases[0].leaseId, "20s");
  assert.ok(Date.parse(ext.expiresAt) > Date.parse(leases[0].expiresAt));
  await client.ack(leases[0].leaseId, { outcome: "fail", error: "no" });
  await assert.rejects(client.ack(leases[0].leaseId), (e) => e instanceof ConflictError || e instanceof NotFoundError);
  const results = await client.acks([
    { leaseId: leases[1].leaseId, outcome: "fail", error: "no" },
    { leaseId: leases[2].leaseId, outcome: "done" },
    { leaseId: "nonsense", outcome: "done" },
  ]);
  assert.deepEqual(results.map((r) => r.status), [204, 204, 404]);
  const dead = [];
  for await (const t of client.dead(queue, { limit: 1 })) dead.push(t.key);
  assert.deepEqual(dead.sort(), ["a", "b"]);
  assert.equal(await client.retryDeadMany(queue, { keys: ["a"] }), 1);
  await client.deleteDead(queue, "b");
  assert.equal((await client.queue(queue)).dead, 0);
  await client.schedule(queue, "later", { delay: "1h" });
  assert.equal(await client.purge(queue, { state: "all" }), 2);
});
