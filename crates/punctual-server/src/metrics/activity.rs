//! What the dashboard shows of a queue's recent life, built from the engine's events:
//! the last [`RECENT_OUTCOMES`] outcomes, leases per [`RATE_SLOT`] over the last
//! [`RATE_SLOTS`] slots, and the fire lags of the last [`LagWindow::SIZE`] leases.
//!
//! Invariant: memory per queue is fixed (three bounded rings).

use std::collections::VecDeque;
use std::time::Duration;

use punctual_core::{TaskKey, Timestamp, TryEnd};

/// Recent outcomes kept per queue.
pub const RECENT_OUTCOMES: usize = 100;
/// Throughput slots kept per queue, each [`RATE_SLOT`] long (15 minutes in all).
pub const RATE_SLOTS: usize = 90;
/// The length of one throughput slot.
pub const RATE_SLOT: Duration = Duration::from_secs(10);

/// One recent outcome of a queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct OutcomeRecord {
    pub key: TaskKey,
    pub outcome: TryEnd,
    /// When the outcome was applied.
    pub at: Timestamp,
    pub due_at: Timestamp,
    /// Fire lag of this try (lease time − due time), when the lease time is known.
    pub lag_ms: Option<u64>,
    /// Lease time → outcome, when the lease time is known.
    pub duration_ms: Option<u64>,
    pub attempt: u32,
    pub error: Option<String>,
}

/// One queue's recent activity, for the dashboard.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueActivity {
    /// Newest first, at most [`RECENT_OUTCOMES`].
    pub recent: Vec<OutcomeRecord>,
    /// Leases per [`RATE_SLOT`], oldest first, the last slot being the current one.
    pub fired_per_slot: Vec<u64>,
}

impl QueueActivity {
    /// A queue with no activity yet.
    pub(crate) fn none() -> QueueActivity {
        QueueActivity { recent: Vec::new(), fired_per_slot: vec![0; RATE_SLOTS] }
    }
}

/// The most recent outcomes, newest first.
#[derive(Debug)]
pub(crate) struct Recent(VecDeque<OutcomeRecord>);

impl Default for Recent {
    fn default() -> Recent {
        Recent(VecDeque::with_capacity(RECENT_OUTCOMES))
    }
}

impl Recent {
    pub(crate) fn remember(&mut self, record: OutcomeRecord) {
        if self.0.len() == RECENT_OUTCOMES {
            self.0.pop_back();
        }
        self.0.push_front(record);
    }

    pub(crate) fn newest_first(&self) -> Vec<OutcomeRecord> {
        self.0.iter().cloned().collect()
    }
}

/// Leases per slot: `(slot index since the epoch, leases)`; a slot is reused when its
/// index is old.
#[derive(Debug)]
pub(crate) struct Rates([(i64, u64); RATE_SLOTS]);

impl Default for Rates {
    fn default() -> Rates {
        Rates([(i64::MIN, 0); RATE_SLOTS])
    }
}

impl Rates {
    pub(crate) fn count(&mut self, now: Timestamp, n: u64) {
        let index = slot_index(now);
        let slot = &mut self.0[index.rem_euclid(RATE_SLOTS as i64) as usize];
        if slot.0 != index {
            *slot = (index, 0);
        }
        slot.1 += n;
    }

    /// Oldest first, the last slot being the one `now` is in.
    pub(crate) fn per_slot(&self, now: Timestamp) -> Vec<u64> {
        let current = slot_index(now);
        (0..RATE_SLOTS as i64)
            .map(|back| current - (RATE_SLOTS as i64 - 1) + back)
            .map(|index| {
                let slot = self.0[index.rem_euclid(RATE_SLOTS as i64) as usize];
                if slot.0 == index { slot.1 } else { 0 }
            })
            .collect()
    }
}

fn slot_index(at: Timestamp) -> i64 {
    at.as_millis().div_euclid(RATE_SLOT.as_millis() as i64)
}

/// The last [`LagWindow::SIZE`] fire lags, in milliseconds.
#[derive(Debug, Default)]
pub(crate) struct LagWindow {
    samples: VecDeque<u64>,
}

impl LagWindow {
    pub(crate) const SIZE: usize = 1024;

    pub(crate) fn push(&mut self, lag: Duration) {
        if self.samples.len() == Self::SIZE {
            self.samples.pop_front();
        }
        self.samples.push_back(u64::try_from(lag.as_millis()).unwrap_or(u64::MAX));
    }

    pub(crate) fn summary(&self) -> Option<LagSummary> {
        if self.samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = self.samples.iter().copied().collect();
        sorted.sort_unstable();
        let at = |p: usize| sorted[(sorted.len() - 1) * p / 100];
        Some(LagSummary { p50_ms: at(50), p99_ms: at(99), samples: sorted.len() })
    }
}

/// Percentiles of recent fire lag (lease time − due time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LagSummary {
    pub p50_ms: u64,
    pub p99_ms: u64,
    /// How many leases the figures cover (at most 1,024, the most recent).
    pub samples: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_slots_roll_over() {
        let mut rates = Rates::default();
        let t0 = Timestamp::from_millis(1_000_000_000);
        rates.count(t0, 2);
        rates.count(t0.saturating_add(RATE_SLOT), 3);
        let per_slot = rates.per_slot(t0.saturating_add(RATE_SLOT));
        assert_eq!(per_slot.len(), RATE_SLOTS);
        assert_eq!(&per_slot[RATE_SLOTS - 2..], &[2, 3]);
        // A full turn later, the old slots read as empty.
        let later = t0.saturating_add(RATE_SLOT * RATE_SLOTS as u32 * 2);
        assert!(rates.per_slot(later).iter().all(|n| *n == 0));
        rates.count(later, 1);
        assert_eq!(rates.per_slot(later).iter().sum::<u64>(), 1);
    }

    #[test]
    fn recent_outcomes_are_bounded_newest_first() {
        let mut recent = Recent::default();
        for i in 0..(RECENT_OUTCOMES + 5) {
            recent.remember(OutcomeRecord {
                key: TaskKey::new(format!("k{i}")).unwrap(),
                outcome: TryEnd::Done,
                at: Timestamp::EPOCH,
                due_at: Timestamp::EPOCH,
                lag_ms: None,
                duration_ms: None,
                attempt: 1,
                error: None,
            });
        }
        let recent = recent.newest_first();
        assert_eq!(recent.len(), RECENT_OUTCOMES);
        assert_eq!(recent[0].key.as_str(), format!("k{}", RECENT_OUTCOMES + 4));
    }

    #[test]
    fn lag_window_keeps_the_most_recent_samples_and_reports_percentiles() {
        let mut window = LagWindow::default();
        assert_eq!(window.summary(), None);
        for ms in 0..2000u64 {
            window.push(Duration::from_millis(ms));
        }
        let summary = window.summary().unwrap();
        assert_eq!(summary.samples, LagWindow::SIZE);
        // The window holds 976..=1999: the oldest samples were dropped.
        assert_eq!(summary.p50_ms, 976 + 1023 / 2);
        assert_eq!(summary.p99_ms, 976 + 1023 * 99 / 100);
    }
}
