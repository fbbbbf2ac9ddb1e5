//! Retry and repeat policies: pure arithmetic on times, no clock.
//!
//! - [`Backoff`]: the wait before try `n + 1` after `n` failures is between 80 % and
//!   100 % of `min(max, initial × factor^(n−1))` — the jitter only ever shortens it, so
//!   `max` is a true upper bound and callers racing on the same failure spread out.
//! - [`Repeat`]: after a successful occurrence the next one is the first scheduled
//!   instant strictly after `now` — fixed-rate from the first occurrence for `every`,
//!   the next matching wall-clock time in the rule's zone for `cron` — so missed
//!   occurrences are skipped, never caught up. `times` counts occurrences in all,
//!   `until` is the last instant an occurrence may be due.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::time::{Timestamp, format_duration, serde_duration};

/// Built-in `max_attempts` when neither the task nor its queue sets one.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 20;

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

/// When a task fires again after a successful occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRepeat", into = "RawRepeat")]
pub struct Repeat {
    rule: RepeatRule,
    times: Option<u32>,
    until: Option<Timestamp>,
}

/// The rhythm of a [`Repeat`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RepeatRule {
    /// Fixed rate: the first occurrence's due time plus whole multiples of this.
    Every(Duration),
    /// Wall-clock times matching a cron expression in an IANA time zone.
    Cron(Box<CronRule>),
}

/// A parsed cron expression with its zone.
#[derive(Clone)]
pub struct CronRule {
    expr: String,
    tz_name: String,
    cron: croner::Cron,
    tz: jiff::tz::TimeZone,
}

impl fmt::Debug for CronRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CronRule({:?} in {})", self.expr, self.tz_name)
    }
}

impl PartialEq for CronRule {
    fn eq(&self, other: &CronRule) -> bool {
        self.expr == other.expr && self.tz_name == other.tz_name
    }
}

impl CronRule {
    /// Parses a 5-field (`min hour day month weekday`) or 6-field (seconds first) cron
    /// expression, Vixie-cron semantics (weekday 0 or 7 is Sunday, names allowed), in
    /// the IANA zone `tz` (e.g. `Asia/Shanghai`; `UTC`).
    pub fn new(expr: &str, tz: &str) -> Result<CronRule> {
        let parser = croner::parser::CronParser::builder().seconds(croner::parser::Seconds::Optional).build();
        let cron = parser
            .parse(expr)
            .map_err(|e| Error::invalid("repeat.cron", format!("'{expr}' is not a cron expression: {e}")))?;
        let zone = jiff::tz::TimeZone::get(tz).map_err(|_| {
            Error::invalid("repeat.tz", format!("'{tz}' is not an IANA time zone such as Asia/Shanghai or UTC"))
        })?;
        let rule = CronRule { expr: expr.trim().to_owned(), tz_name: tz.to_owned(), cron, tz: zone };
        // A pattern that never matches (30 February) would silently never fire.
        if rule.next_after(Timestamp::from_millis(0)).is_none() {
            return Err(Error::invalid("repeat.cron", format!("'{expr}' never matches a date")));
        }
        Ok(rule)
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }
    /// The zone name as given.
    pub fn tz(&self) -> &str {
        &self.tz_name
    }

    /// The first matching instant strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let zoned = t.to_jiff().to_zoned(self.tz.clone());
        let next = self.cron.find_next_occurrence(&zoned, false).ok()?;
        Some(Timestamp::from_millis(next.timestamp().as_millisecond()))
    }
}

impl Repeat {
    /// Every `interval` (at least 1 ms), fixed rate.
    pub fn every(interval: Duration) -> Result<Repeat> {
        if interval < Duration::from_millis(1) {
            return Err(Error::invalid("repeat.every", "the interval must be at least 1ms"));
        }
        Ok(Repeat { rule: RepeatRule::Every(interval), times: None, until: None })
    }

    /// At the times matching `expr` in zone `tz` (see [`CronRule::new`]).
    pub fn cron(expr: &str, tz: &str) -> Result<Repeat> {
        Ok(Repeat { rule: RepeatRule::Cron(Box::new(CronRule::new(expr, tz)?)), times: None, until: None })
    }

    /// At most `n` occurrences in all (`n` ≥ 1).
    pub fn times(mut self, n: u32) -> Result<Repeat> {
        if n == 0 {
            return Err(Error::invalid("repeat.times", "times counts occurrences in all and must be at least 1"));
        }
        self.times = Some(n);
        Ok(self)
    }

