//! Rate limits per queue: at most `count` deliveries in any window of `per`
//! (`rate = "20/1m"`, what a WeCom or DingTalk group robot accepts).
//!
//! Where the slots are counted:
//! - in this process ([`RateLimiter::new`]): a log of the window's start times, for a
//!   store that one process owns (the embedded store);
//! - in the shared store ([`RateLimiter::shared`] over [`RateSlots`]), when several
//!   processes share the store's queues (Redis): the limit is the queue's, not one
//!   node's, because a chat robot's limit is the robot's.
//!
//! Invariants: a delivery over the limit waits its turn — it is neither failed nor
//! dropped — and within a process turns are taken in arrival order (the limiter is a
//! fair tokio mutex held while waiting). In any window of length `per` at most `count`
//! deliveries take a slot, in this process or, when shared, across every process
//! sharing the slots. Just before taking a slot the delivery confirms that it still
//! wants one (its lease is live: see [`RateLimiter::acquire`]), so a task cancelled
//! while it waited neither takes a slot nor is sent; nothing waits between the last
//! confirmation and the return of `acquire` (with shared slots, it confirms again after
//! the store's answer). Time comes from the engine's
//! [`Clock`], so tests drive it by hand; a shared store may use its own time.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use punctual_core::policy::Rate;
use punctual_core::{Clock, QueueName, Timestamp};

/// Counters of a [`RateLimiter`], for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RateStats {
    /// Deliveries that went through the limiter.
    pub passed: u64,
    /// Of those, how many had to wait for their turn.
    pub throttled: u64,
    /// Deliveries waiting right now.
    pub waiting: u64,
}

/// What a shared store answers when asked for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The slot is taken: the delivery may start.
    Taken,
    /// The window is full: ask again after this long (when its oldest slot frees).
    Full(Duration),
}

/// A boxed future of [`RateSlots::take`].
pub type SlotFuture<'a> = Pin<Box<dyn Future<Output = punctual_core::Result<Slot>> + Send + 'a>>;

/// Rate-limit slots kept in a store every process sharing the queues sees (the Redis
/// store), so that a queue's rate holds across all of them.
pub trait RateSlots: Send + Sync + fmt::Debug + 'static {
    /// Atomically takes a slot of `rate` for `queue` when fewer than `rate.count` were
    /// taken in the window of `rate.per` before now ([`Slot::Taken`]); otherwise takes
    /// nothing and answers [`Slot::Full`] with the time until the window's oldest slot
    /// frees. `now` is the caller's clock; a store may use its own time instead (Redis
    /// `TIME`), so that processes with skewed clocks agree.
    fn take<'a>(&'a self, queue: &'a QueueName, rate: Rate, now: Timestamp) -> SlotFuture<'a>;
}

/// Where a limiter's slots are counted.
enum Slots {
    /// Start times of the deliveries of the current window, oldest first.
    Local(tokio::sync::Mutex<VecDeque<Timestamp>>),
    /// In a shared store; the mutex keeps this process's turns in arrival order.
    Shared(Arc<dyn RateSlots>, tokio::sync::Mutex<()>),
}

/// Holds deliveries back so that at most [`Rate::count`] start per [`Rate::per`].
pub struct RateLimiter {
    rate: Rate,
    clock: Arc<dyn Clock>,
    slots: Slots,
    passed: AtomicU64,
    throttled: AtomicU64,
    waiting: AtomicU64,
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = matches!(self.slots, Slots::Shared(..));
        f.debug_struct("RateLimiter")
            .field("rate", &self.rate)
            .field("shared", &shared)
            .field("stats", &self.stats())
            .finish()
    }
}

/// Counts a delivery as waiting for as long as it lives.
struct Waiting<'a>(&'a AtomicU64);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How long a limiter waits before asking a shared store again after it failed.
const SHARED_RETRY: Duration = Duration::from_secs(1);

