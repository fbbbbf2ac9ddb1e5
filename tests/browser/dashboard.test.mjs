// The dashboard in headless Chromium against the real `punctual serve`, started with a
// token on a free port. Guards against a dashboard that cannot work with auth (the page
// must load without the token, every data call must send it), counts that do not follow
// the API, buttons (cancel, retry, retry all) that do not do what they say, and a task
// list whose tag filter does not filter, pause/resume buttons that do not pause, and a
// task's HTTP target that is not shown or whose headers (an API caller's text) go in
// as HTML, and forms that do not do what curl does: a queue created, its settings
// edited (a stale edit refused, not overwriting) or removed, a task scheduled with its
// own target, each refusal shown with the field the server names; and a scoped
// read-only token that must be shown no schedule, cancel, pause or settings control;
// a queue's groups with their counts, paged, a group's tasks and a task's group.
//
// The server's config allows egress to 127.0.0.1 (a webhook queue of the tests points
// there) and its environment holds HOOK_SECRET, a secret that must never show.
//
// Needs what harness.mjs says. Saves screenshots to docs/screenshots/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { launch, shots } from "./harness.mjs";

const TOKEN = "s3cret-dashboard";
const READ_ONLY = "read-only-dashboard";  // [[access]] with permissions = ["read"]
const HOOK_SECRET = "hook-secret-value-9f2c";

let dashboard, base, page;
let foreign = [];  // requests that left the server: there must be none (no CDN, no internet)
let pageErrors = [];
const api = (method, path, body) => dashboard.api(method, path, body);
const waitFor = (what, check) => dashboard.waitFor(what, check);

before(async () => {
  dashboard = await launch({
    config: `[egress]\nallow = ["127.0.0.1"]\n\n[[access]]\ntoken = "${READ_ONLY}"\npermissions = ["read"]\n`,
    token: TOKEN,
    env: { HOOK_SECRET },
  });
  ({ base, page, foreign, pageErrors } = dashboard);
});

after(async () => {
  if (dashboard) await dashboard.close();
});

test("the page loads without a token and asks for one; with it, the data shows", async () => {
  await page.goto(base + "/");
  await page.locator("#banner").filter({ hasText: "token" }).waitFor();
  await page.fill("#token", TOKEN);
  await page.click("#token-form button");
  await page.locator("#no-queues").waitFor();
  assert.equal(await page.locator("#banner").isHidden(), true);
});

test("scheduling through the API changes the counts on the overview", async () => {
  for (let i = 1; i <= 24; i++) {
    const r = await api("PUT", `/v1/queues/order.cancel/tasks/order-${1000 + i}`,
      { delay: `${(i * 137) % 59 + 1}m`, payload: { order_id: 1000 + i } });
    assert.equal(r.status, 201);
  }
  for (let i = 1; i <= 6; i++) {
    await api("PUT", `/v1/queues/flow.reminder/tasks/task-${i}@pi-9`, { delay: `${i * 3}h`, tags: ["pi-9"] });
  }
  // Some history: three fired and done now, so the outcomes and the sparkline have data.
  for (let i = 1; i <= 3; i++) await api("PUT", `/v1/queues/order.cancel/tasks/paid-${i}`, {});
  const leased = await api("POST", "/v1/queues/order.cancel/lease", { max: 3 });
  for (const lease of leased.json.leases) {
    assert.equal((await api("POST", `/v1/leases/${lease.lease_id}/ack`, { outcome: "done" })).status, 204);
  }
  const cell = (q, col) => page.locator(`tr[data-queue="${q}"] td[data-col="${col}"]`);
  await waitFor("the overview to count 24 scheduled", async () => (await cell("order.cancel", "scheduled").count()) === 1
    && (await cell("order.cancel", "scheduled").textContent()) === "24");
  assert.equal(await cell("flow.reminder", "scheduled").textContent(), "6");
  await page.screenshot({ path: join(shots, "overview.png"), fullPage: true });
});

