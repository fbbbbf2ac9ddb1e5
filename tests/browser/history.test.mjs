// A task's history on its dashboard page, in headless Chromium against the real
// `punctual serve` (see harness.mjs). Guards against a timeline that leaves out events,
// shows them out of order or without who made them, loses the handler's error or
// what a push delivery's far end answered, and against the page of a task that is
// gone saying only "No such task" while the server still knows what happened to it
// (the manager's "was I ever reminded?"); and against a timeline that makes a phone
// scroll sideways.
//
// Two named tokens make the changes, so the timeline can say who: "shop-backend"
// schedules and cancels, "mailer" leases and acks. The server's egress allows
// 127.0.0.1, where the test answers a task's own HTTP target with a 503.
// Saves screenshots to docs/screenshots/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { launch, shots } from "./harness.mjs";

const TOKEN = "s3cret-history";
const BACKEND = "backend-history";  // [[access]] "shop-backend": read, schedule
const WORKER = "worker-history";  // [[access]] "mailer": work

let dashboard, base, page, foreign, pageErrors;
const api = (method, path, body) => dashboard.api(method, path, body);
const waitFor = (what, check) => dashboard.waitFor(what, check);

// A call as `token` (the harness's `api` calls as TOKEN).
async function callAs(token, method, path, body) {
  const resp = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await resp.text();
  return { status: resp.status, json: text ? JSON.parse(text) : null };
}

before(async () => {
  dashboard = await launch({
    config: `[egress]\nallow = ["127.0.0.1"]\n`
      + `\n[[access]]\ntoken = "${BACKEND}"\nname = "shop-backend"\npermissions = ["read", "schedule"]\n`
      + `\n[[access]]\ntoken = "${WORKER}"\nname = "mailer"\npermissions = ["work"]\n`,
    token: TOKEN,
  });
  ({ base, page, foreign, pageErrors } = dashboard);
  await page.goto(base + "/");
  await page.fill("#token", TOKEN);
  await page.click("#token-form button");
  await page.locator("#no-queues").waitFor();
});

after(async () => {
  if (dashboard) await dashboard.close();
});

const rows = () => page.locator("#task-history tr.history-event");
const events = () => rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.event));
const row = (event) => page.locator(`#task-history tr.history-event[data-event="${event}"]`);
const cell = (event, col) => row(event).locator(`td[data-col="${col}"]`);

