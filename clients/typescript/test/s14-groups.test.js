// Scenario 14: groups. Guards against a client that drops `group` on the way to the server
// or back, and against a groups listing that loses a count or the cursor.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidArgumentError, NotFoundError } from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const isGone = (client, queue, key) => client.get(queue, key).then(() => false, (e) => e instanceof NotFoundError);

test("s14 groups: group_concurrency 1 leases the first of customer-a and customer-b's one; the listing counts them", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s14");
  const settings = await client.putSettings(queue, { groupConcurrency: 1 });
  assert.equal(settings.groupConcurrency, 1);
  const now = Date.now();
  for (const [n, key] of ["a1", "a2", "a3"].entries()) {
    await client.schedule(queue, key, { payload: { n }, group: "customer-a", dueAt: new Date(now - (3 - n) * 1000) });
  }
  await client.scheduleMany(queue, [{ key: "b1", group: "customer-b" }]);
  assert.equal((await client.get(queue, "a2")).group, "customer-a");
  assert.equal((await client.get(queue, "b1")).group, "customer-b");

  const leases = await client.lease(queue, { max: 10 });
  assert.deepEqual(leases.map((l) => l.task.key).sort(), ["a1", "b1"]);
  assert.deepEqual(Object.fromEntries(leases.map((l) => [l.task.key, l.task.group])), { a1: "customer-a", b1: "customer-b" });

  const page = await client.groupsPage(queue, { limit: 10 });
  assert.deepEqual(page.groups, [
    { group: "customer-a", scheduled: 2, leased: 1, dead: 0 },
    { group: "customer-b", scheduled: 0, leased: 1, dead: 0 },
  ]);
  assert.equal(page.nextCursor, null);

  const a1 = leases.find((l) => l.task.key === "a1");
  await client.ack(a1.leaseId, { outcome: "done" });
  assert.deepEqual((await client.lease(queue, { max: 10 })).map((l) => l.task.key), ["a2"]);

  const refused = await client.schedule(queue, "c1", { group: "" }).catch((e) => e);
  assert.ok(refused instanceof InvalidArgumentError, String(refused));
  assert.equal(refused.status, 400);
  assert.equal(refused.field, "group");
  assert.ok(await isGone(client, queue, "c1"), "a refused task is not stored");
});
