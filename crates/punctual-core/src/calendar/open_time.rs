//! The queries: whether a calendar is open, when it next opens, and instants a number
//! of working hours or working days later.
//!
//! Open time is walked as *stretches*, `[start, end)` in epoch milliseconds, date by
//! date: each date's intervals are read on its wall clock (see the module doc of
//! `calendar`), so a query costs a few zone look-ups per date it crosses, never one per
//! minute. A date's stretches may overlap a neighbour's where a daylight-saving change
//! falls near midnight, so [`Stretches`] holds them back until no later date can reach
//! them: no wall-clock time of a date is read earlier than its midnight in UTC less
//! [`MAX_OFFSET_MS`], a bound on every zone's offset. What it yields is therefore
//! sorted and disjoint, and covers exactly the union of every date's stretches.

use std::time::Duration;

use jiff::civil::{Date, Time};

use super::Calendar;
use super::spec::{DAY_MINUTES, LAST_DATE};
use crate::error::{Error, Result};
use crate::time::Timestamp;

/// A query that finds no working time in this many years after its start (or after
/// the last working time it passed) gives up with an error.
pub const MAX_CLOSED_YEARS: i16 = 5;

/// A query whose answer would lie more than this many years after its start gives up
/// with an error, so that a huge duration cannot walk to the end of time.
pub const MAX_SPAN_YEARS: i16 = 100;

/// More than any zone's UTC offset (jiff's are within ±25:59:59).
const MAX_OFFSET_MS: i64 = 26 * 3_600_000;

const DAY_MS: i64 = 86_400_000;

/// One past the latest millisecond punctual represents: stretches end there at most.
const END_OF_TIME: i64 = Timestamp::MAX.as_millis() + 1;

/// Open time, `[start, end)` in epoch milliseconds. Invariant: `start < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stretch {
    pub(super) start: i64,
    pub(super) end: i64,
}

impl Stretch {
    fn contains(self, at: i64) -> bool {
        self.start <= at && at < self.end
    }
}

impl Calendar {
    /// Whether the calendar is open at `at` (the start of an interval is open, its end
    /// closed).
    pub fn is_open(&self, at: Timestamp) -> bool {
        self.date_holding(at.as_millis()).is_some()
    }

    /// `at` when the calendar is open then, else the next instant it opens (`align:
    /// next_open`). An error when it does not open within [`MAX_CLOSED_YEARS`] years.
    pub fn next_open(&self, at: Timestamp) -> Result<Timestamp> {
        self.add_working_time(at, Duration::ZERO)
    }

    /// The instant at which `duration` of open time has passed, counting from `start`,
    /// or from the next opening when the calendar is closed at `start`; a zero
    /// duration gives [`Calendar::next_open`]. An answer that falls on a closing edge
    /// is that edge: 3 working hours from 09:00 with a lunch break from 12:00 is 12:00,
    /// not the reopening at 13:30 (it is due when the time has passed, and the time
    /// passed at 12:00). Errors, naming `calendar`: no working time within
    /// [`MAX_CLOSED_YEARS`] years; an answer more than [`MAX_SPAN_YEARS`] years on.
    pub fn add_working_time(&self, start: Timestamp, duration: Duration) -> Result<Timestamp> {
        let from = start.as_millis();
        let mut remaining = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        let mut stretches = Stretches::new(self, start);
        loop {
            let stretch = stretches.next()?;
            if stretch.end <= from {
                continue;
            }
            let begin = stretch.start.max(from);
            if remaining <= stretch.end - begin {
                return answer(begin + remaining);
            }
            remaining -= stretch.end - begin;
        }
    }

