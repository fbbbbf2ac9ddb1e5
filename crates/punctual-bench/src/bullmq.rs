//! The BullMQ baseline: the Node program in `bench/bullmq/` (`bench.mjs`, with `bullmq`
//! pinned in its `package.json`) runs each workload on BullMQ, on the Redis the other
//! baselines use, with a Worker of concurrency `--loops`; this module finds it, runs it
//! with `node` once per workload and reads the one JSON object it prints.
//!
//! The program reports raw figures (every job's lag, the jobs seen twice, counts); the
//! figures of the report are made here with the same arithmetic as punctual's
//! ([`LagStats`], [`per_second`]), and a job is lost or a duplicate exactly as a task is
//! in [`super::driver::Recorder`]: each job carries its number, counted once.
//!
//! Where it is: `--bullmq DIR`, else `bench/bullmq` under the current directory, else
//! the source tree this binary was built from. It is optional: without `node` on PATH
//! or `DIR/node_modules` (`npm ci --prefix DIR`), [`locate`] answers why, the reports say
//! the baseline was skipped and why, and `--baselines` makes that an error.
//!
//! Its keys live under `<run prefix>:bullmq`; the program deletes them before it exits,
//! and [`Bullmq::run`] deletes whatever is left after (a program that crashed).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::BaselineRedis;
use super::report::Progress;
use super::stats::{LagStats, per_second};

/// The program, inside its directory.
const PROGRAM: &str = "bench.mjs";
/// Where the program is in the source tree this binary was built from.
const SOURCE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/bullmq");

/// The BullMQ program, found and ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Bullmq {
    dir: PathBuf,
    /// BullMQ's Worker concurrency (`--loops`).
    concurrency: u32,
}

