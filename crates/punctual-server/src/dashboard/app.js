// punctual dashboard: vanilla JS, no build step, no external requests.
//
// Views (hash routes): "#/" queues overview, "#/queue/<q>" one queue (its task list
// filtered by "?tag=&state=&cursor=" after it, its groups when it has any),
// "#/group/<q>/<group>" one group's tasks ("?cursor=" where its scan starts),
// "#/task/<q>/<key>" one task. The filter lives in the hash, so a filtered list
// survives the refresh and can be linked to. Every data call goes to the /v1 API with the token saved in localStorage
// ("punctual.token") as a Bearer header. Data is put into the page with textContent
// only, never as HTML, so task keys and payloads cannot inject markup. Forms (see
// "forms") create a queue, edit or remove its settings and schedule a task.
//
// Scoped tokens: the page asks GET /v1/access what the token may do (permissions and
// queue patterns) and shows only the controls that allows: no schedule form or cancel
// button without `schedule` on the queue, no settings, pause, purge or dead-task
// controls without `admin`. The server refuses anything else anyway (403).
"use strict";

const TOKEN_KEY = "punctual.token";
const REFRESH_MS = 5000;
const view = document.getElementById("view");
const banner = document.getElementById("banner");
let timer = null;
let chartRange = "hour";
let keepBanner = false;
// What the token may do ({permissions, queues}); null until asked, after a new token.
let grant = null;

// ---- helpers ------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) el.setAttribute(name, value);
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const enc = encodeURIComponent;

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
    this.field = body && body.error && body.error.field;
  }
}

// `extra` adds request headers (`If-Match` of a settings change).
async function api(method, path, body, extra) {
  const headers = { Accept: "application/json", ...(extra || {}) };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  if (!resp.ok) throw new ApiError(resp.status, json);
  return json;
}

// Errors stay until the next successful load; news of an action fades after 8 s.
let bannerTimer = null;
function showBanner(message, kind) {
  clearTimeout(bannerTimer);
  if (!message) { banner.hidden = true; banner.textContent = ""; return; }
  banner.hidden = false;
  banner.className = kind === "info" ? "banner info" : "banner";
  banner.textContent = message;
  if (kind === "info") bannerTimer = setTimeout(() => showBanner(null), 8000);
}

function explain(err) {
  if (err.status === 401) return "This server needs a token: type it in the token field above and press Save.";
  if (err.status === 403) return `Forbidden: ${err.message}`;
  return `Error: ${err.message}`;
}

function ms(n) {
  if (n === null || n === undefined) return "–";
  if (n < 1000) return `${n} ms`;
  return duration(n);
}

function duration(msec) {
  const s = Math.round(msec / 1000);
  if (s < 60) return `${(msec / 1000).toFixed(msec < 10000 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m % 60} min`;
  return `${Math.floor(hrs / 24)} d ${hrs % 24} h`;
}

function relative(iso) {
  if (!iso) return "–";
  const delta = Date.parse(iso) - Date.now();
  if (Math.abs(delta) < 1000) return "now";
  return delta > 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
}

function shortTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function sparkline(values) {
  const w = 120, hgt = 26, max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(hgt - 2 - (v / max) * (hgt - 4)).toFixed(1)}`);
  return svg("svg", { class: "spark", viewBox: `0 0 ${w} ${hgt}`, preserveAspectRatio: "none", role: "img",
    "aria-label": `leases per 10 s, last 15 min, max ${max}` },
    svg("polygon", { points: `0,${hgt} ${pts.join(" ")} ${w},${hgt}` }),
    svg("polyline", { points: pts.join(" ") }));
}

function perMinute(fired, slotMs) {
  const recent = fired.slice(-6).reduce((a, b) => a + b, 0);
  return Math.round((recent * 60000) / (slotMs * 6));
}

// ---- access -------------------------------------------------------------------------

// The token's grant. A server older than GET /v1/access (404) lets every token do
// everything.
async function loadGrant() {
  try {
    return await api("GET", "/v1/access");
  } catch (err) {
    if (err.status === 404) return { permissions: ["read", "schedule", "work", "admin"], queues: ["*"] };
    throw err;
  }
}

// Whether a queue name pattern matches: `*` is any run of characters, the rest itself.
function patternMatches(pattern, queue) {
  const escaped = pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`).test(queue);
}

// Whether the token holds `permission` on `queue` (no queue: on some queue).
function may(permission, queue) {
  if (!grant || !grant.permissions.includes(permission)) return false;
  return queue === undefined || grant.queues.some((p) => patternMatches(p, queue));
}

// ---- views --------------------------------------------------------------------------