test("a task found by key is cancelled with its button", async () => {
  await page.fill("#lookup-queue", "order.cancel");
  await page.fill("#lookup-key", "order-1007");
  await page.click("#lookup button");
  await page.locator("#task-state", { hasText: "scheduled" }).waitFor();
  await page.screenshot({ path: join(shots, "task.png"), fullPage: true });
  await page.click("#cancel-task");
  await page.locator("#banner", { hasText: "Cancelled order-1007" }).waitFor();
  await page.locator("#card-scheduled .value", { hasText: "23" }).waitFor();
  assert.equal((await api("GET", "/v1/queues/order.cancel/tasks/order-1007")).status, 404);
});

// Needs a store that keeps targets: on the embedded store before it does, GET shows
// "target": null and this step fails.
test("a task's HTTP target is shown, its headers as text", async () => {
  const injected = '<img id="injected" src="x" onerror="window.pwned = 1">';
  const r = await api("PUT", "/v1/queues/shop.hooks/tasks/order-77", {
    delay: "1h",
    payload: { order_id: 77 },
    target: { url: "https://shop.example.com/hooks/cancel?order=77", method: "PUT",
      headers: { "X-Tenant": "acme", "X-Note": injected }, timeout: "15s", body: { order_id: 77 } },
  });
  assert.equal(r.status, 201);
  await page.goto(`${base}/#/task/shop.hooks/order-77`);
  const cell = (col) => page.locator(`#task-target td[data-col="${col}"]`);
  await cell("method").filter({ hasText: "PUT" }).waitFor();
  assert.equal(await cell("url").textContent(), "https://shop.example.com/hooks/cancel?order=77");
  assert.equal(await cell("timeout").textContent(), "15s");
  assert.equal(await cell("body").textContent(), "custom (set by the task)");
  assert.equal(await page.locator('#task-target li[data-header="X-Tenant"]').textContent(), "X-Tenant: acme");
  assert.equal(await page.locator('#task-target li[data-header="X-Note"]').textContent(), `X-Note: ${injected}`);
  assert.equal(await page.locator("#injected").count(), 0, "a header value was put in as HTML");
  assert.equal(await page.evaluate(() => window.pwned), undefined);

  // A task without a target shows no target.
  await api("PUT", "/v1/queues/shop.hooks/tasks/order-78", { delay: "1h" });
  await page.goto(`${base}/#/task/shop.hooks/order-78`);
  await page.locator("h1", { hasText: "order-78" }).waitFor();
  assert.equal(await page.locator("#task-target").count(), 0);
  assert.equal((await api("DELETE", "/v1/queues/shop.hooks/tasks?state=all")).json.cancelled, 2);
});

async function kill(key, error, queue = "order.cancel") {
  await api("PUT", `/v1/queues/${queue}/tasks/${key}`, { max_attempts: 1 });
  const [lease] = (await api("POST", `/v1/queues/${queue}/lease`, { max: 1 })).json.leases;
  assert.equal(lease.task.key, key);
  await api("POST", `/v1/leases/${lease.lease_id}/ack`, { outcome: "fail", error });
}

test("a dead task is retried with its button, another deleted with its own", async () => {
  await kill("order-dead-1", "payment service answered 404");
  await kill("order-dead-2", "order not found");
  await page.goto(`${base}/#/queue/order.cancel`);
  const row = page.locator('#dead tr[data-key="order-dead-1"]');
  await row.waitFor();
  await page.screenshot({ path: join(shots, "queue.png"), fullPage: true });
  await page.locator('#dead tr[data-key="order-dead-2"] button.delete').click();
  await page.locator("#banner", { hasText: "Deleted order-dead-2" }).waitFor();
  assert.equal((await api("GET", "/v1/queues/order.cancel/tasks/order-dead-2")).status, 404);
  await row.locator("button.retry").click();
  await page.locator("#dead-empty").waitFor();
  const task = await api("GET", "/v1/queues/order.cancel/tasks/order-dead-1");
  assert.equal(task.json.state, "scheduled");
  assert.equal(task.json.attempts, 0);
});

