//! What the soak saw (the clients' [`Record`], the supervisor's [`Kill`]s,
//! [`RedisRestart`] and memory [`Sample`]s) and what it counts of it: pure functions,
//! tested here on constructed inputs.
//!
//! - **lost**: of [`Record::undelivered`] (acknowledged one-off tasks, not cancelled nor
//!   possibly cancelled, never leased), those no longer stored at the end; plus the
//!   [`Record::repeating_live`] tasks no longer stored. Whether a task is stored is the
//!   run's question to the server; the rest is counted here.
//! - **fired after cancel**: a lease of a task whose cancel was confirmed before the task
//!   was due ([`fired_after_cancel`]).
//! - **duplicates**: a delivery id leased more than once, each extra lease attributed by
//!   the earliest unconfirmed ack of that id: to the kill or the Redis restart it failed
//!   during (± [`ATTRIBUTION_MARGIN_MS`]), else "other"; "unexplained" when every earlier
//!   ack was confirmed ([`duplicates`]).
//! - **late**: lag = lease received − due, per minute of the run by when the lease was
//!   received ([`minutes`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use punctual_testkit::pull::AckEnd;
use serde::Serialize;

use crate::stats::LagStats;

/// An ack that failed this close to a kill or the Redis outage is attributed to it.
const ATTRIBUTION_MARGIN_MS: i64 = 2_000;
pub(super) const MINUTE_MS: i64 = 60_000;
/// Memory growth is measured from this point of the run on (warm-up excluded).
const GROWTH_FROM_MS: i64 = 5 * 60_000;
const GROWTH_GOAL_PCT: f64 = 5.0;

/// One lease received by a pull loop, and how its ack ended.
#[derive(Debug, Clone)]
pub(super) struct Delivery {
    pub(super) key: String,
    pub(super) delivery_id: String,
    pub(super) due_ms: i64,
    pub(super) leased_ms: i64,
    pub(super) ack: AckEnd,
    /// When the ack call ended.
    pub(super) ack_ms: i64,
}

/// Everything the clients saw, shared by the producer, the pull loops and the run.
#[derive(Debug, Default)]
pub(super) struct Record {
    /// One-off tasks whose schedule was acknowledged: key → due (epoch ms).
    pub(super) scheduled: HashMap<String, i64>,
    /// One-off tasks whose schedule failed or was not answered (not counted).
    pub(super) schedules_failed: u64,
    /// Repeating tasks whose schedule was acknowledged.
    pub(super) repeating: Vec<String>,
    /// Confirmed cancels (`204`): key → when the answer arrived (epoch ms).
    pub(super) cancelled: HashMap<String, i64>,
    /// Cancels left unanswered: they may have been applied.
    pub(super) cancels_unconfirmed: HashSet<String>,
    /// Cancels answered `404` (the task had fired already).
    pub(super) cancels_not_found: u64,
    pub(super) deliveries: Vec<Delivery>,
    pub(super) lease_calls_failed: u64,
}

impl Record {
    /// Was `key` cancelled, or possibly (a cancel left unanswered)?
    pub(super) fn maybe_cancelled(&self, key: &str) -> bool {
        self.cancelled.contains_key(key) || self.cancels_unconfirmed.contains(key)
    }

    /// Acknowledged one-off tasks, not cancelled (nor possibly cancelled), never leased:
    /// what the drain waits for, then each is still stored (late) or lost.
    pub(super) fn undelivered(&self) -> Vec<String> {
        let leased: HashSet<&str> = self.deliveries.iter().map(|d| d.key.as_str()).collect();
        self.scheduled.keys().filter(|k| !leased.contains(k.as_str()) && !self.maybe_cancelled(k)).cloned().collect()
    }

    /// Repeating tasks not cancelled (nor possibly): each must still be stored at the end.
    pub(super) fn repeating_live(&self) -> Vec<String> {
        self.repeating.iter().filter(|k| !self.maybe_cancelled(k)).cloned().collect()
    }
}

/// The shared record, also after a client panicked holding it (its counts stand).
pub(super) fn lock(record: &Mutex<Record>) -> MutexGuard<'_, Record> {
    record.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A `kill -9` of the server and its restart.