async function overview() {
  const { queues } = await api("GET", "/v1/queues");
  const details = await Promise.all(queues.map(async (q) => {
    const [detail, activity] = await Promise.all([
      api("GET", `/v1/queues/${enc(q.name)}`),
      api("GET", `/v1/queues/${enc(q.name)}/activity`),
    ]);
    return { detail, activity };
  }));
  const totals = queues.reduce((t, q) => ({ scheduled: t.scheduled + q.scheduled, leased: t.leased + q.leased, dead: t.dead + q.dead }),
    { scheduled: 0, leased: 0, dead: 0 });
  const worst = Math.max(0, ...details.map((d) => d.detail.oldest_overdue_ms));
  const rows = details.map(({ detail: d, activity: a }) => h("tr", { "data-queue": d.name },
    h("td", {}, h("a", { href: `#/queue/${enc(d.name)}` }, d.name),
      d.paused ? h("span", { class: "pill paused", "data-col": "paused" }, "paused") : null),
    h("td", { class: "num", "data-col": "scheduled" }, d.scheduled),
    h("td", { class: "num", "data-col": "leased" }, d.leased),
    h("td", { class: d.dead > 0 ? "num bad" : "num", "data-col": "dead" }, d.dead),
    h("td", { class: "hide-narrow" }, relative(d.next_due_at)),
    h("td", { class: overdueClass(d.oldest_overdue_ms) + " num" }, d.oldest_overdue_ms ? ms(d.oldest_overdue_ms) : "–"),
    h("td", { class: "num hide-narrow" }, `${ms(d.lag_ms.p50)} / ${ms(d.lag_ms.p99)}`),
    h("td", { class: "hide-narrow" }, sparkline(a.fired), h("span", { class: "rate" }, `${perMinute(a.fired, a.slot_ms)}/min`)),
  ));
  return [
    h("h1", {}, "Queues"),
    h("div", { class: "cards" },
      card("Queues", queues.length, "queues"),
      card("Scheduled", totals.scheduled, "scheduled"),
      card("Leased", totals.leased, "leased"),
      card("Dead", totals.dead, "dead"),
      card("Oldest overdue", worst ? ms(worst) : "–", "overdue")),
    h("h2", {}, "By queue"),
    queues.length === 0
      ? h("div", { class: "panel muted", id: "no-queues" }, "No tasks yet. Schedule one: PUT /v1/queues/{queue}/tasks/{key}, or create a queue below.")
      : h("div", { class: "panel" }, h("table", { id: "queues" },
        h("thead", {}, h("tr", {},
          h("th", {}, "Queue"), h("th", { class: "num" }, "Scheduled"), h("th", { class: "num" }, "Leased"),
          h("th", { class: "num" }, "Dead"), h("th", { class: "hide-narrow" }, "Next due"),
          h("th", { class: "num" }, "Oldest overdue"), h("th", { class: "num hide-narrow" }, "Lag p50 / p99"),
          h("th", { class: "hide-narrow" }, "Throughput (15 min)"))),
        h("tbody", {}, rows))),
    may("admin") ? newQueueForm() : null,
  ];
}

function overdueClass(overdueMs) {
  if (overdueMs >= 60000) return "bad";
  if (overdueMs >= 5000) return "warn";
  return "";
}

