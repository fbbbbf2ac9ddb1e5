//! `throughput`: the most schedule + fire + ack per second the target sustains, then
//! the rate of scheduling alone, each for `--duration`.
//!
//! 1. **Sustained** ([`SustainedLoad`], which `scale` runs on several servers at once):
//!    [`PRODUCERS`] producers schedule batches of [`PRODUCER_BATCH`] tasks due now
//!    while the consumer fires and acknowledges them. Producers pause while more than
//!    [`MAX_BACKLOG`] tasks wait (scheduled, not yet fired), so the rate measured is
//!    one the target keeps up with, not a queue growing without end. Reported: tasks
//!    scheduled per second and tries completed (acknowledged done) per second over the
//!    duration; then every task scheduled must fire (checked).
//! 2. **Schedule only** (tasks due in a day): [`CLIENTS`] concurrent clients each
//!    making single schedule calls (each durable on return: group commit on the
//!    embedded store), then one client scheduling batches of 1,000.
//! 3. On the embedded store, the naive baseline: one durable SQLite commit per task.
//! 4. BullMQ's sustained add + process, shaped as step 1 (see [`super::bullmq`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use indicatif::ProgressBar;
use punctual_testkit::pull::Stop;
use serde::Serialize;
use tokio::task::JoinHandle;

use super::baselines;
use super::bullmq::{BullmqThroughput, ThroughputRatios, over};
use super::driver::{BenchTask, Consumer, ConsumerSettings, Driver, Recorder};
use super::redis_cpu::{self, CpuPerTask};
use super::report::{Figure, figures_beside, rate, thousands, times, with_footer};
use super::stats::per_second;
use super::{Context, Side};

