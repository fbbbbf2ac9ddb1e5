//! A brute-force reference model of punctual's cron rules, written from the documented
//! semantics (issue 14, `docs/state-machine.md`) and not from the engine's code, so a
//! differential test against `CronRule::next_after` can catch the engine and the docs
//! drifting apart.
//!
//! What it models:
//! - Syntax: 5 fields (`minute hour day month weekday`) or 6 (second first), separated by
//!   whitespace, or a nickname (`@daily`, any case). A field is a comma-separated list of
//!   `*`, `N` or `N-M` (N ≤ M), each optionally `/S` (S ≥ 1, every S-th value from the
//!   range's start); `N/S` is `N-<field max>/S`. Months and weekdays take three-letter
//!   names in any case; weekday 7 is Sunday like 0. Everything else is refused, and so
//!   is an expression that matches no date at all (`0 0 30 2 *`).
//! - Days (Vixie cron): when the day or the weekday field starts with `*`, a day must
//!   match both; when both are restricted without `*`, a day matching either is due.
//! - Daylight saving: an expression is *wildcard* when its second (6 fields), minute or
//!   hour field starts with `*`, *fixed* otherwise. A wall-clock time that occurs once is
//!   due then; one that occurs twice is due at both instants (wildcard) or the earlier
//!   only (fixed); one that never occurs is not due (wildcard) or makes the first
//!   instant after the gap due, once (fixed).
//!
//! How [`Cron::next_after`] stays obviously correct: it walks instants forward one
//! stretch of constant UTC offset at a time (the zone's transitions cut the stretches).
//! Inside a stretch wall-clock time and instants move in lockstep, so the first due
//! instant of the stretch is the first matching wall-clock time in its range, found by
//! plain nested loops over each field's values; at the start of a stretch that ends a
//! gap, the gap's wall-clock times are checked for a fixed expression. The instants are
//! visited in order, so the first one found is the answer. [`Cron::due_by_walking`] is
//! a second, slower model (every instant one minute or second at a time, remembering
//! the wall-clock times already seen) that the first is checked against.

use std::collections::HashSet;

use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

/// A parsed expression: the values of each field as bit sets (bit `v` set when value
/// `v` matches), and the flags the day and daylight-saving rules need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cron {
    /// Seconds 0–59 (only 0 for a 5-field expression).
    pub second: u64,
    /// Minutes 0–59.
    pub minute: u64,
    /// Hours 0–23.
    pub hour: u64,
    /// Days of the month 1–31.
    pub day: u64,
    /// Months 1–12.
    pub month: u64,
    /// Weekdays 0–6, Sunday = 0 (a 7 in the expression is folded onto 0).
    pub weekday: u64,
    /// The day-of-month field starts with `*`.
    pub day_star: bool,
    /// The day-of-week field starts with `*`.
    pub weekday_star: bool,
    /// A time field (second when given, minute, hour) starts with `*`.
    pub wildcard: bool,
}

/// One field's range and names.
struct Kind {
    what: &'static str,
    min: u32,
    max: u32,
    /// Three-letter names for the values from `min_name` on.
    names: &'static [&'static str],
    min_name: u32,
}

const SECOND: Kind = Kind { what: "second", min: 0, max: 59, names: &[], min_name: 0 };
const MINUTE: Kind = Kind { what: "minute", min: 0, max: 59, names: &[], min_name: 0 };
const HOUR: Kind = Kind { what: "hour", min: 0, max: 23, names: &[], min_name: 0 };
const DAY: Kind = Kind { what: "day of month", min: 1, max: 31, names: &[], min_name: 0 };
const MONTH: Kind = Kind {
    what: "month",
    min: 1,
    max: 12,
    names: &["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
    min_name: 1,
};
const WEEKDAY: Kind =
    Kind { what: "weekday", min: 0, max: 7, names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], min_name: 0 };

