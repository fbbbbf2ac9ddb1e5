// A queue's groups and one group's tasks.
//
// A queue's page lists its groups (GET /v1/queues/{queue}/groups, GROUPS_PAGE at a
// time; "More" shows one page more, kept across the refresh). The task list API has no
// group filter (no store lists a queue by group), so a group's page
// ("#/group/<q>/<group>", "?cursor=" where its scan starts) finds the group's tasks
// here, in the browser: it reads the queue's task list, GROUP_SCAN_PAGES pages of 1,000
// in due order, keeps the group's tasks and says how far it looked; "scan on" carries
// on from where it stopped.

import { api } from "./api.js";
import { h, enc } from "./dom.js";
import { relative } from "./format.js";
import { card, render } from "./page.js";

const GROUPS_PAGE = 50;
const GROUP_SCAN_PAGES = 5;
// Pages of groups shown on the page of `queue`; back to 1 on another queue's page.
let groupsShown = { queue: null, pages: 1 };

export function groupHash(queue, group, cursor) {
  return `#/group/${enc(queue)}/${enc(group)}${cursor ? `?cursor=${enc(cursor)}` : ""}`;
}

// The queue's groups, as many pages as shown, and the cursor after them; `error` when
// the store cannot list them (the rest of the page still shows).
export async function queueGroups(queue) {
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
export function groupsSection(queue, list, limit) {
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
export async function groupPage(queue, group, cursor) {
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
