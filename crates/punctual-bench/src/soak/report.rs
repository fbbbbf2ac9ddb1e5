//! The soak's report: the settings it ran with, the counts of [`super::accounting`],
//! per minute and per kill; a table, or with `--json` one object.

use std::time::Duration;

use punctual_testkit::pull::AckEnd;
use serde::Serialize;

use super::accounting::{
    self, Duplicates, Growth, Kill, Minute, Record, RedisRestart, Sample, delivered_and_cancelled, fired_after_cancel,
};
use super::load::{
    CANCEL_SHARE, FAR_MAX_MS, FAR_MIN_MS, LEASE, LEASE_MAX, LONG_POLL, NEAR_MAX_MS, NEAR_SHARE, PULL_LOOPS,
    REPEAT_EVERY, REPEATING,
};
use crate::report::{figures, mib, table, thousands};
use crate::stats::LagStats;

#[derive(Debug, Serialize)]
struct Settings {
    rate_per_s: u32,
    pull_loops: usize,
    lease_max: u32,
    #[serde(with = "punctual_core::time::serde_duration")]
    lease: Duration,
    #[serde(with = "punctual_core::time::serde_duration")]
    long_poll: Duration,
    repeating: usize,
    repeat_every: &'static str,
    near_share: f64,
    near_max_ms: i64,
    far_ms: [i64; 2],
    cancel_share_of_far: f64,
}

/// The soak's results.
#[derive(Debug, Serialize)]
pub(super) struct SoakReport {
    workload: &'static str,
    target: String,
    store: String,
    duration_s: f64,
    kill_every_s: f64,
    settings: Settings,
    /// One-off tasks acknowledged, and schedules that failed (not counted).
    scheduled: u64,
    schedules_failed: u64,
    repeating: usize,
    cancels_confirmed: u64,
    cancels_unconfirmed: u64,
    cancels_not_found: u64,
    /// Acknowledged one-off tasks whose cancel was confirmed or left unanswered (the
    /// cancels above include the repeating tasks'). With `delivered`, `still_present`
    /// and the one-off part of `lost`, these partition `scheduled`.
    one_off_cancelled: u64,
    leases: u64,
    lease_calls_failed: u64,
    acks_confirmed: u64,
    acks_refused: u64,
    acks_unanswered: u64,
    /// Acknowledged, not cancelled one-off tasks leased at least once.
    delivered: u64,
    /// Acknowledged, not cancelled, never leased, but still stored at the end.
    still_present: u64,
    pub(super) lost: u64,
    /// Some lost keys, to look up (at most 20).
    lost_keys: Vec<String>,
    pub(super) fired_after_cancel: u64,
    repeat_occurrences: u64,
    /// The longest time between two occurrences of a repeating task (not cancelled).
    repeat_max_gap_ms: i64,
    duplicates: Duplicates,
    kill_count: usize,
    kills: Vec<Kill>,
    redis_restart: Option<RedisRestart>,
    /// Load end → every acknowledged task leased.
    drain_ms: u64,
    lag: LagStats,
    minutes: Vec<Minute>,
    memory_growth: Option<Growth>,
    notes: Vec<String>,
}

/// What the report is made of.
#[derive(Debug)]
pub(super) struct ReportInput {
    pub(super) record: Record,
    pub(super) target: String,
    pub(super) store: String,
    pub(super) duration_ms: i64,
    pub(super) kill_every_ms: i64,
    pub(super) rate: u32,
    pub(super) start_ms: i64,
    pub(super) kills: Vec<Kill>,
    pub(super) redis_restart: Option<RedisRestart>,
    pub(super) samples: Vec<Sample>,
    pub(super) drain_ms: u64,
    pub(super) still_present: u64,
    pub(super) lost_keys: Vec<String>,
    pub(super) repeating_live: Vec<String>,
    pub(super) notes: Vec<String>,
}

