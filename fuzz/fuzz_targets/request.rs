//! Requests to every route of the HTTP API, with fuzzed path segments, query strings
//! and bodies, against the real router over an embedded store: no input makes the
//! server fail (5xx), hang, or answer anything but the API's JSON. A 4xx always
//! carries `{"error": {"code", "message"}}`.
//!
//! Inputs that ask for a live lease get a real lease id in place of the path segment
//! (and of the text `LEASE` in the body), so acks and extensions reach past the token
//! check. The store lives in a temp dir: `fuzz/run` points `TMPDIR` at a scratch
//! directory it removes afterwards.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use punctual_core::{Engine, EngineConfig};
use punctual_server::{AppState, HttpOptions, app};
use punctual_sqlite::SqliteStore;
use serde_json::Value;
use tower::ServiceExt;

/// One request, read from the input's lines so that seeds stay readable: the route's
/// number and flags (`L`: a live lease id as the key, `J`: a JSON content type), the
/// queue, the key, the query string, then the body (the rest, any bytes).
#[derive(Debug)]
struct Input<'a> {
    route: usize,
    live_lease: bool,
    json_content_type: bool,
    queue: String,
    key: String,
    query: String,
    body: &'a [u8],
}

impl<'a> Input<'a> {
    fn read(data: &'a [u8]) -> Input<'a> {
        let mut parts = data.splitn(5, |b| *b == b'\n');
        let mut line = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
        let head = line();
        let (queue, key, query) = (line(), line(), line());
        let digits: String = head.chars().take_while(char::is_ascii_digit).take(4).collect();
        let body = data.splitn(5, |b| *b == b'\n').nth(4).unwrap_or_default();
        Input {
            route: digits.parse::<usize>().unwrap_or(0) % ROUTES.len(),
            live_lease: head.contains('L'),
            json_content_type: head.contains('J'),
            queue,
            key,
            query,
            body,
        }
    }
}

/// The routes of API.md: method, path with `{q}` (queue) and `{k}` (key, tag or lease
/// id), and whether the path takes the fuzzed query string.
const ROUTES: &[(Method, &str, bool)] = &[
    (Method::PUT, "/v1/queues/{q}/tasks/{k}", false),
    (Method::POST, "/v1/queues/{q}/tasks", false),
    (Method::GET, "/v1/queues/{q}/tasks", true),
    (Method::GET, "/v1/queues/{q}/tasks/{k}", false),
    (Method::DELETE, "/v1/queues/{q}/tasks/{k}", false),
    (Method::DELETE, "/v1/queues/{q}/tags/{k}", false),
    (Method::POST, "/v1/queues/{q}/lease", false),
    (Method::POST, "/v1/leases/{k}/ack", false),
    (Method::POST, "/v1/leases/{k}/extend", false),
    (Method::POST, "/v1/acks", false),
    (Method::GET, "/v1/queues/{q}/activity", true),
    (Method::GET, "/v1/queues/{q}/dead", true),
    (Method::DELETE, "/v1/queues/{q}/dead/{k}", false),
    (Method::POST, "/v1/queues/{q}/dead/{k}/retry", false),
    (Method::GET, "/v1/queues/{q}", false),
    (Method::GET, "/v1/queues", true),
];

/// A lease may wait up to 60 s for a task (long poll): that route may run out of time.
const LEASE_ROUTE: usize = 6;

struct Harness {
    runtime: tokio::runtime::Runtime,
    app: Router,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let dir = tempfile::tempdir().expect("a temp dir for the store");
        let app = runtime.block_on(async {
            let store = SqliteStore::open(dir.path().join("data")).expect("the embedded store opens");
            let engine = Engine::start(store, EngineConfig::default());
            app(AppState::new(engine, HttpOptions::default()).await.expect("the app state"))
        });
        Harness { runtime, app, _dir: dir }
    })
}

/// How long a request may take before it counts as hung; a lease's long poll is cut
/// short much sooner.
const HUNG: Duration = Duration::from_secs(10);
const LONG_POLL_CUT: Duration = Duration::from_millis(300);

async fn call(app: &Router, request: Request<Body>, within: Duration) -> Option<(StatusCode, Vec<u8>)> {
    let answer = tokio::time::timeout(within, app.clone().oneshot(request)).await.ok()?;
    let response = answer.expect("the router's error type is Infallible");
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a response body");
    Some((status, body.to_vec()))
}

fn json_request(method: Method, path: &str, body: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .expect("a valid request")
}

/// Schedules a task due now and leases it: a lease id the server will recognise.
async fn live_lease(app: &Router) -> String {
    let (status, _) =
        call(app, json_request(Method::PUT, "/v1/queues/fuzz.live/tasks/t", "{}"), HUNG).await.expect("put");
    assert!(status.is_success(), "scheduling the live task: {status}");
    let (status, body) =
        call(app, json_request(Method::POST, "/v1/queues/fuzz.live/lease", r#"{"max": 1, "lease": "1h"}"#), HUNG)
            .await
            .expect("lease");
    assert_eq!(status, StatusCode::OK);
    let leases: Value = serde_json::from_slice(&body).expect("JSON leases");
    leases["leases"][0]["lease_id"].as_str().expect("one lease").to_owned()
}

fn check(route: usize, status: StatusCode, body: &[u8]) {
    assert!(!status.is_server_error(), "{status} to {:?}: {}", ROUTES[route], String::from_utf8_lossy(body));
    if body.is_empty() {
        assert!(status == StatusCode::NO_CONTENT, "{status} with an empty body");
        return;
    }
    let value: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{status}: the body is not JSON ({e}): {}", String::from_utf8_lossy(body)));
    if status.is_client_error() {
        let error = &value["error"];
        assert!(error["code"].as_str().is_some_and(|c| !c.is_empty()), "{status}: no error code in {value}");
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{status}: no message in {value}");
    }
}

fuzz_target!(|data: &[u8]| {
    let input = Input::read(data);
    let harness = harness();
    let route = input.route;
    let (method, template, takes_query) = &ROUTES[route];
    harness.runtime.block_on(async {
        let lease = if input.live_lease { Some(live_lease(&harness.app).await) } else { None };
        let queue = utf8_percent_encode(&input.queue, NON_ALPHANUMERIC).to_string();
        let key = match &lease {
            Some(id) => id.clone(),
            None => utf8_percent_encode(&input.key, NON_ALPHANUMERIC).to_string(),
        };
        let mut path = template.replace("{q}", &queue).replace("{k}", &key);
        if *takes_query {
            path = format!("{path}?{}", input.query);
        }
        let mut body = input.body.to_vec();
        if let Some(id) = &lease {
            body = String::from_utf8_lossy(&body).replace("LEASE", id).into_bytes();
        }
        let mut request = Request::builder().method(method.clone()).uri(&path);
        if input.json_content_type {
            request = request.header("content-type", "application/json");
        }
        // A query string that is not a valid URI is refused before any server sees it.
        let Ok(request) = request.body(Body::from(body)) else { return };
        let within = if route == LEASE_ROUTE { LONG_POLL_CUT } else { HUNG };
        match call(&harness.app, request, within).await {
            Some((status, body)) => check(route, status, &body),
            None => assert_eq!(route, LEASE_ROUTE, "{method} {path} did not answer within {HUNG:?}"),
        }
        if let Some(id) = lease {
            // Leave no lease behind: the next input's live task must be due again.
            let ack = json_request(Method::POST, &format!("/v1/leases/{id}/ack"), r#"{"outcome": "fail"}"#);
            call(&harness.app, ack, HUNG).await.expect("the cleanup ack answers");
        }
    });
});
