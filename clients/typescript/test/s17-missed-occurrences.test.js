// Scenario 17: missed occurrences. Guards against a client that drops a timing policy on
// the way to the server (a repeat that catches up nothing, a late task that fires
// anyway), one that misreads the policies a task shows, a repeat under overlap "allow"
// whose occurrences do not fire as tasks of their own, and a lease or a worker's task
// that does not say which occurrence it stands for (scheduled_for) and how many it
// stands in for (missed).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidArgumentError, NotFoundError, Worker, fail } from "punctual-client";
import { startServer, uniqueQueue, waitUntil } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const isGone = (client, queue, key) => client.get(queue, key).then(() => false, (e) => e instanceof NotFoundError);
const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"];
/** The occurrences of a repeat every 1s after `due` that are due at `at` (epoch ms). */
const ticksDue = (due, at) => Math.max(0, Math.floor((at - Date.parse(due)) / 1000));
const policiesOf = (t) => [t.calendar, t.misfire, t.misfireAfter, t.catchUpMax, t.overlap, t.jitter];

test("s17 missed occurrences: policies read back, allow fires occurrences as tasks, a late skip ends, a catch-up lease counts what it stands in for", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s17");
  const office = `ts-office-${process.pid}-${Date.now().toString(36)}`;
  await client.putCalendar(office, { tz: "Asia/Shanghai", hours: Object.fromEntries(WEEKDAYS.map((d) => [d, ["09:00-18:00"]])) }, { ifVersion: 0 });
  const { task: daily } = await client.schedule(queue, "daily", {
    repeat: { every: "1d" }, calendar: office, misfire: "fire_all", catchUpMax: 3, overlap: "queue", jitter: "30s",
  });
  assert.deepEqual(policiesOf(daily), [office, "fire_all", "1m", 3, "queue", "30s"]);
  assert.deepEqual(await client.get(queue, "daily"), daily);

  const [batch] = await client.scheduleMany(queue, [
    { key: "digest", repeat: { every: "1d" }, misfire: "skip", misfireAfter: 7_200_000, jitter: 30_000 },
  ]);
  assert.equal(batch.outcome, "created", JSON.stringify(batch));
  const digest = await client.get(queue, "digest");
  assert.deepEqual([digest.misfire, digest.misfireAfter, digest.jitter], ["skip", "2h", "30s"]);

  const { task: plain } = await client.schedule(queue, "plain", { delay: "1h" });
  assert.deepEqual(policiesOf(plain), [null, "fire_once", "1m", 10, "skip", null]);

  await assert.rejects(
    client.schedule(queue, "sometimes", { repeat: { every: "1h" }, overlap: "sometimes" }),
    (e) => e instanceof InvalidArgumentError && e.field === "overlap",
  );
  assert.ok(await isGone(client, queue, "sometimes"));

  // Under allow each occurrence fires as a task of its own, and the repeat moves on.
  const allowQueue = `${queue}.allow`;
  const { task: allowed } = await client.schedule(allowQueue, "tick", { repeat: { every: "1s" }, payload: { n: 1 }, overlap: "allow" });
  assert.equal(allowed.overlap, "allow");
  assert.equal((await client.get(allowQueue, "tick")).overlap, "allow");
  const [occurrence] = await waitUntil(
    async () => ((leases) => (leases.length ? leases : null))(await client.lease(allowQueue, { wait: 1000 })),
    5_000,
    { what: "an occurrence" },
  );
  assert.ok(Date.parse(occurrence.scheduledFor) >= Date.parse(allowed.dueAt), occurrence.scheduledFor);
  assert.equal(occurrence.task.key, `tick@${occurrence.scheduledFor}`);
  assert.deepEqual([occurrence.task.payload, occurrence.missed], [{ n: 1 }, 0]);
  const repeat = await client.get(allowQueue, "tick");
  assert.equal(repeat.state, "scheduled");
  assert.ok(Date.parse(repeat.dueAt) > Date.parse(occurrence.scheduledFor), `${repeat.dueAt} after ${occurrence.scheduledFor}`);

  // A due_at in the past means now: lateness takes real time, so the clock is waited on.
  const late = `${queue}.late`;
  const { task: tick } = await client.schedule(late, "tick", { repeat: { every: "1s" }, misfire: "fire_all", catchUpMax: 2 });
  const { task: skipped } = await client.schedule(late, "late", { misfire: "skip", misfireAfter: "1s" });
  const { task: once } = await client.schedule(late, "once");
  assert.deepEqual([skipped.misfire, skipped.misfireAfter], ["skip", "1s"]);
  const ready = Math.max(...[tick, skipped, once].map((t) => Date.parse(t.dueAt))) + 3_020;
  await waitUntil(() => Date.now() > ready, 10_000, { what: "3 s past the due times" });

  const before = Date.now();
  const leases = Object.fromEntries((await client.lease(late, { max: 10 })).map((l) => [l.task.key, l]));
  const afterLease = Date.now();
  assert.deepEqual(Object.keys(leases).sort(), ["once", "tick"], "the late one under skip does not fire");
  assert.ok(await isGone(client, late, "late"), "a one-off skipped ends");
  assert.deepEqual([leases.once.scheduledFor, leases.once.missed], [once.dueAt, 0]);
  const first = leases.tick;
  assert.deepEqual([first.scheduledFor, first.attempt], [tick.dueAt, 1]);
  const [low, high] = [ticksDue(tick.dueAt, before) - 2, ticksDue(tick.dueAt, afterLease) - 2];
  assert.ok(low <= first.missed && first.missed <= high && first.missed >= 1, `${first.missed} in [${low}, ${high}]`);
  await client.ack(leases.once.leaseId, { outcome: "done" });
  await client.ack(first.leaseId, { outcome: "retry", delay: 0, error: "again" });

  const seen = [];
  const worker = new Worker(client, { waitMs: 1000, logger: null });
  worker.handle(late, (ctx) => {
    seen.push(ctx);
    return fail("seen"); // dead: the repeat stops here
  });
  await worker.start();
  try {
    await waitUntil(() => seen.length >= 1, 10_000, { what: "the retry's delivery" });
  } finally {
    await worker.stop({ graceMs: 5000 });
  }
  const [again] = seen;
  assert.deepEqual([again.key, again.attempt, again.deliveryId], ["tick", 2, first.deliveryId]);
  assert.deepEqual([again.scheduledFor, again.missed], [tick.dueAt, 0], "a retry stands for the same occurrence");
});
