//! The handlers of the HTTP API, one file per resource: `tasks`, `queues`, `leases`
//! (pull workers), `dead`, `settings` (a queue's settings, pause, resume, purge),
//! `calendars` (working-time calendars),
//! `ops` (health, readiness, metrics, access), `dashboard` (its page and files) and
//! `openapi` (the document that describes them all). The router (`app`) routes to them.
//!
//! Each handler reads its request through [`crate::extract`], validates it through
//! [`crate::bodies`], calls the engine, and answers the object API.md gives, or an
//! [`ApiError`]; its `#[utoipa::path]` is its entry in `/openapi.json`.

pub(crate) mod calendars;
pub(crate) mod dashboard;
pub(crate) mod dead;
pub(crate) mod leases;
pub(crate) mod openapi;
pub(crate) mod ops;
pub(crate) mod queues;
pub(crate) mod settings;
pub(crate) mod tasks;

use axum::response::Response;
use serde_json::Value;

use crate::error::ApiError;

/// What a handler answers.
type Answer = Result<Response, ApiError>;

/// A batch item's `field` as its result echoes it: only a string (anything else, or
/// none, is null, as the result's schema says).
fn echoed(item: &Value, field: &str) -> Option<String> {
    item.get(field).and_then(Value::as_str).map(str::to_owned)
}
