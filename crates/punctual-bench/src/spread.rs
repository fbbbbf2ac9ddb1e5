//! `spread`: N tasks due uniformly over a window; fire lag (handler start, or lease
//! receipt over HTTP, − due) at p50/p90/p99/p99.9/max.
//!
//! The consumer runs before the first task is scheduled. On Redis, Redis' CPU per
//! task is read across the scheduling and across the whole run (its safety polls and
//! idle waits over the window included: what the workload costs Redis). Tasks are scheduled in
//! batches of 1,000 in due order, the first due [`LEAD_MS`] after scheduling starts
//! ([`HTTP_LEAD_MS`] over HTTP), so each batch is stored before it falls due as long as
//! scheduling outpaces the window; tasks whose schedule call returned after their due
//! time are counted (`scheduled_after_due`), since their lag includes that wait.
//! The baselines (keyspace notifications, a 1-second ZSet poller, BullMQ) then get the
//! same workload, one after the other, on a Redis (see [`super::baselines`] and
//! [`super::bullmq`]). The seeds' ratios are theirs / punctual's (how many times
//! punctual's lag theirs is); BullMQ's, as in every report, punctual's / BullMQ's.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::baselines::{self, BaselineRun};
use super::bullmq::{BullmqSpread, LagRatios};
use super::driver::{BenchTask, ConsumerSettings, Driver, Recorder};
use super::redis_cpu::{self, CpuPerTask};
use super::report::{figures, lag_row, lag_table, millis, thousands, times, with_footer};
use super::stats::{LagStats, ratio};
use super::{Context, Side};

const QUEUE: &str = "bench.spread";
/// From scheduling the first batch to the first due time, in process.
const LEAD_MS: i64 = 1_000;
/// The same over HTTP.
const HTTP_LEAD_MS: i64 = 2_000;
/// How long after the window the last task may take to fire before the run fails.
const FIRE_GRACE: Duration = Duration::from_secs(60);
const BATCH: usize = 1_000;

/// The parameters and figures of one `spread` run.
#[derive(Debug, Serialize)]
pub(crate) struct SpreadReport {
    pub(crate) workload: &'static str,
    pub(crate) target: String,
    pub(crate) consumer: ConsumerSettings,
    pub(crate) tasks: usize,
    pub(crate) window_ms: u64,
    /// Tasks whose schedule call returned after their due time.
    pub(crate) scheduled_after_due: usize,
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    pub(crate) lag_ms: LagStats,
    /// Redis CPU per task (`--store` on Redis, or `--serve` on one).
    pub(crate) redis_cpu_us_per_task: Option<CpuPerTask>,
    pub(crate) baselines: Vec<LagBaseline>,
    /// The same spread on BullMQ, when it ran.
    pub(crate) bullmq: Option<BullmqSpread>,
    pub(crate) notes: Vec<String>,
}

/// A baseline's lag on the same workload, and how many times punctual's it is.
#[derive(Debug, Serialize)]
pub(crate) struct LagBaseline {
    pub(crate) name: &'static str,
    pub(crate) approach: &'static str,
    pub(crate) lag_ms: LagStats,
    pub(crate) missing: usize,
    pub(crate) ratio_p50: f64,
    pub(crate) ratio_p99: f64,
}