/// Finds the program: `Ok(Err(why))` when it cannot run here (the baseline is skipped,
/// or with `--baselines` refused, for that reason: a sentence that says what to do);
/// `Err` when `--bullmq` names a directory without it (a mistake on the command line).
pub(crate) fn locate(explicit: Option<&Path>, concurrency: u32) -> Result<Result<Bullmq, String>> {
    let dir = match explicit {
        Some(dir) if dir.join(PROGRAM).is_file() => dir.to_owned(),
        Some(dir) => bail!(
            "--bullmq {}: there is no {PROGRAM} in it; name the bench/bullmq directory of punctual's source tree",
            dir.display()
        ),
        None => match [PathBuf::from("bench/bullmq"), PathBuf::from(SOURCE_DIR)]
            .into_iter()
            .find(|dir| dir.join(PROGRAM).is_file())
        {
            Some(dir) => dir,
            None => {
                return Ok(Err(format!(
                    "no bench/bullmq/{PROGRAM} here or in the source tree; run from punctual's source tree \
                     or pass --bullmq DIR"
                )));
            }
        },
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !on_path("node") {
        return Ok(Err(format!(
            "node not found on PATH; install Node.js 18 or later (Debian: apt-get install \
             nodejs npm), then run `npm ci --prefix {}`",
            dir.display()
        )));
    }
    if !dir.join("node_modules/bullmq").is_dir() {
        return Ok(Err(format!("{} has no node_modules; run `npm ci --prefix {}`", dir.display(), dir.display())));
    }
    Ok(Ok(Bullmq { dir, concurrency }))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl Bullmq {
    /// Runs `workload` with `args` on `redis` and reads its answer.
    async fn run<T: DeserializeOwned>(
        &self,
        redis: &BaselineRedis,
        workload: &str,
        args: &[(&str, String)],
        progress: &Progress,
    ) -> Result<T> {
        let bar = progress.counter(&format!("baseline: BullMQ {workload}"));
        let prefix = format!("{}:bullmq", redis.prefix);
        let mut command = tokio::process::Command::new("node");
        command
            .arg(self.dir.join(PROGRAM))
            .args(["--redis", &redis.url, "--prefix", &prefix, "--workload", workload])
            .args(["--concurrency", &self.concurrency.to_string()])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        for (name, value) in args {
            command.arg(format!("--{name}")).arg(value);
        }
        let output = command.output().await.context("cannot run node for the BullMQ baseline")?;
        bar.finish_and_clear();
        super::delete_prefix(&redis.url, &prefix).await.context("deleting the BullMQ baseline's keys")?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            bail!(
                "the BullMQ baseline ({} {workload}) failed ({}): {}",
                self.dir.display(),
                output.status,
                stderr.trim()
            );
        }
        serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "the BullMQ baseline printed something that is not its JSON: {}{}",
                String::from_utf8_lossy(&output.stdout).chars().take(500).collect::<String>(),
                stderr.trim()
            )
        })
    }

    /// `burst`: `tasks` jobs due at one instant.
    pub(crate) async fn burst(&self, redis: &BaselineRedis, tasks: usize, progress: &Progress) -> Result<BullmqBurst> {
        let raw: RawBurst = self.run(redis, "burst", &[("tasks", tasks.to_string())], progress).await?;
        let fired = raw.lags_ms.len();
        let lag = LagStats::of(raw.lags_ms);
        let drained_in_ms = lag.max.max(0) as u64;
        Ok(BullmqBurst {
            approach: self.approach(&raw.bullmq, "addBulk of 1,000 with delay"),
            version: raw.bullmq,
            concurrency: raw.concurrency,
            tasks: raw.tasks,
            scheduled_before_due: raw.scheduled_before_due,
            fired,
            duplicates: raw.duplicates,
            lost: raw.tasks.saturating_sub(fired),
            drained_in_ms,
            tasks_per_second: per_second(fired as u64, Duration::from_millis(drained_in_ms.max(1))),
            lag_ms: lag,
            punctual_over_bullmq: None,
        })
    }

    /// `spread`: `tasks` jobs due uniformly over `window`.
    pub(crate) async fn spread(
        &self,
        redis: &BaselineRedis,
        tasks: usize,
        window: Duration,
        progress: &Progress,
    ) -> Result<BullmqSpread> {
        let args = [("tasks", tasks.to_string()), ("window-ms", window.as_millis().to_string())];
        let raw: RawSpread = self.run(redis, "spread", &args, progress).await?;
        let fired = raw.lags_ms.len();
        Ok(BullmqSpread {
            approach: self.approach(&raw.bullmq, "delayed jobs"),
            version: raw.bullmq,
            concurrency: raw.concurrency,
            scheduled_after_due: raw.scheduled_after_due,
            fired,
            duplicates: raw.duplicates,
            lost: raw.tasks.saturating_sub(fired),
            lag_ms: LagStats::of(raw.lags_ms),
            punctual_over_bullmq: None,
        })
    }

    /// `throughput`: add + process sustained for `duration`.
    pub(crate) async fn throughput(
        &self,
        redis: &BaselineRedis,
        duration: Duration,
        progress: &Progress,
    ) -> Result<BullmqThroughput> {
        let raw: RawThroughput =
            self.run(redis, "throughput", &[("duration-ms", duration.as_millis().to_string())], progress).await?;
        let elapsed = Duration::from_millis(raw.elapsed_ms.max(1));
        Ok(BullmqThroughput {
            approach: self.approach(&raw.bullmq, "producers adding batches of 100 due now"),
            version: raw.bullmq,
            concurrency: raw.concurrency,
            scheduled: raw.scheduled,
            scheduled_per_second: per_second(raw.scheduled, elapsed),
            completed: raw.completed,
            completed_per_second: per_second(raw.completed, elapsed),
            fired: raw.fired,
            duplicates: raw.duplicates,
            lost: raw.scheduled.saturating_sub(raw.fired as u64),
            left_in_queue: raw.left_in_queue,
            punctual_over_bullmq: None,
        })
    }

    /// `pending`: `tasks` jobs due in 30 days with payload `{"n": i}`.
    pub(crate) async fn pending(
        &self,
        redis: &BaselineRedis,
        tasks: u64,
        progress: &Progress,
    ) -> Result<BullmqPending> {
        let raw: RawPending = self.run(redis, "pending", &[("tasks", tasks.to_string())], progress).await?;
        Ok(BullmqPending {
            approach: format!("BullMQ {}: delayed jobs, payload {{\"n\": i}}, addBulk of 1,000", raw.bullmq),
            version: raw.bullmq,
            tasks: raw.tasks,
            delayed: raw.delayed,
            insert_per_second: raw.insert_per_second,
            redis_bytes_per_task: raw.bytes_per_task,
            punctual_over_bullmq: None,
        })
    }

    fn approach(&self, version: &str, how: &str) -> String {
        format!("BullMQ {version}: {how}, a Worker of concurrency {}", self.concurrency)
    }
}

/// What `bench.mjs --workload burst` prints.
#[derive(Debug, Deserialize)]
struct RawBurst {
    bullmq: String,
    concurrency: u32,
    tasks: usize,
    scheduled_before_due: bool,
    lags_ms: Vec<i64>,
    duplicates: u64,
}

#[derive(Debug, Deserialize)]
struct RawSpread {
    bullmq: String,
    concurrency: u32,
    tasks: usize,
    scheduled_after_due: usize,
    lags_ms: Vec<i64>,
    duplicates: u64,
}

#[derive(Debug, Deserialize)]
struct RawThroughput {
    bullmq: String,
    concurrency: u32,
    elapsed_ms: u64,
    scheduled: u64,
    completed: u64,
    fired: usize,
    duplicates: u64,
    left_in_queue: u64,
}

#[derive(Debug, Deserialize)]
struct RawPending {
    bullmq: String,
    tasks: u64,
    delayed: u64,
    insert_per_second: f64,
    bytes_per_task: f64,
}

/// punctual's figure / BullMQ's (below 1: punctual's is smaller), 0 when BullMQ's is 0.
pub(crate) fn over(ours: f64, theirs: f64) -> f64 {
    if theirs == 0.0 { 0.0 } else { ours / theirs }
}

