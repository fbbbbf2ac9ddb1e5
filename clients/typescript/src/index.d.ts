// Type declarations of punctual-client (hand-written; checked by `npm run typecheck`).

/** A duration: "1500ms", "30s", "1h 30m", "7d", ISO 8601 "PT30M", or integer milliseconds. */
export type Duration = string | number;
/** A time: RFC 3339 string, epoch milliseconds, or a Date. */
export type Time = string | number | Date;

export interface Backoff {
  initial?: Duration;
  factor?: number;
  max?: Duration;
}

/**
 * How a repeat's cron is read: Vixie cron (the server's default), or as Spring's or
 * Quartz's CronExpression reads it ("0 0 9 ? * MON-FRI": seconds first, ?, L, W, #).
 */
export type CronSyntax = "vixie" | "spring" | "quartz";

export interface Repeat {
  every?: Duration;
  cron?: string;
  tz?: string;
  times?: number;
  until?: Time;
  /** Sent as `cron_syntax`; a task shows it in its repeat for spring and quartz. */
  cronSyntax?: CronSyntax;
}

/**
 * A repeat as the API takes it, which queue settings' defaults are sent in as they are
 * (`cron_syntax`, not Repeat's `cronSyntax`, which schedule converts).
 */
export interface RepeatBody {
  every?: Duration;
  cron?: string;
  tz?: string;
  times?: number;
  until?: Time;
  cron_syntax?: CronSyntax;
}

/** A repeat as the server shows it, in a task and in queue settings' defaults. */
export interface RepeatShown {
  every?: string;
  cron?: string;
  tz?: string;
  times?: number;
  until?: string;
  /** Shown for spring and quartz; absent means vixie. */
  cron_syntax?: "spring" | "quartz";
}

export type Weekday = "mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun";

/**
 * An extra working date (调休): "2026-09-27" takes the hours most open weekdays share;
 * {date, as} those of a weekday; {date, hours} its own.
 */
export type Workday = string | { date: string; as: Weekday } | { date: string; hours: string[] };

/**
 * A working-time calendar to put: working hours per weekday in zone `tz` ("HH:MM-HH:MM",
 * ending after they start, 24:00 for midnight; a weekday left out is closed), holidays
 * (ISO dates or inclusive ranges "start/end") and extra working dates.
 */
export interface CalendarInput {
  tz: string;
  hours: Partial<Record<Weekday, string[]>>;
  holidays?: string[];
  workdays?: Workday[];
}

/** A calendar as the server holds it. */
export interface Calendar extends CalendarInput {
  name: string;
  /** config: set in the server's config file (version 0, changed only there). */
  source: "api" | "config";
  /** The years with a holiday or working date entered. */
  holiday_years: number[];
  /** When the last entered year ends in the calendar's zone; null: none entered. */
  entered_until: string | null;
  /** Said when the entered years end within 30 days, have ended, or none are entered. */
  notice: string | null;
  /** For ifVersion. */
  version: number;
  updated_at: string;
}

/**
 * A burst of debounced schedules of one key replaces the scheduled task each time but
 * never makes it due later than the burst's first schedule + maxWait; a lease ends it.
 */
export interface Debounce {
  maxWait: Duration;
}

/**
 * A dedupe window: for `window` after the key's task completed (done; with `dead`, also
 * after it went dead), a schedule of the key creates nothing and answers "kept".
 */
export interface UniqueFor {
  window: Duration;
  dead?: boolean;
}

/**
 * What becomes of occurrences missed while no server ran or the queue was paused: one
 * firing for all ("fire_once", the default), each of them oldest first up to catchUpMax
 * ("fire_all"), or none ("skip": a first try leased later than misfireAfter past its
 * due time does not fire; a repeat moves on, a one-off task ends).
 */
export type Misfire = "fire_once" | "fire_all" | "skip";

/**
 * What becomes of a repeat's occurrences due while its firing is leased: dropped
 * ("skip", the default), the latest fired as soon as the firing ends ("queue"), or each
 * fired as a task of its own keyed `<key>@<scheduled_for>` beside the others ("allow":
 * the repeat moves to its next occurrence at once).
 */