test("a queue's task list is filtered by tag, from the form and from a task's tag", async () => {
  for (let i = 1; i <= 2; i++) {
    await api("PUT", `/v1/queues/flow.reminder/tasks/other-${i}@pi-10`, { delay: `${i}h`, tags: ["pi-10"] });
  }
  await page.goto(`${base}/#/queue/flow.reminder`);
  const rows = page.locator("#tasks tbody tr");
  await waitFor("the unfiltered list of 8 tasks", async () => (await rows.count()) === 8);
  await page.fill("#task-tag", "pi-10");
  await page.click("#task-filter button");
  await waitFor("the list tagged pi-10", async () => (await rows.count()) === 2);
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.key)), ["other-1@pi-10", "other-2@pi-10"]);
  assert.match(page.url(), /#\/queue\/flow\.reminder\?tag=pi-10$/);
  // A task's tag links to the list it belongs to.
  await page.goto(`${base}/#/task/flow.reminder/${encodeURIComponent("task-2@pi-9")}`);
  await page.locator("a.tag", { hasText: "pi-9" }).click();
  await waitFor("the list tagged pi-9", async () => (await rows.count()) === 6
    && (await page.locator('#tasks td[data-col="tags"]', { hasText: "pi-10" }).count()) === 0);
  await page.selectOption("#task-state-filter", "dead");
  await page.click("#task-filter button");
  await page.locator("#tasks-empty").waitFor();
});

test("every dead task of a queue is retried with one button", async () => {
  for (let i = 1; i <= 3; i++) await kill(`bulk-${i}`, "smtp refused", "mail.bulk");
  await page.goto(`${base}/#/queue/mail.bulk`);
  await page.locator('#dead tr[data-key="bulk-3"]').waitFor();
  await page.click("#retry-all-dead");
  await page.locator("#banner", { hasText: "Retried 3 dead tasks" }).waitFor();
  await page.locator("#dead-empty").waitFor();
  for (let i = 1; i <= 3; i++) {
    const task = await api("GET", `/v1/queues/mail.bulk/tasks/bulk-${i}`);
    assert.equal(task.json.state, "scheduled");
  }
});

test("a queue is paused and resumed with its button, and its settings are shown", async () => {
  const put = await api("PUT", "/v1/queues/order.cancel/settings",
    { defaults: { max_attempts: 7, backoff: { initial: "2s", factor: 3.0, max: "10m" } } });
  assert.equal(put.status, 201);
  await page.goto(`${base}/#/queue/order.cancel`);
  await page.locator('#settings td[data-col="max_attempts"]', { hasText: "7" }).waitFor();
  assert.equal(await page.locator('#settings td[data-col="source"]').textContent(), "API");
  assert.equal(await page.locator('#settings td[data-col="backoff"]').textContent(), "2s ×3 up to 10m");
  await page.click("#pause-queue");
  await page.locator("#banner", { hasText: "Paused order.cancel" }).waitFor();
  await page.locator("#queue-paused").waitFor();
  assert.equal((await api("GET", "/v1/queues/order.cancel/settings")).json.paused, true);
  await api("PUT", "/v1/queues/order.cancel/tasks/while-paused", {});
  assert.deepEqual((await api("POST", "/v1/queues/order.cancel/lease", { max: 10 })).json.leases, [], "a paused queue leased");
  await page.screenshot({ path: join(shots, "queue-paused.png"), fullPage: true });
  await page.goto(`${base}/#/`);
  await page.locator('tr[data-queue="order.cancel"] [data-col="paused"]').waitFor();
  await page.goto(`${base}/#/queue/order.cancel`);
  await page.click("#resume-queue");
  await page.locator("#banner", { hasText: "Resumed order.cancel" }).waitFor();
  await page.locator("#pause-queue").waitFor();
  const leased = (await api("POST", "/v1/queues/order.cancel/lease", { max: 1 })).json.leases;
  assert.equal(leased.length, 1, "the resumed queue leases again");
  await api("POST", `/v1/leases/${leased[0].lease_id}/ack`, { outcome: "done" });
  assert.equal((await api("DELETE", "/v1/queues/order.cancel/settings")).status, 204);
  await page.goto(`${base}/#/queue/flow.reminder`);
  await page.locator("#settings", { hasText: "No settings" }).waitFor();
});

