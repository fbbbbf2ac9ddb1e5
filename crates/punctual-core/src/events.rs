//! What the engine tells the world: one [`Event`] for each thing that happened, after
//! the store accepted it. Metrics, the dashboard, logs and tests are built from these;
//! nothing observes the engine by wrapping its store.
//!
//! Two ways to listen:
//! - an [`Observer`] ([`Engine::observe`](crate::Engine::observe)) is called inline, in
//!   order, for every event from the moment it is added: nothing is lost or delayed, so
//!   counters built on it are exact as soon as the engine call that caused an event
//!   returns. It must be cheap and must not block (update atomics, push to a ring).
//! - an [`EventStream`] ([`Engine::subscribe`](crate::Engine::subscribe)) receives owned
//!   copies, to be awaited, as tests do ([`EventStream::wait_for`]). It buffers without
//!   bound until read: drop it when done.
//!
//! Invariants: an event is published once, after the store answered; a call the store
//! refused publishes nothing but its [`Event::StoreCall`] (a kept schedule), or the
//! refusal itself ([`Event::AckRefused`]). The engine logs every event itself
//! ([`log`]), so what the logs say and what observers count never disagree.

use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::{QueueName, TaskKey};
use crate::outcome::TryEnd;
use crate::store::StoreReset;
use crate::time::Timestamp;

/// One thing that happened in an engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A task was created or replaced (a schedule that kept an existing task is not
    /// reported).
    Scheduled { queue: QueueName, key: TaskKey, due_at: Timestamp, version: u64, created: bool },
    /// A task was leased: handed to a handler or a pull worker. Its fire lag is
    /// `at − due_at`.
    Leased {
        queue: QueueName,
        key: TaskKey,
        /// The task's id and the lease's fence: together they name this lease for ever.
        task_id: u64,
        fence: u64,
        delivery_id: String,
        attempt: u32,
        due_at: Timestamp,
        at: Timestamp,
    },
    /// A lease was completed: the try ended as `ended` (never [`TryEnd::Expired`]).
    Completed {
        queue: QueueName,
        key: TaskKey,
        task_id: u64,
        fence: u64,
        delivery_id: String,
        attempt: u32,
        ended: TryEnd,
        /// The error of a retry or of a death.
        error: Option<String>,
        due_at: Timestamp,
        /// The task's `updated_at` as leased: the lease time, unless the lease was
        /// extended since.
        updated_at: Timestamp,
        at: Timestamp,
    },
    /// A consumer (a worker's dispatcher, a pull worker's lease call) asked the store
    /// for due tasks of `queue` and got `leased` of them (each also a [`Event::Leased`]).
    Looked { queue: QueueName, leased: usize },
    /// An ack was refused and changed nothing: its lease had expired, or its task was
    /// replaced, cancelled or completed meanwhile ([`Error::LeaseLost`](crate::Error::LeaseLost)).
    AckRefused { queue: QueueName, key: TaskKey },
    /// A live lease was given back untried; the task is due again.
    Released { queue: QueueName, key: TaskKey, task_id: u64, fence: u64 },
    /// A lease expired before its ack; the task is due again, or `dead` when that was
    /// its last attempt (then an [`Event::Dead`] follows).
    LeaseExpired { queue: QueueName, key: TaskKey, dead: bool, at: Timestamp },
    /// A task was cancelled (`key`), or `count` tasks were cancelled by tag (`key` is
    /// `None`). Never published with a count of 0.
    Cancelled { queue: QueueName, key: Option<TaskKey>, count: u64 },
    /// A first try leased later than its `misfire_after` under misfire `skip` did not
    /// fire: a repeat is due again `next`, a one-off task ended (`next` is `None`).
    Misfired { queue: QueueName, key: TaskKey, scheduled_for: Timestamp, next: Option<Timestamp>, at: Timestamp },
    /// A task went dead: a `fail`, its attempts spent, or a last lease that expired.
    Dead { queue: QueueName, key: TaskKey, error: String, at: Timestamp },
    /// The dead-task retention looked at `queue` and deleted `deleted` dead tasks.
    DeadSwept { queue: QueueName, deleted: u64 },
    /// The engine called the store: which operation and how long it took (wall time).
    StoreCall { op: StoreOp, took: Duration },
    /// A store call failed because of the store (it could not be reached or could not
    /// write), not because of the caller's input.
    StoreError { op: StoreOp, error: String },
    /// A store shared with other processes was found emptied ([`StoreReset`]), or
    /// `missed` such reports were lost (the channel held too many at once).
    StoreReset { reset: Option<StoreReset>, missed: u64 },
    /// The watchdog restarted a stalled loop.
    WatchdogRestart(Restarted),
}

