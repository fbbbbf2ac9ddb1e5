//! A calendar as the API writes it ([`CalendarSpec`]: serde, nothing checked) and the
//! small values inside it read from text: wall-clock intervals ([`Hours`], `HH:MM-HH:MM`),
//! dates and inclusive date ranges ([`Holiday`], `YYYY-MM-DD` or `start/end`) and
//! weekday names (`mon` … `sun`). Each parser answers the reason alone; the caller adds
//! the field it came from.

use std::fmt;

use jiff::civil::{Date, Weekday};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A calendar's body as PUT and GET carry it: `{"tz": …, "hours": {"mon": […], …},
/// "holidays": […], "workdays": […]}`. Checked by [`Calendar::new`](super::Calendar::new).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarSpec {
    /// An IANA time zone, e.g. `Asia/Shanghai`.
    pub tz: String,
    /// Working hours per weekday; a weekday left out is closed. Required, so that a
    /// calendar always says its week (`{}`: every weekday closed).
    pub hours: WeekHours,
    /// Dates (`2026-06-19`) and inclusive ranges (`2026-10-01/2026-10-07`) that are closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holidays: Vec<String>,
    /// Extra working dates (调休): a date, or `{"date", "as"}` or `{"date", "hours"}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workdays: Vec<WorkdaySpec>,
}

/// `{"mon": ["09:00-12:00", …], …}` in the order given: a JSON object read as a list,
/// so that a weekday given twice is refused rather than the last one kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WeekHours(pub Vec<(String, Vec<String>)>);

/// One extra working date: `"2026-09-27"` (the standard weekday's hours, see the
/// module doc of `calendar`), `{"date": "2026-09-27", "as": "fri"}` (Friday's hours) or
/// `{"date": "2026-09-27", "hours": ["09:00-12:00"]}` (its own hours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkdaySpec {
    pub date: String,
    /// The weekday whose hours the date takes (`"as"`).
    pub as_weekday: Option<String>,
    /// The date's own hours (`"hours"`).
    pub hours: Option<Vec<String>>,
}

impl Serialize for WeekHours {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (day, hours) in &self.0 {
            map.serialize_entry(day, hours)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for WeekHours {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct WeekVisitor;
        impl<'de> Visitor<'de> for WeekVisitor {
            type Value = WeekHours;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"working hours per weekday, e.g. {"mon": ["09:00-12:00", "13:30-18:00"]}"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WeekHours, A::Error> {
                let mut days = Vec::new();
                while let Some(entry) = map.next_entry::<String, Vec<String>>()? {
                    days.push(entry);
                }
                Ok(WeekHours(days))
            }
        }
        d.deserialize_map(WeekVisitor)
    }
}

impl Serialize for WorkdaySpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.as_weekday.is_none() && self.hours.is_none() {
            return s.serialize_str(&self.date);
        }
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("date", &self.date)?;
        if let Some(weekday) = &self.as_weekday {
            map.serialize_entry("as", weekday)?;
        }
        if let Some(hours) = &self.hours {
            map.serialize_entry("hours", hours)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for WorkdaySpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct WorkdayVisitor;
        impl<'de> Visitor<'de> for WorkdayVisitor {
            type Value = WorkdaySpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(concat!(
                    r#"a date ("2026-09-27"), {"date": "2026-09-27", "as": "fri"} "#,
                    r#"or {"date": "2026-09-27", "hours": ["09:00-18:00"]}"#,
                ))
            }
            fn visit_str<E: de::Error>(self, date: &str) -> Result<WorkdaySpec, E> {
                Ok(WorkdaySpec { date: date.to_owned(), as_weekday: None, hours: None })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WorkdaySpec, A::Error> {
                let (mut date, mut as_weekday, mut hours) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "date" if date.is_none() => date = Some(map.next_value()?),
                        "as" if as_weekday.is_none() => as_weekday = Some(map.next_value()?),
                        "hours" if hours.is_none() => hours = Some(map.next_value()?),
                        "date" | "as" | "hours" => return Err(de::Error::custom(format!("`{key}` is given twice"))),
                        _ => return Err(de::Error::unknown_field(&key, &["date", "as", "hours"])),
                    }
                }
                let date = date.ok_or_else(|| de::Error::missing_field("date"))?;
                Ok(WorkdaySpec { date, as_weekday, hours })
            }
        }
        d.deserialize_any(WorkdayVisitor)
    }
}

/// One wall-clock interval of a day, `[start, end)` in minutes after midnight; `end`
/// may be 1440 (`24:00`, the next midnight). Invariant: `start < end <= 1440`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Hours {
    pub(crate) start: u16,
    pub(crate) end: u16,
}

/// Minutes in a day: `24:00` as an end.
pub(crate) const DAY_MINUTES: u16 = 24 * 60;

