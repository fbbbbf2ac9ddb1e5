//! What the engine counts and measures, kept in plain atomics so the core stays free
//! of any metrics framework and of HTTP: the server reads a [`MetricsSnapshot`] from
//! [`Engine::metrics`](crate::Engine::metrics) and renders it as Prometheus text.
//!
//! Events are counted where they happen in the engine, once each, after the store
//! accepted them: a schedule (created or replaced), a lease (fired), a completion
//! (done, retried, rescheduled, dead), a cancel, an expired lease (reaped); and each
//! reset a shared store reports ([`Peers::resets`](crate::Peers)). Push
//! handlers ([`Worker`](crate::Worker)) and pull workers both go through those engine
//! calls, so both are counted without extra work. An ack refused as
//! [`Error::LeaseLost`](crate::Error::LeaseLost) changes nothing and counts nothing.
//!
//! Invariants:
//! - Counters only grow; a histogram's `count` equals the sum of its buckets.
//! - Fire lag is lease time − due time; handler duration is lease time → completion
//!   time, both read from the engine's [`Clock`](crate::Clock), so tests on a manual
//!   clock see exact values. Store latency is wall time (a [`Stopwatch`]).
//! - Memory is bounded: per queue a fixed set of counters, [`RECENT_OUTCOMES`] recent
//!   outcomes and a ring of [`RATE_SLOTS`] throughput slots; lease start times are
//!   kept for at most [`MAX_TRACKED_LEASES`] leases (beyond that a completion falls back
//!   to the task's `updated_at`, which is the lease time unless the lease was extended).
//!   Queues are counted from their first event on, for the life of the engine.
//!
//! `Metered` wraps the store: each method the engine calls is timed per operation
//! and otherwise passed through unchanged (it dereferences to the store, so a method
//! not listed here still works, untimed).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::Stopwatch;
use crate::error::Result;
use crate::model::{NewTask, QueueName, Tag, Task, TaskKey, TaskState};
use crate::store::{
    CompleteRequest, Completion, Lease, LeaseBatch, LeaseRequest, LeaseToken, ListRequest, Page, QueueStats,
    ReapResult, RetriedDead, RetryDeadRequest, ScheduleOutcome, Scheduled, Store, StoreReset, SweepRequest, Swept,
};
use crate::time::Timestamp;

/// Recent outcomes kept per queue.
pub const RECENT_OUTCOMES: usize = 100;
/// Throughput slots kept per queue, each [`RATE_SLOT`] long (15 minutes in all).
pub const RATE_SLOTS: usize = 90;
/// The length of one throughput slot.
pub const RATE_SLOT: Duration = Duration::from_secs(10);
/// Leases whose start time is remembered for handler durations.
pub const MAX_TRACKED_LEASES: usize = 100_000;

/// Upper bounds (seconds) of fire-lag and handler-duration buckets.
pub const TASK_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0];
/// Upper bounds (seconds) of store-latency buckets.
pub const STORE_BUCKETS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A histogram with fixed bucket bounds, in atomics.
#[derive(Debug)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// One per bound, plus one for values above the last bound.
    buckets: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bounds are increasing");
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        let slot = self.bounds.iter().position(|bound| seconds <= *bound).unwrap_or(self.bounds.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(value.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
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

/// How a try ended, as counted and kept in the recent history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum OutcomeKind {
    /// The handler finished (a repeating task is re-armed: still done).
    Done,
    /// The try failed and will be tried again.
    Retried,
    /// The handler asked to fire again later.
    Rescheduled,
    /// Gave up: the task is dead.
    Dead,
    /// The lease expired before an ack (the handler was too slow or vanished).
    Expired,
}

impl OutcomeKind {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Done => "done",
            OutcomeKind::Retried => "retried",
            OutcomeKind::Rescheduled => "rescheduled",
            OutcomeKind::Dead => "dead",
            OutcomeKind::Expired => "expired",
        }
    }
}

/// A completion about to be applied, remembered so it can be counted once applied.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    kind: OutcomeKind,
    error: Option<String>,
}