    /// No occurrence due after `t`.
    pub fn until(mut self, t: Timestamp) -> Repeat {
        self.until = Some(t);
        self
    }

    /// The rhythm.
    pub fn rule(&self) -> &RepeatRule {
        &self.rule
    }
    /// The limit on occurrences, if any.
    pub fn times_limit(&self) -> Option<u32> {
        self.times
    }
    /// The last instant an occurrence may be due, if any.
    pub fn until_limit(&self) -> Option<Timestamp> {
        self.until
    }

    /// The first occurrence of a task scheduled "now" with this rule: `now` for
    /// `every`, the next matching time for `cron`.
    pub fn first_at(&self, now: Timestamp) -> Timestamp {
        match &self.rule {
            RepeatRule::Every(_) => now,
            RepeatRule::Cron(rule) => rule.next_after(now).unwrap_or(now),
        }
    }

    /// The next occurrence after occurrence number `done` (1-based) succeeded at
    /// `now`, for a task whose first occurrence was due at `anchor`; `None` when the
    /// repeat is exhausted.
    pub fn next_after(&self, done: u32, anchor: Timestamp, now: Timestamp) -> Option<Timestamp> {
        if self.times.is_some_and(|limit| done >= limit) {
            return None;
        }
        let next = match &self.rule {
            RepeatRule::Every(interval) => {
                let step = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
                let elapsed = now.as_millis() - anchor.as_millis();
                // Smallest k ≥ 1 with anchor + k·step > now.
                let k = if elapsed < 0 { 1 } else { elapsed / step + 1 };
                Timestamp::from_millis(anchor.as_millis().saturating_add(k.saturating_mul(step)))
            }
            RepeatRule::Cron(rule) => rule.next_after(now)?,
        };
        match self.until {
            Some(until) if next > until => None,
            _ => Some(next),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRepeat {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "option_duration")]
    every: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tz: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    times: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    until: Option<Timestamp>,
}

impl TryFrom<RawRepeat> for Repeat {
    type Error = Error;
    fn try_from(raw: RawRepeat) -> Result<Repeat> {
        let mut repeat = match (raw.every, raw.cron) {
            (Some(every), None) => {
                if raw.tz.is_some() {
                    return Err(Error::invalid("repeat.tz", "tz applies to cron only"));
                }
                Repeat::every(every)?
            }
            (None, Some(cron)) => Repeat::cron(&cron, raw.tz.as_deref().unwrap_or("UTC"))?,
            (Some(_), Some(_)) => return Err(Error::invalid("repeat", "give either every or cron, not both")),
            (None, None) => {
                return Err(Error::invalid("repeat", "give every (e.g. \"24h\") or cron (e.g. \"0 9 * * MON-FRI\")"));
            }
        };
        if let Some(n) = raw.times {
            repeat = repeat.times(n)?;
        }
        if let Some(t) = raw.until {
            repeat = repeat.until(t);
        }
        Ok(repeat)
    }
}

impl From<Repeat> for RawRepeat {
    fn from(r: Repeat) -> RawRepeat {
        let (every, cron, tz) = match r.rule {
            RepeatRule::Every(d) => (Some(d), None, None),
            RepeatRule::Cron(rule) => (None, Some(rule.expr), Some(rule.tz_name)),
        };
        RawRepeat { every, cron, tz, times: r.times, until: r.until }
    }
}

impl FromStr for Repeat {
    type Err = Error;
    /// Parses the JSON form, e.g. `{"every": "24h", "times": 3}`.
    fn from_str(json: &str) -> Result<Repeat> {
        serde_json::from_str(json).map_err(|e| Error::invalid("repeat", e))
    }
}

mod option_duration {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => serde_duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        serde_duration::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

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
    fn every_is_fixed_rate_and_skips_missed_occurrences() {
        let r = Repeat::every(Duration::from_secs(10)).unwrap();
        let anchor = Timestamp::from_millis(100_000);
        // Done promptly: the next slot.
        assert_eq!(r.next_after(1, anchor, Timestamp::from_millis(100_050)), Some(Timestamp::from_millis(110_000)));
        // Handler took 35 s: slots at 110 s, 120 s, 130 s are skipped, not caught up.
        assert_eq!(r.next_after(1, anchor, Timestamp::from_millis(135_000)), Some(Timestamp::from_millis(140_000)));
        // Exactly on a slot: strictly after now.
        assert_eq!(r.next_after(2, anchor, Timestamp::from_millis(120_000)), Some(Timestamp::from_millis(130_000)));
    }

