//! Cron rules: Vixie cron's syntax and day rule, Debian cron's daylight-saving rules,
//! in an IANA time zone. Pure: no clock.
//!
//! Our own code, not a crate's, because these semantics are the product's promise
//! (`docs/state-machine.md`) and the crate we used differed from it: it ORed the day
//! fields when one was `*/n`, fired a repeated wall-clock time twice for `0 1-3 * * *`
//! and dropped a skipped one for `0 1,2 * * *`, and accepted a year field.
//!
//! - **Syntax**: 5 fields (`minute hour day month weekday`) or 6 (`second` first), or
//!   a nickname (`@daily` …). Each field is a list of `*`, `N` or `N-M`, each with an
//!   optional `/step`; `N/step` is `N-max/step`. Months and weekdays take names.
//! - **Days** (Vixie): when the day-of-month or the day-of-week field starts with `*`,
//!   a day must match both; when both are restricted otherwise, either.
//! - **Daylight saving** (Debian cron): an expression is *wildcard* when one of its
//!   time fields (second, minute, hour) starts with `*`, *fixed* otherwise. A wall-clock
//!   time that happens twice is due at both instants for a wildcard expression and at
//!   the earlier only for a fixed one; a time that never happens is skipped by a
//!   wildcard expression, and a fixed one is due once at the first instant after the
//!   gap, however many of its times the gap held.
//!
//! The search works on stretches of constant UTC offset: inside one, wall-clock time
//! and instants map one to one, so the next match is a search in civil time; the
//! rules above only act at a stretch's start (its transition).

use std::fmt;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

use crate::error::{Error, Result};
use crate::time::Timestamp;

/// A parsed cron expression with its zone.
#[derive(Clone)]
pub struct CronRule {
    expr: String,
    tz_name: String,
    tz: TimeZone,
    fields: Fields,
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

/// The matching values of each field, as bit sets (bit `n` set: value `n` matches).
#[derive(Debug, Clone, PartialEq)]
struct Fields {
    seconds: u64,
    minutes: u64,
    hours: u64,
    /// Bits 1–31.
    days: u64,
    /// Bits 1–12.
    months: u64,
    /// Bits 0–6, Sunday = 0.
    weekdays: u64,
    /// Vixie's rule: a day must match both day fields (one of them starts with `*`),
    /// rather than either.
    days_and_weekdays: bool,
    /// Debian cron's rule: no time field starts with `*`, so the expression names
    /// particular times of day, which daylight-saving changes must neither repeat nor
    /// drop.
    fixed_time: bool,
}

/// How one field is written and what it may hold.
struct FieldKind {
    name: &'static str,
    min: u32,
    max: u32,
    /// Three-letter names for `min`, `min + 1`, … (months, weekdays).
    names: &'static [&'static str],
}

const SECOND: FieldKind = FieldKind { name: "second", min: 0, max: 59, names: &[] };
const MINUTE: FieldKind = FieldKind { name: "minute", min: 0, max: 59, names: &[] };
const HOUR: FieldKind = FieldKind { name: "hour", min: 0, max: 23, names: &[] };
const DAY: FieldKind = FieldKind { name: "day-of-month", min: 1, max: 31, names: &[] };
const MONTH: FieldKind = FieldKind {
    name: "month",
    min: 1,
    max: 12,
    names: &["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
};
/// 0–7: both 0 and 7 are Sunday.
const WEEKDAY: FieldKind =
    FieldKind { name: "day-of-week", min: 0, max: 7, names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] };

/// The nicknames Vixie cron accepts (but `@reboot`), and what they stand for.
const NICKNAMES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

impl CronRule {
    /// Parses a 5-field (`min hour day month weekday`) or 6-field (seconds first) cron
    /// expression, or a nickname (`@daily`), in the IANA zone `tz` (e.g.
    /// `Asia/Shanghai`; `UTC`). Errors name `repeat.cron` or `repeat.tz`.
    pub fn new(expr: &str, tz: &str) -> Result<CronRule> {
        let fields =
            Fields::parse(expr).map_err(|reason| Error::invalid("repeat.cron", format!("'{expr}' {reason}")))?;
        let zone = TimeZone::get(tz).map_err(|_| {
            Error::invalid("repeat.tz", format!("'{tz}' is not an IANA time zone such as Asia/Shanghai or UTC"))
        })?;
        Ok(CronRule { expr: expr.trim().to_owned(), tz_name: tz.to_owned(), tz: zone, fields })
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }
    /// The zone name as given.
    pub fn tz(&self) -> &str {
        &self.tz_name
    }

