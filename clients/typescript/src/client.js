// The HTTP client: one method per call of API.md, over the global fetch (Node 18+).
//
// Every call goes through `request`, which owns the three cross-cutting rules:
// - a timeout per attempt, by AbortSignal (a long poll gets its `wait` on top);
// - retries with exponential backoff on 503 and connection errors, for calls safe
//   to repeat: all of them are idempotent by key, except the batch ack, whose
//   answer reports per item (a resent ack that was applied answers 409);
// - one mapping of non-2xx answers to the typed errors of errors.js.
//
// Inputs are camelCase options; outputs are the server's JSON as it is (snake_case),
// so what you read matches API.md.

import { errorFromResponse, PunctualError, UnavailableError } from "./errors.js";

const DEFAULT_SERVER = "http://127.0.0.1:7575";

/** Milliseconds of an API duration ("1h 30m", "1500ms", 250); null when not understood. */
export function durationMs(d) {
  if (typeof d === "number") return d;
  if (typeof d !== "string") return null;
  const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  let matched = false;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/g)) {
    total += Number(m[1]) * units[m[2]];
    matched = true;
  }
  return matched ? total : null;
}

function time(t) {
  return t instanceof Date ? t.toISOString() : t;
}

function seg(s) {
  return encodeURIComponent(String(s));
}

