// The client's data: the options it takes and the objects it answers, all camelCase.
// wire.ts maps them to and from the server's snake_case JSON (API.md, the OpenAPI
// document); a payload, a target's headers and body and an action's fields are the
// user's own and keep their keys.

/** A duration: "1500ms", "30s", "1h 30m", "7d", ISO 8601 "PT30M", or integer milliseconds. */
export type Duration = string | number;
/** A time: an RFC 3339 string, epoch milliseconds, or a Date. */
export type Time = string | number | Date;

export type TaskState = "scheduled" | "leased" | "dead";

export interface BackoffInput {
  initial?: Duration;
  factor?: number;
  max?: Duration;
}

/** The wait before try n+1 is initial × factor^(n−1), at most max. */
export interface Backoff {
  initial: string;
  factor: number;
  max: string;
}

/**
 * How a repeat's cron is read: Vixie cron (the server's default), or as Spring's or
 * Quartz's CronExpression reads it ("0 0 9 ? * MON-FRI": seconds first, ?, L, W, #).
 */
export type CronSyntax = "vixie" | "spring" | "quartz";

/** Fire again: every (a fixed rate) or cron (wall-clock times in tz), not both. */
export interface Repeat {
  every?: Duration;
  cron?: string;
  tz?: string;
  times?: number;
  until?: Time;
  cronSyntax?: CronSyntax;
}

