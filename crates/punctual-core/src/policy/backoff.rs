//! Retry backoff: the wait between tries of one occurrence, pure arithmetic on
//! durations, no clock.
//!
//! The wait before try `n + 1` after `n` failures is between 80 % and 100 % of
//! `min(max, initial × factor^(n−1))` — the jitter only ever shortens it, so `max` is a
//! true upper bound and callers racing on the same failure spread out.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::time::{format_duration, serde_duration};

/// Exponential backoff between tries of one occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawBackoff")]
pub struct Backoff {
    #[serde(with = "serde_duration")]
    initial: Duration,
    factor: f64,
    #[serde(with = "serde_duration")]
    max: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    #[serde(with = "serde_duration")]
    initial: Duration,
    factor: f64,
    #[serde(with = "serde_duration")]
    max: Duration,
}

impl TryFrom<RawBackoff> for Backoff {
    type Error = Error;
    fn try_from(raw: RawBackoff) -> Result<Backoff> {
        Backoff::new(raw.initial, raw.factor, raw.max)
    }
}

impl Default for Backoff {
    /// 1 s, doubling, at most 1 h.
    fn default() -> Backoff {
        Backoff { initial: Duration::from_secs(1), factor: 2.0, max: Duration::from_secs(3600) }
    }
}

impl Backoff {
    /// Validates: `factor` is finite and at least 1, `max` at least `initial`.
    pub fn new(initial: Duration, factor: f64, max: Duration) -> Result<Backoff> {
        if !factor.is_finite() || factor < 1.0 {
            return Err(Error::invalid(
                "backoff.factor",
                format!("{factor} is not a factor: use a number of at least 1.0"),
            ));
        }
        if max < initial {
            return Err(Error::invalid(
                "backoff.max",
                format!("{} is less than initial {}", format_duration(max), format_duration(initial)),
            ));
        }
        Ok(Backoff { initial, factor, max })
    }

    /// The first wait.
    pub fn initial(&self) -> Duration {
        self.initial
    }
    /// The growth per failure.
    pub fn factor(&self) -> f64 {
        self.factor
    }
    /// The longest wait.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The wait after `failures` failed tries (1 for the first failure), shortened by
    /// `jitter` ∈ [0, 1): 0 gives the full wait, values near 1 give 80 % of it.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        // Past f64's range `factor^n` is infinite and `min` caps it, but 0 × ∞ is NaN:
        // a zero first wait stays zero however many failures.
        if self.initial.is_zero() {
            return Duration::ZERO;
        }
        // No cap on the exponent below i32::MAX: a factor just above 1 keeps growing
        // past 1024 failures, as documented.
        let exponent = i32::try_from(failures.saturating_sub(1)).unwrap_or(i32::MAX);
        let full = self.initial.as_secs_f64() * self.factor.powi(exponent);
        let capped = full.min(self.max.as_secs_f64());
        let jitter = if jitter.is_nan() { 0.0 } else { jitter.clamp(0.0, 1.0) };
        // `as_secs_f64` rounds: near `Duration::MAX` it can round past what a Duration
        // holds, or past `max` itself.
        Duration::try_from_secs_f64(capped * (1.0 - 0.2 * jitter)).map_or(self.max, |wait| wait.min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters_downwards_only() {
        let b = Backoff::default();
        assert_eq!(b.delay(1, 0.0), Duration::from_secs(1));
        assert_eq!(b.delay(2, 0.0), Duration::from_secs(2));
        assert_eq!(b.delay(4, 0.0), Duration::from_secs(8));
        assert_eq!(b.delay(13, 0.0), Duration::from_secs(3600));
        assert_eq!(b.delay(u32::MAX, 0.0), Duration::from_secs(3600));
        let jittered = b.delay(4, 0.999);
        assert!(jittered >= Duration::from_millis(6400) && jittered < Duration::from_secs(8));
    }

    #[test]
    fn backoff_refuses_nonsense() {
        assert_eq!(Backoff::new(Duration::ZERO, 0.5, Duration::ZERO).unwrap_err().field(), Some("backoff.factor"));
        assert_eq!(
            Backoff::new(Duration::from_secs(2), 2.0, Duration::from_secs(1)).unwrap_err().field(),
            Some("backoff.max")
        );
        let b: Backoff = serde_json::from_str(r#"{"initial":"500ms","factor":3.0,"max":"1m"}"#).unwrap();
        assert_eq!(b.delay(2, 0.0), Duration::from_millis(1500));
        assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"initial":"500ms","factor":3.0,"max":"1m"}"#);
    }

    #[test]
    fn backoff_edge_cases_found_by_the_properties() {
        let hour = Duration::from_secs(3600);
        // Was 1h: 0 × 2^1024 is 0 × ∞, NaN, and `min(NaN, max)` is max.
        assert_eq!(Backoff::new(Duration::ZERO, 2.0, hour).unwrap().delay(1025, 0.0), Duration::ZERO);
        // Was 2.78s: the exponent stopped at 1024, so a factor near 1 stopped growing.
        let slow = Backoff::new(Duration::from_secs(1), 1.001, hour).unwrap().delay(3001, 0.0);
        assert!((slow.as_secs_f64() - 1.001f64.powi(3000)).abs() < 1e-6, "{slow:?}");
        // Was a panic: `max` near Duration::MAX rounds, as f64, past what a Duration holds.
        let huge = Backoff::new(Duration::from_secs(u64::MAX / 2), 2.0, Duration::MAX).unwrap();
        assert_eq!(huge.delay(2, 0.0), Duration::MAX);
        // Was a panic: `Duration::from_secs_f64(NaN)`.
        assert_eq!(Backoff::default().delay(1, f64::NAN), Duration::from_secs(1));
    }

    fn any_backoff() -> impl Strategy<Value = Backoff> {
        let initial = prop_oneof![
            Just(Duration::ZERO),
            (1..600_000u64).prop_map(Duration::from_millis),
            any::<u64>().prop_map(Duration::from_millis),
            (any::<u64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n)),
            Just(Duration::MAX),
        ];
        let factor = prop_oneof![Just(1.0), Just(2.0), 1.0..4.0f64, 1.0..1.001f64, 1.0..1e300f64, Just(f64::MAX),];
        let extra = prop_oneof![
            Just(Duration::ZERO),
            (0..86_400_000u64).prop_map(Duration::from_millis),
            any::<u64>().prop_map(Duration::from_millis),
            Just(Duration::MAX),
        ];
        (initial, factor, extra).prop_map(|(initial, factor, extra)| {
            Backoff::new(initial, factor, initial.saturating_add(extra)).expect("factor ≥ 1 and max ≥ initial")
        })
    }

