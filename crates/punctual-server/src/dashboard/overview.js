// "#/": every queue with its counts, lag and throughput, and (with `admin`) the form
// that creates a queue.

import { api } from "./api.js";
import { may } from "./access.js";
import { sparkline } from "./charts.js";
import { h, enc } from "./dom.js";
import { ms, overdueClass, perMinute, relative } from "./format.js";
import { card } from "./page.js";
import { newQueueForm } from "./settings.js";

export async function overview() {
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
