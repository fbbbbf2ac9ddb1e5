//! Wake-ups without polling.
//!
//! A [`WakeAt`] holds the earliest instant at which something *may* need doing (a task
//! of a queue falls due, a lease expires). Invariant: it is never later than the true
//! next event. Producers lower it with [`WakeAt::offer`] after their write returned;
//! a consumer calls [`WakeAt::take`] just before it asks the store, then offers back
//! what the store says comes next. Because a producer's offer always follows its write,
//! and a write not seen by the consumer's query finished after `take`, no event is
//! ever missed; at worst a consumer wakes once for nothing.

use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::time::Timestamp;

/// No event known.
const NEVER: i64 = i64::MAX;
/// Unknown: look now.
const NOW: i64 = i64::MIN;

/// The earliest instant something may need doing, plus a notifier for when it moves
/// earlier.
#[derive(Debug)]
pub(crate) struct WakeAt {
    at: Mutex<i64>,
    notify: Notify,
}

impl Default for WakeAt {
    /// Starts as "look now": nothing is known yet.
    fn default() -> WakeAt {
        WakeAt { at: Mutex::new(NOW), notify: Notify::new() }
    }
}

impl WakeAt {
    /// Something may need doing at `at`: lowers the wake time and wakes sleepers if
    /// that is earlier than before.
    pub(crate) fn offer(&self, at: Option<Timestamp>) {
        let Some(at) = at else { return };
        let mut current = self.at.lock().expect("wake lock poisoned");
        if at.as_millis() < *current {
            *current = at.as_millis();
            drop(current);
            self.notify.notify_waiters();
        }
    }

    /// The current wake time: `None` when nothing is known to be coming,
    /// `Some(EPOCH)` when a consumer should look at once.
    pub(crate) fn get(&self) -> Option<Timestamp> {
        match *self.at.lock().expect("wake lock poisoned") {
            NEVER => None,
            NOW => Some(Timestamp::EPOCH),
            ms => Some(Timestamp::from_millis(ms)),
        }
    }

    /// Claims the wake-up before asking the store; the caller must `offer` back what
    /// the store reports next (or a retry time if the store failed).
    pub(crate) fn take(&self) {
        *self.at.lock().expect("wake lock poisoned") = NEVER;
    }

    /// A future that completes at the next `offer` that lowers the time, or `poke`.
    /// Call `enable` on it (pinned) *before* reading [`WakeAt::get`] to miss nothing.
    pub(crate) fn changed(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_only_lower_the_time() {
        let w = WakeAt::default();
        assert_eq!(w.get(), Some(Timestamp::EPOCH));
        w.take();
        assert_eq!(w.get(), None);
        w.offer(Some(Timestamp::from_millis(50)));
        w.offer(Some(Timestamp::from_millis(70)));
        w.offer(None);
        assert_eq!(w.get(), Some(Timestamp::from_millis(50)));
    }

    #[tokio::test]
    async fn an_earlier_offer_wakes_a_registered_sleeper() {
        let w = std::sync::Arc::new(WakeAt::default());
        w.take();
        let changed = w.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        w.offer(Some(Timestamp::from_millis(5)));
        tokio::time::timeout(std::time::Duration::from_secs(5), changed).await.expect("woken");
    }
}
