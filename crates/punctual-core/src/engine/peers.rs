//! Following other processes that share the store: their wake-ups, the safety poll,
//! and the resets of the store they report.

use std::sync::Arc;

use super::{Engine, QueueState};
use crate::events::Event;
use crate::model::QueueName;
use crate::store::{Peers, Store};
use crate::target::Lane;
use crate::time::Timestamp;

impl<S: Store> Engine<S> {
    /// Passes other processes' wake-ups to the queues this engine serves, and looks at
    /// every such queue and for expired leases each `safety_poll` in case a wake-up
    /// was lost.
    pub(super) async fn follow_peers(self, peers: Peers) {
        use tokio::sync::broadcast::error::RecvError;
        let Peers { mut wakeups, safety_poll, mut resets, .. } = peers;
        let mut next_poll = self.now().saturating_add(safety_poll);
        let mut notifications = true;
        loop {
            let wakeup = async { if notifications { wakeups.recv().await } else { std::future::pending().await } };
            let reset = async {
                match resets.as_mut() {
                    Some(resets) => resets.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                received = wakeup => match received {
                    Ok(wakeup) => self.offer_known(&wakeup.queue, wakeup.lane, wakeup.due_at),
                    Err(RecvError::Lagged(_)) => self.look_everywhere(),
                    Err(RecvError::Closed) => notifications = false,
                },
                received = reset => match received {
                    Ok(reset) => {
                        self.publish(Event::StoreReset { reset: Some(reset), missed: 0 });
                        // What this engine believed due next belonged to the old data.
                        self.look_everywhere();
                    }
                    Err(RecvError::Lagged(missed)) => self.publish(Event::StoreReset { reset: None, missed }),
                    Err(RecvError::Closed) => resets = None,
                },
                _ = self.inner.timer.sleep_until(next_poll) => {
                    self.look_everywhere();
                    next_poll = self.now().saturating_add(safety_poll);
                }
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Lowers the wake time of `queue`'s `lane` if this engine serves the queue (has a
    /// consumer or wrote to it); other queues are none of its business.
    fn offer_known(&self, queue: &QueueName, lane: Lane, at: Timestamp) {
        if lane == Lane::Target {
            self.note_target_queue(queue);
        }
        let state = self.inner.queues.lock().expect("queues lock poisoned").get(queue).cloned();
        if let Some(state) = state {
            state.lane(lane).offer(Some(at));
        }
    }

    /// Wakes every consumer and the reaper to ask the store afresh.
    fn look_everywhere(&self) {
        let now = self.now();
        let states: Vec<Arc<QueueState>> =
            self.inner.queues.lock().expect("queues lock poisoned").values().cloned().collect();
        for state in states {
            state.offer_both(Some(now));
        }
        self.inner.reaper_wake.offer(Some(now));
    }

    /// Wakes the reaper: a lease may expire at `at`.
    pub(crate) fn lease_expires(&self, at: Timestamp) {
        self.inner.reaper_wake.offer(Some(at));
    }
}
