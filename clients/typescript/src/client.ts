// The HTTP client: one method per call of API.md, over the global fetch (Node 18+).
//
// Every call goes through #request, which owns the three cross-cutting rules:
// - a timeout per attempt, by AbortSignal (a long poll gets its `wait` on top);
// - retries with exponential backoff on 503 and connection errors, for calls safe
//   to repeat: all of them are idempotent by key, except the batch ack, whose
//   answer reports per item (a resent ack that was applied answers 409);
// - one mapping of non-2xx answers to the typed errors of errors.ts.
//
// Options and answers are camelCase; bodies go through wire.ts's toWire and fromWire
// (the one place that knows the server speaks snake_case).

import { errorFromResponse, PunctualError, UnavailableError } from "./errors.js";
import type {
  Access,
  AckItem,
  AckOutcome,
  AckResult,
  AuditEntry,
  AuditPage,
  BatchItem,
  BatchResult,
  Calendar,
  CalendarInput,
  ClientOptions,
  Duration,
  Extended,
  GroupsPage,
  Lease,
  LeaseOptions,
  ListOptions,
  Page,
  PageOptions,
  QueueSettings,
  QueueStats,
  QueueSummary,
  ScheduleOptions,
  TraceOptions,
  ScheduleResult,
  SettingsInput,
  SignalOptions,
  Task,
  TaskHistory,
  VersionOptions,
} from "./types.js";
import { ackBody, fromWire, SHAPES, taskBody, toWire, type Shape } from "./wire.js";

const DEFAULT_SERVER = "http://127.0.0.1:7575";

/** Milliseconds of an API duration ("1h 30m", "1500ms", 250); null when not understood. */
export function durationMs(d: Duration): number | null {
  if (typeof d === "number") return d;
  if (typeof d !== "string") return null;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  let matched = false;
  for (const [, amount, unit] of d.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/g)) {
    total += Number(amount) * (units[unit ?? ""] ?? 0);
    matched = true;
  }
  return matched ? total : null;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

const seg = (s: string) => encodeURIComponent(String(s));

type Query = Record<string, string | number | undefined | null>;

interface RequestOptions {
  /** camelCase; sent through toWire with `shape`. */
  body?: unknown;
  shape?: Shape;
  /** A body already in the server's form (taskBody's), sent as it is. */
  wireBody?: unknown;
  query?: Query;
  headers?: Record<string, string>;
  /** false: never resent (the batch ack). */
  retry?: boolean;
  retries?: number | undefined;
  signal?: AbortSignal | undefined;
  timeoutMs?: number;
}

export class Client {
  readonly server: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;

  constructor({ server, token, timeoutMs = 10_000, retries = 3, retryBaseMs = 100, retryMaxMs = 2_000 }: ClientOptions = {}) {
    this.server = (server ?? process.env.PUNCTUAL_SERVER ?? DEFAULT_SERVER).replace(/\/+$/, "");
    this.token = token ?? process.env.PUNCTUAL_TOKEN ?? undefined;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.retryBaseMs = retryBaseMs;
    this.retryMaxMs = retryMaxMs;
  }

  // ---- tasks ----

