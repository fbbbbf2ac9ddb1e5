//! The watchdog: notices a loop that stopped moving and restarts it, so a missed
//! wake-up never leaves timers silently stuck until someone restarts the process.
//!
//! Every [`WatchdogConfig::interval`] (on the engine's clock) it checks:
//!
//! - **Consumers.** A queue is stalled when consumers wait for it (a worker's
//!   dispatcher with free slots, or a long poll), its earliest scheduled task has been
//!   due for at least [`WatchdogConfig::stall_after`], and no lease of it was handed out
//!   since the previous pass. The consumer loops belong to their callers (workers,
//!   HTTP requests), so the watchdog restarts their wait: the queue's wake-up is reset
//!   to "look now", which wakes every waiting consumer to ask the store again. This
//!   heals a wake-up that was missed, e.g. a task written to a shared store by a path
//!   that did not notify this engine. A paused queue is never stalled: its tasks are
//!   meant to wait.
//! - **The reaper.** It is stalled when its wake time passed at least `stall_after`
//!   ago and it has still not taken that same wake time at the next pass (it is hung:
//!   two passes, so a clock that jumped ahead is not mistaken for a hang), or its task
//!   ended while the engine runs (it panicked). The reaper belongs to the engine: the watchdog aborts it and starts
//!   a new one that looks at once.
//!
//! Invariants: a busy queue is never restarted (a lease since the last pass, or full
//! capacity, means it moves); a restart only ever makes a loop look earlier, never
//! later, so a false alarm costs one extra store query. Each restart is published as an
//! [`Event::WatchdogRestart`] and logged. The watchdog reads the consumers' own state
//! (who waits, how many leases each queue handed out), not metrics.

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use super::{Engine, QueueState};
use crate::events::{Event, Restarted};
use crate::model::{QueueName, TaskState};
use crate::store::{ListRequest, Store};
use crate::time::Timestamp;

/// How the watchdog checks. Defaults: every 5 s; stalled after 10 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchdogConfig {
    /// Time between two checks.
    pub interval: Duration,
    /// How long due work may stand still, with capacity free, before a restart.
    pub stall_after: Duration,
}

impl Default for WatchdogConfig {
    fn default() -> WatchdogConfig {
        WatchdogConfig { interval: Duration::from_secs(5), stall_after: Duration::from_secs(10) }
    }
}

impl WatchdogConfig {
    /// Checks every `interval`, restarting loops stalled for `stall_after`.
    pub fn new(interval: Duration, stall_after: Duration) -> WatchdogConfig {
        WatchdogConfig { interval, stall_after }
    }
}

/// What a pass remembers for the next.
#[derive(Debug, Default)]
struct PassState {
    /// Leases handed out per queue with waiting consumers.
    last_fired: HashMap<QueueName, u64>,
    /// The reaper's wake time, if it was late.
    reaper_late: Option<Timestamp>,
}

impl<S: Store> Engine<S> {
    /// Runs checks until the engine stops.
    pub(super) async fn run_watchdog(self, config: WatchdogConfig) {
        let mut state = PassState::default();
        loop {
            let next = self.now().saturating_add(config.interval);
            // On the clock, not the engine's timer: the watchdog must run even if the
            // timer's driver stalled, to heal the loops that sleep on it.
            tokio::select! {
                _ = self.clock().sleep_until(next) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
            self.watchdog_pass(config, &mut state).await;
        }
    }

    /// One check of every loop.
    async fn watchdog_pass(&self, config: WatchdogConfig, state: &mut PassState) {
        let now = self.now();
        state.reaper_late = self.check_reaper(now, config, state.reaper_late);
        let last_fired = &mut state.last_fired;
        let mut seen = HashMap::new();
        let consumed: Vec<(QueueName, Arc<QueueState>)> = {
            let queues = self.inner.queues.lock().expect("queues lock poisoned");
            queues
                .iter()
                .filter(|(_, q)| q.waiting() > 0 && !q.is_paused())
                .map(|(name, q)| (name.clone(), Arc::clone(q)))
                .collect()
        };
        for (queue, consumer) in consumed {
            let fired = consumer.leased();
            let moved = last_fired.get(&queue) != Some(&fired);
            seen.insert(queue.clone(), fired);
            if moved {
                continue;
            }
            // The earliest scheduled task, through the due-order index: cheap however
            // many tasks the queue holds (counting them would not be).
            let earliest = ListRequest::new(queue.clone(), Some(TaskState::Scheduled), 1, None);
            let page = match self.inner.store.list(earliest).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::debug!(queue = %queue, error = %e, "watchdog cannot read the queue");
                    continue;
                }
            };
            let Some((due, lane)) = page.tasks.first().map(|task| (task.due_at, task.lane())) else { continue };
            let overdue = now.saturating_since(due);
            if due > now || overdue < config.stall_after || consumer.waiting_in(lane) == 0 {
                continue;
            }
            tracing::warn!(
                queue = %queue, overdue_ms = u64::try_from(overdue.as_millis()).unwrap_or(u64::MAX),
                "watchdog: due tasks are not moving while consumers wait; restarting the queue's consumer loop"
            );
            consumer.look_now();
            self.publish(Event::WatchdogRestart(Restarted::Consumer(queue)));
        }
        *last_fired = seen;
    }

    /// Restarts the reaper if it ended or is still late (by `config.stall_after` or
    /// more) with the wake time it was late with at the previous pass (`was_late`); the
    /// wake time it is late with now.
    fn check_reaper(&self, now: Timestamp, config: WatchdogConfig, was_late: Option<Timestamp>) -> Option<Timestamp> {
        if self.is_stopping() {
            return None;
        }
        let mut reaper = self.inner.reaper.lock().expect("reaper lock poisoned");
        let ended = reaper.as_ref().is_some_and(|handle| handle.is_finished());
        let late_with =
            self.inner.reaper_wake.get().filter(|at| *at < now && now.saturating_since(*at) >= config.stall_after);
        let late = late_with.is_some() && late_with == was_late;
        if !(ended || late) {
            return late_with;
        }
        tracing::warn!(
            why = if ended { "its task ended" } else { "it missed its wake-up" },
            "watchdog: the lease reaper stalled; restarting it"
        );
        if let Some(old) = reaper.take() {
            old.abort();
        }
        self.inner.reaper_wake.take();
        self.inner.reaper_wake.offer(Some(Timestamp::EPOCH));
        *reaper = Some(tokio::spawn(self.clone().run_reaper()));
        self.publish(Event::WatchdogRestart(Restarted::Reaper));
        None
    }
}
