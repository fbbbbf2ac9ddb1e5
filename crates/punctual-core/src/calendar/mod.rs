//! Working-time calendars: when a business counts time. Pure arithmetic on instants:
//! no clock, no store.
//!
//! A [`Calendar`] is an IANA zone, working hours per weekday, holidays and extra
//! working dates (调休), in the API's shape ([`CalendarSpec`]):
//! `{"tz": "Asia/Shanghai", "hours": {"mon": ["09:00-12:00", "13:30-18:00"], …},
//! "holidays": ["2026-10-01/2026-10-07", "2026-06-19"], "workdays": ["2026-09-27"]}`.
//!
//! **The hours of a date.** A holiday is closed. A working date (`workdays`) has the
//! hours its entry gives, whatever its weekday: `{"date", "hours": […]}` its own,
//! `{"date", "as": "fri"}` Friday's, and a plain date those of the *standard weekday*:
//! the weekday whose hours the most open weekdays share, the earliest (Monday first)
//! on a tie; so with Monday to Friday alike, a plain working Sunday works as they do.
//! Any other date has its weekday's hours; a weekday absent from `hours` is closed. A
//! date that is both a holiday and a working date is refused, not resolved.
//!
//! **Open time.** Each interval `HH:MM-HH:MM` of date D is the instants from its start
//! to its end read on D's wall clock in the calendar's zone (`24:00` is the next
//! midnight); the calendar is open at the union of these, closed at each end. Where a
//! daylight-saving change makes a wall-clock time ambiguous, it is read as jiff's
//! default `compatible` disambiguation does: a time in a gap with the offset before
//! the gap (Berlin's 02:30 on the spring-forward day is 03:30 summer time), a time
//! that happens twice at its first instant (an interval ending at 02:30 on the
//! fall-back day ends at the first 02:30). Hours outside the changes, such as
//! 09:00-18:00 in every zone that has them, are not affected.
//!
//! **A working day** is a date with some open time. [`Calendar::add_working_days`]
//! keeps the working-time offset into the day: the open time between the day's first
//! opening and the start.
//!
//! **Bounds.** Every query walks open stretches date by date, never minute by minute,
//! and gives up with an error naming `calendar` when it finds no working time in
//! [`MAX_CLOSED_YEARS`] years, or would answer more than [`MAX_SPAN_YEARS`] years
//! after its start: a calendar whose hours are all holidays cannot loop forever.
//!
//! Files: `spec.rs` (the API shape and its small values), `validate.rs` (spec to
//! calendar), `open_time.rs` (the queries), `ics.rs` (holidays from iCalendar),
//! `records.rs` (calendars as a store keeps them, by name and version).

mod ics;
mod open_time;
mod records;
mod spec;
mod validate;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

pub use self::open_time::{MAX_CLOSED_YEARS, MAX_SPAN_YEARS};
pub use self::records::{CalendarChange, CalendarChangeRequest, CalendarRecord, change_calendar};
pub use self::spec::{CalendarSpec, Holiday, WeekHours, WorkdaySpec};
use self::spec::{Hours, WEEKDAY_NAMES, weekday_index};
use crate::error::Result;
pub use crate::model::CalendarName;
use crate::time::Timestamp;

/// A checked working-time calendar (see the module doc). Reads and writes as its
/// [`CalendarSpec`]; built and checked by [`Calendar::new`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "CalendarSpec", into = "CalendarSpec")]
pub struct Calendar {
    tz_name: String,
    tz: TimeZone,
    /// Monday first; empty: closed.
    week: [Vec<Hours>; 7],
    /// As entered, for [`Calendar::spec`].
    holidays: Vec<Holiday>,
    /// As entered, for [`Calendar::spec`].
    workdays: Vec<Workday>,
    /// The holidays sorted, disjoint and not adjacent.
    closed: Vec<Holiday>,
    /// Each working date's hours, resolved; never empty.
    workday_hours: BTreeMap<Date, Vec<Hours>>,
    /// The weekday a plain working date stands in for; `None` when none is open.
    standard_weekday: Option<usize>,
}

/// One extra working date as entered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Workday {
    date: Date,
    hours: WorkdayHours,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum WorkdayHours {
    /// A plain date: the standard weekday's hours.
    Standard,
    /// `"as"`: that weekday's hours (index, Monday = 0).
    As(usize),
    /// `"hours"`: its own.
    Own(Vec<Hours>),
}

