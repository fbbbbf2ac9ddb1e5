// punctual dashboard: vanilla JS modules, no build step, no external requests. This one
// routes and refreshes; each view is a module of its own.
//
// Views (hash routes): "#/" queues overview (overview.js), "#/queue/<q>" one queue
// (queue.js), "#/group/<q>/<group>" one group's tasks (groups.js), "#/task/<q>/<key>"
// one task (task.js), "#/calendars" the working-time calendars and "#/calendar/<name>"
// one of them (calendars.js). A view is an async function that answers the page's
// nodes; what does not apply it leaves out as null. Every data call goes to the /v1 API
// with the token saved in localStorage (api.js); data is put into the page as text
// only, never as HTML (dom.js). The page shows only the controls the token's grant
// allows (access.js).

import { forgetGrant, knowsGrant, loadGrant, setGrant } from "./access.js";
import { TOKEN_KEY, explain } from "./api.js";
import { calendarPage, calendarsPage } from "./calendars.js";
import { h, enc } from "./dom.js";
import { groupPage } from "./groups.js";
import { overview } from "./overview.js";
import { bannerIsNews, bannerKept, setRenderer, showBanner } from "./page.js";
import { queuePage } from "./queue.js";
import { forgetScheduled } from "./schedule.js";
import { taskPage } from "./task.js";

const REFRESH_MS = 5000;
const view = document.getElementById("view");
let timer = null;

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
  if (parts[0] === "calendars") return calendarsPage;
  if (parts[0] === "calendar" && parts[1]) return () => calendarPage(parts.slice(1).join("/"));
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
    if (!knowsGrant()) {
      const loaded = await loadGrant();
      if (generation === tokenGeneration) setGrant(loaded);
    }
    const nodes = await route()();
    if (generation !== tokenGeneration) return;
    if (quiet && formInUse()) return;
    // A view leaves out what does not apply as null (as h() does with its children).
    view.replaceChildren(...nodes.filter((node) => node !== null && node !== undefined && node !== false));
    if (!bannerIsNews()) showBanner(null);
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

setRenderer(render);
document.getElementById("token").value = localStorage.getItem(TOKEN_KEY) || "";
document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const value = document.getElementById("token").value.trim();
  if (value) localStorage.setItem(TOKEN_KEY, value); else localStorage.removeItem(TOKEN_KEY);
  tokenGeneration += 1;
  forgetGrant();
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
  if (!bannerKept()) showBanner(null);
  forgetScheduled();
  render();
});
render();
schedule();
