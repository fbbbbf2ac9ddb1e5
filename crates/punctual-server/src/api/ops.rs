//! Operations endpoints: `/healthz` (the process answers), `/readyz` (this node can
//! serve: the store answers and the server is not stopping), `/metrics` (Prometheus
//! text, see `prom`) and `/v1/access` (what the calling token may do); the dashboard
//! is served by `dashboard`, `/openapi.json` by `openapi`, which describes these.
//!
//! Invariants: readiness depends on this node only, never on a queue's backlog — a
//! queue nobody drains is the same on every node sharing the store, so making it
//! unready would take every node, and the scheduling API with them, out of the load
//! balancer. With `max_overdue`, `/readyz` stays ready and names the queues over it in
//! its body (`overdue`), paused queues left out (their tasks are meant to wait); the
//! alert is `punctual_oldest_overdue_seconds`. `/readyz`
//! logs only when its answer changes (ready, stopping, store unreachable), so a probe
//! every second does not flood the log. A store found emptied (Redis lost punctual's
//! data) leaves the server ready — it serves on under the store's new identity — with
//! the latest such reset as the body's `reason`, until the server restarts. Another
//! node sharing the store with another delivery policy leaves it ready too, named in
//! the body's `warnings` while it lasts (see `policy`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use punctual_core::store::QueueStats;
use punctual_core::{Engine, MAX_LIST_LIMIT, Store, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Answer;
use crate::bodies::schema;
use crate::config::access::Grant;
use crate::error::{ApiError, ErrorBody, ErrorCode, ErrorDetail};
use crate::extract::QueryParams;
use crate::prom;
use crate::shared::{Caller, Readiness};
use crate::state::AppState;

/// The body of `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Status {
    #[schema(example = "ok")]
    status: &'static str,
    /// `/readyz` only, when the store was found emptied since the server started: what
    /// happened and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// `/readyz` only, with `max_overdue` set: the queues whose oldest due task has
    /// waited longer than it for a consumer (the node stays ready).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    overdue: Vec<Overdue>,
    /// `/readyz` only: what the node serves despite, and should be fixed (another node
    /// sharing the store has another delivery policy); the node stays ready.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// A queue whose oldest due task has waited longer than `max_overdue`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Overdue {
    #[schema(example = "flow.remind")]
    queue: String,
    /// How long its oldest due task has waited, as in `GET /v1/queues/{queue}`.
    oldest_overdue_ms: u64,
}

/// Why this node should get no traffic.
enum Unready {
    Stopping,
    StoreUnreachable(punctual_core::Error),
}

#[utoipa::path(get, path = "/healthz", tag = "operations", summary = "The process is up (never needs a token)",
    responses((status = 200, body = Status)))]
pub(crate) async fn healthz() -> Json<Status> {
    Json(Status { status: "ok", reason: None, overdue: Vec::new(), warnings: Vec::new() })
}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    summary = "This node can serve: the store is reachable and the server is not stopping (never needs a token)",
    description = "A backlog never makes a node unready. With max_overdue set, the body's overdue lists the \
        queues whose oldest due task has waited longer; alert on punctual_oldest_overdue_seconds. warnings \
        names what the node serves despite: another node sharing the store with another [egress] or [targets] \
        (punctual_delivery_policy_mismatch).",
    responses((status = 200, body = Status),
              (status = 503, description = "Unready; the message says why", body = ErrorBody)))]
pub(crate) async fn readyz<S: Store>(State(state): State<AppState<S>>) -> Response {
    let answer = readiness(&state).await;
    note(&state, &answer);
    match answer {
        Ok(overdue) => {
            let reset = state.metrics().last_store_reset;
            let reason = reset.map(|r| format!("{} (noticed at {})", r.what, r.noticed_at));
            let mut warnings: Vec<String> = state.delivery_policy().warning().into_iter().collect();
            warnings.extend(state.outboxes().iter().filter_map(|outbox| {
                let error = outbox.snapshot().error?;
                Some(format!(
                    "outbox {} ({}, table {}) is not drained: {error}",
                    outbox.name, outbox.database, outbox.table
                ))
            }));
            Json(Status { status: "ready", reason, overdue, warnings }).into_response()
        }
        Err(why) => {
            let message = match why {
                Unready::Stopping => "the server is stopping".to_owned(),
                Unready::StoreUnreachable(e) => format!("the store cannot be reached: {e}"),
            };
            let error = ErrorDetail { code: ErrorCode::Unavailable, message, field: None };
            (StatusCode::SERVICE_UNAVAILABLE, Json(ErrorBody { error })).into_response()
        }
    }
}

