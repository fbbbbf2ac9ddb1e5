// The pull worker: handlers registered per queue, run with a concurrency per queue.
//
// Per queue, one loop long-polls `POST /v1/queues/{q}/lease` for as many tasks as it has
// free slots, and starts a handler for each. While a handler runs, its lease is extended
// every leaseFor/3; when an extension is refused (the lease was lost: expired, the task
// cancelled or replaced) the handler's signal is aborted and its outcome is not acked.
// Outcomes are acked in batches (`POST /v1/acks`), flushed as soon as the event loop
// turns, so a lone ack is not held back.
//
// Connection errors never escape: the loop backs off exponentially and logs once when
// the server is lost and once when it is back: only an answer to a request sent after the
// last such change counts, so the late answer of a server going away (an ack it took
// before it stopped) does not announce it back. stop() stops leasing at once (the open
// long poll is aborted; the server releases what it could not deliver), waits for
// running handlers up to the grace period and acks them; a handler still running after
// that is abandoned unacked, so its lease expires and the task is delivered again.

import { sleep, type Client } from "./client.js";
import { ConflictError, NotFoundError, UnavailableError } from "./errors.js";
import type { AckItem, AckOutcome, Duration, Lease, Task, Time } from "./types.js";

/** What a handler is given: the task and this delivery of it. */
export interface TaskContext<P = any> {
  queue: string;
  key: string;
  payload: P;
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
  /** The W3C trace context the task was scheduled with, to continue; absent without one. */
  traceparent?: string;
  leaseId: string;
  task: Task;
  /** Aborted when the lease is lost or the worker stops without waiting for this handler. */
  signal: AbortSignal;
}

export type HandlerResult = void | undefined | null | AckOutcome;
export type Handler<P = any> = (task: TaskContext<P>) => HandlerResult | Promise<HandlerResult>;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface WorkerOptions {
  /** The lease asked for, extended every leaseForMs/3 while a handler runs. Default 30 000. */
  leaseForMs?: number;
  /** Long-poll wait of each lease request (at most 60 000). Default 5 000. */
  waitMs?: number;
  /** Default: JSON lines on stderr from info up. null: quiet. */
  logger?: Logger | null;
  /** The first wait before reconnecting (then doubled, with jitter). Default 100. */
  reconnectMinMs?: number;
  /** The longest wait between reconnection attempts. Default 5 000. */
  reconnectMaxMs?: number;
}

/** Outcome helpers for handlers. */
export const done = (): { outcome: "done" } => ({ outcome: "done" });
/** Retry after `delayMs` (default: the task's backoff), recording `error` as lastError. */
export const retry = (delayMs?: Duration, error?: unknown): { outcome: "retry"; delay?: Duration; error?: string } => ({
  outcome: "retry",
  delay: delayMs,
  error: errorText(error),
});
/** Fire again later as a new occurrence: `{delay}` (ms or duration string) or `{dueAt}`. */
export const reschedule = ({ delay, dueAt }: { delay?: Duration; dueAt?: Time } = {}): {
  outcome: "reschedule";
  delay?: Duration;
  dueAt?: Time;
} => ({ outcome: "reschedule", delay, dueAt });
/** Dead now, with `error` as lastError. */
export const fail = (error?: unknown): { outcome: "fail"; error?: string } => ({ outcome: "fail", error: errorText(error) });

function errorText(e: unknown): string | undefined {
  if (e === undefined || e === null) return undefined;
  return e instanceof Error ? e.message : String(e);
}

function normalize(result: unknown): AckOutcome {
  if (typeof result === "object" && result !== null && typeof (result as { outcome?: unknown }).outcome === "string") {
    return result as AckOutcome;
  }
  return { outcome: "done" };
}

const LEVELS: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Logs one JSON object per line on `stream` (default stderr), from `level` up. */
export function jsonLogger({
  level = "info",
  stream = process.stderr,
}: { level?: LogLevel; stream?: { write(line: string): unknown } } = {}): Logger {
  const line = (lv: LogLevel) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[lv] < LEVELS[level]) return;
    stream.write(JSON.stringify({ ts: new Date().toISOString(), level: lv, msg, ...fields }) + "\n");
  };
  return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
}

export const quietLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

interface QueueLoop {
  name: string;
  handler: Handler;
  concurrency: number;
  running: number;
  /** Wakes the loop waiting for a free slot. */
  wake: () => void;
}

interface Job {
  lease: Lease;
  fields: Record<string, unknown>;
  ctl: AbortController;
  lost: boolean;
  abandoned: boolean;
  extending: boolean;
  timer: ReturnType<typeof setInterval> | undefined;
  finished: Promise<void> | undefined;
}

interface PendingAck {
  item: AckItem;
  fields: Record<string, unknown>;
  resolve: (acked: boolean) => void;
}