export type Overlap = "skip" | "queue" | "allow";

export type HttpMethod = "POST" | "PUT" | "PATCH" | "GET" | "DELETE";

export interface Target {
  url: string;
  method?: HttpMethod;
  headers?: Record<string, string>;
  timeout?: Duration;
  body?: unknown;
}

export interface ScheduleOptions {
  /** Exactly one of delay / dueAt; neither: due now. */
  delay?: Duration;
  dueAt?: Time;
  payload?: unknown;
  repeat?: Repeat | null;
  tags?: string[];
  maxAttempts?: number;
  backoff?: Backoff;
  ifExists?: "replace" | "keep" | "error";
  target?: Target | null;
  /** 0–9, default 0: among the queue's tasks already due, higher ones are leased first. */
  priority?: number;
  /** Sent as `{"max_wait": …}`; not with ifExists keep or error (field "debounce"). */
  debounce?: Debounce;
  /**
   * The task's group: due tasks are handed out round robin between a queue's groups, and
   * the queue's group_concurrency limits each group's live leases. Not "" nor control
   * characters (field "group").
   */
  group?: string;
  /**
   * A dedupe window (a duration, or `{ window, dead: true }`): within it after the key's
   * task completed, a schedule of the key stores nothing and answers "kept" with the
   * completion. Not 0 (field "unique_for").
   */
  uniqueFor?: Duration | UniqueFor;
  /**
   * A working-time calendar's name: delay counts its working time (a whole number of
   * days counts working days), dueAt needs align, neither is its next opening. The
   * answer's due_at is the instant resolved. With repeat, the repeat runs in its working
   * time. Field "calendar" for one the server does not serve.
   */
  calendar?: string;
  /** With calendar and dueAt: a time outside working hours moves to the next opening. */
  align?: "next_open";
  /** Default "fire_once". */
  misfire?: Misfire;
  /** With misfire "skip" only: later than this past its due time, a first try does not fire. Default 1m. */
  misfireAfter?: Duration;
  /** With misfire "fire_all" only: at most this many missed occurrences fire, 1–1000. Default 10. */
  catchUpMax?: number;
  /** Default "skip"; under "allow" a key longer than 487 bytes is refused (field "overlap"). */
  overlap?: Overlap;
  /** Each due time moves later by a uniform draw in [0, jitter); at most 12h, shorter than a repeat's every. */
  jitter?: Duration;
}

export interface BatchItem extends ScheduleOptions {
  key: string;
}

/** The server's task object (API.md, "Task object"). */
export interface Task {
  queue: string;
  key: string;
  state: "scheduled" | "leased" | "dead";
  due_at: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  backoff: { initial: string; factor: number; max: string };
  repeat: RepeatShown | null;
  tags: string[];
  version: number;
  created_at: string;
  updated_at: string;
  lease_expires_at: string | null;
  last_error: string | null;
  target: (Target & { method: HttpMethod; timeout: string }) | null;
  /** 0–9; higher first among the queue's tasks already due. */
  priority: number;
  /** The task's group; null when it has none. */
  group: string | null;
  /** The task's dedupe window: a duration when held after done only; null without one. */
  unique_for: string | { window: string; dead: true } | null;
  /** The working-time calendar's name; null without one. */
  calendar: string | null;
  /** The timing policies with their effective values (the defaults where none was given). */
  misfire: Misfire;
  /** A duration ("1m" by default); it applies under misfire "skip". */
  misfire_after: string;
  /** 10 by default; it applies under misfire "fire_all". */
  catch_up_max: number;
  overlap: Overlap;
  /** A duration; null without jitter. */
  jitter: string | null;
}

export type ScheduleOutcome = "created" | "replaced" | "kept";

/** The task that completed under the key within its dedupe window, and so kept a schedule. */
export interface Completed {
  queue: string;
  key: string;
  id: number;
  state: "done";
  completed_at: string;
  /** Tries of its last occurrence that failed or whose lease expired. */
  attempts: number;
  /** The occurrence that completed. */
  occurrence: number;
  /** completed_at + the window: until then a schedule of the key is kept. */
  unique_until: string;
}