pub(crate) async fn run<D: Driver>(
    driver: &D,
    tasks: usize,
    window: Duration,
    cx: &Context<'_>,
) -> Result<SpreadReport> {
    if tasks == 0 {
        bail!("--tasks must be at least 1");
    }
    let cpu_at_start = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let recorder = Recorder::new(tasks, cx.progress.bar(tasks as u64, "spread: fired"));
    let consumer = driver.consume(QUEUE, recorder.clone())?;
    let lead = if matches!(cx.side, Side::Http) { HTTP_LEAD_MS } else { LEAD_MS };
    let start = driver.now_ms() + lead;
    let step = window.as_millis() as f64 / tasks as f64;
    let mut scheduled_after_due = 0;
    let all: Vec<BenchTask> = (0..tasks).map(|i| BenchTask::new(i as u64, start + (i as f64 * step) as i64)).collect();
    for chunk in all.chunks(BATCH) {
        driver.schedule(QUEUE, chunk.to_vec()).await.context("scheduling the spread")?;
        let now = driver.now_ms();
        scheduled_after_due += chunk.iter().filter(|t| t.due_ms < now).count();
    }
    let cpu_scheduled = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let all_fired = recorder.wait_all(window + FIRE_GRACE).await;
    consumer.stop().await?;
    let cpu_fired = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let redis_cpu_us_per_task =
        redis_cpu::per_task([cpu_at_start, cpu_scheduled], tasks as u64, [cpu_at_start, cpu_fired], tasks as u64);
    let (lags, duplicates) = recorder.take();
    let fired = lags.len();
    let lag = LagStats::of(lags);
    let mut notes = Vec::new();
    if !all_fired {
        notes.push(format!("only {fired} of {tasks} tasks fired within the window + {}s", FIRE_GRACE.as_secs()));
    }
    if scheduled_after_due > 0 {
        notes.push(format!(
            "{scheduled_after_due} tasks were stored after their due time (scheduling was slower than the window); \
             their lag includes that wait"
        ));
    }

    let mut baselines = Vec::new();
    match cx.baselines {
        Some(redis) => {
            for (name, approach) in [
                ("keyspace_notifications", "by hand: SET … PXAT + subscriber on __keyevent@0__:expired"),
                ("zset_poller_1s", "by hand: ZSet polled once a second"),
            ] {
                let bar = cx.progress.counter(&format!("baseline: {name}"));
                let BaselineRun { lags, missing } = match name {
                    "keyspace_notifications" => baselines::keyspace(&redis.url, &redis.prefix, tasks, window).await,
                    _ => baselines::poller(&redis.url, &redis.prefix, tasks, window).await,
                }
                .with_context(|| format!("the {name} baseline on {}", redis.url))?;
                bar.finish_and_clear();
                let theirs = LagStats::of(lags);
                baselines.push(LagBaseline {
                    name,
                    approach,
                    ratio_p50: ratio(theirs.p50, lag.p50),
                    ratio_p99: ratio(theirs.p99, lag.p99),
                    lag_ms: theirs,
                    missing,
                });
            }
        }
        None => notes.extend(cx.baselines_skipped.clone()),
    }
    let bullmq = match cx.bullmq() {
        Some((bullmq, redis)) => {
            let mut theirs = bullmq.spread(redis, tasks, window, &cx.progress).await?;
            if theirs.scheduled_after_due > 0 {
                notes.push(format!(
                    "{} BullMQ jobs were added after their due time (adding was slower than the window); \
                     their lag includes that wait",
                    theirs.scheduled_after_due
                ));
            }
            theirs.punctual_over_bullmq = Some(LagRatios::of(&lag, &theirs.lag_ms));
            Some(theirs)
        }
        None => {
            notes.extend(cx.bullmq_skipped.clone());
            None
        }
    };
    Ok(SpreadReport {
        workload: "spread",
        target: cx.target.clone(),
        consumer: driver.settings(),
        tasks,
        window_ms: window.as_millis() as u64,
        scheduled_after_due,
        fired,
        duplicates,
        lost: tasks - fired,
        lag_ms: lag,
        redis_cpu_us_per_task,
        baselines,
        bullmq,
        notes,
    })
}

impl SpreadReport {
    pub(crate) fn table(&self) -> String {
        let mut text = figures(
            &format!(
                "spread: {} tasks due uniformly over {} on {}\n{}",
                thousands(self.tasks as f64),
                millis(self.window_ms),
                self.target,
                self.consumer.describe()
            ),
            vec![
                ("fired".into(), format!("{} of {}", thousands(self.fired as f64), thousands(self.tasks as f64))),
                ("fired twice".into(), thousands(self.duplicates as f64)),
                ("stored after their due time".into(), thousands(self.scheduled_after_due as f64)),
            ]
            .into_iter()
            .chain(
                self.redis_cpu_us_per_task
                    .map(|cpu| ("Redis CPU per task: schedule + lease/ack = together".to_owned(), cpu.describe())),
            )
            .collect(),
        );
        let mut rows = vec![lag_row("punctual", &self.lag_ms, None)];
        for baseline in &self.baselines {
            let mut row = lag_row(baseline.approach, &baseline.lag_ms, Some(&self.lag_ms));
            if baseline.missing > 0 {
                row[0].push_str(&format!(" ({} never fired)", baseline.missing));
            }
            rows.push(row);
        }
        if let Some(bullmq) = &self.bullmq {
            let mut row = lag_row(&bullmq.approach, &bullmq.lag_ms, Some(&self.lag_ms));
            if bullmq.lost > 0 || bullmq.duplicates > 0 {
                row[0].push_str(&format!(" ({} never fired, {} twice)", bullmq.lost, bullmq.duplicates));
            }
            rows.push(row);
        }
        text.push_str("\n\nfire lag (fire − due)\n");
        text.push_str(&lag_table(rows));
        if let Some(r) = self.bullmq.as_ref().and_then(|b| b.punctual_over_bullmq.as_ref()) {
            text.push_str(&format!(
                "\npunctual / BullMQ: lag p50 {}, p90 {}, p99 {}, max {}",
                times(r.p50),
                times(r.p90),
                times(r.p99),
                times(r.max)
            ));
        }
        with_footer(text, None, &self.notes)
    }
}