impl Finished {
    /// `handler_done`: the handler said done (a repeat's re-arm is then still "done").
    pub(crate) fn of(completion: &Completion, handler_done: bool) -> Finished {
        let (kind, error) = match completion {
            Completion::Done => (OutcomeKind::Done, None),
            Completion::Reschedule { .. } if handler_done => (OutcomeKind::Done, None),
            Completion::Reschedule { .. } => (OutcomeKind::Rescheduled, None),
            Completion::Retry { error, .. } => (OutcomeKind::Retried, Some(error.clone())),
            Completion::Dead { error } => (OutcomeKind::Dead, Some(error.clone())),
        };
        Finished { kind, error }
    }
}

/// One recent outcome of a queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct OutcomeRecord {
    pub key: TaskKey,
    pub outcome: OutcomeKind,
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

/// Counters of one queue, as read at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueCounts {
    pub queue: QueueName,
    /// Tasks created or replaced (kept ones are not counted).
    pub scheduled: u64,
    /// Leases handed out (to a worker's handler or to a pull worker).
    pub fired: u64,
    pub done: u64,
    pub retried: u64,
    pub rescheduled: u64,
    pub cancelled: u64,
    /// Tasks that went dead (a `fail`, spent attempts, or a last lease that expired).
    pub dead: u64,
    /// Leases that expired before their ack.
    pub expired: u64,
    /// Lease time − due time.
    pub fire_lag: HistogramSnapshot,
    /// Lease time → completion (handler run time for workers, lease → ack for pull
    /// workers).
    pub handler_duration: HistogramSnapshot,
    /// Consumers (dispatchers with free slots, long polls) waiting for this queue now.
    pub waiting_consumers: usize,
}

/// Latency of one store operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpLatency {
    pub op: &'static str,
    pub latency: HistogramSnapshot,
}

