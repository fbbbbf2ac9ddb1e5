//! The routes of working-time calendars (API.md, "Wave 3 additions"): list, read,
//! create or replace, remove; changes conditional with `If-Match: <version>`.
//!
//! Invariants: a calendar of the config file (`source: config`) is changed only in the
//! file (`PUT` and `DELETE` are `409` naming it); a document is checked in full before
//! it is stored and stored as the server reads it back (canonical JSON), so a refused
//! change leaves everything as it was; every node serves a change within a second (the
//! engine's calendar set). `If-Match: 0` creates only a calendar that does not exist.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use punctual_core::calendar::{CalendarChange, CalendarSpec};
use punctual_core::engine::CalendarEntry;
use punctual_core::{Store, Timestamp};
use serde::Serialize;
use serde_json::Value;

use super::Answer;
use super::settings::if_match;
use crate::bodies::schema;
use crate::config::settings::Source;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params};
use crate::state::AppState;

/// How long before its entered holidays run out a calendar says so (`notice`).
pub(crate) const NOTICE_BEFORE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// A calendar in an answer.
#[derive(Debug, Serialize)]
pub(crate) struct CalendarView {
    name: String,
    source: Source,
    #[serde(flatten)]
    spec: CalendarSpec,
    /// The years with at least one holiday or working date entered.
    holiday_years: Vec<i16>,
    /// When the last entered year ends; null when none is.
    entered_until: Option<Timestamp>,
    /// Said when the entered years end within 30 days or have ended.
    notice: Option<String>,
    version: u64,
    updated_at: Timestamp,
}

impl CalendarView {
    pub(crate) fn of(name: &str, entry: &CalendarEntry, now: Timestamp) -> CalendarView {
        let calendar = &entry.calendar;
        let entered_until = calendar.entered_until();
        CalendarView {
            name: name.to_owned(),
            source: if entry.record.is_some() { Source::Api } else { Source::Config },
            spec: calendar.spec(),
            holiday_years: calendar.holiday_years(),
            entered_until,
            notice: notice(entered_until, now),
            version: entry.record.as_ref().map_or(0, |record| record.version),
            updated_at: entry.record.as_ref().map_or(Timestamp::EPOCH, |record| record.updated_at),
        }
    }
}

/// What a calendar says of its entered holidays at `now`.
pub(crate) fn notice(entered_until: Option<Timestamp>, now: Timestamp) -> Option<String> {
    let Some(until) = entered_until else {
        return Some("no holidays are entered: every weekday counts as working time".to_owned());
    };
    if until <= now {
        Some(format!("holidays are entered only until {until}: enter the next year's"))
    } else if until <= now.saturating_add(NOTICE_BEFORE) {
        Some(format!("holidays are entered only until {until}, within 30 days: enter the next year's"))
    } else {
        None
    }
}

/// `GET /v1/calendars`.
#[derive(Debug, Serialize)]
struct CalendarList {
    calendars: Vec<CalendarView>,
}

#[utoipa::path(get, path = "/v1/calendars", tag = "calendars",
    summary = "Every working-time calendar, by name: those of the config file and those set through the API",
    responses((status = 200, body = schema::CalendarList)))]
pub(crate) async fn list_calendars<S: Store>(State(state): State<AppState<S>>) -> Answer {
    let engine = &state.inner.engine;
    let now = engine.clock().now();
    let set = engine.calendars();
    let calendars = set.iter().map(|(name, entry)| CalendarView::of(name.as_str(), entry, now)).collect();
    Ok(Json(CalendarList { calendars }).into_response())
}

/// `GET /v1/calendars/{name}`.
#[utoipa::path(get, path = "/v1/calendars/{name}", tag = "calendars",
    summary = "A working-time calendar, with the years its holidays are entered for",
    params(("name" = schema::CalendarName, Path)),
    responses((status = 200, body = schema::Calendar),
              (status = 400, description = "Invalid name", body = ErrorBody),
              (status = 404, description = "No such calendar", body = ErrorBody)))]
pub(crate) async fn get_calendar<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let name = checked_name(params.get("name"))?;
    let engine = &state.inner.engine;
    let set = engine.calendars();
    let entry = set.get(&name).ok_or_else(|| missing(&name))?;
    Ok(Json(CalendarView::of(&name, entry, engine.clock().now())).into_response())
}

/// `PUT /v1/calendars/{name}`: create or replace.
#[utoipa::path(put, path = "/v1/calendars/{name}", tag = "calendars",
    summary = "Create or replace a working-time calendar; every node serves it within 1 s",
    description = "If-Match: <version> (the bare number) makes it conditional: 409 when the calendar is at another \
        version (0: only if it does not exist). A calendar of the config file answers 409 naming the file. Tasks \
        already scheduled keep the due times they were given.",
    params(("name" = schema::CalendarName, Path)),
    request_body(content = schema::CalendarBody),
    responses((status = 201, description = "Created", body = schema::Calendar),
              (status = 200, description = "Replaced", body = schema::Calendar),
              (status = 400, description = "Invalid calendar; the field names what to fix", body = ErrorBody),
              (status = 409, description = "A config-file calendar, or If-Match names another version",
               body = ErrorBody)))]
pub(crate) async fn put_calendar<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value, true>,
) -> Answer {
    let name = checked_name(params.get("name"))?;
    let expected = if_match(&headers)?;
    // Read in the body's shape and written back as canonical JSON; the engine checks it
    // as a calendar before it stores it.
    let spec: CalendarSpec = serde_json::from_value(body).map_err(|e| ApiError::invalid("calendar", e.to_string()))?;
    let document = serde_json::to_string(&spec).map_err(|e| ApiError::Internal { detail: e.to_string() })?;
    let engine = &state.inner.engine;
    let existed = engine.calendars().get(&name).is_some();
    let record = engine.change_calendar(&name, CalendarChange::Put(document), expected).await?;
    tracing::info!(calendar = %name, version = record.version, "calendar set");
    let status = if existed { StatusCode::OK } else { StatusCode::CREATED };
    let set = engine.calendars();
    let entry = set.get(&name).ok_or_else(|| ApiError::Internal { detail: format!("calendar {name} not applied") })?;
    Ok((status, Json(CalendarView::of(&name, entry, engine.clock().now()))).into_response())
}

/// `DELETE /v1/calendars/{name}`.
#[utoipa::path(delete, path = "/v1/calendars/{name}", tag = "calendars",
    summary = "Remove a working-time calendar",
    description = "If-Match: <version> (the bare number) makes it conditional: 409 when the calendar is at another \
        version. Tasks already scheduled keep their due times.",
    params(("name" = schema::CalendarName, Path)),
    responses((status = 204, description = "Removed"),
              (status = 400, description = "Invalid name", body = ErrorBody),
              (status = 404, description = "No such calendar", body = ErrorBody),
              (status = 409, description = "A config-file calendar, or If-Match names another version",
               body = ErrorBody)))]
pub(crate) async fn delete_calendar<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
) -> Answer {
    let name = checked_name(params.get("name"))?;
    let expected = if_match(&headers)?;
    state.inner.engine.change_calendar(&name, CalendarChange::Remove, expected).await?;
    tracing::info!(calendar = %name, "calendar removed");
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn checked_name(name: &str) -> Result<String, ApiError> {
    Ok(punctual_core::calendar::CalendarName::new(name)?.to_string())
}

fn missing(name: &str) -> ApiError {
    ApiError::NotFound(format!("there is no calendar '{name}': create it with PUT /v1/calendars/{name}"))
}
