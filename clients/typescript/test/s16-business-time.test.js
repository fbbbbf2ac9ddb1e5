// Scenario 16: business time. Guards against a client that drops `calendar`, `align` or
// `cron_syntax` on the way to the server (the task would be due 8 plain hours on, or its
// Spring cron refused as Vixie), and one that loses the If-Match of a calendar's put or
// delete.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, ConflictError, InvalidArgumentError, NotFoundError } from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());

const HOUR = 3_600_000;
const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"];
const OFFICE = Object.fromEntries(WEEKDAYS.map((day) => [day, ["09:00-12:00", "13:30-18:00"]]));
const shanghai = new Intl.DateTimeFormat("en-US", {
  timeZone: "Asia/Shanghai",
  weekday: "short",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

/** The weekday ("Mon") and the time of day ("09:30:00") of an instant in Shanghai. */
function inShanghai(at) {
  const parts = Object.fromEntries(shanghai.formatToParts(new Date(at)).map((p) => [p.type, p.value]));
  return { weekday: parts.weekday, time: `${parts.hour}:${parts.minute}:${parts.second}` };
}

/** Monday to Friday, 09:00-12:00 or 13:30-18:00 in Shanghai, the ends included. */
function inOfficeHours(at) {
  const { weekday, time } = inShanghai(at);
  const open = ("09:00:00" <= time && time <= "12:00:00") || ("13:30:00" <= time && time <= "18:00:00");
  return ["Mon", "Tue", "Wed", "Thu", "Fri"].includes(weekday) && open;
}

test("s16 business time: 8 working hours land in open time, calendars are versioned, a Spring cron reads back", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s16");
  const name = `ts-office-${process.pid}-${Date.now().toString(36)}`;
  const created = await client.putCalendar(name, { tz: "Asia/Shanghai", hours: OFFICE }, { ifVersion: 0 });
  assert.deepEqual([created.name, created.source, created.tz, created.version], [name, "api", "Asia/Shanghai", 1]);
  assert.deepEqual(created.hours, OFFICE);
  assert.ok((await client.calendars()).some((c) => c.name === name));

  // A working day holds 7.5 working hours, so 8 of them always span more than 8 hours.
  const before = Date.now();
  const { task } = await client.schedule(queue, "remind", { delay: "8h", calendar: name });
  assert.ok(inOfficeHours(task.dueAt), `due ${task.dueAt}: ${JSON.stringify(inShanghai(task.dueAt))}`);
  assert.ok(Date.parse(task.dueAt) > before + 8 * HOUR, `due ${task.dueAt}, asked at ${new Date(before).toISOString()}`);
  assert.equal((await client.get(queue, "remind")).dueAt, task.dueAt);

  const asked = Date.now();
  const aligned = await client.schedule(queue, "standup", { dueAt: new Date(asked), calendar: name, align: "next_open" });
  assert.ok(inOfficeHours(aligned.task.dueAt), `aligned to ${aligned.task.dueAt}`);
  assert.ok(Date.parse(aligned.task.dueAt) >= asked);

  const unknown = await client.schedule(queue, "nowhere", { delay: "8h", calendar: `none-${Date.now()}` }).catch((e) => e);
  assert.ok(unknown instanceof InvalidArgumentError, String(unknown));
  assert.equal(unknown.field, "calendar");

  const workdays = ["2026-09-27", { date: "2026-10-10", as: "fri" }];
  const replaced = await client.putCalendar(
    name,
    { tz: "Asia/Shanghai", hours: OFFICE, holidays: ["2026-10-01/2026-10-07"], workdays },
    { ifVersion: created.version },
  );
  assert.equal(replaced.version, 2);
  assert.deepEqual(replaced.holidays, ["2026-10-01/2026-10-07"]);
  assert.deepEqual(replaced.workdays, workdays);
  assert.deepEqual(replaced.holidayYears, [2026]);

  const stalePut = await client
    .putCalendar(name, { tz: "UTC", hours: { mon: ["09:00-17:00"] } }, { ifVersion: created.version })
    .catch((e) => e);
  assert.ok(stalePut instanceof ConflictError, String(stalePut));
  assert.equal(stalePut.status, 409);
  const staleDelete = await client.deleteCalendar(name, { ifVersion: created.version }).catch((e) => e);
  assert.ok(staleDelete instanceof ConflictError, String(staleDelete));
  assert.deepEqual(await client.getCalendar(name), replaced);

  await client.deleteCalendar(name, { ifVersion: replaced.version });
  const gone = await client.getCalendar(name).catch((e) => e);
  assert.ok(gone instanceof NotFoundError, String(gone));
  assert.ok(!(await client.calendars()).some((c) => c.name === name));

  await client.schedule(queue, "weekday", {
    repeat: { cron: "0 0 9 ? * MON-FRI", tz: "Asia/Shanghai", cronSyntax: "spring" },
  });
  const weekday = await client.get(queue, "weekday");
  assert.equal(weekday.repeat?.cronSyntax, "spring");
  const next = inShanghai(weekday.dueAt);
  assert.ok(["Mon", "Tue", "Wed", "Thu", "Fri"].includes(next.weekday), JSON.stringify(next));
  assert.equal(next.time, "09:00:00");
});

test("cron syntax and calendar in a batch: sent per item, shown for spring and quartz only", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("cron");
  const results = await client.scheduleMany(queue, [
    { key: "vixie", repeat: { cron: "0 9 * * 1-5", tz: "UTC" } },
    { key: "quartz", repeat: { cron: "0 0 18 L * ?", tz: "Europe/Berlin", cronSyntax: "quartz" } },
    { key: "refused", repeat: { cron: "0 0 9 ? * MON-FRI", tz: "UTC", cronSyntax: "vixie" } },
    { key: "no-calendar", delay: "8h", calendar: `none-${Date.now()}` },
  ]);
  assert.deepEqual(results.slice(0, 2), [
    { key: "vixie", outcome: "created" },
    { key: "quartz", outcome: "created" },
  ]);
  assert.equal(results[2].error?.field, "tasks[2].repeat.cron");
  assert.equal(results[3].error?.field, "tasks[3].calendar");
  assert.equal((await client.get(queue, "vixie")).repeat?.cronSyntax, undefined);
  assert.equal((await client.get(queue, "quartz")).repeat?.cronSyntax, "quartz");
});
