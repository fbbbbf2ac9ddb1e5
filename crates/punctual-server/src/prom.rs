//! `/metrics`: the engine's [`MetricsSnapshot`] and the store's counts, rendered in the
//! Prometheus text format by `prometheus-client`.
//!
//! Each scrape builds a fresh registry over one [`Scrape`] (a collector holding values
//! read at one moment), so every family in one answer agrees with the others and
//! nothing is kept between scrapes. Names and labels are listed in the README.
//!
//! The group gauges are read from the store's groups listing at scrape time, at most
//! [`GROUP_PAGES`] pages of [`GROUP_PAGE_SIZE`] groups per queue, so one scrape costs a
//! bounded number of store reads however many groups a queue has; a queue with more
//! shows the counts of its first groups by name (the help text says so).

use std::time::Duration;

use crate::metrics::{HistogramSnapshot, MetricsSnapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use punctual_core::Timestamp;
use punctual_core::store::{GroupCounts, QueueStats};

/// Pages of a queue's groups one scrape reads, at most.
pub(crate) const GROUP_PAGES: usize = 10;
/// Groups per page read by a scrape (the API's largest page).
pub(crate) const GROUP_PAGE_SIZE: u32 = punctual_core::MAX_LIST_LIMIT;

/// Everything one scrape shows.
#[derive(Debug)]
pub(crate) struct Scrape {
    pub(crate) stats: Vec<QueueStats>,
    pub(crate) metrics: MetricsSnapshot,
    pub(crate) now: Timestamp,
    /// Per queue with a rate-limited action: its limiter's counts.
    pub(crate) rate_limits: Vec<(String, punctual_actions::RateStats)>,
    /// Every queue with a stored record, and whether it is paused.
    pub(crate) paused: Vec<(String, bool)>,
    /// Whether a live node sharing the store has another delivery policy.
    pub(crate) policy_mismatch: bool,
    /// Per queue with tasks or a group limit: its groups as read for this scrape.
    pub(crate) groups: Vec<GroupGauges>,
    /// Per calendar: when its entered holidays run out (`None`: none entered).
    pub(crate) calendars: Vec<(String, Option<Timestamp>)>,
    /// Per outbox drained (by name): what its drain did and last saw.
    pub(crate) outboxes: Vec<(String, punctual_outbox::StatusSnapshot)>,
}

/// One queue's groups as a scrape read them (at most [`GROUP_PAGES`] pages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupGauges {
    pub(crate) queue: String,
    /// The queue's `group_concurrency`; `None`: no limit, so no limited tasks.
    pub(crate) limit: Option<u32>,
    /// Groups that have tasks.
    pub(crate) groups: u64,
    /// Scheduled tasks of the groups at their limit (leased ≥ `limit`).
    pub(crate) limited: u64,
}

impl GroupGauges {
    /// Nothing counted yet.
    pub(crate) fn new(queue: String, limit: Option<u32>) -> GroupGauges {
        GroupGauges { queue, limit, groups: 0, limited: 0 }
    }

    /// Counts one page of the queue's groups in.
    pub(crate) fn count(&mut self, page: &[GroupCounts]) {
        self.groups += page.len() as u64;
        if let Some(limit) = self.limit {
            self.limited += page.iter().filter(|g| g.leased >= u64::from(limit)).map(|g| g.scheduled).sum::<u64>();
        }
    }
}

/// How long the oldest due but not yet leased task of a queue has waited.
pub(crate) fn oldest_overdue(stats: &QueueStats, now: Timestamp) -> Duration {
    stats.next_due_at.filter(|due| *due <= now).map_or(Duration::ZERO, |due| now.saturating_since(due))
}

/// Renders `scrape` as Prometheus text (version 0.0.4).
pub(crate) fn render(scrape: Scrape) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    Ok(out)
}

/// The content type of [`render`]'s text.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

type Labels = Vec<(&'static str, String)>;

/// Writes one family: its descriptor, then one sample per label set.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: impl IntoIterator<Item = (Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn histograms<'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Labels, &'a HistogramSnapshot)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in samples {
        // The encoder adds the buckets up itself: hand it each bucket's own count.
        let mut below = 0;
        let own: Vec<(f64, u64)> = h
            .buckets
            .iter()
            .map(|(bound, cumulative)| {
                let n = cumulative - below;
                below = *cumulative;
                (*bound, n)
            })
            .collect();
        metric.encode_family(&labels)?.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &own, None)?;
    }
    Ok(())
}

