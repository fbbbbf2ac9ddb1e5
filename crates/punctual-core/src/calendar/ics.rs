//! Holidays from an iCalendar file (RFC 5545), as published by governments and
//! calendar services: each all-day VEVENT becomes a [`Holiday`].
//!
//! Our own small reader, not a crate: the maintained one (`icalendar`) brings chrono,
//! nom and uuid into the core for what is, here, unfolding lines, nesting
//! `BEGIN`/`END` and three properties of a VEVENT. What it reads:
//!
//! - Lines end with CRLF or LF; a line that starts with a space or a tab continues the
//!   one before (RFC 5545 §3.1, "unfolding"), its first character dropped.
//! - `NAME;PARAM=VALUE;…:value`, parameter values possibly quoted (`"a;b:c"`); names
//!   and parameter names in any case.
//! - In a VEVENT (not in components nested in it, such as VALARM): `DTSTART` with a
//!   date (`VALUE=DATE`, or eight digits alone) makes an all-day event; `DTEND` is
//!   exclusive (`DTSTART:20261001`, `DTEND:20261008` is 1 to 7 October), or `DURATION`
//!   in days or weeks (`P7D`, `P1W`), or neither: that one day. A `DTEND` equal to
//!   `DTSTART`, which some producers write for one day, is read as that day.
//! - Left out: events at a time of day (not holidays), `STATUS:CANCELLED` ones.
//!   Refused: an all-day event that repeats (`RRULE`, `RDATE`), since its dates are
//!   not listed, and anything malformed, with the line.
//!
//! Every all-day event is a holiday: a file that also lists adjusted working days
//! (补班) as events must have them left out, or given as `workdays`.

use jiff::civil::Date;

use super::spec::{FIRST_DATE, Holiday, LAST_DATE};
use crate::error::{Error, Result};

/// The holidays of `text`, in the order of their events.
pub(super) fn holidays(text: &str) -> Result<Vec<Holiday>> {
    let mut holidays = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut event: Option<Event> = None;
    for (line, content) in unfold(text) {
        if content.trim().is_empty() {
            continue;
        }
        let property = Property::parse(&content).map_err(|reason| invalid(line, reason))?;
        match property.name.as_str() {
            "BEGIN" => {
                let component = property.value.trim().to_ascii_uppercase();
                if component == "VEVENT" {
                    event = Some(Event { line, ..Event::default() });
                }
                open.push((component, line));
            }
            "END" => {
                let component = property.value.trim().to_ascii_uppercase();
                match open.pop() {
                    Some((begun, _)) if begun == component => {}
                    Some((begun, begun_at)) => {
                        return Err(invalid(line, format!("END:{component} closes BEGIN:{begun} of line {begun_at}")));
                    }
                    None => return Err(invalid(line, format!("END:{component} has no BEGIN"))),
                }
                if component == "VEVENT"
                    && let Some(done) = event.take()
                    && let Some(holiday) = done.holiday()?
                {
                    holidays.push(holiday);
                }
            }
            _ if open.last().is_some_and(|(component, _)| component == "VEVENT") => {
                if let Some(event) = event.as_mut() {
                    event.record(line, property);
                }
            }
            _ => {}
        }
    }
    if let Some((component, line)) = open.pop() {
        return Err(invalid(line, format!("BEGIN:{component} is never closed by END:{component}")));
    }
    Ok(holidays)
}

fn invalid(line: usize, reason: impl std::fmt::Display) -> Error {
    Error::invalid("ics", format!("line {line}: {reason}"))
}

/// The logical lines of `text`, folded ones joined, each with the number of its first
/// physical line (from 1).
fn unfold(text: &str) -> Vec<(usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (index, physical) in text.split('\n').enumerate() {
        let physical = physical.strip_suffix('\r').unwrap_or(physical);
        match (physical.strip_prefix([' ', '\t']), lines.last_mut()) {
            (Some(continuation), Some((_, logical))) => logical.push_str(continuation),
            _ => lines.push((index + 1, physical.to_owned())),
        }
    }
    lines
}

/// One content line: `NAME;PARAM=VALUE:value`.
#[derive(Debug)]
struct Property {
    /// Upper case.
    name: String,
    /// Names in upper case, values unquoted.
    params: Vec<(String, String)>,
    value: String,
}