const settingsCell = (col) => page.locator(`#settings td[data-col="${col}"]`);

test("a queue is created from the overview, its settings edited; a stale edit is refused", async () => {
  await page.goto(`${base}/#/`);
  await page.locator("#new-queue summary").click();
  await page.fill("#new-queue-name", "hooks.refused");
  await page.fill("#new-queue-json", '{"action": {"kind": "webhook", "url": "http://10.0.0.1/hook"}}');
  await page.click("#new-queue-create");
  await page.locator("#new-queue-error", { hasText: "action.url" }).waitFor();
  assert.equal(await page.locator("#new-queue-error").getAttribute("data-field"), "action.url");
  assert.equal((await api("GET", "/v1/queues/hooks.refused/settings")).status, 404, "a refused queue was stored");

  const hook = `http://127.0.0.1:${new URL(base).port}/never-called`;
  await page.fill("#new-queue-name", "hooks.order");
  await page.fill("#new-queue-json",
    JSON.stringify({ action: { kind: "webhook", url: hook, secret_env: "HOOK_SECRET" }, concurrency: 4 }));
  await page.click("#new-queue-create");
  await page.waitForURL(/#\/queue\/hooks\.order$/);
  await settingsCell("concurrency").filter({ hasText: "4" }).waitFor();
  assert.equal(await settingsCell("action").textContent(), "webhook");
  assert.equal(await settingsCell("source").textContent(), "API");
  const created = (await api("GET", "/v1/queues/hooks.order/settings")).json;
  assert.equal(await settingsCell("version").textContent(), String(created.version));

  // The editor holds the settable fields only, the secret by its variable's name.
  await page.locator("#edit-settings summary").click();
  const doc = JSON.parse(await page.inputValue("#settings-json"));
  assert.deepEqual(Object.keys(doc).sort(), ["action", "concurrency", "defaults", "rate", "shards", "targets"]);
  assert.equal(doc.action.secret_env, "HOOK_SECRET");
  assert.equal(doc.action.url, hook);
  assert.ok(!(await page.content()).includes(HOOK_SECRET), "the secret's value is on the page");

  // A refusal names the field, and changes nothing.
  await page.fill("#settings-json", JSON.stringify({ ...doc, concurrency: 0 }));
  await page.click("#settings-save");
  await page.locator("#settings-error", { hasText: "concurrency" }).waitFor();
  assert.equal(await page.locator("#settings-error").getAttribute("data-field"), "concurrency");
  assert.equal((await api("GET", "/v1/queues/hooks.order/settings")).json.version, created.version);

  await page.fill("#settings-json", JSON.stringify({ ...doc, concurrency: 8 }));
  await page.click("#settings-save");
  await page.locator("#banner", { hasText: `Saved the settings of hooks.order (version ${created.version + 1})` }).waitFor();
  await settingsCell("concurrency").filter({ hasText: "8" }).waitFor();
  assert.equal(await settingsCell("version").textContent(), String(created.version + 1));

  // Another change lands while the editor is open: saving is a conflict, not an overwrite.
  await page.locator("#edit-settings summary").click();
  const stale = JSON.parse(await page.inputValue("#settings-json"));
  const other = await api("PATCH", "/v1/queues/hooks.order/settings", { rate: "10/1m" });
  assert.equal(other.status, 200);
  await page.fill("#settings-json", JSON.stringify({ ...stale, concurrency: 6 }));
  await page.click("#settings-save");
  await page.locator("#settings-error", { hasText: "Changed meanwhile, reload" }).waitFor();
  const now = (await api("GET", "/v1/queues/hooks.order/settings")).json;
  assert.deepEqual([now.concurrency, now.rate, now.version], [8, "10/1m", other.json.version]);
  await page.click("#settings-reload");
  await settingsCell("version").filter({ hasText: String(other.json.version) }).waitFor();
  assert.equal(await settingsCell("rate").textContent(), "10/1m");
  await page.screenshot({ path: join(shots, "queue-settings.png"), fullPage: true });

  // The overview does not replace settings that exist: it sends to the queue's page.
  await page.goto(`${base}/#/`);
  await page.locator("#new-queue summary").click();
  await page.fill("#new-queue-name", "hooks.order");
  await page.fill("#new-queue-json", '{"concurrency": 2}');
  await page.click("#new-queue-create");
  await page.locator("#new-queue-error", { hasText: "has settings already" }).waitFor();
  assert.equal((await api("GET", "/v1/queues/hooks.order/settings")).json.concurrency, 8);
});

test("the created queue is paused and resumed with its buttons, and its settings removed", async () => {
  await page.goto(`${base}/#/queue/hooks.order`);
  await page.click("#pause-queue");
  await page.locator("#queue-paused").waitFor();
  assert.equal((await api("GET", "/v1/queues/hooks.order/settings")).json.paused, true);
  await page.click("#resume-queue");
  await page.locator("#pause-queue").waitFor();
  assert.equal((await api("GET", "/v1/queues/hooks.order/settings")).json.paused, false);
  await page.locator("#edit-settings summary").click();
  await page.click("#settings-remove");
  await page.locator("#banner", { hasText: "Removed the settings of hooks.order" }).waitFor();
  await page.locator("#settings", { hasText: "No settings" }).waitFor();
  assert.equal((await api("GET", "/v1/queues/hooks.order/settings")).status, 404);
  // With none, the editor sets them anew.
  await page.locator("#edit-settings summary").click();
  assert.equal(await page.inputValue("#settings-json"), "");
  await page.fill("#settings-json", '{"concurrency": 2}');
  await page.click("#settings-save");
  await settingsCell("source").filter({ hasText: "API" }).waitFor();
  assert.equal((await api("DELETE", "/v1/queues/hooks.order/settings")).status, 204);
});

test("a task with its own HTTP target is scheduled from the queue's page", async () => {
  const injected = '<img id="injected2" src="x" onerror="window.pwned = 2">';
  await page.goto(`${base}/#/queue/shop.form`);
  await page.locator("#schedule summary").click();
  assert.doesNotMatch(await page.locator("#view").innerText(), /\bnull\b|undefined/, "a missing part shows as text");
  await page.fill("#schedule-key", "order/90");
  await page.fill("#schedule-delay", "1h");
  await page.fill("#schedule-payload", '{"order_id": 90}');
  await page.fill("#target-url", "https://shop.example.com/hooks/90");
  await page.selectOption("#target-method", "PATCH");
  await page.fill("#target-headers", `X-Tenant: acme\n\nX-Note: ${injected}\n`);
  await page.fill("#target-timeout", "15s");
  await page.click("#schedule-send");
  await page.locator("#schedule-result", { hasText: "Task created" }).waitFor();
  const task = (await api("GET", `/v1/queues/shop.form/tasks/${encodeURIComponent("order/90")}`)).json;
  assert.deepEqual(task.payload, { order_id: 90 });
  assert.deepEqual(task.target.headers, { "X-Tenant": "acme", "X-Note": injected });
  assert.ok(Date.parse(task.due_at) - Date.now() > 50 * 60_000, `due in about an hour: ${task.due_at}`);
  await page.locator('#tasks tr[data-key="order/90"]').waitFor();

  await page.locator("#schedule-result a").click();
  const cell = (col) => page.locator(`#task-target td[data-col="${col}"]`);
  await cell("method").filter({ hasText: "PATCH" }).waitFor();
  assert.equal(await cell("url").textContent(), "https://shop.example.com/hooks/90");
  assert.equal(await cell("timeout").textContent(), "15s");
  assert.equal(await page.locator('#task-target li[data-header="X-Tenant"]').textContent(), "X-Tenant: acme");
  assert.equal(await page.locator('#task-target li[data-header="X-Note"]').textContent(), `X-Note: ${injected}`);
  assert.equal(await page.locator("#injected2").count(), 0, "a header typed in the form went in as HTML");

  // The same key again replaces the task.
  await page.goto(`${base}/#/queue/shop.form`);
  await page.locator("#schedule summary").click();
  assert.doesNotMatch(await page.locator("#view").innerText(), /\bnull\b|undefined/, "a missing part shows as text");
  await page.fill("#schedule-key", "order/90");
  await page.fill("#schedule-delay", "2h");
  await page.click("#schedule-send");
  await page.locator("#schedule-result", { hasText: "Task replaced" }).waitFor();
  assert.equal((await api("GET", `/v1/queues/shop.form/tasks/${encodeURIComponent("order/90")}`)).json.target, null);

  // Refusals, the server's and the form's own, name the field and store nothing.
  await page.locator("#schedule summary").click();
  await page.fill("#schedule-key", "order-91");
  await page.fill("#schedule-delay", "1h");
  await page.fill("#target-url", "https://shop.example.com/hooks/91");
  await page.fill("#target-headers", "Host: x");
  await page.click("#schedule-send");
  await page.locator("#schedule-error", { hasText: "target.headers" }).waitFor();
  assert.equal(await page.locator("#schedule-error").getAttribute("data-field"), "target.headers");
  await page.fill("#target-headers", "X-Tenant acme");
  await page.click("#schedule-send");
  await page.locator("#schedule-error", { hasText: "is not a header" }).waitFor();
  await page.fill("#target-headers", "");
  await page.fill("#schedule-payload", "{order: 91}");
  await page.click("#schedule-send");
  await page.locator("#schedule-error", { hasText: "payload: not JSON" }).waitFor();
  assert.equal((await api("GET", "/v1/queues/shop.form/tasks/order-91")).status, 404);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal((await api("DELETE", "/v1/queues/shop.form/tasks?state=all")).json.cancelled, 1);
});

test("it fits a phone screen", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/#/`);
  await page.locator('tr[data-queue="order.cancel"]').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px on a phone`);
  await page.screenshot({ path: join(shots, "overview-phone.png"), fullPage: true });
  // The forms too, open.
  await page.locator("#new-queue summary").click();
  await page.locator("#new-queue-name").waitFor();
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth) <= 1,
    "the new-queue form scrolls sideways on a phone");
  await page.goto(`${base}/#/queue/order.cancel`);
  await page.locator("#schedule summary").click();
  await page.locator("#edit-settings summary").click();
  await page.locator("#target-headers").waitFor();
  const formOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(formOverflow <= 1, `the queue's forms scroll sideways by ${formOverflow}px on a phone`);
  await page.screenshot({ path: join(shots, "queue-forms-phone.png"), fullPage: true });
});