fn queue(name: &str) -> Labels {
    vec![("queue", name.to_owned())]
}

impl Scrape {
    /// The store's counts, plus zero counts for queues the engine has seen that hold
    /// no task now, so a queue's gauges drop to 0 instead of vanishing when it empties.
    fn all_stats(&self) -> Vec<QueueStats> {
        let mut all = self.stats.clone();
        for q in &self.metrics.queues {
            if !all.iter().any(|s| s.name == q.queue) {
                all.push(QueueStats::new(q.queue.clone(), 0, 0, 0, None));
            }
        }
        all.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        all
    }
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = &self.all_stats();
        let m = &self.metrics;
        family(&mut e, "punctual_up", "1 while the server runs.", MetricType::Gauge, [(vec![], ConstGauge::new(1))])?;
        let version = vec![("version", env!("CARGO_PKG_VERSION").to_owned())];
        let build = "1, labelled with the server's version: to tell which nodes run which release.";
        family(&mut e, "punctual_build_info", build, MetricType::Gauge, [(version, ConstGauge::new(1))])?;
        let tasks = stats.iter().flat_map(|s| {
            [("scheduled", s.scheduled), ("leased", s.leased), ("dead", s.dead)].map(|(state, n)| {
                (vec![("queue", s.name.to_string()), ("state", state.to_owned())], ConstGauge::new(n as i64))
            })
        });
        family(&mut e, "punctual_tasks", "Tasks per queue and state, as stored.", MetricType::Gauge, tasks)?;
        let overdue =
            stats.iter().map(|s| (queue(s.name.as_str()), ConstGauge::new(oldest_overdue(s, self.now).as_secs_f64())));
        family(
            &mut e,
            "punctual_oldest_overdue_seconds",
            "How long the oldest due but not yet leased task of the queue has waited (0 when none is due).",
            MetricType::Gauge,
            overdue,
        )?;
        let paused = self.paused.iter().map(|(name, paused)| (queue(name), ConstGauge::new(i64::from(*paused))));
        family(
            &mut e,
            "punctual_queue_paused",
            "1 while the queue is paused (nothing of it is leased or delivered), else 0.",
            MetricType::Gauge,
            paused,
        )?;
        let groups = self.groups.iter().map(|g| (queue(&g.queue), ConstGauge::new(g.groups as i64)));
        family(
            &mut e,
            "punctual_groups",
            "Groups of the queue that have tasks. Read from the store at each scrape, at most 10 pages of 1,000 \
             groups per queue: a queue with more shows 10000.",
            MetricType::Gauge,
            groups,
        )?;
        let limited = self
            .groups
            .iter()
            .filter(|g| g.limit.is_some())
            .map(|g| (queue(&g.queue), ConstGauge::new(g.limited as i64)));
        family(
            &mut e,
            "punctual_group_limited_tasks",
            "Scheduled tasks (due or not) of the queue's groups that are at its group_concurrency (leased >= the \
             limit), for queues with group_concurrency set. Read from the store at each scrape, at most 10 pages of \
             1,000 groups per queue: the first 10,000 groups by name.",
            MetricType::Gauge,
            limited,
        )?;
        let remaining = self.calendars.iter().map(|(name, until)| {
            let left = until.map_or(0, |until| until.as_millis().saturating_sub(self.now.as_millis()).max(0));
            (vec![("calendar", name.clone())], ConstGauge::new(left as f64 / 1000.0))
        });
        family(
            &mut e,
            "punctual_calendar_holidays_remaining_seconds",
            "How long until the last year with holidays entered in the calendar ends; 0 once it has, or when none \
             is entered (delays then count public holidays as working time). Alert below 30 days.",
            MetricType::Gauge,
            remaining,
        )?;
        let waiting = m.queues.iter().map(|q| (queue(q.queue.as_str()), ConstGauge::new(q.waiting_consumers as i64)));
        family(
            &mut e,
            "punctual_consumers_waiting",
            "Consumers (worker dispatchers with free slots, long polls) waiting for the queue now.",
            MetricType::Gauge,
            waiting,
        )?;
        type Pick = fn(&crate::metrics::QueueCounts) -> u64;
        let counters: [(&str, &str, Pick); 9] = [
            ("punctual_tasks_scheduled", "Tasks created or replaced.", |q| q.scheduled),
            ("punctual_tasks_fired", "Leases handed out (handler starts).", |q| q.fired),
            ("punctual_tasks_done", "Tries that ended done.", |q| q.done),
            ("punctual_tasks_retried", "Tries that failed and will be retried.", |q| q.retried),
            ("punctual_tasks_rescheduled", "Tries whose handler asked to fire again later.", |q| q.rescheduled),
            ("punctual_tasks_cancelled", "Tasks cancelled (by key or by tag).", |q| q.cancelled),
            (
                "punctual_tasks_skipped",
                "Occurrences that did not fire: leased later than misfire_after past their due time under misfire skip.",
                |q| q.skipped,
            ),
            ("punctual_tasks_dead", "Tasks that went dead.", |q| q.dead),
            ("punctual_leases_expired", "Leases that expired before their ack.", |q| q.expired),
        ];
        for (name, help, pick) in counters {
            let samples = m.queues.iter().map(|q| (queue(q.queue.as_str()), ConstCounter::new(pick(q))));
            family(&mut e, name, help, MetricType::Counter, samples)?;
        }
        histograms(
            &mut e,
            "punctual_fire_lag_seconds",
            "Fire lag: lease time minus due time.",
            m.queues.iter().map(|q| (queue(q.queue.as_str()), &q.fire_lag)),
        )?;
        histograms(
            &mut e,
            "punctual_handler_duration_seconds",
            "Lease to completion: a handler's run time, or lease to ack for pull workers.",
            m.queues.iter().map(|q| (queue(q.queue.as_str()), &q.handler_duration)),
        )?;
        histograms(
            &mut e,
            "punctual_store_op_seconds",
            "Latency of store operations.",
            m.store_ops.iter().map(|o| (vec![("op", o.op.to_owned())], &o.latency)),
        )?;
        let throttled = self.rate_limits.iter().map(|(q, r)| (queue(q), ConstCounter::new(r.throttled)));
        family(
            &mut e,
            "punctual_action_rate_limited",
            "Deliveries that waited for their turn under the queue's rate limit (never failed).",
            MetricType::Counter,
            throttled,
        )?;
        let waiting = self.rate_limits.iter().map(|(q, r)| (queue(q), ConstGauge::new(r.waiting as i64)));
        family(
            &mut e,
            "punctual_action_rate_waiting",
            "Deliveries waiting for the queue's rate limit now.",
            MetricType::Gauge,
            waiting,
        )?;
        let restarts =
            m.watchdog_restarts.iter().map(|(which, n)| (vec![("loop", (*which).to_owned())], ConstCounter::new(*n)));
        family(
            &mut e,
            "punctual_watchdog_restarts",
            "Stalled loops the watchdog restarted.",
            MetricType::Counter,
            restarts,
        )?;
        family(
            &mut e,
            "punctual_store_resets",
            "Times this server found the store emptied (Redis lost punctual's data): every task stored before is gone.",
            MetricType::Counter,
            [(vec![], ConstCounter::new(m.store_resets))],
        )?;
        self.encode_outboxes(&mut e)?;
        family(
            &mut e,
            "punctual_delivery_policy_mismatch",
            "1 while a live node sharing the store has another [egress] or [targets] than this one (see /readyz), \
             else 0.",
            MetricType::Gauge,
            [(vec![], ConstGauge::new(i64::from(self.policy_mismatch)))],
        )?;
        Ok(())
    }
}