function card(label, value, id) {
  return h("div", { class: "card", id: `card-${id}` }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

// The hash of a queue's page with its task list filtered by `filter` ({tag, state, cursor}).
function queueHash(queue, filter) {
  const params = new URLSearchParams();
  for (const name of ["tag", "state", "cursor"]) if (filter[name]) params.set(name, filter[name]);
  const query = params.toString();
  return `#/queue/${enc(queue)}${query ? `?${query}` : ""}`;
}

// One page of the queue's tasks, in due order, as the filter says.
async function taskList(queue, filter) {
  const params = new URLSearchParams({ limit: "50" });
  for (const name of ["tag", "state", "cursor"]) if (filter[name]) params.set(name, filter[name]);
  return api("GET", `/v1/queues/${enc(queue)}/tasks?${params}`);
}

function taskFilterForm(queue, filter) {
  const tag = h("input", { id: "task-tag", name: "tag", placeholder: "tag", "aria-label": "tag", value: filter.tag || "" });
  const state = h("select", { id: "task-state-filter", name: "state", "aria-label": "state" },
    ["", "scheduled", "leased", "dead"].map((s) => h("option", { value: s, selected: s === (filter.state || "") }, s || "any state")));
  return h("form", { id: "task-filter", class: "filter", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    location.hash = queueHash(queue, { tag: tag.value.trim(), state: state.value });
  } }, tag, state, h("button", { type: "submit" }, "Filter"),
  filter.tag || filter.state ? h("a", { href: queueHash(queue, {}), id: "task-filter-clear" }, "clear") : null);
}

// The queue's settings, or null when it has none (built-in defaults, pull workers).
async function queueSettings(q) {
  try {
    return await api("GET", `/v1/queues/${q}/settings`);
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

// The settings panel: what the queue runs with, read-only for a config-file queue.
function settingsPanel(settings) {
  if (!settings) return h("div", { class: "panel muted", id: "settings" }, "No settings: built-in defaults, drained by pull workers. Set them below, with PUT /v1/queues/{queue}/settings or punctual queue set.");
  const action = settings.action ? settings.action.kind : "none (pull workers)";
  const backoff = settings.defaults.backoff;
  const row = (label, value, col) => h("tr", {}, h("th", {}, label), h("td", { "data-col": col }, value));
  return h("div", { class: "panel", id: "settings" }, h("table", { class: "settings" }, h("tbody", {},
    row("Source", settings.source === "config" ? "config file (change it there)" : "API", "source"),
    row("Action", action, "action"),
    settings.action ? row("Concurrency", settings.concurrency, "concurrency") : null,
    settings.action ? row("Rate", settings.rate || "unlimited", "rate") : null,
    row("Group concurrency", settings.group_concurrency ? `${settings.group_concurrency} leased per group at most`
      : "unlimited (groups only take turns)", "group_concurrency"),
    settings.group_rate ? row("Group rate", `${settings.group_rate} leases per group at most`, "group_rate") : null,
    row("Max attempts", settings.defaults.max_attempts, "max_attempts"),
    row("Backoff", `${backoff.initial} ×${backoff.factor} up to ${backoff.max}`, "backoff"),
    row("Repeat", settings.defaults.repeat ? JSON.stringify(settings.defaults.repeat) : "none", "repeat"),
    row("Task targets", settings.targets === false ? "refused" : "allowed", "targets"),
    row("Version", settings.version, "version"))));
}

async function queuePage(queue, filter) {
  const q = enc(queue);
  // Dead tasks and settings need `admin`; without it they are not asked for.
  const admin = may("admin", queue);
  const [detail, activity, dead, upcoming, tasks, settings, groups] = await Promise.all([
    api("GET", `/v1/queues/${q}`),
    api("GET", `/v1/queues/${q}/activity`),
    admin ? api("GET", `/v1/queues/${q}/dead?limit=100`) : { tasks: [] },
    upcomingTasks(queue, chartRange),
    taskList(queue, filter),
    admin ? queueSettings(q) : null,
    queueGroups(queue),
  ]);
  const pauseButton = !admin ? null : detail.paused
    ? h("button", { id: "resume-queue", onclick: (e) => act(e, "POST", `/v1/queues/${q}/resume`, `Resumed ${queue}`) }, "Resume")
    : h("button", { class: "secondary", id: "pause-queue",
      onclick: (e) => confirmThen(`Pause ${queue}? Nothing of it is leased or delivered until it is resumed.`,
        () => act(e, "POST", `/v1/queues/${q}/pause`, `Paused ${queue}`)) }, "Pause");
  const taskRows = tasks.tasks.map((t) => h("tr", { "data-key": t.key },
    h("td", {}, h("a", { href: `#/task/${q}/${enc(t.key)}` }, t.key)),
    h("td", {}, h("span", { class: `pill ${t.state}` }, t.state)),
    h("td", {}, relative(t.due_at)),
    h("td", { class: "num hide-narrow" }, t.attempts),
    h("td", { class: "hide-narrow", "data-col": "group" }, t.group ? h("a", { href: groupHash(queue, t.group) }, t.group) : ""),
    h("td", { class: "hide-narrow", "data-col": "tags" }, t.tags.join(", ")),
  ));
  const filtered = [filter.state, filter.tag && `tagged ${filter.tag}`].filter(Boolean).join(", ");
  const deadRows = dead.tasks.map((t) => h("tr", { "data-key": t.key },
    h("td", {}, h("a", { href: `#/task/${q}/${enc(t.key)}` }, t.key)),
    h("td", { class: "num" }, t.attempts),
    h("td", { class: "hide-narrow" }, shortTime(t.updated_at)),
    h("td", { class: "hide-narrow" }, t.last_error || ""),
    h("td", {}, h("div", { class: "actions" },
      h("button", { class: "retry", onclick: (e) => act(e, "POST", `/v1/queues/${q}/dead/${enc(t.key)}/retry`, `Retried ${t.key}`) }, "Retry"),
      h("button", { class: "danger delete", onclick: (e) => confirmThen(`Delete dead task ${t.key}?`, () => act(e, "DELETE", `/v1/queues/${q}/dead/${enc(t.key)}`, `Deleted ${t.key}`)) }, "Delete"))),
  ));
  const recentRows = activity.recent.map((o) => h("tr", {},
    h("td", {}, h("a", { href: `#/task/${q}/${enc(o.key)}` }, o.key)),
    h("td", {}, h("span", { class: `pill ${o.outcome}` }, o.outcome)),
    h("td", { class: "num" }, ms(o.lag_ms)),
    h("td", { class: "num hide-narrow" }, ms(o.duration_ms)),
    h("td", { class: "num hide-narrow" }, o.attempt || "–"),
    h("td", {}, relative(o.at)),
    h("td", { class: "hide-narrow" }, o.error || ""),
  ));
  return [
    h("h1", {}, h("a", { href: "#/" }, "Queues"), " / ", queue, " ",
      detail.paused ? h("span", { class: "pill paused", id: "queue-paused" }, "paused") : null, " ", pauseButton),
    h("div", { class: "cards" },
      card("Scheduled", detail.scheduled, "scheduled"),
      card("Leased", detail.leased, "leased"),
      card("Dead", detail.dead, "dead"),
      card("Next due", relative(detail.next_due_at), "next-due"),
      card("Oldest overdue", detail.oldest_overdue_ms ? ms(detail.oldest_overdue_ms) : "–", "overdue"),
      card("Lag p50 / p99", `${ms(detail.lag_ms.p50)} / ${ms(detail.lag_ms.p99)}`, "lag"),
      card("Leases / min", perMinute(activity.fired, activity.slot_ms), "rate")),
    h("h2", {}, "Settings"),
    admin ? settingsPanel(settings) : needs("admin", "settings"),
    admin && (!settings || settings.source === "api") ? settingsEditor(queue, settings) : null,
    groupsSection(queue, groups, admin ? (settings ? settings.group_concurrency : null) : undefined),
    h("h2", {}, "Upcoming"),
    h("div", { class: "panel" },
      h("div", { class: "chart-head" },
        rangeButton("hour", "Next hour"), rangeButton("day", "Next day"),
        h("span", { class: "muted" }, upcoming.note)),
      chart(upcoming, chartRange)),
    h("h2", {}, "Tasks", filtered ? h("span", { class: "muted" }, ` (${filtered})`) : null),
    scheduledNote(queue),
    may("schedule", queue) ? scheduleForm(queue) : null,
    h("div", { class: "panel" },
      taskFilterForm(queue, filter),
      tasks.tasks.length === 0
        ? h("p", { class: "muted", id: "tasks-empty" }, filter.cursor ? "No more tasks." : "No tasks.")
        : h("table", { id: "tasks" },
          h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "State"), h("th", {}, "Due"),
            h("th", { class: "num hide-narrow" }, "Attempts"), h("th", { class: "hide-narrow" }, "Group"),
            h("th", { class: "hide-narrow" }, "Tags"))),
          h("tbody", {}, taskRows)),
      h("div", { class: "actions" },
        filter.cursor ? h("a", { href: queueHash(queue, { ...filter, cursor: null }) }, "first page") : null,
        tasks.next_cursor ? h("a", { id: "tasks-next", href: queueHash(queue, { ...filter, cursor: tasks.next_cursor }) }, "next page") : null)),
    h("h2", {}, `Dead tasks (${detail.dead})`,
      admin && detail.dead > 0 ? h("button", { class: "retry", id: "retry-all-dead",
        onclick: (e) => confirmThen(`Retry all ${detail.dead} dead tasks of ${queue}?`,
          () => act(e, "POST", `/v1/queues/${q}/dead/retry`, (answer) => `Retried ${answer.retried} dead tasks`, undefined, {})) },
      "Retry all") : null),
    !admin ? needs("admin", "dead") : dead.tasks.length === 0
      ? h("div", { class: "panel muted", id: "dead-empty" }, "No dead tasks.")
      : h("div", { class: "panel" }, h("table", { id: "dead" },
        h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", { class: "num" }, "Attempts"),
          h("th", { class: "hide-narrow" }, "Died"), h("th", { class: "hide-narrow" }, "Last error"), h("th", {}, ""))),
        h("tbody", {}, deadRows))),
    h("h2", {}, "Recent outcomes"),
    activity.recent.length === 0
      ? h("div", { class: "panel muted" }, "Nothing has run on this server yet.")
      : h("div", { class: "panel" }, h("table", { id: "recent" },
        h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Outcome"), h("th", { class: "num" }, "Lag"),
          h("th", { class: "num hide-narrow" }, "Took"), h("th", { class: "num hide-narrow" }, "Try"),
          h("th", {}, "When"), h("th", { class: "hide-narrow" }, "Error"))),
        h("tbody", {}, recentRows))),
  ];
}