/// The nicknames and the expressions they stand for. Restated from the docs, not
/// taken from the engine: a model sharing the engine's table would share its mistakes.
pub const NICKNAMES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// The longest each month can be (February 29 exists in leap years).
const MONTH_DAYS: [u32; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl Cron {
    /// Parses `expr`, or says why it is refused.
    pub fn parse(expr: &str) -> Result<Cron, String> {
        let fields: Vec<&str> = expr.split_whitespace().collect();
        if let [only] = fields.as_slice()
            && only.starts_with('@')
        {
            let expanded = NICKNAMES.iter().find(|(name, _)| name.eq_ignore_ascii_case(only));
            return match expanded {
                Some((_, fields)) => Cron::parse(fields),
                None => Err(format!("unknown nickname {only}")),
            };
        }
        let (second, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 => (fields[0], &fields[1..]),
            n => return Err(format!("{n} fields, not 5 or 6")),
        };
        let [minute, hour, day, month, weekday] = [rest[0], rest[1], rest[2], rest[3], rest[4]];
        let mut weekdays = parse_field(weekday, &WEEKDAY)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        let cron = Cron {
            second: parse_field(second, &SECOND)?,
            minute: parse_field(minute, &MINUTE)?,
            hour: parse_field(hour, &HOUR)?,
            day: parse_field(day, &DAY)?,
            month: parse_field(month, &MONTH)?,
            weekday: weekdays,
            day_star: day.starts_with('*'),
            weekday_star: weekday.starts_with('*'),
            wildcard: [second, minute, hour].iter().any(|f| f.starts_with('*')),
        };
        if !cron.matches_some_date() {
            return Err("matches no date".to_string());
        }
        Ok(cron)
    }

    /// Whether some day of some year matches. With both day fields restricted any day
    /// of a matching weekday does, and every month has every weekday; otherwise a day
    /// must be a date that exists (each exists on every weekday in some year).
    pub fn matches_some_date(&self) -> bool {
        if !self.and_days() {
            return true;
        }
        (1..=12u32).any(|m| has(self.month, m) && (1..=MONTH_DAYS[m as usize]).any(|d| has(self.day, d)))
    }

    /// Whether a day must match both day fields (one of them starts with `*`).
    fn and_days(&self) -> bool {
        self.day_star || self.weekday_star
    }

    /// Whether the date matches the month and day fields.
    pub fn matches_date(&self, date: Date) -> bool {
        let month = has(self.month, date.month() as u32);
        let day = has(self.day, date.day() as u32);
        let weekday = has(self.weekday, date.weekday().to_sunday_zero_offset() as u32);
        month && if self.and_days() { day && weekday } else { day || weekday }
    }

    /// Whether the wall-clock time matches every field.
    pub fn matches(&self, c: DateTime) -> bool {
        self.matches_date(c.date())
            && has(self.hour, c.hour() as u32)
            && has(self.minute, c.minute() as u32)
            && has(self.second, c.second() as u32)
            && c.subsec_nanosecond() == 0
    }

    /// The first matching wall-clock time in `[lo, hi)` that `accept` takes, trying
    /// them in order.
    fn first_match(&self, lo: DateTime, hi: DateTime, mut accept: impl FnMut(DateTime) -> bool) -> Option<DateTime> {
        let mut date = lo.date();
        while date <= hi.date() {
            if self.matches_date(date) {
                let first_day = date == lo.date();
                for h in values(self.hour) {
                    // Only a shortcut: these times are all before `lo`.
                    if first_day && h < lo.hour() {
                        continue;
                    }
                    for m in values(self.minute) {
                        if first_day && h == lo.hour() && m < lo.minute() {
                            continue;
                        }
                        for s in values(self.second) {
                            let c = date.at(h, m, s, 0);
                            if c < lo {
                                continue;
                            }
                            if c >= hi {
                                return None;
                            }
                            if accept(c) {
                                return Some(c);
                            }
                        }
                    }
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// The earliest due instant strictly after `t` and not after `horizon`, in zone
    /// `tz`; `None` when there is none up to `horizon`.
    pub fn next_after(&self, tz: &TimeZone, t: Timestamp, horizon: Timestamp) -> Option<Timestamp> {
        // Due instants are whole seconds: the first candidate is the next one after t.
        let mut x = Timestamp::from_second(t.as_millisecond().div_euclid(1000) + 1).ok()?;
        let one = SignedDuration::from_secs(1);
        // Saturating: past jiff's latest instant nothing is due.
        let past_horizon = horizon.checked_add(one).unwrap_or(Timestamp::MAX);
        while x <= horizon {
            let offset = tz.to_offset(x);
            let before = tz.to_offset(x.checked_sub(one).ok()?);
            // x ends a gap: the wall-clock times [x + before, x + offset) never happen.
            if !self.wildcard
                && offset > before
                && self.first_match(before.to_datetime(x), offset.to_datetime(x), |_| true).is_some()
            {
                return Some(x);
            }
            let end = tz.following(x).next().map_or(past_horizon, |tr| tr.timestamp()).min(past_horizon);
            // In [x, end) the offset is constant: instant = wall-clock time - offset.
            let found = self.first_match(offset.to_datetime(x), offset.to_datetime(end), |c| {
                self.wildcard || earliest_instant(tz, c) == instant(offset, c)
            });
            if let Some(c) = found {
                // (The stretch may end up to a second past a horizon between seconds.)
                return Some(instant(offset, c)).filter(|&due| due <= horizon);
            }
            x = end;
        }
        None
    }

    /// Every due instant in `[from, to]`, found the slow way: visit every instant one
    /// minute apart (one second when the expression names seconds other than 0) from
    /// two hours before `from`, and remember the wall-clock times seen. An instant is
    /// due when its wall-clock time matches and (wildcard) always or (fixed) it was not
    /// seen before; or, fixed, when the wall-clock time jumped forward from the previous
    /// instant over a matching time. Assumes whole-minute offsets and folds of two hours
    /// at most (true of the zones and years the tests use).
    pub fn due_by_walking(&self, tz: &TimeZone, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
        let unit: i64 = if self.second == 1 { 60 } else { 1 };
        let step = SignedDuration::from_secs(unit);
        let start = (from.as_second() - 2 * 3600).div_euclid(unit) * unit;
        let mut x = Timestamp::from_second(start).expect("a representable instant");
        let mut seen = HashSet::new();
        let mut previous: Option<DateTime> = None;
        let mut due = Vec::new();
        while x <= to {
            let c = tz.to_datetime(x);
            let first_time = seen.insert(c);
            let mut is_due = self.matches(c) && (self.wildcard || first_time);
            if let Some(p) = previous
                && !self.wildcard
            {
                let mut skipped = p.checked_add(step).expect("a representable time");
                while skipped < c {
                    is_due |= self.matches(skipped);
                    skipped = skipped.checked_add(step).expect("a representable time");
                }
            }
            if is_due && x >= from {
                due.push(x);
            }
            previous = Some(c);
            x = x.checked_add(step).expect("a representable instant");
        }
        due
    }
}

/// The instant of wall-clock time `c` at `offset`.
fn instant(offset: Offset, c: DateTime) -> Timestamp {
    offset.to_timestamp(c).expect("a representable instant")
}

/// The earliest instant at which wall-clock time `c` happens in `tz` (it happens).
fn earliest_instant(tz: &TimeZone, c: DateTime) -> Timestamp {
    match tz.to_ambiguous_timestamp(c).offset() {
        AmbiguousOffset::Unambiguous { offset } => instant(offset, c),
        AmbiguousOffset::Fold { before, after } => instant(before, c).min(instant(after, c)),
        AmbiguousOffset::Gap { .. } => panic!("{c} was seen on a clock, yet the zone says it never happens"),
    }
}

fn has(set: u64, value: u32) -> bool {
    value < 64 && set & (1 << value) != 0
}

/// The values in `set`, ascending.
fn values(set: u64) -> impl Iterator<Item = i8> {
    (0..64i8).filter(move |&v| set & (1 << v) != 0)
}

/// One field: a comma-separated list of `*`, `N`, `N-M`, each with an optional `/S`.
fn parse_field(text: &str, kind: &Kind) -> Result<u64, String> {
    let mut set = 0u64;
    for element in text.split(',') {
        let (range, step) = match element.split_once('/') {
            Some((range, step)) => (range, Some(number(step).filter(|&s| s >= 1).ok_or(format!("bad step {step:?}"))?)),
            None => (element, None),
        };
        let (lo, hi) = if range == "*" {
            (kind.min, kind.max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(a, kind)?, value(b, kind)?);
            if a > b {
                return Err(format!("reversed {} range {range}", kind.what));
            }
            (a, b)
        } else {
            let v = value(range, kind)?;
            (v, if step.is_some() { kind.max } else { v })
        };
        let step = step.unwrap_or(1);
        let mut v = lo;
        while v <= hi {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

/// Digits only, as a number (`None` when empty, not digits or too large).
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A number in the field's range, or one of its names.
fn value(text: &str, kind: &Kind) -> Result<u32, String> {
    if let Some(n) = number(text) {
        return if (kind.min..=kind.max).contains(&n) {
            Ok(n)
        } else {
            Err(format!("{} {n} is outside {} to {}", kind.what, kind.min, kind.max))
        };
    }
    let index = kind.names.iter().position(|name| name.eq_ignore_ascii_case(text));
    match index {
        Some(i) => Ok(kind.min_name + i as u32),
        None => Err(format!("bad {} {text:?}", kind.what)),
    }
}

/// The transition instants of `tz` from the start of `from_year` to the end of
/// `to_year` (UTC), where the offset changes.
pub fn transitions(tz: &TimeZone, from_year: i16, to_year: i16) -> Vec<Timestamp> {
    let start = jiff::civil::date(from_year, 1, 1).to_zoned(TimeZone::UTC).expect("a date").timestamp();
    let end = jiff::civil::date(to_year + 1, 1, 1).to_zoned(TimeZone::UTC).expect("a date").timestamp();
    let second = SignedDuration::from_secs(1);
    tz.following(start)
        .map(|tr| tr.timestamp())
        .take_while(|&at| at < end)
        .filter(|&at| tz.to_offset(at) != tz.to_offset(at - second))
        .collect()
}
