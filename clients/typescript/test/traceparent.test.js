// A schedule's trace. Guards against a client that drops `traceparent` on the way to the
// server (one task or a batch), or leaves it out of a task, a lease or a handler's context.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

test("traceparent: kept with the task, shown by get, lease and a handler's context", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("trace");
  const created = await client.schedule(queue, "traced", { payload: { n: 1 }, traceparent: TRACEPARENT });
  assert.equal(created.task.traceparent, TRACEPARENT);
  assert.equal((await client.get(queue, "traced")).traceparent, TRACEPARENT);
  const plain = await client.schedule(queue, "plain", { delay: "1h" });
  assert.equal(plain.task.traceparent, undefined, "absent without one");
  const other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  await client.scheduleMany(queue, [{ key: "b1", delay: "1h" }], { traceparent: other });
  assert.equal((await client.get(queue, "b1")).traceparent, other);
  const [lease] = await client.lease(queue);
  assert.deepEqual([lease.task.key, lease.task.traceparent], ["traced", TRACEPARENT]);
  await client.ack(lease.leaseId, { outcome: "retry", delay: "0s" });

  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push(t);
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 1, 10_000, { what: "the delivery" });
  } finally {
    await worker.stop();
  }
  assert.equal(seen[0].traceparent, TRACEPARENT);
  assert.equal(seen[0].task.traceparent, TRACEPARENT);
});