    /// `days` working days after `start`, at the same working-time offset into the
    /// day: from 10:30 on a 09:00-12:00, 13:30-18:00 day, 10:30 of the `days`-th
    /// working day on (1h30 into it). Counting starts at [`Calendar::next_open`] of
    /// `start`, so from a closed time (evening, weekend) it is the next opening, offset
    /// 0 into its day, or the reopening after a break. The answer is the open instant
    /// at that offset, so an offset that ends a stretch (3h, 12:00) gives the next
    /// opening (13:30); when the target day has no more open time than the offset
    /// (a short Friday), its closing. Zero days gives [`Calendar::next_open`]. Errors
    /// as [`Calendar::add_working_time`].
    pub fn add_working_days(&self, start: Timestamp, days: u32) -> Result<Timestamp> {
        let opening = self.next_open(start)?;
        if days == 0 {
            return Ok(opening);
        }
        let at = opening.as_millis();
        let mut stretches = Vec::new();
        let first_day = self
            .date_holding_into(at, &mut stretches)
            .expect("an open instant lies in the stretches of a date within two of its wall-clock date");
        let offset: i64 = stretches.iter().map(|s| (s.end.min(at) - s.start).max(0)).sum();
        let span_end = years_after(first_day, MAX_SPAN_YEARS);
        let (mut date, mut last_working, mut counted) = (first_day, first_day, 0);
        let mut last_closing = stretches.last().map_or(at, |s| s.end);
        while counted < days {
            date = date.tomorrow().map_err(|_| past_last_date())?;
            if date > years_after(last_working, MAX_CLOSED_YEARS) {
                return Err(no_working_time(Timestamp::from_millis(last_closing)));
            }
            if date > span_end {
                return Err(too_far(opening));
            }
            if date > LAST_DATE {
                return Err(past_last_date());
            }
            self.date_stretches(date, &mut stretches);
            if let Some(last) = stretches.last() {
                counted += 1;
                last_working = date;
                last_closing = last.end;
            }
        }
        let mut left = offset;
        for stretch in &stretches {
            if left < stretch.end - stretch.start {
                return answer(stretch.start + left);
            }
            left -= stretch.end - stretch.start;
        }
        let closing = stretches.last().expect("the target day is a working day").end;
        answer(closing)
    }

    /// The earliest date whose own stretches hold `at`, if any.
    fn date_holding(&self, at: i64) -> Option<Date> {
        self.date_holding_into(at, &mut Vec::new())
    }