// In place of what the token may not see.
function needs(permission, what) {
  return h("div", { class: "panel muted", id: `${what}-forbidden` }, `This token lacks the ${permission} permission on this queue.`);
}

function rangeButton(range, label) {
  return h("button", { class: range === chartRange ? "" : "secondary", onclick: () => { chartRange = range; render(); } }, label);
}

// Scheduled tasks due before the horizon, in due order, at most 5 pages of 1,000.
async function upcomingTasks(queue, range) {
  const now = Date.now();
  const span = range === "hour" ? 3600e3 : 86400e3;
  const bins = range === "hour" ? 60 : 48;
  const counts = new Array(bins).fill(0);
  let dueNow = 0, seen = 0, cursor = null, truncated = false;
  for (let page = 0; page < 5; page++) {
    const qs = `state=scheduled&limit=1000${cursor ? `&cursor=${enc(cursor)}` : ""}`;
    const resp = await api("GET", `/v1/queues/${enc(queue)}/tasks?${qs}`);
    let past = false;
    for (const t of resp.tasks) {
      const at = Date.parse(t.due_at) - now;
      if (at >= span) { past = true; break; }
      seen++;
      if (at <= 0) dueNow++;
      else counts[Math.min(bins - 1, Math.floor((at / span) * bins))]++;
    }
    cursor = resp.next_cursor;
    if (past || !cursor) break;
    if (page === 4) truncated = true;
  }
  const note = `${seen} task(s) due within the next ${range === "hour" ? "hour" : "day"}` +
    (dueNow ? `, ${dueNow} due now` : "") + (truncated ? " (first 5,000 only)" : "");
  return { counts, span, note };
}

function chart(data, range) {
  const w = 1000, hgt = 200, pad = 24, max = Math.max(1, ...data.counts);
  const bw = (w - pad) / data.counts.length;
  const bars = data.counts.map((n, i) => {
    const bh = (n / max) * (hgt - 2 * pad);
    const minutes = (i * data.span) / data.counts.length / 60000;
    return svg("rect", { class: "bar", x: (pad + i * bw + 0.5).toFixed(1), y: (hgt - pad - bh).toFixed(1),
      width: Math.max(1, bw - 1).toFixed(1), height: bh.toFixed(1) },
      svg("title", {}, `${n} task(s) at +${minutes >= 60 ? `${(minutes / 60).toFixed(1)} h` : `${Math.round(minutes)} min`}`));
  });
  const ticks = range === "hour" ? [[0, "now"], [0.25, "+15m"], [0.5, "+30m"], [0.75, "+45m"], [1, "+1h"]]
    : [[0, "now"], [0.25, "+6h"], [0.5, "+12h"], [0.75, "+18h"], [1, "+24h"]];
  return svg("svg", { class: "chart", id: "upcoming-chart", viewBox: `0 0 ${w} ${hgt}`, role: "img",
    "aria-label": "tasks by due time" },
    svg("line", { x1: pad, y1: hgt - pad, x2: w, y2: hgt - pad }),
    svg("text", { x: 0, y: pad }, max),
    ...bars,
    ...ticks.map(([f, label]) => svg("text", { x: Math.min(w - 34, pad + f * (w - pad) - (f ? 16 : 0)), y: hgt - 6 }, label)));
}

