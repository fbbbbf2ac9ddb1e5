//! The arithmetic of the benchmarks, and the readings they take of the machine: fire
//! lag percentiles, rates, this process's resident memory (`/proc/<pid>/status`) and
//! the bytes a store's files take on disk.
//!
//! Percentiles are nearest-rank on the sorted lags (rank `round(p · (n − 1))`), in whole
//! milliseconds: due times have millisecond precision, so no finer lag is meaningful.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use punctual_core::{Clock as _, SystemClock};
use serde::Serialize;

/// This machine's time, epoch ms: what over-HTTP lags and the baselines' lags are read
/// on (an engine in process reads its own clock instead).
pub(crate) fn now_millis() -> i64 {
    SystemClock.now().as_millis()
}

/// Fire lag (fire − due) of a set of tasks, in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct LagStats {
    pub(crate) count: usize,
    pub(crate) min: i64,
    pub(crate) p50: i64,
    pub(crate) p90: i64,
    pub(crate) p99: i64,
    #[serde(rename = "p99_9")]
    pub(crate) p999: i64,
    pub(crate) max: i64,
}

impl LagStats {
    /// The summary of `lags` (zeros when empty).
    pub(crate) fn of(mut lags: Vec<i64>) -> LagStats {
        lags.sort_unstable();
        LagStats {
            count: lags.len(),
            min: lags.first().copied().unwrap_or(0),
            p50: percentile(&lags, 50.0),
            p90: percentile(&lags, 90.0),
            p99: percentile(&lags, 99.0),
            p999: percentile(&lags, 99.9),
            max: lags.last().copied().unwrap_or(0),
        }
    }
}

/// Nearest-rank percentile `p` (0–100) of `sorted`; 0 when empty.
pub(crate) fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// `count` per second over `elapsed`.
pub(crate) fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// How many times `theirs` is `ours`, with `ours` floored at 1 ms (punctual's lag is
/// often 0 ms, and a ratio against 0 says nothing).
pub(crate) fn ratio(theirs: i64, ours: i64) -> f64 {
    theirs as f64 / ours.max(1) as f64
}

/// Resident memory (`VmRSS`, KiB) of this process (`None`) or of process `pid`.
pub(crate) fn rss_kib(pid: Option<u32>) -> Result<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).with_context(|| format!("no VmRSS in {path}"))?;
    let kib = line["VmRSS:".len()..].trim().trim_end_matches("kB").trim();
    kib.parse().with_context(|| format!("cannot read '{line}' in {path}"))
}

/// The bytes of the files directly in `dir` (the embedded store's database, WAL and
/// shared-memory index).
pub(crate) fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let metadata = entry?.metadata()?;
        if metadata.is_file() {
            total += metadata.len();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let stats = LagStats::of((1..=1000).rev().collect());
        assert_eq!((stats.count, stats.min, stats.max), (1000, 1, 1000));
        assert_eq!((stats.p50, stats.p90, stats.p99, stats.p999), (501, 900, 990, 999));
        assert_eq!(LagStats::of(vec![]).p99, 0);
        assert_eq!(LagStats::of(vec![7]).p50, 7);
    }

    #[test]
    fn ratios_floor_our_lag_at_one_millisecond() {
        assert_eq!(ratio(500, 0), 500.0);
        assert_eq!(ratio(500, 2), 250.0);
        assert_eq!(per_second(100, Duration::from_millis(500)), 200.0);
    }

    #[test]
    fn this_process_has_resident_memory() {
        assert!(rss_kib(None).unwrap() > 0);
    }
}