impl Scrape {
    /// The outbox families, one sample per outbox drained.
    fn encode_outboxes(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let outbox = |name: &str| vec![("outbox", name.to_owned())];
        let waiting =
            self.outboxes.iter().filter_map(|(name, s)| Some((outbox(name), ConstGauge::new(s.waiting? as i64))));
        family(
            e,
            "punctual_outbox_rows_waiting",
            "Rows in the outbox table at the drain's last count (every 5 s): committed, not yet applied.",
            MetricType::Gauge,
            waiting,
        )?;
        let oldest = self.outboxes.iter().map(|(name, s)| {
            let age = s.oldest_ms.map_or(0, |at| self.now.as_millis().saturating_sub(at).max(0));
            (outbox(name), ConstGauge::new(age as f64 / 1000.0))
        });
        family(
            e,
            "punctual_outbox_oldest_seconds",
            "Age of the oldest row in the outbox table at the drain's last count; 0 when it is empty. The outbox's \
             lag: alert when it grows.",
            MetricType::Gauge,
            oldest,
        )?;
        type Pick = fn(&punctual_outbox::StatusSnapshot) -> u64;
        let counters: [(&str, &str, Pick); 3] = [
            ("punctual_outbox_applied", "Outbox rows this server applied.", |s| s.applied),
            (
                "punctual_outbox_replayed",
                "Outbox rows this server found applied before (read again after a crash or an undone batch): \
                 deleted, nothing changed.",
                |s| s.replayed,
            ),
            (
                "punctual_outbox_failed",
                "Outbox rows this server moved to the failed table (the API would refuse them).",
                |s| s.failed,
            ),
        ];
        for (name, help, pick) in counters {
            let samples = self.outboxes.iter().map(|(o, s)| (outbox(o), ConstCounter::new(pick(s))));
            family(e, name, help, MetricType::Counter, samples)?;
        }
        let failed_rows =
            self.outboxes.iter().filter_map(|(name, s)| Some((outbox(name), ConstGauge::new(s.failed_rows? as i64))));
        family(
            e,
            "punctual_outbox_failed_rows",
            "Rows in the outbox's failed table at the drain's last count.",
            MetricType::Gauge,
            failed_rows,
        )?;
        let up = self.outboxes.iter().map(|(name, s)| (outbox(name), ConstGauge::new(i64::from(s.error.is_none()))));
        family(
            e,
            "punctual_outbox_up",
            "1 while the outbox is drained, 0 while its database or the store fails (see /readyz).",
            MetricType::Gauge,
            up,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_core::QueueName;

    #[test]
    fn families_are_rendered_with_their_types() {
        let name = QueueName::new("order.cancel").unwrap();
        let stats = vec![QueueStats::new(name, 2, 1, 0, Some(Timestamp::from_millis(1_000)))];
        let metrics = MetricsSnapshot::default();
        let mut limited = punctual_actions::RateStats::default();
        limited.throttled = 4;
        limited.waiting = 2;
        let rate_limits = vec![("flow.remind".to_owned(), limited)];
        let paused = vec![("order.cancel".to_owned(), true), ("flow.remind".to_owned(), false)];
        let now = Timestamp::from_millis(3_500);
        let mut limited = GroupGauges::new("flow.remind".to_owned(), Some(1));
        limited.groups = 3;
        limited.limited = 5;
        let unlimited = GroupGauges { queue: "order.cancel".to_owned(), limit: None, groups: 2, limited: 0 };
        let groups = vec![limited, unlimited];
        let calendars = vec![("cn-office".to_owned(), Some(Timestamp::from_millis(63_500))), ("none".to_owned(), None)];
        let outboxes = Vec::new();
        let scrape =
            Scrape { stats, metrics, now, rate_limits, paused, policy_mismatch: true, groups, calendars, outboxes };
        let text = render(scrape).unwrap();
        assert!(text.contains("punctual_calendar_holidays_remaining_seconds{calendar=\"cn-office\"} 60.0\n"), "{text}");
        assert!(text.contains("punctual_calendar_holidays_remaining_seconds{calendar=\"none\"} 0.0\n"), "{text}");
        assert!(text.contains("punctual_queue_paused{queue=\"order.cancel\"} 1\n"), "{text}");
        assert!(text.contains("punctual_queue_paused{queue=\"flow.remind\"} 0\n"), "{text}");
        assert!(text.contains("punctual_tasks{queue=\"order.cancel\",state=\"scheduled\"} 2\n"), "{text}");
        assert!(text.contains("punctual_oldest_overdue_seconds{queue=\"order.cancel\"} 2.5\n"), "{text}");
        assert!(text.contains("# TYPE punctual_watchdog_restarts_total counter"), "{text}");
        assert!(text.contains("\npunctual_store_resets_total 0\n"), "{text}");
        assert!(text.contains("punctual_action_rate_limited_total{queue=\"flow.remind\"} 4\n"), "{text}");
        assert!(text.contains("punctual_action_rate_waiting{queue=\"flow.remind\"} 2\n"), "{text}");
        assert!(text.contains("\npunctual_delivery_policy_mismatch 1\n"), "{text}");
        assert!(text.contains("punctual_groups{queue=\"flow.remind\"} 3\n"), "{text}");
        assert!(text.contains("punctual_groups{queue=\"order.cancel\"} 2\n"), "{text}");
        assert!(text.contains("punctual_group_limited_tasks{queue=\"flow.remind\"} 5\n"), "{text}");
        assert!(!text.contains("punctual_group_limited_tasks{queue=\"order.cancel\"}"), "no limit, no gauge: {text}");
        assert!(text.contains("# HELP punctual_group_limited_tasks "), "{text}");
        assert!(text.contains("at most 10 pages of 1,000 groups per queue"), "the bound is in the help: {text}");
    }

    #[test]
    fn each_outbox_drained_has_its_lag_counts_and_health() {
        let status = |waiting, oldest_ms, error: Option<&str>| punctual_outbox::StatusSnapshot {
            applied: 7,
            replayed: 1,
            failed: 2,
            waiting,
            oldest_ms,
            failed_rows: Some(3),
            queues: Vec::new(),
            error: error.map(str::to_owned),
        };
        let outboxes = vec![
            ("shop".to_owned(), status(Some(40), Some(1_500), None)),
            ("billing".to_owned(), status(None, None, Some("MySQL: connection refused"))),
        ];
        let scrape = Scrape {
            stats: Vec::new(),
            metrics: MetricsSnapshot::default(),
            now: Timestamp::from_millis(4_000),
            rate_limits: Vec::new(),
            paused: Vec::new(),
            policy_mismatch: false,
            groups: Vec::new(),
            calendars: Vec::new(),
            outboxes,
        };
        let text = render(scrape).unwrap();
        assert!(text.contains("punctual_outbox_rows_waiting{outbox=\"shop\"} 40\n"), "{text}");
        assert!(!text.contains("punctual_outbox_rows_waiting{outbox=\"billing\"}"), "not counted yet: {text}");
        assert!(text.contains("punctual_outbox_oldest_seconds{outbox=\"shop\"} 2.5\n"), "{text}");
        assert!(text.contains("punctual_outbox_oldest_seconds{outbox=\"billing\"} 0.0\n"), "{text}");
        assert!(text.contains("punctual_outbox_applied_total{outbox=\"shop\"} 7\n"), "{text}");
        assert!(text.contains("punctual_outbox_replayed_total{outbox=\"shop\"} 1\n"), "{text}");
        assert!(text.contains("punctual_outbox_failed_total{outbox=\"shop\"} 2\n"), "{text}");
        assert!(text.contains("punctual_outbox_failed_rows{outbox=\"shop\"} 3\n"), "{text}");
        assert!(text.contains("punctual_outbox_up{outbox=\"shop\"} 1\n"), "{text}");
        assert!(text.contains("punctual_outbox_up{outbox=\"billing\"} 0\n"), "{text}");
    }

    fn group(name: &str, scheduled: u64, leased: u64) -> GroupCounts {
        GroupCounts::new(punctual_core::Group::new(name).unwrap(), scheduled, leased, 0)
    }

    #[test]
    fn limited_tasks_are_the_scheduled_ones_of_groups_at_their_limit() {
        let mut gauges = GroupGauges::new("flow.remind".to_owned(), Some(2));
        gauges.count(&[group("at-limit", 4, 2), group("over-limit", 1, 3), group("room-left", 7, 1)]);
        gauges.count(&[group("idle", 9, 0), group("full-and-empty", 0, 2)]);
        assert_eq!((gauges.groups, gauges.limited), (5, 5), "{gauges:?}");

        let mut unlimited = GroupGauges::new("order.cancel".to_owned(), None);
        unlimited.count(&[group("busy", 4, 9)]);
        assert_eq!((unlimited.groups, unlimited.limited), (1, 0), "without a limit no task waits on one");
    }
}
