//! The schemas of working-time calendars: the body of `PUT /v1/calendars/{name}` and
//! the calendar in answers. Dates are written `YYYY-MM-DD` and date ranges
//! `start/end` (inclusive); what a pattern cannot say (a real date, a range that does
//! not run backwards, an interval that ends after it starts, a zone that exists) is in
//! the descriptions, and the server refuses it naming the field.

use std::borrow::Cow;

use punctual_core::calendar::CalendarName as CoreCalendarName;
use serde_json::{Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use super::{json_schema, r};

const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const DATE: &str = r"^\d{4}-\d{2}-\d{2}$";
const DATE_OR_RANGE: &str = r"^\d{4}-\d{2}-\d{2}(/\d{4}-\d{2}-\d{2})?$";
const INTERVAL: &str = r"^([01]\d|2[0-3]):[0-5]\d-(([01]\d|2[0-3]):[0-5]\d|24:00)$";

/// Wall-clock intervals of one day.
fn intervals(description: &str) -> Value {
    json!({"type": "array", "description": description,
           "items": {"type": "string", "pattern": INTERVAL, "examples": ["09:00-12:00"]}})
}

/// The calendar's fields, as a body and an answer carry them.
fn calendar_fields() -> serde_json::Map<String, Value> {
    let days: serde_json::Map<String, Value> = WEEKDAYS
        .iter()
        .map(|day| (day.to_string(), intervals("HH:MM-HH:MM, ending after they start (24:00 is midnight).")))
        .collect();
    let workday_object = json!({
        "type": "object", "additionalProperties": false, "required": ["date"],
        "properties": {
            "date": {"type": "string", "pattern": DATE, "examples": ["2026-09-27"]},
            "as": {"enum": WEEKDAYS, "description": "The weekday whose hours the date takes."},
            "hours": intervals("The date's own hours."),
        },
        "not": {"required": ["as", "hours"]},
    });
    let fields = json!({
        "tz": {"type": "string", "examples": ["Asia/Shanghai"], "description": "An IANA time zone."},
        "hours": {"type": "object", "additionalProperties": false, "properties": days,
                  "examples": [{"mon": ["09:00-18:00"]}],
                  "description": "Working hours per weekday; a weekday left out is closed. Some day must have working \
                  hours, here or in workdays."},
        "holidays": {"type": "array", "description": "Closed dates and inclusive ranges start/end.",
                     "items": {"type": "string", "pattern": DATE_OR_RANGE, "examples": ["2026-10-01/2026-10-07"]}},
        "workdays": {"type": "array", "description": "Extra working dates (调休): a date takes the hours of the \
                     weekday most open weekdays share; {date, as} those of a weekday; {date, hours} its own. A date \
                     may not be both a holiday and a working date.",
                     "items": {"oneOf": [{"type": "string", "pattern": DATE, "examples": ["2026-09-27"]},
                                         workday_object]}},
    });
    fields.as_object().cloned().unwrap_or_default()
}

schemas! {
    /// A calendar's name.
    CalendarName => json!({
        "type": "string",
        "minLength": 1,
        "maxLength": CoreCalendarName::MAX_LEN,
        "pattern": format!("^[A-Za-z0-9._:-]{{1,{}}}$", CoreCalendarName::MAX_LEN),
        "description": "A calendar name: 1 to 128 of A-Z a-z 0-9 . _ : -",
        "examples": ["cn-office"],
    });

    /// `PUT /v1/calendars/{name}`.
    CalendarBody => json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["tz", "hours"],
        "properties": calendar_fields(),
        "examples": [
            {"tz": "Asia/Shanghai", "hours": {"mon": ["09:00-12:00", "13:30-18:00"], "tue": ["09:00-12:00", "13:30-18:00"],
             "wed": ["09:00-12:00", "13:30-18:00"], "thu": ["09:00-12:00", "13:30-18:00"], "fri": ["09:00-12:00", "13:30-18:00"]},
             "holidays": ["2026-10-01/2026-10-07", "2026-06-19"], "workdays": ["2026-09-27"]},
            {"tz": "Europe/Berlin", "hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],
             "thu": ["09:00-17:00"], "fri": ["09:00-13:00"], "sat": ["10:00-12:00"], "sun": ["10:00-11:00"]},
             "workdays": [{"date": "2026-12-19", "as": "mon"}, {"date": "2026-12-20", "hours": ["10:00-14:00"]}]},
            {"tz": "UTC", "hours": {"sat": ["00:00-24:00"]}},
        ],
    });

    /// A calendar, in an answer.
    Calendar => {
        let mut properties = calendar_fields();
        properties.insert("name".into(), r("CalendarName"));
        properties.insert("source".into(), json!({"enum": ["api", "config"],
            "description": "config: set in the server's config file."}));
        properties.insert("holiday_years".into(), json!({"type": "array", "items": {"type": "integer"},
            "description": "The years with at least one holiday or working date entered."}));
        properties.insert("entered_until".into(), json!({"anyOf": [{"type": "null"}, r("Timestamp")],
            "description": "When the last entered year ends in the calendar's zone; null: none entered."}));
        properties.insert("notice".into(), json!({"type": ["string", "null"],
            "description": "Said when the entered years end within 30 days, have ended, or none are entered."}));
        properties.insert("version".into(), json!({"type": "integer", "minimum": 0,
            "description": "For If-Match (0: a calendar of the config file)."}));
        properties.insert("updated_at".into(), r("Timestamp"));
        json!({
            "type": "object",
            "required": ["name", "source", "tz", "hours", "holiday_years", "entered_until", "notice", "version",
                "updated_at"],
            "properties": properties,
        })
    };

    /// `GET /v1/calendars`.
    CalendarList => json!({
        "type": "object",
        "required": ["calendars"],
        "properties": {"calendars": {"type": "array", "items": r("Calendar")}},
    });
}
