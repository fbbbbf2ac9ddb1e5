//! Operations endpoints: `/healthz` (the process answers), `/readyz` (the store
//! answers), `/metrics` (Prometheus text), `/openapi.json` and the page at `/`.

use std::fmt::Write as _;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use punctual_core::Store;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The body of `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Status {
    #[schema(example = "ok")]
    status: &'static str,
}

#[utoipa::path(get, path = "/healthz", tag = "operations", summary = "The process is up (never needs a token)",
    responses((status = 200, body = Status)), security(()))]
pub(crate) async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

#[utoipa::path(get, path = "/readyz", tag = "operations", summary = "The store is reachable (never needs a token)",
    responses((status = 200, body = Status), (status = 503, body = ErrorBody)), security(()))]
pub(crate) async fn readyz<S: Store>(State(state): State<AppState<S>>) -> Result<Json<Status>, ApiError> {
    let engine = &state.inner.engine;
    if engine.is_stopping() || state.inner.shutdown.is_cancelled() {
        return Err(ApiError::Unavailable { detail: "readyz: the server is stopping".into() });
    }
    // A read of a task that never exists: cheap, and it goes through the store.
    engine.stats(Some("punctual.readyz")).await?;
    Ok(Json(Status { status: "ready" }))
}

#[utoipa::path(get, path = "/metrics", tag = "operations", summary = "Prometheus text exposition",
    responses((status = 200, description = "Per-queue gauges", content_type = "text/plain")))]
pub(crate) async fn metrics<S: Store>(State(state): State<AppState<S>>) -> Result<Response, ApiError> {
    let engine = &state.inner.engine;
    let stats = engine.stats(None).await?;
    let now = engine.clock().now();
    let mut out = String::new();
    family(&mut out, "punctual_up", "1 while the server runs.", vec!["punctual_up 1".to_owned()]);
    let mut lines = Vec::new();
    for s in &stats {
        let q = escape(s.name.as_str());
        for (state, n) in [("scheduled", s.scheduled), ("leased", s.leased), ("dead", s.dead)] {
            lines.push(format!("punctual_tasks{{queue=\"{q}\",state=\"{state}\"}} {n}"));
        }
    }
    family(&mut out, "punctual_tasks", "Tasks per queue and state.", lines);
    let mut lines = Vec::new();
    for s in &stats {
        let overdue = s.next_due_at.filter(|d| *d <= now).map_or(0.0, |d| now.saturating_since(d).as_secs_f64());
        lines.push(format!("punctual_queue_overdue_seconds{{queue=\"{}\"}} {overdue}", escape(s.name.as_str())));
    }
    family(&mut out, "punctual_queue_overdue_seconds", "How long the earliest scheduled task has been due.", lines);
    let mut lines = Vec::new();
    for s in &stats {
        if let Ok(Some(lag)) = engine.recent_lag(s.name.as_str()) {
            let q = escape(s.name.as_str());
            for (quantile, ms) in [("0.5", lag.p50_ms), ("0.99", lag.p99_ms)] {
                let seconds = ms as f64 / 1000.0;
                lines.push(format!("punctual_fire_lag_seconds{{queue=\"{q}\",quantile=\"{quantile}\"}} {seconds}"));
            }
        }
    }
    let help = "Recent fire lag (lease time - due time) of this server's leases.";
    family(&mut out, "punctual_fire_lag_seconds", help, lines);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], out).into_response())
}

/// Writes one metric family: its HELP and TYPE (gauge) lines, then its samples.
fn family(out: &mut String, name: &str, help: &str, samples: Vec<String>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    for sample in samples {
        out.push_str(&sample);
        out.push('\n');
    }
}

/// Escapes a Prometheus label value.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[utoipa::path(get, path = "/openapi.json", tag = "operations", summary = "This document",
    responses((status = 200, description = "OpenAPI 3.1", content_type = "application/json")))]
pub(crate) async fn openapi_json() -> Response {
    Json(crate::openapi::ApiDoc::openapi()).into_response()
}

#[utoipa::path(get, path = "/", tag = "operations", summary = "The dashboard (a placeholder for now)",
    responses((status = 200, description = "HTML", content_type = "text/html")))]
pub(crate) async fn index() -> Html<&'static str> {
    Html(concat!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>punctual</title></head>\n",
        "<body><h1>punctual ",
        env!("CARGO_PKG_VERSION"),
        "</h1>\n<p>Durable delayed tasks that fire on time. The dashboard comes later.</p>\n",
        "<ul><li><a href=\"/openapi.json\">/openapi.json</a>: the HTTP API</li>\n",
        "<li><a href=\"/v1/queues\">/v1/queues</a>: queues and their counts</li>\n",
        "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li></ul>\n</body></html>\n",
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_are_escaped() {
        assert_eq!(super::escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
