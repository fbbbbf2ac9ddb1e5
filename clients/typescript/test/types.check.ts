// Compiled by `npm run typecheck` only (never run): the README's use of the package,
// against the declarations tsc generated in dist/esm, so a type that drifts from how the
// API is meant to be used fails the build.
import { Client, Worker, retry, reschedule, fail, verifySignature, InvalidArgumentError } from "punctual-client";

const client = new Client({ server: "http://127.0.0.1:7575", timeoutMs: 5000, retries: 2 });
await client.schedule("flow.remind", "step-42", { delay: "24h", payload: { step: 42 }, tags: ["flow-7"] });
await client.schedule("mail.send", "receipt-7", { payload: { order: 7 }, priority: 9 });
await client.schedule("order.notify", "order-1", { delay: "30s", payload: { status: 2 }, debounce: { maxWait: "5m" } });
await client.schedule("x", "y", { dueAt: new Date(), repeat: { cron: "0 9 * * MON-FRI", tz: "Asia/Shanghai", times: 3 } });
const results = await client.scheduleMany("x", [{ key: "a", delay: 1000, ifExists: "keep", backoff: { initial: "1s", factor: 2 }, priority: 5 }]);
await client.scheduleMany("x", [{ key: "b", delay: 1000, debounce: { maxWait: 60_000 } }]);
await client.schedule("order.cancel", "order-1234", { delay: "30m", group: "merchant-42" });
const groups = await client.groupsPage("order.cancel", { limit: 100 });
groups.groups.forEach((g) => g.group.toUpperCase() + g.scheduled.toFixed() + g.leased + g.dead);
const groupLimit: number | null = (await client.putSettings("order.cancel", { groupConcurrency: 1 })).groupConcurrency;
const receipt = await client.schedule("order.receipt", "order-1234", { payload: { order: 1234 }, uniqueFor: "1h" });
if (receipt.completed) receipt.completed.uniqueUntil.toUpperCase() + receipt.completed.id.toFixed();
else receipt.task.dueAt.toUpperCase();
await client.scheduleMany("x", [{ key: "c", uniqueFor: { window: "1h", dead: true } }, { key: "d", uniqueFor: 60_000 }]);
const office = { mon: ["09:00-12:00", "13:30-18:00"], fri: ["09:00-12:00"] };
const cal = await client.putCalendar("cn-office", { tz: "Asia/Shanghai", hours: office, holidays: ["2026-10-01/2026-10-07"], workdays: ["2026-09-27", { date: "2026-10-10", as: "fri" }] }, { ifVersion: 0 });
const calVersion: number = cal.version;
const enteredUntil: string | null = (await client.getCalendar("cn-office")).enteredUntil;
(await client.calendars()).forEach((c) => c.holidayYears.map((y) => y.toFixed()) && c.notice?.toUpperCase());
await client.schedule("flow.remind", "approve-42", { delay: "8h", calendar: "cn-office" });
await client.schedule("flow.remind", "standup", { dueAt: "2026-12-05T10:00:00+08:00", calendar: "cn-office", align: "next_open" });
await client.schedule("report.daily", "weekday", { repeat: { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cronSyntax: "spring" } });
const syntax: "spring" | "quartz" | undefined = (await client.get("report.daily", "weekday")).repeat?.cronSyntax;
await client.schedule("flow.remind", "daily", { repeat: { every: "1d" }, calendar: "cn-office", misfire: "fire_all", catchUpMax: 3, overlap: "queue", jitter: "30s" });
await client.scheduleMany("report.digest", [{ key: "daily", repeat: { every: 86_400_000 }, misfire: "skip", misfireAfter: "2h", jitter: 30_000 }]);
await client.schedule("flow.remind", "tick", { repeat: { every: "1m" }, payload: { n: 1 }, overlap: "allow" });
// @ts-expect-error an overlap is "skip", "queue" or "allow"
await client.schedule("flow.remind", "daily", { repeat: { every: "1h" }, overlap: "sometimes" });
const timing = await client.get("flow.remind", "daily");
const policies: [string | null, "fire_once" | "fire_all" | "skip", string, number, "skip" | "queue" | "allow", string | null] =
  [timing.calendar, timing.misfire, timing.misfireAfter, timing.catchUpMax, timing.overlap, timing.jitter];
