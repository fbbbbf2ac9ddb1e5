// Scenario 5: a handler longer than its lease. Guards against a worker that does not
// extend the lease while the handler runs: the task would be delivered twice and the
// first ack refused.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { Client, Worker, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s05 a handler longer than its lease: a 5 s handler on a 2 s lease is extended, acked, delivered once", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s05");
  await client.schedule(queue, "slow", { payload: null });
  const log = recordingLogger();
  let deliveries = 0;
  let finished = false;
  const worker = new Worker(client, { leaseForMs: 2000, waitMs: 500, logger: log });
  // Two slots: were the lease to expire, the worker could lease the task again at once.
  worker.handle(
    queue,
    async () => {
      deliveries++;
      await delay(5000); // the work itself, longer than the lease
      finished = true;
    },
    { concurrency: 2 },
  );
  await worker.start();
  try {
    await waitUntil(() => finished, 15_000, { what: "the slow handler to finish" });
    await waitUntil(() => client.get(queue, "slow").then(() => false, (e) => e instanceof NotFoundError), 5_000, {
      what: "the acked task to be gone",
    });
    assert.equal(deliveries, 1);
    assert.equal(log.count("ack refused"), 0);
    assert.equal(log.count("lease lost while the handler ran; not acked"), 0);
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
