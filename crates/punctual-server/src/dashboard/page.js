// What every view shares of the page: the banner, a way to render the page again
// (app.js provides it), the buttons that act at once, and the cards of counts.
//
// The banner: errors stay until the next successful load; news of an action fades
// after 8 s, and survives one navigation when the action moved to another page.

import { api, explain } from "./api.js";
import { h } from "./dom.js";

const banner = document.getElementById("banner");
let bannerTimer = null;
let keepBanner = false;
let renderer = null;

export function showBanner(message, kind) {
  clearTimeout(bannerTimer);
  if (!message) { banner.hidden = true; banner.textContent = ""; return; }
  banner.hidden = false;
  banner.className = kind === "info" ? "banner info" : "banner";
  banner.textContent = message;
  if (kind === "info") bannerTimer = setTimeout(() => showBanner(null), 8000);
}

// Whether the banner shows news (not an error).
export function bannerIsNews() {
  return banner.classList.contains("info");
}

// The banner's news stays over the next change of the hash.
export function keepBannerOnce() {
  keepBanner = true;
}

// Whether the banner was to stay over this change of the hash (asked once).
export function bannerKept() {
  const kept = keepBanner;
  keepBanner = false;
  return kept;
}

// `render(quiet)` of app.js, set once at start.
export function setRenderer(render) {
  renderer = render;
}

// Renders the current route again; see app.js.
export function render(quiet = false) {
  return renderer(quiet);
}

export function confirmThen(question, then) {
  if (window.confirm(question)) then();
}

// `done` is the news to show, or a function of the answer that says it.
export async function act(event, method, path, done, goTo, body) {
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

export function card(label, value, id) {
  return h("div", { class: "card", id: `card-${id}` }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}