function dropUndefined(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

function uniqueForBody(u) {
  if (u == null || typeof u !== "object") return u ?? undefined;
  return u.dead ? { window: u.window, dead: true } : u.window;
}

/** The wire body of a task from camelCase options (shared by schedule, scheduleMany and the outbox's schedule rows). */
export function taskBody(opts = {}) {
  if (opts.delay !== undefined && opts.dueAt !== undefined) {
    throw new TypeError("give delay or dueAt, not both");
  }
  const repeat = opts.repeat && repeatBody(opts.repeat);
  return dropUndefined({
    delay: opts.delay,
    due_at: time(opts.dueAt),
    payload: opts.payload,
    repeat,
    tags: opts.tags,
    max_attempts: opts.maxAttempts,
    backoff: opts.backoff,
    if_exists: opts.ifExists,
    target: opts.target,
    // Sent as given: the server checks the range 0–9 (invalid_argument, field "priority").
    priority: opts.priority,
    // { maxWait } → { max_wait }; the server refuses 0 (field "debounce.max_wait").
    debounce: opts.debounce == null ? undefined : { max_wait: opts.debounce.maxWait },
    // Sent as given: the server refuses "" and control characters (field "group").
    group: opts.group,
    // A duration, or { window, dead } (dead: the dead task holds its key too); the
    // server refuses 0 (field "unique_for").
    unique_for: uniqueForBody(opts.uniqueFor),
    // A calendar's name: delay counts its working time; dueAt with align "next_open"
    // moves to its next opening. The server refuses one it does not serve (field "calendar").
    calendar: opts.calendar,
    align: opts.align,
    // Timing policies, sent as given: the server names the field it refuses (under
    // overlap "allow", a key longer than 487 bytes: field "overlap").
    misfire: opts.misfire,
    misfire_after: opts.misfireAfter,
    catch_up_max: opts.catchUpMax,
    overlap: opts.overlap,
    jitter: opts.jitter,
  });
}

// { cronSyntax } → { cron_syntax } ("vixie", "spring" or "quartz"; sent as given).
function repeatBody({ cronSyntax, ...repeat }) {
  return dropUndefined({ ...repeat, until: time(repeat.until), cron_syntax: cronSyntax });
}

function ackBody(outcome) {
  const o = outcome ?? { outcome: "done" };
  return dropUndefined({ outcome: o.outcome ?? "done", delay: o.delay, due_at: time(o.dueAt), error: o.error });
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

export class Client {
  constructor({ server, token, timeoutMs = 10_000, retries = 3, retryBaseMs = 100, retryMaxMs = 2_000 } = {}) {
    this.server = (server ?? process.env.PUNCTUAL_SERVER ?? DEFAULT_SERVER).replace(/\/+$/, "");
    this.token = token ?? process.env.PUNCTUAL_TOKEN ?? undefined;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.retryBaseMs = retryBaseMs;
    this.retryMaxMs = retryMaxMs;
  }

  /**
   * One call. Resolves to {status, body, headers}; rejects with a PunctualError.
   * `retry: false` for calls that must not be resent; `signal` aborts without retrying.
   */
  async request(method, path, { body, query, headers = {}, retry = true, retries, signal, timeoutMs } = {}) {
    let url = this.server + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const h = { accept: "application/json", ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    if (body !== undefined) h["content-type"] = "application/json";
    const max = retry ? (retries ?? this.retries) : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once(method, url, h, body, signal, timeoutMs ?? this.timeoutMs);
      } catch (err) {
        if (!(err instanceof UnavailableError) || attempt >= max || signal?.aborted) throw err;
        const backoff = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** attempt);
        await sleep(backoff / 2 + Math.random() * (backoff / 2), signal);
        if (signal?.aborted) throw err;
      }
    }
  }

  async #once(method, url, headers, body, signal, timeoutMs) {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any?.([signal, timeout]) ?? anySignal(signal, timeout) : timeout;
    let res;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: combined,
      });
    } catch (cause) {
      if (signal?.aborted) {
        throw new PunctualError(`${method} ${url}: aborted`, { code: "aborted", cause });
      }
      const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : (cause?.cause?.code ?? cause?.message);
      throw new UnavailableError(`${method} ${url}: ${why}`, { code: "unavailable", cause });
    }
    const text = await res.text().catch(() => "");
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!res.ok) throw errorFromResponse(res.status, parsed);
    return { status: res.status, body: parsed, headers: res.headers };
  }

  // ---- tasks ----

  /** Create or replace one task. Resolves to {outcome, task}. */
  async schedule(queue, key, opts = {}) {
    const r = await this.request("PUT", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`, { body: taskBody(opts) });
    return r.body;
  }

  /**
   * Many tasks in one call; one result per item, in order: {key, outcome}, {key, outcome:
   * "kept", completed} (a dedupe window kept it) or {key, error}.
   */
  async scheduleMany(queue, items) {
    const tasks = items.map(({ key, ...opts }) => ({ key, ...taskBody(opts) }));
    const r = await this.request("POST", `/v1/queues/${seg(queue)}/tasks`, { body: { tasks } });
    return r.body.results;
  }

  async get(queue, key) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`)).body;
  }

  async cancel(queue, key) {
    await this.request("DELETE", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`);
  }

  /** Cancel every task of the queue carrying `tag`; resolves to how many. */
  async cancelTag(queue, tag) {
    return (await this.request("DELETE", `/v1/queues/${seg(queue)}/tags/${seg(tag)}`)).body.cancelled;
  }

  /** One page: {tasks, next_cursor}. */
  async listPage(queue, { state, tag, limit, cursor } = {}) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}/tasks`, { query: { state, tag, limit, cursor } })).body;
  }

  /** Every task, in due order, following next_cursor page by page. */
  async *list(queue, opts = {}) {
    yield* this.#pages((cursor) => this.listPage(queue, { ...opts, cursor }));
  }

  /** One page of the queue's groups that have tasks, by name, each with its tasks by state. */
  async groupsPage(queue, { limit, cursor } = {}) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}/groups`, { query: { limit, cursor } })).body;
  }

  async *#pages(fetchPage) {
    let cursor;
    do {
      const page = await fetchPage(cursor);
      yield* page.tasks;
      cursor = page.next_cursor;
    } while (cursor);
  }

  // ---- queues ----

  async queues() {
    return (await this.request("GET", "/v1/queues")).body.queues;
  }

  /** One queue's counts, oldest_overdue_ms and lag_ms (zero counts for an unknown queue). */
  async queue(queue) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}`)).body;
  }

  async getSettings(queue) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}/settings`)).body;
  }

  async putSettings(queue, settings, { ifVersion } = {}) {
    return (await this.request("PUT", `/v1/queues/${seg(queue)}/settings`, { body: settings, headers: ifMatch(ifVersion) })).body;
  }

  async patchSettings(queue, fields, { ifVersion } = {}) {
    return (await this.request("PATCH", `/v1/queues/${seg(queue)}/settings`, { body: fields, headers: ifMatch(ifVersion) })).body;
  }

  async deleteSettings(queue, { ifVersion } = {}) {
    await this.request("DELETE", `/v1/queues/${seg(queue)}/settings`, { headers: ifMatch(ifVersion) });
  }

  async pause(queue) {
    return (await this.request("POST", `/v1/queues/${seg(queue)}/pause`)).body;
  }

  async resume(queue) {
    return (await this.request("POST", `/v1/queues/${seg(queue)}/resume`)).body;
  }

  /** Cancel every task of the queue in `state` (scheduled | dead | all); resolves to how many. */
  async purge(queue, { state } = {}) {
    return (await this.request("DELETE", `/v1/queues/${seg(queue)}/tasks`, { query: { state } })).body.cancelled;
  }

  // ---- calendars ----

  /** Every working-time calendar, by name (those of the server's config file too). */
  async calendars() {
    return (await this.request("GET", "/v1/calendars")).body.calendars;
  }

  async getCalendar(name) {
    return (await this.request("GET", `/v1/calendars/${seg(name)}`)).body;
  }

  /**
   * Create or replace a calendar ({tz, hours, holidays?, workdays?}, the API's body as it
   * is); `ifVersion` makes it conditional (0: only if it does not exist yet).
   */
  async putCalendar(name, calendar, { ifVersion } = {}) {
    return (await this.request("PUT", `/v1/calendars/${seg(name)}`, { body: calendar, headers: ifMatch(ifVersion) })).body;
  }

  async deleteCalendar(name, { ifVersion } = {}) {
    await this.request("DELETE", `/v1/calendars/${seg(name)}`, { headers: ifMatch(ifVersion) });
  }

  // ---- dead tasks ----

  async deadPage(queue, { limit, cursor } = {}) {
    return (await this.request("GET", `/v1/queues/${seg(queue)}/dead`, { query: { limit, cursor } })).body;
  }

  async *dead(queue, opts = {}) {
    yield* this.#pages((cursor) => this.deadPage(queue, { ...opts, cursor }));
  }

  /** Back to scheduled, due now, attempts reset; resolves to the task. */
  async retryDead(queue, key) {
    return (await this.request("POST", `/v1/queues/${seg(queue)}/dead/${seg(key)}/retry`)).body;
  }

  /** Retry all dead tasks, those with `tag`, or those named by `keys`; resolves to how many. */
  async retryDeadMany(queue, { tag, keys } = {}) {
    const body = dropUndefined({ tag, keys });
    return (await this.request("POST", `/v1/queues/${seg(queue)}/dead/retry`, { body })).body.retried;
  }

  async deleteDead(queue, key) {
    await this.request("DELETE", `/v1/queues/${seg(queue)}/dead/${seg(key)}`);
  }

  // ---- pull workers ----

  /** Lease up to `max` due tasks, long-polling up to `wait`. Resolves to the leases. */
  async lease(queue, { max, lease, wait, signal, retries } = {}) {
    const waitMs = wait === undefined ? 0 : (durationMs(wait) ?? 60_000);
    const r = await this.request("POST", `/v1/queues/${seg(queue)}/lease`, {
      body: dropUndefined({ max, lease, wait }),
      signal,
      retries,
      timeoutMs: this.timeoutMs + waitMs,
    });
    return r.body.leases;
  }

  /** Acknowledge one lease: {outcome: "done" | "retry" | "reschedule" | "fail", delay?, dueAt?, error?}. */
  async ack(leaseId, outcome = { outcome: "done" }, { signal } = {}) {
    await this.request("POST", `/v1/leases/${seg(leaseId)}/ack`, { body: ackBody(outcome), signal });
  }

  /**
   * Many acks in one call; one result per item ({lease_id, status, error?}). Not
   * retried: the answer says per item what was applied.
   */
  async acks(items, { signal } = {}) {
    const acks = items.map(({ leaseId, ...o }) => ({ lease_id: leaseId, ...ackBody(o) }));
    return (await this.request("POST", "/v1/acks", { body: { acks }, retry: false, signal })).body.results;
  }

  /** Extend a live lease by `lease` from now; resolves to {lease_id, expires_at}. */
  async extend(leaseId, lease, { signal } = {}) {
    return (await this.request("POST", `/v1/leases/${seg(leaseId)}/extend`, { body: { lease }, signal })).body;
  }
}

function ifMatch(version) {
  return version === undefined ? {} : { "if-match": String(version) };
}

function anySignal(a, b) {
  const c = new AbortController();
  const abort = () => c.abort();
  if (a.aborted || b.aborted) c.abort();
  a.addEventListener("abort", abort, { once: true });
  b.addEventListener("abort", abort, { once: true });
  return c.signal;
}

export { sleep };