#[derive(Debug, Serialize)]
pub(super) struct Kill {
    /// Seconds into the run.
    pub(super) at_s: f64,
    /// The server's resident memory just before (KiB).
    pub(super) rss_before_kib: Option<u64>,
    /// Kill → the restarted server answers `/readyz`.
    pub(super) restart_ms: u64,
    #[serde(skip)]
    pub(super) at_ms: i64,
    #[serde(skip)]
    pub(super) back_ms: i64,
}

/// The kill and restart of the private redis-server, the punctual server staying up.
#[derive(Debug, Serialize)]
pub(super) struct RedisRestart {
    pub(super) at_s: f64,
    /// How long redis-server was down (killed → answering PING again).
    pub(super) down_ms: u64,
    /// Kill → the punctual server answers a read of the queue again.
    pub(super) serving_again_ms: u64,
    #[serde(skip)]
    pub(super) at_ms: i64,
    #[serde(skip)]
    pub(super) back_ms: i64,
}

/// The memory reading at the end of one minute.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) rss_kib: Option<u64>,
    pub(super) redis_rss_kib: Option<u64>,
    /// Seconds since the server last (re)started.
    pub(super) uptime_s: f64,
}

/// Duplicates (a delivery id leased more than once), by cause.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub(super) struct Duplicates {
    pub(super) total: u64,
    /// An earlier lease's ack failed during a kill (kill → restarted, ± 2 s).
    pub(super) ack_unconfirmed_at_kill: u64,
    /// An earlier lease's ack failed while Redis was down (or the server reconnecting).
    pub(super) ack_unconfirmed_at_redis_restart: u64,
    /// An earlier lease's ack failed at another time (e.g. a timeout).
    pub(super) ack_unconfirmed_other: u64,
    /// Every earlier lease's ack was confirmed: not explained by at-least-once.
    pub(super) unexplained: u64,
}

/// Duplicates of `deliveries`, each attributed by the earliest unconfirmed ack of its
/// delivery id.
pub(super) fn duplicates(deliveries: &[Delivery], kills: &[Kill], redis_restart: Option<&RedisRestart>) -> Duplicates {
    let mut by_id: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in deliveries {
        by_id.entry(&d.delivery_id).or_default().push(d);
    }
    let mut duplicates = Duplicates::default();
    let near = |at: i64, from: i64, to: i64| at >= from - ATTRIBUTION_MARGIN_MS && at <= to + ATTRIBUTION_MARGIN_MS;
    for group in by_id.values_mut().filter(|g| g.len() > 1) {
        group.sort_by_key(|d| d.leased_ms);
        let extra = group.len() as u64 - 1;
        duplicates.total += extra;
        let unconfirmed = group[..group.len() - 1].iter().find(|d| d.ack != AckEnd::Confirmed);
        match unconfirmed {
            None => duplicates.unexplained += extra,
            Some(d) if kills.iter().any(|k| near(d.ack_ms, k.at_ms, k.back_ms)) => {
                duplicates.ack_unconfirmed_at_kill += extra;
            }
            Some(d) if redis_restart.is_some_and(|r| near(d.ack_ms, r.at_ms, r.back_ms)) => {
                duplicates.ack_unconfirmed_at_redis_restart += extra;
            }
            Some(_) => duplicates.ack_unconfirmed_other += extra,
        }
    }
    duplicates
}

/// Leases of tasks whose cancel was confirmed before they were due.
pub(super) fn fired_after_cancel(record: &Record) -> u64 {
    let cancelled_before_due = |d: &&Delivery| record.cancelled.get(&d.key).is_some_and(|&at| d.due_ms > at);
    record.deliveries.iter().filter(cancelled_before_due).count() as u64
}

