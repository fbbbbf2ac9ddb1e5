//! `burst`: N tasks all due at one instant; how long until the last one fired (its
//! lag), and tasks per second over that time.
//!
//! The instant is 3 s + N/50 ms after scheduling starts, so the batches (1,000 each)
//! are stored before it; whether they were is reported (`scheduled_before_due`), since
//! a drain that starts late measures the scheduling too. On a private redis-server the
//! longest script Redis ran during the burst is read from `LATENCY HISTOGRAM evalsha`
//! (reset first with `CONFIG RESETSTAT`; the bound of the highest non-empty bucket).
//! BullMQ then drains the same burst (see [`super::bullmq`]), its instant 3 s + N/10 ms
//! after adding starts, as BullMQ adds jobs more slowly (its `scheduled_before_due` is
//! reported too).

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::bullmq::{BullmqBurst, BurstRatios, over};
use super::driver::{BenchTask, ConsumerSettings, Driver, Recorder};
use super::redis_cpu::{self, CpuPerTask};
use super::report::{Figure, figures_beside, millis, rate, thousands, times, with_footer};
use super::stats::{LagStats, per_second};
use super::{Context, Side};

const QUEUE: &str = "bench.burst";
const BATCH: usize = 1_000;
/// How long after the instant the last task may take to fire before the run fails.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

#[derive(Debug, Serialize)]
pub(crate) struct BurstReport {
    pub(crate) workload: &'static str,
    pub(crate) target: String,
    pub(crate) consumer: ConsumerSettings,
    pub(crate) tasks: usize,
    /// The groups the tasks were spread over (`--groups`), if any.
    pub(crate) groups: Option<u32>,
    /// Whether every task was stored before the instant they were due.
    pub(crate) scheduled_before_due: bool,
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    /// Due instant → the last task fired.
    pub(crate) drained_in_ms: u64,
    pub(crate) tasks_per_second: f64,
    pub(crate) lag_ms: LagStats,
    /// The longest Lua script Redis ran, as a histogram bucket bound (private Redis only).
    pub(crate) longest_script_ms: Option<f64>,
    /// Redis CPU per task (when the run knows the Redis): scheduling the burst, and the
    /// burst scheduled, fired and acknowledged.
    pub(crate) redis_cpu_us_per_task: Option<CpuPerTask>,
    /// The same burst on BullMQ, when it ran.
    pub(crate) bullmq: Option<BullmqBurst>,
    pub(crate) notes: Vec<String>,
}

pub(crate) async fn run<D: Driver>(
    driver: &D,
    tasks: usize,
    groups: Option<u32>,
    cx: &Context<'_>,
) -> Result<BurstReport> {
    if tasks == 0 {
        bail!("--tasks must be at least 1");
    }
    let private_redis = match cx.side {
        Side::Redis { private: Some(server), .. } => {
            server.command(&["CONFIG", "RESETSTAT"]).context("CONFIG RESETSTAT on the private Redis")?;
            Some(server)
        }
        _ => None,
    };
    let cpu_at_start = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let recorder = Recorder::new(tasks, cx.progress.bar(tasks as u64, "burst: fired"));
    let consumer = driver.consume(QUEUE, recorder.clone())?;
    let at = driver.now_ms() + 3_000 + tasks as i64 / 50;
    let schedule_bar = cx.progress.bar(tasks as u64, "burst: scheduled");
    for first in (0..tasks).step_by(BATCH) {
        let task = |i: usize| match groups {
            Some(n) => BenchTask::new(i as u64, at).in_group(format!("group-{}", i % n as usize)),
            None => BenchTask::new(i as u64, at),
        };
        let batch = (first..(first + BATCH).min(tasks)).map(task).collect::<Vec<_>>();
        let n = batch.len() as u64;
        driver.schedule(QUEUE, batch).await.context("scheduling the burst")?;
        schedule_bar.inc(n);
    }
    schedule_bar.finish_and_clear();
    let cpu_scheduled = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let scheduled_before_due = driver.now_ms() <= at;
    let all_fired = recorder.wait_all(Duration::from_millis((at - driver.now_ms()).max(0) as u64) + DRAIN_LIMIT).await;
    consumer.stop().await?;
    let cpu_drained = redis_cpu::read(cx.redis_cpu.as_ref()).await?;
    let (lags, duplicates) = recorder.take();
    let fired = lags.len();
    let redis_cpu_us_per_task =
        redis_cpu::per_task([cpu_at_start, cpu_scheduled], tasks as u64, [cpu_at_start, cpu_drained], tasks as u64);
    let lag = LagStats::of(lags);
    let drained_in_ms = lag.max.max(0) as u64;
    let mut notes = Vec::new();
    if let Some(n) = groups {
        notes.push(format!("the tasks were spread over {n} groups (task i in group i mod {n})"));
    }
    if !all_fired {
        notes.push(format!("only {fired} of {tasks} fired within {}s of the due instant", DRAIN_LIMIT.as_secs()));
    }
    if !scheduled_before_due {
        notes.push("scheduling ended after the due instant: the drain time includes part of it".into());
    }
    let longest_script_ms = match private_redis {
        Some(server) => longest_script(
            &server.command(&["LATENCY", "HISTOGRAM", "evalsha"]).context("LATENCY HISTOGRAM on the private Redis")?,
        ),
        None => None,
    };
    let tasks_per_second = per_second(fired as u64, Duration::from_millis(drained_in_ms.max(1)));
    let bullmq = match cx.bullmq() {
        Some((bullmq, redis)) => {
            let mut theirs = bullmq.burst(redis, tasks, &cx.progress).await?;
            if !theirs.scheduled_before_due {
                notes.push("BullMQ's adding ended after the due instant: its drain time includes part of it".into());
            }
            theirs.punctual_over_bullmq = Some(BurstRatios {
                drained_in: over(drained_in_ms.max(1) as f64, theirs.drained_in_ms.max(1) as f64),
                tasks_per_second: over(tasks_per_second, theirs.tasks_per_second),
                lag_p50: over(lag.p50.max(1) as f64, theirs.lag_ms.p50.max(1) as f64),
                lag_p99: over(lag.p99.max(1) as f64, theirs.lag_ms.p99.max(1) as f64),
            });
            Some(theirs)
        }
        None => {
            notes.extend(cx.bullmq_skipped.clone());
            None
        }
    };
    Ok(BurstReport {
        workload: "burst",
        target: cx.target.clone(),
        consumer: driver.settings(),
        tasks,
        groups,
        scheduled_before_due,
        fired,
        duplicates,
        lost: tasks - fired,
        drained_in_ms,
        tasks_per_second,
        lag_ms: lag,
        longest_script_ms,
        redis_cpu_us_per_task,
        bullmq,
        notes,
    })
}