async function taskPage(queue, key) {
  let task;
  try {
    task = await api("GET", `/v1/queues/${enc(queue)}/tasks/${enc(key)}`);
  } catch (err) {
    if (err.status !== 404) throw err;
    return [
      h("h1", {}, h("a", { href: `#/queue/${enc(queue)}` }, queue), " / ", key),
      h("div", { class: "panel", id: "task-missing" }, "No such task: it was never scheduled, or it is done or cancelled."),
    ];
  }
  const path = `/v1/queues/${enc(queue)}/tasks/${enc(key)}`;
  const fields = [
    ["State", h("span", { class: `pill ${task.state}`, id: "task-state" }, task.state)],
    ["Due", `${shortTime(task.due_at)} (${relative(task.due_at)})`],
    ["Attempts", `${task.attempts} of ${task.max_attempts}`],
    ["Repeat", task.repeat ? JSON.stringify(task.repeat) : "–"],
    ["Tags", task.tags.length
      ? task.tags.flatMap((t, i) => [i ? ", " : "", h("a", { href: queueHash(queue, { tag: t }), class: "tag" }, t)])
      : "–"],
    ["Priority", h("span", { id: "task-priority" }, String(task.priority ?? 0))],
    ["Group", task.group ? h("a", { id: "task-group", href: groupHash(queue, task.group) }, task.group)
      : h("span", { id: "task-group" }, "–")],
    ["Version", task.version],
    ["Created", shortTime(task.created_at)],
    ["Updated", shortTime(task.updated_at)],
    ["Lease expires", task.lease_expires_at ? shortTime(task.lease_expires_at) : "–"],
    ["Last error", task.last_error || "–"],
  ];
  const buttons = [];
  if (may("schedule", queue)) {
    buttons.push(h("button", { class: "danger", id: "cancel-task",
      onclick: (e) => confirmThen(`Cancel ${key}?`, () => act(e, "DELETE", path, `Cancelled ${key}`, `#/queue/${enc(queue)}`)) }, "Cancel task"));
  }
  if (task.state === "dead" && may("admin", queue)) {
    buttons.push(h("button", { class: "retry", onclick: (e) => act(e, "POST", `/v1/queues/${enc(queue)}/dead/${enc(key)}/retry`, `Retried ${key}`) }, "Retry"));
  }
  return [
    h("h1", {}, h("a", { href: `#/queue/${enc(queue)}` }, queue), " / ", key),
    h("div", { class: "panel" },
      h("dl", { class: "task" }, fields.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("div", { class: "actions" }, buttons),
      task.target ? [h("h2", {}, "HTTP target"), targetTable(task.target)] : null,
      h("h2", {}, "Payload"),
      h("pre", {}, JSON.stringify(task.payload, null, 2))),
  ];
}

// ---- groups -------------------------------------------------------------------------
//
// A queue's page lists its groups (GET /v1/queues/{queue}/groups, GROUPS_PAGE at a
// time; "More" shows one page more, kept across the refresh). The task list API has no
// group filter (no store lists a queue by group), so a group's page finds the group's
// tasks here, in the browser: it reads the queue's task list, GROUP_SCAN_PAGES pages of
// 1,000 in due order, keeps the group's tasks and says how far it looked; "scan on"
// carries on from where it stopped.

const GROUPS_PAGE = 50;
const GROUP_SCAN_PAGES = 5;
// Pages of groups shown on the page of `queue`; back to 1 on another queue's page.
let groupsShown = { queue: null, pages: 1 };

function groupHash(queue, group, cursor) {
  return `#/group/${enc(queue)}/${enc(group)}${cursor ? `?cursor=${enc(cursor)}` : ""}`;
}

// The queue's groups, as many pages as shown, and the cursor after them; `error` when
// the store cannot list them (the rest of the page still shows).
async function queueGroups(queue) {
  if (groupsShown.queue !== queue) groupsShown = { queue, pages: 1 };
  const groups = [];
  let cursor = null;
  try {
    for (let page = 0; page < groupsShown.pages; page++) {
      const params = new URLSearchParams({ limit: String(GROUPS_PAGE) });
      if (cursor) params.set("cursor", cursor);
      const answer = await api("GET", `/v1/queues/${enc(queue)}/groups?${params}`);
      groups.push(...answer.groups);
      cursor = answer.next_cursor;
      if (!cursor) break;
    }
  } catch (err) {
    return { groups, cursor: null, error: err };
  }
  return { groups, cursor, error: null };
}

// The queue's groups with their tasks by state, or nothing when it has none. `limit`:
// the queue's group_concurrency, null for none, undefined when not known (no admin).
function groupsSection(queue, list, limit) {
  if (list.error) {
    return h("section", { id: "groups-section" }, h("h2", {}, "Groups"),
      h("div", { class: "panel muted", id: "groups-error" }, `The groups cannot be listed: ${list.error.message}`));
  }
  if (list.groups.length === 0) return null;
  const said = limit ? ` (at most ${limit} leased per group)` : limit === null ? " (no group_concurrency: they take turns)" : "";
  const rows = list.groups.map((g) => {
    const full = Boolean(limit) && g.leased >= limit;
    return h("tr", { "data-group": g.group },
      h("td", {}, h("a", { href: groupHash(queue, g.group) }, g.group)),
      h("td", { class: "num", "data-col": "scheduled" }, g.scheduled),
      h("td", { class: full ? "num warn" : "num", "data-col": "leased",
        title: full ? "at the queue's group_concurrency: the group's scheduled tasks wait" : null }, g.leased),
      h("td", { class: g.dead > 0 ? "num bad" : "num", "data-col": "dead" }, g.dead));
  });
  return h("section", { id: "groups-section" },
    h("h2", {}, "Groups", h("span", { class: "muted" }, said)),
    h("div", { class: "panel" },
      h("table", { id: "groups" },
        h("thead", {}, h("tr", {}, h("th", {}, "Group"), h("th", { class: "num" }, "Scheduled"),
          h("th", { class: "num" }, "Leased"), h("th", { class: "num" }, "Dead"))),
        h("tbody", {}, rows)),
      list.cursor ? h("div", { class: "actions" }, h("button", { class: "secondary", id: "groups-more",
        onclick: () => { groupsShown.pages += 1; render(); } }, "More")) : null));
}

// One group's tasks, found among the queue's tasks from `cursor` on (see above).
async function groupPage(queue, group, cursor) {
  const q = enc(queue);
  const found = [];
  let next = cursor, scanned = 0;
  for (let page = 0; page < GROUP_SCAN_PAGES; page++) {
    const params = new URLSearchParams({ limit: "1000" });
    if (next) params.set("cursor", next);
    const answer = await api("GET", `/v1/queues/${q}/tasks?${params}`);
    scanned += answer.tasks.length;
    found.push(...answer.tasks.filter((t) => t.group === group));
    next = answer.next_cursor;
    if (!next) break;
  }
  const count = (state) => found.filter((t) => t.state === state).length;
  const rows = found.map((t) => h("tr", { "data-key": t.key },
    h("td", {}, h("a", { href: `#/task/${q}/${enc(t.key)}` }, t.key)),
    h("td", {}, h("span", { class: `pill ${t.state}` }, t.state)),
    h("td", {}, relative(t.due_at)),
    h("td", { class: "num hide-narrow" }, t.attempts),
    h("td", { class: "num hide-narrow" }, t.priority ?? 0)));
  const scope = cursor ? (next ? `${scanned} tasks of the queue after the last scan` : `the queue's last ${scanned} tasks`)
    : (next ? `the queue's first ${scanned} tasks` : `all ${scanned} tasks of the queue`);
  return [
    h("h1", {}, h("a", { href: "#/" }, "Queues"), " / ", h("a", { href: `#/queue/${q}` }, queue), " / group ",
      h("span", { id: "group-name" }, group)),
    h("div", { class: "cards" },
      card("Scheduled", count("scheduled"), "group-scheduled"),
      card("Leased", count("leased"), "group-leased"),
      card("Dead", count("dead"), "group-dead")),
    h("p", { class: "muted", id: "group-scan", "data-complete": next ? "false" : "true" },
      `Found among ${scope}, read here in due order (the list API has no group filter)`,
      next ? ["; there are more: ", h("a", { id: "group-scan-on", href: groupHash(queue, group, next) }, "scan on"), "."]
        : cursor ? [" (", h("a", { href: groupHash(queue, group) }, "from the start"), ")."] : "."),
    h("div", { class: "panel" }, found.length === 0
      ? h("p", { class: "muted", id: "group-tasks-empty" }, "No task of this group here.")
      : h("table", { id: "group-tasks" },
        h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "State"), h("th", {}, "Due"),
          h("th", { class: "num hide-narrow" }, "Attempts"), h("th", { class: "num hide-narrow" }, "Priority"))),
        h("tbody", {}, rows))),
  ];
}