    #[test]
    fn times_counts_occurrences_in_all_and_until_bounds_them() {
        let r = Repeat::every(Duration::from_secs(10)).unwrap().times(3).unwrap();
        let anchor = Timestamp::from_millis(0);
        assert!(r.next_after(2, anchor, Timestamp::from_millis(10_001)).is_some());
        assert_eq!(r.next_after(3, anchor, Timestamp::from_millis(20_001)), None);
        let r = Repeat::every(Duration::from_secs(10)).unwrap().until(Timestamp::from_millis(20_000));
        assert_eq!(r.next_after(1, anchor, Timestamp::from_millis(10_001)), Some(Timestamp::from_millis(20_000)));
        assert_eq!(r.next_after(2, anchor, Timestamp::from_millis(20_001)), None);
        assert_eq!(Repeat::every(Duration::ZERO).unwrap_err().field(), Some("repeat.every"));
    }

    #[test]
    fn cron_weekdays_at_nine_in_shanghai() {
        let r = Repeat::cron("0 9 * * MON-FRI", "Asia/Shanghai").unwrap();
        // Friday 2026-11-27 09:00 +08:00 fired; next is Monday 2026-11-30 09:00 +08:00.
        let friday = at("2026-11-27T01:00:00.020Z");
        assert_eq!(r.next_after(1, friday, friday), Some(at("2026-11-30T01:00:00Z")));
        // Numeric weekdays follow Vixie cron: 1-5 is Monday to Friday.
        let numeric = Repeat::cron("0 9 * * 1-5", "Asia/Shanghai").unwrap();
        assert_eq!(numeric.next_after(1, friday, friday), Some(at("2026-11-30T01:00:00Z")));
        assert_eq!(r.first_at(at("2026-11-29T12:00:00Z")), at("2026-11-30T01:00:00Z"));
    }

    #[test]
    fn cron_across_daylight_saving_changes() {
        // New York springs forward on 2026-03-08: 02:30 local does not exist that day.
        let r = Repeat::cron("30 2 * * *", "America/New_York").unwrap();
        let before = at("2026-03-07T07:30:00Z"); // 02:30 EST on the 7th
        let next = r.next_after(1, before, before).unwrap();
        // Fires once that day, at the first valid time after the gap (03:00 EDT).
        assert_eq!(next, at("2026-03-08T07:00:00Z"));
        let after = r.next_after(2, before, next).unwrap();
        assert_eq!(after, at("2026-03-09T06:30:00Z")); // 02:30 EDT
        // Falls back on 2026-11-01: 01:30 local happens twice, fires once.
        let r = Repeat::cron("30 1 * * *", "America/New_York").unwrap();
        let first = r.next_after(1, before, at("2026-11-01T04:00:00Z")).unwrap();
        assert_eq!(first, at("2026-11-01T05:30:00Z")); // 01:30 EDT
        let second = r.next_after(2, before, first).unwrap();
        assert_eq!(second, at("2026-11-02T06:30:00Z")); // next day 01:30 EST
    }

    #[test]
    fn cron_errors_name_their_field() {
        assert_eq!(Repeat::cron("61 * * * *", "UTC").unwrap_err().field(), Some("repeat.cron"));
        assert_eq!(Repeat::cron("0 9 * * *", "Mars/Olympus").unwrap_err().field(), Some("repeat.tz"));
        assert_eq!(Repeat::cron("0 0 30 2 *", "UTC").unwrap_err().field(), Some("repeat.cron"));
    }

    #[test]
    fn repeat_json_round_trips_and_refuses_ambiguity() {
        let r: Repeat = r#"{"every": "24h", "times": 3}"#.parse().unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"every":"1d","times":3}"#);
        let r: Repeat = r#"{"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}"#.parse().unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"cron":"0 9 * * MON-FRI","tz":"Asia/Shanghai"}"#);
        assert!("{\"every\": \"1h\", \"cron\": \"* * * * *\"}".parse::<Repeat>().is_err());
        assert!("{}".parse::<Repeat>().is_err());
        assert!("{\"every\": \"1h\", \"colour\": 1}".parse::<Repeat>().is_err());
    }

    // --- Backoff ---

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