/**
 * The answer to a schedule: the task created, replaced or kept (a dead task holding its
 * key is kept untouched); or, kept by the dedupe window of a task of the key that
 * completed, that completion and no task. Tell them apart by `completed`.
 */
export type ScheduleResult =
  | { outcome: ScheduleOutcome; task: Task; completed?: undefined }
  | { outcome: "kept"; completed: Completed; task?: undefined };

export interface ApiErrorBody {
  code: string;
  message: string;
  field?: string;
}

export type BatchResult =
  | { key: string; outcome: ScheduleOutcome; completed?: undefined }
  | { key: string; outcome: "kept"; completed: Completed }
  | { key: string; error: ApiErrorBody };

export interface Page {
  tasks: Task[];
  next_cursor: string | null;
}

/** A group of a queue with its tasks by state; leased is what group_concurrency counts. */
export interface GroupCounts {
  group: string;
  scheduled: number;
  leased: number;
  dead: number;
}

export interface GroupsPage {
  groups: GroupCounts[];
  next_cursor: string | null;
}

export interface ListOptions {
  state?: "scheduled" | "leased" | "dead";
  tag?: string;
  limit?: number;
  cursor?: string;
}

export interface QueueSummary {
  name: string;
  scheduled: number;
  leased: number;
  dead: number;
  next_due_at: string | null;
  paused: boolean;
}

export interface QueueStats extends QueueSummary {
  oldest_overdue_ms: number | null;
  lag_ms: { p50: number | null; p99: number | null };
}

export interface QueueSettings {
  queue: string;
  source: "api" | "config";
  /** The policies in force, the server's own where none was set. */
  defaults: { max_attempts: number; backoff: Task["backoff"]; repeat: RepeatShown | null };
  action: Record<string, unknown> | null;
  concurrency: number;
  rate: string | null;
  /** At most this many tasks of one group leased at once; null for no limit. */
  group_concurrency: number | null;
  shards: number;
  paused: boolean;
  version: number;
  updated_at: string;
  [field: string]: unknown;
}

export interface SettingsInput {
  defaults?: { max_attempts?: number; backoff?: Backoff; repeat?: RepeatBody | null };
  action?: Record<string, unknown> | null;
  concurrency?: number;
  rate?: string | null;
  group_concurrency?: number | null;
  shards?: number;
  targets?: boolean;
  [field: string]: unknown;
}

export interface Lease {
  lease_id: string;
  expires_at: string;
  attempt: number;
  delivery_id: string;
  /** The time the occurrence this lease stands for was scheduled for (before jitter, retries and misfires). */
  scheduled_for: string;
  /** Later occurrences of a repeat already due that will not fire of their own: this firing stands in for them (0 on time). */
  missed: number;
  task: Task;
}

export type AckOutcome =
  | { outcome: "done" }
  | { outcome: "retry"; delay?: Duration; error?: string }
  | { outcome: "reschedule"; delay?: Duration; dueAt?: Time }
  | { outcome: "fail"; error?: string };

export type AckItem = AckOutcome & { leaseId: string };

export interface AckResult {
  lease_id: string | null;
  status: 204 | 400 | 404 | 409;
  error?: ApiErrorBody | string;
}

