//! The router: every route of API.md plus the operations endpoints, behind the
//! middleware every request passes.
//!
//! Order of the middleware, outermost first: the span of a request traces follow
//! (`traced`: schedule, lease, ack, extend, cancel; see `telemetry`), so that it ends
//! with the answer's final status; a response sent before the request body
//! was read says `Connection: close`; a panic in a handler becomes a 500 (the
//! connection and the server live on); auth, which runs for every path, matched or not
//! ("before routing": an unknown `/v1` path without a token is 401, not 404), then the
//! route's access rule (`access::rule`: 403 before the handler runs); the
//! request timeout (a lease gets the longest `wait` on top); the body size limit
//! (batches get their own, larger one).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::{Method, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use futures_util::FutureExt;
use punctual_core::Store;
use punctual_core::history::{Actor, acting_as};
use tracing::Instrument;

use crate::api::{calendars, dashboard, dead, leases, openapi, ops, queues, settings, tasks};
use crate::config::access::{self, DASHBOARD_FILES, Grant, Rule, Scope};
use crate::error::ApiError;
use crate::state::AppState;
use crate::telemetry;

/// The longest `wait` of a lease (API.md).
const MAX_WAIT: Duration = Duration::from_secs(60);
/// The route of long polls.
const LEASE_ROUTE: &str = "/v1/queues/{queue}/lease";
/// The routes of one task, of a queue's tasks, of a tag, of a lease's ack and extend,
/// and of batches of acks (traced, see [`traced`]).
const TASK_ROUTE: &str = "/v1/queues/{queue}/tasks/{key}";
const TASKS_ROUTE: &str = "/v1/queues/{queue}/tasks";
const TAG_ROUTE: &str = "/v1/queues/{queue}/tags/{tag}";
const ACK_ROUTE: &str = "/v1/leases/{lease_id}/ack";
const EXTEND_ROUTE: &str = "/v1/leases/{lease_id}/extend";
const ACKS_ROUTE: &str = "/v1/acks";
/// Room for the JSON around a payload in a single-task request.
const ENVELOPE_BYTES: usize = 64 * 1024;

/// The whole HTTP API over `state`. Serve it with [`serve_on`](crate::serve_on), or
/// call it directly in tests (`tower::ServiceExt::oneshot`).
pub fn app<S: Store>(state: AppState<S>) -> Router {
    let payload = state.inner.engine.limits().max_payload_bytes;
    // A payload at the limit, pretty-printed, plus the rest of the task object.
    let single_body = payload.saturating_mul(2).saturating_add(ENVELOPE_BYTES);
    let batch_body = DefaultBodyLimit::max(state.inner.options.max_body_bytes);
    Router::new()
        .route("/v1/queues", get(queues::list_queues::<S>))
        .route("/v1/queues/{queue}", get(queues::get_queue::<S>))
        .route(
            TASKS_ROUTE,
            get(tasks::list_tasks::<S>)
                .delete(settings::purge::<S>)
                .merge(post(tasks::post_tasks::<S>).layer(batch_body)),
        )
        .route(
            "/v1/queues/{queue}/settings",
            get(settings::get_settings::<S>)
                .put(settings::put_settings::<S>)
                .patch(settings::patch_settings::<S>)
                .delete(settings::delete_settings::<S>),
        )
        .route("/v1/queues/{queue}/pause", post(settings::pause::<S>))
        .route("/v1/queues/{queue}/resume", post(settings::resume::<S>))
        .route(TASK_ROUTE, put(tasks::put_task::<S>).get(tasks::get_task::<S>).delete(tasks::delete_task::<S>))
        .route("/v1/queues/{queue}/tasks/{key}/history", get(tasks::task_history::<S>))
        .route(TAG_ROUTE, delete(tasks::cancel_tag::<S>))
        .route(LEASE_ROUTE, post(leases::lease::<S>))
        .route(ACK_ROUTE, post(leases::ack::<S>))
        .route(EXTEND_ROUTE, post(leases::extend::<S>))
        .route(ACKS_ROUTE, post(leases::acks::<S>).layer(batch_body))
        .route("/v1/queues/{queue}/activity", get(queues::activity::<S>))
        .route("/v1/queues/{queue}/groups", get(queues::list_groups::<S>))
        .route("/v1/queues/{queue}/dead", get(dead::list_dead::<S>))
        .route("/v1/queues/{queue}/dead/retry", post(dead::retry_dead_many::<S>).layer(batch_body))
        .route("/v1/queues/{queue}/dead/{key}", delete(dead::delete_dead::<S>))
        .route("/v1/queues/{queue}/dead/{key}/retry", post(dead::retry_dead::<S>))
        .route("/v1/calendars", get(calendars::list_calendars::<S>))
        .route(
            "/v1/calendars/{name}",
            get(calendars::get_calendar::<S>).put(calendars::put_calendar::<S>).delete(calendars::delete_calendar::<S>),
        )
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz::<S>))
        .route("/metrics", get(ops::metrics::<S>))
        .route("/openapi.json", get(openapi::openapi_json::<S>))
        .route("/v1/access", get(ops::access))
        .route("/v1/audit", get(ops::audit::<S>))
        .route("/", get(dashboard::index))
        .route(DASHBOARD_FILES, get(dashboard::file))
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .layer(DefaultBodyLimit::max(single_body))
        .layer(middleware::from_fn_with_state(state.clone(), timeout::<S>))
        .layer(middleware::from_fn_with_state(state.clone(), auth::<S>))
        .layer(middleware::from_fn(catch_panic))
        .layer(middleware::from_fn(close_if_body_unread))
        .layer(middleware::from_fn(traced))
        .with_state(state)
}

