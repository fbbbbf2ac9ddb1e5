// A task's history (GET /v1/queues/<q>/tasks/<key>/history) as a timeline on its page:
// oldest at the top, so it reads down the way it happened, as the API and
// `punctual history` list it. One row per event: its time, the event as a pill coloured
// by what it meant for the task (green done, amber a failed try or an expired lease,
// red an end by hand or a death, neutral the rest), who did it (the token's name), what
// the event carries in words and the state it left. The server keeps a history after
// the task is gone, so the page of a done or cancelled task can still say what
// happened to it. Needs `read` on the queue; without it the history is not asked for.

import { api } from "./api.js";
import { may } from "./access.js";
import { h, enc } from "./dom.js";
import { duration, ms, relative, shortTime } from "./format.js";

// The key's history ({queue, key, retention_ms, events}); null when the token may not
// read it, or when there is none (404: no task and no event within the retention, or a
// server older than the history).
export async function taskHistory(queue, key) {
  if (!may("read", queue)) return null;
  try {
    return await api("GET", `/v1/queues/${enc(queue)}/tasks/${enc(key)}/history`);
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

// The timeline's panel (#task-history): one `tr.history-event[data-event]` per event.
export function historyPanel(history) {
  const kept = `kept ${duration(history.retention_ms)} after the latest event, at most the latest 100`;
  if (history.events.length === 0) {
    return h("div", { class: "panel muted", id: "task-history" }, `Nothing happened to this task within the history's retention (${kept}).`);
  }
  const rows = history.events.map((e) => h("tr", { class: "history-event", "data-event": e.event },
    h("td", { "data-col": "at" }, shortTime(e.at), " ", h("span", { class: "muted" }, `(${relative(e.at)})`)),
    h("td", { "data-col": "event" }, h("span", { class: `pill ${tone(e)}` }, e.event),
      e.by ? h("span", { class: "muted by" }, ` by ${e.by}`) : null),
    h("td", { class: "details", "data-col": "details" }, details(e)),
    h("td", { "data-col": "state" }, e.state)));
  return h("div", { class: "panel", id: "task-history" },
    h("table", { class: "history" },
      h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Event"), h("th", {}, "Details"), h("th", {}, "State after"))),
      h("tbody", {}, rows)),
    h("p", { class: "muted note" }, `Oldest first; ${kept}.`));
}

// The pill's colour: what the event meant for the task. An event that left it dead is
// red whatever it was.
function tone(e) {
  if (e.state === "dead") return "tone-bad";
  switch (e.event) {
    case "acked": return { done: "tone-ok", reschedule: "tone-ok", retry: "tone-warn", dead: "tone-bad" }[e.outcome] || "";
    case "expired": return "tone-warn";
    case "cancelled": case "purged": case "deleted": return "tone-bad";
    default: return "";
  }
}

// What the event carries, in words: the parts joined by " · ". Errors and answers are
// anyone's text: they go in as text (dom.js).
function details(e) {
  const at = (iso) => `${shortTime(iso)} (${relative(iso)})`;
  const parts = [];
  if (e.attempt !== undefined) parts.push(`try ${e.attempt}`);
  if (e.lease !== undefined) parts.push(`lease ${e.lease}`);
  switch (e.event) {
    case "created": case "imported": case "retried":
      if (e.due_at) parts.push(`due ${at(e.due_at)}`);
      break;
    case "replaced":
      parts.push(e.changed && e.changed.length ? `changed ${e.changed.join(", ")}` : "no field changed");
      if (e.changed && e.changed.includes("due_at") && e.due_at) parts.push(`due ${at(e.due_at)}`);
      break;
    case "cancelled":
      if (e.tag) parts.push(`cancelled by tag ${e.tag}`);
      break;
    case "leased": case "extended":
      if (e.lease_expires_at) parts.push(`until ${shortTime(e.lease_expires_at)}`);
      if (e.node) parts.push(`on ${e.node}`);
      if (e.delivery_id) parts.push(`delivery ${e.delivery_id}`);
      break;
    case "acked": case "expired":
      parts.push(outcome(e, at));
      break;
    default:
      break;
  }
  const delivery = deliveryReport(e);
  if (delivery) parts.push(delivery);
  return parts.filter(Boolean).join(" · ") || "–";
}

// An ack's or an expiry's end of the try: "done", "retry at <time>: <error>", …
function outcome(e, at) {
  const why = e.error ? `: ${e.error}` : "";
  if (e.event === "expired") {
    return e.due_at ? `lease expired, retry at ${at(e.due_at)}${why}` : `lease expired${why}`;
  }
  switch (e.outcome) {
    case "done": return "done";
    case "retry": return `retry at ${e.due_at ? at(e.due_at) : "–"}${why}`;
    case "reschedule": return `again at ${e.due_at ? at(e.due_at) : "–"}`;
    case "dead": return `dead${why || ": gave up"}`;
    default: return e.outcome ? `${e.outcome}${why}` : why.slice(2);
  }
}

// What a push delivery's far end answered: "HTTP 503 in 41 ms: <answer>".
function deliveryReport(e) {
  if (e.status === undefined && e.took_ms === undefined && e.answer === undefined) return null;
  const head = [e.status !== undefined ? `HTTP ${e.status}` : "delivery", e.took_ms !== undefined ? `in ${ms(e.took_ms)}` : null];
  return `${head.filter(Boolean).join(" ")}${e.answer ? `: ${e.answer}` : ""}`;
}
