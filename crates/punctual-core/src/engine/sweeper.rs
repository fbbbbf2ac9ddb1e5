//! Retention: deletes each queue's dead tasks once they have been dead for the queue's
//! dead-task retention, and the histories nothing happened to for the queue's history
//! retention (looked at every [`HISTORY_SWEEP_EVERY`]).

use std::collections::HashMap;
use std::time::Duration;

use super::Engine;
use super::config::{DEAD_BATCH, HISTORY_SWEEP_EVERY, MAX_SWEEP_WAIT, MIN_SWEEP_WAIT};
use crate::audit::AUDIT_RETENTION;
use crate::error::Result;
use crate::events::Event;
use crate::history::DEFAULT_HISTORY_RETENTION;
use crate::model::QueueName;
use crate::store::{HistorySweepRequest, Store, SweepRequest};
use crate::time::Timestamp;

impl<S: Store> Engine<S> {
    /// How long the queue's histories are kept after their latest event.
    pub fn history_retention(&self, queue: &QueueName) -> Duration {
        let retention = self.inner.history_retention.read().expect("history retention lock poisoned");
        retention.get(queue).copied().unwrap_or(DEFAULT_HISTORY_RETENTION)
    }

    /// Replaces each queue's history retention (a queue not named keeps its histories
    /// for [`DEFAULT_HISTORY_RETENTION`]): reads filter by it at once, and the next sweep
    /// deletes by it.
    pub fn set_history_retention(&self, retention: HashMap<QueueName, Duration>) {
        *self.inner.history_retention.write().expect("history retention lock poisoned") = retention;
    }

    /// Deletes the histories of every queue's keys once nothing happened to them for
    /// the queue's history retention, every [`HISTORY_SWEEP_EVERY`].
    pub(super) async fn run_history_sweeper(self) {
        loop {
            if let Err(e) = self.sweep_histories().await {
                tracing::warn!(error = %e, "history retention cannot reach the store; trying again later");
            }
            tokio::select! {
                _ = self.inner.timer.sleep_until(self.now().saturating_add(HISTORY_SWEEP_EVERY)) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    async fn sweep_histories(&self) -> Result<()> {
        let keep_ms = i64::try_from(AUDIT_RETENTION.as_millis()).unwrap_or(i64::MAX);
        let before = Timestamp::from_millis(self.now().as_millis().saturating_sub(keep_ms));
        while self.inner.store.sweep_audit(before, DEAD_BATCH).await? > 0 {
            tokio::task::yield_now().await;
        }
        for queue in self.inner.store.queue_names().await? {
            let keep_ms = i64::try_from(self.history_retention(&queue).as_millis()).unwrap_or(i64::MAX);
            let before = Timestamp::from_millis(self.now().as_millis().saturating_sub(keep_ms));
            while self.inner.store.sweep_history(HistorySweepRequest::new(queue.clone(), before, DEAD_BATCH)).await? > 0
            {
                if self.inner.stopping.is_cancelled() {
                    return Ok(());
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    /// Deletes the dead tasks of each queue with a retention once they are due to go,
    /// sleeping between looks (see the module docs).
    pub(super) async fn run_sweeper(self) {
        let now = self.now();
        let mut queues: Vec<Retention> = self
            .inner
            .config
            .dead_retention
            .iter()
            .map(|(queue, keep)| Retention { queue: queue.clone(), keep: *keep, next: now })
            .collect();
        let mut failures = 0u32;
        loop {
            let now = self.now();
            for retention in queues.iter_mut().filter(|retention| retention.next <= now) {
                match self.sweep(retention, now).await {
                    Ok(at) => {
                        failures = 0;
                        retention.next = at;
                    }
                    Err(e) => {
                        failures += 1;
                        if failures == 1 {
                            tracing::warn!(queue = %retention.queue, error = %e, "dead-task retention cannot reach the store; retrying");
                        }
                        retention.next = now.saturating_add(Duration::from_millis(100u64 << failures.min(6)));
                    }
                }
                if self.inner.stopping.is_cancelled() {
                    return;
                }
            }
            let Some(wake) = queues.iter().map(|retention| retention.next).min() else { return };
            tokio::select! {
                _ = self.inner.timer.sleep_until(wake) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Deletes the queue's dead tasks that died its `keep` or longer before `now`; when
    /// to look again: once the earliest dead task left is due to go, within
    /// [`MAX_SWEEP_WAIT`].
    async fn sweep(&self, retention: &Retention, now: Timestamp) -> Result<Timestamp> {
        let (queue, keep) = (&retention.queue, retention.keep);
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

/// A queue with a dead-task retention, as the sweeper keeps it.
#[derive(Debug)]
struct Retention {
    queue: QueueName,
    /// Dead tasks go once they have been dead this long.
    keep: Duration,
    /// When the sweeper looks at the queue next.
    next: Timestamp,
}