impl PartialEq for Calendar {
    fn eq(&self, other: &Calendar) -> bool {
        self.tz_name == other.tz_name
            && self.week == other.week
            && self.holidays == other.holidays
            && self.workdays == other.workdays
    }
}

impl Eq for Calendar {}

impl TryFrom<CalendarSpec> for Calendar {
    type Error = crate::Error;
    fn try_from(spec: CalendarSpec) -> Result<Calendar> {
        Calendar::new(spec)
    }
}

impl From<Calendar> for CalendarSpec {
    fn from(calendar: Calendar) -> CalendarSpec {
        calendar.spec()
    }
}

impl Calendar {
    /// The calendar in the API's shape, written canonically: weekdays Monday first,
    /// closed ones left out; holidays and working dates in the order entered. A spec
    /// that [`Calendar::new`] accepted in canonical form comes back equal.
    pub fn spec(&self) -> CalendarSpec {
        let write = |hours: &[Hours]| hours.iter().map(Hours::to_string).collect::<Vec<_>>();
        let hours = (0..7)
            .filter(|day| !self.week[*day].is_empty())
            .map(|day| (WEEKDAY_NAMES[day].to_owned(), write(&self.week[day])))
            .collect();
        let workdays = self
            .workdays
            .iter()
            .map(|day| {
                let (as_weekday, hours) = match &day.hours {
                    WorkdayHours::Standard => (None, None),
                    WorkdayHours::As(weekday) => (Some(WEEKDAY_NAMES[*weekday].to_owned()), None),
                    WorkdayHours::Own(hours) => (None, Some(write(hours))),
                };
                WorkdaySpec { date: day.date.to_string(), as_weekday, hours }
            })
            .collect();
        CalendarSpec {
            tz: self.tz_name.clone(),
            hours: WeekHours(hours),
            holidays: self.holidays.iter().map(Holiday::to_string).collect(),
            workdays,
        }
    }

    /// The zone's name as given.
    pub fn tz(&self) -> &str {
        &self.tz_name
    }

    /// The weekday (`"mon"` … `"sun"`) whose hours a plain working date takes (see the
    /// module doc); `None` when every weekday is closed.
    pub fn standard_weekday(&self) -> Option<&'static str> {
        self.standard_weekday.map(|day| WEEKDAY_NAMES[day])
    }

    /// The years, ascending, in which at least one holiday or working date is entered:
    /// the years whose public holidays someone has written down.
    pub fn holiday_years(&self) -> Vec<i16> {
        let mut years = BTreeSet::new();
        for holiday in &self.holidays {
            years.extend(holiday.first.year()..=holiday.last.year());
        }
        years.extend(self.workdays.iter().map(|day| day.date.year()));
        years.into_iter().collect()
    }

    /// The instant the last year of [`Calendar::holiday_years`] ends in the calendar's
    /// zone (the next 1 January, 00:00), after which no holiday is known: the server
    /// warns before it comes. `None` when nothing is entered.
    pub fn entered_until(&self) -> Option<Timestamp> {
        let last = *self.holiday_years().last()?;
        // Past year 9999 (which jiff does not reach): the end of time.
        let instant = Date::new(last + 1, 1, 1)
            .ok()
            .and_then(|date| self.tz.to_timestamp(date.to_datetime(jiff::civil::Time::midnight())).ok());
        Some(instant.map_or(Timestamp::MAX, |instant| Timestamp::from_millis(instant.as_millisecond())))
    }

    /// The all-day events of an iCalendar (RFC 5545) file as holidays: each VEVENT
    /// whose `DTSTART` is a date (`DTSTART;VALUE=DATE:20261001`) covers its start to
    /// the day before its exclusive `DTEND`, or its `DURATION` in days or weeks, or
    /// that one day. Events with a time of day and cancelled events are left out; an
    /// event that repeats (`RRULE`, `RDATE`) is refused, as its dates are not listed.
    /// Errors name `ics` and the line.
    pub fn holidays_from_ics(text: &str) -> Result<Vec<Holiday>> {
        ics::holidays(text)
    }

    /// The wall-clock hours of `date`: none on a holiday, a working date's own, else
    /// its weekday's.
    fn hours_on(&self, date: Date) -> &[Hours] {
        let after = self.closed.partition_point(|range| range.last < date);
        if self.closed.get(after).is_some_and(|range| range.contains(date)) {
            return &[];
        }
        match self.workday_hours.get(&date) {
            Some(hours) => hours,
            None => &self.week[weekday_index(date.weekday())],
        }
    }
}
