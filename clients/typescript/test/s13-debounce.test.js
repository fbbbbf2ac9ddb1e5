// Scenario 13: debounce. Guards against a client that drops `debounce` or sends it in a
// shape the server does not read: then the due times pass the burst's bound, the task
// fires more than once, or max_wait 0 is not refused.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, InvalidArgumentError, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const isGone = (client, queue, key) => client.get(queue, key).then(() => false, (e) => e instanceof NotFoundError);

test("s13 debounce: three schedules of order-1 stay due by the first + 3 s; one delivery with the last payload; max_wait 0 refused", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s13");
  const first = await client.schedule(queue, "order-1", { delay: "2s", payload: { status: 1 }, debounce: { maxWait: "3s" } });
  const second = await client.schedule(queue, "order-1", { delay: 2000, payload: { status: 2 }, debounce: { maxWait: 3000 } });
  // Without debounce this one would be due 5 s from now, past the burst's bound.
  const third = await client.schedule(queue, "order-1", { delay: "5s", payload: { status: 3 }, debounce: { maxWait: "3s" } });
  assert.deepEqual([first.outcome, second.outcome, third.outcome], ["created", "replaced", "replaced"]);
  const bound = Date.parse(first.task.createdAt) + 3000;
  const due = [first, second, third].map((r) => Date.parse(r.task.dueAt));
  assert.ok(due[0] <= due[1] && due[1] <= bound, `${due} bound ${bound}`);
  assert.ok(due[1] <= due[2] && due[2] <= bound, `${due} bound ${bound}`);
  assert.deepEqual(third.task.payload, { status: 3 });

  const refused = await client.schedule(queue, "order-1", { payload: { status: 4 }, debounce: { maxWait: 0 } }).catch((e) => e);
  assert.ok(refused instanceof InvalidArgumentError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.field, "debounce.maxWait");
  assert.deepEqual((await client.get(queue, "order-1")).payload, { status: 3 });

  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push(t);
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length >= 1, 10_000, { what: "the debounced delivery" });
    assert.equal(seen[0].key, "order-1");
    assert.deepEqual(seen[0].payload, { status: 3 });
    await waitUntil(() => isGone(client, queue, "order-1"), 10_000, { what: "order-1 acked away" });
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
  assert.equal(seen.length, 1, "delivered exactly once");
});