/// The operation a traced request does: its span's name.
fn traced_operation(method: &Method, route: &str) -> Option<&'static str> {
    Some(match (method.as_str(), route) {
        ("PUT", TASK_ROUTE) => "schedule",
        ("POST", TASKS_ROUTE) => "schedule batch",
        ("DELETE", TASK_ROUTE) => "cancel",
        ("DELETE", TAG_ROUTE) => "cancel tag",
        ("POST", LEASE_ROUTE) => "lease",
        ("POST", ACK_ROUTE) => "ack",
        ("POST", ACKS_ROUTE) => "ack batch",
        ("POST", EXTEND_ROUTE) => "extend",
        _ => return None,
    })
}

/// Runs a request of an operation traces follow in its span (`telemetry`): a child of
/// the caller's when it sends `traceparent`, with the queue, key or tag of its path,
/// and the answer's status. With traces off the span is disabled and the request goes
/// straight on.
async fn traced(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|path| path.as_str().to_owned());
    let Some((operation, route)) = route.and_then(|route| Some((traced_operation(req.method(), &route)?, route)))
    else {
        return next.run(req).await;
    };
    let span = telemetry::request_span(operation, req.method(), &route);
    if span.is_disabled() {
        return next.run(req).await;
    }
    telemetry::continue_trace(&span, req.headers());
    let (mut parts, body) = req.into_parts();
    // Percent-decoded; a segment that is not UTF-8 is left out.
    if let Ok(params) = RawPathParams::from_request_parts(&mut parts, &()).await {
        for (name, value) in &params {
            match name {
                "queue" => span.record("punctual.queue", value),
                "key" => span.record("punctual.task.key", value),
                "tag" => span.record("punctual.tag", value),
                _ => continue,
            };
        }
    }
    let response = next.run(Request::from_parts(parts, body)).instrument(span.clone()).await;
    telemetry::record_response(&span, response.status());
    response
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound(format!("there is no route {method} {}; see /openapi.json", uri.path()))
}

/// A known path with another method: 405, with the `Allow` header the router adds.
async fn no_method(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{} does not take {method}; see /openapi.json", uri.path()))
}

/// The grant of every call to a server without tokens, made once.
static UNLIMITED: std::sync::LazyLock<Arc<Grant>> = std::sync::LazyLock::new(|| Arc::new(Grant::all("anyone")));

/// Identifies the token (401 when it is missing or unknown, before routing), counts
/// the request against its ingress limit (429 with `Retry-After` past it), then applies
/// the route's access rule (403 before the handler runs; see `access`).
async fn auth<S: Store>(State(state): State<AppState<S>>, req: Request, next: Next) -> Response {
    let auth = state.auth();
    if access::is_open(req.uri().path()) {
        return next.run(req).await;
    }
    if !auth.required() {
        // Without tokens every call may do everything: no rule to apply.
        let mut req = req;
        req.extensions_mut().insert(Arc::clone(&UNLIMITED));
        return next.run(req).await;
    }
    let grant = {
        let presented = req.headers().get(header::AUTHORIZATION).and_then(|value| {
            let bytes = value.as_bytes();
            let space = bytes.iter().position(|b| *b == b' ')?;
            let (scheme, rest) = bytes.split_at(space);
            scheme.eq_ignore_ascii_case(b"bearer").then(|| rest.trim_ascii())
        });
        match presented.and_then(|token| auth.identify(token)) {
            Some(identified) => identified,
            None => return ApiError::Unauthorized.into_response(),
        }
    };
    if let Some(limit) = &grant.limit
        && let Err(retry_after) = limit.take(state.engine().clock().now())
    {
        return ApiError::TooManyRequests { rate: limit.rate(), retry_after }.into_response();
    }
    let grant = grant.grant;
    let (mut parts, body) = req.into_parts();
    if let Err(refused) = permit(&state, &grant, &mut parts).await {
        return refused.into_response();
    }
    // What the handler logs names the token by its name (never the token itself).
    let span = tracing::info_span!("request", by = %grant.name());
    // What the request changes, its tasks' histories tell was done by the same name.
    let actor = Actor::new(grant.name());
    parts.extensions.insert(grant);
    acting_as(actor, next.run(Request::from_parts(parts, body)).instrument(span)).await
}