  /**
   * Create or replace one task. Resolves to {outcome, task}, or {outcome: "kept", completed}.
   * `traceparent` (see TraceOptions) is sent as the header of that name.
   */
  async schedule(queue: string, key: string, options: ScheduleOptions & TraceOptions = {}): Promise<ScheduleResult> {
    const { traceparent, ...schedule } = options;
    const body = await this.#request("PUT", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`, {
      wireBody: taskBody(schedule),
      headers: traceHeaders(traceparent),
    });
    return fromWire(body, SHAPES.scheduleResult);
  }

  /**
   * Many tasks in one call; one result per item, in order: {key, outcome}, {key, outcome:
   * "kept", completed} (a dedupe window kept it) or {key, error}. Every task of the batch
   * keeps `traceparent` (see TraceOptions).
   */
  async scheduleMany(queue: string, items: BatchItem[], { traceparent }: TraceOptions = {}): Promise<BatchResult[]> {
    const tasks = items.map(({ key, ...options }) => ({ key, ...taskBody(options) }));
    const body = await this.#request("POST", `/v1/queues/${seg(queue)}/tasks`, {
      wireBody: { tasks },
      headers: traceHeaders(traceparent),
    });
    return fromWire(field(body, "results"), SHAPES.itemResults);
  }

  async get(queue: string, key: string): Promise<Task> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`), SHAPES.task);
  }

  /**
   * What happened to the task, oldest first, also once it is gone (within the queue's
   * history retention); NotFoundError when there is no task and no history of the key.
   */
  async history(queue: string, key: string): Promise<TaskHistory> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}/tasks/${seg(key)}/history`), SHAPES.history);
  }

  async cancel(queue: string, key: string): Promise<void> {
    await this.#request("DELETE", `/v1/queues/${seg(queue)}/tasks/${seg(key)}`);
  }

  /** Cancel every task of the queue carrying `tag`; resolves to how many. */
  async cancelTag(queue: string, tag: string): Promise<number> {
    return field(await this.#request("DELETE", `/v1/queues/${seg(queue)}/tags/${seg(tag)}`), "cancelled") as number;
  }

  /** One page: {tasks, nextCursor}. */
  async listPage(queue: string, { state, tag, limit, cursor }: ListOptions = {}): Promise<Page> {
    const body = await this.#request("GET", `/v1/queues/${seg(queue)}/tasks`, { query: { state, tag, limit, cursor } });
    return fromWire(body, SHAPES.taskPage);
  }

  /** Every task, in due order, following nextCursor page by page. */
  async *list(queue: string, options: Omit<ListOptions, "cursor"> = {}): AsyncGenerator<Task, void, undefined> {
    yield* pages((cursor) => this.listPage(queue, { ...options, cursor }), (page) => page.tasks);
  }

  /** One page of the queue's groups that have tasks, by name, each with its tasks by state. */
  async groupsPage(queue: string, { limit, cursor }: PageOptions = {}): Promise<GroupsPage> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}/groups`, { query: { limit, cursor } }));
  }

  // ---- queues ----

  async queues(): Promise<QueueSummary[]> {
    return fromWire(field(await this.#request("GET", "/v1/queues"), "queues"));
  }

  /** One queue's counts, oldestOverdueMs and lagMs (zero counts for an unknown queue). */
  async queue(queue: string): Promise<QueueStats> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}`));
  }

  async getSettings(queue: string): Promise<QueueSettings> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}/settings`), SHAPES.settings);
  }

  /** Replace the queue's settings; a getSettings answer can be sent back as it is. */
  async putSettings(queue: string, settings: SettingsInput, { ifVersion }: VersionOptions = {}): Promise<QueueSettings> {
    const body = await this.#request("PUT", `/v1/queues/${seg(queue)}/settings`, {
      body: settings,
      shape: SHAPES.settings,
      headers: ifMatch(ifVersion),
    });
    return fromWire(body, SHAPES.settings);
  }

  /** Change the fields given, keep the others. */
  async patchSettings(queue: string, fields: SettingsInput, { ifVersion }: VersionOptions = {}): Promise<QueueSettings> {
    const body = await this.#request("PATCH", `/v1/queues/${seg(queue)}/settings`, {
      body: fields,
      shape: SHAPES.settings,
      headers: ifMatch(ifVersion),
    });
    return fromWire(body, SHAPES.settings);
  }

  async deleteSettings(queue: string, { ifVersion }: VersionOptions = {}): Promise<void> {
    await this.#request("DELETE", `/v1/queues/${seg(queue)}/settings`, { headers: ifMatch(ifVersion) });
  }

  async pause(queue: string): Promise<QueueSettings> {
    return fromWire(await this.#request("POST", `/v1/queues/${seg(queue)}/pause`), SHAPES.settings);
  }

  async resume(queue: string): Promise<QueueSettings> {
    return fromWire(await this.#request("POST", `/v1/queues/${seg(queue)}/resume`), SHAPES.settings);
  }

  /** Cancel every task of the queue in `state` (scheduled | dead | all); resolves to how many. */
  async purge(queue: string, { state }: { state?: "scheduled" | "dead" | "all" } = {}): Promise<number> {
    return field(await this.#request("DELETE", `/v1/queues/${seg(queue)}/tasks`, { query: { state } }), "cancelled") as number;
  }

  // ---- calendars ----

  /** Every working-time calendar, by name (those of the server's config file too). */
  async calendars(): Promise<Calendar[]> {
    return fromWire(field(await this.#request("GET", "/v1/calendars"), "calendars"));
  }

  /** NotFoundError when there is none. */
  async getCalendar(name: string): Promise<Calendar> {
    return fromWire(await this.#request("GET", `/v1/calendars/${seg(name)}`));
  }

  /**
   * Create or replace a calendar; `ifVersion` makes it conditional (ConflictError at
   * another version; 0: only if it does not exist yet).
   */
  async putCalendar(name: string, calendar: CalendarInput, { ifVersion }: VersionOptions = {}): Promise<Calendar> {
    return fromWire(await this.#request("PUT", `/v1/calendars/${seg(name)}`, { body: calendar, headers: ifMatch(ifVersion) }));
  }

  async deleteCalendar(name: string, { ifVersion }: VersionOptions = {}): Promise<void> {
    await this.#request("DELETE", `/v1/calendars/${seg(name)}`, { headers: ifMatch(ifVersion) });
  }

  // ---- dead tasks ----

  async deadPage(queue: string, { limit, cursor }: PageOptions = {}): Promise<Page> {
    return fromWire(await this.#request("GET", `/v1/queues/${seg(queue)}/dead`, { query: { limit, cursor } }), SHAPES.taskPage);
  }

  async *dead(queue: string, options: { limit?: number } = {}): AsyncGenerator<Task, void, undefined> {
    yield* pages((cursor) => this.deadPage(queue, { ...options, cursor }), (page) => page.tasks);
  }

  /** Back to scheduled, due now, attempts reset; resolves to the task. */
  async retryDead(queue: string, key: string): Promise<Task> {
    return fromWire(await this.#request("POST", `/v1/queues/${seg(queue)}/dead/${seg(key)}/retry`), SHAPES.task);
  }

  /** Retry all dead tasks, those with `tag`, or those named by `keys`; resolves to how many. */
  async retryDeadMany(queue: string, { tag, keys }: { tag?: string; keys?: string[] } = {}): Promise<number> {
    return field(await this.#request("POST", `/v1/queues/${seg(queue)}/dead/retry`, { body: { tag, keys } }), "retried") as number;
  }

  async deleteDead(queue: string, key: string): Promise<void> {
    await this.#request("DELETE", `/v1/queues/${seg(queue)}/dead/${seg(key)}`);
  }

  // ---- pull workers ----

  /** Lease up to `max` due tasks, long-polling up to `wait`. Resolves to the leases. */
  async lease(queue: string, { max, lease, wait, signal, retries }: LeaseOptions = {}): Promise<Lease[]> {
    const waitMs = wait === undefined ? 0 : (durationMs(wait) ?? 60_000);
    const body = await this.#request("POST", `/v1/queues/${seg(queue)}/lease`, {
      body: { max, lease, wait },
      signal,
      retries,
      timeoutMs: this.timeoutMs + waitMs,
    });
    return fromWire(field(body, "leases"), SHAPES.leases);
  }

  /** Acknowledge one lease: {outcome: "done" | "retry" | "reschedule" | "fail", delay?, dueAt?, error?}. */
  async ack(leaseId: string, outcome: AckOutcome = { outcome: "done" }, { signal }: SignalOptions = {}): Promise<void> {
    await this.#request("POST", `/v1/leases/${seg(leaseId)}/ack`, { wireBody: ackBody(outcome), signal });
  }

  /**
   * Many acks in one call; one result per item ({leaseId, status, error?}). Not
   * retried: the answer says per item what was applied.
   */
  async acks(items: AckItem[], { signal }: SignalOptions = {}): Promise<AckResult[]> {
    const body = await this.#request("POST", "/v1/acks", { wireBody: { acks: items.map(ackBody) }, retry: false, signal });
    return fromWire(field(body, "results"), SHAPES.itemResults);
  }

  /** Extend a live lease by `lease` from now; resolves to {leaseId, expiresAt}. */
  async extend(leaseId: string, lease: Duration, { signal }: SignalOptions = {}): Promise<Extended> {
    return fromWire(await this.#request("POST", `/v1/leases/${seg(leaseId)}/extend`, { body: { lease }, signal }));
  }

  // ---- access ----

  /** What this client's token may do: its permissions and the queue patterns they hold on. */
  async access(): Promise<Access> {
    return fromWire(await this.#request("GET", "/v1/access"));
  }

  // ---- audit ----

  /** One page of the audit log, newest first (limit: the server's 100 by default, at most 1000). Needs the admin permission. */
  async auditPage({ limit, cursor }: PageOptions = {}): Promise<AuditPage> {
    return fromWire(await this.#request("GET", "/v1/audit", { query: { limit, cursor } }), SHAPES.auditPage);
  }

  /** Every entry of the audit log, newest first, following nextCursor page by page. */
  async *audit(options: { limit?: number } = {}): AsyncGenerator<AuditEntry, void, undefined> {
    yield* pages((cursor) => this.auditPage({ ...options, cursor }), (page) => page.entries);
  }

  /**
   * One call; resolves to the answer's JSON body as the server wrote it (null when
   * empty), rejects with a PunctualError. `signal` aborts without retrying.
   */
  async #request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const { body, shape, wireBody = body === undefined ? undefined : toWire(body, shape), query } = options;
    const { headers = {}, retry = true, retries, signal, timeoutMs } = options;
    let url = this.server + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const h: Record<string, string> = { accept: "application/json", ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    if (wireBody !== undefined) h["content-type"] = "application/json";
    const text = wireBody === undefined ? undefined : JSON.stringify(wireBody);
    const max = retry ? (retries ?? this.retries) : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once(method, url, h, text, signal, timeoutMs ?? this.timeoutMs);
      } catch (err) {
        if (!(err instanceof UnavailableError) || attempt >= max || signal?.aborted) throw err;
        const backoff = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** attempt);
        await sleep(backoff / 2 + Math.random() * (backoff / 2), signal);
        if (signal?.aborted) throw err;
      }
    }
  }

  async #once(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? anySignal(signal, timeout) : timeout;
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, signal: combined });
    } catch (cause) {
      if (signal?.aborted) {
        throw new PunctualError(`${method} ${url}: aborted`, { code: "aborted", cause });
      }
      const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : connectionError(cause);
      throw new UnavailableError(`${method} ${url}: ${why}`, { code: "unavailable", cause });
    }
    const text = await res.text().catch(() => "");
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!res.ok) throw errorFromResponse(res.status, parsed);
    return parsed;
  }
}

/** A member of a JSON object answer. */
function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

/** The items of every page, from the first, following nextCursor. */
async function* pages<P extends { nextCursor: string | null }, T>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  items: (page: P) => T[],
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* items(page);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
}

/** The `traceparent` header of a schedule, when given. */
function traceHeaders(traceparent: string | undefined): Record<string, string> {
  return traceparent === undefined ? {} : { traceparent };
}

function ifMatch(version: number | undefined): Record<string, string> {
  return version === undefined ? {} : { "if-match": String(version) };
}

// fetch's error says little ("fetch failed"); its cause names the socket error (ECONNREFUSED).
function connectionError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === "string") return cause.code;
  return err instanceof Error ? err.message : String(err);
}

// AbortSignal.any (Node 20.3+) lets go of its sources' listeners when it is collected;
// on older Nodes, a signal that follows both.
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (typeof AbortSignal.any === "function") return AbortSignal.any([a, b]);
  const c = new AbortController();
  const abort = () => c.abort();
  if (a.aborted || b.aborted) c.abort();
  a.addEventListener("abort", abort, { once: true });
  b.addEventListener("abort", abort, { once: true });
  return c.signal;
}
