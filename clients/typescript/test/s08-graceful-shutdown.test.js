// Scenario 8: graceful shutdown. Guards against a worker that keeps leasing after
// stop(), drops the ack of a handler that finished within the grace period, or acks a
// handler it gave up on (that task must come back after its lease instead).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s08 graceful shutdown: leases nothing more, the running handler finishes within grace and is acked", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s08a");
  await client.schedule(queue, "running");
  let release;
  const gate = new Promise((r) => (release = r));
  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 2000 });
  worker.handle(
    queue,
    async (t) => {
      seen.push(t.key);
      await gate;
    },
    { concurrency: 4 },
  );
  await worker.start();
  await waitUntil(() => seen.includes("running"), 10_000, { what: "the handler to run" });
  const stopped = worker.stop({ graceMs: 10_000 });
  await client.schedule(queue, "after-stop");
  release();
  await stopped;
  await assert.rejects(client.get(queue, "running"), NotFoundError, "the finished handler was acked");
  const later = await client.get(queue, "after-stop");
  assert.equal(later.state, "scheduled");
  assert.equal(later.attempts, 0);
  assert.deepEqual(seen, ["running"]);
});

test("s08 graceful shutdown: a handler outlasting the grace is not acked, its task comes back after its lease", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s08b");
  await client.schedule(queue, "stuck");
  let aborted = false;
  let started = false;
  const log = recordingLogger();
  const worker = new Worker(client, { leaseForMs: 1500, logger: log, waitMs: 2000 });
  worker.handle(queue, (t) => {
    started = true;
    return new Promise((resolve) => t.signal.addEventListener("abort", () => ((aborted = true), resolve()))); // finishes only when told to stop
  });
  await worker.start();
  await waitUntil(() => started, 10_000, { what: "the handler to run" });
  const t0 = Date.now();
  await worker.stop({ graceMs: 300 });
  assert.ok(Date.now() - t0 < 3000, "stop() waited about the grace period");
  assert.ok(aborted, "the handler's signal was aborted");
  assert.equal(log.count("handler outlasted the grace period; its lease is left to expire"), 1);
  assert.equal((await client.get(queue, "stuck")).state, "leased", "not acked");
  const back = await waitUntil(
    async () => {
      const t = await client.get(queue, "stuck");
      return t.state === "scheduled" ? t : null;
    },
    10_000,
    { what: "the task back after its lease" },
  );
  assert.equal(back.attempts, 1, "the expired lease counts as an attempt");
});
