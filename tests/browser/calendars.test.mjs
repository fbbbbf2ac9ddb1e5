// The dashboard's Calendars view in headless Chromium against the real `punctual
// serve` (see harness.mjs). Guards against calendars listed without the years their
// holidays are entered for or the server's notice when those run out, a calendar's
// week, holidays or extra working days shown otherwise than the API holds them, an
// edit that overwrites a change made meanwhile (If-Match not sent) or a stale removal,
// a config-file calendar offered for change, and a token without admin on every queue
// shown a blank page instead of being told what it lacks (the API's 403).
//
// The server's config file holds one calendar, whose holidays ran out long ago.
// Saves screenshots to docs/screenshots/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { launch, shots } from "./harness.mjs";

const TOKEN = "s3cret-calendars";
const READ_ONLY = "read-only-calendars";  // [[access]] with permissions = ["read"]
const ORDERS_ADMIN = "orders-admin-calendars";  // [[access]]: admin on order.* only

let dashboard, base, page, foreign, pageErrors;
const api = (method, path, body) => dashboard.api(method, path, body);

before(async () => {
  dashboard = await launch({
    config: `[[access]]\ntoken = "${READ_ONLY}"\npermissions = ["read"]\n`
      + `\n[[access]]\ntoken = "${ORDERS_ADMIN}"\npermissions = ["read", "admin"]\nqueues = ["order.*"]\n`
      + `\n[calendars."config-office"]\ntz = "Europe/Berlin"\nhours = { mon = ["09:00-17:00"], tue = ["09:00-17:00"] }\n`
      + `holidays = ["2020-12-24/2020-12-26"]\n`,
    token: TOKEN,
  });
  ({ base, page, foreign, pageErrors } = dashboard);
});

after(async () => {
  if (dashboard) await dashboard.close();
});

// Types `token` into the page and waits for a view rendered under it (`shown`).
async function useToken(token, shown) {
  await page.fill("#token", token);
  await page.click("#token-form button");
  await page.locator(shown).waitFor();
}

// A calendar whose entered years (2098, 2099) are far ahead: no notice.
const OFFICE = {
  tz: "Asia/Shanghai",
  hours: Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((d) => [d, ["09:00-12:00", "13:30-18:00"]])),
  holidays: ["2098-01-01", "2098-10-01/2098-10-07", "2099-01-01"],
  workdays: ["2098-09-27", { date: "2098-10-11", as: "fri" }, { date: "2098-10-12", hours: ["10:00-12:00"] }],
};
const calendarCell = (name, col) => page.locator(`#calendars tr[data-calendar="${name}"] td[data-col="${col}"]`);
const detailCell = (col) => page.locator(`#calendar td[data-col="${col}"]`);

