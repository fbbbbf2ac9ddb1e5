//! Repeat policies: when a task fires again after a successful occurrence, pure
//! arithmetic on times, no clock; and the JSON form of a repeat.
//!
//! After a successful occurrence the next one is the first scheduled instant strictly
//! after `now` — fixed-rate from the first occurrence for `every`, the next matching
//! wall-clock time in the rule's zone for `cron` — so missed occurrences are skipped,
//! unless the task's timing ([`Timing`]) keeps some owed. `times` counts occurrences
//! in all, `until` is the last instant an occurrence may be due. A task's `anchor`
//! is the time its current occurrence was scheduled for (before jitter): the grid
//! of `every` runs through it.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::occurrences::{Occurrences, RepeatRule};
use super::timing::{Overlap, Timing};
use crate::calendar::Calendar;
use crate::cron::{CronRule, CronSyntax};
use crate::error::{Error, Result};
use crate::meta::TaskMeta;
use crate::time::{Timestamp, serde_option_duration};

/// When a task fires again after a successful occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRepeat", into = "RawRepeat")]
pub struct Repeat {
    rule: RepeatRule,
    times: Option<u32>,
    until: Option<Timestamp>,
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
        Occurrences::new(&self.rule, None).first(now).ok().flatten()
    }

    /// The next occurrence after the task's current one succeeded at `now`, with no
    /// calendar and the default timing: `meta` tells which occurrence that was
    /// (`occurrence`, 1-based) and when it was scheduled for (`anchor`); `None` when
    /// the repeat is exhausted.
    pub fn next_after(&self, meta: &TaskMeta, now: Timestamp) -> Option<Timestamp> {
        self.next_occurrence(meta, &Progress { now, leased_at: now, calendar: None, timing: &Timing::default() })
            .ok()
            .flatten()
    }

    /// The next occurrence after the task's current one (`meta`) succeeded, by the
    /// task's timing: under [`Misfire::FireAll`](super::Misfire::FireAll) the oldest
    /// of the latest `catch_up_max` occurrences already due, under
    /// [`Overlap::Queue`](super::Overlap::Queue) the latest of those that fell due
    /// while the firing was leased; else (or when none is due) the first after `now`.
    /// `None` when the repeat is exhausted; an error when the calendar's arithmetic
    /// fails (no working time).
    pub fn next_occurrence(&self, meta: &TaskMeta, progress: &Progress<'_>) -> Result<Option<Timestamp>> {
        let Progress { now, leased_at, calendar, timing } = *progress;
        if self.times.is_some_and(|limit| meta.occurrence >= limit) {
            return Ok(None);
        }
        let occurrences = Occurrences::new(&self.rule, calendar);
        let scheduled_for = meta.anchor;
        let owed = match (timing.catch_up(), timing.overlap) {
            (0, Overlap::Queue) => {
                occurrences.due_after(scheduled_for, now, 1)?.first_kept.filter(|latest| *latest > leased_at)
            }
            (0, _) => None,
            (catch_up, _) => occurrences.due_after(scheduled_for, now, catch_up)?.first_kept,
        };
        let next = match owed {
            Some(at) => at,
            None => match occurrences.next_after(scheduled_for, now)? {
                Some(at) => at,
                None => return Ok(None),
            },
        };
        Ok(Some(next).filter(|next| self.until.is_none_or(|until| *next <= until)))
    }

    /// How many occurrences after the task's current one (`meta`) are already due at
    /// `now` and will not fire: all of them, or under
    /// [`Misfire::FireAll`](super::Misfire::FireAll) those beyond `catch_up_max`.
    pub fn missed(&self, meta: &TaskMeta, progress: &Progress<'_>) -> Result<u32> {
        let due = Occurrences::new(&self.rule, progress.calendar).due_after(meta.anchor, progress.now, 0)?.count;
        Ok(due.saturating_sub(progress.timing.catch_up()))
    }
}

/// Where a repeat stands when its firing ends (see [`Repeat::next_occurrence`]).
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub now: Timestamp,
    /// When the firing was leased (or its lease last extended).
    pub leased_at: Timestamp,
    /// The task's calendar, read by the caller.
    pub calendar: Option<&'a Calendar>,
    pub timing: &'a Timing,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRepeat {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_option_duration")]
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

#[cfg(test)]
mod tests;