    fn any_failures() -> impl Strategy<Value = u32> {
        prop_oneof![0..40u32, 1_000..3_000u32, any::<u32>(), Just(u32::MAX)]
    }

    /// `min(max, initial × factor^(failures−1))`, computed in logarithms so that no
    /// intermediate overflows: the documented wait before jitter, in seconds.
    fn documented_full_wait(b: &Backoff, failures: u32) -> f64 {
        let (initial, max) = (b.initial().as_secs_f64(), b.max().as_secs_f64());
        if initial == 0.0 {
            return 0.0;
        }
        let log = initial.ln() + f64::from(failures.saturating_sub(1)) * b.factor().ln();
        if log >= max.ln() { max } else { log.exp().min(max) }
    }

    proptest! {
        #[test]
        fn backoff_waits_as_documented_within_max(
            backoff in any_backoff(),
            failures in any_failures(),
            jitter in prop_oneof![0.0..1.0f64, Just(0.0), Just(0.999_999_999)],
        ) {
            let full = backoff.delay(failures, 0.0);
            let jittered = backoff.delay(failures, jitter);
            prop_assert!(full <= backoff.max(), "{:?} > max", full);
            prop_assert!(jittered <= full, "jitter lengthened {:?} to {:?}", full, jittered);
            prop_assert!(jittered.as_secs_f64() >= full.as_secs_f64() * 0.8 * (1.0 - 1e-12) - 1e-9);
            let expected = documented_full_wait(&backoff, failures);
            let tolerance = expected * 1e-9 + 2e-9;
            prop_assert!(
                (full.as_secs_f64() - expected).abs() <= tolerance,
                "delay({}) = {:?}, documented {}s", failures, full, expected
            );
        }

        #[test]
        fn backoff_never_shrinks_as_failures_grow(
            backoff in any_backoff(),
            failures in any_failures(),
            more in prop_oneof![1..3u32, any::<u32>()],
            jitter in prop_oneof![0.0..1.0f64, Just(0.0)],
        ) {
            let later = failures.saturating_add(more);
            prop_assert!(backoff.delay(failures, jitter) <= backoff.delay(later, jitter));
        }

        /// Any jitter at all, NaN and infinities included, gives a wait, never a panic.
        #[test]
        fn backoff_takes_any_jitter(backoff in any_backoff(), failures in any_failures(), jitter in any::<f64>()) {
            prop_assert!(backoff.delay(failures, jitter) <= backoff.max());
        }
    }
}
