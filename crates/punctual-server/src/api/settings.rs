//! The routes of API.md's "Queue settings": the settings of a queue (read, create or
//! replace, merge, remove, each conditional with `If-Match: <version>`), pause and
//! resume, and the purge of its tasks.
//!
//! Invariants: a queue of the config file (`source: config`) is changed only in the
//! file — `PUT`, `PATCH` and `DELETE` of its settings are `409` naming the file — but
//! pauses and resumes like any other (pausing is state, not configuration); a queue
//! without settings answers `404` to `GET`, `PATCH` and `DELETE`, paused or not, and
//! pauses and resumes too, answered with the built-in defaults it runs with; a change
//! is validated in full before it is stored, so a refused change leaves everything as
//! it was; a change without `If-Match` is still made against the version it read, and
//! made again on the newer version if another change came in between.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use punctual_core::{Error, PurgeSelection, QueueChange, QueueRecord, Store};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Answer;
use crate::bodies::{CancelledResponse, schema};
use crate::config::settings::{DefaultsView, QueueSettings, SettingsView, Source};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params, QueryParams};
use crate::shared::ConfigQueue;
use crate::state::AppState;

/// How often a change without `If-Match` is made again after losing a race.
const RETRIES: usize = 5;

/// `GET /v1/queues/{queue}/settings`.
#[utoipa::path(get, path = "/v1/queues/{queue}/settings", tag = "queues",
    summary = "A queue's settings: from the config file (source config) or set through the API",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 200, body = schema::QueueSettings),
              (status = 400, description = "Invalid queue", body = ErrorBody),
              (status = 404, description = "The queue has no settings", body = ErrorBody)))]
pub(crate) async fn get_settings<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let queue = params.get("queue");
    let record = state.inner.engine.queue_record(queue).await?;
    Ok(Json(view(&state, queue, record.as_ref(), Shown::IfAny)?).into_response())
}

/// `PUT /v1/queues/{queue}/settings`: create or replace.
#[utoipa::path(put, path = "/v1/queues/{queue}/settings", tag = "queues",
    summary = "Create or replace a queue's settings; every node applies them within 1 s",
    description = "If-Match: <version> (the bare number) makes it conditional: 409 when the settings are at another version. A queue of the config file answers 409 naming the file.",
    params(("queue" = schema::QueueName, Path)),
    request_body(content = schema::SettingsBody, description = "A JSON body is required: {} is the built-in defaults"),
    responses((status = 201, description = "Created", body = schema::QueueSettings),
              (status = 200, description = "Replaced", body = schema::QueueSettings),
              (status = 400, description = "Invalid settings; the field names what to fix", body = ErrorBody),
              (status = 409, description = "A config-file queue, or If-Match names another version", body = ErrorBody)))]
pub(crate) async fn put_settings<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value, true>,
) -> Answer {
    let queue = params.get("queue");
    refuse_config_change(&state, queue)?;
    let settings = QueueSettings::from_body(&body, state.egress())?;
    let document = Value::Object(settings.document).to_string();
    let expected = if_match(&headers)?;
    let (before, after) =
        change(&state, queue, expected, |_| Ok(Some(QueueChange::Settings(document.clone())))).await?;
    apply_defaults(&state, queue, Some(settings.defaults))?;
    let status = if before.is_some_and(|r| r.settings.is_some()) { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(view(&state, queue, Some(&after), Shown::IfAny)?)).into_response())
}

/// `PATCH /v1/queues/{queue}/settings`: the given top-level fields replace the stored
/// ones; a queue without settings has none to change (`404`, as `GET` answers).
#[utoipa::path(patch, path = "/v1/queues/{queue}/settings", tag = "queues",
    summary = "Change some of a queue's settings: the given top-level fields replace the stored ones",
    description = "If-Match: <version> (the bare number) makes it conditional: 409 when the settings are at another version. A queue of the config file answers 409 naming the file. The settings merged are checked as a whole (concurrency given in the body's action while the stored settings have their own is 400). A queue without settings answers 404: PUT creates them.",
    params(("queue" = schema::QueueName, Path)),
    request_body(content = schema::SettingsBody, description = "The fields to change"),
    responses((status = 200, description = "Changed", body = schema::QueueSettings),
              (status = 400, description = "Invalid settings; the field names what to fix", body = ErrorBody),
              (status = 404, description = "The queue has no settings", body = ErrorBody),
              (status = 409, description = "A config-file queue, or If-Match names another version", body = ErrorBody)))]
