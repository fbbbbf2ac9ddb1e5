//! From [`CalendarSpec`] to [`Calendar`]: every field checked, each error naming the
//! field to fix (`hours.mon[1]`, `holidays[0]`, `workdays[2].as`) and how.

use std::collections::BTreeMap;

use jiff::tz::TimeZone;

use super::spec::{CalendarSpec, Holiday, Hours, WorkdaySpec, parse_date, parse_weekday};
use super::{Calendar, Workday, WorkdayHours};
use crate::error::{Error, Result};

impl Calendar {
    /// Checks `spec` and builds the calendar. Refused, with the field named: a zone
    /// that is not IANA (`tz`); an unknown or repeated weekday (`hours.xyz`); an
    /// interval that is not `HH:MM-HH:MM`, ends before it starts or overlaps the one
    /// before it, in the order given (`hours.mon[1]`); a date that is not
    /// `YYYY-MM-DD` or a range that ends before it starts (`holidays[0]`); a working
    /// date given twice or that is also a holiday, `"as"` a closed weekday, a plain
    /// working date when no weekday is open (`workdays[0]`); and a calendar with no
    /// working hours on any weekday or working date (`hours`).
    pub fn new(spec: CalendarSpec) -> Result<Calendar> {
        let tz = TimeZone::get(&spec.tz).map_err(|_| {
            Error::invalid("tz", format!("'{}' is not an IANA time zone such as Asia/Shanghai or UTC", spec.tz))
        })?;
        let week = week_hours(&spec)?;
        let holidays = spec
            .holidays
            .iter()
            .enumerate()
            .map(|(i, text)| Holiday::parse(text).map_err(|reason| Error::invalid(format!("holidays[{i}]"), reason)))
            .collect::<Result<Vec<_>>>()?;
        let workdays =
            spec.workdays.iter().enumerate().map(|(i, entry)| workday(i, entry, &week)).collect::<Result<Vec<_>>>()?;
        let standard = standard_weekday(&week);
        let mut workday_hours = BTreeMap::new();
        for (i, day) in workdays.iter().enumerate() {
            if let Some(h) = holidays.iter().position(|holiday| holiday.contains(day.date)) {
                return Err(Error::invalid(
                    format!("workdays[{i}]"),
                    format!(
                        "'{}' is also a holiday (holidays[{h}] '{}'): a date is either a holiday or a working day",
                        day.date, holidays[h]
                    ),
                ));
            }
            let hours = match &day.hours {
                WorkdayHours::Standard => {
                    let weekday = standard.ok_or_else(|| {
                        Error::invalid(
                            format!("workdays[{i}]"),
                            format!(
                                "no weekday is open for '{}' to stand in for: give its hours, e.g. \
                                 {{\"date\": \"{}\", \"hours\": [\"09:00-18:00\"]}}",
                                day.date, day.date
                            ),
                        )
                    })?;
                    week[weekday].clone()
                }
                WorkdayHours::As(weekday) => week[*weekday].clone(),
                WorkdayHours::Own(hours) => hours.clone(),
            };
            if workday_hours.insert(day.date, hours).is_some() {
                let first = workdays.iter().position(|other| other.date == day.date).unwrap_or(i);
                return Err(Error::invalid(
                    format!("workdays[{i}]"),
                    format!("'{}' is given twice (workdays[{first}])", day.date),
                ));
            }
        }
        if week.iter().all(Vec::is_empty) && workday_hours.values().all(Vec::is_empty) {
            return Err(Error::invalid(
                "hours",
                "no day has working hours: give at least one weekday, e.g. \"mon\": [\"09:00-18:00\"]",
            ));
        }
        Ok(Calendar {
            tz_name: spec.tz,
            tz,
            week,
            closed: merged(&holidays),
            holidays,
            workdays,
            workday_hours,
            standard_weekday: standard,
        })
    }
}

/// The weekly hours, Monday first; a weekday not given is closed.
fn week_hours(spec: &CalendarSpec) -> Result<[Vec<Hours>; 7]> {
    let mut week: [Option<Vec<Hours>>; 7] = Default::default();
    for (name, texts) in &spec.hours.0 {
        let field = format!("hours.{name}");
        let weekday = parse_weekday(name).map_err(|reason| Error::invalid(&field, reason))?;
        if week[weekday].is_some() {
            return Err(Error::invalid(field, "is given twice: give each weekday once"));
        }
        week[weekday] = Some(hours_list(&field, texts)?);
    }
    Ok(week.map(Option::unwrap_or_default))
}

/// A day's intervals: each valid, in order, none overlapping the one before (touching
/// is fine: `09:00-12:00`, `12:00-13:00`).
fn hours_list(field: &str, texts: &[String]) -> Result<Vec<Hours>> {
    let mut list: Vec<Hours> = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let hours = Hours::parse(text).map_err(|reason| Error::invalid(format!("{field}[{i}]"), reason))?;
        if let Some(previous) = list.last()
            && hours.start < previous.end
        {
            return Err(Error::invalid(
                format!("{field}[{i}]"),
                format!(
                    "'{hours}' overlaps or comes before '{previous}' ({field}[{}]): list the intervals in order, \
                     without overlap",
                    i - 1
                ),
            ));
        }
        list.push(hours);
    }
    Ok(list)
}

/// One working date entry, checked on its own.
fn workday(i: usize, entry: &WorkdaySpec, week: &[Vec<Hours>; 7]) -> Result<Workday> {
    let field = format!("workdays[{i}]");
    let date = parse_date(&entry.date).map_err(|reason| Error::invalid(&field, reason))?;
    let hours = match (&entry.as_weekday, &entry.hours) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(field, "give either \"as\" (a weekday) or \"hours\", not both"));
        }
        (Some(name), None) => {
            let field = format!("{field}.as");
            let weekday = parse_weekday(name).map_err(|reason| Error::invalid(&field, reason))?;
            if week[weekday].is_empty() {
                return Err(Error::invalid(
                    field,
                    format!("'{name}' has no working hours in this calendar: name an open weekday or give \"hours\""),
                ));
            }
            WorkdayHours::As(weekday)
        }
        (None, Some(texts)) => {
            let hours = hours_list(&format!("{field}.hours"), texts)?;
            if hours.is_empty() {
                return Err(Error::invalid(
                    format!("{field}.hours"),
                    "is empty: a working day has hours (a closed date is a holiday)",
                ));
            }
            WorkdayHours::Own(hours)
        }
        (None, None) => WorkdayHours::Standard,
    };
    Ok(Workday { date, hours })
}

/// The weekday whose hours most open weekdays share, the earliest on a tie: the hours
/// a plain working date takes. `None` when every weekday is closed.
pub(super) fn standard_weekday(week: &[Vec<Hours>; 7]) -> Option<usize> {
    let sharing = |day: usize| week.iter().filter(|other| **other == week[day]).count();
    let mut best: Option<(usize, usize)> = None;
    for day in (0..7).filter(|day| !week[*day].is_empty()) {
        let count = sharing(day);
        if best.is_none_or(|(_, most)| count > most) {
            best = Some((day, count));
        }
    }
    best.map(|(day, _)| day)
}

/// The holidays as sorted, disjoint ranges, adjacent ones joined.
fn merged(holidays: &[Holiday]) -> Vec<Holiday> {
    let mut sorted = holidays.to_vec();
    sorted.sort();
    let mut out: Vec<Holiday> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match out.last_mut() {
            Some(last) if last.last.tomorrow().is_ok_and(|next| range.first <= next) => {
                last.last = last.last.max(range.last);
            }
            _ => out.push(range),
        }
    }
    out
}
