// The BullMQ baseline of `punctual bench`: one workload of the bench, run on BullMQ on
// the Redis it is given, printing one JSON object on stdout. `punctual bench` runs it
// after punctual's own run of the same workload (see crates/punctual-bench/src/bullmq.rs)
// and turns its raw figures into the BullMQ column of its report; it can also be run
// alone:
//
//   node bench.mjs --redis redis://127.0.0.1:6379 --prefix my-run --workload burst \
//     --tasks 100000 --concurrency 50
//
// Workloads, each shaped as punctual's:
//   burst       N jobs due at one instant, added with addBulk in batches of 1,000 with
//               `delay`; a Worker of --concurrency drains them. Lag = processing start -
//               due, per job. The instant is 3 s + N/10 ms after adding starts (punctual's
//               is 3 s + N/50 ms): BullMQ adds jobs more slowly, and every job must be
//               stored before the instant for the drain to measure the drain alone
//               (whether they were is reported).
//   spread      N jobs due uniformly over --window-ms (the first 1 s after adding starts),
//               added in due order in batches of 1,000. Lag as above.
//   throughput  for --duration-ms: 4 producers adding batches of 100 due now (pausing
//               while more than 5,000 wait) while the Worker processes them; jobs
//               completed (the Worker's `completed` events) are counted over the
//               duration, then every job added must be processed.
//   pending     N jobs due in 30 days with data {"n": i}, batches of 1,000: growth of
//               Redis `used_memory` per job.
//
// Every job's data is {"n": i}: the number identifies it, so a job processed twice is
// counted as a duplicate (as punctual's keys are) and one never processed as lost.
// Completed jobs are removed by the Worker (`removeOnComplete: {count: 0}`), as punctual
// deletes a task acknowledged done. Every key is under --prefix; all of them are deleted
// before the program exits, whatever happened.
//
// Output: {"bullmq": VERSION, "workload": …, …raw figures…}; lags as arrays of whole
// milliseconds, which the bench summarises with its own percentiles.

import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const BATCH = 1000;
const LEAD_MS = 1000;
const BURST_DRAIN_LIMIT_MS = 600_000;
const SPREAD_GRACE_MS = 60_000;
const THROUGHPUT_DRAIN_LIMIT_MS = 120_000;
const PRODUCERS = 4;
const PRODUCER_BATCH = 100;
const MAX_BACKLOG = 5000;
const FAR_MS = 30 * 86_400_000;

const require = createRequire(import.meta.url);
const VERSION = require('bullmq/package.json').version;

