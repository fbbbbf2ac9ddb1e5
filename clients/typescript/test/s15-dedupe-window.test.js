// Scenario 15: a dedupe window. Guards against a client that drops `unique_for` on the way
// to the server or back, or that mistakes a schedule kept by a completion (no task, the
// completion instead) for a created one or for an error.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidArgumentError, NotFoundError } from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const isGone = (client, queue, key) => client.get(queue, key).then(() => false, (e) => e instanceof NotFoundError);
const HOUR = 3_600_000;

test("s15 dedupe window: a schedule of a key done within unique_for is kept with the completion and stores nothing", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s15");
  const first = await client.schedule(queue, "order-1", { payload: { n: 1 }, uniqueFor: "1h" });
  assert.equal(first.outcome, "created");
  assert.equal(first.completed, undefined);
  assert.equal((await client.get(queue, "order-1")).uniqueFor, "1h");

  const [lease, ...more] = await client.lease(queue, { max: 10 });
  assert.equal(more.length, 0);
  assert.equal(lease.task.key, "order-1");
  assert.equal(lease.task.uniqueFor, "1h");
  await client.ack(lease.leaseId, { outcome: "done" });

  const kept = await client.schedule(queue, "order-1", { payload: { n: 2 }, uniqueFor: HOUR });
  assert.equal(kept.outcome, "kept");
  assert.equal(kept.task, undefined);
  const done = kept.completed;
  assert.ok(done, "the completion that kept it");
  assert.deepEqual(
    [done.queue, done.key, done.state, done.attempts, done.occurrence],
    [queue, "order-1", "done", 0, 1],
  );
  assert.equal(Date.parse(done.uniqueUntil) - Date.parse(done.completedAt), HOUR);
  assert.ok(await isGone(client, queue, "order-1"), "a kept schedule stores nothing");
  assert.deepEqual(await client.lease(queue, { max: 10 }), []);

  const batch = await client.scheduleMany(queue, [
    { key: "order-1", payload: { n: 3 }, uniqueFor: "1h" },
    { key: "order-2", payload: { n: 1 }, uniqueFor: "1h" },
  ]);
  assert.deepEqual(batch, [
    { key: "order-1", outcome: "kept", completed: done },
    { key: "order-2", outcome: "created" },
  ]);

  await client.schedule(queue, "order-3", { delay: "1h", uniqueFor: { window: "1h", dead: true } });
  assert.deepEqual((await client.get(queue, "order-3")).uniqueFor, { window: "1h", dead: true });

  const refused = await client.schedule(queue, "order-4", { uniqueFor: 0 }).catch((e) => e);
  assert.ok(refused instanceof InvalidArgumentError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.field, "uniqueFor");
  assert.ok(await isGone(client, queue, "order-4"), "a refused task is not stored");
});
