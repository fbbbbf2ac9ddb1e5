//! The permission every route needs ([`rule`]), and the paths that never need a token
//! ([`is_open`]).
//!
//! Invariants: every route of the router has one rule (a test checks it against the
//! OpenAPI document, so a new route cannot be forgotten silently); a matched route
//! without a rule is refused, never let through; a call outside its grant is refused
//! with `403 forbidden` before its handler runs, except the two whose queues are known
//! only inside the handler, which check before they change anything: `POST /v1/acks`
//! (each lease id's queue, [`Scope::InBody`]) and `GET /v1/queues` (filtered to the
//! queues the token may read, [`Scope::Listed`]).
//!
//! The routes and their permissions are listed in the README ("Scoped tokens").

use axum::http::Method;

use super::Permission;

/// Which queue a route's permission applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The `{queue}` of the path.
    PathQueue,
    /// The queue of the lease named by the `{lease_id}` of the path (a lease id that
    /// does not decode names no queue: the handler answers 404).
    PathLease,
    /// Queues named inside the body (`POST /v1/acks`): the handler checks each before
    /// it changes anything, and its refusal names the queue.
    InBody,
    /// A listing of queues (`GET /v1/queues`): the handler shows only those the token
    /// may read; the token needs the permission on some queue to get there.
    Listed,
    /// Every queue at once (`/metrics`): the token needs the permission on `*`.
    Everywhere,
}

/// What a route needs from a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Never needs a token (health, the dashboard's page and assets).
    Open,
    /// Any valid token, whatever its grant (`/openapi.json`, `/v1/access`).
    AnyToken,
    /// This permission, on these queues.
    Needs(Permission, Scope),
}

/// The dashboard's files (its script modules and style sheet), by name.
pub(crate) const DASHBOARD_FILES: &str = "/dashboard/{file}";

/// Paths that never need a token, whatever the method: health, and the dashboard's
/// page and files, which hold no data (each data call of the page sends the token
/// typed into it).
pub(crate) fn is_open(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/") || path.starts_with("/dashboard/")
}

/// The rule of the route `path` (the router's template, e.g.
/// `/v1/queues/{queue}/tasks/{key}`) under `method`; `None` for a pair the router does
/// not serve. `HEAD` follows `GET`, as the router does.
pub(crate) fn rule(method: &Method, path: &str) -> Option<Rule> {
    use Permission::{Admin, Read, Schedule, Work};
    use Scope::{Everywhere, InBody, Listed, PathLease, PathQueue};
    let method = if method == Method::HEAD { "GET" } else { method.as_str() };
    let rule = match (method, path) {
        ("GET", "/healthz" | "/readyz" | "/" | DASHBOARD_FILES) => Rule::Open,
        ("GET", "/openapi.json" | "/v1/access") => Rule::AnyToken,
        ("GET", "/metrics") => Rule::Needs(Read, Everywhere),
        ("GET", "/v1/queues") => Rule::Needs(Read, Listed),
        ("GET", "/v1/queues/{queue}" | "/v1/queues/{queue}/activity" | "/v1/queues/{queue}/tasks")
        | ("GET", "/v1/queues/{queue}/groups")
        | ("GET", "/v1/queues/{queue}/tasks/{key}" | "/v1/queues/{queue}/tasks/{key}/history") => {
            Rule::Needs(Read, PathQueue)
        }
        ("PUT", "/v1/queues/{queue}/tasks/{key}")
        | ("POST", "/v1/queues/{queue}/tasks")
        | ("DELETE", "/v1/queues/{queue}/tasks/{key}" | "/v1/queues/{queue}/tags/{tag}") => {
            Rule::Needs(Schedule, PathQueue)
        }
        ("POST", "/v1/queues/{queue}/lease") => Rule::Needs(Work, PathQueue),
        ("POST", "/v1/leases/{lease_id}/ack" | "/v1/leases/{lease_id}/extend") => Rule::Needs(Work, PathLease),
        ("POST", "/v1/acks") => Rule::Needs(Work, InBody),
        ("GET", "/v1/queues/{queue}/dead" | "/v1/queues/{queue}/settings")
        | ("POST", "/v1/queues/{queue}/dead/retry" | "/v1/queues/{queue}/dead/{key}/retry")
        | ("POST", "/v1/queues/{queue}/pause" | "/v1/queues/{queue}/resume")
        | ("DELETE", "/v1/queues/{queue}/dead/{key}" | "/v1/queues/{queue}/tasks")
        | ("PUT" | "PATCH" | "DELETE", "/v1/queues/{queue}/settings") => Rule::Needs(Admin, PathQueue),
        ("GET", "/v1/calendars" | "/v1/calendars/{name}" | "/v1/audit")
        | ("PUT" | "DELETE", "/v1/calendars/{name}") => Rule::Needs(Admin, Everywhere),
        _ => return None,
    };
    Some(rule)
}
