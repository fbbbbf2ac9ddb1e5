// The dashboard in headless Chromium against the real `punctual serve`, started with a
// token on a free port. Guards against a dashboard that cannot work with auth (the page
// must load without the token, every data call must send it), counts that do not follow
// the API, buttons (cancel, retry, retry all) that do not do what they say, and a task
// list whose tag filter does not filter, pause/resume buttons that do not pause, and a
// task's HTTP target that is not shown or whose headers (an API caller's text) go in
// as HTML.
//
// Needs: the binary (`cargo build -p punctual-cli`; PUNCTUAL_BIN overrides the path),
// Debian's chromium at /usr/bin/chromium (CHROMIUM overrides), `npm ci` here.
// Saves screenshots to docs/screenshots/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, mkdirSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.PUNCTUAL_BIN || join(root, "target/debug/punctual");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = join(root, "docs/screenshots");
const TOKEN = "s3cret-dashboard";
const PATIENCE = 20_000;

let server, base, work, context, page, serverLog = "";
const foreign = [];  // requests that left the server: there must be none (no CDN, no internet)
const pageErrors = [];

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function api(method, path, body) {
  const resp = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await resp.text();
  return { status: resp.status, json: text ? JSON.parse(text) : null };
}

async function waitFor(what, check) {
  const deadline = Date.now() + PATIENCE;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- server log ---\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  assert.ok(existsSync(bin), `no punctual binary at ${bin}: run cargo build -p punctual-cli first`);
  assert.ok(existsSync(browserPath), `no Chromium at ${browserPath}: apt-get install -y chromium`);
  mkdirSync(shots, { recursive: true });
  work = mkdtempSync(join(tmpdir(), "punctual-browser-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(bin, ["serve", "--listen", `127.0.0.1:${port}`, "--data", join(work, "data"), "--token", TOKEN],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH } });
  server.stdout.on("data", (d) => { serverLog += d; });
  server.stderr.on("data", (d) => { serverLog += d; });
  await waitFor("the server's /healthz", async () => {
    try { return (await fetch(`${base}/healthz`)).ok; } catch { return false; }
  });
  context = await chromium.launchPersistentContext(join(work, "chromium-profile"), {
    executablePath: browserPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 860 },
  });
  page = context.pages()[0] || await context.newPage();
  page.on("dialog", (dialog) => dialog.accept());
  page.on("request", (request) => { if (!request.url().startsWith(base)) foreign.push(request.url()); });
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.setDefaultTimeout(PATIENCE);
});

after(async () => {
  if (context) await context.close();
  if (server) server.kill("SIGKILL");
  if (work) rmSync(work, { recursive: true, force: true });
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

test("it fits a phone screen", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/#/`);
  await page.locator('tr[data-queue="order.cancel"]').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px on a phone`);
  await page.screenshot({ path: join(shots, "overview-phone.png"), fullPage: true });
});

test("the page asked nothing of any other host and threw no error", () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(pageErrors, []);
});