impl SoakReport {
    pub(super) fn build(input: ReportInput) -> SoakReport {
        let ReportInput {
            record,
            target,
            store,
            duration_ms,
            kill_every_ms,
            rate,
            start_ms,
            kills,
            redis_restart,
            samples,
            drain_ms,
            still_present,
            lost_keys,
            repeating_live,
            mut notes,
        } = input;
        let deliveries = &record.deliveries;
        let acks = |ended: fn(AckEnd) -> bool| deliveries.iter().filter(|d| ended(d.ack)).count() as u64;
        let duplicates = accounting::duplicates(deliveries, &kills, redis_restart.as_ref());
        let (delivered, one_off_cancelled) = delivered_and_cancelled(&record);
        let (repeat_occurrences, repeat_max_gap_ms) = accounting::repeats(&record, &repeating_live);
        let minutes = accounting::minutes(deliveries, start_ms, &samples, &kills);
        let memory_growth = accounting::growth(&kills, &samples);
        if memory_growth.is_none() {
            notes.push("memory growth needs two readings after the first 5 minutes: run longer".to_owned());
        }
        if duplicates.unexplained > 0 {
            notes.push(format!(
                "{} duplicate(s) had every earlier ack confirmed: not explained by at-least-once delivery",
                duplicates.unexplained
            ));
        }
        SoakReport {
            workload: "soak",
            target,
            store,
            duration_s: duration_ms as f64 / 1000.0,
            kill_every_s: kill_every_ms as f64 / 1000.0,
            settings: Settings {
                rate_per_s: rate,
                pull_loops: PULL_LOOPS,
                lease_max: LEASE_MAX,
                lease: LEASE,
                long_poll: LONG_POLL,
                repeating: REPEATING,
                repeat_every: REPEAT_EVERY,
                near_share: NEAR_SHARE,
                near_max_ms: NEAR_MAX_MS,
                far_ms: [FAR_MIN_MS, FAR_MAX_MS],
                cancel_share_of_far: CANCEL_SHARE,
            },
            scheduled: record.scheduled.len() as u64,
            schedules_failed: record.schedules_failed,
            repeating: record.repeating.len(),
            cancels_confirmed: record.cancelled.len() as u64,
            cancels_unconfirmed: record.cancels_unconfirmed.len() as u64,
            cancels_not_found: record.cancels_not_found,
            one_off_cancelled,
            leases: deliveries.len() as u64,
            lease_calls_failed: record.lease_calls_failed,
            acks_confirmed: acks(|ack| ack == AckEnd::Confirmed),
            acks_refused: acks(|ack| matches!(ack, AckEnd::Refused(_))),
            acks_unanswered: acks(|ack| ack == AckEnd::Unanswered),
            delivered,
            still_present,
            lost: lost_keys.len() as u64,
            lost_keys: lost_keys.into_iter().take(20).collect(),
            fired_after_cancel: fired_after_cancel(&record),
            repeat_occurrences,
            repeat_max_gap_ms,
            duplicates,
            kill_count: kills.len(),
            kills,
            redis_restart,
            drain_ms,
            lag: LagStats::of(deliveries.iter().map(|d| d.leased_ms - d.due_ms).collect()),
            minutes,
            memory_growth,
            notes,
        }
    }

    pub(super) fn table(&self) -> String {
        let mut text = figures(&format!("soak on {}", self.target), self.figures());
        let minute_rows = self
            .minutes
            .iter()
            .map(|m| {
                vec![
                    m.minute.to_string(),
                    thousands(m.leases as f64),
                    m.lag_p50_ms.to_string(),
                    m.lag_p99_ms.to_string(),
                    thousands(m.lag_max_ms as f64),
                    m.rss_kib.map_or("-".into(), kib),
                    m.uptime_s.map_or("-".into(), |s| format!("{s:.0}")),
                    m.redis_rss_kib.map_or("-".into(), kib),
                    m.kills.to_string(),
                ]
            })
            .collect();
        text.push_str("\n\nper minute (lag = lease received - due; RSS at the minute's end)\n");
        text.push_str(&table(
            &["MIN", "LEASES", "P50 MS", "P99 MS", "MAX MS", "SERVER RSS", "UP S", "REDIS RSS", "KILLS"],
            minute_rows,
            &[0, 1, 2, 3, 4, 5, 6, 7, 8],
        ));
        if !self.kills.is_empty() {
            let kill_rows = self
                .kills
                .iter()
                .map(|k| {
                    vec![
                        format!("{:.0}", k.at_s),
                        k.rss_before_kib.map_or("-".into(), kib),
                        thousands(k.restart_ms as f64),
                    ]
                })
                .collect();
            text.push_str("\n\nkills (RSS just before each kill -9; restart = kill -> /readyz)\n");
            text.push_str(&table(&["AT S", "RSS BEFORE", "RESTART MS"], kill_rows, &[0, 1, 2]));
        }
        for note in &self.notes {
            text.push_str(&format!("\nnote: {note}"));
        }
        text
    }