// Where the server delivers a task that carries its own HTTP target. The URL and the
// headers come from whoever scheduled the task: as text only, like everything here.
function targetTable(target) {
  const headers = Object.entries(target.headers || {});
  const row = (label, value, col) => h("tr", {}, h("th", {}, label), h("td", { "data-col": col }, value));
  const custom = target.body !== undefined && target.body !== null;
  const body = custom ? "custom (set by the task)" : "the standard delivery body";
  return h("table", { class: "settings", id: "task-target" }, h("tbody", {},
    row("Method", target.method, "method"),
    row("URL", target.url, "url"),
    row("Headers", headers.length
      ? h("ul", { class: "headers" }, headers.map(([name, value]) => h("li", { "data-header": name }, h("code", {}, name), ": ", value)))
      : "none", "headers"),
    row("Timeout", target.timeout, "timeout"),
    row("Body", body, "body")));
}

// ---- forms --------------------------------------------------------------------------
//
// The new-queue form, a queue's settings editor and its schedule form each sit in a
// <details> that starts closed. While one is open the periodic refresh leaves the page
// alone (it would close the form and drop what was typed). A refused request leaves the
// form as it was, with the server's message beside it naming the field at fault.

// The fields a settings document sets; the rest of what GET answers is shown, not set.
const SETTABLE = ["defaults", "action", "concurrency", "rate", "shards", "targets", "group_concurrency", "group_rate"];
// Settable fields put in the editor only when set: a queue that never used them keeps a
// short document.
const SHOWN_WHEN_SET = ["group_concurrency", "group_rate"];
const WEBHOOK_EXAMPLE = '{"action": {"kind": "webhook", "url": "https://…", "secret_env": "HOOK_SECRET"}, "concurrency": 4}';
const METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"];

// The task of the last schedule sent from this page, shown until the page changes.
let lastScheduled = null;

// A mistake found before anything is sent, named by the field of the request at fault.
class FormError extends Error {
  constructor(field, message, link) {
    super(message);
    this.field = field;
    this.link = link;
  }
}

// The settable part of `settings`, as the editor's text. The server never answers a
// secret (a document names environment variables of the server instead), so nothing
// here can be one.
function settingsText(settings) {
  const doc = {};
  for (const field of SETTABLE) {
    if (settings[field] === undefined || (settings[field] === null && SHOWN_WHEN_SET.includes(field))) continue;
    doc[field] = settings[field];
  }
  return JSON.stringify(doc, null, 2);
}

function parseJson(text, field) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FormError(field, `not JSON: ${err.message}`);
  }
}

// A duration as typed: digits alone are milliseconds, as the API takes them.
function durationValue(text) {
  return /^\d+$/.test(text) ? Number(text) : text;
}

// "Name: value" lines as a headers object; blank lines are skipped.
function parseHeaders(text) {
  const headers = {};
  const seen = new Set();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new FormError("target.headers", `"${line}" is not a header: write Name: value, one a line`);
    const name = line.slice(0, colon).trim();
    if (seen.has(name.toLowerCase())) throw new FormError("target.headers", `header ${name} is given twice`);
    seen.add(name.toLowerCase());
    headers[name] = line.slice(colon + 1).trim();
  }
  return headers;
}

