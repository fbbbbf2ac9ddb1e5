// Scenario 1: schedule → lease → ack. Guards against a worker that loses the payload,
// the attempt or the delivery id on the way to the handler, or whose "done" is not acked.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s01 schedule → lease → ack: the handler gets payload, attempt 1, a delivery id; done removes the task", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s01");
  const r = await client.schedule(queue, "order-1", { payload: { order_id: 1 }, tags: ["pi-9"] });
  assert.equal(r.outcome, "created");
  const task = await client.get(queue, "order-1");
  assert.equal(task.state, "scheduled");
  assert.deepEqual(task.tags, ["pi-9"]);

  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push(t);
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 1, 10_000, { what: "the delivery" });
    const [t] = seen;
    assert.deepEqual(t.payload, { order_id: 1 });
    assert.equal(t.attempt, 1);
    assert.equal(t.key, "order-1");
    assert.equal(t.queue, queue);
    assert.ok(typeof t.deliveryId === "string" && t.deliveryId.length > 0);
    assert.deepEqual(t.tags, ["pi-9"]);
    await waitUntil(() => client.get(queue, "order-1").then(() => false, (e) => e instanceof NotFoundError), 10_000, {
      what: "the task to be gone",
    });
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