/// Acknowledged one-off tasks leased at least once and not (possibly) cancelled, and
/// those (possibly) cancelled: with the still stored and the lost, they partition the
/// acknowledged ones.
pub(super) fn delivered_and_cancelled(record: &Record) -> (u64, u64) {
    let leased: HashSet<&str> = record.deliveries.iter().map(|d| d.key.as_str()).collect();
    let (mut delivered, mut cancelled) = (0, 0);
    for key in record.scheduled.keys() {
        if record.maybe_cancelled(key) {
            cancelled += 1;
        } else if leased.contains(key.as_str()) {
            delivered += 1;
        }
    }
    (delivered, cancelled)
}

/// Occurrences of the repeating tasks leased (distinct delivery ids), and the longest
/// time between two occurrences of one of `live`.
pub(super) fn repeats(record: &Record, live: &[String]) -> (u64, i64) {
    let (mut occurrences, mut max_gap_ms) = (0, 0);
    for key in &record.repeating {
        let mut firsts: HashMap<&str, i64> = HashMap::new();
        for d in record.deliveries.iter().filter(|d| &d.key == key) {
            let first = firsts.entry(&d.delivery_id).or_insert(d.leased_ms);
            *first = (*first).min(d.leased_ms);
        }
        occurrences += firsts.len() as u64;
        if live.contains(key) {
            let mut times: Vec<i64> = firsts.into_values().collect();
            times.sort_unstable();
            let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            max_gap_ms = max_gap_ms.max(gap);
        }
    }
    (occurrences, max_gap_ms)
}

/// One minute of the run (the drain's minutes follow the load's).
#[derive(Debug, Serialize)]
pub(super) struct Minute {
    pub(super) minute: u64,
    /// Leases received in the minute, and their lag (lease received − due), ms.
    pub(super) leases: usize,
    pub(super) lag_p50_ms: i64,
    pub(super) lag_p99_ms: i64,
    pub(super) lag_max_ms: i64,
    /// The server's resident memory at the end of the minute (KiB), and its uptime then.
    pub(super) rss_kib: Option<u64>,
    pub(super) uptime_s: Option<f64>,
    /// The private redis-server's resident memory then (KiB).
    pub(super) redis_rss_kib: Option<u64>,
    pub(super) kills: usize,
}

/// Per minute from `start_ms`: the lag of the leases received in it, and the memory
/// reading at its end; as many rows as there are minutes with leases or readings.
pub(super) fn minutes(deliveries: &[Delivery], start_ms: i64, samples: &[Sample], kills: &[Kill]) -> Vec<Minute> {
    let minute_of = |at_ms: i64| ((at_ms - start_ms).max(0) / MINUTE_MS) as usize;
    let last_minute = deliveries.iter().map(|d| minute_of(d.leased_ms)).max().unwrap_or(0);
    let rows = (last_minute + 1).max(samples.len());
    let mut lags: Vec<Vec<i64>> = vec![Vec::new(); rows];
    for d in deliveries {
        lags[minute_of(d.leased_ms)].push(d.leased_ms - d.due_ms);
    }
    lags.into_iter()
        .enumerate()
        .map(|(minute, lags)| {
            let lag = LagStats::of(lags);
            let sample = samples.get(minute);
            let (from, to) = (minute as i64 * MINUTE_MS, (minute as i64 + 1) * MINUTE_MS);
            Minute {
                minute: minute as u64,
                leases: lag.count,
                lag_p50_ms: lag.p50,
                lag_p99_ms: lag.p99,
                lag_max_ms: lag.max,
                rss_kib: sample.and_then(|s| s.rss_kib),
                uptime_s: sample.map(|s| (s.uptime_s * 10.0).round() / 10.0),
                redis_rss_kib: sample.and_then(|s| s.redis_rss_kib),
                kills: kills.iter().filter(|k| (from..to).contains(&(k.at_ms - start_ms))).count(),
            }
        })
        .collect()
}

/// Memory growth across the run, after the warm-up.
#[derive(Debug, Serialize)]
pub(super) struct Growth {
    /// What was compared: the memory just before each kill, or the minutes' readings.
    pub(super) basis: &'static str,
    /// The first and last readings at or after 5 minutes (KiB), and the seconds they were taken.
    pub(super) first_kib: u64,
    pub(super) first_at_s: f64,
    pub(super) last_kib: u64,
    pub(super) last_at_s: f64,
    pub(super) pct: f64,
    pub(super) goal_pct: f64,
    pub(super) met: bool,
}

