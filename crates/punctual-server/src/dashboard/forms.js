// What the page's forms share. Each form (a new queue, a queue's settings, a schedule,
// a calendar) sits in a <details> that starts closed. While one is open the periodic
// refresh leaves the page alone (it would close the form and drop what was typed). A
// refused request leaves the form as it was, with the server's message beside it
// naming the field at fault.

import { explain } from "./api.js";
import { h } from "./dom.js";

// A mistake found before anything is sent, named by the field of the request at fault.
export class FormError extends Error {
  constructor(field, message, link) {
    super(message);
    this.field = field;
    this.link = link;
  }
}

export function parseJson(text, field) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FormError(field, `not JSON: ${err.message}`);
  }
}

// A duration as typed: digits alone are milliseconds, as the API takes them.
export function durationValue(text) {
  return /^\d+$/.test(text) ? Number(text) : text;
}

// "Name: value" lines as a headers object; blank lines are skipped.
export function parseHeaders(text) {
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

export function field(label, control) {
  return h("label", { class: "field" }, h("span", {}, label), control);
}

export function errorLine(id) {
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
export async function submitting(button, line, send, reload) {
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