function field(label, control) {
  return h("label", { class: "field" }, h("span", {}, label), control);
}

function errorLine(id) {
  return h("p", { class: "form-error", id, role: "alert", hidden: true });
}

// Says on `line` why a request was refused: the field and the message; a 409 with a
// way out (`reload`, a function making a button) offers it.
function showError(line, err, reload) {
  line.hidden = false;
  line.dataset.field = err.field || "";
  if (err.status === 401) line.replaceChildren(explain(err));
  else if (err.status === 409 && reload) line.replaceChildren(`Changed meanwhile, reload: ${err.message} `, reload());
  else line.replaceChildren(err.field ? `${err.field}: ${err.message}` : err.message,
    err.link ? [" ", h("a", { href: err.link.href }, err.link.text)] : null);
}

// Runs `send` for a form: its button disabled meanwhile, `line` cleared before and
// filled when the request is refused.
async function submitting(button, line, send, reload) {
  button.disabled = true;
  line.hidden = true;
  line.replaceChildren();
  try {
    await send();
  } catch (err) {
    showError(line, err, reload);
  } finally {
    button.disabled = false;
  }
}

// Overview: a queue created by giving it settings (PUT), then its page. A queue that
// has settings already is not replaced from here: its page edits them.
function newQueueForm() {
  const name = h("input", { id: "new-queue-name", placeholder: "order.cancel", required: true, autocapitalize: "off" });
  const text = h("textarea", { id: "new-queue-json", class: "json", rows: 5, spellcheck: "false", placeholder: WEBHOOK_EXAMPLE });
  const line = errorLine("new-queue-error");
  const create = h("button", { type: "submit", id: "new-queue-create" }, "Create");
  const form = h("form", { class: "edit", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    submitting(create, line, async () => {
      const queue = name.value.trim();
      const body = text.value.trim() ? parseJson(text.value, "settings") : {};
      const page = `#/queue/${enc(queue)}`;
      if (await queueSettings(enc(queue))) {
        throw new FormError("queue", `${queue} has settings already:`, { href: page, text: "change them on its page" });
      }
      await api("PUT", `/v1/queues/${enc(queue)}/settings`, body);
      showBanner(`Created queue ${queue}`, "info");
      keepBanner = true;
      location.hash = page;
    });
  } },
  field("Queue name", name),
  field("Settings (JSON; empty: built-in defaults, pull workers). Secrets by environment variable name (secret_env).", text),
  h("div", { class: "actions" }, create), line);
  return h("details", { class: "form", id: "new-queue" }, h("summary", {}, "New queue"), form);
}

// A queue's settings as JSON, saved with If-Match so that a change made meanwhile is a
// 409 instead of being overwritten; removed with its own button.
function settingsEditor(queue, settings) {
  const path = `/v1/queues/${enc(queue)}/settings`;
  const ifMatch = settings ? { "If-Match": String(settings.version) } : undefined;
  const text = h("textarea", { id: "settings-json", class: "json", rows: 12, spellcheck: "false", placeholder: WEBHOOK_EXAMPLE });
  text.value = settings ? settingsText(settings) : "";
  const line = errorLine("settings-error");
  const reload = () => h("button", { type: "button", class: "secondary", id: "settings-reload", onclick: () => render() }, "Reload");
  const save = h("button", { type: "submit", id: "settings-save" }, "Save");
  const remove = settings ? h("button", { type: "button", class: "danger", id: "settings-remove",
    onclick: () => confirmThen(`Remove the settings of ${queue}? Its tasks stay and take the built-in defaults.`,
      () => submitting(remove, line, async () => {
        await api("DELETE", path, undefined, ifMatch);
        showBanner(`Removed the settings of ${queue}`, "info");
        await render();
      }, reload)) }, "Remove settings") : null;
  const form = h("form", { class: "edit", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    submitting(save, line, async () => {
      const body = text.value.trim() ? parseJson(text.value, "settings") : {};
      const saved = await api("PUT", path, body, ifMatch);
      showBanner(`Saved the settings of ${queue} (version ${saved.version})`, "info");
      await render();
    }, reload);
  } },
  field(`Settings (JSON): ${SETTABLE.join(", ")}. Secrets by environment variable name (secret_env).`, text),
  h("div", { class: "actions" }, save, remove), line);
  return h("details", { class: "form", id: "edit-settings" }, h("summary", {}, "Edit settings"), form);
}

// One task, scheduled with only what was filled in; an HTTP target when any of its
// fields is.
function scheduleForm(queue) {
  const input = (id, placeholder, attrs) => h("input", { id, placeholder, autocapitalize: "off", ...attrs });
  const key = input("schedule-key", "order-1234", { required: true });
  const delay = input("schedule-delay", "30m (empty: now)");
  const payload = h("textarea", { id: "schedule-payload", class: "json", rows: 3, spellcheck: "false" });
  payload.value = "{}";
  const url = input("target-url", "https://shop.example.com/hooks/cancel", { inputmode: "url" });
  const method = h("select", { id: "target-method" }, METHODS.map((m) => h("option", { value: m }, m)));
  const headers = h("textarea", { id: "target-headers", class: "json", rows: 2, spellcheck: "false", placeholder: "X-Tenant: acme" });
  const timeout = input("target-timeout", "10s");
  const line = errorLine("schedule-error");
  const send = h("button", { type: "submit", id: "schedule-send" }, "Schedule");
  const form = h("form", { class: "edit", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    submitting(send, line, async () => {
      const body = {};
      if (delay.value.trim()) body.delay = durationValue(delay.value.trim());
      if (payload.value.trim()) body.payload = parseJson(payload.value, "payload");
      const given = { url: url.value.trim(), headers: parseHeaders(headers.value), timeout: timeout.value.trim() };
      if (given.url || Object.keys(given.headers).length || given.timeout || method.value !== "POST") {
        const target = { method: method.value };
        if (given.url) target.url = given.url;
        if (Object.keys(given.headers).length) target.headers = given.headers;
        if (given.timeout) target.timeout = durationValue(given.timeout);
        body.target = target;
      }
      const answer = await api("PUT", `/v1/queues/${enc(queue)}/tasks/${enc(key.value)}`, body);
      lastScheduled = { queue, key: key.value, outcome: answer.outcome };
      await render();
    });
  } },
  h("div", { class: "row" }, field("Key", key), field("Delay", delay)),
  field("Payload (JSON)", payload),
  h("fieldset", {}, h("legend", {}, "HTTP target (optional)"),
    field("URL", url),
    h("div", { class: "row" }, field("Method", method), field("Timeout", timeout)),
    field("Headers (one Name: value a line)", headers)),
  h("div", { class: "actions" }, send), line);
  return h("details", { class: "form", id: "schedule" }, h("summary", {}, "Schedule a task"), form);
}

