//! The reaper: ends expired leases whenever the earliest one expires.

use std::time::Duration;

use super::Engine;
use crate::events::Event;
use crate::model::TaskState;
use crate::store::Store;

/// Why a task whose last lease expired is dead.
const EXPIRED: &str = "the lease expired before an ack";

impl<S: Store> Engine<S> {
    /// Ends expired leases whenever the earliest one expires.
    pub(super) async fn run_reaper(self) {
        let mut failures = 0u32;
        loop {
            let wake = &self.inner.reaper_wake;
            let changed = wake.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.now();
            if wake.get().is_some_and(|at| at <= now) {
                wake.take();
                match self.inner.store.reap(now, self.inner.config.reap_batch).await {
                    Ok(result) => {
                        failures = 0;
                        for reaped in &result.reaped {
                            let dead = reaped.state == TaskState::Dead;
                            let (queue, key) = (reaped.queue.clone(), reaped.key.clone());
                            self.publish(Event::LeaseExpired { queue: queue.clone(), key: key.clone(), dead, at: now });
                            if dead {
                                self.publish(Event::Dead { queue, key, error: EXPIRED.into(), at: now });
                            } else {
                                self.waker(&reaped.queue).offer_both(Some(now));
                            }
                        }
                        let more = result.reaped.len() >= self.inner.config.reap_batch as usize;
                        wake.offer(if more { Some(now) } else { result.next_expiry });
                    }
                    Err(e) => {
                        failures += 1;
                        if failures == 1 {
                            tracing::warn!(error = %e, "reaper cannot reach the store; retrying");
                        }
                        let backoff = Duration::from_millis(100u64 << failures.min(6));
                        wake.offer(Some(now.saturating_add(backoff)));
                    }
                }
                continue;
            }
            let sleep = async {
                match wake.get() {
                    Some(at) => self.inner.timer.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = &mut changed => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }
}
