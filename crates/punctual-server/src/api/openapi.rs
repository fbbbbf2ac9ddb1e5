//! The OpenAPI document served at `/openapi.json`: generated from the handlers'
//! annotations and the request and response schemas, then completed with what holds
//! for many operations at once and depends on how the server runs.
//!
//! What [`document`] adds, each in one place instead of on every handler:
//! - auth: with tokens, the bearer scheme, and `401` on every operation that needs one
//!   (all but those of [`crate::config::access::is_open`]); without tokens, no `security` at all;
//! - scoped access: with tokens, `403` on every operation that needs a permission, and
//!   the permission (from `access::rule`, the one table the server enforces) at the
//!   end of its description;
//! - the answers any request can get from the middleware and the connection: `414` and
//!   `431` (a head too large), `500` (a bug, logged); on the `/v1` API and `/metrics`,
//!   `503` (the store is down, the server is stopping, or the request took too long);
//!   where a body is read, `408` (it did not arrive in time) and `413` (too large);
//! - `405` with `Allow` for a method a path does not take (in `components.responses`:
//!   it belongs to no operation);
//! - the server's own batch limit on batch bodies (and on a bulk retry's keys);
//! - `ActionBody`, the schema of a queue's action, from the action tables of `config`
//!   (which `bodies` does not import);
//! - `allowEmptyValue` on every query parameter: an empty value (`?state=`) is taken
//!   as none, as a form with an empty field sends it.
//!
//! `tests/http/openapi_contract.rs` checks the result against the server that serves it.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use punctual_core::Store;
use serde_json::{Value, json};
use utoipa::OpenApi;

use super::{calendars, dashboard, dead, leases, ops, queues, settings, tasks};
use crate::bodies::{self, schema};
use crate::config::access::{self, Permission, Rule, Scope};
use crate::config::settings::action_schema;
use crate::error;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "punctual",
        description = "Durable delayed tasks that fire on time. Every non-2xx answer \
        has the body {\"error\": {\"code\", \"message\", \"field\"}}. A method a path does not take \
        answers 405 (components.responses.MethodNotAllowed) with an Allow header; an unknown path, 404. \
        When the server runs with tokens, every path but /healthz, /readyz and / needs \
        'Authorization: Bearer <token>', checked before routing. A scoped token holds some of the \
        permissions read (get, list, stats), schedule (create, update, cancel), work (lease, ack, extend) \
        and admin (dead tasks, queue settings, pause, resume, purge) on the queues its name patterns match \
        (* stands for any run of characters); each operation's description names the permission it needs, \
        and a call outside the token's grant answers 403 forbidden, naming the permission and the queue, \
        before anything changes. GET /v1/access answers the calling token's grant. A query parameter \
        given an empty value (?state=) is the same as one not given."
    ),
    paths(
        tasks::put_task,
        tasks::post_tasks,
        tasks::get_task,
        tasks::task_history,
        tasks::delete_task,
        tasks::cancel_tag,
        tasks::list_tasks,
        queues::list_queues,
        queues::get_queue,
        queues::activity,
        leases::lease,
        leases::ack,
        leases::acks,
        leases::extend,
        dead::list_dead,
        queues::list_groups,
        dead::retry_dead,
        dead::retry_dead_many,
        dead::delete_dead,
        settings::get_settings,
        settings::put_settings,
        settings::patch_settings,
        settings::delete_settings,
        settings::pause,
        settings::resume,
        settings::purge,
        ops::audit,
        calendars::list_calendars,
        calendars::get_calendar,
        calendars::put_calendar,
        calendars::delete_calendar,
        ops::healthz,
        ops::readyz,
        ops::metrics,
        openapi_json,
        dashboard::index,
        ops::access,
    ),
    components(schemas(
        error::ErrorBody,
        error::ErrorDetail,
        error::ErrorCode,
        schema::QueueName,
        schema::TaskKey,
        schema::TagName,
        schema::GroupName,
        schema::Priority,
        schema::DebounceBody,
        schema::UniqueFor,
        schema::Completed,
        schema::Duration,
        schema::Time,
        schema::Timestamp,
        schema::TaskState,
        schema::PurgeState,
        schema::Cursor,
        schema::ScheduleOutcome,
        schema::ActivityOutcome,
        schema::HistoryEventKind,
        schema::AuditAction,
        schema::HistoryState,
        schema::TaskBody,
        schema::BatchItem,
        schema::BatchBody,
        schema::BackoffBody,
        schema::RepeatBody,
        schema::TargetBody,
        schema::LeaseBody,
        schema::AckBody,
        schema::AckItem,
        schema::AcksBody,
        schema::ExtendBody,
        schema::DeadRetryBody,
        schema::SettingsBody,
        schema::QueueSettings,
        schema::CalendarName,
        schema::CalendarBody,
        schema::Calendar,
        schema::CalendarList,
        schema::BatchResult,
        schema::AckResult,
        schema::Task,
        schema::Backoff,
        schema::Repeat,
        schema::CronSyntax,
        schema::Target,
        schema::ScheduleResponse,
        bodies::BatchResponse,
        bodies::CancelledResponse,
        bodies::TaskList,
        bodies::HistoryResponse,
        bodies::HistoryItem,
        bodies::QueueSummary,
        bodies::QueueListResponse,
        bodies::QueueDetail,
        bodies::OutboxLag,
        bodies::GroupList,
        bodies::GroupSummary,
        bodies::LagMs,
        bodies::LeaseResponse,
        bodies::LeaseItem,
        bodies::AcksResponse,
        bodies::ExtendResponse,
        bodies::RetriedResponse,
        bodies::ActivityResponse,
        bodies::RecentOutcome,
        ops::AccessResponse,
        ops::AuditResponse,
        ops::AuditItem,
        ops::Status,
        ops::Overdue,
    ))
)]
struct ApiDoc;

