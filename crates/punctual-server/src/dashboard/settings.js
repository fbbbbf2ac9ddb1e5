// A queue's settings: shown in a panel (read-only for a queue of the config file) and
// edited as JSON, saved with If-Match so that a change made meanwhile is a 409 instead
// of being overwritten. The server never answers a secret (a document names
// environment variables of the server instead), so nothing shown here can be one.

import { api } from "./api.js";
import { h, enc } from "./dom.js";
import { FormError, errorLine, field, parseJson, submitting } from "./forms.js";
import { confirmThen, keepBannerOnce, render, showBanner } from "./page.js";

// The fields a settings document sets; the rest of what GET answers is shown, not set.
const SETTABLE = ["defaults", "action", "concurrency", "rate", "shards", "targets", "group_concurrency", "group_rate"];
// Settable fields put in the editor only when set: a queue that never used them keeps a
// short document.
const SHOWN_WHEN_SET = ["group_concurrency", "group_rate"];
export const WEBHOOK_EXAMPLE = '{"action": {"kind": "webhook", "url": "https://…", "secret_env": "HOOK_SECRET"}, "concurrency": 4}';

// The queue's settings, or null when it has none (built-in defaults, pull workers).
// `q` is the queue's name, encoded for a path.
export async function queueSettings(q) {
  try {
    return await api("GET", `/v1/queues/${q}/settings`);
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

// The settings panel: what the queue runs with, read-only for a config-file queue.
export function settingsPanel(settings) {
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

// The settable part of `settings`, as the editor's text.
function settingsText(settings) {
  const doc = {};
  for (const field of SETTABLE) {
    if (settings[field] === undefined || (settings[field] === null && SHOWN_WHEN_SET.includes(field))) continue;
    doc[field] = settings[field];
  }
  return JSON.stringify(doc, null, 2);
}

// Overview: a queue created by giving it settings (PUT), then its page. A queue that
// has settings already is not replaced from here: its page edits them.
export function newQueueForm() {
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
      keepBannerOnce();
      location.hash = page;
    });
  } },
  field("Queue name", name),
  field("Settings (JSON; empty: built-in defaults, pull workers). Secrets by environment variable name (secret_env).", text),
  h("div", { class: "actions" }, create), line);
  return h("details", { class: "form", id: "new-queue" }, h("summary", {}, "New queue"), form);
}

// A queue's settings as JSON, saved with If-Match; removed with its own button.
export function settingsEditor(queue, settings) {
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
