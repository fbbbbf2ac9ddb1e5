// Scenario 4: fail → dead → retry. Guards against a fail acked as a retry, a lost
// reason, and a dead task that cannot be brought back.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, fail } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s04 fail → dead → retry: dead with the reason, listed, retried with attempt 1", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s04");
  await client.schedule(queue, "order-9", { payload: { order_id: 9 } });
  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push(t);
    if (seen.length === 1) return fail("order not found");
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 1, 10_000, { what: "the first delivery" });
    const dead = await waitUntil(
      async () => {
        const t = await client.get(queue, "order-9");
        return t.state === "dead" ? t : null;
      },
      5_000,
      { what: "the task dead" },
    );
    assert.match(dead.lastError, /order not found/);
    const listed = [];
    for await (const t of client.dead(queue)) listed.push(t.key);
    assert.deepEqual(listed, ["order-9"]);
    const retried = await client.retryDead(queue, "order-9");
    assert.equal(retried.state, "scheduled");
    await waitUntil(() => seen.length === 2, 10_000, { what: "the delivery after retry" });
    assert.equal(seen[1].attempt, 1);
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
