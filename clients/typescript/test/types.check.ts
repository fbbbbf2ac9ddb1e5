// Compiled by `npm run typecheck` only (never run): the README's use of the package,
// so a declaration that drifts from how the API is meant to be used fails the build.
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
const groupLimit: number | null = (await client.putSettings("order.cancel", { group_concurrency: 1 })).group_concurrency;
const receipt = await client.schedule("order.receipt", "order-1234", { payload: { order: 1234 }, uniqueFor: "1h" });
if (receipt.completed) receipt.completed.unique_until.toUpperCase() + receipt.completed.id.toFixed();
else receipt.task.due_at.toUpperCase();
await client.scheduleMany("x", [{ key: "c", uniqueFor: { window: "1h", dead: true } }, { key: "d", uniqueFor: 60_000 }]);
const office = { mon: ["09:00-12:00", "13:30-18:00"], fri: ["09:00-12:00"] };
const cal = await client.putCalendar("cn-office", { tz: "Asia/Shanghai", hours: office, holidays: ["2026-10-01/2026-10-07"], workdays: ["2026-09-27", { date: "2026-10-10", as: "fri" }] }, { ifVersion: 0 });
const calVersion: number = cal.version;
const enteredUntil: string | null = (await client.getCalendar("cn-office")).entered_until;
(await client.calendars()).forEach((c) => c.holiday_years.map((y) => y.toFixed()) && c.notice?.toUpperCase());
await client.schedule("flow.remind", "approve-42", { delay: "8h", calendar: "cn-office" });
await client.schedule("flow.remind", "standup", { dueAt: "2026-12-05T10:00:00+08:00", calendar: "cn-office", align: "next_open" });
await client.schedule("report.daily", "weekday", { repeat: { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cronSyntax: "spring" } });
const syntax: "spring" | "quartz" | undefined = (await client.get("report.daily", "weekday")).repeat?.cron_syntax;
await client.schedule("flow.remind", "daily", { repeat: { every: "1d" }, calendar: "cn-office", misfire: "fire_all", catchUpMax: 3, overlap: "queue", jitter: "30s" });
await client.scheduleMany("report.digest", [{ key: "daily", repeat: { every: 86_400_000 }, misfire: "skip", misfireAfter: "2h", jitter: 30_000 }]);
await client.schedule("flow.remind", "tick", { repeat: { every: "1m" }, payload: { n: 1 }, overlap: "allow" });
// @ts-expect-error an overlap is "skip", "queue" or "allow"
await client.schedule("flow.remind", "daily", { repeat: { every: "1h" }, overlap: "sometimes" });
const timing = await client.get("flow.remind", "daily");
const policies: [string | null, "fire_once" | "fire_all" | "skip", string, number, "skip" | "queue" | "allow", string | null] =
  [timing.calendar, timing.misfire, timing.misfire_after, timing.catch_up_max, timing.overlap, timing.jitter];
(await client.lease("flow.remind")).forEach((l) => l.scheduled_for.toUpperCase() + l.missed.toFixed());
await client.deleteCalendar("cn-office", { ifVersion: calVersion });
const window = (await client.get("x", "c")).unique_for;
const windowText: string | null = typeof window === "object" && window !== null ? window.window : window;
const urgent: number = (await client.get("x", "a")).priority;
results.forEach((r) => ("error" in r ? r.error.code : r.completed ? r.completed.completed_at : r.outcome));
for await (const t of client.list("x", { tag: "flow-7" })) t.due_at.toUpperCase();
const n: number = await client.cancelTag("flow.remind", "flow-7");
const s = await client.putSettings("x", { concurrency: 4 }, { ifVersion: 3 });
const daily = await client.putSettings("report.daily", { defaults: { repeat: { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cron_syntax: "spring", until: new Date() } } });
const defaultUntil: string | undefined = daily.defaults.repeat?.until;
const defaultSyntax: "spring" | "quartz" | undefined = daily.defaults.repeat?.cron_syntax;
const defaultTries: number = daily.defaults.max_attempts + daily.defaults.backoff.factor;
// @ts-expect-error settings are sent as they are: cron_syntax, not schedule's cronSyntax
await client.putSettings("report.daily", { defaults: { repeat: { cron: "0 9 * * *", cronSyntax: "spring" } } });
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
await worker.start();
await worker.stop({ graceMs: 5000 });
const ok: boolean = verifySignature({ body: "{}", header: "t=1,v1=00", secret: "whsec" });
void n, ok, policies, urgent, groupLimit, groups.next_cursor, windowText, enteredUntil, syntax, defaultUntil, defaultSyntax, defaultTries;

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