/** A repeat as the server shows it, in a task and in queue settings' defaults. */
export interface RepeatShown {
  every?: string;
  cron?: string;
  tz?: string;
  times?: number;
  until?: string;
  /** Shown for spring and quartz; absent means vixie. */
  cronSyntax?: "spring" | "quartz";
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
  holidayYears: number[];
  /** When the last entered year ends in the calendar's zone; null: none entered. */
  enteredUntil: string | null;
  /** Said when the entered years end within 30 days, have ended, or none are entered. */
  notice: string | null;
  /** For ifVersion. */
  version: number;
  updatedAt: string;
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
 * fired as a task of its own keyed `<key>@<scheduledFor>` beside the others ("allow":
 * the repeat moves to its next occurrence at once).
 */
export type Overlap = "skip" | "queue" | "allow";

export type HttpMethod = "POST" | "PUT" | "PATCH" | "GET" | "DELETE";

/** Where the server delivers the task when due, with the webhook protocol. */
export interface Target {
  url: string;
  method?: HttpMethod;
  /** Sent as they are: names are not re-cased. */
  headers?: Record<string, string>;
  timeout?: Duration;
  /** Any JSON, sent as it is instead of the standard delivery body. */
  body?: unknown;
}

export interface TargetShown {
  url: string;
  method: HttpMethod;
  headers: Record<string, string>;
  timeout: string;
  /** Present when the task sends its own body. */
  body?: unknown;
}

export interface ScheduleOptions {
  /** Exactly one of delay / dueAt; neither: due now. */
  delay?: Duration;
  dueAt?: Time;
  /** Any JSON, stored and delivered as it is (its keys are never re-cased). */
  payload?: unknown;
  repeat?: Repeat | null;
  tags?: string[];
  maxAttempts?: number;
  backoff?: BackoffInput;
  ifExists?: "replace" | "keep" | "error";
  target?: Target | null;
  /** 0–9, default 0: among the queue's tasks already due, higher ones are leased first. */
  priority?: number;
  /** Not with ifExists keep or error (field "debounce"). */
  debounce?: Debounce;
  /**
   * The task's group: due tasks are handed out round robin between a queue's groups, and
   * the queue's groupConcurrency limits each group's live leases. Not "" nor control
   * characters (field "group").
   */
  group?: string;
  /**
   * A dedupe window (a duration, or `{ window, dead: true }`): within it after the key's
   * task completed, a schedule of the key stores nothing and answers "kept" with the
   * completion. Not 0 (field "uniqueFor").
   */
  uniqueFor?: Duration | UniqueFor;
  /**
   * A working-time calendar's name: delay counts its working time (a whole number of
   * days counts working days), dueAt needs align, neither is its next opening. The
   * answer's dueAt is the instant resolved. With repeat, the repeat runs in its working
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

/** A task (API.md, "Task object"). */
export interface Task {
  queue: string;
  key: string;
  state: TaskState;
  dueAt: string;
  /** As it was scheduled, keys and all. */
  payload: unknown;
  /** Tries that failed or whose lease expired. */
  attempts: number;
  maxAttempts: number;
  backoff: Backoff;
  repeat: RepeatShown | null;
  tags: string[];
  version: number;
  createdAt: string;
  updatedAt: string;
  leaseExpiresAt: string | null;
  lastError: string | null;
  target: TargetShown | null;
  /** 0–9; higher first among the queue's tasks already due. */
  priority: number;
  /** The task's group; null when it has none. */
  group: string | null;
  /** The task's dedupe window: a duration when held after done only; null without one. */
  uniqueFor: string | { window: string; dead: true } | null;
  /** The working-time calendar's name; null without one. */
  calendar: string | null;
  /** The timing policies with their effective values (the defaults where none was given). */
  misfire: Misfire;
  /** A duration ("1m" by default); it applies under misfire "skip". */
  misfireAfter: string;
  /** 10 by default; it applies under misfire "fire_all". */
  catchUpMax: number;
  overlap: Overlap;
  /** A duration; null without jitter. */
  jitter: string | null;
  /**
   * The W3C trace context the task was scheduled with (see TraceOptions); absent without
   * one. A handler continues this trace.
   */
  traceparent?: string;
}

/**
 * A schedule's trace: `traceparent`, a W3C trace context ("00-<trace id>-<span id>-<flags>"),
 * is sent as the `traceparent` header; the task keeps it (or, when the server exports
 * traces, its schedule span's), and every delivery continues that trace.
 */
export interface TraceOptions {
  traceparent?: string;
}

export type ScheduleOutcome = "created" | "replaced" | "kept";

/** The task that completed under the key within its dedupe window, and so kept a schedule. */
export interface Completed {
  queue: string;
  key: string;
  /** The task's id (its delivery ids hold it in hex). */
  id: number;
  state: "done";
  completedAt: string;
  /** Tries of its last occurrence that failed or whose lease expired. */
  attempts: number;
  /** The occurrence that completed. */
  occurrence: number;
  /** completedAt + the window: until then a schedule of the key is kept. */
  uniqueUntil: string;
}

/**
 * The answer to a schedule: the task created, replaced or kept (a dead task holding its
 * key is kept untouched); or, kept by the dedupe window of a task of the key that
 * completed, that completion and no task. Tell them apart by `completed`.
 */
export type ScheduleResult =
  | { outcome: ScheduleOutcome; task: Task; completed?: undefined }
  | { outcome: "kept"; completed: Completed; task?: undefined };

/** An error as the server reports it for one item of a batch. */
export interface ErrorDetail {
  /** not_found, conflict, invalid_argument, … */
  code: string;
  /** A sentence for people. */
  message: string;
  /** The option at fault, camelCase ("delay", "tasks[3].debounce.maxWait"); tasks[i] is scheduleMany's i-th item. */
  field?: string | null;
}

/** One result per scheduleMany item, in order. */
export type BatchResult =
  | { key: string | null; outcome: ScheduleOutcome; completed?: undefined; error?: undefined }
  | { key: string | null; outcome: "kept"; completed: Completed; error?: undefined }
  | { key: string | null; error: ErrorDetail; outcome?: undefined; completed?: undefined };

export interface Page {
  tasks: Task[];
  /** Pass back as cursor for the next page; null at the end. */
  nextCursor: string | null;
}

export interface ListOptions {
  state?: TaskState;
  tag?: string;
  limit?: number;
  cursor?: string;
}

export interface PageOptions {
  limit?: number;
  cursor?: string;
}

/** A group of a queue with its tasks by state; leased is what groupConcurrency counts. */
export interface GroupCounts {
  group: string;
  scheduled: number;
  leased: number;
  dead: number;
}

export interface GroupsPage {
  groups: GroupCounts[];
  nextCursor: string | null;
}

export interface QueueSummary {
  name: string;
  scheduled: number;
  leased: number;
  dead: number;
  /** The earliest due time of a scheduled task. */
  nextDueAt: string | null;
  paused: boolean;
}

export interface QueueStats extends QueueSummary {
  /** How long the earliest scheduled task has been due (0 when none is due). */
  oldestOverdueMs: number;
  /** Fire lag (lease time − due time) of this server's recent leases; null members when none yet. */
  lagMs: { p50: number | null; p99: number | null };
  /** The queue's rows waiting in the outboxes this server drains; absent when it drains none. */
  outbox?: { rowsWaiting: number; oldestAgeMs: number | null } | null;
}

/**
 * A queue's push action: the config file's action table with camelCase keys (url_env is
 * urlEnv). A secret is given only by the name of an environment variable of the server.
 */
export interface Action {
  kind: "webhook" | "email" | "wecom" | "dingtalk" | "feishu" | "slack" | "rabbitmq" | "nats" | "redis-stream";
  url?: string | null;
  urlEnv?: string | null;
  secretEnv?: string | null;
  timeout?: Duration | null;
  concurrency?: number | null;
  rate?: string | null;
  /** Answers that send a task to dead at once (webhook). */
  finalStatuses?: number[] | null;
  body?: string | null;
  /** Sent as they are: names are not re-cased. */
  fields?: Record<string, string> | null;
  smtp?: {
    host: string;
    port?: number | null;
    security?: "plain" | "starttls" | "tls" | null;
    username?: string | null;
    passwordEnv?: string | null;
  } | null;
  from?: string | null;
  to?: string[] | null;
  cc?: string[] | null;
  subject?: string | null;
  text?: string | null;
  html?: string | null;
  mention?: string[] | null;
  mentionAll?: boolean | null;
  mentionMobiles?: string[] | null;
  timezone?: string | null;
  routingKey?: string | null;
  exchange?: string | null;
  mandatory?: boolean | null;
  stream?: string | null;
  maxlen?: number | null;
}

export interface QueueSettings {
  queue: string;
  source: "api" | "config";
  /** The policies in force, the server's own where none was set. */
  defaults: { maxAttempts: number; backoff: Backoff; repeat: RepeatShown | null };
  action: Action | null;
  concurrency: number;
  rate: string | null;
  /** At most this many tasks of one group leased at once; null for no limit. */
  groupConcurrency: number | null;
  /** At most COUNT leases of each group's tasks per DURATION ("10/1m"); null for none. */
  groupRate: string | null;
  shards: number;
  targets: boolean;
  paused: boolean;
  version: number;
  updatedAt: string;
}

/**
 * Queue settings to put or patch. A getSettings answer can be sent back as it is: its
 * queue, source, paused, version and updatedAt are ignored.
 */
export interface SettingsInput {
  defaults?: { maxAttempts?: number | null; backoff?: BackoffInput | null; repeat?: Repeat | null } | null;
  action?: Action | null;
  concurrency?: number | null;
  rate?: string | null;
  groupConcurrency?: number | null;
  groupRate?: string | null;
  shards?: number | null;
  targets?: boolean | null;
}

export interface VersionOptions {
  /** Sent as If-Match: the call applies only at this version (0: only if none exists yet). */
  ifVersion?: number;
}

export type Permission = "read" | "schedule" | "work" | "admin";

/** What the calling token may do. */
export interface Access {
  /** The token's name, as the server's logs call it (`[[access]] name`; `tokens.<n>`, `anyone` without tokens). */
  name: string;
  /** All four for a token of `tokens`, or when the server runs without tokens. */
  permissions: Permission[];
  /** Queue name patterns the permissions hold on (`*` any run of characters; ["*"]: every queue). */
  queues: string[];
}

/**
 * What happened to a task, in its history: "retried" and "deleted" are a dead task put
 * back or removed (by hand, or "deleted" by the dead-task retention).
 */
export type HistoryEventKind =
  | "created"
  | "replaced"
  | "cancelled"
  | "purged"
  | "leased"
  | "extended"
  | "released"
  | "acked"
  | "expired"
  | "retried"
  | "deleted"
  | "imported";

/** A task's state after an event of its history: "gone" once there is no task. */
export type HistoryState = TaskState | "gone";

/** One event of a task's history. A member that does not apply to the event is absent. */
export interface HistoryEvent {
  at: string;
  event: HistoryEventKind;
  state: HistoryState;
  /** The name of the token that made the change; absent for the server's own work (an expiry) and on a server without tokens. */
  by?: string;
  /** The try the event belongs to (leased, acked, expired). */
  attempt?: number;
  /** The lease's number: each lease of the task raises it. */
  lease?: number;
  /** When the task is due after the event. */
  dueAt?: string;
  /** When the lease ends (leased, extended). */
  leaseExpiresAt?: string;
  /** How an acked try ended. */
  outcome?: "done" | "retry" | "reschedule" | "dead";
  /** The handler's error, or why the lease expired (at most 200 bytes). */
  error?: string;
  /** What a replace changed, named as a Task's members: "dueAt", "payload", "tags", "priority", "group", "target", "policies". */
  changed?: string[];
  /** A cancel by tag: the tag. */
  tag?: string;
  /** A push delivery's ack: how long the delivery took. */
  tookMs?: number;
  /** A push delivery's ack: the HTTP status the far end answered. */
  status?: number;
  /** A push delivery's ack: the first bytes (at most 200) of the far end's answer. */
  answer?: string;
  /**
   * A lease (leased): the name of the server node that handed it out, e.g. "web-1:7575 (pid 4242)";
   * absent for a lease taken through the library without a node name.
   */
  node?: string;
  /** A lease (leased): its deliveryId (see Lease), the same for every try of one occurrence. */
  deliveryId?: string;
}

/** What happened to a task, also once it is gone: its events, oldest first (at most the latest 100). */
export interface TaskHistory {
  queue: string;
  key: string;
  /** How long the queue keeps a history after its latest event (its historyRetention). */
  retentionMs: number;
  events: HistoryEvent[];
}

/** What an entry of the audit log records. */
export type AuditAction =
  | "queue.settings.set"
  | "queue.settings.clear"
  | "queue.pause"
  | "queue.resume"
  | "queue.purge"
  | "calendar.set"
  | "calendar.remove"
  | "access.reload";

/** One entry of the server's audit log: an operator's change. */
export interface AuditEntry {
  at: string;
  action: AuditAction;
  /** The name of the token that made it; absent on a server without tokens and for a reload by SIGHUP. */
  by?: string;
  /** The queue it changed, when it changed one. */
  queue?: string;
  /** The calendar it changed, when it changed one. */
  calendar?: string;
  /** What the server adds about it, as it wrote it: its keys are never re-cased. */
  detail?: Record<string, unknown>;
}

/** One page of the audit log, newest first. */
export interface AuditPage {
  entries: AuditEntry[];
  /** Pass back as cursor for the next page; null at the end. */
  nextCursor: string | null;
}

export interface Lease {
  /** Opaque; pass it to ack and extend. */
  leaseId: string;
  expiresAt: string;
  /** This try's ordinal, 1 for the first. */
  attempt: number;
  /** The same for every try of one occurrence. */
  deliveryId: string;
  /** The time the occurrence this lease stands for was scheduled for (before jitter, retries and misfires). */
  scheduledFor: string;
  /** Later occurrences of a repeat already due that will not fire of their own: this firing stands in for them (0 on time). */
  missed: number;
  task: Task;
}

export interface LeaseOptions {
  /** At most this many tasks (default 1, at most 1000). */
  max?: number;
  /** How long the lease lasts (default 30s). */
  lease?: Duration;
  /** Long-poll up to this long for a due task (at most 60s; default: answer at once). */
  wait?: Duration;
  signal?: AbortSignal;
  /** Retries on 503 and connection errors; default the client's. */
  retries?: number;
}

export type AckOutcome =
  | { outcome: "done" }
  | { outcome: "retry"; delay?: Duration; error?: string }
  | { outcome: "reschedule"; delay?: Duration; dueAt?: Time }
  | { outcome: "fail"; error?: string };

export type AckItem = AckOutcome & { leaseId: string };

/** One result per acks item, in order: 204 applied, 400 malformed, 404 unknown lease, 409 no longer live. */
export type AckResult =
  | { leaseId: string | null; status: 204; error?: undefined }
  | { leaseId: string | null; status: 400 | 404 | 409; error: ErrorDetail };

export interface Extended {
  leaseId: string;
  expiresAt: string;
}

export interface SignalOptions {
  signal?: AbortSignal;
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
  /** The first retry's backoff (then doubled, with jitter). Default 100. */
  retryBaseMs?: number;
  /** The longest backoff between retries. Default 2 000. */
  retryMaxMs?: number;
}
