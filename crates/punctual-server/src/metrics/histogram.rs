//! A histogram with fixed bucket bounds, in atomics: observing never locks, and a
//! snapshot's `count` equals the sum of its buckets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of fire-lag and handler-duration buckets.
pub const TASK_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0];
/// Upper bounds (seconds) of store-latency buckets.
pub const STORE_BUCKETS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// One per bound, plus one for values above the last bound.
    buckets: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub(crate) fn new(bounds: &'static [f64]) -> Histogram {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bounds are increasing");
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        let slot = self.bounds.iter().position(|bound| seconds <= *bound).unwrap_or(self.bounds.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(value.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(self.bounds.len());
        for (bound, count) in self.bounds.iter().zip(&self.buckets) {
            cumulative += count.load(Ordering::Relaxed);
            buckets.push((*bound, cumulative));
        }
        let count = cumulative + self.buckets[self.bounds.len()].load(Ordering::Relaxed);
        let sum_seconds = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        HistogramSnapshot { buckets, count, sum_seconds }
    }
}

/// A histogram as read at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistogramSnapshot {
    /// `(upper bound in seconds, observations ≤ that bound)`, cumulative, increasing.
    pub buckets: Vec<(f64, u64)>,
    /// Every observation (the `+Inf` bucket).
    pub count: u64,
    pub sum_seconds: f64,
}

impl HistogramSnapshot {
    /// The smallest bucket bound below which at least `q` (0–1) of the observations
    /// lie; `None` when empty, `f64::INFINITY` when beyond the last bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = (q * self.count as f64).ceil().max(1.0) as u64;
        Some(self.buckets.iter().find(|(_, n)| *n >= rank).map_or(f64::INFINITY, |(bound, _)| *bound))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_count_everything() {
        let h = Histogram::new(&[0.01, 0.1, 1.0]);
        for ms in [0, 5, 10, 50, 500, 5000] {
            h.observe(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.buckets, vec![(0.01, 3), (0.1, 4), (1.0, 5)]);
        assert_eq!(s.count, 6);
        assert!((s.sum_seconds - 5.565).abs() < 1e-9);
        assert_eq!(s.quantile(0.5), Some(0.01));
        assert_eq!(s.quantile(0.99), Some(f64::INFINITY));
        assert_eq!(Histogram::new(&[1.0]).snapshot().quantile(0.5), None);
    }
}