/// The upper bound (ms) of the highest non-empty bucket of a `LATENCY HISTOGRAM` reply
/// flattened one element per line: `…, histogram_usec, bucket, count, bucket, count`.
fn longest_script(histogram: &str) -> Option<f64> {
    let lines: Vec<&str> = histogram.lines().collect();
    let start = lines.iter().position(|l| *l == "histogram_usec")? + 1;
    let buckets: Vec<i64> = lines[start..].iter().step_by(2).filter_map(|b| b.parse().ok()).collect();
    buckets.last().map(|usec| *usec as f64 / 1000.0)
}

impl BurstReport {
    pub(crate) fn table(&self) -> String {
        let theirs = self.bullmq.as_ref();
        let ratios = theirs.and_then(|t| t.punctual_over_bullmq.as_ref());
        let ratio = |f: fn(&BurstRatios) -> f64| ratios.map(|r| times(f(r)));
        let fired = |fired: usize, tasks: usize| format!("{} of {}", thousands(fired as f64), thousands(tasks as f64));
        let lag = |l: &LagStats| format!("{} / {} ms", thousands(l.p50 as f64), thousands(l.p99 as f64));
        let mut rows = vec![
            Figure::beside("fired", fired(self.fired, self.tasks), theirs.map(|t| fired(t.fired, t.tasks)), None),
            Figure::beside(
                "fired twice",
                thousands(self.duplicates as f64),
                theirs.map(|t| thousands(t.duplicates as f64)),
                None,
            ),
            Figure::beside(
                "drained in (due → last fired)",
                millis(self.drained_in_ms),
                theirs.map(|t| millis(t.drained_in_ms)),
                ratio(|r| r.drained_in),
            ),
            Figure::beside(
                "drain rate",
                rate(self.tasks_per_second),
                theirs.map(|t| rate(t.tasks_per_second)),
                ratio(|r| r.tasks_per_second),
            ),
            Figure::beside(
                "lag p50 / p99",
                lag(&self.lag_ms),
                theirs.map(|t| lag(&t.lag_ms)),
                ratios.map(|r| format!("{} / {}", times(r.lag_p50), times(r.lag_p99))),
            ),
        ];
        if let Some(ms) = self.longest_script_ms {
            rows.push(Figure::ours("longest Redis script (histogram bound)", format!("≤ {ms:.1} ms")));
        }
        if let Some(cpu) = &self.redis_cpu_us_per_task {
            rows.push(Figure::ours("Redis CPU per task: schedule + lease/ack = together", cpu.describe()));
        }
        let text = figures_beside(
            &format!(
                "burst: {} tasks due at one instant on {}\n{}",
                thousands(self.tasks as f64),
                self.target,
                self.consumer.describe()
            ),
            rows,
            theirs.map(|t| t.version.as_str()),
        );
        with_footer(text, theirs.map(|t| t.approach.as_str()), &self.notes)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_longest_script_is_the_highest_bucket() {
        let reply = "evalsha\ncalls\n200\nhistogram_usec\n1024\n150\n8192\n40\n33792\n10";
        assert_eq!(super::longest_script(reply), Some(33.792));
        assert_eq!(super::longest_script("evalsha\ncalls\n0"), None);
    }
}