/// Everything counted, as read at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Every queue that had an event, sorted by name.
    pub queues: Vec<QueueCounts>,
    /// Store operations called at least once, sorted by name.
    pub store_ops: Vec<OpLatency>,
    /// Loops the watchdog restarted: `("consumer" | "reaper", count)`.
    pub watchdog_restarts: Vec<(&'static str, u64)>,
    /// Times the store was found emptied while this engine ran (see [`StoreReset`]).
    pub store_resets: u64,
    /// The latest of them.
    pub last_store_reset: Option<StoreReset>,
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

#[derive(Debug)]
struct QueueRecorder {
    scheduled: AtomicU64,
    fired: AtomicU64,
    done: AtomicU64,
    retried: AtomicU64,
    rescheduled: AtomicU64,
    cancelled: AtomicU64,
    dead: AtomicU64,
    expired: AtomicU64,
    fire_lag: Histogram,
    handler_duration: Histogram,
    waiting: AtomicUsize,
    recent: Mutex<VecDeque<OutcomeRecord>>,
    /// `(slot index since the epoch, leases)`; a slot is reused when its index is old.
    rate: Mutex<[(i64, u64); RATE_SLOTS]>,
}

impl Default for QueueRecorder {
    fn default() -> QueueRecorder {
        QueueRecorder {
            scheduled: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            done: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            rescheduled: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            dead: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            fire_lag: Histogram::new(TASK_BUCKETS),
            handler_duration: Histogram::new(TASK_BUCKETS),
            waiting: AtomicUsize::new(0),
            recent: Mutex::new(VecDeque::with_capacity(RECENT_OUTCOMES)),
            rate: Mutex::new([(i64::MIN, 0); RATE_SLOTS]),
        }
    }
}

impl QueueRecorder {
    fn counter(&self, kind: OutcomeKind) -> &AtomicU64 {
        match kind {
            OutcomeKind::Done => &self.done,
            OutcomeKind::Retried => &self.retried,
            OutcomeKind::Rescheduled => &self.rescheduled,
            OutcomeKind::Dead => &self.dead,
            OutcomeKind::Expired => &self.expired,
        }
    }

    fn remember(&self, record: OutcomeRecord) {
        let mut recent = self.recent.lock().expect("recent lock poisoned");
        if recent.len() == RECENT_OUTCOMES {
            recent.pop_back();
        }
        recent.push_front(record);
    }

    fn count_rate(&self, now: Timestamp, n: u64) {
        let index = slot_index(now);
        let mut rate = self.rate.lock().expect("rate lock poisoned");
        let slot = &mut rate[index.rem_euclid(RATE_SLOTS as i64) as usize];
        if slot.0 != index {
            *slot = (index, 0);
        }
        slot.1 += n;
    }

    fn rates(&self, now: Timestamp) -> Vec<u64> {
        let current = slot_index(now);
        let rate = self.rate.lock().expect("rate lock poisoned");
        (0..RATE_SLOTS as i64)
            .map(|back| current - (RATE_SLOTS as i64 - 1) + back)
            .map(|index| {
                let slot = rate[index.rem_euclid(RATE_SLOTS as i64) as usize];
                if slot.0 == index { slot.1 } else { 0 }
            })
            .collect()
    }
}

fn slot_index(at: Timestamp) -> i64 {
    at.as_millis().div_euclid(RATE_SLOT.as_millis() as i64)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The engine's counters. One per engine; every method is cheap and never fails.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    queues: Mutex<HashMap<QueueName, Arc<QueueRecorder>>>,
    /// Lease start times by `(task id, fence)`, which names one lease for ever.
    leased_at: Mutex<HashMap<(u64, u64), Timestamp>>,
    consumer_restarts: AtomicU64,
    reaper_restarts: AtomicU64,
    store_resets: AtomicU64,
    last_store_reset: Mutex<Option<StoreReset>>,
}

/// Counts a consumer as waiting for its queue while it lives.
#[derive(Debug)]
pub(crate) struct Waiting(Arc<QueueRecorder>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Recorder {
    fn queue(&self, queue: &QueueName) -> Arc<QueueRecorder> {
        let mut queues = self.queues.lock().expect("metrics lock poisoned");
        Arc::clone(queues.entry(queue.clone()).or_default())
    }

    /// A consumer waits for (or is leasing from) `queue` until the guard drops.
    pub(crate) fn waiting(&self, queue: &QueueName) -> Waiting {
        let recorder = self.queue(queue);
        recorder.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(recorder)
    }

    /// Consumers waiting for `queue` now.
    pub(crate) fn waiting_consumers(&self, queue: &QueueName) -> usize {
        self.queues.lock().expect("metrics lock poisoned").get(queue).map_or(0, |q| q.waiting.load(Ordering::Relaxed))
    }

    /// Queues with at least one waiting consumer, and how many leases each handed out.
    pub(crate) fn queues_with_consumers(&self) -> Vec<(QueueName, u64)> {
        let queues = self.queues.lock().expect("metrics lock poisoned");
        queues
            .iter()
            .filter(|(_, q)| q.waiting.load(Ordering::Relaxed) > 0)
            .map(|(name, q)| (name.clone(), q.fired.load(Ordering::Relaxed)))
            .collect()
    }

    pub(crate) fn scheduled(&self, results: &[Result<Scheduled>]) {
        for scheduled in results.iter().flatten() {
            if scheduled.outcome == ScheduleOutcome::Kept {
                continue;
            }
            let task = &scheduled.task;
            self.queue(&task.queue).scheduled.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(queue = %task.queue, key = %task.key, due_at = %task.due_at, version = task.version, "task scheduled");
        }
    }

    pub(crate) fn leased(&self, queue: &QueueName, now: Timestamp, leases: &[Lease]) {
        if leases.is_empty() {
            return;
        }
        let recorder = self.queue(queue);
        recorder.fired.fetch_add(leases.len() as u64, Ordering::Relaxed);
        recorder.count_rate(now, leases.len() as u64);
        let mut leased_at = self.leased_at.lock().expect("metrics lock poisoned");
        if leased_at.len() + leases.len() > MAX_TRACKED_LEASES {
            // Leases last at most 12 h: older entries belong to leases long over.
            let horizon = Timestamp::from_millis(now.as_millis().saturating_sub(12 * 3600 * 1000));
            leased_at.retain(|_, at| *at >= horizon);
        }
        for lease in leases {
            let lag = now.saturating_since(lease.task.due_at);
            recorder.fire_lag.observe(lag);
            if leased_at.len() < MAX_TRACKED_LEASES {
                leased_at.insert((lease.token.task_id, lease.token.fence), now);
            }
            tracing::debug!(
                queue = %queue, key = %lease.token.key, delivery_id = %lease.delivery_id, attempt = lease.attempt,
                lag_ms = millis(lag), "task fired"
            );
        }
    }

    /// A lease given back untried.
    pub(crate) fn released(&self, token: &LeaseToken) {
        self.leased_at.lock().expect("metrics lock poisoned").remove(&(token.task_id, token.fence));
    }

    /// A completion was applied to the lease `token` of `task` (the task as leased or
    /// as read just before the completion).
    pub(crate) fn completed(&self, token: &LeaseToken, task: &Task, finished: Finished, now: Timestamp) {
        let recorder = self.queue(&token.queue);
        recorder.counter(finished.kind).fetch_add(1, Ordering::Relaxed);
        let known = self.leased_at.lock().expect("metrics lock poisoned").remove(&(token.task_id, token.fence));
        let leased_at = known.unwrap_or(task.updated_at);
        let duration = now.saturating_since(leased_at);
        recorder.handler_duration.observe(duration);
        let attempt = task.attempts + 1;
        let delivery_id = task.delivery_id();
        match finished.kind {
            OutcomeKind::Dead => tracing::warn!(
                queue = %token.queue, key = %token.key, delivery_id = %delivery_id, attempt,
                error = finished.error.as_deref().unwrap_or(""), "task is dead"
            ),
            OutcomeKind::Retried => tracing::info!(
                queue = %token.queue, key = %token.key, delivery_id = %delivery_id, attempt,
                error = finished.error.as_deref().unwrap_or(""), "task failed; it will be retried"
            ),
            kind => tracing::debug!(
                queue = %token.queue, key = %token.key, delivery_id = %delivery_id, attempt,
                outcome = kind.as_str(), duration_ms = millis(duration), "task completed"
            ),
        }
        recorder.remember(OutcomeRecord {
            key: token.key.clone(),
            outcome: finished.kind,
            at: now,
            due_at: task.due_at,
            lag_ms: Some(millis(leased_at.saturating_since(task.due_at))),
            duration_ms: Some(millis(duration)),
            attempt,
            error: finished.error,
        });
    }

    pub(crate) fn cancelled(&self, queue: &QueueName, key: Option<&TaskKey>, n: u64) {
        if n == 0 {
            return;
        }
        self.queue(queue).cancelled.fetch_add(n, Ordering::Relaxed);
        match key {
            Some(key) => tracing::debug!(queue = %queue, key = %key, "task cancelled"),
            None => tracing::debug!(queue = %queue, cancelled = n, "tasks cancelled by tag"),
        }
    }

    pub(crate) fn reaped(&self, result: &ReapResult, now: Timestamp) {
        for reaped in &result.reaped {
            let recorder = self.queue(&reaped.queue);
            recorder.expired.fetch_add(1, Ordering::Relaxed);
            if reaped.state == TaskState::Dead {
                recorder.dead.fetch_add(1, Ordering::Relaxed);
            }
            recorder.remember(OutcomeRecord {
                key: reaped.key.clone(),
                outcome: if reaped.state == TaskState::Dead { OutcomeKind::Dead } else { OutcomeKind::Expired },
                at: now,
                due_at: now,
                lag_ms: None,
                duration_ms: None,
                attempt: 0,
                error: Some("the lease expired before an ack".into()),
            });
        }
    }

    /// The watchdog restarted a loop (`"consumer"` or `"reaper"`).
    pub(crate) fn watchdog_restart(&self, which: &'static str) {
        let counter = if which == "reaper" { &self.reaper_restarts } else { &self.consumer_restarts };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, latency: &StoreLatency) -> MetricsSnapshot {
        let queues = self.queues.lock().expect("metrics lock poisoned").clone();
        let mut queues: Vec<QueueCounts> = queues
            .into_iter()
            .map(|(queue, q)| QueueCounts {
                queue,
                scheduled: q.scheduled.load(Ordering::Relaxed),
                fired: q.fired.load(Ordering::Relaxed),
                done: q.done.load(Ordering::Relaxed),
                retried: q.retried.load(Ordering::Relaxed),
                rescheduled: q.rescheduled.load(Ordering::Relaxed),
                cancelled: q.cancelled.load(Ordering::Relaxed),
                dead: q.dead.load(Ordering::Relaxed),
                expired: q.expired.load(Ordering::Relaxed),
                fire_lag: q.fire_lag.snapshot(),
                handler_duration: q.handler_duration.snapshot(),
                waiting_consumers: q.waiting.load(Ordering::Relaxed),
            })
            .collect();
        queues.sort_by(|a, b| a.queue.as_str().cmp(b.queue.as_str()));
        MetricsSnapshot {
            queues,
            store_ops: latency.snapshot(),
            watchdog_restarts: vec![
                ("consumer", self.consumer_restarts.load(Ordering::Relaxed)),
                ("reaper", self.reaper_restarts.load(Ordering::Relaxed)),
            ],
            store_resets: self.store_resets.load(Ordering::Relaxed),
            last_store_reset: self.last_store_reset.lock().expect("metrics lock poisoned").clone(),
        }
    }

    /// The store was found emptied (the store itself logged it).
    pub(crate) fn store_reset(&self, reset: StoreReset) {
        *self.last_store_reset.lock().expect("metrics lock poisoned") = Some(reset);
        self.store_resets.fetch_add(1, Ordering::Relaxed);
    }

    /// Resets whose reports were lost (more than the channel holds at once).
    pub(crate) fn store_resets_missed(&self, missed: u64) {
        self.store_resets.fetch_add(missed, Ordering::Relaxed);
    }

    pub(crate) fn activity(&self, queue: &QueueName, now: Timestamp) -> QueueActivity {
        let found = self.queues.lock().expect("metrics lock poisoned").get(queue).cloned();
        match found {
            Some(q) => QueueActivity {
                recent: q.recent.lock().expect("recent lock poisoned").iter().cloned().collect(),
                fired_per_slot: q.rates(now),
            },
            None => QueueActivity { recent: Vec::new(), fired_per_slot: vec![0; RATE_SLOTS] },
        }
    }
}

/// Store operations, timed one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreOp {
    Schedule,
    Get,
    Cancel,
    CancelTag,
    List,
    Lease,
    Complete,
    CompleteMany,
    Extend,
    Release,
    Reap,
    RetryDead,
    RetryDeadBatch,
    DeleteDead,
    SweepDead,
    Stats,
}

impl StoreOp {
    const ALL: [StoreOp; 16] = [
        StoreOp::Cancel,
        StoreOp::CancelTag,
        StoreOp::Complete,
        StoreOp::CompleteMany,
        StoreOp::DeleteDead,
        StoreOp::Extend,
        StoreOp::Get,
        StoreOp::Lease,
        StoreOp::List,
        StoreOp::Reap,
        StoreOp::Release,
        StoreOp::RetryDead,
        StoreOp::RetryDeadBatch,
        StoreOp::Schedule,
        StoreOp::Stats,
        StoreOp::SweepDead,
    ];

    fn name(self) -> &'static str {
        match self {
            StoreOp::Schedule => "schedule",
            StoreOp::Get => "get",
            StoreOp::Cancel => "cancel",
            StoreOp::CancelTag => "cancel_tag",
            StoreOp::List => "list",
            StoreOp::Lease => "lease",
            StoreOp::Complete => "complete",
            StoreOp::CompleteMany => "complete_many",
            StoreOp::Extend => "extend",
            StoreOp::Release => "release",
            StoreOp::Reap => "reap",
            StoreOp::RetryDead => "retry_dead",
            StoreOp::RetryDeadBatch => "retry_dead_batch",
            StoreOp::SweepDead => "sweep_dead",
            StoreOp::DeleteDead => "delete_dead",
            StoreOp::Stats => "stats",
        }
    }
}

