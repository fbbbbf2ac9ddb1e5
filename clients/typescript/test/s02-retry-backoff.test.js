// Scenario 2: retry with backoff. Guards against a thrown error that is not turned into
// a retry with its message, and against a retry delivered before its backoff.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s02 retry with backoff: a thrown error is retried after the backoff, same delivery id, attempt 2", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s02");
  await client.schedule(queue, "k", { payload: 1, backoff: { initial: "1s", factor: 2, max: "1s" } });
  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push({ ...t, at: Date.now() });
    if (t.attempt === 1) throw new Error("smtp timeout on try 1");
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 1, 10_000, { what: "the first delivery" });
    const between = await waitUntil(
      async () => {
        const t = await client.get(queue, "k");
        return t.lastError && t.state === "scheduled" ? t : null;
      },
      5_000,
      { what: "last_error between the tries" },
    );
    assert.match(between.lastError, /smtp timeout on try 1/);
    assert.equal(between.attempts, 1);
    await waitUntil(() => seen.length === 2, 10_000, { what: "the second delivery" });
    assert.equal(seen[1].attempt, 2);
    assert.equal(seen[1].deliveryId, seen[0].deliveryId);
    // The server's jitter shortens a backoff wait to between 80 % and 100 % of it
    // (punctual-core policy/backoff.rs), so 1 s of backoff is at least 800 ms.
    const gap = seen[1].at - seen[0].at;
    assert.ok(gap >= 800, `second try after ${gap} ms, sooner than the 1 s backoff less its jitter`);
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