/// `Ok` when the route's rule lets `grant` through. A path no route matches, or a
/// method the path does not take, passes: the router answers 404 or 405, changing
/// nothing.
async fn permit<S: Store>(
    state: &AppState<S>,
    grant: &Grant,
    parts: &mut axum::http::request::Parts,
) -> Result<(), ApiError> {
    let Some(path) = parts.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()) else { return Ok(()) };
    let what = format!("{} {}", parts.method, parts.uri.path());
    let Some(rule) = access::rule(&parts.method, &path) else {
        let known = ["GET", "PUT", "POST", "PATCH", "DELETE"]
            .iter()
            .any(|m| access::rule(&m.parse().expect("a method name"), &path).is_some());
        if known {
            return Ok(());
        }
        return Err(ApiError::internal(format!("the route {path} has no access rule (see access::rule)")));
    };
    let (permission, scope) = match rule {
        Rule::Open | Rule::AnyToken => return Ok(()),
        Rule::Needs(permission, scope) => (permission, scope),
    };
    // Percent-decoded; a segment that is not UTF-8 is left out.
    let params: Vec<(String, String)> = match RawPathParams::from_request_parts(parts, &()).await {
        Ok(params) => params.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
        Err(_) => Vec::new(),
    };
    let param = |name: &str| params.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    match scope {
        Scope::PathQueue => match param("queue") {
            Some(queue) => grant.check(permission, queue),
            // A queue name that is not UTF-8: only a token for every queue gets to the
            // handler's 400.
            None => grant.check_everywhere(permission, &what),
        },
        Scope::PathLease => {
            let lease = param("lease_id").and_then(|id| state.inner.codec.decode(id).ok());
            match lease {
                Some(lease) => grant.check(permission, lease.queue.as_str()),
                // Names no lease: the handler answers 404, and no queue is told.
                None => grant.check_any(permission, &what),
            }
        }
        // The handler checks each lease's queue before it applies any, naming the queue.
        Scope::InBody => Ok(()),
        Scope::Listed => grant.check_any(permission, &what),
        Scope::Everywhere => grant.check_everywhere(permission, &what),
    }
}

/// Ends requests that take too long: a client still sending its body is refused (408),
/// anything else slow is the server's (503).
async fn timeout<S: Store>(State(state): State<AppState<S>>, req: Request, next: Next) -> Response {
    let base = state.inner.options.request_timeout;
    let long_poll = req.extensions().get::<MatchedPath>().is_some_and(|p| p.as_str() == LEASE_ROUTE);
    let limit = if long_poll { base.saturating_add(MAX_WAIT) } else { base };
    // A request without a body has received it all (a slow GET is the server's fault).
    let received = Arc::new(AtomicBool::new(http_body::Body::is_end_stream(req.body())));
    let req = req.map(|body| Body::new(Tracked { inner: body, received: Arc::clone(&received) }));
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) if !received.load(Ordering::Acquire) => ApiError::RequestTimeout { after: limit }.into_response(),
        Err(_) => ApiError::TimedOut { after: limit }.into_response(),
    }
}

/// A request body that records when it has been read to its end.
struct Tracked {
    inner: Body,
    received: Arc<AtomicBool>,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.received.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let end = self.inner.is_end_stream();
        if end {
            self.received.store(true, Ordering::Release);
        }
        end
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A response sent before the request's body was read to its end (refused early: 401,
/// 413, a bad path) ends the connection, since the unread rest cannot be skipped
/// safely: say so with `Connection: close`, so a keep-alive client opens a new
/// connection instead of writing its next request into a closed one.
async fn close_if_body_unread(req: Request, next: Next) -> Response {
    let headers = req.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers.get(header::CONTENT_LENGTH).is_some_and(|length| length.as_bytes() != b"0");
    if !has_body {
        return next.run(req).await;
    }
    let received = Arc::new(AtomicBool::new(false));
    let req = req.map(|body| Body::new(Tracked { inner: body, received: Arc::clone(&received) }));
    let mut response = next.run(req).await;
    if !received.load(Ordering::Acquire) {
        response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    response
}

async fn catch_panic(req: Request, next: Next) -> Response {
    let route = format!("{} {}", req.method(), req.uri().path());
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            ApiError::internal(format!("handler of {route} panicked: {what}")).into_response()
        }
    }
}
