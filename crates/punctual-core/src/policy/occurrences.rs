//! A repeat's occurrences in its task's calendar: pure arithmetic on instants.
//!
//! - Without a calendar: `every` is fixed-rate on the grid of the occurrence it
//!   steps from, cron is the rule's matching times.
//! - With a calendar: `every` counts working time from the occurrence before (a whole
//!   number of days counts working days at the same working-time offset, as a
//!   delay does), and cron keeps the matching times at which the calendar is open (a
//!   time at a closing edge is closed).
//!
//! Walks are bounded: a cron rule with no open occurrence in [`MAX_STEPS`] matching
//! times is an error naming `calendar`; an `every` in working time more than
//! [`MAX_STEPS`] intervals behind starts again one interval after `now`; counts of
//! missed occurrences stop at [`MAX_STEPS`].

use std::collections::VecDeque;
use std::time::Duration;

use crate::calendar::Calendar;
use crate::cron::CronRule;
use crate::error::{Error, Result};
use crate::time::Timestamp;

/// The rhythm of a [`Repeat`](super::Repeat).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RepeatRule {
    /// Fixed rate: the first occurrence's due time plus whole multiples of this.
    Every(Duration),
    /// Wall-clock times matching a cron expression (in its syntax) in an IANA time zone.
    Cron(Box<CronRule>),
}

/// The most steps one walk takes.
pub const MAX_STEPS: u32 = 10_000;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// The occurrences of a repeat's `rule`, in `calendar` when it has one.
#[derive(Debug, Clone, Copy)]
pub struct Occurrences<'a> {
    rule: &'a RepeatRule,
    calendar: Option<&'a Calendar>,
}

impl<'a> Occurrences<'a> {
    pub fn new(rule: &'a RepeatRule, calendar: Option<&'a Calendar>) -> Occurrences<'a> {
        Occurrences { rule, calendar }
    }

    /// The first occurrence of a task scheduled "now": `now` for `every` (the next
    /// opening, in a calendar), the first matching time after `now` for cron (open, in
    /// a calendar). `None` when there is none before the end of time.
    pub fn first(&self, now: Timestamp) -> Result<Option<Timestamp>> {
        match (self.rule, self.calendar) {
            (RepeatRule::Every(_), None) => Ok(Some(now)),
            (RepeatRule::Every(_), Some(calendar)) => calendar.next_open(now).map(Some),
            (RepeatRule::Cron(rule), _) => self.open_cron_after(rule, now),
        }
    }

    /// The occurrence right after `occurrence` (itself one of the schedule's).
    pub fn step(&self, occurrence: Timestamp) -> Result<Option<Timestamp>> {
        match (self.rule, self.calendar) {
            (RepeatRule::Every(interval), None) => Ok(checked_add(occurrence, *interval)),
            (RepeatRule::Every(interval), Some(calendar)) => working_step(calendar, occurrence, *interval).map(Some),
            (RepeatRule::Cron(rule), _) => self.open_cron_after(rule, occurrence),
        }
    }

    /// The first occurrence strictly after `t`, on the schedule `occurrence` is part
    /// of (the grid of `every` runs through it).
    pub fn next_after(&self, occurrence: Timestamp, t: Timestamp) -> Result<Option<Timestamp>> {
        match (self.rule, self.calendar) {
            (RepeatRule::Every(interval), None) => {
                let step = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
                let elapsed = t.as_millis() - occurrence.as_millis();
                // Smallest k ≥ 1 with occurrence + k·step > t. A slot past the latest
                // representable instant does not exist.
                let k = if elapsed < 0 { 1 } else { elapsed / step + 1 };
                Ok(k.checked_mul(step)
                    .and_then(|offset| occurrence.as_millis().checked_add(offset))
                    .and_then(Timestamp::try_from_millis))
            }
            (RepeatRule::Every(interval), Some(calendar)) => {
                let mut slot = occurrence;
                for _ in 0..MAX_STEPS {
                    slot = working_step(calendar, slot, *interval)?;
                    if slot > t {
                        return Ok(Some(slot));
                    }
                }
                working_step(calendar, t, *interval).map(Some)
            }
            (RepeatRule::Cron(rule), _) => self.open_cron_after(rule, occurrence.max(t)),
        }
    }

    /// The occurrences after `occurrence` that are due by `now` (at or before it):
    /// how many (at most [`MAX_STEPS`]), and the oldest of the latest `keep` of them.
    pub fn due_after(&self, occurrence: Timestamp, now: Timestamp, keep: u32) -> Result<Backlog> {
        if let (RepeatRule::Every(interval), None) = (self.rule, self.calendar) {
            let step = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
            let behind = (now.as_millis() - occurrence.as_millis()).max(0) / step;
            let count = u32::try_from(behind).unwrap_or(u32::MAX);
            let first_kept = (count > 0 && keep > 0)
                .then(|| occurrence.as_millis() + (i64::from(count.saturating_sub(keep)) + 1) * step)
                .and_then(Timestamp::try_from_millis);
            return Ok(Backlog { count, first_kept });
        }
        let mut latest = VecDeque::new();
        let (mut count, mut slot) = (0, occurrence);
        while count < MAX_STEPS {
            match self.step(slot)? {
                Some(next) if next <= now => slot = next,
                _ => break,
            }
            count += 1;
            if keep > 0 {
                if latest.len() == keep as usize {
                    latest.pop_front();
                }
                latest.push_back(slot);
            }
        }
        Ok(Backlog { count, first_kept: latest.front().copied() })
    }

    /// The first time of `rule` after `t` at which the calendar (if any) is open.
    fn open_cron_after(&self, rule: &CronRule, t: Timestamp) -> Result<Option<Timestamp>> {
        let Some(calendar) = self.calendar else { return Ok(rule.next_after(t)) };
        let mut at = t;
        for _ in 0..MAX_STEPS {
            match rule.next_after(at) {
                Some(next) if calendar.is_open(next) => return Ok(Some(next)),
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        Err(Error::invalid(
            "calendar",
            format!(
                "none of the next {MAX_STEPS} times of cron '{}' after {t} falls in the calendar's working hours",
                rule.expr()
            ),
        ))
    }
}

/// The missed occurrences of [`Occurrences::due_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// How many are due (at most [`MAX_STEPS`]).
    pub count: u32,
    /// The oldest of the latest `keep`: the next to fire when they are kept.
    pub first_kept: Option<Timestamp>,
}

/// `at + d`, `None` past the latest representable instant.
fn checked_add(at: Timestamp, d: Duration) -> Option<Timestamp> {
    let d = i64::try_from(d.as_millis()).ok()?;
    at.as_millis().checked_add(d).and_then(Timestamp::try_from_millis)
}

/// `interval` of working time after `from`: a whole number of days (`"2d"`, `"48h"`)
/// counts working days at the same working-time offset, as a delay in business time
/// does.
pub fn working_step(calendar: &Calendar, from: Timestamp, interval: Duration) -> Result<Timestamp> {
    if !interval.is_zero() && interval.as_millis().is_multiple_of(DAY.as_millis()) {
        let days = u32::try_from(interval.as_secs() / DAY.as_secs()).unwrap_or(u32::MAX);
        calendar.add_working_days(from, days)
    } else {
        calendar.add_working_time(from, interval)
    }
}

#[cfg(test)]
mod tests;
