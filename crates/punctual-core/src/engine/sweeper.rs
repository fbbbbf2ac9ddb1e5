//! Dead-task retention: deletes each queue's dead tasks once they have been dead for
//! the queue's retention.

use std::time::Duration;

use super::Engine;
use super::config::{DEAD_BATCH, MAX_SWEEP_WAIT, MIN_SWEEP_WAIT};
use crate::error::Result;
use crate::events::Event;
use crate::model::QueueName;
use crate::store::{Store, SweepRequest};
use crate::time::Timestamp;

impl<S: Store> Engine<S> {
    /// Deletes the dead tasks of each queue with a retention once they are due to go,
    /// sleeping between looks (see the module docs).
    pub(super) async fn run_sweeper(self) {
        let now = self.now();
        let mut queues: Vec<(QueueName, Duration, Timestamp)> =
            self.inner.config.dead_retention.iter().map(|(queue, keep)| (queue.clone(), *keep, now)).collect();
        let mut failures = 0u32;
        loop {
            let now = self.now();
            for (queue, keep, next) in queues.iter_mut().filter(|(_, _, next)| *next <= now) {
                match self.sweep(queue, *keep, now).await {
                    Ok(at) => {
                        failures = 0;
                        *next = at;
                    }
                    Err(e) => {
                        failures += 1;
                        if failures == 1 {
                            tracing::warn!(queue = %queue, error = %e, "dead-task retention cannot reach the store; retrying");
                        }
                        *next = now.saturating_add(Duration::from_millis(100u64 << failures.min(6)));
                    }
                }
                if self.inner.stopping.is_cancelled() {
                    return;
                }
            }
            let Some(wake) = queues.iter().map(|(_, _, next)| *next).min() else { return };
            tokio::select! {
                _ = self.inner.timer.sleep_until(wake) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Deletes `queue`'s dead tasks that died `keep` or longer before `now`; when to
    /// look again: once the earliest dead task left is due to go, within
    /// [`MAX_SWEEP_WAIT`].
    async fn sweep(&self, queue: &QueueName, keep: Duration, now: Timestamp) -> Result<Timestamp> {
        let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        let died_by = Timestamp::from_millis(now.as_millis().saturating_sub(keep_ms));
        loop {
            let swept = self.inner.store.sweep_dead(SweepRequest::new(queue.clone(), died_by, DEAD_BATCH)).await?;
            self.publish(Event::DeadSwept { queue: queue.clone(), deleted: swept.deleted });
            let more_due = swept.oldest_death.is_some_and(|died| died <= died_by);
            if !more_due || swept.deleted == 0 || self.inner.stopping.is_cancelled() {
                // A task dying from now on dies after `now`: it is due to go after this.
                let due = swept.oldest_death.unwrap_or(now).saturating_add(keep);
                let soonest = now.saturating_add(MIN_SWEEP_WAIT);
                return Ok(due.clamp(soonest, now.saturating_add(MAX_SWEEP_WAIT)));
            }
            // More are due: let other tasks run between batches.
            tokio::task::yield_now().await;
        }
    }
}