test("a read-only token sees the data but no schedule, cancel, pause, settings or dead-task controls", async () => {
  assert.equal((await api("PUT", "/v1/queues/readonly.q/tasks/ro-1", { delay: "1h" })).status, 201);
  await page.goto(`${base}/#/`);
  await page.fill("#token", READ_ONLY);
  await page.click("#token-form button");
  // The page rendered for the earlier token may still be showing: wait for the new
  // token's view (it fails here if the control never goes).
  await page.locator("#new-queue-create").waitFor({ state: "detached" });
  await page.locator('#queues tr[data-queue="readonly.q"]').waitFor();
  assert.equal(await page.locator("#new-queue-create").count(), 0, "no queue creation without admin");
  await page.goto(`${base}/#/queue/readonly.q`);
  await page.locator('#tasks tr[data-key="ro-1"]').waitFor();
  await page.locator("#settings-forbidden").waitFor();
  await page.locator("#dead-forbidden").waitFor();
  for (const id of ["#schedule-send", "#pause-queue", "#resume-queue", "#settings-save", "#settings-remove", "#retry-all-dead"]) {
    assert.equal(await page.locator(id).count(), 0, `${id} is not shown to a read-only token`);
  }
  await page.goto(`${base}/#/task/readonly.q/ro-1`);
  await page.locator("#task-state").waitFor();
  assert.equal(await page.locator("#cancel-task").count(), 0, "no cancel without schedule");
  assert.equal(await page.locator("#banner").isHidden(), true, "no refusal met on the way");
  // The full token again: its controls come back.
  await page.fill("#token", TOKEN);
  await page.click("#token-form button");
  await page.locator("#cancel-task").waitFor();
});