/// Whether this node should get traffic, and the queues over `max_overdue` if set.
async fn readiness<S: Store>(state: &AppState<S>) -> Result<Vec<Overdue>, Unready> {
    let engine = &state.inner.engine;
    if engine.is_stopping() || state.inner.shutdown.is_cancelled() {
        return Err(Unready::Stopping);
    }
    let Some(bound) = state.inner.options.max_overdue else {
        return store_answers(engine).await.map(|()| Vec::new()).map_err(Unready::StoreUnreachable);
    };
    let stats = engine.stats(None).await.map_err(Unready::StoreUnreachable)?;
    let now = engine.clock().now();
    // A paused queue's tasks are meant to wait.
    let over = stats
        .iter()
        .filter(|s| !engine.is_paused(&s.name))
        .map(|s| (s, prom::oldest_overdue(s, now)))
        .filter(|(_, overdue)| *overdue > bound);
    Ok(over
        .map(|(s, overdue)| Overdue {
            queue: s.name.to_string(),
            oldest_overdue_ms: u64::try_from(overdue.as_millis()).unwrap_or(u64::MAX),
        })
        .collect())
}

/// Logs the readiness `answer` when it differs from the previous one.
fn note<S: Store>(state: &AppState<S>, answer: &Result<Vec<Overdue>, Unready>) {
    let now = match answer {
        Ok(_) => Readiness::Ready,
        Err(Unready::Stopping) => Readiness::Stopping,
        Err(Unready::StoreUnreachable(_)) => Readiness::StoreUnreachable,
    };
    let mut last = state.inner.readiness.lock().expect("readiness lock poisoned");
    if *last == Some(now) {
        return;
    }
    match answer {
        Ok(_) if last.is_some() => tracing::info!("ready again"),
        Ok(_) => {}
        Err(Unready::Stopping) => tracing::info!("not ready: the server is stopping"),
        Err(Unready::StoreUnreachable(e)) => tracing::warn!(error = %e, "not ready: the store cannot be reached"),
    }
    *last = Some(now);
}

/// `Ok` when the store answers a read (of a queue that never exists: cheap, and it
/// goes through the store).
pub(crate) async fn store_answers<S: Store>(engine: &Engine<S>) -> Result<(), punctual_core::Error> {
    engine.stats(Some("punctual.readyz")).await.map(|_| ())
}

#[utoipa::path(get, path = "/metrics", tag = "operations", summary = "Prometheus text exposition",
    responses((status = 200, description = "Gauges, counters and histograms per queue (listed in the README)",
               content_type = "text/plain")))]
pub(crate) async fn metrics<S: Store>(State(state): State<AppState<S>>) -> Result<Response, ApiError> {
    let engine = &state.inner.engine;
    let stats = engine.stats(None).await?;
    let groups = group_gauges(&state, &stats).await;
    let rate_limits = state
        .inner
        .actions
        .lock()
        .expect("actions lock poisoned")
        .iter()
        .filter_map(|(queue, action)| action.rate_stats().map(|stats| (queue.clone(), stats)))
        .collect();
    let paused = engine.watch_queue_records().borrow().iter().map(|r| (r.queue.to_string(), r.paused)).collect();
    let scrape = prom::Scrape {
        stats,
        metrics: state.metrics(),
        now: engine.clock().now(),
        rate_limits,
        paused,
        policy_mismatch: state.delivery_policy().mismatch(),
        groups,
        calendars: engine
            .calendars()
            .iter()
            .map(|(name, entry)| (name.to_string(), entry.calendar.entered_until()))
            .collect(),
        outboxes: state.outboxes().iter().map(|o| (o.name.to_string(), o.snapshot())).collect(),
    };
    let text = prom::render(scrape).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, prom::CONTENT_TYPE)], text).into_response())
}

/// The group gauges of every queue the store counts and every queue with a
/// `group_concurrency`, read from the store's groups listing: at most
/// [`prom::GROUP_PAGES`] pages per queue, and none for a queue without tasks. A queue
/// whose groups cannot be read is left out of this scrape (logged), not the scrape
/// failed.
async fn group_gauges<S: Store>(state: &AppState<S>, stats: &[QueueStats]) -> Vec<prom::GroupGauges> {
    let limits = group_limits(state);
    let mut queues: BTreeMap<String, bool> = limits.keys().map(|q| (q.clone(), false)).collect();
    for s in stats {
        queues.insert(s.name.to_string(), s.scheduled + s.leased + s.dead > 0);
    }
    let mut all = Vec::with_capacity(queues.len());
    for (queue, has_tasks) in queues {
        let limit = limits.get(&queue).copied();
        let mut gauges = prom::GroupGauges::new(queue, limit);
        if has_tasks && let Err(e) = count_groups(&state.inner.engine, &mut gauges).await {
            tracing::warn!(queue = %gauges.queue, error = %e, "metrics: cannot read the queue's groups");
            continue;
        }
        all.push(gauges);
    }
    all
}

