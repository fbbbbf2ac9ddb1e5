//! What the server counts and measures, built from the engine's events
//! ([`punctual_core::events`]): `/metrics` renders a [`MetricsSnapshot`], the dashboard
//! reads a queue's [`QueueActivity`] and its recent fire lag ([`LagSummary`]).
//!
//! [`Metrics`] is an inline observer of the engine (added by
//! [`AppState::new`](crate::AppState::new)), so every count is exact the moment the
//! engine call that caused it returns. What is counted: a schedule (created or
//! replaced), a lease (fired), a completion (done, retried, rescheduled), a death, a
//! cancel, an expired lease, each store call's latency, each watchdog restart, each
//! reset of a shared store. An ack refused as `LeaseLost` changes nothing and counts
//! nothing.
//!
//! Invariants:
//! - Counters only grow; a histogram's `count` equals the sum of its buckets.
//! - Fire lag is lease time − due time; handler duration is lease time → completion
//!   time, both from the engine's clock (in the events), so tests on a manual clock see
//!   exact values. Store latency is wall time.
//! - Memory is bounded: per queue a fixed set of counters and three bounded rings
//!   ([`activity`]); lease start times are kept for at most [`MAX_TRACKED_LEASES`]
//!   leases (beyond that a completion falls back to the task's `updated_at`, which is
//!   the lease time unless the lease was extended). Queues are counted from their
//!   first event on, for the life of the server.

mod activity;
mod histogram;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use activity::{LagSummary, OutcomeRecord, QueueActivity, RATE_SLOT, RATE_SLOTS, RECENT_OUTCOMES};
pub use histogram::{HistogramSnapshot, STORE_BUCKETS, TASK_BUCKETS};
use punctual_core::events::{Event, Restarted, StoreOp};
use punctual_core::{QueueName, StoreReset, Timestamp, TryEnd};

use activity::{LagWindow, Rates, Recent};
use histogram::Histogram;

/// Leases whose start time is remembered for handler durations.
pub const MAX_TRACKED_LEASES: usize = 100_000;

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
    /// Occurrences that did not fire: leased later than their `misfire_after` under
    /// misfire `skip`.
    pub skipped: u64,
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
    /// Every queue that had an event or has a waiting consumer, sorted by name.
    pub queues: Vec<QueueCounts>,
    /// Store operations called at least once, sorted by name.
    pub store_ops: Vec<OpLatency>,
    /// Loops the watchdog restarted: `("consumer" | "reaper", count)`.
    pub watchdog_restarts: Vec<(&'static str, u64)>,
    /// Times the store was found emptied while this server ran (see [`StoreReset`]).
    pub store_resets: u64,
    /// The latest of them.
    pub last_store_reset: Option<StoreReset>,
}

/// What one queue's events added up to.
#[derive(Debug)]
struct QueueRecorder {
    scheduled: AtomicU64,
    fired: AtomicU64,
    done: AtomicU64,
    retried: AtomicU64,
    rescheduled: AtomicU64,
    cancelled: AtomicU64,
    skipped: AtomicU64,
    dead: AtomicU64,
    expired: AtomicU64,
    fire_lag: Histogram,
    handler_duration: Histogram,
    life: Mutex<QueueLife>,
}

/// The rings of [`activity`], behind one lock.
#[derive(Debug, Default)]
struct QueueLife {
    recent: Recent,
    rates: Rates,
    lags: LagWindow,
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
            skipped: AtomicU64::new(0),
            dead: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            fire_lag: Histogram::new(TASK_BUCKETS),
            handler_duration: Histogram::new(TASK_BUCKETS),
            life: Mutex::new(QueueLife::default()),
        }
    }
}

impl QueueRecorder {
    fn life(&self) -> std::sync::MutexGuard<'_, QueueLife> {
        self.life.lock().expect("queue activity lock poisoned")
    }

    fn snapshot(&self, queue: QueueName, waiting_consumers: usize) -> QueueCounts {
        QueueCounts {
            queue,
            scheduled: self.scheduled.load(Ordering::Relaxed),
            fired: self.fired.load(Ordering::Relaxed),
            done: self.done.load(Ordering::Relaxed),
            retried: self.retried.load(Ordering::Relaxed),
            rescheduled: self.rescheduled.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            dead: self.dead.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
            fire_lag: self.fire_lag.snapshot(),
            handler_duration: self.handler_duration.snapshot(),
            waiting_consumers,
        }
    }
}

