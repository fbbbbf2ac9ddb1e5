//! A token's ingress limit (`[[access]] rate = "100/1s"`): at most `count` requests in
//! any window of `per`, counted by this server. The times of the last `count` requests
//! let through are kept (a sliding log): a request gets through when fewer than `count`
//! of them are within `per` before it, else it is told when the oldest leaves the
//! window.
//!
//! Invariants: in any window of `per`, a token gets at most `count` requests through
//! on one server; a refused request changes nothing, so a client that waits the
//! answered time gets through (unless others of the token took the place first).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use punctual_core::Timestamp;
use punctual_core::policy::Rate;

/// One token's limit and the requests it let through within the last window.
#[derive(Debug)]
pub(crate) struct IngressLimit {
    rate: Rate,
    /// When each request let through within the last `per` arrived, oldest first.
    passed: Mutex<VecDeque<Timestamp>>,
}

impl IngressLimit {
    pub(crate) fn new(rate: Rate) -> IngressLimit {
        let capacity = usize::try_from(rate.count.min(1024)).unwrap_or(1024);
        IngressLimit { rate, passed: Mutex::new(VecDeque::with_capacity(capacity)) }
    }

    pub(crate) fn rate(&self) -> Rate {
        self.rate
    }

    /// Counts a request arriving at `now` (the server's clock): `Ok` when it may run,
    /// else how long until one may.
    pub(crate) fn take(&self, now: Timestamp) -> Result<(), Duration> {
        let mut passed = self.passed.lock().expect("ingress limit lock poisoned");
        while passed.front().is_some_and(|at| at.saturating_add(self.rate.per) <= now) {
            passed.pop_front();
        }
        if passed.len() < self.rate.count as usize {
            passed.push_back(now);
            return Ok(());
        }
        let oldest = *passed.front().expect("count is at least 1");
        Err(oldest.saturating_add(self.rate.per).saturating_since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30T12:00:00Z.
    const START: i64 = 1_796_040_000_000;

    fn limit(text: &str) -> IngressLimit {
        IngressLimit::new(Rate::parse(text).expect("a rate"))
    }

    #[test]
    fn count_at_once_then_each_when_the_oldest_leaves_the_window() {
        let limit = limit("5/1s");
        let at = |ms: i64| Timestamp::from_millis(START + ms);
        for n in 0..4 {
            assert_eq!(limit.take(at(100 * n)), Ok(()), "request {n}");
        }
        assert_eq!(limit.take(at(500)), Ok(()), "the fifth");
        assert_eq!(limit.take(at(600)), Err(Duration::from_millis(400)), "the sixth");
        // A refusal changes nothing: after the answered wait, one gets through, then none.
        assert_eq!(limit.take(at(1000)), Ok(()));
        assert_eq!(limit.take(at(1000)), Err(Duration::from_millis(100)));
        // After a quiet window all five are back.
        let quiet = at(3000);
        assert_eq!((0..6).filter(|_| limit.take(quiet).is_ok()).count(), 5);
    }

    #[test]
    fn never_more_than_count_in_any_window() {
        let limit = limit("10/1m");
        let mut passed = Vec::new();
        for ms in (0..180_000i64).step_by(250) {
            if limit.take(Timestamp::from_millis(START + ms)).is_ok() {
                passed.push(ms);
            }
        }
        for (i, first) in passed.iter().enumerate() {
            let within = passed[i..].iter().take_while(|ms| **ms < first + 60_000).count();
            assert!(within <= 10, "{within} requests within a minute from {first} ms");
        }
        assert!(passed.len() >= 30, "{} passed in three minutes", passed.len());
    }
}