test("a task's priority is shown on its page", async () => {
  assert.equal((await api("PUT", "/v1/queues/prio.q/tasks/escalate-1", { delay: "1h", priority: 7 })).status, 201);
  await page.goto(`${base}/#/task/prio.q/escalate-1`);
  await page.locator("#task-priority", { hasText: "7" }).waitFor();
});

test("a queue's group rate shows with its settings, and the settings editor keeps it", async () => {
  assert.equal((await api("PUT", "/v1/queues/sms.remind/settings", { group_rate: "10/1m" })).status, 201);
  await page.goto(`${base}/#/queue/sms.remind`);
  await settingsCell("group_rate").filter({ hasText: "10/1m leases per group at most" }).waitFor();
  await page.locator("#edit-settings summary").click();
  assert.equal(JSON.parse(await page.inputValue("#settings-json")).group_rate, "10/1m");
});

test("a queue's groups show with their counts and limit; a group shows its tasks; a task shows its group", async () => {
  await page.setViewportSize({ width: 1280, height: 860 });
  assert.equal((await api("PUT", "/v1/queues/flow.steps/settings", { group_concurrency: 1 })).status, 201);
  // wf-1: its first step due now, two more later; wf-2: one step later; one task in no group.
  const tasks = [["wf-1.step-1", "wf-1", null], ["wf-1.step-2", "wf-1", "1h"], ["wf-1.step-3", "wf-1", "2h"],
    ["wf-2.step-1", "wf-2", "1h"], ["no-group", null, "1h"]];
  for (const [key, group, delay] of tasks) {
    const body = { ...(group ? { group } : {}), ...(delay ? { delay } : {}) };
    assert.equal((await api("PUT", `/v1/queues/flow.steps/tasks/${key}`, body)).status, 201);
  }
  const leased = (await api("POST", "/v1/queues/flow.steps/lease", { max: 10 })).json.leases;
  assert.deepEqual(leased.map((l) => l.task.key), ["wf-1.step-1"]);

  await page.goto(`${base}/#/queue/flow.steps`);
  const cell = (group, col) => page.locator(`#groups tr[data-group="${group}"] td[data-col="${col}"]`);
  await cell("wf-1", "leased").filter({ hasText: "1" }).waitFor();
  assert.deepEqual(await page.locator("#groups tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.group)),
    ["wf-1", "wf-2"], "the groups by name, no group for the task without one");
  assert.deepEqual([await cell("wf-1", "scheduled").textContent(), await cell("wf-1", "dead").textContent()], ["2", "0"]);
  assert.match(await cell("wf-1", "leased").getAttribute("class"), /\bwarn\b/, "wf-1 is at its limit");
  assert.deepEqual([await cell("wf-2", "scheduled").textContent(), await cell("wf-2", "leased").textContent()], ["1", "0"]);
  assert.match(await page.locator("#groups-section h2").textContent(), /at most 1 leased per group/);
  assert.equal(await settingsCell("group_concurrency").textContent(), "1 leased per group at most");
  assert.equal(await page.locator("#groups-more").count(), 0, "one page of groups: no More");
  assert.equal(await page.locator('#tasks tr[data-key="wf-1.step-2"] td[data-col="group"]').textContent(), "wf-1");
  await page.screenshot({ path: join(shots, "queue-groups.png"), fullPage: true });
  // The settings editor keeps the limit: saving from it would otherwise drop it.
  await page.locator("#edit-settings summary").click();
  assert.equal(JSON.parse(await page.inputValue("#settings-json")).group_concurrency, 1);

  // A group's tasks, in due order, found among the queue's.
  await page.goto(`${base}/#/queue/flow.steps`);
  await page.locator('#groups tr[data-group="wf-1"] a').click();
  await page.waitForURL(/#\/group\/flow\.steps\/wf-1$/);
  const rows = page.locator("#group-tasks tbody tr");
  await waitFor("the three tasks of wf-1", async () => (await rows.count()) === 3);
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.key)), ["wf-1.step-1", "wf-1.step-2", "wf-1.step-3"]);
  assert.equal(await page.locator("#card-group-leased .value").textContent(), "1");
  assert.equal(await page.locator("#card-group-scheduled .value").textContent(), "2");
  assert.equal(await page.locator("#group-scan").getAttribute("data-complete"), "true");
  assert.match(await page.locator("#group-scan").textContent(), /^Found among all 5 tasks of the queue, read here in due order \(the list API has no group filter\)\.$/);
  await page.screenshot({ path: join(shots, "group.png"), fullPage: true });

  // A task's page shows its group, linked to the group's tasks; a task without one, none.
  await page.locator('#group-tasks tr[data-key="wf-1.step-2"] a').click();
  await page.locator("#task-group", { hasText: "wf-1" }).waitFor();
  await page.click("#task-group");
  await page.waitForURL(/#\/group\/flow\.steps\/wf-1$/);
  await page.goto(`${base}/#/task/flow.steps/no-group`);
  await page.locator("#task-group", { hasText: "–" }).waitFor();

  // More than a page of groups: "More" shows the next page, and stays shown.
  const many = Array.from({ length: 55 }, (_, i) => ({ key: `sync-${i}`, delay: "1h", group: `tenant-${String(i).padStart(2, "0")}` }));
  assert.equal((await api("POST", "/v1/queues/tenant.sync/tasks", { tasks: many })).status, 200);
  await page.goto(`${base}/#/queue/tenant.sync`);
  const groupRows = page.locator("#groups tbody tr");
  await waitFor("a first page of 50 groups", async () => (await groupRows.count()) === 50);
  assert.match(await page.locator("#groups-section h2").textContent(), /no group_concurrency/);
  await page.click("#groups-more");
  await waitFor("all 55 groups", async () => (await groupRows.count()) === 55);
  assert.equal(await page.locator('#groups tr[data-group="tenant-54"] td[data-col="scheduled"]').textContent(), "1");
  assert.equal(await page.locator("#groups-more").count(), 0, "the last page: no More");

  // A group's page reads 5,000 of the queue's tasks at a time and says so; "scan on"
  // reads on from there.
  const bulk = Array.from({ length: 5000 }, (_, i) => ({ key: `bulk-${i}`, delay: "1h" }));
  bulk.push({ key: "early", delay: "30m", group: "rare" }, { key: "late", delay: "2h", group: "rare" });
  assert.equal((await api("POST", "/v1/queues/bulk.scan/tasks", { tasks: bulk })).status, 200);
  await page.goto(`${base}/#/group/bulk.scan/rare`);
  await page.locator('#group-scan[data-complete="false"]').waitFor();
  assert.match(await page.locator("#group-scan").textContent(), /^Found among the queue's first 5000 tasks, .*there are more: scan on\.$/);
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.key)), ["early"]);
  await page.click("#group-scan-on");
  await page.locator('#group-scan[data-complete="true"]').waitFor();
  assert.match(await page.locator("#group-scan").textContent(), /^Found among the queue's last 2 tasks, /);
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.key)), ["late"]);
  assert.equal((await api("DELETE", "/v1/queues/bulk.scan/tasks?state=all")).json.cancelled, 5002);

  // A queue without groups shows no groups section.
  await page.goto(`${base}/#/queue/prio.q`);
  await page.locator("#tasks").waitFor();
  assert.equal(await page.locator("#groups-section").count(), 0);

  await api("POST", `/v1/leases/${leased[0].lease_id}/ack`, { outcome: "done" });
  assert.equal((await api("DELETE", "/v1/queues/flow.steps/tasks?state=all")).json.cancelled, 4);
  assert.equal((await api("DELETE", "/v1/queues/tenant.sync/tasks?state=all")).json.cancelled, 55);
  assert.equal((await api("DELETE", "/v1/queues/flow.steps/settings")).status, 204);
});

test("the page asked nothing of any other host and threw no error", () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(pageErrors, []);
});
