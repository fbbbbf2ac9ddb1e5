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

import { ConflictError, NotFoundError, UnavailableError } from "./errors.js";
import { sleep } from "./client.js";

/** Outcome helpers for handlers. */
export const done = () => ({ outcome: "done" });
/** Retry after `delayMs` (default: the task's backoff), recording `error` as last_error. */
export const retry = (delayMs, error) => ({ outcome: "retry", delay: delayMs, error: errorText(error) });
/** Fire again later as a new occurrence: `{delay}` (ms or duration string) or `{dueAt}`. */
export const reschedule = ({ delay, dueAt } = {}) => ({ outcome: "reschedule", delay, dueAt });
/** Dead now, with `error` as last_error. */
export const fail = (error) => ({ outcome: "fail", error: errorText(error) });

function errorText(e) {
  if (e === undefined || e === null) return undefined;
  return e instanceof Error ? e.message : String(e);
}

function normalize(result) {
  if (result === undefined || result === null) return { outcome: "done" };
  if (typeof result === "object" && typeof result.outcome === "string") return result;
  return { outcome: "done" };
}

/** Logs one JSON object per line on stderr, from `level` up. */
export function jsonLogger({ level = "info", stream = process.stderr } = {}) {
  const order = { debug: 0, info: 1, warn: 2, error: 3 };
  const line = (lv) => (msg, fields = {}) => {
    if (order[lv] < order[level]) return;
    stream.write(JSON.stringify({ ts: new Date().toISOString(), level: lv, msg, ...fields }) + "\n");
  };
  return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
}

export const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

export class Worker {
  #queues = new Map();
  #jobs = new Set();
  #loops = [];
  #pollAbort = new AbortController();
  #stopping = false;
  #stopPromise = null;
  #stopped;
  #resolveStopped;
  #connected = null;
  #connectionChanges = 0; // how many times #connected changed; requests note it when sent
  #pendingAcks = [];
  #flushing = null;

  constructor(
    client,
    { leaseForMs = 30_000, waitMs = 5_000, logger = jsonLogger(), reconnectMinMs = 100, reconnectMaxMs = 5_000 } = {},
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
  handle(queue, handler, { concurrency = 1 } = {}) {
    if (this.#loops.length) throw new Error("register handlers before start()");
    if (!(concurrency >= 1)) throw new RangeError("concurrency must be at least 1");
    this.#queues.set(queue, { name: queue, handler, concurrency, running: 0, wake: () => {} });
    return this;
  }

  /** Start a loop per queue; resolves once they run. */
  async start() {
    if (this.#loops.length || this.#stopping) return;
    for (const q of this.#queues.values()) {
      this.#loops.push(
        this.#loop(q).catch((err) => this.logger.error("worker loop ended by a bug", { queue: q.name, error: String(err) })),
      );
    }
    this.logger.info("worker started", { queues: [...this.#queues.keys()] });
  }

  /** start(), then resolves when the worker has stopped. */
  async run() {
    await this.start();
    await this.#stopped;
  }

  /** Number of handlers running now. */
  get running() {
    return this.#jobs.size;
  }

  /**
   * Stop leasing, let running handlers finish within `graceMs` and ack them; leave the
   * leases of those still running to expire. Resolves when done (idempotent).
   */
  stop({ graceMs = 10_000 } = {}) {
    this.#stopPromise ??= this.#stop(graceMs);
    return this.#stopPromise;
  }

  async #stop(graceMs) {
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
  #setConnected(up, err, sentAt) {
    if (this.#connected === up || sentAt !== this.#connectionChanges) return;
    this.#connectionChanges++;
    const was = this.#connected;
    this.#connected = up;
    if (!up) this.logger.warn("server unreachable; reconnecting with backoff", { server: this.client.server, error: err?.message });
    else if (was === false) this.logger.info("reconnected", { server: this.client.server });
  }

  async #loop(q) {
    let backoff = this.reconnectMinMs;
    while (!this.#stopping) {
      const free = q.concurrency - q.running;
      if (free <= 0) {
        await new Promise((r) => (q.wake = r));
        continue;
      }
      let leases;
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
        else this.logger.error("lease refused", { queue: q.name, code: err.code, error: err.message });
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

  #run(q, lease) {
    const task = lease.task;
    const fields = { queue: q.name, key: task.key, attempt: lease.attempt, delivery_id: lease.delivery_id };
    const job = { lease, fields, ctl: new AbortController(), lost: false, abandoned: false, timer: null, finished: null };
    q.running++;
    this.#jobs.add(job);
    const ctx = {
      queue: q.name,
      key: task.key,
      payload: task.payload,
      attempt: lease.attempt,
      deliveryId: lease.delivery_id,
      scheduledFor: lease.scheduled_for,
      missed: lease.missed ?? 0,
      dueAt: task.due_at,
      tags: task.tags ?? [],
      priority: task.priority ?? 0,
      group: task.group ?? null,
      leaseId: lease.lease_id,
      task,
      signal: job.ctl.signal,
    };
    job.timer = setInterval(() => this.#extend(job), Math.max(100, Math.floor(this.leaseForMs / 3)));
    job.finished = (async () => {
      let outcome;
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
        await this.#ack({ leaseId: lease.lease_id, ...outcome }, fields);
        return;
      }
    })()
      .catch((err) => this.logger.error("handler bookkeeping failed", { ...fields, error: String(err) }))
      .finally(() => {
        if (this.#jobs.delete(job)) {
          q.running--;
          q.wake();
        }
      });
  }

  async #extend(job) {
    if (job.extending || job.lost || job.abandoned) return;
    job.extending = true;
    try {
      await this.client.extend(job.lease.lease_id, this.leaseForMs);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) {
        job.lost = true;
        clearInterval(job.timer);
        job.ctl.abort(new Error("lease lost"));
      } else {
        this.logger.warn("lease extension failed; trying again", { ...job.fields, error: err.message });
      }
    } finally {
      job.extending = false;
    }
  }

  #ack(item, fields) {
    return new Promise((resolve) => {
      this.#pendingAcks.push({ item, fields, resolve });
      this.#flushing ??= this.#flush().finally(() => (this.#flushing = null));
    });
  }

  async #flush() {
    await new Promise((r) => setImmediate(r)); // gather the acks of this turn
    while (this.#pendingAcks.length) {
      await this.#sendBatch(this.#pendingAcks.splice(0, 1000));
    }
  }

  async #sendBatch(batch) {
    const deadline = Date.now() + this.leaseForMs;
    let backoff = this.reconnectMinMs;
    for (let attempt = 1; ; attempt++) {
      const sentAt = this.#connectionChanges;
      try {
        const results = await this.client.acks(batch.map((b) => b.item));
        this.#setConnected(true, undefined, sentAt);
        results.forEach((r, i) => {
          const b = batch[i];
          if (r.status === 204) this.logger.debug("acked", { ...b.fields, outcome: b.item.outcome });
          else if (r.status === 409 && attempt > 1) this.logger.debug("ack already applied or lease lost", b.fields);
          else this.logger.warn("ack refused", { ...b.fields, status: r.status, error: r.error?.message ?? r.error });
          b.resolve(r.status === 204);
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
          this.logger.error("ack not sent; the lease will expire", { ...b.fields, error: err.message });
          b.resolve(false);
        }
        return;
      }
    }
  }
}
