//! Repeat policies: when a task fires again after a successful occurrence, pure
//! arithmetic on times, no clock; and the JSON form of a repeat.
//!
//! After a successful occurrence the next one is the first scheduled instant strictly
//! after `now` — fixed-rate from the first occurrence for `every`, the next matching
//! wall-clock time in the rule's zone for `cron` — so missed occurrences are skipped,
//! never caught up. `times` counts occurrences in all, `until` is the last instant an
//! occurrence may be due.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cron::{CronRule, CronSyntax};
use crate::error::{Error, Result};
use crate::meta::TaskMeta;
use crate::time::{Timestamp, serde_duration};

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
    /// Wall-clock times matching a cron expression (in its syntax) in an IANA time zone.
    Cron(Box<CronRule>),
}

impl Repeat {
    /// Every `interval` (at least 1 ms), fixed rate.
    pub fn every(interval: Duration) -> Result<Repeat> {
        if interval < Duration::from_millis(1) {
            return Err(Error::invalid("repeat.every", "the interval must be at least 1ms"));
        }
        Ok(Repeat { rule: RepeatRule::Every(interval), times: None, until: None })
    }

    /// At the times matching the Vixie expression `expr` in zone `tz` (see
    /// [`CronRule::new`]).
    pub fn cron(expr: &str, tz: &str) -> Result<Repeat> {
        Repeat::cron_with_syntax(expr, tz, CronSyntax::Vixie)
    }

    /// At the times matching `expr`, written in `syntax`, in zone `tz` (see
    /// [`CronRule::with_syntax`]).
    pub fn cron_with_syntax(expr: &str, tz: &str, syntax: CronSyntax) -> Result<Repeat> {
        let rule = CronRule::with_syntax(expr, tz, syntax)?;
        Ok(Repeat { rule: RepeatRule::Cron(Box::new(rule)), times: None, until: None })
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
    /// `every`, the next matching time for `cron` (`None` when there is none before
    /// the end of time).
    pub fn first_at(&self, now: Timestamp) -> Option<Timestamp> {
        match &self.rule {
            RepeatRule::Every(_) => Some(now),
            RepeatRule::Cron(rule) => rule.next_after(now),
        }
    }

    /// The next occurrence after the task's current one succeeded at `now`: `meta`
    /// tells which that was (`occurrence`, 1-based) and when the first was due
    /// (`anchor`); `None` when the repeat is exhausted.
    pub fn next_after(&self, meta: &TaskMeta, now: Timestamp) -> Option<Timestamp> {
        let TaskMeta { occurrence: done, anchor, .. } = *meta;
        if self.times.is_some_and(|limit| done >= limit) {
            return None;
        }
        let next = match &self.rule {
            RepeatRule::Every(interval) => {
                let step = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
                let elapsed = now.as_millis() - anchor.as_millis();
                // Smallest k ≥ 1 with anchor + k·step > now.
                let k = if elapsed < 0 { 1 } else { elapsed / step + 1 };
                // A slot past the latest representable instant does not exist. (Clamping
                // it to that instant gave one not after `now`: a task firing forever.)
                let next = k.checked_mul(step).and_then(|offset| anchor.as_millis().checked_add(offset));
                next.and_then(Timestamp::try_from_millis)?
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
    /// Absent or null: `vixie`. Written only for the other syntaxes, so a Vixie
    /// repeat reads and writes as it did before the field existed (the stores keep
    /// this JSON, and the API shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cron_syntax: Option<CronSyntax>,
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
                if raw.cron_syntax.is_some() {
                    return Err(Error::invalid("repeat.cron_syntax", "cron_syntax applies to cron only"));
                }
                Repeat::every(every)?
            }
            (None, Some(cron)) => Repeat::cron_with_syntax(
                &cron,
                raw.tz.as_deref().unwrap_or("UTC"),
                raw.cron_syntax.unwrap_or_default(),
            )?,
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
        let (every, cron, tz, cron_syntax) = match r.rule {
            RepeatRule::Every(d) => (Some(d), None, None, None),
            RepeatRule::Cron(rule) => {
                let syntax = Some(rule.syntax()).filter(|syntax| *syntax != CronSyntax::Vixie);
                (None, Some(rule.expr().to_owned()), Some(rule.tz().to_owned()), syntax)
            }
        };
        RawRepeat { every, cron, tz, cron_syntax, times: r.times, until: r.until }
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
mod tests;
