// "#/queue/<q>": one queue, its task list filtered by "?tag=&state=&cursor=" after it
// (the filter lives in the hash, so a filtered list survives the refresh and can be
// linked to), its settings, groups, upcoming tasks, dead tasks and recent outcomes.
// Dead tasks and settings need `admin`; without it they are not asked for.

import { api } from "./api.js";
import { may } from "./access.js";
import { chart } from "./charts.js";
import { h, enc } from "./dom.js";
import { ms, perMinute, relative, shortTime } from "./format.js";
import { groupHash, groupsSection, queueGroups } from "./groups.js";
import { act, card, confirmThen, render } from "./page.js";
import { scheduleForm, scheduledNote } from "./schedule.js";
import { queueSettings, settingsEditor, settingsPanel } from "./settings.js";

// The range of the upcoming chart: "hour" or "day", kept across pages.
let chartRange = "hour";

// The hash of a queue's page with its task list filtered by `filter` ({tag, state, cursor}).
export function queueHash(queue, filter) {
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

export async function queuePage(queue, filter) {
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
      card("Leases / min", perMinute(activity.fired, activity.slot_ms), "rate"),
      // Only on a server that drains an outbox: rows committed, not yet applied.
      detail.outbox ? card("Outbox lag", detail.outbox.rows_waiting === 0 ? "none"
        : `${detail.outbox.rows_waiting} rows, ${ms(detail.outbox.oldest_age_ms)}`, "outbox") : null),
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