/// BullMQ beside `burst`.
#[derive(Debug, Serialize)]
pub(crate) struct BullmqBurst {
    pub(crate) version: String,
    pub(crate) approach: String,
    pub(crate) concurrency: u32,
    pub(crate) tasks: usize,
    pub(crate) scheduled_before_due: bool,
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    pub(crate) drained_in_ms: u64,
    pub(crate) tasks_per_second: f64,
    pub(crate) lag_ms: LagStats,
    pub(crate) punctual_over_bullmq: Option<BurstRatios>,
}

#[derive(Debug, Serialize)]
pub(crate) struct BurstRatios {
    pub(crate) drained_in: f64,
    pub(crate) tasks_per_second: f64,
    pub(crate) lag_p50: f64,
    pub(crate) lag_p99: f64,
}

/// BullMQ beside `spread`.
#[derive(Debug, Serialize)]
pub(crate) struct BullmqSpread {
    pub(crate) version: String,
    pub(crate) approach: String,
    pub(crate) concurrency: u32,
    pub(crate) scheduled_after_due: usize,
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    pub(crate) lag_ms: LagStats,
    pub(crate) punctual_over_bullmq: Option<LagRatios>,
}

#[derive(Debug, Serialize)]
pub(crate) struct LagRatios {
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

impl LagRatios {
    /// Lags compared with each of punctual's floored at 1 ms, as the seeds' ratios are
    /// (a lag of 0 ms is common, and a ratio of 0 says nothing).
    pub(crate) fn of(ours: &LagStats, theirs: &LagStats) -> LagRatios {
        let r = |a: i64, b: i64| a.max(1) as f64 / b.max(1) as f64;
        LagRatios {
            p50: r(ours.p50, theirs.p50),
            p90: r(ours.p90, theirs.p90),
            p99: r(ours.p99, theirs.p99),
            max: r(ours.max, theirs.max),
        }
    }
}

/// BullMQ beside `throughput`'s sustained phase.
#[derive(Debug, Serialize)]
pub(crate) struct BullmqThroughput {
    pub(crate) version: String,
    pub(crate) approach: String,
    pub(crate) concurrency: u32,
    pub(crate) scheduled: u64,
    pub(crate) scheduled_per_second: f64,
    pub(crate) completed: u64,
    pub(crate) completed_per_second: f64,
    pub(crate) fired: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: u64,
    pub(crate) left_in_queue: u64,
    pub(crate) punctual_over_bullmq: Option<ThroughputRatios>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ThroughputRatios {
    pub(crate) completed_per_second: f64,
    pub(crate) scheduled_per_second: f64,
}

/// BullMQ beside `pending`.
#[derive(Debug, Serialize)]
pub(crate) struct BullmqPending {
    pub(crate) version: String,
    pub(crate) approach: String,
    pub(crate) tasks: u64,
    /// Jobs in BullMQ's delayed set once all were added.
    pub(crate) delayed: u64,
    pub(crate) insert_per_second: f64,
    /// Growth of Redis `used_memory` per job.
    pub(crate) redis_bytes_per_task: f64,
    pub(crate) punctual_over_bullmq: Option<PendingRatios>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PendingRatios {
    /// punctual's memory per task (Redis `used_memory`; embedded: resident memory +
    /// disk while running) / BullMQ's Redis `used_memory`.
    pub(crate) bytes_per_task: f64,
    pub(crate) insert_per_second: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_punctual_over_bullmq() {
        assert_eq!(over(2.0, 4.0), 0.5);
        assert_eq!(over(2.0, 0.0), 0.0);
        let ours = LagStats::of(vec![0, 1, 2, 10]);
        let theirs = LagStats::of(vec![50, 100, 200, 400]);
        let ratios = LagRatios::of(&ours, &theirs);
        assert_eq!((ratios.p50, ratios.max), (2.0 / 200.0, 10.0 / 400.0));
    }

    #[test]
    fn the_program_s_answers_are_read() {
        let raw: RawBurst = serde_json::from_str(
            r#"{"bullmq":"6.7.0","workload":"burst","concurrency":4,"tasks":3,"scheduled_before_due":true,
                "all_fired":true,"lags_ms":[5,7,9],"duplicates":0}"#,
        )
        .unwrap();
        assert_eq!((raw.tasks, raw.lags_ms.len(), raw.concurrency), (3, 3, 4));
    }

    #[test]
    fn an_explicit_directory_without_the_program_is_a_mistake() {
        let dir = tempfile::tempdir().unwrap();
        let e = locate(Some(dir.path()), 50).unwrap_err().to_string();
        assert!(e.contains("no bench.mjs"), "{e}");
        std::fs::write(dir.path().join(PROGRAM), "").unwrap();
        if on_path("node") {
            let why = locate(Some(dir.path()), 50).unwrap().unwrap_err();
            assert!(why.contains("npm ci --prefix"), "{why}");
        }
    }
}
