//! The `[calendars."name"]` tables: working-time calendars of the config file, in the
//! API's body shape (`tz`, `hours`, `holidays`, `workdays`), plus `holidays_ics`, an
//! iCalendar file whose all-day events are added to `holidays` (read at start-up and
//! at each SIGHUP, relative to the working directory). Each calendar is checked as `PUT
//! /v1/calendars/{name}` checks it; an error names the line of its table (or of
//! `holidays_ics`) and the field at fault.

use std::collections::BTreeMap;
use std::ops::Range;

use punctual_core::Calendar;
use punctual_core::calendar::{CalendarName, CalendarSpec};
use toml::Spanned;

use super::ConfigError;

/// The file's calendars, by name.
pub(super) fn calendar_tables(
    raw: &BTreeMap<Spanned<String>, Spanned<toml::Table>>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Vec<(CalendarName, Calendar)>, ConfigError> {
    let mut calendars = Vec::new();
    for (name, table) in raw {
        let calendar_name = CalendarName::new(name.get_ref().clone()).map_err(|e| at(name.span(), e.to_string()))?;
        let in_table = |message: String| at(table.span(), format!("calendar '{}': {message}", name.get_ref()));
        let mut fields = table.get_ref().clone();
        let ics = match fields.remove("holidays_ics") {
            Some(toml::Value::String(path)) => Some(path),
            Some(_) => return Err(in_table("holidays_ics names an .ics file, as a string".into())),
            None => None,
        };
        let mut spec: CalendarSpec =
            toml::Value::Table(fields).try_into().map_err(|e: toml::de::Error| in_table(e.message().to_owned()))?;
        if let Some(path) = ics {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| in_table(format!("holidays_ics: cannot read {path}: {e}")))?;
            let holidays = Calendar::holidays_from_ics(&text).map_err(|e| in_table(format!("{path}: {e}")))?;
            spec.holidays.extend(holidays.iter().map(ToString::to_string));
        }
        let calendar = Calendar::new(spec).map_err(|e| in_table(e.to_string()))?;
        calendars.push((calendar_name, calendar));
    }
    Ok(calendars)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{error_line, file};

    #[test]
    fn a_calendar_table_is_read_in_the_api_shape() {
        let text = r#"
[calendars."cn-office"]
tz = "Asia/Shanghai"
hours = { mon = ["09:00-12:00", "13:30-18:00"], fri = ["09:00-12:00"] }
holidays = ["2026-10-01/2026-10-07"]
workdays = ["2026-09-27", { date = "2026-10-10", as = "fri" }]
"#;
        let settings = file(text).unwrap();
        let [(name, calendar)] = settings.calendars.as_slice() else { panic!("one calendar") };
        assert_eq!((name.as_str(), calendar.tz()), ("cn-office", "Asia/Shanghai"));
        assert_eq!(calendar.holiday_years(), vec![2026]);
    }

    #[test]
    fn a_bad_calendar_names_its_line_and_field() {
        let (line, message) = error_line("\n[calendars.office]\ntz = \"UTC\"\nhours = { mon = [\"18:00-09:00\"] }\n");
        assert_eq!(line, Some(2), "{message}");
        assert!(message.contains("calendar 'office'") && message.contains("hours.mon[0]"), "{message}");
        let (_, message) = error_line("[calendars.office]\ntz = \"UTC\"\ncolour = \"blue\"\n");
        assert!(message.contains("colour"), "{message}");
        let (_, message) =
            error_line("[calendars.office]\ntz = \"UTC\"\nhours = {}\nholidays_ics = \"/nonexistent.ics\"\n");
        assert!(message.contains("cannot read /nonexistent.ics"), "{message}");
        let (_, message) = error_line("[calendars.\"a b\"]\ntz = \"UTC\"\n");
        assert!(message.contains("calendar name"), "{message}");
    }

    #[test]
    fn holidays_ics_adds_the_files_all_day_events() {
        let dir = tempfile::tempdir().unwrap();
        let ics = dir.path().join("cn.ics");
        let events = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20270101\r\nSUMMARY:New Year\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        std::fs::write(&ics, events).unwrap();
        let text = format!(
            "[calendars.office]\ntz = \"UTC\"\nhours = {{ mon = [\"09:00-18:00\"] }}\nholidays = [\"2026-06-19\"]\nholidays_ics = {:?}\n",
            ics.display().to_string()
        );
        let settings = file(&text).unwrap();
        assert_eq!(settings.calendars[0].1.holiday_years(), vec![2026, 2027]);
    }

    /// The example calendar of mainland China's holidays reads as the notices say.
    #[test]
    fn the_example_office_calendar_keeps_the_notices_dates() {
        let settings = file(include_str!("../../../../examples/calendars/cn-office.toml")).unwrap();
        let [(_, office)] = settings.calendars.as_slice() else { panic!("one calendar") };
        assert_eq!(office.holiday_years(), vec![2025, 2026]);
        let at = |text: &str| punctual_core::Timestamp::parse(text).unwrap();
        // A Saturday worked for the National Day week, and a Thursday inside it.
        assert!(office.is_open(at("2026-10-10T10:00:00+08:00")));
        assert!(!office.is_open(at("2026-10-01T10:00:00+08:00")));
        // Friday 2026-09-25 is 中秋节: 8 working hours from Thursday 17:00 are Thursday's
        // last hour, then Monday's morning (3 h) and 4 h of its afternoon.
        let eight_hours = std::time::Duration::from_secs(8 * 3600);
        let due = office.add_working_time(at("2026-09-24T17:00:00+08:00"), eight_hours);
        assert_eq!(due.unwrap(), at("2026-09-28T17:30:00+08:00"));
    }
}
