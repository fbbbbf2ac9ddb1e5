// Scenario 6: the worker killed mid-handler. Guards against a task lost with its worker:
// after the dead worker's lease expires the task must be delivered again, as attempt 2.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client, Worker } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

test("s06 the worker killed mid-handler (SIGKILL of its process): delivered again after the lease, attempt 2", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s06");
  await client.schedule(queue, "job", { payload: { n: 6 } });

  const child = spawn(process.execPath, [fileURLToPath(new URL("./fixtures/hanging-worker.js", import.meta.url))], {
    env: { ...process.env, SERVER: server.url, QUEUE: queue },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((r) => child.once("exit", (code, signal) => r(signal)));
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  try {
    await waitUntil(() => out.includes("\n"), 10_000, { what: "the child worker to hold the task" });
    const first = JSON.parse(out.split("\n")[0]);
    assert.equal(first.attempt, 1);
    assert.equal((await client.get(queue, "job")).state, "leased");
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");
    const killedAt = Date.now();

    const seen = [];
    const worker = new Worker(client, { logger: recordingLogger(), waitMs: 1000 });
    worker.handle(queue, async (t) => {
      seen.push({ ...t, at: Date.now() });
    });
    await worker.start();
    try {
      await waitUntil(() => seen.length === 1, 10_000, { what: "the delivery to the second worker" });
      assert.equal(seen[0].attempt, 2);
      assert.equal(seen[0].deliveryId, first.deliveryId);
      assert.ok(seen[0].at - killedAt < 5000, "delivered again well after the 2 s lease");
    } finally {
      await worker.stop({ graceMs: 1000 });
    }
  } finally {
    child.kill("SIGKILL");
  }
});
