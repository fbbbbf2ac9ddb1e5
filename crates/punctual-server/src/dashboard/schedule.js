// A queue's schedule form: one task, scheduled with only what was filled in (an HTTP
// target when any of its fields is), and a note of what the last schedule did.

import { api } from "./api.js";
import { h, enc } from "./dom.js";
import { durationValue, errorLine, field, parseHeaders, parseJson, submitting } from "./forms.js";
import { render } from "./page.js";

const METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"];

// The task of the last schedule sent from this page, shown until the page changes.
let lastScheduled = null;

// The page changed: the note goes.
export function forgetScheduled() {
  lastScheduled = null;
}

export function scheduleForm(queue) {
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
export function scheduledNote(queue) {
  if (!lastScheduled || lastScheduled.queue !== queue) return null;
  const { key, outcome } = lastScheduled;
  return h("p", { class: "result", id: "schedule-result", "data-outcome": outcome },
    `Task ${outcome}: `, h("a", { href: `#/task/${enc(queue)}/${enc(key)}` }, key));
}
