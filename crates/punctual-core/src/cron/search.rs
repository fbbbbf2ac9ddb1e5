//! The searches every syntax shares: the next matching wall-clock time (civil time,
//! whole seconds), and from it the next due instant in a zone under one of the two
//! daylight-saving policies of the module doc.
//!
//! - [`next_instant`] walks stretches of constant UTC offset: inside one, wall-clock
//!   time and instants map one to one, so the next match is a search in civil time;
//!   the Debian rules for fixed times act only at a stretch's start (its transition).
//!   Without them (`fixed_time` false) every instant whose wall clock matches is due:
//!   both passes of a repeated hour, nothing in a skipped one.
//! - [`next_by_wall_clock`] searches wall-clock times only, from the wall clock of the
//!   instant after `t`, and reads a time that happens twice as its later instant.

use jiff::SignedDuration;
use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone};

use crate::time::Timestamp;

/// The matching times of day, as bit sets (bit `n` set: value `n` matches).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Times {
    pub(super) seconds: u64,
    pub(super) minutes: u64,
    pub(super) hours: u64,
}

/// What a syntax's parsed expression tells the searches.
pub(super) trait Calendar {
    fn times(&self) -> &Times;
    /// Whether some day of this month may match (the month field, Quartz's year field).
    fn month_matches(&self, year: i16, month: i8) -> bool;
    /// Whether the date matches (within a month that does).
    fn day_matches(&self, date: Date) -> bool;
}

/// The first matching wall-clock time at or after `from` (whole seconds), `None` when
/// there is none before the end of jiff's calendar (9999-12-31).
pub(super) fn next_civil(calendar: &impl Calendar, from: DateTime) -> Option<DateTime> {
    let times = calendar.times();
    let mut date = from.date();
    // The earliest time of day that may match on `date`.
    let mut earliest = (from.hour(), from.minute(), from.second());
    loop {
        if !calendar.month_matches(date.year(), date.month()) {
            date = next_month_start(calendar, date)?;
            earliest = (0, 0, 0);
            continue;
        }
        if calendar.day_matches(date)
            && let Some((hour, minute, second)) = first_time_from(times, earliest)
        {
            return Some(date.at(hour, minute, second, 0));
        }
        date = date.tomorrow().ok()?;
        earliest = (0, 0, 0);
    }
}

/// The first day of the next month after `date`'s that may match.
fn next_month_start(calendar: &impl Calendar, date: Date) -> Option<Date> {
    let (mut year, mut month) = (date.year(), date.month());
    loop {
        (year, month) = if month == 12 { (year.checked_add(1)?, 1) } else { (year, month + 1) };
        if year > 9999 {
            return None;
        }
        if calendar.month_matches(year, month) {
            return Date::new(year, month, 1).ok();
        }
    }
}

/// The first matching time of day at or after `(hour, minute, second)`.
fn first_time_from(times: &Times, (hour, minute, second): (i8, i8, i8)) -> Option<(i8, i8, i8)> {
    let mut h = next_bit(times.hours, hour);
    while let Some(this_hour) = h {
        let mut m = next_bit(times.minutes, if this_hour == hour { minute } else { 0 });
        while let Some(this_minute) = m {
            let s_from = if this_hour == hour && this_minute == minute { second } else { 0 };
            if let Some(s) = next_bit(times.seconds, s_from) {
                return Some((this_hour, this_minute, s));
            }
            m = next_bit(times.minutes, this_minute + 1);
        }
        h = next_bit(times.hours, this_hour + 1);
    }
    None
}

/// The lowest set bit of `set` at or above `from`.
pub(super) fn next_bit(set: u64, from: i8) -> Option<i8> {
    let from = u32::try_from(from).ok().filter(|from| *from < 64)?;
    let above = set >> from;
    // At most 63: the cast cannot truncate.
    (above != 0).then(|| (from + above.trailing_zeros()) as i8)
}

/// The first whole second strictly after `t`.
fn first_candidate(t: Timestamp) -> Option<jiff::Timestamp> {
    let first = t.as_millis().div_euclid(1000).checked_add(1)?;
    jiff::Timestamp::from_second(first).ok()
}

fn to_timestamp(instant: jiff::Timestamp) -> Option<Timestamp> {
    Timestamp::try_from_millis(instant.as_millisecond())
}

/// The first due instant strictly after `t` where every instant whose wall clock
/// matches is due, with Debian cron's rules for a `fixed_time` expression: a time
/// that happens twice is due at its first instant only, and a time the clocks skip is
/// due once at the first instant after the gap.
pub(super) fn next_instant(
    calendar: &impl Calendar,
    tz: &TimeZone,
    t: Timestamp,
    fixed_time: bool,
) -> Option<Timestamp> {
    let mut from = first_candidate(t)?;
    let nanosecond = SignedDuration::from_nanos(1);
    // One pass per stretch of constant offset, from the one holding `from`.
    loop {
        let offset = tz.to_offset(from);
        let mut civil_from = offset.to_datetime(from);
        // The stretch starts at a transition at or before `from`.
        if let Some(start) = tz.preceding(from.checked_add(nanosecond).ok()?).next() {
            let at = start.timestamp();
            let before = tz.to_offset(at.checked_sub(nanosecond).ok()?);
            if fixed_time && before < offset {
                // Clocks went forward at `at`: a fixed time in the gap is due there.
                if at == from
                    && next_civil(calendar, before.to_datetime(at)).is_some_and(|civil| civil < offset.to_datetime(at))
                {
                    return to_timestamp(at);
                }
            } else if fixed_time && before > offset {
                // Clocks went back: wall-clock times before this mark happened
                // already, at the earlier instant, where a fixed time was due.
                civil_from = civil_from.max(before.to_datetime(at));
            }
        }
        let civil = next_civil(calendar, civil_from)?;
        let instant = offset.to_timestamp(civil).ok()?;
        match tz.following(from).next() {
            // Past this stretch: the wall clock there reads otherwise.
            Some(end) if instant >= end.timestamp() => from = end.timestamp(),
            _ => return to_timestamp(instant),
        }
    }
}

/// The first due instant strictly after `t` by wall-clock time alone: the next
/// matching wall-clock time after the wall clock of the first second after `t`; a time
/// the clocks skip is never due, and one that happens twice is due at its later
/// instant only.
pub(super) fn next_by_wall_clock(calendar: &impl Calendar, tz: &TimeZone, t: Timestamp) -> Option<Timestamp> {
    let from = first_candidate(t)?;
    let mut civil = tz.to_datetime(from);
    loop {
        let found = next_civil(calendar, civil)?;
        match tz.to_ambiguous_timestamp(found).offset() {
            AmbiguousOffset::Unambiguous { offset } => return to_timestamp(offset.to_timestamp(found).ok()?),
            AmbiguousOffset::Fold { after, .. } => return to_timestamp(after.to_timestamp(found).ok()?),
            AmbiguousOffset::Gap { before, after } => {
                // Go on from the wall clock at the gap's end (read with the offset
                // before it, `found` lies within the gap's span of instants).
                let inside = before.to_timestamp(found).ok()?;
                let transition = tz.preceding(inside.checked_add(SignedDuration::from_nanos(1)).ok()?).next();
                let gap_end = transition.map(|transition| after.to_datetime(transition.timestamp()));
                let one_second_on = found.checked_add(SignedDuration::from_secs(1)).ok()?;
                civil = gap_end.filter(|end| *end > found).unwrap_or(one_second_on);
            }
        }
    }
}