impl Hours {
    /// Reads `HH:MM-HH:MM`: two digits each, `00:00` to `23:59`, and `24:00` as an end;
    /// the end after the start.
    pub(crate) fn parse(text: &str) -> Result<Hours, String> {
        let shape =
            || format!("'{text}' is not a time range: write HH:MM-HH:MM, e.g. 09:00-12:00 (24:00 may end the day)");
        let (start, end) = text.split_once('-').ok_or_else(shape)?;
        let start = minutes_of_day(start).ok_or_else(shape)?;
        let end = minutes_of_day(end).ok_or_else(shape)?;
        if start == DAY_MINUTES {
            return Err(format!("'{text}' starts at 24:00, the end of the day: start at 00:00 to 23:59"));
        }
        if end <= start {
            let verb = if end == start { "ends where it starts" } else { "ends before it starts" };
            return Err(format!("'{text}' {verb}; write HH:MM-HH:MM with the end after the start"));
        }
        Ok(Hours { start, end })
    }
}

impl fmt::Display for Hours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, end) = (self.start, self.end);
        write!(f, "{:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60)
    }
}

/// `HH:MM` (exactly two digits each) as minutes after midnight, `24:00` included.
fn minutes_of_day(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    if bytes.len() != 5 || bytes[2] != b':' || ![0, 1, 3, 4].iter().all(|&i| bytes[i].is_ascii_digit()) {
        return None;
    }
    let digit = |i: usize| u16::from(bytes[i] - b'0');
    let (hour, minute) = (digit(0) * 10 + digit(1), digit(3) * 10 + digit(4));
    match (hour, minute) {
        (0..=23, 0..=59) => Some(hour * 60 + minute),
        (24, 0) => Some(DAY_MINUTES),
        _ => None,
    }
}

/// An inclusive range of dates, one date when `first == last`: a holiday entry, written
/// `2026-06-19` or `2026-10-01/2026-10-07`. Invariant: `first <= last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Holiday {
    pub first: Date,
    pub last: Date,
}

/// The first date a calendar accepts: no instant of punctual's lies before 1970.
pub(crate) const FIRST_DATE: Date = jiff::civil::date(1970, 1, 1);
/// The last date a calendar accepts: its day still ends before `Timestamp::MAX`
/// (9999-12-30T22:00Z) in every zone.
pub(crate) const LAST_DATE: Date = jiff::civil::date(9999, 12, 28);

impl Holiday {
    /// Reads `YYYY-MM-DD` or `YYYY-MM-DD/YYYY-MM-DD` (inclusive, the end on or after
    /// the start).
    pub fn parse(text: &str) -> Result<Holiday, String> {
        let (first, last) = match text.split_once('/') {
            Some((first, last)) => (parse_date(first)?, parse_date(last)?),
            None => {
                let date = parse_date(text)?;
                (date, date)
            }
        };
        if last < first {
            return Err(format!("'{text}' ends before it starts: write start/end with the end on or after the start"));
        }
        Ok(Holiday { first, last })
    }

    pub(crate) fn contains(&self, date: Date) -> bool {
        self.first <= date && date <= self.last
    }
}

impl fmt::Display for Holiday {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last { write!(f, "{}", self.first) } else { write!(f, "{}/{}", self.first, self.last) }
    }
}

/// Reads `YYYY-MM-DD`, a real date from 1970-01-01 to 9999-12-28.
pub(crate) fn parse_date(text: &str) -> Result<Date, String> {
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes.iter().enumerate().all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    let number = |range: std::ops::Range<usize>| text[range].parse::<i16>().ok();
    let date = shaped
        .then(|| Date::new(number(0..4)?, i8::try_from(number(5..7)?).ok()?, i8::try_from(number(8..10)?).ok()?).ok())
        .flatten()
        .ok_or_else(|| format!("'{text}' is not a date: write YYYY-MM-DD, e.g. 2026-10-01"))?;
    if !(FIRST_DATE..=LAST_DATE).contains(&date) {
        return Err(format!("'{text}' is outside the dates a calendar holds, {FIRST_DATE} to {LAST_DATE}"));
    }
    Ok(date)
}

/// The names of the weekdays, Monday first, as `hours` and `"as"` write them.
pub(crate) const WEEKDAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// A weekday's index, Monday = 0, from its name.
pub(crate) fn parse_weekday(name: &str) -> Result<usize, String> {
    WEEKDAY_NAMES
        .iter()
        .position(|known| *known == name)
        .ok_or_else(|| format!("'{name}' is not a weekday: use mon, tue, wed, thu, fri, sat or sun"))
}

/// A date's weekday index, Monday = 0.
pub(crate) fn weekday_index(weekday: Weekday) -> usize {
    weekday.to_monday_zero_offset() as usize
}
