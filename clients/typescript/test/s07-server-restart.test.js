// Scenario 7: the server restarted while workers long-poll. Guards against a worker
// that crashes (or floods the log) when its server goes away, or never comes back.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

let server = await startServer();
after(() => server.close());

const unhandled = [];
process.on("unhandledRejection", (e) => unhandled.push(e));

test("s07 the server restarted while a worker long-polls: one log line each way, reconnects, handles the next task", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s07");
  const log = recordingLogger();
  const seen = [];
  const worker = new Worker(client, { logger: log, waitMs: 2000, reconnectMinMs: 50, reconnectMaxMs: 400 });
  worker.handle(queue, async (t) => {
    seen.push(t.key);
  });
  await worker.start();
  try {
    // Idle and long-polling: the queue is empty, the poll is held by the server.
    await client.schedule(queue, "before");
    await waitUntil(() => seen.includes("before"), 10_000, { what: "a task before the restart" });

    const { port, dataDir } = server;
    await server.stop();
    await waitUntil(() => log.count("server unreachable; reconnecting with backoff") === 1, 10_000, {
      what: "the worker to notice",
    });
    server = await startServer({ port, dataDir });
    await client.schedule(queue, "after", { payload: "restart" });
    await waitUntil(() => seen.includes("after"), 10_000, { what: "a task after the restart" });
    assert.equal(log.count("server unreachable; reconnecting with backoff"), 1);
    assert.equal(log.count("reconnected"), 1);
    assert.equal(log.lines.filter((l) => l.level === "error").length, 0);
    assert.deepEqual(unhandled, []);
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