/// How the server runs, as far as the document depends on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served {
    /// Requests need a bearer token.
    pub(crate) tokens: bool,
    /// Items in a batch at most.
    pub(crate) max_batch: usize,
}

/// The methods an OpenAPI path item may hold.
const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The document a server that runs as `served` publishes.
pub(crate) fn document(served: Served) -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document is JSON");
    for (body, items) in [("BatchBody", "tasks"), ("AcksBody", "acks"), ("DeadRetryBody", "keys")] {
        doc["components"]["schemas"][body]["properties"][items]["maxItems"] = json!(served.max_batch);
    }
    doc["components"]["schemas"]["ActionBody"] = action_schema();
    doc["components"]["responses"] = shared_responses();
    if served.tokens {
        doc["components"]["securitySchemes"] = json!({"bearer": {"type": "http", "scheme": "bearer"}});
        doc["security"] = json!([{"bearer": []}]);
    }
    let Some(paths) = doc["paths"].as_object_mut() else { return doc };
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get_mut(method).and_then(Value::as_object_mut) else { continue };
            let mut shared = vec![("414", "UriTooLong"), ("431", "HeadersTooLarge"), ("500", "Internal")];
            if path.starts_with("/v1/") || path == "/metrics" {
                shared.push(("503", "Unavailable"));
            }
            let open = access::is_open(path);
            if served.tokens && !open {
                shared.push(("401", "Unauthorized"));
            }
            let rule = method.to_uppercase().parse().ok().and_then(|m| access::rule(&m, path));
            if let (true, Some(Rule::Needs(permission, scope))) = (served.tokens, rule) {
                shared.push(("403", "Forbidden"));
                let needs = needs(permission, scope);
                let text = match operation.get("description").and_then(Value::as_str) {
                    Some(description) => format!("{description}\n\n{needs}"),
                    None => needs,
                };
                operation.insert("description".into(), Value::String(text));
            }
            if let Some(body) = operation.get_mut("requestBody") {
                shared.extend([("408", "RequestTimeout"), ("413", "PayloadTooLarge")]);
                // utoipa writes an optional body (`Option<T>`) as "T or null"; it is
                // "T or no body" (`required` false), and a JSON null is refused.
                let schema = &mut body["content"]["application/json"]["schema"];
                if let Some(inner) = schema["oneOf"].as_array().and_then(|o| o.iter().find(|s| s["type"] != "null")) {
                    *schema = inner.clone();
                }
            }
            for parameter in operation.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
                if parameter["in"] == "query" {
                    parameter["allowEmptyValue"] = json!(true);
                }
            }
            let responses = operation.entry("responses").or_insert_with(|| json!({}));
            for (status, name) in shared {
                if responses.get(status).is_none() {
                    responses[status] = json!({"$ref": format!("#/components/responses/{name}")});
                }
            }
            if !served.tokens || !open {
                operation.remove("security");
            } else {
                operation.insert("security".into(), json!([]));
            }
        }
    }
    doc
}

