//! Redis CPU per task: the CPU time Redis spent (`INFO cpu`, system + user, every
//! thread of the process) across a phase, divided by the tasks of the phase. Read on
//! the Redis of the punctual under test, when the run knows it (`--store redis://…`,
//! `private-redis`, or `--serve` on one of them), and only across phases that nothing
//! else runs on it (the baselines run after).

use anyhow::{Context as _, Result};
use serde::Serialize;

/// The Redis whose CPU time a phase reads.
#[derive(Debug, Clone)]
pub(crate) struct RedisCpu {
    url: String,
}

impl RedisCpu {
    pub(crate) fn new(url: &str) -> RedisCpu {
        RedisCpu { url: url.to_owned() }
    }

    /// CPU seconds Redis has used since it started.
    pub(crate) async fn seconds(&self) -> Result<f64> {
        let client = redis::Client::open(self.url.as_str()).with_context(|| format!("bad Redis URL {}", self.url))?;
        let mut conn = client.get_multiplexed_async_connection().await.context("connect to read INFO cpu")?;
        let info: String = redis::cmd("INFO").arg("cpu").query_async(&mut conn).await.context("INFO cpu")?;
        cpu_seconds(&info).with_context(|| format!("INFO cpu without used_cpu_sys and used_cpu_user: {info}"))
    }
}

/// CPU seconds of `redis` so far, when the run knows it.
pub(crate) async fn read(redis: Option<&RedisCpu>) -> Result<Option<f64>> {
    match redis {
        Some(redis) => Ok(Some(redis.seconds().await?)),
        None => Ok(None),
    }
}

/// [`CpuPerTask`] from readings around a schedule phase of `scheduled` tasks and a
/// phase that scheduled, fired and acknowledged `tasks`; `None` if any is missing.
pub(crate) fn per_task(
    schedule: [Option<f64>; 2],
    scheduled: u64,
    together: [Option<f64>; 2],
    tasks: u64,
) -> Option<CpuPerTask> {
    match (schedule, together) {
        ([Some(a), Some(b)], [Some(c), Some(d)]) => Some(CpuPerTask::new(b - a, scheduled, d - c, tasks)),
        _ => None,
    }
}

/// `used_cpu_sys + used_cpu_user` of an `INFO cpu` answer.
fn cpu_seconds(info: &str) -> Option<f64> {
    let field = |name: &str| {
        info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<f64>().ok())
    };
    Some(field("used_cpu_sys")? + field("used_cpu_user")?)
}

/// Microseconds of Redis CPU per task, by what the tasks went through.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct CpuPerTask {
    /// Scheduling (batches).
    pub(crate) schedule: f64,
    /// Leasing and acknowledging: `together - schedule`.
    pub(crate) lease_ack: f64,
    /// Scheduled, fired and acknowledged.
    pub(crate) together: f64,
}

impl CpuPerTask {
    /// From the CPU seconds of a phase that scheduled `scheduled` tasks and of one that
    /// scheduled, fired and acknowledged `tasks`.
    pub(crate) fn new(schedule_seconds: f64, scheduled: u64, together_seconds: f64, tasks: u64) -> CpuPerTask {
        let per_task = |seconds: f64, n: u64| seconds * 1e6 / n.max(1) as f64;
        let schedule = per_task(schedule_seconds, scheduled);
        let together = per_task(together_seconds, tasks);
        CpuPerTask { schedule, lease_ack: together - schedule, together }
    }

    /// `"8.1 + 15.4 = 23.5 µs"`.
    pub(crate) fn describe(&self) -> String {
        format!("{:.1} + {:.1} = {:.1} µs", self.schedule, self.lease_ack, self.together)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_cpu_is_read_and_split_per_task() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n";
        assert_eq!(cpu_seconds(info), Some(3.75));
        assert_eq!(cpu_seconds("# CPU\r\nused_cpu_sys:1.0\r\n"), None);
        let cost = CpuPerTask::new(0.8, 100_000, 2.4, 100_000);
        assert_eq!((cost.schedule, cost.together), (8.0, 24.0));
        assert!((cost.lease_ack - 16.0).abs() < 1e-9);
        assert_eq!(cost.describe(), "8.0 + 16.0 = 24.0 µs");
    }
}