/// The loop the watchdog restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restarted {
    /// The consumers of a queue: their wait was reset to "look now".
    Consumer(QueueName),
    /// The reaper of expired leases.
    Reaper,
}

/// An operation of the [`Store`](crate::Store) trait, as timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreOp {
    Schedule,
    Get,
    GetMany,
    Cancel,
    CancelTag,
    ApplyOnce,
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
    Purge,
    QueueRecord,
    QueueRecords,
    ChangeQueue,
    CalendarRecords,
    ChangeCalendar,
    Import,
    History,
    SweepHistory,
    Audit,
    Secret,
    Close,
}

impl StoreOp {
    /// Every operation, in declaration order (`op as usize` is its index).
    pub const ALL: [StoreOp; 30] = [
        StoreOp::Schedule,
        StoreOp::Get,
        StoreOp::GetMany,
        StoreOp::Cancel,
        StoreOp::CancelTag,
        StoreOp::ApplyOnce,
        StoreOp::List,
        StoreOp::Lease,
        StoreOp::Complete,
        StoreOp::CompleteMany,
        StoreOp::Extend,
        StoreOp::Release,
        StoreOp::Reap,
        StoreOp::RetryDead,
        StoreOp::RetryDeadBatch,
        StoreOp::DeleteDead,
        StoreOp::SweepDead,
        StoreOp::Stats,
        StoreOp::Purge,
        StoreOp::QueueRecord,
        StoreOp::QueueRecords,
        StoreOp::ChangeQueue,
        StoreOp::CalendarRecords,
        StoreOp::ChangeCalendar,
        StoreOp::Import,
        StoreOp::History,
        StoreOp::SweepHistory,
        StoreOp::Audit,
        StoreOp::Secret,
        StoreOp::Close,
    ];

    /// The method's name, as in `punctual_store_op_seconds{op}`.
    pub fn name(self) -> &'static str {
        match self {
            StoreOp::Schedule => "schedule",
            StoreOp::Get => "get",
            StoreOp::GetMany => "get_many",
            StoreOp::Cancel => "cancel",
            StoreOp::CancelTag => "cancel_tag",
            StoreOp::ApplyOnce => "apply_once",
            StoreOp::List => "list",
            StoreOp::Lease => "lease",
            StoreOp::Complete => "complete",
            StoreOp::CompleteMany => "complete_many",
            StoreOp::Extend => "extend",
            StoreOp::Release => "release",
            StoreOp::Reap => "reap",
            StoreOp::RetryDead => "retry_dead",
            StoreOp::RetryDeadBatch => "retry_dead_batch",
            StoreOp::DeleteDead => "delete_dead",
            StoreOp::SweepDead => "sweep_dead",
            StoreOp::Stats => "stats",
            StoreOp::Purge => "purge",
            StoreOp::QueueRecord => "queue_record",
            StoreOp::QueueRecords => "queue_records",
            StoreOp::ChangeQueue => "change_queue",
            StoreOp::CalendarRecords => "calendar_records",
            StoreOp::ChangeCalendar => "change_calendar",
            StoreOp::Import => "import",
            StoreOp::History => "history",
            StoreOp::SweepHistory => "sweep_history",
            StoreOp::Audit => "audit",
            StoreOp::Secret => "secret",
            StoreOp::Close => "close",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_op_is_listed_at_its_index() {
        for (index, op) in StoreOp::ALL.iter().enumerate() {
            assert_eq!(*op as usize, index, "{op}");
        }
    }
}

impl fmt::Display for StoreOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Called inline for every event (see the module docs).
pub trait Observer: Send + Sync + 'static {
    fn observe(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync + 'static> Observer for F {
    fn observe(&self, event: &Event) {
        self(event)
    }
}

/// Observers an engine starts with ([`EngineConfig::observe`](crate::EngineConfig::observe)):
/// they see every event, even those of the engine's first moments.
#[derive(Clone, Default)]
pub struct Observers(pub(crate) Vec<Arc<dyn Observer>>);

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Observers({})", self.0.len())
    }
}

/// Owned copies of an engine's events from the moment of
/// [`Engine::subscribe`](crate::Engine::subscribe).
#[derive(Debug)]
pub struct EventStream {
    receiver: mpsc::UnboundedReceiver<Event>,
}

impl EventStream {
    /// The next event; `None` once the engine is gone.
    pub async fn recv(&mut self) -> Option<Event> {
        self.receiver.recv().await
    }