pub(crate) async fn patch_settings<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value, true>,
) -> Answer {
    let queue = params.get("queue");
    refuse_config_change(&state, queue)?;
    let Some(patch) = body.as_object() else { return Err(ApiError::bad_request("a patch is a JSON object")) };
    let expected = if_match(&headers)?;
    let egress = state.egress().clone();
    let merged_defaults = std::sync::Mutex::new(None);
    let (_, after) = change(&state, queue, expected, |record| {
        let Some(stored) = record.and_then(|r| r.settings.as_deref()) else {
            return Err(ApiError::NotFound(format!(
                "queue '{queue}' has no settings to change: create them with PUT /v1/queues/{queue}/settings"
            )));
        };
        let mut merged: Map<String, Value> =
            serde_json::from_str(stored).map_err(|e| ApiError::Internal { detail: e.to_string() })?;
        for (field, value) in patch {
            merged.insert(field.clone(), value.clone());
        }
        let settings = QueueSettings::from_body(&Value::Object(merged), &egress)?;
        *merged_defaults.lock().expect("defaults lock poisoned") = Some(settings.defaults);
        Ok(Some(QueueChange::Settings(Value::Object(settings.document).to_string())))
    })
    .await?;
    apply_defaults(&state, queue, merged_defaults.into_inner().expect("defaults lock poisoned"))?;
    Ok(Json(view(&state, queue, Some(&after), Shown::IfAny)?).into_response())
}

/// `DELETE /v1/queues/{queue}/settings`: the tasks stay and take the built-in defaults.
#[utoipa::path(delete, path = "/v1/queues/{queue}/settings", tag = "queues",
    summary = "Remove a queue's settings: its tasks stay and take the built-in defaults",
    description = "If-Match: <version> (the bare number) makes it conditional: 409 when the settings are at another version.",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 204, description = "Removed"),
              (status = 400, description = "Invalid queue", body = ErrorBody),
              (status = 404, description = "The queue has no settings", body = ErrorBody),
              (status = 409, description = "A config-file queue, or If-Match names another version", body = ErrorBody)))]