    /// The table's figures, one row each.
    fn figures(&self) -> Vec<(String, String)> {
        let d = &self.duplicates;
        let mut rows = vec![
            ("duration".to_owned(), format!("{:.0} s, kill -9 every {:.0} s", self.duration_s, self.kill_every_s)),
            ("kills (server restarted on the same store)".to_owned(), self.kill_count.to_string()),
            (
                "one-off tasks acknowledged (schedules failed)".to_owned(),
                format!("{} ({})", thousands(self.scheduled as f64), thousands(self.schedules_failed as f64)),
            ),
            (
                "cancels confirmed / unconfirmed / not found (of one-off tasks)".to_owned(),
                format!(
                    "{} / {} / {} ({})",
                    self.cancels_confirmed, self.cancels_unconfirmed, self.cancels_not_found, self.one_off_cancelled
                ),
            ),
            (
                "repeating tasks, occurrences leased".to_owned(),
                format!("{}, {}", self.repeating, self.repeat_occurrences),
            ),
            ("longest gap between occurrences".to_owned(), format!("{} ms", thousands(self.repeat_max_gap_ms as f64))),
            (
                "leases (acks confirmed / refused / unanswered)".to_owned(),
                format!(
                    "{} ({} / {} / {})",
                    thousands(self.leases as f64),
                    thousands(self.acks_confirmed as f64),
                    self.acks_refused,
                    self.acks_unanswered
                ),
            ),
            ("acknowledged tasks delivered".to_owned(), thousands(self.delivered as f64)),
            ("still stored, not delivered".to_owned(), self.still_present.to_string()),
            ("LOST (must be 0)".to_owned(), self.lost.to_string()),
            ("fired after a confirmed cancel (must be 0)".to_owned(), self.fired_after_cancel.to_string()),
            (
                "duplicates: at a kill / at the Redis restart / other / unexplained".to_owned(),
                format!(
                    "{} : {} / {} / {} / {}",
                    d.total,
                    d.ack_unconfirmed_at_kill,
                    d.ack_unconfirmed_at_redis_restart,
                    d.ack_unconfirmed_other,
                    d.unexplained
                ),
            ),
            (
                "lag p50 / p99 / max".to_owned(),
                format!("{} / {} / {} ms", self.lag.p50, self.lag.p99, thousands(self.lag.max as f64)),
            ),
            ("drain".to_owned(), format!("{} ms", thousands(self.drain_ms as f64))),
        ];
        if let Some(r) = &self.redis_restart {
            rows.push((
                "redis-server killed and restarted".to_owned(),
                format!("at {:.0} s, down {} ms, serving again after {} ms", r.at_s, r.down_ms, r.serving_again_ms),
            ));
        }
        if let Some(g) = &self.memory_growth {
            rows.push((
                format!("memory growth after 5 min ({})", g.basis),
                format!(
                    "{:+.1}% ({} at {:.0} s -> {} at {:.0} s; goal <= {:.0}%: {})",
                    g.pct,
                    kib(g.first_kib),
                    g.first_at_s,
                    kib(g.last_kib),
                    g.last_at_s,
                    g.goal_pct,
                    if g.met { "met" } else { "NOT met" }
                ),
            ));
        }
        rows
    }
}

/// A reading in KiB, shown in MiB.
pub(super) fn kib(kib: u64) -> String {
    mib(kib * 1024)
}