export class Worker {
  readonly client: Client;
  readonly leaseForMs: number;
  readonly waitMs: number;
  readonly logger: Logger;
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  #queues = new Map<string, QueueLoop>();
  #jobs = new Set<Job>();
  #loops: Array<Promise<void>> = [];
  #pollAbort = new AbortController();
  #stopping = false;
  #stopPromise: Promise<void> | null = null;
  #stopped: Promise<void>;
  #resolveStopped: () => void = () => {};
  #connected: boolean | null = null;
  #connectionChanges = 0; // how many times #connected changed; requests note it when sent
  #pendingAcks: PendingAck[] = [];
  #flushing: Promise<void> | null = null;

  constructor(
    client: Client,
    { leaseForMs = 30_000, waitMs = 5_000, logger = jsonLogger(), reconnectMinMs = 100, reconnectMaxMs = 5_000 }: WorkerOptions = {},
  ) {
    this.client = client;
    this.leaseForMs = leaseForMs;
    this.waitMs = Math.min(waitMs, 60_000);
    this.logger = logger ?? quietLogger;
    this.reconnectMinMs = reconnectMinMs;
    this.reconnectMaxMs = reconnectMaxMs;
    this.#stopped = new Promise((r) => (this.#resolveStopped = r));
  }

  /** Register the handler of a queue; up to `concurrency` of its tasks run at once. */
  handle<P = any>(queue: string, handler: Handler<P>, { concurrency = 1 }: { concurrency?: number } = {}): this {
    if (this.#loops.length) throw new Error("register handlers before start()");
    if (!(concurrency >= 1)) throw new RangeError("concurrency must be at least 1");
    this.#queues.set(queue, { name: queue, handler: handler as Handler, concurrency, running: 0, wake: () => {} });
    return this;
  }

  /** Start a loop per queue; resolves once they run. */
  async start(): Promise<void> {
    if (this.#loops.length || this.#stopping) return;
    for (const q of this.#queues.values()) {
      this.#loops.push(
        this.#loop(q).catch((err: unknown) => this.logger.error("worker loop ended by a bug", { queue: q.name, error: String(err) })),
      );
    }
    this.logger.info("worker started", { queues: [...this.#queues.keys()] });
  }

  /** start(), then resolves when the worker has stopped. */
  async run(): Promise<void> {
    await this.start();
    await this.#stopped;
  }

  /** Number of handlers running now. */
  get running(): number {
    return this.#jobs.size;
  }

  /**
   * Stop leasing, let running handlers finish within `graceMs` and ack them; leave the
   * leases of those still running to expire. Resolves when done (idempotent).
   */
  stop({ graceMs = 10_000 }: { graceMs?: number } = {}): Promise<void> {
    this.#stopPromise ??= this.#stop(graceMs);
    return this.#stopPromise;
  }

  async #stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    this.#pollAbort.abort();
    for (const q of this.#queues.values()) q.wake();
    const jobs = [...this.#jobs];
    if (jobs.length) {
      this.logger.info("worker stopping", { running: jobs.length, grace_ms: graceMs });
      const graceOver = new AbortController();
      await Promise.race([Promise.all(jobs.map((j) => j.finished)), sleep(graceMs, graceOver.signal)]);
      graceOver.abort();
    }
    for (const job of this.#jobs) {
      job.abandoned = true;
      clearInterval(job.timer);
      job.ctl.abort(new Error("worker stopped"));
      this.logger.warn("handler outlasted the grace period; its lease is left to expire", job.fields);
    }
    await Promise.all(this.#loops);
    while (this.#flushing) await this.#flushing;
    this.logger.info("worker stopped");
    this.#resolveStopped();
  }

  /** `sentAt`: #connectionChanges when the request that tells `up` was sent. */
  #setConnected(up: boolean, err: Error | undefined, sentAt: number): void {
    if (this.#connected === up || sentAt !== this.#connectionChanges) return;
    this.#connectionChanges++;
    const was = this.#connected;
    this.#connected = up;
    if (!up) this.logger.warn("server unreachable; reconnecting with backoff", { server: this.client.server, error: err?.message });
    else if (was === false) this.logger.info("reconnected", { server: this.client.server });
  }

  async #loop(q: QueueLoop): Promise<void> {
    let backoff = this.reconnectMinMs;
    while (!this.#stopping) {
      const free = q.concurrency - q.running;
      if (free <= 0) {
        await new Promise<void>((r) => (q.wake = r));
        continue;
      }
      let leases: Lease[];
      const sentAt = this.#connectionChanges;
      try {
        leases = await this.client.lease(q.name, {
          max: Math.min(free, 1000),
          lease: this.leaseForMs,
          wait: this.waitMs,
          signal: this.#pollAbort.signal,
          retries: 0,
        });
      } catch (err) {
        if (this.#stopping) break;
        if (err instanceof UnavailableError) this.#setConnected(false, err, sentAt);
        else this.logger.error("lease refused", { queue: q.name, ...errorFields(err) });
        await sleep(backoff / 2 + Math.random() * (backoff / 2), this.#pollAbort.signal);
        backoff = Math.min(this.reconnectMaxMs, backoff * 2);
        continue;
      }
      backoff = this.reconnectMinMs;
      this.#setConnected(true, undefined, sentAt);
      // Leases that arrive as stop() begins still run: they are ours, and get the grace.
      for (const lease of leases) this.#run(q, lease);
    }
  }

  #run(q: QueueLoop, lease: Lease): void {
    const task = lease.task;
    const fields = { queue: q.name, key: task.key, attempt: lease.attempt, delivery_id: lease.deliveryId };
    const job: Job = {
      lease,
      fields,
      ctl: new AbortController(),
      lost: false,
      abandoned: false,
      extending: false,
      timer: undefined,
      finished: undefined,
    };
    q.running++;
    this.#jobs.add(job);
    const ctx: TaskContext = {
      queue: q.name,
      key: task.key,
      payload: task.payload,
      attempt: lease.attempt,
      deliveryId: lease.deliveryId,
      scheduledFor: lease.scheduledFor,
      missed: lease.missed ?? 0,
      dueAt: task.dueAt,
      tags: task.tags ?? [],
      priority: task.priority ?? 0,
      group: task.group ?? null,
      traceparent: task.traceparent,
      leaseId: lease.leaseId,
      task,
      signal: job.ctl.signal,
    };
    job.timer = setInterval(() => void this.#extend(job), Math.max(100, Math.floor(this.leaseForMs / 3)));
    job.finished = (async () => {
      let outcome: AckOutcome;
      try {
        outcome = normalize(await q.handler(ctx));
      } catch (err) {
        outcome = { outcome: "retry", error: errorText(err) ?? "handler failed" };
        this.logger.warn("handler threw; retrying", { ...fields, error: outcome.error });
      }
      clearInterval(job.timer);
      if (job.lost) this.logger.warn("lease lost while the handler ran; not acked", fields);
      else if (job.abandoned) this.logger.warn("handler finished after the grace period; not acked", fields);
      else {
        q.running--;
        this.#jobs.delete(job);
        q.wake();
        await this.#ack({ leaseId: lease.leaseId, ...outcome }, fields);
      }
    })()
      .catch((err: unknown) => this.logger.error("handler bookkeeping failed", { ...fields, error: String(err) }))
      .finally(() => {
        if (this.#jobs.delete(job)) {
          q.running--;
          q.wake();
        }
      });
  }

  async #extend(job: Job): Promise<void> {
    if (job.extending || job.lost || job.abandoned) return;
    job.extending = true;
    try {
      await this.client.extend(job.lease.leaseId, this.leaseForMs);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) {
        job.lost = true;
        clearInterval(job.timer);
        job.ctl.abort(new Error("lease lost"));
      } else {
        this.logger.warn("lease extension failed; trying again", { ...job.fields, ...errorFields(err) });
      }
    } finally {
      job.extending = false;
    }
  }

  #ack(item: AckItem, fields: Record<string, unknown>): Promise<boolean> {
    return new Promise((resolve) => {
      this.#pendingAcks.push({ item, fields, resolve });
      this.#flushing ??= this.#flush().finally(() => (this.#flushing = null));
    });
  }

  async #flush(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // gather the acks of this turn
    while (this.#pendingAcks.length) {
      await this.#sendBatch(this.#pendingAcks.splice(0, 1000));
    }
  }

  async #sendBatch(batch: PendingAck[]): Promise<void> {
    const deadline = Date.now() + this.leaseForMs;
    let backoff = this.reconnectMinMs;
    for (let attempt = 1; ; attempt++) {
      const sentAt = this.#connectionChanges;
      try {
        const results = await this.client.acks(batch.map((b) => b.item));
        this.#setConnected(true, undefined, sentAt);
        batch.forEach((b, i) => {
          const r = results[i];
          if (r?.status === 204) this.logger.debug("acked", { ...b.fields, outcome: b.item.outcome });
          else if (r?.status === 409 && attempt > 1) this.logger.debug("ack already applied or lease lost", b.fields);
          else this.logger.warn("ack refused", { ...b.fields, status: r?.status, error: r?.error?.message });
          b.resolve(r?.status === 204);
        });
        return;
      } catch (err) {
        if (err instanceof UnavailableError && Date.now() < deadline) {
          this.#setConnected(false, err, sentAt);
          await sleep(backoff);
          backoff = Math.min(this.reconnectMaxMs, backoff * 2);
          continue;
        }
        for (const b of batch) {
          this.logger.error("ack not sent; the lease will expire", { ...b.fields, ...errorFields(err) });
          b.resolve(false);
        }
        return;
      }
    }
  }
}

/** A log line's fields for a caught error: its message, and its API code when it has one. */
function errorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: String(err) };
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? { code, error: err.message } : { error: err.message };
}