/// Counts the queue's groups into `gauges`, page by page, at most [`prom::GROUP_PAGES`].
async fn count_groups<S: Store>(engine: &Engine<S>, gauges: &mut prom::GroupGauges) -> punctual_core::Result<()> {
    let mut cursor = None;
    for _ in 0..prom::GROUP_PAGES {
        let page = engine.groups(&gauges.queue, prom::GROUP_PAGE_SIZE, cursor).await?;
        gauges.count(&page.groups);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    Ok(())
}

/// Each queue's `group_concurrency` where one is set: the config file's, and the
/// stored settings of the others (as the settings API shows them).
fn group_limits<S: Store>(state: &AppState<S>) -> BTreeMap<String, u32> {
    let file = state.file_queues();
    let config = &file.settings;
    let mut limits: BTreeMap<String, u32> =
        config.iter().filter_map(|(q, c)| c.defaults.group_concurrency.map(|n| (q.to_string(), n))).collect();
    let records = state.inner.engine.watch_queue_records().borrow().clone();
    for record in records.iter().filter(|r| !config.contains_key(&r.queue)) {
        let limit = record
            .settings
            .as_deref()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
            .and_then(|doc| doc.get("group_concurrency")?.as_u64())
            .and_then(|n| u32::try_from(n).ok());
        if let Some(n) = limit {
            limits.insert(record.queue.to_string(), n);
        }
    }
    limits
}

/// What the calling token may do (`GET /v1/access`): the dashboard shows only the
/// controls it allows.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AccessResponse {
    /// The token's name (`[[access]] name`; `access.<n>` when its table gives none,
    /// `tokens.<n>` for a token of `tokens`, `anyone` on a server without tokens), as
    /// logs name it.
    name: String,
    /// Of `read`, `schedule`, `work`, `admin`; all four for a token of `tokens`, or
    /// when the server runs without tokens.
    permissions: Vec<&'static str>,
    /// Queue name patterns the permissions hold on (`*` stands for any run of
    /// characters; `["*"]`: every queue).
    queues: Vec<String>,
}

impl AccessResponse {
    fn of(grant: &Grant) -> AccessResponse {
        AccessResponse {
            name: grant.name().to_owned(),
            permissions: grant.permissions().iter().map(|p| p.name()).collect(),
            queues: grant.queues().iter().map(|q| q.as_str().to_owned()).collect(),
        }
    }
}

#[utoipa::path(get, path = "/v1/access", tag = "operations",
    summary = "What the calling token may do: its permissions and the queue patterns they hold on",
    description = "Any valid token may ask. A token of tokens (or a server without tokens) has every permission \
        on [\"*\"]. The dashboard shows only the controls this allows.",
    responses((status = 200, body = AccessResponse)))]
pub(crate) async fn access(Extension(caller): Caller) -> Json<AccessResponse> {
    Json(AccessResponse::of(&caller))
}

/// `GET /v1/audit`'s query: a page size and the previous page's `next_cursor`.
#[derive(Debug, Deserialize)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

/// `GET /v1/audit`: the audit's entries, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditResponse {
    entries: Vec<AuditItem>,
    /// Pass as `cursor` for the next (older) page; null on the last.
    next_cursor: Option<String>,
}

/// One change to a queue, a calendar or the access rules.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditItem {
    #[schema(value_type = schema::Timestamp)]
    at: Timestamp,
    /// The name of the token that made the change (absent without tokens, and for a
    /// reload of the config file by SIGHUP).
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<String>,
    /// `queue.settings.set`, `queue.settings.clear`, `queue.pause`, `queue.resume`,
    /// `queue.purge`, `calendar.set`, `calendar.remove` or `access.reload`.
    #[schema(value_type = schema::AuditAction)]
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    calendar: Option<String>,
    /// What changed: the settings or calendar set, what a purge selected and
    /// cancelled, the names of the access rules reloaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    detail: Option<Value>,
}

#[utoipa::path(get, path = "/v1/audit", tag = "ops",
    summary = "Who changed which queue, calendar or access rule, and when",
    description = "Newest first: settings set or cleared, pauses, resumes, purges, calendars set or removed, \
        access rules reloaded, each with the name of the token that made it. Kept 30 days.",
    params(("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Entries per page, default 100"),
           ("cursor" = Option<schema::Cursor>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = AuditResponse),
              (status = 400, description = "Invalid limit or cursor", body = ErrorBody)))]
pub(crate) async fn audit<S: Store>(
    State(state): State<AppState<S>>,
    QueryParams(query): QueryParams<AuditQuery>,
) -> Answer {
    let limit = match query.limit.as_deref().filter(|l| !l.is_empty()) {
        None => 100,
        Some(text) => text.parse::<u32>().ok().filter(|n| (1..=MAX_LIST_LIMIT).contains(n)).ok_or_else(|| {
            ApiError::invalid("limit", format!("'{text}' is not a number from 1 to {MAX_LIST_LIMIT}"))
        })?,
    };
    let before = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            ApiError::invalid("cursor", "this cursor was not issued by this server; start again without one")
        })?),
    };
    let (entries, more) = state.inner.engine.audit(limit, before).await?;
    let next_cursor = entries.last().filter(|_| more).map(|last| last.seq.to_string());
    let entries = entries
        .into_iter()
        .map(|entry| AuditItem {
            at: entry.at,
            by: entry.by,
            action: entry.action.as_str(),
            queue: entry.queue,
            calendar: entry.calendar,
            detail: entry.detail,
        })
        .collect();
    Ok(Json(AuditResponse { entries, next_cursor }).into_response())
}