#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    summary = "This document, as this server runs (its auth and limits)",
    responses((status = 200, description = "OpenAPI 3.1", content_type = "application/json")))]
pub(crate) async fn openapi_json<S: Store>(State(state): State<AppState<S>>) -> Response {
    let served = Served { tokens: state.auth().required(), max_batch: state.inner.engine.limits().max_batch };
    Json(state.inner.openapi.get_or_init(|| document(served))).into_response()
}

/// The sentence that says what an operation needs of a scoped token.
fn needs(permission: Permission, scope: Scope) -> String {
    let p = permission.name();
    match scope {
        Scope::PathQueue => format!("Needs the {p} permission on the path's queue."),
        Scope::PathLease => format!("Needs the {p} permission on the queue of the lease."),
        Scope::InBody => format!(
            "Needs the {p} permission on the queue of every lease named: one outside it refuses the whole call \
             (403, nothing applied)."
        ),
        Scope::Listed => format!("Needs the {p} permission; lists only the queues the token may {p}."),
        Scope::Everywhere => format!("Needs the {p} permission on every queue (queues = [\"*\"])."),
    }
}

/// The answers many operations share, by name.
fn shared_responses() -> Value {
    let error = |description: &str| {
        json!({"description": description,
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
    };
    let mut unauthorized = error("No valid bearer token (the server runs with tokens)");
    unauthorized["headers"] = json!({"WWW-Authenticate": {"schema": {"type": "string", "const": "Bearer"}}});
    let mut not_allowed = error("The path does not take this method");
    not_allowed["headers"] = json!({"Allow": {"description": "The methods the path takes",
                                              "schema": {"type": "string"}}});
    json!({
        "Unauthorized": unauthorized,
        "Forbidden": error("The token lacks the permission on the queue (a scoped token): the message names both"),
        "MethodNotAllowed": not_allowed,
        "RequestTimeout": error("The request body did not arrive within the request timeout"),
        "PayloadTooLarge": error("The request body is over the route's size limit"),
        "UriTooLong": error("The request line is too long"),
        "HeadersTooLarge": error("The request's head is too large"),
        "Internal": error("An internal error; it has been logged"),
        "Unavailable": error("The store is unavailable, the server is stopping, or the request did not complete \
            in time; retry later"),
    })
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    #[test]
    fn every_route_of_the_openapi_document_has_a_rule() {
        let doc = document(Served { tokens: true, max_batch: 10 });
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                let method: Method = method.to_uppercase().parse().unwrap();
                let found = access::rule(&method, path);
                assert!(found.is_some(), "{method} {path} has no access rule");
                let open = access::is_open(path);
                assert_eq!(found == Some(Rule::Open), open, "{method} {path}: open routes and open rules agree");
                seen += 1;
            }
        }
        assert!(seen >= 30, "{seen} operations");
        assert_eq!(access::rule(&Method::HEAD, "/v1/queues"), access::rule(&Method::GET, "/v1/queues"));
        assert_eq!(access::rule(&Method::POST, "/v1/queues"), None);
    }
}
