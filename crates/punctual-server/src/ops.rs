//! Operations endpoints: `/healthz` (the process answers), `/readyz` (the store
//! answers and, with `max_overdue`, no due task waits too long), `/metrics`
//! (Prometheus text, see `prom`), `/openapi.json`, and the dashboard at `/` with its
//! two assets, embedded in the binary (`dashboard/`: no build step, no CDN).
//!
//! Invariant: `/readyz` logs its reason only when its answer changes, so a probe every
//! second does not flood the log. A store found emptied (Redis lost punctual's data)
//! leaves the server ready — it serves on under the store's new identity — with the
//! latest such reset as the body's `reason`, until the server restarts.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use punctual_core::Store;
use punctual_core::time::format_duration;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody, ErrorCode, ErrorDetail};
use crate::prom;
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
}

#[utoipa::path(get, path = "/healthz", tag = "operations", summary = "The process is up (never needs a token)",
    responses((status = 200, body = Status)))]
pub(crate) async fn healthz() -> Json<Status> {
    Json(Status { status: "ok", reason: None })
}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    summary = "The store is reachable and, with max_overdue set, no due task has waited longer (never needs a token)",
    responses((status = 200, body = Status),
              (status = 503, description = "Unready; the message says why", body = ErrorBody)))]
pub(crate) async fn readyz<S: Store>(State(state): State<AppState<S>>) -> Response {
    let answer = readiness(&state).await;
    state.note_readiness(answer.as_ref().map(|_| ()).map_err(String::as_str));
    match answer {
        Ok(()) => {
            let reset = state.inner.engine.metrics().last_store_reset;
            let reason = reset.map(|r| format!("{} (noticed at {})", r.what, r.noticed_at));
            Json(Status { status: "ready", reason }).into_response()
        }
        Err(why) => {
            let error = ErrorDetail { code: ErrorCode::Unavailable, message: why, field: None };
            (StatusCode::SERVICE_UNAVAILABLE, Json(ErrorBody { error })).into_response()
        }
    }
}

/// `Err(why)` when the server should get no traffic.
async fn readiness<S: Store>(state: &AppState<S>) -> Result<(), String> {
    let engine = &state.inner.engine;
    if engine.is_stopping() || state.inner.shutdown.is_cancelled() {
        return Err("the server is stopping".into());
    }
    let unreachable = |e: punctual_core::Error| format!("the store cannot be reached: {e}");
    let Some(bound) = state.inner.options.max_overdue else {
        // A read of a queue that never exists: cheap, and it goes through the store.
        return engine.stats(Some("punctual.readyz")).await.map(|_| ()).map_err(unreachable);
    };
    let stats = engine.stats(None).await.map_err(unreachable)?;
    let now = engine.clock().now();
    let worst = stats.iter().map(|s| (prom::oldest_overdue(s, now), s)).max_by_key(|(overdue, _)| *overdue);
    match worst {
        Some((overdue, s)) if overdue > bound => Err(format!(
            "a due task of queue '{}' has waited {} for a consumer, over max_overdue ({})",
            s.name,
            format_duration(overdue),
            format_duration(bound)
        )),
        _ => Ok(()),
    }
}

#[utoipa::path(get, path = "/metrics", tag = "operations", summary = "Prometheus text exposition",
    responses((status = 200, description = "Gauges, counters and histograms per queue (listed in the README)",
               content_type = "text/plain")))]
pub(crate) async fn metrics<S: Store>(State(state): State<AppState<S>>) -> Result<Response, ApiError> {
    let engine = &state.inner.engine;
    let stats = engine.stats(None).await?;
    let rate_limits = state
        .inner
        .actions
        .lock()
        .expect("actions lock poisoned")
        .iter()
        .filter_map(|(queue, action)| action.rate_stats().map(|stats| (queue.clone(), stats)))
        .collect();
    let scrape = prom::Scrape { stats, metrics: engine.metrics(), now: engine.clock().now(), rate_limits };
    let text = prom::render(scrape).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, prom::CONTENT_TYPE)], text).into_response())
}

#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    summary = "This document, as this server runs (its auth and limits)",
    responses((status = 200, description = "OpenAPI 3.1", content_type = "application/json")))]
pub(crate) async fn openapi_json<S: Store>(State(state): State<AppState<S>>) -> Response {
    Json(&state.inner.openapi).into_response()
}

#[utoipa::path(get, path = "/", tag = "operations",
    summary = "The dashboard: the page itself needs no token; each of its data calls sends the one typed in it",
    responses((status = 200, description = "HTML", content_type = "text/html")))]
pub(crate) async fn index() -> Response {
    asset("text/html; charset=utf-8", include_str!("dashboard/index.html"))
}

/// The dashboard's script.
pub(crate) async fn dashboard_js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("dashboard/app.js"))
}

/// The dashboard's style sheet.
pub(crate) async fn dashboard_css() -> Response {
    asset("text/css; charset=utf-8", include_str!("dashboard/style.css"))
}

/// An embedded file; revalidated on each load, since a new binary may bring a new one.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}