    /// As [`Calendar::date_holding`], leaving that date's stretches in `stretches`. A
    /// date's wall-clock times are read as instants whose own wall-clock date is the
    /// same or the next (a gap moves them on by at most a day), and a fold moves the
    /// wall clock back by less than a day inside a stretch: the dates from two before
    /// to two after `at`'s own cover every case with a margin.
    fn date_holding_into(&self, at: i64, stretches: &mut Vec<Stretch>) -> Option<Date> {
        let wall = self.wall_date(at);
        let mut date = wall.checked_sub(jiff::Span::new().days(2)).ok()?;
        for _ in 0..5 {
            self.date_stretches(date, stretches);
            if stretches.iter().any(|s| s.contains(at)) {
                return Some(date);
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// The date on the calendar's wall clock at `at`.
    fn wall_date(&self, at: i64) -> Date {
        self.tz.to_datetime(Timestamp::from_millis(at).to_jiff()).date()
    }

    /// The open time of `date`'s own hours as instants, into `out`: sorted, disjoint
    /// (touching ones joined), none empty, within punctual's range.
    pub(super) fn date_stretches(&self, date: Date, out: &mut Vec<Stretch>) {
        out.clear();
        for hours in self.hours_on(date) {
            let (start, end) = (self.instant_of(date, hours.start), self.instant_of(date, hours.end));
            // A gap can read an end as no later than its start (02:30-03:00 on the
            // spring-forward day is 03:30 to 03:00): no open time.
            if start < end {
                out.push(Stretch { start, end });
            }
        }
        out.sort_unstable_by_key(|s| s.start);
        out.dedup_by(|next, kept| {
            let joined = next.start <= kept.end;
            if joined {
                kept.end = kept.end.max(next.end);
            }
            joined
        });
    }

    /// The instant of `minute` (1440: the next midnight) on `date`'s wall clock,
    /// disambiguated as jiff's `compatible` does, clamped to punctual's range.
    fn instant_of(&self, date: Date, minute: u16) -> i64 {
        let (date, minute) = match date.tomorrow() {
            Ok(next) if minute == DAY_MINUTES => (next, 0),
            _ => (date, minute.min(DAY_MINUTES - 1)),
        };
        // minute < 1440: a valid hour and minute.
        let time = Time::constant((minute / 60) as i8, (minute % 60) as i8, 0, 0);
        self.tz
            .to_timestamp(date.to_datetime(time))
            .map_or(END_OF_TIME, |instant| instant.as_millisecond().clamp(0, END_OF_TIME))
    }
}

/// The calendar's open time from a start on, as sorted, disjoint stretches (see the
/// module doc); an error once the bounds are passed.
struct Stretches<'c> {
    calendar: &'c Calendar,
    /// The first date whose stretches are not yet in `pending`.
    next_date: Date,
    /// No stretch of `next_date` or later starts before this.
    floor: i64,
    /// Loaded and not yet yielded: sorted, disjoint.
    pending: Vec<Stretch>,
    day: Vec<Stretch>,
    start: Timestamp,
    /// The end of the last open time found after `start` (or `start`), and the last
    /// date to look at for more.
    searching_since: i64,
    give_up_after: Date,
    span_end: Date,
}

impl<'c> Stretches<'c> {
    fn new(calendar: &'c Calendar, start: Timestamp) -> Stretches<'c> {
        let wall = calendar.wall_date(start.as_millis());
        let first = wall.checked_sub(jiff::Span::new().days(2)).unwrap_or(wall);
        Stretches {
            calendar,
            next_date: first,
            floor: utc_midnight(first) - MAX_OFFSET_MS,
            pending: Vec::new(),
            day: Vec::new(),
            start,
            searching_since: start.as_millis(),
            give_up_after: years_after(wall, MAX_CLOSED_YEARS),
            span_end: years_after(wall, MAX_SPAN_YEARS),
        }
    }

    /// The next stretch of open time. Each is final: no later date's open time
    /// overlaps or precedes it.
    fn next(&mut self) -> Result<Stretch> {
        loop {
            if let Some(first) = self.pending.first_mut()
                && first.start < self.floor
            {
                // Everything before the floor is final; a stretch that runs past it
                // (a calendar open around the clock) is yielded in parts.
                let part = Stretch { start: first.start, end: first.end.min(self.floor) };
                if first.end <= self.floor {
                    self.pending.remove(0);
                } else {
                    first.start = self.floor;
                }
                return Ok(part);
            }
            self.load_next_date()?;
        }
    }

    fn load_next_date(&mut self) -> Result<()> {
        let date = self.next_date;
        if date > self.give_up_after {
            return Err(no_working_time(Timestamp::from_millis(self.searching_since)));
        }
        if date > self.span_end {
            return Err(too_far(self.start));
        }
        if date > LAST_DATE {
            // No later date has hours: whatever is pending is final.
            if self.pending.is_empty() {
                return Err(past_last_date());
            }
            self.floor = END_OF_TIME + 1;
            return Ok(());
        }
        self.calendar.date_stretches(date, &mut self.day);
        if let Some(last) = self.day.last()
            && last.end > self.searching_since
        {
            self.searching_since = last.end;
            self.give_up_after = self.give_up_after.max(years_after(date, MAX_CLOSED_YEARS));
        }
        if !self.day.is_empty() {
            self.pending.extend_from_slice(&self.day);
            self.pending.sort_unstable_by_key(|s| s.start);
            self.pending.dedup_by(|next, kept| {
                let joined = next.start <= kept.end;
                if joined {
                    kept.end = kept.end.max(next.end);
                }
                joined
            });
        }
        self.next_date = date.tomorrow().map_err(|_| past_last_date())?;
        self.floor += DAY_MS;
        Ok(())
    }
}

/// `date` plus `years` (clamped to the last date jiff knows).
fn years_after(date: Date, years: i16) -> Date {
    date.checked_add(jiff::Span::new().years(years)).unwrap_or(Date::MAX)
}

/// Epoch milliseconds of `date`'s midnight in UTC.
fn utc_midnight(date: Date) -> i64 {
    jiff::tz::Offset::UTC.to_timestamp(date.to_datetime(Time::midnight())).map_or(0, |t| t.as_millisecond())
}

fn answer(ms: i64) -> Result<Timestamp> {
    Timestamp::try_from_millis(ms).ok_or_else(past_last_date)
}

fn no_working_time(since: Timestamp) -> Error {
    Error::invalid(
        "calendar",
        format!(
            "has no working time in the {MAX_CLOSED_YEARS} years after {since}: every date is a holiday or a \
             closed weekday"
        ),
    )
}

fn too_far(start: Timestamp) -> Error {
    Error::invalid("calendar", format!("the answer lies more than {MAX_SPAN_YEARS} years after {start}"))
}

fn past_last_date() -> Error {
    Error::invalid("calendar", format!("the answer lies after {LAST_DATE}, the last date a calendar holds"))
}
