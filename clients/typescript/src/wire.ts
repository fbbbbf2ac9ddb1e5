// The HTTP edge: the one place that knows the server's JSON is snake_case.
//
// Everything the user meets (options, tasks, leases, settings, calendars, errors) is
// camelCase; `toWire` renames keys on the way out (maxAttempts → max_attempts) and
// `fromWire` on the way in (due_at → dueAt), recursively through objects and arrays.
// Values are never touched, except a Date sent as its RFC 3339 string and the field
// paths the server names: an error's ("tasks[1].debounce.max_wait" →
// "tasks[1].debounce.maxWait") and what a replace changed in a task's history
// (["due_at", "payload"] → ["dueAt", "payload"]).
//
// Invariant: a value of the user's own is never re-cased: a task's payload, a target's
// headers and body, an action's fields. A Shape names where they sit (keys in camelCase,
// arrays transparent), so one description serves both directions.

import type { AckOutcome, Duration, ScheduleOptions, Time, UniqueFor } from "./types.js";

/** Leave the value as it is: the user's own data. */
const AS_IS = "as-is";
/** A path of request fields ("tasks[1].unique_for"), or an array of them, re-cased as keys are. */
const FIELD_PATH = "field-path";

/** Where values of the user's own and field paths sit inside a JSON value, by camelCase key. */
export interface Shape {
  readonly [key: string]: Shape | typeof AS_IS | typeof FIELD_PATH;
}

/** A task, as sent and as read: its payload and its target's headers and body are the user's own. */
const TASK: Shape = { payload: AS_IS, target: { headers: AS_IS, body: AS_IS } };

/** The shapes of what the client sends and reads; a key not named is re-cased all the way down. */
export const SHAPES = {
  plain: {},
  task: TASK,
  taskPage: { tasks: TASK },
  scheduleResult: { task: TASK },
  leases: { task: TASK },
  /** Queue settings, as sent and as read: a redis-stream action's fields are the user's own. */
  settings: { action: { fields: AS_IS } },
  /** Batch schedule and batch ack results: their errors' field paths. */
  itemResults: { error: { field: FIELD_PATH } },
  /** A task's history: what a replace changed names the task's fields. */
  history: { events: { changed: FIELD_PATH } },
  /** The audit log: an entry's detail is the server's own object, as it wrote it. */
  auditPage: { entries: { detail: AS_IS } },
} satisfies Record<string, Shape>;

/** snake_case → camelCase: an underscore after a letter or digit goes, the next character is upper-cased. */
export function camelCase(name: string): string {
  return name.replace(/(?<=[A-Za-z0-9])_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** camelCase → snake_case: each upper-case letter becomes _ and its lower case. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A JSON value from the server with its keys in camelCase; `T` is what the caller's shape reads as. */
export function fromWire<T>(value: unknown, shape: Shape = SHAPES.plain): T {
  return recase(value, shape, camelCase, true) as T;
}

/** A camelCase value as the server takes it: keys in snake_case, Dates as RFC 3339 strings, undefined members left out. */
export function toWire(value: unknown, shape: Shape = SHAPES.plain): unknown {
  return recase(value, shape, snakeCase, false);
}

function recase(value: unknown, shape: Shape, rename: (key: string) => string, toClient: boolean): unknown {
  if (Array.isArray(value)) return value.map((v: unknown) => recase(v, shape, rename, toClient));
  if (value instanceof Date && !toClient) return value.toISOString();
  if (!isPlainObject(value)) return value;
  const entries: Array<[string, unknown]> = [];
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    const renamed = rename(key);
    const clientKey = toClient ? renamed : key;
    const rule = Object.hasOwn(shape, clientKey) ? shape[clientKey] : undefined;
    if (rule === AS_IS) entries.push([renamed, v]);
    else if (rule === FIELD_PATH) entries.push([renamed, fieldPaths(v, rename)]);
    else entries.push([renamed, recase(v, rule ?? SHAPES.plain, rename, toClient)]);
  }
  // fromEntries defines each key as an own property, "__proto__" included.
  return Object.fromEntries(entries);
}

/** A field path re-cased, or each of an array of them; anything else as it is. */
function fieldPaths(value: unknown, rename: (key: string) => string): unknown {
  if (typeof value === "string") return rename(value);
  return Array.isArray(value) ? value.map((v: unknown) => (typeof v === "string" ? rename(v) : v)) : value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The wire body of a task from schedule's options: only the options schedule knows (so
 * the outbox's own `table` and `dialect` stay out), re-cased. Shared by schedule,
 * scheduleMany and the outbox's schedule rows, so they send the same JSON.
 */
export function taskBody(options: ScheduleOptions = {}): Record<string, unknown> {
  if (options.delay !== undefined && options.dueAt !== undefined) {
    throw new TypeError("give delay or dueAt, not both");
  }
  // Every option named, so one added to ScheduleOptions fails the build until it is sent.
  const body: { [K in keyof Required<ScheduleOptions>]: ScheduleOptions[K] } = {
    delay: options.delay,
    dueAt: options.dueAt,
    payload: options.payload,
    repeat: options.repeat,
    tags: options.tags,
    maxAttempts: options.maxAttempts,
    backoff: options.backoff,
    ifExists: options.ifExists,
    target: options.target,
    // Sent as given: the server checks the range 0–9 (field "priority").
    priority: options.priority,
    // The server refuses a maxWait of 0 (field "debounce.maxWait").
    debounce: options.debounce,
    // Sent as given: the server refuses "" and control characters (field "group").
    group: options.group,
    uniqueFor: uniqueForBody(options.uniqueFor),
    // A calendar's name: delay counts its working time; dueAt with align "next_open"
    // moves to its next opening. The server refuses one it does not serve.
    calendar: options.calendar,
    align: options.align,
    // Timing policies, sent as given: the server names the field it refuses.
    misfire: options.misfire,
    misfireAfter: options.misfireAfter,
    catchUpMax: options.catchUpMax,
    overlap: options.overlap,
    jitter: options.jitter,
  };
  return toWire(body, TASK) as Record<string, unknown>;
}

// { window, dead: true } holds the key after a dead task too; without dead it is the
// plain duration, the form the server shows it in.
function uniqueForBody(u: Duration | UniqueFor | undefined): Duration | UniqueFor | undefined {
  if (u === undefined || u === null || typeof u !== "object") return u ?? undefined;
  return u.dead ? { window: u.window, dead: true } : u.window;
}

/** An ack's body from an outcome (and, in a batch, its leaseId): only the fields an ack takes. */
export function ackBody(item: AckOutcome & { leaseId?: string }): Record<string, unknown> {
  const o: { outcome?: string; delay?: Duration; dueAt?: Time; error?: string; leaseId?: string } = item;
  const body = { leaseId: o.leaseId, outcome: o.outcome ?? "done", delay: o.delay, dueAt: o.dueAt, error: o.error };
  return toWire(body) as Record<string, unknown>;
}
