//! Rate limits per queue: at most `count` deliveries in any window of `per`
//! (`rate = "20/1m"`, what a WeCom or DingTalk group robot accepts).
//!
//! Invariants: a delivery over the limit waits its turn — it is neither failed nor
//! dropped — and turns are taken in arrival order (the window is behind a fair tokio
//! mutex held while waiting). In any window of length `per` at most `count`
//! deliveries start. Time comes from the engine's [`Clock`], so tests drive it by hand.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use punctual_core::time::parse_duration;
use punctual_core::{Clock, Timestamp};

/// `count` deliveries per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub per: Duration,
}

impl Rate {
    /// Parses `"20/1m"`, `"5/s"`, `"100/1h"`: a count, a slash, a duration (a bare
    /// unit means one of it).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let usage = || format!("'{text}' is not a rate: write COUNT/DURATION such as \"20/1m\" or \"5/1s\"");
        let (count, per) = text.split_once('/').ok_or_else(usage)?;
        let count: u32 = count.trim().parse().map_err(|_| usage())?;
        if count == 0 {
            return Err(format!("'{text}': a rate allows at least 1 delivery"));
        }
        let per = per.trim();
        let per = if per.bytes().all(|b| b.is_ascii_alphabetic()) { format!("1{per}") } else { per.to_owned() };
        let per = parse_duration(&per).map_err(|e| format!("'{text}': {e}"))?;
        if per.is_zero() {
            return Err(format!("'{text}': the window must be longer than 0"));
        }
        Ok(Rate { count, per })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}ms", self.count, self.per.as_millis())
    }
}

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

/// Holds deliveries back so that at most [`Rate::count`] start per [`Rate::per`].
pub struct RateLimiter {
    rate: Rate,
    clock: Arc<dyn Clock>,
    /// Start times of the deliveries of the current window, oldest first.
    window: tokio::sync::Mutex<VecDeque<Timestamp>>,
    passed: AtomicU64,
    throttled: AtomicU64,
    waiting: AtomicU64,
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter").field("rate", &self.rate).field("stats", &self.stats()).finish()
    }
}

impl RateLimiter {
    /// A limiter of `rate` on `clock`.
    pub fn new(rate: Rate, clock: Arc<dyn Clock>) -> RateLimiter {
        RateLimiter {
            rate,
            clock,
            window: tokio::sync::Mutex::new(VecDeque::with_capacity(rate.count.min(1024) as usize)),
            passed: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
        }
    }

    /// The configured rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Waits until one more delivery may start, then counts it as started. Cancel-safe:
    /// a delivery dropped while waiting (shutdown) takes no slot and leaves the
    /// counters right.
    pub async fn acquire(&self) {
        /// Counts a delivery as waiting for as long as it lives.
        struct Waiting<'a>(&'a AtomicU64);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(&self.waiting);
        let mut throttled = false;
        let mut window = self.window.lock().await;
        loop {
            let now = self.clock.now();
            while window.front().is_some_and(|start| start.saturating_add(self.rate.per) <= now) {
                window.pop_front();
            }
            if window.len() < self.rate.count as usize {
                window.push_back(now);
                break;
            }
            if !throttled {
                throttled = true;
                self.throttled.fetch_add(1, Ordering::Relaxed);
            }
            let oldest = *window.front().expect("the window is full, so not empty");
            self.clock.sleep_until(oldest.saturating_add(self.rate.per)).await;
        }
        drop(window);
        drop(waiting);
        self.passed.fetch_add(1, Ordering::Relaxed);
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

    #[test]
    fn rates_parse() {
        assert_eq!(Rate::parse("20/1m").unwrap(), Rate { count: 20, per: Duration::from_secs(60) });
        assert_eq!(Rate::parse("5/s").unwrap(), Rate { count: 5, per: Duration::from_secs(1) });
        assert_eq!(Rate::parse(" 100 / 1h ").unwrap(), Rate { count: 100, per: Duration::from_secs(3600) });
        for bad in ["20", "x/1m", "0/1m", "20/0s", "20/soon", "-1/1m"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn over_the_limit_waits_its_turn_and_is_counted() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000_000));
        let limiter = Arc::new(RateLimiter::new(Rate::parse("2/1m").unwrap(), Arc::new(clock.clone())));
        limiter.acquire().await;
        clock.advance(Duration::from_secs(10));
        limiter.acquire().await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..2 {
            let (shared, tx) = (Arc::clone(&limiter), tx.clone());
            tokio::spawn(async move {
                shared.acquire().await;
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
            async move { limiter.acquire().await }
        });
        while limiter.stats().waiting == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        let stats = limiter.stats();
        assert_eq!((stats.passed, stats.throttled, stats.waiting), (4, 3, 0));
    }
}