export interface ClientOptions {
  /** Default: PUNCTUAL_SERVER, else http://127.0.0.1:7575. */
  server?: string;
  /** Default: PUNCTUAL_TOKEN. */
  token?: string;
  /** Per attempt (a long poll gets its wait on top). Default 10 000. */
  timeoutMs?: number;
  /** Retries on 503 and connection errors for calls safe to repeat. Default 3. */
  retries?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined | null>;
  headers?: Record<string, string>;
  retry?: boolean;
  retries?: number;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export declare class Client {
  constructor(options?: ClientOptions);
  readonly server: string;
  readonly token: string | undefined;
  request(method: string, path: string, options?: RequestOptions): Promise<{ status: number; body: any; headers: Headers }>;

  schedule(queue: string, key: string, options?: ScheduleOptions): Promise<ScheduleResult>;
  scheduleMany(queue: string, items: BatchItem[]): Promise<BatchResult[]>;
  get(queue: string, key: string): Promise<Task>;
  cancel(queue: string, key: string): Promise<void>;
  cancelTag(queue: string, tag: string): Promise<number>;
  listPage(queue: string, options?: ListOptions): Promise<Page>;
  list(queue: string, options?: Omit<ListOptions, "cursor">): AsyncGenerator<Task, void, undefined>;
  groupsPage(queue: string, options?: { limit?: number; cursor?: string }): Promise<GroupsPage>;

  queues(): Promise<QueueSummary[]>;
  queue(queue: string): Promise<QueueStats>;
  getSettings(queue: string): Promise<QueueSettings>;
  putSettings(queue: string, settings: SettingsInput, options?: { ifVersion?: number }): Promise<QueueSettings>;
  patchSettings(queue: string, fields: SettingsInput, options?: { ifVersion?: number }): Promise<QueueSettings>;
  deleteSettings(queue: string, options?: { ifVersion?: number }): Promise<void>;
  pause(queue: string): Promise<QueueSettings>;
  resume(queue: string): Promise<QueueSettings>;
  purge(queue: string, options?: { state?: "scheduled" | "dead" | "all" }): Promise<number>;

  calendars(): Promise<Calendar[]>;
  /** NotFoundError when there is none. */
  getCalendar(name: string): Promise<Calendar>;
  /** ConflictError when ifVersion names another version (0: only if it does not exist yet). */
  putCalendar(name: string, calendar: CalendarInput, options?: { ifVersion?: number }): Promise<Calendar>;
  deleteCalendar(name: string, options?: { ifVersion?: number }): Promise<void>;

  deadPage(queue: string, options?: { limit?: number; cursor?: string }): Promise<Page>;
  dead(queue: string, options?: { limit?: number }): AsyncGenerator<Task, void, undefined>;
  retryDead(queue: string, key: string): Promise<Task>;
  retryDeadMany(queue: string, options?: { tag?: string; keys?: string[] }): Promise<number>;
  deleteDead(queue: string, key: string): Promise<void>;

  lease(
    queue: string,
    options?: { max?: number; lease?: Duration; wait?: Duration; signal?: AbortSignal; retries?: number },
  ): Promise<Lease[]>;
  ack(leaseId: string, outcome?: AckOutcome, options?: { signal?: AbortSignal }): Promise<void>;
  acks(items: AckItem[], options?: { signal?: AbortSignal }): Promise<AckResult[]>;
  extend(leaseId: string, lease: Duration, options?: { signal?: AbortSignal }): Promise<{ lease_id: string; expires_at: string }>;
}

/** Milliseconds of a duration string ("1h 30m", "1500ms") or number; null when not understood. */
export declare function durationMs(d: Duration): number | null;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export declare function jsonLogger(options?: {
  level?: "debug" | "info" | "warn" | "error";
  stream?: { write(line: string): unknown };
}): Logger;
export declare const quietLogger: Logger;

export interface TaskContext {
  queue: string;
  key: string;
  payload: any;
  /** This try's ordinal, from 1. */
  attempt: number;
  /** The same for every try of one occurrence: use it to make the handler idempotent. */
  deliveryId: string;
  /** The time the occurrence was scheduled for (before jitter, retries and misfires). */
  scheduledFor: string;
  /** Later occurrences already due that this firing stands in for (0 on time). */
  missed: number;
  dueAt: string;
  tags: string[];
  /** The task's priority, 0–9. */
  priority: number;
  /** The task's group, null when it has none. */
  group: string | null;
  leaseId: string;
  task: Task;
  /** Aborted when the lease is lost or the worker stops without waiting for this handler. */
  signal: AbortSignal;
}

export type HandlerResult = void | undefined | null | AckOutcome;
export type Handler = (task: TaskContext) => HandlerResult | Promise<HandlerResult>;

export interface WorkerOptions {
  /** The lease asked for, extended every leaseForMs/3 while a handler runs. Default 30 000. */
  leaseForMs?: number;
  /** Long-poll wait of each lease request (≤ 60 000). Default 5 000. */
  waitMs?: number;
  /** Default: JSON lines on stderr from info up. null: quiet. */
  logger?: Logger | null;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

export declare class Worker {
  constructor(client: Client, options?: WorkerOptions);
  handle(queue: string, handler: Handler, options?: { concurrency?: number }): this;
  start(): Promise<void>;
  run(): Promise<void>;
  stop(options?: { graceMs?: number }): Promise<void>;
  readonly running: number;
}

export declare function done(): { outcome: "done" };
export declare function retry(delayMs?: Duration, error?: unknown): { outcome: "retry"; delay?: Duration; error?: string };
export declare function reschedule(when: { delay?: Duration; dueAt?: Time }): {
  outcome: "reschedule";
  delay?: Duration;
  dueAt?: Time;
};
export declare function fail(error?: unknown): { outcome: "fail"; error?: string };

export declare function verifySignature(options: {
  body: string | Uint8Array;
  header: string | null | undefined;
  secret: string | Uint8Array;
  toleranceSec?: number;
  now?: number | Date;
}): boolean;

export declare class PunctualError extends Error {
  constructor(message: string, options?: { code?: string; status?: number; field?: string | null; cause?: unknown });
  /** The API's error code (not_found, conflict, …; "unavailable" for connection errors). */
  readonly code: string;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The request field the server named, for invalid_argument. */
  readonly field: string | null;
}
export declare class NotFoundError extends PunctualError {}
export declare class ConflictError extends PunctualError {}
export declare class InvalidArgumentError extends PunctualError {}
export declare class UnauthorizedError extends PunctualError {}
export declare class ForbiddenError extends PunctualError {}
export declare class UnavailableError extends PunctualError {}
export declare function errorFromResponse(status: number, body: unknown): PunctualError;

/**
 * A PostgreSQL connection as the outbox uses it: `pg`'s Client and PoolClient (told by
 * `query` and `escapeIdentifier`), or another driver's with `dialect: "postgres"`.
 */
export interface OutboxPostgresConnection {
  query(text: string, values: string[]): Promise<{ rows: Array<{ id?: unknown }> }>;
}

/**
 * A MySQL/MariaDB connection as the outbox uses it: `mysql2/promise`'s Connection and
 * PoolConnection (told by `execute` and `beginTransaction`), or another driver's with
 * `dialect: "mysql"`.
 */
export interface OutboxMysqlConnection {
  query(sql: string, values: string[]): Promise<unknown>;
}

export type OutboxConnection = OutboxPostgresConnection | OutboxMysqlConnection;

/** "postgres" (the body cast to jsonb) or "mysql" (MySQL and MariaDB: `key` quoted, the body a JSON string). */
export type OutboxDialect = "postgres" | "mysql";

export interface OutboxOptions {
  /**
   * The outbox table (default punctual_outbox): letters, digits and _ (not starting
   * with a digit), optionally schema-qualified; anything else is a TypeError.
   */
  table?: string;
  /** Default: told from the connection (pg Client, mysql2/promise Connection). */
  dialect?: OutboxDialect;
}

/**
 * The outbox helpers: each INSERTs one row into the outbox table through your
 * connection, inside your transaction, and resolves to the row's id (a bigint, as a
 * string). Never commits, rolls back or opens a connection; a call refused by its checks
 * rejects and writes nothing.
 */
export declare class Outbox {
  constructor(options?: OutboxOptions);
  readonly table: string;
  readonly dialect: OutboxDialect | undefined;
  /** A "schedule" row whose body is what client.schedule(queue, key, options) sends. */
  schedule(db: OutboxConnection, queue: string, key: string, options?: ScheduleOptions & OutboxOptions): Promise<string | undefined>;
  /** A "cancel" row: DELETE /v1/queues/{queue}/tasks/{key}. */
  cancel(db: OutboxConnection, queue: string, key: string, options?: OutboxOptions): Promise<string | undefined>;
  /** A "cancel_tag" row: DELETE /v1/queues/{queue}/tags/{tag}. */
  cancelTag(db: OutboxConnection, queue: string, tag: string, options?: OutboxOptions): Promise<string | undefined>;
}

/** The helpers for punctual_outbox, the dialect told from each connection. */
export declare const outbox: Outbox;