    /// The first event from now on for which `pick` answers `Some`, within `limit` (on
    /// tokio's clock, so paused time works); `None` when `limit` passed first or the
    /// engine is gone. Events before it are consumed.
    pub async fn wait_for<T>(&mut self, limit: Duration, mut pick: impl FnMut(&Event) -> Option<T>) -> Option<T> {
        let search = async {
            while let Some(event) = self.receiver.recv().await {
                if let Some(found) = pick(&event) {
                    return Some(found);
                }
            }
            None
        };
        tokio::time::timeout(limit, search).await.ok().flatten()
    }
}

enum Listener {
    Observer(Arc<dyn Observer>),
    Stream(mpsc::UnboundedSender<Event>),
}

/// The engine's listeners; publishing takes a read lock only.
#[derive(Default)]
pub(crate) struct Bus {
    listeners: RwLock<Vec<Listener>>,
}

impl fmt::Debug for Bus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.listeners.read().map_or(0, |l| l.len());
        f.debug_struct("Bus").field("listeners", &n).finish()
    }
}

impl Bus {
    pub(crate) fn observe(&self, observer: Arc<dyn Observer>) {
        self.listeners.write().expect("listeners lock poisoned").push(Listener::Observer(observer));
    }

    pub(crate) fn subscribe(&self) -> EventStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut listeners = self.listeners.write().expect("listeners lock poisoned");
        listeners.retain(|l| match l {
            Listener::Stream(s) => !s.is_closed(),
            Listener::Observer(_) => true,
        });
        listeners.push(Listener::Stream(sender));
        EventStream { receiver }
    }

    /// Logs `event`, then hands it to every listener, in the order they were added.
    pub(crate) fn publish(&self, event: Event) {
        log(&event);
        let listeners = self.listeners.read().expect("listeners lock poisoned");
        for listener in listeners.iter() {
            match listener {
                Listener::Observer(observer) => observer.observe(&event),
                Listener::Stream(sender) => {
                    // A dropped stream is pruned at the next subscribe.
                    let _ = sender.send(event.clone());
                }
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The log line of an event, if it has one.
pub(crate) fn log(event: &Event) {
    match event {
        Event::Scheduled { queue, key, due_at, version, .. } => {
            tracing::debug!(queue = %queue, key = %key, due_at = %due_at, version, "task scheduled");
        }
        Event::Leased { queue, key, delivery_id, attempt, due_at, at, .. } => tracing::debug!(
            queue = %queue, key = %key, delivery_id = %delivery_id, attempt,
            lag_ms = millis(at.saturating_since(*due_at)), "task fired"
        ),
        Event::Completed { queue, key, delivery_id, attempt, ended, error, updated_at, at, .. } => match ended {
            TryEnd::Dead => tracing::warn!(
                queue = %queue, key = %key, delivery_id = %delivery_id, attempt,
                error = error.as_deref().unwrap_or(""), "task is dead"
            ),
            TryEnd::Retried => tracing::info!(
                queue = %queue, key = %key, delivery_id = %delivery_id, attempt,
                error = error.as_deref().unwrap_or(""), "task failed; it will be retried"
            ),
            TryEnd::Done | TryEnd::Rescheduled | TryEnd::Expired => tracing::debug!(
                queue = %queue, key = %key, delivery_id = %delivery_id, attempt,
                outcome = ended.as_str(), duration_ms = millis(at.saturating_since(*updated_at)), "task completed"
            ),
        },
        Event::Looked { .. } | Event::Released { .. } | Event::AckRefused { .. } => {}
        Event::LeaseExpired { queue, key, dead, .. } => {
            let state = if *dead { "dead" } else { "scheduled" };
            tracing::info!(queue = %queue, key = %key, state, "lease expired");
        }
        Event::Cancelled { queue, key: Some(key), .. } => tracing::debug!(queue = %queue, key = %key, "task cancelled"),
        Event::Cancelled { queue, key: None, count } => {
            tracing::debug!(queue = %queue, cancelled = count, "tasks cancelled by tag");
        }
        Event::Misfired { queue, key, scheduled_for, next, at } => tracing::info!(
            queue = %queue, key = %key, scheduled_for = %scheduled_for,
            late_ms = millis(at.saturating_since(*scheduled_for)),
            next = %next.map_or_else(|| "none: the task ended".to_owned(), |next| next.to_string()),
            "occurrence skipped: leased later than misfire_after past its due time (misfire: skip)"
        ),
        // Said by the completion or the expiry that caused it.
        Event::Dead { .. } => {}
        Event::DeadSwept { queue, deleted } => {
            if *deleted > 0 {
                tracing::info!(queue = %queue, deleted, "deleted dead tasks past their retention");
            }
        }
        Event::StoreCall { .. } | Event::StoreError { .. } | Event::StoreReset { .. } | Event::WatchdogRestart(_) => {}
    }
}