/// A latency histogram per store operation.
#[derive(Debug)]
pub(crate) struct StoreLatency {
    ops: Vec<Histogram>,
}

impl Default for StoreLatency {
    fn default() -> StoreLatency {
        StoreLatency { ops: StoreOp::ALL.iter().map(|_| Histogram::new(STORE_BUCKETS)).collect() }
    }
}

impl StoreLatency {
    fn histogram(&self, op: StoreOp) -> &Histogram {
        let index = StoreOp::ALL.iter().position(|o| *o == op).expect("every op is in ALL");
        &self.ops[index]
    }

    fn snapshot(&self) -> Vec<OpLatency> {
        StoreOp::ALL
            .iter()
            .zip(&self.ops)
            .map(|(op, h)| OpLatency { op: op.name(), latency: h.snapshot() })
            .filter(|op| op.latency.count > 0)
            .collect()
    }
}

/// The store, with each call the engine makes timed. Dereferences to the store.
#[derive(Debug)]
pub(crate) struct Metered<S> {
    store: S,
    pub(crate) latency: StoreLatency,
}

impl<S> std::ops::Deref for Metered<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.store
    }
}

impl<S: Store> Metered<S> {
    pub(crate) fn new(store: S) -> Metered<S> {
        Metered { store, latency: StoreLatency::default() }
    }