impl Property {
    fn parse(line: &str) -> std::result::Result<Property, String> {
        // The value starts after the first colon outside quotes.
        let mut quoted = false;
        let mut colon = None;
        let mut separators = Vec::new();
        for (at, c) in line.char_indices() {
            match c {
                '"' => quoted = !quoted,
                ';' if !quoted => separators.push(at),
                ':' if !quoted => {
                    colon = Some(at);
                    break;
                }
                _ => {}
            }
        }
        let colon = colon.ok_or_else(|| format!("'{line}' is not NAME:value (no ':')"))?;
        let mut bounds = separators;
        bounds.push(colon);
        let name = line[..bounds[0]].trim().to_ascii_uppercase();
        if name.is_empty() {
            return Err(format!("'{line}' has no property name before ':'"));
        }
        let params = bounds
            .windows(2)
            .map(|pair| {
                let param = &line[pair[0] + 1..pair[1]];
                let (key, value) =
                    param.split_once('=').ok_or_else(|| format!("parameter '{param}' is not NAME=value"))?;
                Ok((key.trim().to_ascii_uppercase(), value.trim().trim_matches('"').to_owned()))
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        Ok(Property { name, params, value: line[colon + 1..].to_owned() })
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// What a VEVENT said, with the line of each property.
#[derive(Debug, Default)]
struct Event {
    /// The line of its `BEGIN:VEVENT`.
    line: usize,
    start: Option<(usize, Property)>,
    end: Option<(usize, Property)>,
    duration: Option<(usize, Property)>,
    repeats: Option<(usize, String)>,
    cancelled: bool,
    summary: Option<String>,
}

impl Event {
    fn record(&mut self, line: usize, property: Property) {
        match property.name.as_str() {
            "DTSTART" => self.start = Some((line, property)),
            "DTEND" => self.end = Some((line, property)),
            "DURATION" => self.duration = Some((line, property)),
            "RRULE" | "RDATE" => self.repeats = Some((line, property.name)),
            "STATUS" => self.cancelled = property.value.trim().eq_ignore_ascii_case("CANCELLED"),
            "SUMMARY" => self.summary = Some(property.value.replace("\\,", ",").replace("\\;", ";")),
            _ => {}
        }
    }

    /// The event's dates, `None` for an event at a time of day or a cancelled one.
    fn holiday(self) -> Result<Option<Holiday>> {
        let name = match &self.summary {
            Some(summary) => format!("VEVENT '{summary}' of line {}", self.line),
            None => format!("VEVENT of line {}", self.line),
        };
        let (start_line, start) =
            self.start.as_ref().ok_or_else(|| invalid(self.line, format!("{name} has no DTSTART")))?;
        let Some(first) = date_value(start).map_err(|reason| invalid(*start_line, reason))? else {
            return Ok(None);
        };
        if self.cancelled {
            return Ok(None);
        }
        if let Some((line, property)) = &self.repeats {
            return Err(invalid(
                *line,
                format!("{name} repeats ({property}): list each holiday's dates as an event of its own"),
            ));
        }
        let last = match (&self.end, &self.duration) {
            (Some(_), Some((line, _))) => {
                return Err(invalid(*line, format!("{name} has both DTEND and DURATION: give one")));
            }
            (Some((line, end)), None) => {
                let end = date_value(end)
                    .map_err(|reason| invalid(*line, reason))?
                    .ok_or_else(|| invalid(*line, format!("{name} starts on a date but DTEND is a time of day")))?;
                if end < first {
                    return Err(invalid(*line, format!("{name} ends ({end}) before it starts ({first})")));
                }
                // DTEND is exclusive; equal to DTSTART, it stands for that one day.
                if end == first { first } else { end.yesterday().map_err(|e| invalid(*line, e))? }
            }
            (None, Some((line, duration))) => {
                let days = whole_days(duration.value.trim()).map_err(|reason| invalid(*line, reason))?;
                first.checked_add(jiff::Span::new().days(days - 1)).map_err(|e| invalid(*line, e))?
            }
            (None, None) => first,
        };
        for (date, line) in [(first, *start_line), (last, self.line)] {
            if !(FIRST_DATE..=LAST_DATE).contains(&date) {
                return Err(invalid(
                    line,
                    format!("{name} covers {date}, outside the dates a calendar holds, {FIRST_DATE} to {LAST_DATE}"),
                ));
            }
        }
        Ok(Some(Holiday { first, last }))
    }
}

/// A `DTSTART` or `DTEND` as a date; `None` when it is a date and time.
fn date_value(property: &Property) -> std::result::Result<Option<Date>, String> {
    let value = property.value.trim();
    let declared_date = property.param("VALUE").is_some_and(|kind| kind.eq_ignore_ascii_case("DATE"));
    if value.contains(['T', 't']) {
        if declared_date {
            return Err(format!("{} is VALUE=DATE but '{value}' has a time of day", property.name));
        }
        return Ok(None);
    }
    let digits = value.len() == 8 && value.bytes().all(|b| b.is_ascii_digit());
    let number = |range: std::ops::Range<usize>| value[range].parse::<i16>().ok();
    digits
        .then(|| Date::new(number(0..4)?, i8::try_from(number(4..6)?).ok()?, i8::try_from(number(6..8)?).ok()?).ok())
        .flatten()
        .map(Some)
        .ok_or_else(|| format!("{} '{value}' is not a date (YYYYMMDD) or a date and time", property.name))
}

/// An all-day event's `DURATION`, `P<n>D` or `P<n>W` (an optional `+`), in days.
fn whole_days(value: &str) -> std::result::Result<i64, String> {
    let wrong = || format!("DURATION '{value}' of an all-day event: give whole days (P1D) or weeks (P1W)");
    let body = value.strip_prefix('+').unwrap_or(value).strip_prefix(['P', 'p']).ok_or_else(wrong)?;
    let (number, unit) = body.split_at(body.len().saturating_sub(1));
    let count: i64 = number.parse().map_err(|_| wrong())?;
    let days = match unit {
        "D" | "d" => count,
        "W" | "w" => count.checked_mul(7).ok_or_else(wrong)?,
        _ => return Err(wrong()),
    };
    if !(1..=366 * 10).contains(&days) {
        return Err(format!("DURATION '{value}' of an all-day event: from 1 day to 10 years"));
    }
    Ok(days)
}