    /// The first due instant strictly after `t` (see the module doc for the
    /// daylight-saving rules), `None` when there is none before the end of time.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        // Due instants are whole seconds: the first candidate is the next one.
        let first = t.as_millis().div_euclid(1000).checked_add(1)?;
        let mut from = jiff::Timestamp::from_second(first).ok()?;
        // One pass per stretch of constant offset, from the one holding `from`.
        loop {
            let offset = self.tz.to_offset(from);
            let mut civil_from = offset.to_datetime(from);
            // The stretch starts at a transition at or before `from`.
            if let Some(start) = self.tz.preceding(from.checked_add(jiff::SignedDuration::from_nanos(1)).ok()?).next() {
                let at = start.timestamp();
                let before = self.tz.to_offset(at.checked_sub(jiff::SignedDuration::from_nanos(1)).ok()?);
                if self.fields.fixed_time && before < offset {
                    // Clocks went forward at `at`: a fixed time in the gap is due there.
                    if at == from && self.matches_between(before.to_datetime(at), offset.to_datetime(at)) {
                        return Timestamp::try_from_millis(at.as_millisecond());
                    }
                } else if self.fields.fixed_time && before > offset {
                    // Clocks went back: wall-clock times before this mark happened
                    // already, at the earlier instant, where a fixed time was due.
                    civil_from = civil_from.max(before.to_datetime(at));
                }
            }
            let civil = self.fields.next_civil(civil_from)?;
            let instant = offset.to_timestamp(civil).ok()?;
            match self.tz.following(from).next() {
                // Past this stretch: the wall clock there reads otherwise.
                Some(end) if instant >= end.timestamp() => from = end.timestamp(),
                _ => return Timestamp::try_from_millis(instant.as_millisecond()),
            }
        }
    }

    /// Whether some matching wall-clock time lies in `[from, to)`.
    fn matches_between(&self, from: DateTime, to: DateTime) -> bool {
        self.fields.next_civil(from).is_some_and(|civil| civil < to)
    }
}