impl RateLimiter {
    /// A limiter of `rate` on `clock`, counting in this process.
    pub fn new(rate: Rate, clock: Arc<dyn Clock>) -> RateLimiter {
        let window = VecDeque::with_capacity(rate.count.min(1024) as usize);
        RateLimiter::with_slots(rate, clock, Slots::Local(tokio::sync::Mutex::new(window)))
    }

    /// A limiter of `rate` whose slots are counted in `slots`, shared with every other
    /// process using them.
    pub fn shared(rate: Rate, clock: Arc<dyn Clock>, slots: Arc<dyn RateSlots>) -> RateLimiter {
        RateLimiter::with_slots(rate, clock, Slots::Shared(slots, tokio::sync::Mutex::new(())))
    }

    fn with_slots(rate: Rate, clock: Arc<dyn Clock>, slots: Slots) -> RateLimiter {
        RateLimiter {
            rate,
            clock,
            slots,
            passed: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
        }
    }

    /// The configured rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Waits until one more delivery of `queue` may start, then counts it as started.
    ///
    /// `confirm` runs just before each attempt to take a free slot: an error from it
    /// ends the wait with that error and no slot taken (a delivery whose lease was lost
    /// while it waited must not use up the rate). With shared slots it runs again once
    /// the slot is taken (taking it is a round trip to the store): its error then ends
    /// the wait too, the slot spent. Either way `Ok` means `confirm` succeeded with no
    /// wait since. Cancel-safe: a delivery dropped while
    /// waiting (shutdown) takes no slot and leaves the counters right.
    pub async fn acquire<F, Fut, T, E>(&self, queue: &QueueName, mut confirm: F) -> Result<(), E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(&self.waiting);
        let mut throttled = false;
        let mut note_throttled = || {
            if !throttled {
                throttled = true;
                self.throttled.fetch_add(1, Ordering::Relaxed);
            }
        };
        match &self.slots {
            Slots::Local(window) => {
                let mut window = window.lock().await;
                loop {
                    let now = self.clock.now();
                    while window.front().is_some_and(|start| start.saturating_add(self.rate.per) <= now) {
                        window.pop_front();
                    }
                    if window.len() < self.rate.count as usize {
                        confirm().await?;
                        // The mutex is held: the slot is still free, whatever the time now.
                        window.push_back(self.clock.now());
                        break;
                    }
                    note_throttled();
                    let oldest = *window.front().expect("the window is full, so not empty");
                    self.clock.sleep_until(oldest.saturating_add(self.rate.per)).await;
                }
            }
            Slots::Shared(slots, turn) => {
                let _turn = turn.lock().await;
                let mut failures = 0u32;
                loop {
                    // Before asking, so a lost delivery takes no slot; and after a slot
                    // was taken, since asking took time too: the last word before the
                    // send is the store's.
                    confirm().await?;
                    let now = self.clock.now();
                    let wait = match slots.take(queue, self.rate, now).await {
                        Ok(Slot::Taken) => {
                            confirm().await?;
                            break;
                        }
                        Ok(Slot::Full(wait)) => {
                            note_throttled();
                            wait.max(Duration::from_millis(1))
                        }
                        Err(e) => {
                            failures += 1;
                            if failures == 1 {
                                tracing::warn!(queue = %queue, error = %e, "cannot take a rate-limit slot; the delivery waits and asks again");
                            }
                            SHARED_RETRY.min(self.rate.per)
                        }
                    };
                    // From the time asked about: the clock may have moved meanwhile.
                    self.clock.sleep_until(now.saturating_add(wait)).await;
                }
            }
        }
        drop(waiting);
        self.passed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The counters so far.
    pub fn stats(&self) -> RateStats {
        RateStats {
            passed: self.passed.load(Ordering::Relaxed),
            throttled: self.throttled.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_core::ManualClock;

    fn q() -> QueueName {
        QueueName::new("q").unwrap()
    }

    /// A confirmation that always succeeds.
    async fn live() -> Result<(), String> {
        Ok(())
    }

    #[tokio::test]
    async fn over_the_limit_waits_its_turn_and_is_counted() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000_000));
        let limiter = Arc::new(RateLimiter::new(Rate::parse("2/1m").unwrap(), Arc::new(clock.clone())));
        limiter.acquire(&q(), live).await.unwrap();
        clock.advance(Duration::from_secs(10));
        limiter.acquire(&q(), live).await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..2 {
            let (shared, tx) = (Arc::clone(&limiter), tx.clone());
            tokio::spawn(async move {
                shared.acquire(&q(), live).await.unwrap();
                tx.send(n).unwrap();
            });
            // Let it reach the limiter before the next one, so the order is defined.
            while limiter.stats().waiting <= n {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(limiter.stats().waiting, 2);
        assert!(rx.try_recv().is_err(), "the third delivery must wait");
        // The first slot frees at +60s: the third (first waiting) goes, not the fourth.
        clock.advance(Duration::from_secs(50));
        assert_eq!(rx.recv().await, Some(0));
        assert!(rx.try_recv().is_err());
        clock.advance(Duration::from_secs(10));
        assert_eq!(rx.recv().await, Some(1));
        let stats = limiter.stats();
        assert_eq!((stats.passed, stats.throttled, stats.waiting), (4, 2, 0));

        // A waiting delivery dropped (shutdown) leaves no trace but the throttle count.
        let waiter = tokio::spawn({
            let limiter = Arc::clone(&limiter);
            async move { limiter.acquire(&q(), live).await }
        });
        while limiter.stats().waiting == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        let stats = limiter.stats();
        assert_eq!((stats.passed, stats.throttled, stats.waiting), (4, 3, 0));
    }

    #[tokio::test]
    async fn a_delivery_that_no_longer_wants_its_turn_takes_no_slot() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000_000));
        let limiter = RateLimiter::new(Rate::parse("1/1m").unwrap(), Arc::new(clock.clone()));
        let refused = limiter.acquire(&q(), || async { Err::<(), _>("lease lost") }).await;
        assert_eq!(refused, Err("lease lost"));
        // The slot is still free: the next delivery goes at once.
        limiter.acquire(&q(), live).await.unwrap();
        let stats = limiter.stats();
        assert_eq!((stats.passed, stats.throttled, stats.waiting), (1, 0, 0));
    }

    /// Slots in "another store": the same sliding log, shared by two limiters.
    #[derive(Debug, Default)]
    struct Fake {
        starts: std::sync::Mutex<VecDeque<Timestamp>>,
        asked: AtomicU64,
    }

    impl RateSlots for Fake {
        fn take<'a>(&'a self, _queue: &'a QueueName, rate: Rate, now: Timestamp) -> SlotFuture<'a> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            let mut starts = self.starts.lock().unwrap();
            while starts.front().is_some_and(|s| s.saturating_add(rate.per) <= now) {
                starts.pop_front();
            }
            let slot = if starts.len() < rate.count as usize {
                starts.push_back(now);
                Slot::Taken
            } else {
                Slot::Full(starts[0].saturating_add(rate.per).saturating_since(now))
            };
            Box::pin(async move { Ok(slot) })
        }
    }

    #[tokio::test]
    async fn shared_slots_limit_every_limiter_that_shares_them() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000_000));
        let slots = Arc::new(Fake::default());
        let rate = Rate::parse("2/1m").unwrap();
        let one = RateLimiter::shared(rate, Arc::new(clock.clone()), slots.clone());
        let two = Arc::new(RateLimiter::shared(rate, Arc::new(clock.clone()), slots.clone()));
        one.acquire(&q(), live).await.unwrap();
        two.acquire(&q(), live).await.unwrap();
        // A third, in either process, waits for the window.
        let third = tokio::spawn({
            let two = Arc::clone(&two);
            async move { two.acquire(&q(), live).await }
        });
        while slots.asked.load(Ordering::Relaxed) < 3 {
            tokio::task::yield_now().await;
        }
        assert!(!third.is_finished());
        assert_eq!(two.stats().throttled, 1);
        clock.advance(Duration::from_secs(60));
        third.await.unwrap().unwrap();
        assert_eq!((one.stats().passed, two.stats().passed), (1, 2));
    }
}