/// The server's counters. Every method is cheap and never fails.
#[derive(Debug)]
pub struct Metrics {
    queues: Mutex<HashMap<QueueName, Arc<QueueRecorder>>>,
    /// Lease start times by `(task id, fence)`, which names one lease for ever.
    leased_at: Mutex<HashMap<(u64, u64), Timestamp>>,
    /// One per [`StoreOp`], at the op's index.
    store_ops: Vec<Histogram>,
    consumer_restarts: AtomicU64,
    reaper_restarts: AtomicU64,
    store_resets: AtomicU64,
    last_store_reset: Mutex<Option<StoreReset>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            queues: Mutex::new(HashMap::new()),
            leased_at: Mutex::new(HashMap::new()),
            store_ops: StoreOp::ALL.iter().map(|_| Histogram::new(STORE_BUCKETS)).collect(),
            consumer_restarts: AtomicU64::new(0),
            reaper_restarts: AtomicU64::new(0),
            store_resets: AtomicU64::new(0),
            last_store_reset: Mutex::new(None),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Metrics {
    fn queue(&self, queue: &QueueName) -> Arc<QueueRecorder> {
        let mut queues = self.queues.lock().expect("metrics lock poisoned");
        match queues.get(queue) {
            Some(recorder) => Arc::clone(recorder),
            None => Arc::clone(queues.entry(queue.clone()).or_default()),
        }
    }

    /// Counts one event of the engine.
    pub fn observe(&self, event: &Event) {
        match event {
            Event::Scheduled { queue, .. } => {
                self.queue(queue).scheduled.fetch_add(1, Ordering::Relaxed);
            }
            Event::Leased { queue, task_id, fence, due_at, at, .. } => {
                self.leased(queue, (*task_id, *fence), *due_at, *at)
            }
            Event::Completed { queue, key, task_id, fence, attempt, ended, error, due_at, updated_at, at, .. } => {
                let recorder = self.queue(queue);
                let counter = match ended {
                    TryEnd::Done => Some(&recorder.done),
                    TryEnd::Retried => Some(&recorder.retried),
                    TryEnd::Rescheduled => Some(&recorder.rescheduled),
                    // Counted by their own events (`Dead`, `LeaseExpired`).
                    TryEnd::Dead | TryEnd::Expired => None,
                };
                if let Some(counter) = counter {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                let known = self.leased_at.lock().expect("metrics lock poisoned").remove(&(*task_id, *fence));
                let leased_at = known.unwrap_or(*updated_at);
                let duration = at.saturating_since(leased_at);
                recorder.handler_duration.observe(duration);
                recorder.life().recent.remember(OutcomeRecord {
                    key: key.clone(),
                    outcome: *ended,
                    at: *at,
                    due_at: *due_at,
                    lag_ms: Some(millis(leased_at.saturating_since(*due_at))),
                    duration_ms: Some(millis(duration)),
                    attempt: *attempt,
                    error: error.clone(),
                });
            }
            Event::Released { task_id, fence, .. } => {
                self.leased_at.lock().expect("metrics lock poisoned").remove(&(*task_id, *fence));
            }
            Event::LeaseExpired { queue, key, dead, at } => {
                let recorder = self.queue(queue);
                recorder.expired.fetch_add(1, Ordering::Relaxed);
                recorder.life().recent.remember(OutcomeRecord {
                    key: key.clone(),
                    outcome: if *dead { TryEnd::Dead } else { TryEnd::Expired },
                    at: *at,
                    due_at: *at,
                    lag_ms: None,
                    duration_ms: None,
                    attempt: 0,
                    error: Some("the lease expired before an ack".into()),
                });
            }
            Event::Cancelled { queue, count, .. } => {
                self.queue(queue).cancelled.fetch_add(*count, Ordering::Relaxed);
            }
            Event::Dead { queue, .. } => {
                self.queue(queue).dead.fetch_add(1, Ordering::Relaxed);
            }
            Event::Misfired { queue, .. } => {
                self.queue(queue).skipped.fetch_add(1, Ordering::Relaxed);
            }
            Event::StoreCall { op, took } => self.store_ops[*op as usize].observe(*took),
            // Logged where they happen; a failed call is timed by its `StoreCall`.
            Event::StoreError { .. } | Event::Looked { .. } | Event::DeadSwept { .. } | Event::AckRefused { .. } => {}
            Event::StoreReset { reset, missed } => {
                if let Some(reset) = reset {
                    *self.last_store_reset.lock().expect("metrics lock poisoned") = Some(reset.clone());
                    self.store_resets.fetch_add(1, Ordering::Relaxed);
                }
                self.store_resets.fetch_add(*missed, Ordering::Relaxed);
            }
            Event::WatchdogRestart(Restarted::Consumer(_)) => {
                self.consumer_restarts.fetch_add(1, Ordering::Relaxed);
            }
            Event::WatchdogRestart(Restarted::Reaper) => {
                self.reaper_restarts.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn leased(&self, queue: &QueueName, lease: (u64, u64), due_at: Timestamp, at: Timestamp) {
        let recorder = self.queue(queue);
        recorder.fired.fetch_add(1, Ordering::Relaxed);
        let lag = at.saturating_since(due_at);
        recorder.fire_lag.observe(lag);
        {
            let mut life = recorder.life();
            life.rates.count(at, 1);
            life.lags.push(lag);
        }
        let mut leased_at = self.leased_at.lock().expect("metrics lock poisoned");
        if leased_at.len() >= MAX_TRACKED_LEASES {
            // Leases last at most 12 h: older entries belong to leases long over.
            let horizon =
                Timestamp::from_millis(at.as_millis().saturating_sub(millis(punctual_core::MAX_LEASE) as i64));
            leased_at.retain(|_, started| *started >= horizon);
        }
        if leased_at.len() < MAX_TRACKED_LEASES {
            leased_at.insert(lease, at);
        }
    }

    /// Everything counted; `waiting`: the engine's waiting consumers per queue
    /// ([`Engine::waiting_consumers`](punctual_core::Engine::waiting_consumers)).
    pub fn snapshot(&self, waiting: &[(QueueName, usize)]) -> MetricsSnapshot {
        let mut queues: HashMap<QueueName, Arc<QueueRecorder>> =
            self.queues.lock().expect("metrics lock poisoned").clone();
        for (queue, _) in waiting {
            queues.entry(queue.clone()).or_default();
        }
        let waiting_for = |queue: &QueueName| waiting.iter().find(|(q, _)| q == queue).map_or(0, |(_, n)| *n);
        let mut queues: Vec<QueueCounts> = queues
            .into_iter()
            .map(|(queue, q)| {
                let n = waiting_for(&queue);
                q.snapshot(queue, n)
            })
            .collect();
        queues.sort_by(|a, b| a.queue.as_str().cmp(b.queue.as_str()));
        let mut store_ops: Vec<OpLatency> = StoreOp::ALL
            .iter()
            .zip(&self.store_ops)
            .map(|(op, h)| OpLatency { op: op.name(), latency: h.snapshot() })
            .filter(|op| op.latency.count > 0)
            .collect();
        store_ops.sort_by_key(|op| op.op);
        MetricsSnapshot {
            queues,
            store_ops,
            watchdog_restarts: vec![
                ("consumer", self.consumer_restarts.load(Ordering::Relaxed)),
                ("reaper", self.reaper_restarts.load(Ordering::Relaxed)),
            ],
            store_resets: self.store_resets.load(Ordering::Relaxed),
            last_store_reset: self.last_store_reset.lock().expect("metrics lock poisoned").clone(),
        }
    }

    /// The queue's recent outcomes and throughput, for the dashboard.
    pub fn activity(&self, queue: &QueueName, now: Timestamp) -> QueueActivity {
        let found = self.queues.lock().expect("metrics lock poisoned").get(queue).cloned();
        match found {
            Some(q) => {
                let life = q.life();
                QueueActivity { recent: life.recent.newest_first(), fired_per_slot: life.rates.per_slot(now) }
            }
            None => QueueActivity::none(),
        }
    }

    /// Fire lag of the queue's most recent leases, or `None` when none was leased yet.
    pub fn recent_lag(&self, queue: &QueueName) -> Option<LagSummary> {
        let found = self.queues.lock().expect("metrics lock poisoned").get(queue).cloned();
        found.and_then(|q| q.life().lags.summary())
    }
}
