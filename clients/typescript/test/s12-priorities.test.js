// Scenario 12: priorities. Guards against a client that drops `priority` on the way to
// the server or to the handler, and against a refused priority that still changes the task.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, InvalidArgumentError, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const isGone = (client, queue, key) => client.get(queue, key).then(() => false, (e) => e instanceof NotFoundError);

test("s12 priorities: one worker of concurrency 1 gets high, mid, low; priority 10 is refused and changes nothing", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s12");
  await client.schedule(queue, "low", { payload: { p: "low" } });
  await client.schedule(queue, "high", { payload: { p: "high" }, priority: 9 });
  await client.schedule(queue, "mid", { payload: { p: "mid" }, priority: 5 });
  assert.equal((await client.get(queue, "high")).priority, 9);
  const low = await client.get(queue, "low");
  assert.equal(low.priority, 0);
  assert.equal(low.state, "scheduled");

  const refused = await client.schedule(queue, "low", { payload: { p: "changed" }, priority: 10 }).catch((e) => e);
  assert.ok(refused instanceof InvalidArgumentError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.field, "priority");
  const unchanged = await client.get(queue, "low");
  assert.deepEqual([unchanged.priority, unchanged.payload, unchanged.version], [0, { p: "low" }, low.version]);
  await assert.rejects(client.schedule(queue, "urgent", { priority: 10 }), InvalidArgumentError);
  assert.ok(await isGone(client, queue, "urgent"), "a refused new key is not stored");

  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push(t);
  }, { concurrency: 1 });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 3, 10_000, { what: "three deliveries" });
    assert.deepEqual(seen.map((t) => t.key), ["high", "mid", "low"]);
    assert.deepEqual(seen.map((t) => t.priority), [9, 5, 0]);
    assert.deepEqual(seen.map((t) => t.task.priority), [9, 5, 0]);
    for (const key of ["high", "mid", "low"]) {
      await waitUntil(() => isGone(client, queue, key), 10_000, { what: `${key} acked away` });
    }
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