impl Fields {
    /// Parses the expression; the error completes "'<expr>' …".
    fn parse(expr: &str) -> std::result::Result<Fields, String> {
        let trimmed = expr.trim();
        let expanded = if trimmed.starts_with('@') {
            let nickname = NICKNAMES.iter().find(|(name, _)| name.eq_ignore_ascii_case(trimmed));
            nickname.map(|(_, fields)| *fields).ok_or(
                "is not a cron nickname: use @yearly, @monthly, @weekly, @daily or @hourly (@reboot has no time)",
            )?
        } else {
            trimmed
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match parts.len() {
            5 => ("0", &parts[..]),
            6 => (parts[0], &parts[1..]),
            n => {
                return Err(format!(
                    "has {n} field{}: a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 \
                     (second first); there is no year field",
                    if n == 1 { "" } else { "s" }
                ));
            }
        };
        let [minute, hour, day, month, weekday] = [rest[0], rest[1], rest[2], rest[3], rest[4]];
        let mut weekdays = parse_field(weekday, &WEEKDAY)?;
        // 7 is Sunday too.
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        let fields = Fields {
            seconds: parse_field(second, &SECOND)?,
            minutes: parse_field(minute, &MINUTE)?,
            hours: parse_field(hour, &HOUR)?,
            days: parse_field(day, &DAY)?,
            months: parse_field(month, &MONTH)?,
            weekdays,
            days_and_weekdays: day.starts_with('*') || weekday.starts_with('*'),
            fixed_time: ![second, minute, hour].iter().any(|field| field.starts_with('*')),
        };
        if !fields.some_day_exists() {
            return Err("never matches a date (no month it names has such a day)".to_owned());
        }
        Ok(fields)
    }

    /// Whether some date matches. Every date falls on every weekday within 400 years,
    /// so only the day-of-month and month fields can rule every date out.
    fn some_day_exists(&self) -> bool {
        let weekdays_alone = !self.days_and_weekdays && self.weekdays != 0;
        // The longest each month can be (February: leap years).
        const LONGEST: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        (1..=12u32).any(|month| {
            self.months & (1 << month) != 0
                && (weekdays_alone || (1..=LONGEST[month as usize - 1]).any(|day| self.days & (1 << day) != 0))
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.days_and_weekdays { day && weekday } else { day || weekday }
    }

    /// The first matching wall-clock time at or after `from` (whole seconds), `None`
    /// when there is none before the end of jiff's calendar (9999-12-31).
    fn next_civil(&self, from: DateTime) -> Option<DateTime> {
        let mut date = from.date();
        // The earliest time of day that may match on `date`.
        let mut earliest = (from.hour(), from.minute(), from.second());
        loop {
            if self.months & (1 << date.month()) == 0 {
                date = self.next_month_start(date)?;
                earliest = (0, 0, 0);
                continue;
            }
            if self.day_matches(date)
                && let Some((hour, minute, second)) = self.first_time_from(earliest)
            {
                return Some(date.at(hour, minute, second, 0));
            }
            date = date.tomorrow().ok()?;
            earliest = (0, 0, 0);
        }
    }

    /// The first day of the next month after `date`'s that matches.
    fn next_month_start(&self, date: Date) -> Option<Date> {
        let (mut year, mut month) = (date.year(), date.month());
        loop {
            (year, month) = if month == 12 { (year.checked_add(1)?, 1) } else { (year, month + 1) };
            if self.months & (1 << month) != 0 {
                return Date::new(year, month, 1).ok();
            }
        }
    }

    /// The first matching time of day at or after `(hour, minute, second)`.
    fn first_time_from(&self, (hour, minute, second): (i8, i8, i8)) -> Option<(i8, i8, i8)> {
        let mut h = next_bit(self.hours, hour);
        while let Some(this_hour) = h {
            let mut m = next_bit(self.minutes, if this_hour == hour { minute } else { 0 });
            while let Some(this_minute) = m {
                let s_from = if this_hour == hour && this_minute == minute { second } else { 0 };
                if let Some(s) = next_bit(self.seconds, s_from) {
                    return Some((this_hour, this_minute, s));
                }
                m = next_bit(self.minutes, this_minute + 1);
            }
            h = next_bit(self.hours, this_hour + 1);
        }
        None
    }
}

/// The lowest set bit of `set` at or above `from`.
fn next_bit(set: u64, from: i8) -> Option<i8> {
    let from = u32::try_from(from).ok().filter(|from| *from < 64)?;
    let above = set >> from;
    // At most 63: the cast cannot truncate.
    (above != 0).then(|| (from + above.trailing_zeros()) as i8)
}

/// Parses one field into a bit set of its values; the error completes "'<expr>' …".
fn parse_field(text: &str, kind: &FieldKind) -> std::result::Result<u64, String> {
    let mut set = 0u64;
    for item in text.split(',') {
        let refuse = |why: &str| format!("has '{text}' in the {} field: {why}", kind.name);
        if item.is_empty() {
            return Err(refuse("an empty item in the list"));
        }
        if let Some(symbol) = item.chars().find(|c| matches!(c, '?' | '#')) {
            return Err(refuse(&quartz(symbol)));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|step| *step >= 1)
                    .ok_or_else(|| refuse(&format!("'{step}' is not a step: use a whole number of at least 1")))?;
                (range, Some(step))
            }
            None => (item, None),
        };
        let (low, high) = if range == "*" {
            (kind.min, kind.max)
        } else if let Some((low, high)) = range.split_once('-') {
            let (low, high) = (value(low, kind).map_err(|e| refuse(&e))?, value(high, kind).map_err(|e| refuse(&e))?);
            if low > high {
                return Err(refuse(&format!(
                    "the range {range} runs backwards: write it from low to high{}",
                    if kind.max == 7 { " (Friday to Sunday is 5-7)" } else { "" }
                )));
            }
            (low, high)
        } else {
            let single = value(range, kind).map_err(|e| refuse(&e))?;
            // `N/step` runs from N to the field's end, as `*/step` from its start.
            (single, if step.is_some() { kind.max } else { single })
        };
        for v in (low..=high).step_by(step.unwrap_or(1) as usize) {
            set |= 1 << v;
        }
    }
    Ok(set)
}

fn quartz(symbol: char) -> String {
    format!("'{symbol}' is not Vixie cron syntax (use *, numbers, names, ranges N-M, lists and steps /N)")
}

/// One value of a field: a number in range, or a name where the field has them.
fn value(text: &str, kind: &FieldKind) -> std::result::Result<u32, String> {
    let named = kind.names.iter().position(|name| name.eq_ignore_ascii_case(text));
    let n = match (named, text.parse::<u32>()) {
        (Some(index), _) => kind.min + index as u32,
        (None, Ok(n)) => n,
        (None, Err(_)) => {
            // Quartz's last day (`L`, `5L`) and nearest weekday (`15W`).
            if let Some(symbol) = text.chars().find(|c| matches!(c, 'L' | 'l' | 'W' | 'w'))
                && text.chars().all(|c| c.is_ascii_digit() || matches!(c, 'L' | 'l' | 'W' | 'w'))
            {
                return Err(quartz(symbol.to_ascii_uppercase()));
            }
            let names = match kind.names {
                [] => String::new(),
                names => format!(" or a name {}–{}", names[0], names[names.len() - 1]),
            };
            return Err(format!("'{text}' is not a number {}–{}{names}", kind.min, kind.max));
        }
    };
    if !(kind.min..=kind.max).contains(&n) {
        return Err(format!("{n} is outside {}–{}", kind.min, kind.max));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn next(expr: &str, tz: &str, t: &str) -> Option<Timestamp> {
        CronRule::new(expr, tz).unwrap().next_after(at(t))
    }

    fn refusal(expr: &str) -> String {
        CronRule::new(expr, "UTC").unwrap_err().to_string()
    }

    #[test]
    fn a_star_prefixed_day_field_ands_the_day_fields() {
        // Was daily from 2026-12-01: Vixie ANDs when a day field starts with `*`.
        assert_eq!(next("0 0 1 * */1", "UTC", "2026-12-01T00:00:00Z"), Some(at("2027-01-01T00:00:00Z")));
        // Mondays only; 2026-12-07 is a Monday.
        assert_eq!(next("0 0 */1 * 1", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
        // Odd days that are Mondays: the 7th is odd.
        assert_eq!(next("0 0 */2 * MON", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
        // Both restricted without `*`: either. Tuesday 2026-12-01 is neither the 15th
        // nor a Monday; Monday the 7th comes first.
        assert_eq!(next("0 0 15 * MON", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
        assert_eq!(next("0 0 15 * MON", "UTC", "2026-12-14T00:00:00Z"), Some(at("2026-12-15T00:00:00Z")));
    }

    #[test]
    fn fixed_times_fire_once_across_a_fall_back() {
        // 01:10 EDT on the day New York falls back; 01:00–02:00 happens twice.
        // Was 01:00 EST (06:00Z): a second run of 01:00.
        assert_eq!(next("0 1-3 * * *", "America/New_York", "2026-11-01T05:10:00Z"), Some(at("2026-11-01T07:00:00Z")));
        // From inside the second pass too.
        assert_eq!(next("30 1 * * *", "America/New_York", "2026-11-01T06:10:00Z"), Some(at("2026-11-02T06:30:00Z")));
        // A wildcard expression runs at both 01:30s (Debian cron).
        assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T05:10:00Z"), Some(at("2026-11-01T05:30:00Z")));
        assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T05:30:00Z"), Some(at("2026-11-01T06:00:00Z")));
        assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T06:00:00Z"), Some(at("2026-11-01T06:30:00Z")));
    }

    #[test]
    fn fixed_times_in_a_spring_forward_gap_fire_after_it() {
        // 01:10 EST; 02:00–03:00 does not happen. Was March 9 at 01:00.
        let ny = "America/New_York";
        assert_eq!(next("0 1,2 * * *", ny, "2026-03-08T06:10:00Z"), Some(at("2026-03-08T07:00:00Z")));
        assert_eq!(next("0 1,2 * * *", ny, "2026-03-08T07:00:00Z"), Some(at("2026-03-09T05:00:00Z")));
        // Two skipped times fire once; a match at the gap's end is the same firing.
        assert_eq!(next("0,30 2-3 * * *", ny, "2026-03-08T06:10:00Z"), Some(at("2026-03-08T07:00:00Z")));
        assert_eq!(next("0,30 2-3 * * *", ny, "2026-03-08T07:00:00Z"), Some(at("2026-03-08T07:30:00Z")));
        // Wildcard expressions skip the gap.
        assert_eq!(next("30 * * * *", ny, "2026-03-08T06:40:00Z"), Some(at("2026-03-08T07:30:00Z")));
        // Lord Howe moves 30 minutes: 02:00–02:30 is skipped on 2026-10-04.
        let lh = "Australia/Lord_Howe";
        assert_eq!(next("0,30 1-2 * * *", lh, "2026-10-03T15:10:00Z"), Some(at("2026-10-03T15:30:00Z")));
        // London: 01:00–02:00 skipped on 2026-03-29; `1-23/2` names 01:00.
        assert_eq!(next("0 1-23/2 * * *", "Europe/London", "2026-03-29T00:30:00Z"), Some(at("2026-03-29T01:00:00Z")));
    }

    #[test]
    fn seconds_nicknames_names_and_steps() {
        assert_eq!(next("*/20 * * * * *", "UTC", "2026-12-01T00:00:00.500Z"), Some(at("2026-12-01T00:00:20Z")));
        assert_eq!(next("@daily", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-02T00:00:00Z")));
        assert_eq!(next("@HOURLY", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-01T01:00:00Z")));
        assert_eq!(next("0 9 * jan-mar mon-fri", "UTC", "2026-12-01T00:00:00Z"), Some(at("2027-01-01T09:00:00Z")));
        // `N/step` runs to the field's end; Sunday is 0 and 7.
        assert_eq!(next("50/5 * * * *", "UTC", "2026-12-01T00:56:00Z"), Some(at("2026-12-01T01:50:00Z")));
        assert_eq!(next("0 0 * * 7", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-06T00:00:00Z")));
        assert_eq!(next("0 0 * * 5-7", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-04T00:00:00Z")));
        // Leap days, years apart.
        assert_eq!(next("0 0 29 2 *", "UTC", "2026-12-01T00:00:00Z"), Some(at("2028-02-29T00:00:00Z")));
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        assert!(refusal("0 0 0 1 1 * 1999").contains("7 fields"), "{}", refusal("0 0 0 1 1 * 1999"));
        assert!(refusal("* * * * * * *").contains("no year field"));
        assert!(refusal("* * * *").contains("4 fields"));
        assert!(refusal("1,,2 * * * *").contains("empty item"));
        assert!(refusal("61 * * * *").contains("outside 0–59"));
        assert!(refusal("0 0 * * 5-1").contains("backwards"));
        assert!(refusal("*/0 * * * *").contains("step"));
        assert!(refusal("0 0 L * *").contains("'L' is not Vixie"));
        assert!(refusal("0 0 ? * *").contains("'?' is not Vixie"));
        assert!(refusal("0 0 * * MON#2").contains("'#' is not Vixie"));
        assert!(refusal("0 0 * * FUN").contains("not a number 0–7 or a name SUN–SAT"));
        assert!(refusal("0 0 30 2 *").contains("never matches"));
        assert!(refusal("0 0 31 4,6,9,11 *").contains("never matches"));
        assert!(refusal("@reboot").contains("nickname"));
        // Restricted weekdays in OR mode make February 30 reachable: its Mondays.
        assert!(CronRule::new("0 0 30 2 1", "UTC").is_ok());
        assert_eq!(CronRule::new("0 9 * * *", "Mars/Olympus").unwrap_err().field(), Some("repeat.tz"));
    }

    #[test]
    fn the_end_of_time_has_no_next_occurrence() {
        assert_eq!(next("* * * * *", "UTC", "9999-12-30T21:59:00Z"), Some(at("9999-12-30T22:00:00Z")));
        assert_eq!(next("* * * * *", "UTC", "9999-12-30T22:00:00Z"), None);
        assert_eq!(next("0 0 1 1 *", "Asia/Shanghai", "9999-06-01T00:00:00Z"), None);
        assert_eq!(CronRule::new("* * * * *", "UTC").unwrap().next_after(Timestamp::from_millis(i64::MAX)), None);
    }
}
