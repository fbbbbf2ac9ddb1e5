// "#/task/<q>/<key>": one task, with its HTTP target when it carries one, the buttons
// the token may use (cancel with `schedule`, retry a dead task with `admin`) and its
// history (history.js, with `read`). A task that is gone (done, cancelled, deleted)
// shows its history when the server still keeps one, else that there is no such task.

import { api } from "./api.js";
import { may } from "./access.js";
import { h, enc } from "./dom.js";
import { relative, shortTime } from "./format.js";
import { groupHash } from "./groups.js";
import { historyPanel, taskHistory } from "./history.js";
import { act, confirmThen } from "./page.js";
import { queueHash } from "./queue.js";

export async function taskPage(queue, key) {
  const path = `/v1/queues/${enc(queue)}/tasks/${enc(key)}`;
  const [task, history] = await Promise.all([
    api("GET", path).catch((err) => {
      if (err.status === 404) return null;
      throw err;
    }),
    taskHistory(queue, key),
  ]);
  const title = h("h1", {}, h("a", { href: `#/queue/${enc(queue)}` }, queue), " / ", key);
  if (!task) {
    return history
      ? [title, h("h2", { id: "task-gone" }, "This task is gone; what happened to it:"), historyPanel(history)]
      : [title, h("div", { class: "panel", id: "task-missing" }, "No such task: it was never scheduled, or it is done or cancelled.")];
  }
  const fields = [
    ["State", h("span", { class: `pill ${task.state}`, id: "task-state" }, task.state)],
    ["Due", `${shortTime(task.due_at)} (${relative(task.due_at)})`],
    ["Attempts", `${task.attempts} of ${task.max_attempts}`],
    ["Repeat", task.repeat ? JSON.stringify(task.repeat) : "–"],
    ["Calendar", task.calendar
      ? h("a", { id: "task-calendar", href: `#/calendar/${enc(task.calendar)}` }, task.calendar)
      : h("span", { id: "task-calendar" }, "– (plain time)")],
    ["Timing", h("span", { id: "task-timing" }, timing(task))],
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
    title,
    h("div", { class: "panel" },
      h("dl", { class: "task" }, fields.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("div", { class: "actions" }, buttons),
      task.target ? [h("h2", {}, "HTTP target"), targetTable(task.target)] : null,
      h("h2", {}, "Payload"),
      h("pre", {}, JSON.stringify(task.payload, null, 2))),
    history ? h("h2", {}, "History") : null,
    history ? historyPanel(history) : null,
  ];
}

// The task's misfire, overlap and jitter policies in words (docs/state-machine.md).
function timing(task) {
  const misfire = {
    fire_once: "missed occurrences: one firing for all",
    fire_all: `missed occurrences: each, up to ${task.catch_up_max}`,
    skip: `skipped when leased over ${task.misfire_after} late`,
  }[task.misfire] || task.misfire;
  const parts = [misfire];
  if (task.repeat) parts.push(task.overlap === "queue" ? "overlaps: the latest queued" : "overlaps: skipped");
  if (task.jitter) parts.push(`jitter up to ${task.jitter}`);
  return parts.join("; ");
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