function options() {
  const { values } = parseArgs({
    options: {
      redis: { type: 'string' },
      prefix: { type: 'string' },
      workload: { type: 'string' },
      tasks: { type: 'string', default: '100000' },
      'window-ms': { type: 'string', default: '20000' },
      'duration-ms': { type: 'string', default: '10000' },
      concurrency: { type: 'string', default: '50' },
    },
  });
  const positive = (name) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number above 0, not '${values[name]}'`);
    return n;
  };
  if (!values.redis) throw new Error('--redis URL is required (e.g. redis://127.0.0.1:6379)');
  if (!values.prefix || values.prefix.includes(' ')) throw new Error('--prefix is required: the key prefix of this run, without spaces');
  const workloads = ['burst', 'spread', 'throughput', 'pending'];
  if (!workloads.includes(values.workload)) throw new Error(`--workload is one of ${workloads.join(', ')}`);
  return {
    redis: values.redis,
    prefix: values.prefix,
    workload: values.workload,
    tasks: positive('tasks'),
    windowMs: positive('window-ms'),
    durationMs: positive('duration-ms'),
    concurrency: positive('concurrency'),
  };
}

// What the Worker saw: a lag per distinct job, and how many were seen again.
class Recorder {
  constructor(expected) {
    this.expected = expected;
    this.seen = new Set();
    this.lags = [];
    this.duplicates = 0;
    this.waiters = [];
  }

  record(n, lag) {
    if (this.seen.has(n)) {
      this.duplicates += 1;
      return;
    }
    this.seen.add(n);
    this.lags.push(lag);
    if (this.lags.length >= this.expected) this.waiters.splice(0).forEach((wake) => wake());
  }

  get fired() {
    return this.lags.length;
  }

  expect(expected) {
    this.expected = expected;
    if (this.fired >= expected) this.waiters.splice(0).forEach((wake) => wake());
  }

  // Resolves true once every expected job was processed, false after `ms`.
  waitAll(ms) {
    if (this.fired >= this.expected) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.fired >= this.expected), ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

function connection(opts) {
  // A Worker's blocking connection needs maxRetriesPerRequest: null.
  return { url: opts.redis, maxRetriesPerRequest: null };
}

function queue(opts, name) {
  return new Queue(name, { connection: connection(opts), prefix: opts.prefix });
}

// A Worker recording, for each job, processing start - due(job).
async function worker(opts, name, recorder, due) {
  const w = new Worker(
    name,
    async (job) => {
      recorder.record(job.data.n, Date.now() - due(job));
    },
    {
      connection: connection(opts),
      prefix: opts.prefix,
      concurrency: opts.concurrency,
      removeOnComplete: { count: 0 },
    },
  );
  w.on('error', (e) => console.error(`bullmq worker: ${e.message}`));
  await w.waitUntilReady();
  return w;
}

// Adds jobs `first`..`end` (exclusive) with data {n} and the delay `dueOf(n) - now`.
async function addRange(q, first, end, dueOf) {
  const now = Date.now();
  const jobs = [];
  for (let n = first; n < end; n++) {
    jobs.push({ name: 'task', data: { n }, opts: { timestamp: now, delay: Math.max(0, dueOf(n) - now) } });
  }
  await q.addBulk(jobs);
}

async function burst(opts) {
  const name = 'bench-burst';
  const n = opts.tasks;
  const recorder = new Recorder(n);
  const q = queue(opts, name);
  const at = Date.now() + 3000 + Math.floor(n / 10);
  const w = await worker(opts, name, recorder, () => at);
  for (let first = 0; first < n; first += BATCH) {
    await addRange(q, first, Math.min(first + BATCH, n), () => at);
  }
  const scheduledBeforeDue = Date.now() <= at;
  const allFired = await recorder.waitAll(Math.max(0, at - Date.now()) + BURST_DRAIN_LIMIT_MS);
  await w.close();
  await q.close();
  return { tasks: n, scheduled_before_due: scheduledBeforeDue, all_fired: allFired, lags_ms: recorder.lags, duplicates: recorder.duplicates };
}

async function spread(opts) {
  const name = 'bench-spread';
  const n = opts.tasks;
  const recorder = new Recorder(n);
  const q = queue(opts, name);
  const start = Date.now() + LEAD_MS;
  const step = opts.windowMs / n;
  const dueOf = (i) => start + Math.floor(i * step);
  const w = await worker(opts, name, recorder, (job) => dueOf(job.data.n));
  let scheduledAfterDue = 0;
  for (let first = 0; first < n; first += BATCH) {
    const end = Math.min(first + BATCH, n);
    await addRange(q, first, end, dueOf);
    const now = Date.now();
    for (let i = first; i < end; i++) if (dueOf(i) < now) scheduledAfterDue += 1;
  }
  const allFired = await recorder.waitAll(opts.windowMs + SPREAD_GRACE_MS);
  await w.close();
  await q.close();
  return {
    tasks: n,
    window_ms: opts.windowMs,
    scheduled_after_due: scheduledAfterDue,
    all_fired: allFired,
    lags_ms: recorder.lags,
    duplicates: recorder.duplicates,
  };
}

async function throughput(opts) {
  const name = 'bench-throughput';
  const recorder = new Recorder(Infinity);
  const q = queue(opts, name);
  // Jobs are due now: lag is processing start - add time (not reported, only counted).
  const w = await worker(opts, name, recorder, (job) => job.timestamp);
  let completed = 0;
  w.on('completed', () => {
    completed += 1;
  });
  let next = 0;
  let scheduled = 0;
  const started = Date.now();
  const deadline = started + opts.durationMs;
  const producer = async () => {
    while (Date.now() < deadline) {
      if (scheduled - recorder.fired >= MAX_BACKLOG) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      const first = next;
      next += PRODUCER_BATCH;
      await addRange(q, first, first + PRODUCER_BATCH, () => 0);
      scheduled += PRODUCER_BATCH;
    }
  };
  await Promise.all(Array.from({ length: PRODUCERS }, producer));
  const elapsedMs = Date.now() - started;
  const completedInDuration = completed;
  recorder.expect(scheduled);
  const allFired = await recorder.waitAll(THROUGHPUT_DRAIN_LIMIT_MS);
  await w.close();
  const left = await q.count();
  await q.close();
  return {
    duration_ms: opts.durationMs,
    elapsed_ms: elapsedMs,
    scheduled,
    completed: completedInDuration,
    fired: recorder.fired,
    duplicates: recorder.duplicates,
    all_fired: allFired,
    left_in_queue: left,
  };
}

async function usedMemory(redis) {
  const info = await redis.info('memory');
  const line = info.split('\r\n').find((l) => l.startsWith('used_memory:'));
  if (!line) throw new Error('INFO memory has no used_memory');
  return Number(line.slice('used_memory:'.length));
}

async function pending(opts, redis) {
  const name = 'bench-pending';
  const n = opts.tasks;
  const q = queue(opts, name);
  await q.waitUntilReady();
  const before = await usedMemory(redis);
  const started = Date.now();
  const due = started + FAR_MS;
  for (let first = 0; first < n; first += BATCH) {
    await addRange(q, first, Math.min(first + BATCH, n), () => due);
  }
  const elapsedMs = Math.max(1, Date.now() - started);
  const after = await usedMemory(redis);
  const waiting = await q.getDelayedCount();
  await q.close();
  return {
    tasks: n,
    delayed: waiting,
    insert_per_second: (n * 1000) / elapsedMs,
    used_memory_before: before,
    used_memory_after: after,
    bytes_per_task: Math.max(0, after - before) / n,
  };
}

// Deletes every key under the run's prefix.
async function cleanUp(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function main() {
  const opts = options();
  const redis = new IORedis(opts.redis, { maxRetriesPerRequest: 3 });
  try {
    const run = { burst, spread, throughput, pending }[opts.workload];
    const figures = await run(opts, redis);
    const out = { bullmq: VERSION, workload: opts.workload, concurrency: opts.concurrency, ...figures };
    return `${JSON.stringify(out)}\n`;
  } finally {
    await cleanUp(redis, opts.prefix);
    redis.disconnect();
  }
}

// Writes to a pipe are asynchronous: exit only once the whole answer is written.
main().then(
  (text) => process.stdout.write(text, () => process.exit(0)),
  (e) => {
    console.error(`bench.mjs: ${e && e.message ? e.message : e}`);
    process.exit(1);
  },
);
