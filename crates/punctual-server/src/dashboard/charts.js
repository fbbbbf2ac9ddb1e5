// The overview's sparklines and a queue's chart of upcoming tasks, as inline SVG.

import { svg } from "./dom.js";

export function sparkline(values) {
  const w = 120, hgt = 26, max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(hgt - 2 - (v / max) * (hgt - 4)).toFixed(1)}`);
  return svg("svg", { class: "spark", viewBox: `0 0 ${w} ${hgt}`, preserveAspectRatio: "none", role: "img",
    "aria-label": `leases per 10 s, last 15 min, max ${max}` },
    svg("polygon", { points: `0,${hgt} ${pts.join(" ")} ${w},${hgt}` }),
    svg("polyline", { points: pts.join(" ") }));
}

export function chart(data, range) {
  const w = 1000, hgt = 200, pad = 24, max = Math.max(1, ...data.counts);
  const bw = (w - pad) / data.counts.length;
  const bars = data.counts.map((n, i) => {
    const bh = (n / max) * (hgt - 2 * pad);
    const minutes = (i * data.span) / data.counts.length / 60000;
    return svg("rect", { class: "bar", x: (pad + i * bw + 0.5).toFixed(1), y: (hgt - pad - bh).toFixed(1),
      width: Math.max(1, bw - 1).toFixed(1), height: bh.toFixed(1) },
      svg("title", {}, `${n} task(s) at +${minutes >= 60 ? `${(minutes / 60).toFixed(1)} h` : `${Math.round(minutes)} min`}`));
  });
  const ticks = range === "hour" ? [[0, "now"], [0.25, "+15m"], [0.5, "+30m"], [0.75, "+45m"], [1, "+1h"]]
    : [[0, "now"], [0.25, "+6h"], [0.5, "+12h"], [0.75, "+18h"], [1, "+24h"]];
  return svg("svg", { class: "chart", id: "upcoming-chart", viewBox: `0 0 ${w} ${hgt}`, role: "img",
    "aria-label": "tasks by due time" },
    svg("line", { x1: pad, y1: hgt - pad, x2: w, y2: hgt - pad }),
    svg("text", { x: 0, y: pad }, max),
    ...bars,
    ...ticks.map(([f, label]) => svg("text", { x: Math.min(w - 34, pad + f * (w - pad) - (f ? 16 : 0)), y: hgt - 6 }, label)));
}
