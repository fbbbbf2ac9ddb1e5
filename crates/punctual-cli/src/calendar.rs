//! `punctual calendar ls|get|set|rm`: working-time calendars on a running server
//! (`/v1/calendars`), with `set` reading the calendar from a JSON file and adding the
//! all-day events of an iCalendar file (`--holidays-ics`) to its holidays.

use anyhow::Result;
use punctual_core::Calendar;
use serde_json::Value;

use crate::cli::calendar::{CalendarCommand, CalendarSetArgs};
use crate::client::output::table;
use crate::client::{Method, Request, StatusCode};
use crate::render::plain;
use crate::{UsageError, connect, if_match, json, render};

pub(crate) async fn run(command: CalendarCommand) -> Result<String> {
    match command {
        CalendarCommand::Ls(args) => {
            let answer = connect(&args.client)?.get(&["v1", "calendars"], &[]).await?;
            if args.client.json {
                return Ok(json::pretty(&answer.text));
            }
            let calendars = answer.value["calendars"].as_array().cloned().unwrap_or_default();
            if calendars.is_empty() {
                return Ok("No calendars yet. Create one with: punctual calendar set NAME --file calendar.json".into());
            }
            Ok(calendar_table(&calendars))
        }
        CalendarCommand::Get(args) => {
            let answer = connect(&args.client)?.get(&["v1", "calendars", &args.name], &[]).await?;
            Ok(if args.client.json { json::pretty(&answer.text) } else { calendar_block(&answer.value) })
        }
        CalendarCommand::Set(args) => set(args).await,
        CalendarCommand::Rm(args) => {
            let client = connect(&args.client)?;
            let version = args.if_version.map(|v| v.to_string());
            let headers = if_match(version.as_deref());
            let path = ["v1", "calendars", args.name.as_str()];
            client.request(Request { headers: &headers, ..Request::new(Method::DELETE, &path) }).await?;
            Ok(format!("Removed calendar {}; tasks already scheduled keep their due times.", args.name))
        }
    }
}

/// `calendar set`: the file (with the .ics file's holidays added) `PUT`, conditional
/// with `--if-version`; says what happened, then shows the calendar.
async fn set(args: CalendarSetArgs) -> Result<String> {
    let mut body = args.file;
    if let Some(path) = &args.holidays_ics {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("cannot read the iCalendar file '{}': {e}", path.display())))?;
        let holidays = Calendar::holidays_from_ics(&text)
            .map_err(|e| UsageError(format!("the iCalendar file '{}': {e}", path.display())))?;
        let Some(fields) = body.as_object_mut() else {
            return Err(UsageError("the calendar file holds a JSON object, not another value".into()).into());
        };
        let listed = fields.entry("holidays").or_insert_with(|| Value::Array(Vec::new()));
        let Some(listed) = listed.as_array_mut() else {
            return Err(UsageError("the calendar file's holidays are a list of dates".into()).into());
        };
        listed.extend(holidays.iter().map(|holiday| Value::String(holiday.to_string())));
    }
    let client = connect(&args.client)?;
    let version = args.if_version.map(|v| v.to_string());
    let headers = if_match(version.as_deref());
    let path = ["v1", "calendars", args.name.as_str()];
    let answer = client.request(Request { body: Some(&body), headers: &headers, ..Request::new(Method::PUT, &path) });
    let answer = answer.await?;
    let status = answer.status;
    let calendar = answer.json()?;
    if args.client.json {
        return Ok(json::pretty(&calendar.text));
    }
    let version = &calendar.value["version"];
    let said = match status {
        StatusCode::CREATED => format!("Created calendar {} (version {version}).", args.name),
        _ => format!("Replaced calendar {} (now version {version}).", args.name),
    };
    Ok(format!("{said}\n\n{}", calendar_block(&calendar.value)))
}

/// The years as `2026, 2027`, or `none`.
fn years(value: &Value) -> String {
    let years: Vec<String> = value.as_array().into_iter().flatten().map(Value::to_string).collect();
    if years.is_empty() { "none".into() } else { years.join(", ") }
}

fn calendar_table(calendars: &[Value]) -> String {
    let rows = calendars
        .iter()
        .map(|c| {
            vec![
                plain(&c["name"]),
                plain(&c["source"]),
                plain(&c["tz"]),
                years(&c["holiday_years"]),
                plain(&c["version"]),
                plain(&c["notice"]),
            ]
        })
        .collect();
    table(&["CALENDAR", "SOURCE", "ZONE", "HOLIDAYS ENTERED", "VERSION", "NOTICE"], rows, &[4])
}

/// One calendar as a readable block.
fn calendar_block(calendar: &Value) -> String {
    // In weekday order (a JSON object's keys come sorted by name).
    let hours: Vec<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        .into_iter()
        .filter_map(|day| calendar["hours"][day].as_array().map(|intervals| (day, intervals)))
        .map(|(day, intervals)| {
            let intervals: Vec<String> = intervals.iter().map(plain).collect();
            format!("{day} {}", intervals.join(", "))
        })
        .collect();
    let workdays: Vec<String> = calendar["workdays"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|day| match day {
            Value::Object(fields) if fields.contains_key("as") => {
                format!("{} as {}", plain(&day["date"]), plain(&day["as"]))
            }
            Value::Object(_) => {
                let own: Vec<String> = day["hours"].as_array().into_iter().flatten().map(plain).collect();
                format!("{} {}", plain(&day["date"]), own.join(", "))
            }
            other => plain(other),
        })
        .collect();
    let holidays: Vec<String> = calendar["holidays"].as_array().into_iter().flatten().map(plain).collect();
    let or_none = |lines: Vec<String>| if lines.is_empty() { "none".to_owned() } else { lines.join("\n") };
    let mut lines = vec![
        ("Calendar", plain(&calendar["name"])),
        ("Source", plain(&calendar["source"])),
        ("Zone", plain(&calendar["tz"])),
        ("Hours", if hours.is_empty() { "closed every weekday".into() } else { hours.join("\n") }),
        ("Holidays", or_none(holidays)),
        ("Workdays", or_none(workdays)),
        ("Entered", format!("{} (until {})", years(&calendar["holiday_years"]), plain(&calendar["entered_until"]))),
        ("Version", plain(&calendar["version"])),
    ];
    if !calendar["notice"].is_null() {
        lines.push(("Notice", plain(&calendar["notice"])));
    }
    render::block(&lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use serde_json::json;

    use super::calendar_block;

    #[test]
    fn a_calendars_hours_read_in_weekday_order() {
        let calendar = json!({"name": "office", "tz": "UTC",
            "hours": {"fri": ["09:00-15:00"], "mon": ["09:00-17:00"], "sun": ["10:00-12:00"], "tue": ["09:00-17:00"]}});
        let block = calendar_block(&calendar);
        let at: Vec<usize> = ["mon ", "tue ", "fri ", "sun "].iter().map(|day| block.find(day).unwrap()).collect();
        assert!(at.is_sorted(), "{block}");
    }
}