const QUEUE: &str = "bench.throughput";
/// Producers of a [`SustainedLoad`].
pub(crate) const PRODUCERS: usize = 4;
const PRODUCER_BATCH: u64 = 100;
const MAX_BACKLOG: u64 = 5_000;
/// Concurrent clients making single schedule calls.
const CLIENTS: usize = 64;
const SCHEDULE_BATCH: u64 = 1_000;
const DAY_MS: i64 = 86_400_000;
/// How long the tasks left at the end of the sustained phase may take to fire.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Serialize)]
pub(crate) struct ThroughputReport {
    pub(crate) workload: &'static str,
    pub(crate) target: String,
    pub(crate) consumer: ConsumerSettings,
    pub(crate) duration_ms: u64,
    pub(crate) sustained: Sustained,
    /// Single schedule calls from concurrent clients, tasks/s.
    pub(crate) schedule_single_per_second: f64,
    pub(crate) schedule_clients: usize,
    /// Batches of 1,000, tasks/s.
    pub(crate) schedule_batch_per_second: f64,
    /// Redis CPU per task (when the run knows the Redis): scheduling, from the batches
    /// phase; together, from the sustained phase (every task scheduled, fired and
    /// acknowledged); lease + ack, the difference.
    pub(crate) redis_cpu_us_per_task: Option<CpuPerTask>,
    pub(crate) baselines: Vec<RateBaseline>,
    /// BullMQ's sustained add + process, when it ran.
    pub(crate) bullmq: Option<BullmqThroughput>,
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Sustained {
    pub(crate) scheduled: u64,
    pub(crate) scheduled_per_second: f64,
    /// Tries acknowledged done during the duration.
    pub(crate) completed: u64,
    pub(crate) completed_per_second: f64,
    /// Distinct tasks fired, once the last ones drained.
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: u64,
    /// Tasks of the queue still stored once the consumer stopped.
    pub(crate) left_in_store: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct RateBaseline {
    pub(crate) name: &'static str,
    pub(crate) approach: &'static str,
    pub(crate) per_second: f64,
    /// punctual's single calls / this.
    pub(crate) ratio_single: f64,
    /// punctual's batches / this.
    pub(crate) ratio_batch: f64,
}

pub(crate) async fn run<D: Driver>(driver: &D, duration: Duration, cx: &Context<'_>) -> Result<ThroughputReport> {
    let mut notes = Vec::new();
    let redis = cx.redis_cpu.as_ref();
    let before = redis_cpu::read(redis).await?;
    let sustained = sustained(driver, duration, cx, &mut notes).await?;
    let after_sustained = redis_cpu::read(redis).await?;
    let single = schedule_singles(driver, duration, cx).await?;
    let before_batches = redis_cpu::read(redis).await?;
    let (batch, batched) = schedule_batches(driver, duration, cx).await?;
    let after_batches = redis_cpu::read(redis).await?;
    let redis_cpu_us_per_task =
        redis_cpu::per_task([before_batches, after_batches], batched, [before, after_sustained], sustained.scheduled);
    let mut rate_baselines = Vec::new();
    if let Side::Embedded { dir } = cx.side {
        let bar = cx.progress.counter("baseline: one commit per task");
        let dir = dir.join("naive");
        let (count, elapsed) =
            tokio::task::spawn_blocking(move || baselines::naive_commit_per_task(&dir, duration)).await??;
        bar.finish_and_clear();
        let naive = per_second(count, elapsed);
        rate_baselines.push(RateBaseline {
            name: "sqlite_commit_per_task",
            approach: "naive: one durable SQLite commit per task",
            per_second: naive,
            ratio_single: single / naive.max(f64::MIN_POSITIVE),
            ratio_batch: batch / naive.max(f64::MIN_POSITIVE),
        });
    }
    let bullmq = match cx.bullmq() {
        Some((bullmq, redis)) => {
            let mut theirs = bullmq.throughput(redis, duration, &cx.progress).await?;
            theirs.punctual_over_bullmq = Some(ThroughputRatios {
                completed_per_second: over(sustained.completed_per_second, theirs.completed_per_second),
                scheduled_per_second: over(sustained.scheduled_per_second, theirs.scheduled_per_second),
            });
            Some(theirs)
        }
        None => {
            notes.extend(cx.bullmq_skipped.clone());
            None
        }
    };
    Ok(ThroughputReport {
        workload: "throughput",
        target: cx.target.clone(),
        consumer: driver.settings(),
        duration_ms: duration.as_millis() as u64,
        sustained,
        schedule_single_per_second: single,
        schedule_clients: CLIENTS,
        schedule_batch_per_second: batch,
        redis_cpu_us_per_task,
        baselines: rate_baselines,
        bullmq,
        notes,
    })
}

async fn sustained<D: Driver>(
    driver: &D,
    duration: Duration,
    cx: &Context<'_>,
    notes: &mut Vec<String>,
) -> Result<Sustained> {
    let mut load = SustainedLoad::start(driver, QUEUE, cx.progress.counter("throughput: fired + acked"))?;
    let started = Instant::now();
    // The measurement window: the load runs this long, whatever it does meanwhile.
    tokio::time::sleep(duration).await;
    let done = load.stop_producers().await?;
    let elapsed = started.elapsed();
    let Drained { scheduled, fired, duplicates, lost, left_in_store, note } = load.drain().await?;
    debug_assert_eq!(scheduled, done.scheduled, "nothing is scheduled once the producers stopped");
    notes.extend(note);
    Ok(Sustained {
        scheduled: done.scheduled,
        scheduled_per_second: per_second(done.scheduled, elapsed),
        completed: done.completed,
        completed_per_second: per_second(done.completed, elapsed),
        fired,
        duplicates,
        lost,
        left_in_store,
    })
}

/// Schedule + fire + ack on one driver, kept going until stopped: [`PRODUCERS`]
/// producers scheduling batches of [`PRODUCER_BATCH`] tasks due now in one queue, each
/// pausing while [`MAX_BACKLOG`] or more wait to fire, and the driver's consumer firing
/// and acknowledging them. Its [`Counts`] can be read at any time, so a caller measures
/// whichever window it wants; [`SustainedLoad::drain`] then accounts for every task.
pub(crate) struct SustainedLoad<D: Driver> {
    driver: D,
    queue: String,
    recorder: Arc<Recorder>,
    consumer: Consumer,
    scheduled: Arc<AtomicU64>,
    stop: Stop,
    /// Empty once stopped.
    producers: Vec<JoinHandle<Result<()>>>,
}

/// What a [`SustainedLoad`] has done so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    /// Tasks scheduled (each batch counted once the target accepted it).
    pub(crate) scheduled: u64,
    /// Tries acknowledged done.
    pub(crate) completed: u64,
}

/// What became of every task a [`SustainedLoad`] scheduled.
#[derive(Debug, Clone)]
pub(crate) struct Drained {
    pub(crate) scheduled: u64,
    /// Distinct tasks fired.
    pub(crate) fired: usize,
    /// Firings of a task already fired.
    pub(crate) duplicates: u64,
    /// Scheduled and never fired.
    pub(crate) lost: u64,
    /// Tasks of the queue still stored once the consumer stopped.
    pub(crate) left_in_store: u64,
    /// Why the drain ended before every task fired, when it did.
    pub(crate) note: Option<String>,
}

impl<D: Driver> SustainedLoad<D> {
    /// Starts the consumer of `queue` on `driver`, then the producers; `bar` counts the
    /// tasks fired.
    pub(crate) fn start(driver: &D, queue: &str, bar: ProgressBar) -> Result<SustainedLoad<D>> {
        let recorder = Recorder::new(usize::MAX, bar);
        let consumer = driver.consume(queue, recorder.clone())?;
        let next_key = Arc::new(AtomicU64::new(0));
        let scheduled = Arc::new(AtomicU64::new(0));
        let stop = Stop::default();
        let producers = (0..PRODUCERS)
            .map(|_| {
                let (driver, queue, recorder, next_key, scheduled, stop) = (
                    driver.clone(),
                    queue.to_owned(),
                    recorder.clone(),
                    next_key.clone(),
                    scheduled.clone(),
                    stop.clone(),
                );
                tokio::spawn(async move {
                    while !stop.is_stopped() {
                        let so_far = scheduled.load(Ordering::SeqCst);
                        if so_far.saturating_sub(recorder.fired() as u64) >= MAX_BACKLOG {
                            // Until the backlog is below MAX_BACKLOG again, or the stop.
                            tokio::select! {
                                () = recorder.wait_fired((so_far - MAX_BACKLOG + 1) as usize) => {}
                                () = stop.stopped() => {}
                            }
                            continue;
                        }
                        let first = next_key.fetch_add(PRODUCER_BATCH, Ordering::SeqCst);
                        let now = driver.now_ms();
                        let batch = (first..first + PRODUCER_BATCH).map(|key| BenchTask::new(key, now)).collect();
                        driver.schedule(&queue, batch).await?;
                        scheduled.fetch_add(PRODUCER_BATCH, Ordering::SeqCst);
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        Ok(SustainedLoad {
            driver: driver.clone(),
            queue: queue.to_owned(),
            recorder,
            consumer,
            scheduled,
            stop,
            producers,
        })
    }

    /// Tasks scheduled and tries completed so far.
    pub(crate) fn counts(&self) -> Counts {
        Counts {
            scheduled: self.scheduled.load(Ordering::SeqCst),
            completed: self.driver.completed(&self.queue, &self.recorder),
        }
    }

    /// Stops the producers, each after the batch it is sending, and answers the counts
    /// once they all stopped; the consumer goes on. An error is a producer's.
    pub(crate) async fn stop_producers(&mut self) -> Result<Counts> {
        self.stop.stop();
        for producer in std::mem::take(&mut self.producers) {
            producer.await.context("a producer panicked")?.context("a producer failed")?;
        }
        Ok(self.counts())
    }

    /// Stops the producers (if still running), waits up to [`DRAIN_LIMIT`] for every
    /// task scheduled to fire, stops the consumer and counts what fired.
    pub(crate) async fn drain(mut self) -> Result<Drained> {
        let scheduled = self.stop_producers().await?.scheduled;
        self.recorder.expect(scheduled as usize);
        let note = (!self.recorder.wait_all(DRAIN_LIMIT).await)
            .then(|| format!("not every task scheduled fired within {}s after the duration", DRAIN_LIMIT.as_secs()));
        self.consumer.stop().await?;
        let left_in_store = self.driver.remaining(&self.queue).await?;
        let (lags, duplicates) = self.recorder.take();
        let fired = lags.len();
        Ok(Drained { scheduled, fired, duplicates, lost: scheduled.saturating_sub(fired as u64), left_in_store, note })
    }
}

/// Tasks per second of single schedule calls from [`CLIENTS`] concurrent clients.
async fn schedule_singles<D: Driver>(driver: &D, duration: Duration, cx: &Context<'_>) -> Result<f64> {
    let bar = cx.progress.counter("schedule: single calls");
    let next_key = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (driver, next_key, bar) = (driver.clone(), next_key.clone(), bar.clone());
        clients.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let key = next_key.fetch_add(1, Ordering::SeqCst);
                let task = BenchTask::with_payload(key, driver.now_ms() + DAY_MS);
                driver.schedule_one("bench.throughput.single", task).await?;
                bar.inc(1);
            }
            anyhow::Ok(())
        }));
    }
    for client in clients {
        client.await.context("a client panicked")??;
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    Ok(per_second(bar.position(), elapsed))
}

/// Tasks per second of one client scheduling batches of [`SCHEDULE_BATCH`], and how many
/// it scheduled.
async fn schedule_batches<D: Driver>(driver: &D, duration: Duration, cx: &Context<'_>) -> Result<(f64, u64)> {
    let bar = cx.progress.counter("schedule: batches of 1,000");
    let started = Instant::now();
    let deadline = started + duration;
    let mut next_key = 0;
    while Instant::now() < deadline {
        let due = driver.now_ms() + DAY_MS;
        let batch = (next_key..next_key + SCHEDULE_BATCH).map(|key| BenchTask::with_payload(key, due)).collect();
        driver.schedule("bench.throughput.batch", batch).await?;
        next_key += SCHEDULE_BATCH;
        bar.inc(SCHEDULE_BATCH);
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    Ok((per_second(next_key, elapsed), next_key))
}

impl ThroughputReport {
    pub(crate) fn table(&self) -> String {
        let s = &self.sustained;
        let theirs = self.bullmq.as_ref();
        let ratios = theirs.and_then(|t| t.punctual_over_bullmq.as_ref());
        let mut rows = vec![
            Figure::beside(
                "schedule + fire + ack: completed",
                rate(s.completed_per_second),
                theirs.map(|t| rate(t.completed_per_second)),
                ratios.map(|r| times(r.completed_per_second)),
            ),
            Figure::beside(
                "schedule + fire + ack: scheduled",
                rate(s.scheduled_per_second),
                theirs.map(|t| rate(t.scheduled_per_second)),
                ratios.map(|r| times(r.scheduled_per_second)),
            ),
            Figure::beside(
                "  fired (after the last drained)",
                format!("{} of {}", thousands(s.fired as f64), thousands(s.scheduled as f64)),
                theirs.map(|t| format!("{} of {}", thousands(t.fired as f64), thousands(t.scheduled as f64))),
                None,
            ),
            Figure::beside(
                "  fired twice / left in store",
                format!("{} / {}", s.duplicates, s.left_in_store),
                theirs.map(|t| format!("{} / {}", t.duplicates, t.left_in_queue)),
                None,
            ),
            Figure::ours(
                format!("schedule only: single calls, {} clients", self.schedule_clients),
                rate(self.schedule_single_per_second),
            ),
            Figure::ours("schedule only: batches of 1,000", rate(self.schedule_batch_per_second)),
        ];
        if let Some(cpu) = &self.redis_cpu_us_per_task {
            rows.push(Figure::ours("Redis CPU per task: schedule + lease/ack = together", cpu.describe()));
        }
        for b in &self.baselines {
            rows.push(Figure::ours(b.approach, rate(b.per_second)));
            rows.push(Figure::ours(
                "  ratio: punctual single calls / batches",
                format!("{:.1}× / {:.1}×", b.ratio_single, b.ratio_batch),
            ));
        }
        let text = figures_beside(
            &format!(
                "throughput: {} s per phase on {}\n{}",
                self.duration_ms as f64 / 1000.0,
                self.target,
                self.consumer.describe()
            ),
            rows,
            theirs.map(|t| t.version.as_str()),
        );
        with_footer(text, theirs.map(|t| t.approach.as_str()), &self.notes)
    }
}