test("calendars are listed with their source, holiday years and notice; one shows its week, holidays and working days", async () => {
  const office = await api("PUT", "/v1/calendars/cn-office", OFFICE);
  assert.equal(office.status, 201);
  assert.equal((await api("PUT", "/v1/calendars/bare", { tz: "UTC", hours: { mon: ["09:00-17:00"] } })).status, 201);
  await page.goto(`${base}/#/`);
  await useToken(TOKEN, "#no-queues");
  await page.click("#nav-calendars");
  await page.waitForURL(/#\/calendars$/);
  await calendarCell("cn-office", "years").filter({ hasText: "2098, 2099" }).waitFor();
  assert.deepEqual(await page.locator("#calendars tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.calendar)),
    ["bare", "cn-office", "config-office"]);
  assert.equal(await calendarCell("cn-office", "source").textContent(), "API");
  assert.equal(await calendarCell("cn-office", "tz").textContent(), "Asia/Shanghai");
  assert.equal(await calendarCell("cn-office", "version").textContent(), String(office.json.version));
  assert.equal(await calendarCell("cn-office", "notice").textContent(), "–");
  assert.equal(await calendarCell("bare", "years").textContent(), "none entered");
  assert.match(await calendarCell("bare", "notice").textContent(), /no holidays are entered/);
  assert.match(await calendarCell("bare", "notice").getAttribute("class"), /\bwarn\b/);
  assert.equal(await calendarCell("config-office", "source").textContent(), "config file");
  assert.equal(await calendarCell("config-office", "version").textContent(), "–");
  assert.equal(await calendarCell("config-office", "years").textContent(), "2020");
  assert.match(await calendarCell("config-office", "notice").textContent(), /holidays are entered only until .*: enter the next year's/);
  assert.match(await page.locator("#calendars-warned").textContent(), /^2 of 3 calendar\(s\) need holidays entered/);
  await page.screenshot({ path: join(shots, "calendars.png"), fullPage: true });

  await page.locator('#calendars tr[data-calendar="cn-office"] a').click();
  await page.waitForURL(/#\/calendar\/cn-office$/);
  const day = (d) => page.locator(`#calendar-hours td[data-day="${d}"]`);
  await day("mon").filter({ hasText: "09:00-12:00, 13:30-18:00" }).waitFor();
  assert.equal(await day("fri").textContent(), "09:00-12:00, 13:30-18:00");
  assert.deepEqual([await day("sat").textContent(), await day("sun").textContent()], ["closed", "closed"]);
  assert.equal(await detailCell("source").textContent(), "API");
  assert.equal(await detailCell("tz").textContent(), "Asia/Shanghai");
  assert.equal(await detailCell("years").textContent(), "2098, 2099");
  assert.equal(await detailCell("version").textContent(), String(office.json.version));
  assert.deepEqual(await page.locator("#calendar-holidays li").allTextContents(),
    ["2098-01-01", "2098-10-01 to 2098-10-07 (7 days)", "2099-01-01"]);
  assert.deepEqual(await page.locator("#calendar-workdays li").allTextContents(),
    ["2098-09-27: the usual working hours", "2098-10-11: Friday's hours", "2098-10-12: 10:00-12:00"]);
  assert.equal(await page.locator("#calendar-notice").count(), 0, "no notice for years entered far ahead");
  assert.equal(await page.locator("#calendar-readonly").count(), 0);
  await page.locator("#edit-calendar summary").click();
  await page.screenshot({ path: join(shots, "calendar.png"), fullPage: true });

  // A calendar of the config file: shown, with its notice, and nothing to change it with.
  await page.goto(`${base}/#/calendar/config-office`);
  await page.locator("#calendar-readonly").waitFor();
  assert.equal(await detailCell("source").textContent(), "config file (change it there)");
  assert.equal(await day("tue").textContent(), "09:00-17:00");
  assert.deepEqual(await page.locator("#calendar-holidays li").allTextContents(), ["2020-12-24 to 2020-12-26 (3 days)"]);
  assert.match(await page.locator("#calendar-notice").textContent(), /entered only until/);
  await page.locator("#calendar-workdays-empty").waitFor();
  for (const id of ["#edit-calendar", "#calendar-save", "#calendar-delete"]) {
    assert.equal(await page.locator(id).count(), 0, `${id} is shown for a config-file calendar`);
  }

  await page.goto(`${base}/#/calendar/nowhere`);
  await page.locator("#calendar-missing").waitFor();
  assert.equal(await page.locator("#banner").isHidden(), true, "a missing calendar is no error");
});

test("a calendar is edited as JSON with If-Match, a stale edit refused; removed; created, never over another", async () => {
  const before = (await api("GET", "/v1/calendars/cn-office")).json;
  await page.goto(`${base}/#/calendar/cn-office`);
  await page.locator("#edit-calendar summary").click();
  const doc = JSON.parse(await page.inputValue("#calendar-json"));
  assert.deepEqual(doc, OFFICE, "the editor holds the calendar as PUT takes it");

  // A refusal names the field, and changes nothing.
  await page.fill("#calendar-json", JSON.stringify({ ...doc, tz: "Mars/Olympus" }));
  await page.click("#calendar-save");
  await page.locator("#calendar-error", { hasText: "not an IANA time zone" }).waitFor();
  assert.match(await page.locator("#calendar-error").getAttribute("data-field"), /tz$/);
  await page.fill("#calendar-json", "{tz: UTC}");
  await page.click("#calendar-save");
  await page.locator("#calendar-error", { hasText: "calendar: not JSON" }).waitFor();
  assert.equal((await api("GET", "/v1/calendars/cn-office")).json.version, before.version);

  await page.fill("#calendar-json", JSON.stringify({ ...doc, tz: "Asia/Hong_Kong" }));
  await page.click("#calendar-save");
  await page.locator("#banner", { hasText: `Saved calendar cn-office (version ${before.version + 1})` }).waitFor();
  await detailCell("tz").filter({ hasText: "Asia/Hong_Kong" }).waitFor();
  assert.equal(await detailCell("version").textContent(), String(before.version + 1));

  // Another change lands while the editor is open: saving is a conflict, not an overwrite.
  await page.locator("#edit-calendar summary").click();
  const stale = JSON.parse(await page.inputValue("#calendar-json"));
  const other = await api("PUT", "/v1/calendars/cn-office", { ...stale, holidays: [...stale.holidays, "2099-05-01"] });
  assert.equal(other.status, 200);
  await page.fill("#calendar-json", JSON.stringify({ ...stale, tz: "Asia/Shanghai" }));
  await page.click("#calendar-save");
  await page.locator("#calendar-error", { hasText: "Changed meanwhile, reload" }).waitFor();
  const now = (await api("GET", "/v1/calendars/cn-office")).json;
  assert.deepEqual([now.tz, now.holidays.length, now.version], ["Asia/Hong_Kong", 4, other.json.version]);
  await page.click("#calendar-reload");
  await detailCell("version").filter({ hasText: String(other.json.version) }).waitFor();
  assert.equal(await page.locator("#calendar-holidays li").count(), 4);

  // A stale removal is refused too; after a reload it removes the calendar.
  await page.locator("#edit-calendar summary").click();
  const third = await api("PUT", "/v1/calendars/cn-office", OFFICE);
  assert.equal(third.status, 200);
  await page.click("#calendar-delete");
  await page.locator("#calendar-error", { hasText: "Changed meanwhile, reload" }).waitFor();
  assert.equal((await api("GET", "/v1/calendars/cn-office")).json.version, third.json.version);
  await page.click("#calendar-reload");
  await detailCell("version").filter({ hasText: String(third.json.version) }).waitFor();
  await page.locator("#edit-calendar summary").click();
  await page.click("#calendar-delete");
  await page.waitForURL(/#\/calendars$/);
  await page.locator("#banner", { hasText: "Removed calendar cn-office" }).waitFor();
  await page.locator('#calendars tr[data-calendar="bare"]').waitFor();
  assert.equal(await page.locator('#calendars tr[data-calendar="cn-office"]').count(), 0);
  assert.equal((await api("GET", "/v1/calendars/cn-office")).status, 404);

  // Created from the list, then its page; a name taken already is not replaced.
  await page.locator("#new-calendar summary").click();
  await page.fill("#new-calendar-name", "night-shift");
  await page.fill("#new-calendar-json", JSON.stringify({ tz: "UTC", hours: { sat: ["22:00-24:00"] } }));
  await page.click("#new-calendar-create");
  await page.waitForURL(/#\/calendar\/night-shift$/);
  await page.locator('#calendar-hours td[data-day="sat"]', { hasText: "22:00-24:00" }).waitFor();
  await page.goto(`${base}/#/calendars`);
  await page.locator("#new-calendar summary").click();
  await page.fill("#new-calendar-name", "bare");
  await page.fill("#new-calendar-json", JSON.stringify({ tz: "UTC", hours: { sun: ["09:00-10:00"] } }));
  await page.click("#new-calendar-create");
  await page.locator("#new-calendar-error", { hasText: "bare exists already" }).waitFor();
  assert.deepEqual((await api("GET", "/v1/calendars/bare")).json.hours, { mon: ["09:00-17:00"] });
  for (const name of ["night-shift", "bare"]) assert.equal((await api("DELETE", `/v1/calendars/${name}`)).status, 204);
});

test("a token without admin on every queue is told so by the calendars view, not shown a blank page", async () => {
  for (const token of [READ_ONLY, ORDERS_ADMIN]) {
    await page.goto(`${base}/#/calendars`);
    await page.locator('#calendars tr[data-calendar="config-office"]').waitFor();
    await page.fill("#token", token);
    await page.click("#token-form button");
    await page.locator("#calendars-forbidden", { hasText: "lacks the admin permission" }).waitFor();
    assert.equal(await page.locator("#calendars").count(), 0, `${token} sees no calendar`);
    assert.equal(await page.locator("#new-calendar").count(), 0, `${token} gets no form`);
    assert.equal(await page.locator("#banner").isHidden(), true, "the refusal is said in the view");
    await page.goto(`${base}/#/calendar/config-office`);
    await page.locator("h1", { hasText: "config-office" }).waitFor();
    await page.locator("#calendars-forbidden").waitFor();
    assert.equal(await page.locator("#calendar-hours").count(), 0);
    await useToken(TOKEN, "#calendar-readonly");
  }
});

test("a task in a calendar links to it and says its timing in words", async () => {
  assert.equal((await api("PUT", "/v1/calendars/task-office", OFFICE)).status, 201);
  const body = { calendar: "task-office", repeat: { every: "1d" }, misfire: "fire_all", catch_up_max: 3,
    overlap: "queue", jitter: "30s" };
  assert.equal((await api("PUT", "/v1/queues/flow.remind/tasks/daily", body)).status, 201);
  await page.goto(`${base}/#/task/flow.remind/daily`);
  await page.locator("#task-calendar").filter({ hasText: "task-office" }).waitFor();
  assert.equal(await page.locator("#task-calendar").getAttribute("href"), "#/calendar/task-office");
  assert.equal(await page.locator("#task-timing").textContent(),
    "missed occurrences: each, up to 3; overlaps: the latest queued; jitter up to 30s");
  assert.equal((await api("PUT", "/v1/queues/flow.remind/tasks/plain", { delay: "1h", misfire: "skip" })).status, 201);
  await page.goto(`${base}/#/task/flow.remind/plain`);
  await page.locator("#task-timing").filter({ hasText: "skipped when leased over 1m late" }).waitFor();
  assert.equal(await page.locator("#task-calendar").textContent(), "– (plain time)");
});

test("the page asked nothing of any other host and threw no error", () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(pageErrors, []);
});
