// Scenario 3: reschedule. Guards against a reschedule acked as a retry (attempts would
// count it, the delivery id would stay) or at the wrong time.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, Worker, reschedule, NotFoundError } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s03 reschedule: fired again ~1 s later as a new occurrence, attempts 0, new delivery id", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s03");
  await client.schedule(queue, "remind", { payload: { step: 1 } });
  const seen = [];
  const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
  worker.handle(queue, async (t) => {
    seen.push({ ...t, at: Date.now() });
    if (seen.length === 1) return reschedule({ delay: 1000 });
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length === 1, 10_000, { what: "the first delivery" });
    const again = await waitUntil(
      async () => {
        const t = await client.get(queue, "remind");
        return t.state === "scheduled" && Date.parse(t.dueAt) > Date.parse(seen[0].dueAt) ? t : null;
      },
      5_000,
      { what: "the task scheduled again" },
    );
    assert.equal(again.attempts, 0);
    const later = Date.parse(again.dueAt) - seen[0].at;
    assert.ok(later >= 700 && later <= 2500, `due ${later} ms after the first delivery, not about 1 s`);
    await waitUntil(() => seen.length === 2, 10_000, { what: "the second delivery" });
    assert.notEqual(seen[1].deliveryId, seen[0].deliveryId);
    assert.equal(seen[1].attempt, 1);
    await waitUntil(() => client.get(queue, "remind").then(() => false, (e) => e instanceof NotFoundError), 5_000);
  } finally {
    await worker.stop({ graceMs: 1000 });
  }
});