/// Memory growth after the warm-up: between the first and last readings just before a
/// kill (each after the same uptime), else between the minutes' readings.
pub(super) fn growth(kills: &[Kill], samples: &[Sample]) -> Option<Growth> {
    let before_kills: Vec<(f64, u64)> = kills
        .iter()
        .filter(|k| k.at_s * 1000.0 >= GROWTH_FROM_MS as f64)
        .filter_map(|k| k.rss_before_kib.map(|rss| (k.at_s, rss)))
        .collect();
    let minutes: Vec<(f64, u64)> = samples
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as i64 + 1) * MINUTE_MS > GROWTH_FROM_MS)
        .filter_map(|(i, s)| s.rss_kib.map(|rss| ((i as f64 + 1.0) * 60.0, rss)))
        .collect();
    let (basis, readings) = if before_kills.len() >= 2 {
        ("RSS just before each kill", before_kills)
    } else {
        ("RSS at the end of each minute", minutes)
    };
    let (&(first_at_s, first_kib), &(last_at_s, last_kib)) = (readings.first()?, readings.last()?);
    if readings.len() < 2 || first_kib == 0 {
        return None;
    }
    let pct = (last_kib as f64 - first_kib as f64) / first_kib as f64 * 100.0;
    Some(Growth {
        basis,
        first_kib,
        first_at_s,
        last_kib,
        last_at_s,
        pct: (pct * 10.0).round() / 10.0,
        goal_pct: GROWTH_GOAL_PCT,
        met: pct <= GROWTH_GOAL_PCT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(key: &str, id: &str, due_ms: i64, leased_ms: i64, ack: AckEnd, ack_ms: i64) -> Delivery {
        Delivery { key: key.into(), delivery_id: id.into(), due_ms, leased_ms, ack, ack_ms }
    }

    fn kill(at_ms: i64, back_ms: i64) -> Kill {
        Kill { at_s: 0.0, rss_before_kib: None, restart_ms: 0, at_ms, back_ms }
    }

    #[test]
    fn lost_candidates_are_the_acknowledged_tasks_neither_leased_nor_cancelled() {
        let mut record = Record::default();
        for key in ["leased", "never", "cancelled", "maybe"] {
            record.scheduled.insert(key.into(), 1_000);
        }
        record.deliveries.push(delivery("leased", "d1", 1_000, 1_010, AckEnd::Confirmed, 1_020));
        record.cancelled.insert("cancelled".into(), 500);
        record.cancels_unconfirmed.insert("maybe".into());
        record.repeating = vec!["r-0".into(), "r-1".into()];
        record.cancelled.insert("r-0".into(), 700);
        assert_eq!(record.undelivered(), ["never"]);
        assert_eq!(record.repeating_live(), ["r-1"]);
        assert_eq!(delivered_and_cancelled(&record), (1, 2), "delivered, and cancelled or possibly");
    }

    #[test]
    fn each_duplicate_is_attributed_by_its_earliest_unconfirmed_ack() {
        let kills = [kill(10_000, 11_000)];
        let redis = RedisRestart { at_s: 0.0, down_ms: 0, serving_again_ms: 0, at_ms: 30_000, back_ms: 35_000 };
        let deliveries = [
            // Its ack unanswered 1.5 s after the restart: within the kill's margin.
            delivery("a", "a1", 0, 9_000, AckEnd::Unanswered, 12_500),
            delivery("a", "a1", 0, 13_000, AckEnd::Confirmed, 13_100),
            // Leased three times around the Redis restart: two extra.
            delivery("b", "b1", 0, 34_000, AckEnd::Refused(409), 34_100),
            delivery("b", "b1", 0, 31_000, AckEnd::Unanswered, 31_500),
            delivery("b", "b1", 0, 36_000, AckEnd::Confirmed, 36_100),
            // A lease that expired far from both.
            delivery("c", "c1", 0, 50_000, AckEnd::Refused(409), 50_100),
            delivery("c", "c1", 0, 61_000, AckEnd::Confirmed, 61_100),
            // Every earlier ack confirmed: at-least-once does not explain it.
            delivery("d", "d1", 0, 70_000, AckEnd::Confirmed, 70_100),
            delivery("d", "d1", 0, 71_000, AckEnd::Unanswered, 71_100),
            // A repeating task's next occurrence is another delivery id: no duplicate.
            delivery("r", "r1", 0, 1_000, AckEnd::Confirmed, 1_100),
            delivery("r", "r2", 5_000, 6_000, AckEnd::Confirmed, 6_100),
        ];
        let expected = Duplicates {
            total: 5,
            ack_unconfirmed_at_kill: 1,
            ack_unconfirmed_at_redis_restart: 2,
            ack_unconfirmed_other: 1,
            unexplained: 1,
        };
        assert_eq!(duplicates(&deliveries, &kills, Some(&redis)), expected);

        let beyond_the_margin = [
            delivery("a", "a1", 0, 9_000, AckEnd::Unanswered, 13_001),
            delivery("a", "a1", 0, 14_000, AckEnd::Confirmed, 14_100),
        ];
        let other = Duplicates { total: 1, ack_unconfirmed_other: 1, ..Duplicates::default() };
        assert_eq!(duplicates(&beyond_the_margin, &kills, None), other);
    }

    #[test]
    fn a_lease_counts_as_fired_after_cancel_only_when_the_cancel_was_confirmed_before_it_was_due() {
        let mut record = Record::default();
        record.cancelled.insert("k".into(), 1_000);
        record.cancels_unconfirmed.insert("u".into());
        record.deliveries = vec![
            delivery("k", "k1", 2_000, 2_010, AckEnd::Confirmed, 2_020),
            delivery("k", "k0", 900, 1_100, AckEnd::Refused(409), 1_200),
            delivery("u", "u1", 2_000, 2_010, AckEnd::Confirmed, 2_020),
        ];
        assert_eq!(fired_after_cancel(&record), 1);
    }

    #[test]
    fn lateness_is_counted_in_the_minute_the_lease_was_received() {
        let start = 100_000;
        let deliveries = [
            delivery("a", "a1", start, start + 1_000, AckEnd::Confirmed, 0),
            delivery("b", "b1", start + 59_000, start + 59_999, AckEnd::Confirmed, 0),
            delivery("c", "c1", start + 50_000, start + 60_000, AckEnd::Confirmed, 0),
            // Received a moment before the run's clock started: its first minute.
            delivery("d", "d1", start - 10, start - 5, AckEnd::Confirmed, 0),
        ];
        let sample = Sample { rss_kib: Some(2_048), redis_rss_kib: None, uptime_s: 12.34 };
        let rows = minutes(&deliveries, start, &[sample; 3], &[kill(start + 61_000, start + 62_000)]);
        let summary: Vec<_> = rows.iter().map(|m| (m.minute, m.leases, m.lag_max_ms, m.kills)).collect();
        assert_eq!(summary, [(0, 3, 1_000, 0), (1, 1, 10_000, 1), (2, 0, 0, 0)], "a row per minute with a reading");
        assert_eq!((rows[2].rss_kib, rows[2].uptime_s), (Some(2_048), Some(12.3)));
    }

    #[test]
    fn repeats_count_occurrences_and_the_longest_gap_of_the_live_ones() {
        let mut record = Record { repeating: vec!["r-0".into(), "r-1".into()], ..Record::default() };
        record.deliveries = vec![
            delivery("r-1", "x1", 0, 1_000, AckEnd::Confirmed, 0),
            delivery("r-1", "x1", 0, 1_500, AckEnd::Confirmed, 0),
            delivery("r-1", "x2", 0, 9_000, AckEnd::Confirmed, 0),
            delivery("r-0", "y1", 0, 1_000, AckEnd::Confirmed, 0),
            delivery("r-0", "y2", 0, 60_000, AckEnd::Confirmed, 0),
        ];
        assert_eq!(repeats(&record, &["r-1".to_owned()]), (4, 8_000), "r-0 was cancelled: its gap does not count");
    }
}