// What the last schedule from this queue's page did, with a link to the task.
function scheduledNote(queue) {
  if (!lastScheduled || lastScheduled.queue !== queue) return null;
  const { key, outcome } = lastScheduled;
  return h("p", { class: "result", id: "schedule-result", "data-outcome": outcome },
    `Task ${outcome}: `, h("a", { href: `#/task/${enc(queue)}/${enc(key)}` }, key));
}

// ---- actions ------------------------------------------------------------------------

function confirmThen(question, then) {
  if (window.confirm(question)) then();
}

// `done` is the news to show, or a function of the answer that says it.
async function act(event, method, path, done, goTo, body) {
  const button = event.target;
  button.disabled = true;
  try {
    const answer = await api(method, path, body);
    showBanner(typeof done === "function" ? done(answer) : done, "info");
    if (goTo && location.hash !== goTo) {
      keepBanner = true;
      location.hash = goTo;
    } else {
      await render();
    }
  } catch (err) {
    showBanner(explain(err));
  } finally {
    button.disabled = false;
  }
}

// ---- routing and refresh --------------------------------------------------------------

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").map(decodeURIComponent);
  if (parts[0] === "queue" && parts[1]) {
    const params = new URLSearchParams(query || "");
    const filter = { tag: params.get("tag"), state: params.get("state"), cursor: params.get("cursor") };
    return () => queuePage(parts[1], filter);
  }
  if (parts[0] === "task" && parts[1] && parts.length >= 3) return () => taskPage(parts[1], parts.slice(2).join("/"));
  if (parts[0] === "group" && parts[1] && parts.length >= 3) {
    const cursor = new URLSearchParams(query || "").get("cursor");
    return () => groupPage(parts[1], parts.slice(2).join("/"), cursor);
  }
  return overview;
}

// One render at a time; a render asked for meanwhile (a new hash, a button) runs
// right after, so the page always ends up showing the latest route.
// A quiet render (the periodic refresh) that finds a form open when its data comes in
// leaves the page as it is.
// A render that began under another token than the current one shows nothing: the
// render the new token asked for follows it.
let rendering = false;
let again = null;  // null, or whether the render asked for meanwhile is quiet
let tokenGeneration = 0;
async function render(quiet = false) {
  if (rendering) { again = again === null ? quiet : again && quiet; return; }
  rendering = true;
  const generation = tokenGeneration;
  try {
    if (grant === null) {
      const loaded = await loadGrant();
      if (generation === tokenGeneration) grant = loaded;
    }
    const nodes = await route()();
    if (generation !== tokenGeneration) return;
    if (quiet && formInUse()) return;
    // A view leaves out what does not apply as null (as h() does with its children).
    view.replaceChildren(...nodes.filter((node) => node !== null && node !== undefined && node !== false));
    if (!banner.classList.contains("info")) showBanner(null);
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    if (generation !== tokenGeneration) return;
    showBanner(explain(err));
    if (err.status === 401) view.replaceChildren(h("p", { class: "muted" }, "Waiting for a valid token."));
  } finally {
    rendering = false;
    if (again !== null) {
      const next = again;
      again = null;
      render(next);
    }
  }
}

// Whether a form of the page is being typed into or is open: the refresh would replace
// it, and what was typed.
function formInUse() {
  const active = document.activeElement;
  if (active && view.contains(active) && active.closest("form")) return true;
  return view.querySelector("details.form[open]") !== null;
}

// The periodic refresh skips a turn while a form is in use.
function refresh() {
  if (!formInUse()) render(true);
}

function schedule() {
  clearInterval(timer);
  if (document.getElementById("auto-refresh").checked) timer = setInterval(refresh, REFRESH_MS);
}

document.getElementById("token").value = localStorage.getItem(TOKEN_KEY) || "";
document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const value = document.getElementById("token").value.trim();
  if (value) localStorage.setItem(TOKEN_KEY, value); else localStorage.removeItem(TOKEN_KEY);
  tokenGeneration += 1;
  grant = null;
  showBanner(null);
  render();
});
document.getElementById("lookup").addEventListener("submit", (e) => {
  e.preventDefault();
  const queue = document.getElementById("lookup-queue").value.trim();
  const key = document.getElementById("lookup-key").value;
  location.hash = `#/task/${enc(queue)}/${enc(key)}`;
});
document.getElementById("auto-refresh").addEventListener("change", schedule);
window.addEventListener("hashchange", () => {
  // A message about an action that navigated here stays; any other is cleared.
  if (keepBanner) keepBanner = false; else showBanner(null);
  lastScheduled = null;
  render();
});
render();
schedule();