(await client.lease("flow.remind")).forEach((l) => l.scheduledFor.toUpperCase() + l.missed.toFixed() + l.leaseId + l.task.maxAttempts);
await client.deleteCalendar("cn-office", { ifVersion: calVersion });
const window = (await client.get("x", "c")).uniqueFor;
const windowText: string | null = typeof window === "object" && window !== null ? window.window : window;
const urgent: number = (await client.get("x", "a")).priority;
results.forEach((r) => (r.error ? r.error.code + r.error.field : r.completed ? r.completed.completedAt : r.outcome));
for await (const t of client.list("x", { tag: "flow-7" })) t.dueAt.toUpperCase() + t.lastError?.length;
const n: number = await client.cancelTag("flow.remind", "flow-7");
const s = await client.putSettings("x", { concurrency: 4 }, { ifVersion: 3 });
const daily = await client.putSettings("report.daily", { defaults: { repeat: { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cronSyntax: "spring", until: new Date() } } });
const defaultUntil: string | undefined = daily.defaults.repeat?.until;
const defaultSyntax: "spring" | "quartz" | undefined = daily.defaults.repeat?.cronSyntax;
const defaultTries: number = daily.defaults.maxAttempts + daily.defaults.backoff.factor;
// @ts-expect-error one naming convention: settings take cronSyntax, as schedule does
await client.putSettings("report.daily", { defaults: { repeat: { cron: "0 9 * * *", cron_syntax: "spring" } } });
// A getSettings answer goes back as it is.
await client.putSettings("report.daily", await client.getSettings("report.daily"), { ifVersion: daily.version });
await client.patchSettings("order.cancel", { action: { kind: "webhook", urlEnv: "HOOK_URL", secretEnv: "HOOK_SECRET", finalStatuses: [422] } });
// @ts-expect-error an action is camelCase too
await client.patchSettings("order.cancel", { action: { kind: "webhook", url_env: "HOOK_URL" } });
const stats = await client.queue("order.cancel");
const overdue: number = stats.oldestOverdueMs + (stats.lagMs.p99 ?? 0) + (stats.outbox?.rowsWaiting ?? 0);
const canAdmin: boolean = (await client.access()).permissions.includes("admin");
const history = await client.history("order.cancel", "order-1234");
const retention: number = history.retentionMs;
history.events.forEach((e) => e.at.toUpperCase() + e.by?.toUpperCase() + (e.attempt ?? 0).toFixed() + e.changed?.join(",") + e.tookMs);
history.events.forEach((e) => e.event + e.node?.toUpperCase() + e.deliveryId?.toUpperCase());
const gone: boolean = history.events.some((e) => e.state === "gone" && e.event === "cancelled" && e.outcome !== "dead");
// @ts-expect-error a history event is camelCase: no lease_expires_at
history.events[0]?.lease_expires_at;
const page = await client.auditPage({ limit: 10 });
const auditCursor: string | null = page.nextCursor;
for await (const entry of client.audit({ limit: 100 })) {
  if (entry.action === "queue.pause") entry.queue?.toUpperCase() + entry.at + entry.by;
  const detail: Record<string, unknown> | undefined = entry.detail;
  void detail;
}
// @ts-expect-error an audit action is one of the server's
page.entries.filter((e) => e.action === "queue.deleted");
const extended: string = (await client.extend("lease-1", "30s")).expiresAt;
(await client.acks([{ leaseId: "lease-1", outcome: "done" }])).forEach((r) => (r.status === 204 ? r.leaseId : r.error.message));
// @ts-expect-error answers are camelCase: no due_at
(await client.get("x", "a")).due_at;
// @ts-expect-error options are camelCase: no max_attempts
await client.schedule("x", "a", { max_attempts: 3 });
s.version.toFixed();
try {
  await client.get("x", "missing");
} catch (e) {
  if (e instanceof InvalidArgumentError) e.field?.toUpperCase();
}

const worker = new Worker(client, { leaseForMs: 30_000, logger: null });
worker.handle("flow.remind", async ({ payload, attempt, deliveryId, priority, group, scheduledFor, missed, signal }) => {
  if (group?.startsWith("vip") && signal.aborted) return retry();
  if (missed > 0 && scheduledFor < new Date().toISOString()) return fail("too late");
  if (priority > 5 && signal.aborted) return retry();
  if (signal.aborted) return retry(1000, new Error("stop"));
  if (attempt > 3) return fail("gave up");
  if (deliveryId === "") return reschedule({ delay: "24h" });
  return payload ? undefined : { outcome: "done" };
}, { concurrency: 8 });
worker.handle<{ step: number }>("flow.step", ({ payload, task }) => (payload.step > task.maxAttempts ? fail("too many") : undefined));
await worker.start();
await worker.stop({ graceMs: 5000 });
const ok: boolean = verifySignature({ body: "{}", header: "t=1,v1=00", secret: "whsec" });
verifySignature({ body: Buffer.from("{}"), header: undefined, secrets: ["whsec-new", new Uint8Array([1])] });
// @ts-expect-error one secret or several, not both
verifySignature({ body: "{}", header: "t=1,v1=00", secret: "whsec", secrets: ["whsec-old"] });
void n, ok, policies, urgent, groupLimit, groups.nextCursor, windowText, enteredUntil, syntax, defaultUntil, defaultSyntax, defaultTries, overdue, canAdmin, extended, retention, gone, auditCursor;

// The outbox with the drivers' own types: a pg Client or PoolClient, a mysql2/promise Connection.
import { outbox, Outbox } from "punctual-client";
import type { Client as PgClient, PoolClient } from "pg";
import type { Connection as MysqlConnection, PoolConnection as MysqlPoolConnection } from "mysql2/promise";
declare const pgClient: PgClient;
declare const pgPoolClient: PoolClient;
declare const mysqlConnection: MysqlConnection;
declare const mysqlPoolConnection: MysqlPoolConnection;
await pgClient.query("BEGIN");
const rowId: string | undefined = await outbox.schedule(pgClient, "order.cancel", "order-1234", { delay: "30m", payload: { orderId: 1234 } });
await outbox.cancel(pgPoolClient, "order.cancel", "order-1234", { table: "shop_outbox" });
await outbox.cancelTag(mysqlConnection, "flow.remind", "flow-7");
const shop = new Outbox({ table: "shop.outbox", dialect: "mysql" });
await shop.schedule(mysqlPoolConnection, "order.cancel", "order-1", { dueAt: new Date(), priority: 9, table: "other_outbox" });
// @ts-expect-error a dialect is "postgres" or "mysql"
await outbox.cancel(pgClient, "q", "k", { dialect: "sqlite" });
// @ts-expect-error schedule's options are checked as client.schedule's
await outbox.schedule(pgClient, "q", "k", { overlap: "sometimes" });
void rowId, shop.table;