pub(crate) async fn delete_settings<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
) -> Answer {
    let queue = params.get("queue");
    refuse_config_change(&state, queue)?;
    let expected = if_match(&headers)?;
    let missing = || ApiError::NotFound(format!("queue '{queue}' has no settings"));
    change(&state, queue, expected, |record| match record {
        Some(record) if record.settings.is_some() => Ok(Some(QueueChange::ClearSettings)),
        _ => Err(missing()),
    })
    .await?;
    apply_defaults(&state, queue, None)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v1/queues/{queue}/pause`.
#[utoipa::path(post, path = "/v1/queues/{queue}/pause", tag = "queues",
    summary = "Pause a queue: nothing of it is leased or delivered until it is resumed (schedules go on)",
    description = "Lasts across restarts; every node applies it within 1 s. Any queue pauses, being state, not configuration: one of the config file, and one without settings, whose answer shows the built-in defaults it runs with (its settings GET still answers 404).",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 200, body = schema::QueueSettings),
              (status = 400, description = "Invalid queue", body = ErrorBody)))]
pub(crate) async fn pause<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    paused(&state, params.get("queue"), true).await
}

/// `POST /v1/queues/{queue}/resume`.
#[utoipa::path(post, path = "/v1/queues/{queue}/resume", tag = "queues",
    summary = "Resume a paused queue: its due tasks fire in due order",
    description = "Any queue, as pause: one without settings is answered with the built-in defaults it runs with.",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 200, body = schema::QueueSettings),
              (status = 400, description = "Invalid queue", body = ErrorBody)))]
pub(crate) async fn resume<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    paused(&state, params.get("queue"), false).await
}

async fn paused<S: Store>(state: &AppState<S>, queue: &str, paused: bool) -> Answer {
    let record = state.inner.engine.change_queue(queue, QueueChange::Paused(paused), None).await?;
    tracing::info!(queue = %queue, paused, "queue {}", if paused { "paused" } else { "resumed" });
    Ok(Json(view(state, queue, Some(&record), Shown::Always)?).into_response())
}

/// `?state=`; empty, as absent, means `all`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PurgeQuery {
    state: Option<String>,
}

/// `DELETE /v1/queues/{queue}/tasks?state=scheduled|dead|all`.
#[utoipa::path(delete, path = "/v1/queues/{queue}/tasks", tag = "queues",
    summary = "Purge: cancel every task of the queue in a state (leased ones for good: their acks are then 409)",
    params(("queue" = schema::QueueName, Path),
           ("state" = Option<schema::PurgeState>, Query, description = "scheduled, dead or all (default all)")),
    responses((status = 200, description = "How many were cancelled", body = CancelledResponse),
              (status = 400, description = "Invalid queue or state", body = ErrorBody)))]
pub(crate) async fn purge<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    QueryParams(query): QueryParams<PurgeQuery>,
) -> Answer {
    let queue = params.get("queue");
    let selection = match query.state.as_deref().filter(|s| !s.is_empty()) {
        None | Some("all") => PurgeSelection::All,
        Some("scheduled") => PurgeSelection::Scheduled,
        Some("dead") => PurgeSelection::Dead,
        Some(other) => {
            return Err(ApiError::invalid("state", format!("a purge takes scheduled, dead or all, not '{other}'")));
        }
    };
    let cancelled = state.inner.engine.purge(queue, selection).await?;
    tracing::info!(queue = %queue, cancelled, "queue purged");
    Ok(Json(CancelledResponse { cancelled }).into_response())
}

/// Applies new task defaults on this node at once, so a schedule sent here after the
/// answer takes them (other nodes follow within a second, through `workers`).
fn apply_defaults<S: Store>(
    state: &AppState<S>,
    queue: &str,
    defaults: Option<punctual_core::QueueDefaults>,
) -> Result<(), ApiError> {
    state.inner.engine.set_queue_defaults(&punctual_core::QueueName::new(queue)?, defaults);
    Ok(())
}

/// `If-Match: <version>`, the bare number.
pub(crate) fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(axum::http::header::IF_MATCH) else { return Ok(None) };
    let text = value.to_str().unwrap_or("").trim().trim_matches('"');
    text.parse::<u64>()
        .map(Some)
        .map_err(|_| ApiError::invalid("If-Match", "If-Match takes the version, a bare number such as 3"))
}

/// Applies the change `decide` makes of the record as read: at the version `If-Match`
/// gave (a mismatch is `409`), or else at the version read, again if that moved. The
/// record before and after.
async fn change<S: Store>(
    state: &AppState<S>,
    queue: &str,
    expected: Option<u64>,
    decide: impl Fn(Option<&QueueRecord>) -> Result<Option<QueueChange>, ApiError>,
) -> Result<(Option<QueueRecord>, QueueRecord), ApiError> {
    let engine = &state.inner.engine;
    for _ in 0..RETRIES {
        let before = engine.queue_record(queue).await?;
        let read = before.as_ref().map_or(0, |r| r.version);
        if let Some(expected) = expected
            && expected != read
        {
            return Err(ApiError::Conflict(format!(
                "the settings of queue '{queue}' are at version {read}, not {expected}: read them again"
            )));
        }
        let Some(change) = decide(before.as_ref())? else { break };
        match engine.change_queue(queue, change, Some(read)).await {
            Ok(after) => return Ok((before, after)),
            Err(Error::Conflict(_)) if expected.is_none() => continue,
            Err(Error::Conflict(_)) => {
                return Err(ApiError::Conflict(format!(
                    "the settings of queue '{queue}' changed meanwhile: read them again"
                )));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::Conflict(format!("the settings of queue '{queue}' keep changing; try again")))
}

/// When a queue without settings is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// As `404`: it has none (`GET`; its pause is state, not settings).
    IfAny,
    /// With the built-in defaults it runs with (the answer of a pause or resume).
    Always,
}

/// The settings object of `queue`: from the config file, from its stored document, or
/// the built-in defaults, as `shown` says, when it has none.
fn view<S: Store>(
    state: &AppState<S>,
    queue: &str,
    record: Option<&QueueRecord>,
    shown: Shown,
) -> Result<SettingsView, ApiError> {
    let queue_name = punctual_core::QueueName::new(queue)?;
    if let Some(config) = state.file_queues().settings.get(&queue_name) {
        return Ok(config_view(&queue_name, config, record));
    }
    let Some(record) = record.filter(|r| r.settings.is_some() || shown == Shown::Always) else {
        return Err(ApiError::NotFound(format!("queue '{queue}' has no settings")));
    };
    let document = match record.settings.as_deref() {
        Some(text) => serde_json::from_str(text).map_err(|e| ApiError::Internal { detail: e.to_string() })?,
        None => Map::new(),
    };
    let settings = QueueSettings::from_document(document, state.egress())?;
    Ok(settings.view(record, Source::Api))
}

/// `409` when `queue`'s settings come from the config file.
fn refuse_config_change<S: Store>(state: &AppState<S>, queue: &str) -> Result<(), ApiError> {
    let name = punctual_core::QueueName::new(queue)?;
    if !state.file_queues().holds(&name) {
        return Ok(());
    }
    let file =
        state.inner.options.config_file.as_ref().map_or("the config file".to_owned(), |f| f.display().to_string());
    Err(ApiError::Conflict(format!(
        "queue '{queue}' is set in {file}: change its settings there (pause and resume work through the API)"
    )))
}

/// The settings of a queue of the config file, with its pause state from `record`.
fn config_view(queue: &punctual_core::QueueName, config: &ConfigQueue, record: Option<&QueueRecord>) -> SettingsView {
    let (action, concurrency, rate) = match &config.action {
        Some((kind, concurrency, rate)) => {
            (serde_json::json!({ "kind": kind }), *concurrency, rate.map(|r| r.to_string()))
        }
        None => (Value::Null, punctual_actions::ActionSpec::DEFAULT_CONCURRENCY, None),
    };
    SettingsView {
        queue: queue.to_string(),
        source: Source::Config,
        defaults: DefaultsView {
            max_attempts: config.defaults.max_attempts,
            backoff: config.defaults.backoff,
            repeat: config.defaults.repeat.clone(),
        },
        action,
        concurrency,
        rate,
        shards: config.shards.unwrap_or(1),
        targets: true,
        group_concurrency: config.defaults.group_concurrency,
        group_rate: config.defaults.group_rate.map(|rate| rate.to_string()),
        paused: record.is_some_and(|r| r.paused),
        version: record.map_or(0, |r| r.version),
        updated_at: record.map_or(punctual_core::Timestamp::EPOCH, |r| r.updated_at),
    }
}
