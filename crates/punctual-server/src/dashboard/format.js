// Numbers and times as the page writes them.

export function ms(n) {
  if (n === null || n === undefined) return "–";
  if (n < 1000) return `${n} ms`;
  return duration(n);
}

export function duration(msec) {
  const s = Math.round(msec / 1000);
  if (s < 60) return `${(msec / 1000).toFixed(msec < 10000 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m % 60} min`;
  return `${Math.floor(hrs / 24)} d ${hrs % 24} h`;
}

export function relative(iso) {
  if (!iso) return "–";
  const delta = Date.parse(iso) - Date.now();
  if (Math.abs(delta) < 1000) return "now";
  return delta > 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
}

export function shortTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function perMinute(fired, slotMs) {
  const recent = fired.slice(-6).reduce((a, b) => a + b, 0);
  return Math.round((recent * 60000) / (slotMs * 6));
}

export function overdueClass(overdueMs) {
  if (overdueMs >= 60000) return "bad";
  if (overdueMs >= 5000) return "warn";
  return "";
}