    async fn timed<T>(&self, op: StoreOp, call: impl Future<Output = T>) -> T {
        let watch = Stopwatch::start();
        let result = call.await;
        self.latency.histogram(op).observe(watch.elapsed());
        result
    }

    pub(crate) async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.timed(StoreOp::Schedule, self.store.schedule(tasks, now)).await
    }
    pub(crate) async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        self.timed(StoreOp::Get, self.store.get(queue, key)).await
    }
    pub(crate) async fn cancel(&self, queue: &QueueName, key: &TaskKey) -> Result<bool> {
        self.timed(StoreOp::Cancel, self.store.cancel(queue, key)).await
    }
    pub(crate) async fn cancel_tag(&self, queue: &QueueName, tag: &Tag) -> Result<u64> {
        self.timed(StoreOp::CancelTag, self.store.cancel_tag(queue, tag)).await
    }
    pub(crate) async fn list(&self, req: ListRequest) -> Result<Page> {
        self.timed(StoreOp::List, self.store.list(req)).await
    }
    pub(crate) async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        self.timed(StoreOp::Lease, self.store.lease(req)).await
    }
    pub(crate) async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.timed(StoreOp::Complete, self.store.complete(req)).await
    }
    pub(crate) async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        self.timed(StoreOp::CompleteMany, self.store.complete_many(reqs)).await
    }
    pub(crate) async fn extend(&self, token: &LeaseToken, lease_for: Duration, now: Timestamp) -> Result<Timestamp> {
        self.timed(StoreOp::Extend, self.store.extend(token, lease_for, now)).await
    }
    pub(crate) async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        self.timed(StoreOp::Release, self.store.release(token, now)).await
    }
    pub(crate) async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        self.timed(StoreOp::Reap, self.store.reap(now, limit)).await
    }
    pub(crate) async fn retry_dead(&self, queue: &QueueName, key: &TaskKey, now: Timestamp) -> Result<Option<Task>> {
        self.timed(StoreOp::RetryDead, self.store.retry_dead(queue, key, now)).await
    }
    pub(crate) async fn retry_dead_batch(&self, req: RetryDeadRequest) -> Result<RetriedDead> {
        self.timed(StoreOp::RetryDeadBatch, self.store.retry_dead_batch(req)).await
    }
    pub(crate) async fn delete_dead(&self, queue: &QueueName, key: &TaskKey) -> Result<bool> {
        self.timed(StoreOp::DeleteDead, self.store.delete_dead(queue, key)).await
    }
    pub(crate) async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        self.timed(StoreOp::SweepDead, self.store.sweep_dead(req)).await
    }
    pub(crate) async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        self.timed(StoreOp::Stats, self.store.stats(queue)).await
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

    #[test]
    fn throughput_slots_roll_over() {
        let q = QueueRecorder::default();
        let t0 = Timestamp::from_millis(1_000_000_000);
        q.count_rate(t0, 2);
        q.count_rate(t0.saturating_add(RATE_SLOT), 3);
        let rates = q.rates(t0.saturating_add(RATE_SLOT));
        assert_eq!(rates.len(), RATE_SLOTS);
        assert_eq!(&rates[RATE_SLOTS - 2..], &[2, 3]);
        // A full turn later, the old slots read as empty.
        let later = t0.saturating_add(RATE_SLOT * RATE_SLOTS as u32 * 2);
        assert!(q.rates(later).iter().all(|n| *n == 0));
        q.count_rate(later, 1);
        assert_eq!(q.rates(later).iter().sum::<u64>(), 1);
    }

    #[test]
    fn recent_outcomes_are_bounded_newest_first() {
        let q = QueueRecorder::default();
        for i in 0..(RECENT_OUTCOMES + 5) {
            q.remember(OutcomeRecord {
                key: TaskKey::new(format!("k{i}")).unwrap(),
                outcome: OutcomeKind::Done,
                at: Timestamp::EPOCH,
                due_at: Timestamp::EPOCH,
                lag_ms: None,
                duration_ms: None,
                attempt: 1,
                error: None,
            });
        }
        let recent = q.recent.lock().unwrap();
        assert_eq!(recent.len(), RECENT_OUTCOMES);
        assert_eq!(recent[0].key.as_str(), format!("k{}", RECENT_OUTCOMES + 4));
    }
}