test("a task's page shows its history, oldest first; once it is gone, its page shows what happened to it", async () => {
  const path = "/v1/queues/remind.manager/tasks/review-42";
  assert.equal((await callAs(BACKEND, "PUT", path, { delay: "1h", payload: { review: 42 } })).status, 201);
  // Replaced: due now, another payload; then one try that fails.
  assert.equal((await callAs(BACKEND, "PUT", path, { payload: { review: 42, note: "urgent" } })).status, 200);
  const [lease] = (await callAs(WORKER, "POST", "/v1/queues/remind.manager/lease", { max: 1 })).json.leases;
  assert.equal(lease.task.key, "review-42");
  assert.equal((await callAs(WORKER, "POST", `/v1/leases/${lease.lease_id}/ack`, { outcome: "retry", error: "boom" })).status, 204);

  // The task is scheduled again: its fields, then its history under them.
  await page.goto(`${base}/#/task/remind.manager/review-42`);
  await page.locator("#task-state", { hasText: "scheduled" }).waitFor();
  await waitFor("four events", async () => (await rows().count()) === 4);
  assert.deepEqual(await events(), ["created", "replaced", "leased", "acked"]);
  const below = await page.evaluate(() =>
    document.querySelector("dl.task").compareDocumentPosition(document.querySelector("#task-history")) & Node.DOCUMENT_POSITION_FOLLOWING);
  assert.ok(below, "the history comes after the task's fields");
  await page.screenshot({ path: join(shots, "task-history.png"), fullPage: true });

  // Cancelled by the backend: the task is gone, its page tells its story.
  assert.equal((await callAs(BACKEND, "DELETE", path)).status, 204);
  assert.equal((await api("GET", path)).status, 404);
  await page.goto(`${base}/#/task/remind.manager/review-42`);
  await page.locator("#task-gone", { hasText: "This task is gone; what happened to it:" }).waitFor();
  await waitFor("five events", async () => (await rows().count()) === 5);
  assert.deepEqual(await events(), ["created", "replaced", "leased", "acked", "cancelled"]);
  assert.equal(await page.locator("#task-missing").count(), 0, "the gone task's page says only that there is none");
  assert.equal(await page.locator("#task-state").count(), 0);

  // Who did each, and what each carried, in words.
  for (const event of ["created", "replaced", "cancelled"]) {
    assert.equal(await cell(event, "event").textContent(), `${event} by shop-backend`);
  }
  for (const event of ["leased", "acked"]) assert.equal(await cell(event, "event").textContent(), `${event} by mailer`);
  assert.match(await cell("created", "details").textContent(), /^due .+ \(in 59 min \d+ s\)$/);
  assert.match(await cell("replaced", "details").textContent(), /^changed due_at, payload · due /);
  // The lease: on which node, with the delivery id the worker saw.
  const leasedDetails = await cell("leased", "details").textContent();
  assert.match(leasedDetails, /^try 1 · lease \d+ · until .+ · on .+:\d+ \(pid \d+\) · delivery /);
  assert.ok(leasedDetails.endsWith(` · delivery ${lease.delivery_id}`), leasedDetails);
  assert.match(await cell("acked", "details").textContent(), /^try 1 · lease \d+ · retry at .+: boom$/);
  assert.equal(await cell("cancelled", "details").textContent(), "–");
  assert.deepEqual(await rows().locator('td[data-col="state"]').allTextContents(),
    ["scheduled", "scheduled", "leased", "scheduled", "gone"]);
  // The pills' colours: a failed try amber, a cancel red, the rest neutral.
  const tone = (event) => row(event).locator(".pill").getAttribute("class");
  assert.equal(await tone("acked"), "pill tone-warn");
  assert.equal(await tone("cancelled"), "pill tone-bad");
  assert.equal(await tone("created"), "pill ");
  await page.screenshot({ path: join(shots, "task-gone-history.png"), fullPage: true });
});

test("a key with neither a task nor a history is still 'No such task'", async () => {
  await page.goto(`${base}/#/task/remind.manager/never-scheduled`);
  await page.locator("#task-missing", { hasText: "No such task" }).waitFor();
  assert.equal(await page.locator("#task-history").count(), 0);
});

test("a push delivery's ack shows what the far end answered", async () => {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => { res.writeHead(503, { "Content-Type": "text/plain" }); res.end("maintenance window"); });
  });
  await new Promise((ok) => receiver.listen(0, "127.0.0.1", ok));
  try {
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    const path = "/v1/queues/remind.push/tasks/ping-1";
    assert.equal((await callAs(BACKEND, "PUT", path, { max_attempts: 1, target: { url } })).status, 201);
    await waitFor("the delivery's ack", async () =>
      (await api("GET", `${path}/history`)).json.events.some((e) => e.event === "acked"));
  } finally {
    receiver.close();
  }
  await page.goto(`${base}/#/task/remind.push/ping-1`);
  await page.locator("#task-state", { hasText: "dead" }).waitFor();
  await row("acked").waitFor();
  assert.match(await cell("acked", "details").textContent(), /^try 1 · lease \d+ · dead.* · HTTP 503 in [\d.]+ m?s: maintenance window$/);
  assert.equal(await row("acked").locator(".pill").getAttribute("class"), "pill tone-bad", "the try that killed it is red");
  assert.equal(await cell("acked", "state").textContent(), "dead");
  assert.equal((await api("DELETE", "/v1/queues/remind.push/dead/ping-1")).status, 204);
  await page.goto(`${base}/#/task/remind.push/ping-1`);
  await page.locator("#task-gone").waitFor();
  assert.deepEqual(await events(), ["created", "leased", "acked", "deleted"]);
});

test("a gone task's history fits a phone screen", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/#/task/remind.manager/review-42`);
  await page.locator('#task-history tr.history-event[data-event="cancelled"]').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px on a phone`);
  await page.screenshot({ path: join(shots, "task-history-phone.png"), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 860 });
});

test("the page asked nothing of any other host and threw no error", () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(pageErrors, []);
});
