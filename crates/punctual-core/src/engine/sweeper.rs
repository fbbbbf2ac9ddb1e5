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

    /// Replaces each queue's dead-task retention (a queue not named keeps its dead
    /// tasks): the sweeper looks at once at each queue whose retention is new or
    /// changed, and no longer at the others.
    pub fn set_dead_retention(&self, retention: HashMap<QueueName, Duration>) {
        self.inner.dead_retention.send_if_modified(|running| {
            let changed = *running != retention;
            *running = retention;
            changed
        });
    }

    /// Deletes the dead tasks of each queue with a retention once they are due to go,
    /// sleeping between looks (see the module docs), and plans again each time the
    /// retentions are replaced.
    pub(super) async fn run_sweeper(self) {
        let mut retentions = self.inner.dead_retention.subscribe();
        let mut queues = plan(&retentions.borrow_and_update(), Vec::new(), self.now());
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
            let wake = queues.iter().map(|retention| retention.next).min();
            let next_look = async {
                match wake {
                    Some(wake) => self.inner.timer.sleep_until(wake).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = next_look => {}
                changed = retentions.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    queues = plan(&retentions.borrow_and_update(), queues, self.now());
                }
                () = self.inner.stopping.cancelled() => return,
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

/// The queues the sweeper looks at under `retentions`, from those it looked at before
/// (`before`): a queue whose retention is unchanged keeps its next look, a new or
/// changed one is looked at `now`.
fn plan(retentions: &HashMap<QueueName, Duration>, before: Vec<Retention>, now: Timestamp) -> Vec<Retention> {
    let mut unchanged: HashMap<QueueName, Timestamp> = before
        .into_iter()
        .filter(|old| retentions.get(&old.queue) == Some(&old.keep))
        .map(|old| (old.queue, old.next))
        .collect();
    retentions
        .iter()
        .map(|(queue, keep)| Retention {
            queue: queue.clone(),
            keep: *keep,
            next: unchanged.remove(queue).unwrap_or(now),
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_plan_keeps_the_next_look_of_unchanged_retentions_only() {
        let queue = |name: &str| QueueName::new(name).expect("a valid queue");
        let (now, later) = (Timestamp::from_millis(1_000), Timestamp::from_millis(9_000));
        let hour = Duration::from_secs(3600);
        let before = ["same", "changed", "dropped"]
            .map(|name| Retention { queue: queue(name), keep: hour, next: later })
            .into_iter()
            .collect();
        let retentions = [(queue("same"), hour), (queue("changed"), 2 * hour), (queue("new"), hour)].into();
        let mut planned: Vec<(String, Duration, Timestamp)> = plan(&retentions, before, now)
            .into_iter()
            .map(|retention| (retention.queue.as_str().to_owned(), retention.keep, retention.next))
            .collect();
        planned.sort();
        let expected = [("changed", 2 * hour, now), ("new", hour, now), ("same", hour, later)]
            .map(|(name, keep, next)| (name.to_owned(), keep, next));
        assert_eq!(planned, expected);
    }
}
