//! Shared by the server's integration tests: an app over a fresh embedded store in its
//! own temp dir, called without a socket.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use punctual_core::{Engine, EngineConfig, ManualClock, Timestamp};
use punctual_server::{AppState, HttpOptions, app};
use punctual_sqlite::SqliteStore;
use serde_json::Value;
use tower::ServiceExt;

pub struct TestServer {
    pub state: AppState<SqliteStore>,
    pub app: Router,
    pub clock: Option<ManualClock>,
    pub token: Option<String>,
    pub dir: tempfile::TempDir,
}

/// A fixed start for manual clocks: 2026-11-30T12:00:00Z.
pub const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);

impl TestServer {
    /// System clock, no tokens.
    pub async fn start() -> TestServer {
        TestServer::build(HttpOptions::default(), EngineConfig::default(), None).await
    }

    /// A manual clock standing at [`START`].
    pub async fn manual() -> TestServer {
        let clock = ManualClock::new(START);
        let config = EngineConfig::default().clock(Arc::new(clock.clone()));
        TestServer::build(HttpOptions::default(), config, Some(clock)).await
    }

    pub async fn build(options: HttpOptions, config: EngineConfig, clock: Option<ManualClock>) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("data")).unwrap();
        let token = options.tokens.first().cloned();
        let engine = Engine::start(store, config);
        let state = AppState::new(engine, options).await.unwrap();
        TestServer { app: app(state.clone()), state, clock, token, dir }
    }

    pub fn engine(&self) -> &Engine<SqliteStore> {
        self.state.engine()
    }

    /// Sends a request with a JSON body (if any) and the token (if any).
    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let body = body.map(|b| b.to_string());
        self.send_text(method, path, body.as_deref()).await
    }

    pub async fn send_text(&self, method: Method, path: &str, body: Option<&str>) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = &self.token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        let req = match body {
            Some(text) => req.header("content-type", "application/json").body(Body::from(text.to_owned())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        self.call(req).await
    }

    pub async fn call(&self, req: Request<Body>) -> (StatusCode, Value) {
        let response = self.app.clone().oneshot(req).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }
    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::PUT, path, Some(body)).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::DELETE, path, None).await
    }

    /// Leases with `body`, expecting 200; the leases.
    pub async fn lease(&self, queue: &str, body: Value) -> Vec<Value> {
        let (status, answer) = self.post(&format!("/v1/queues/{queue}/lease"), body).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer["leases"].as_array().unwrap().clone()
    }

    /// Leases exactly one task that is due now; panics otherwise.
    pub async fn lease_one(&self, queue: &str) -> Value {
        let leases = self.lease(queue, serde_json::json!({"max": 1})).await;
        assert_eq!(leases.len(), 1, "expected one lease from {queue}: {leases:?}");
        leases[0].clone()
    }

    /// Schedules a task, asserting it was created; the task object.
    pub async fn create(&self, queue: &str, key: &str, body: Value) -> Value {
        let (status, answer) = self.put(&format!("/v1/queues/{queue}/tasks/{}", enc(key)), body).await;
        assert_eq!(status, StatusCode::CREATED, "PUT {queue}/{key}: {answer}");
        answer["task"].clone()
    }

    /// `POST /v1/leases/{lease_id}/ack` with `body`; the status and the answer.
    pub async fn ack(&self, lease: &Value, body: Value) -> (StatusCode, Value) {
        self.post(&format!("/v1/leases/{}/ack", enc(lease_id(lease))), body).await
    }

    /// Every task of a list route, following `next_cursor` until `null`, checking that
    /// each page holds at most `limit` tasks and every page but the last exactly `limit`.
    pub async fn list_all(&self, path_and_query: &str, limit: usize) -> Vec<Value> {
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        for _page in 0..100 {
            let separator = if path_and_query.contains('?') { '&' } else { '?' };
            let mut url = format!("{path_and_query}{separator}limit={limit}");
            if let Some(cursor) = &cursor {
                url.push_str(&format!("&cursor={}", enc(cursor)));
            }
            let (status, page) = self.get(&url).await;
            assert_eq!(status, StatusCode::OK, "GET {url}: {page}");
            let items = page["tasks"].as_array().unwrap_or_else(|| panic!("GET {url}: no `tasks` array: {page}"));
            assert!(items.len() <= limit, "GET {url}: {} tasks on a page of limit {limit}", items.len());
            tasks.extend(items.iter().cloned());
            match &page["next_cursor"] {
                Value::Null => return tasks,
                Value::String(next) => {
                    assert_eq!(items.len(), limit, "GET {url}: a page before the end holds fewer than `limit` tasks");
                    cursor = Some(next.clone());
                }
                other => panic!("GET {url}: `next_cursor` must be a string or null, got {other}"),
            }
        }
        panic!("GET {path_and_query}: next_cursor never became null in 100 pages")
    }

    /// Waits (at most 10 s) until `n` consumers wait for `queue`, as
    /// `punctual_consumers_waiting` in `/metrics` shows: a long poll sent before is then
    /// holding its request, its deadline fixed.
    pub async fn until_waiting(&self, queue: &str, n: usize) {
        let line = format!("punctual_consumers_waiting{{queue=\"{queue}\"}} {n}\n");
        within(10, async {
            while !self.get("/metrics").await.1.as_str().unwrap().contains(&line) {
                tokio::task::yield_now().await;
            }
        })
        .await;
    }
}

/// The `lease_id` of a lease.
pub fn lease_id(lease: &Value) -> &str {
    lease["lease_id"].as_str().unwrap_or_else(|| panic!("a lease has a string `lease_id`: {lease}"))
}

/// The keys of a list of tasks, in order.
pub fn keys(tasks: &[Value]) -> Vec<String> {
    tasks.iter().map(|t| t["key"].as_str().unwrap().to_owned()).collect()
}

/// Percent-encodes one path segment (or query value) as the CLI's client does.
pub use punctual_client::path_segment as enc;

/// Reads a time of a response, asserting API.md's form: RFC 3339 UTC with exactly three
/// fractional digits and `Z` (`2026-11-30T12:00:00.000Z`).
#[track_caller]
pub fn time(value: &Value) -> Timestamp {
    let text = value.as_str().unwrap_or_else(|| panic!("a time must be a string, got {value}"));
    let shape_ok = punctual_testkit::api::is_api_time(text);
    assert!(shape_ok, "time '{text}' is not of the form 2026-11-30T12:00:00.000Z");
    Timestamp::parse(text).unwrap_or_else(|e| panic!("time '{text}': {e}"))
}

/// Asserts a task object has exactly API.md's fields and its times are of API.md's form.
#[track_caller]
pub fn assert_task_shape(task: &Value) {
    punctual_testkit::api::assert_task_shape(task, time);
}

/// Lease ids that differ from a real `id` by one changed character (first, middle,
/// last), by truncation and by an extra character.
pub fn tamper(id: &str) -> Vec<String> {
    let chars: Vec<char> = id.chars().collect();
    assert!(!chars.is_empty(), "a lease id is not empty");
    let mut out = Vec::new();
    for at in [0, chars.len() / 2, chars.len() - 1] {
        let mut changed = chars.clone();
        changed[at] = if changed[at] == 'A' { 'B' } else { 'A' };
        out.push(changed.into_iter().collect());
    }
    out.push(chars[..chars.len() - 1].iter().collect());
    out.push(format!("{id}A"));
    out
}

/// `START` moved by `ms` milliseconds, as API.md writes it.
pub fn at(ms: i64) -> String {
    Timestamp::from_millis(START.as_millis() + ms).to_string()
}

/// The error code of an error body.
pub fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_else(|| panic!("not an error body: {body}"))
}

/// The error field of an error body.
pub fn field(body: &Value) -> Option<&str> {
    body["error"]["field"].as_str()
}

/// The value of the sample `line` (name and labels, exactly) in a Prometheus text, if
/// there is one.
pub fn find_sample(text: &str, line: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(line).and_then(|rest| rest.strip_prefix(' '))).map(|v| v.parse().unwrap())
}

/// The value of the sample `line` (name and labels, exactly) in a Prometheus text.
pub fn sample(text: &str, line: &str) -> f64 {
    find_sample(text, line).unwrap_or_else(|| panic!("no sample {line} in:\n{text}"))
}

/// `GET /metrics`, as text.
pub async fn metrics_text(s: &TestServer) -> String {
    let (status, body) = s.get("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    body.as_str().unwrap().to_owned()
}

/// Waits for `future`, failing the test after `secs` seconds (a guard, not a sleep).
pub async fn within<T>(secs: u64, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), future).await.expect("timed out")
}

/// Every route of API.md: method and path template.
pub const API_ROUTES: &[(&str, &str)] = &[
    ("PUT", "/v1/queues/{queue}/tasks/{key}"),
    ("POST", "/v1/queues/{queue}/tasks"),
    ("GET", "/v1/queues/{queue}/tasks/{key}"),
    ("GET", "/v1/queues/{queue}/tasks/{key}/history"),
    ("DELETE", "/v1/queues/{queue}/tasks/{key}"),
    ("DELETE", "/v1/queues/{queue}/tags/{tag}"),
    ("GET", "/v1/queues/{queue}/tasks"),
    ("GET", "/v1/queues"),
    ("GET", "/v1/queues/{queue}"),
    ("GET", "/v1/queues/{queue}/activity"),
    ("POST", "/v1/queues/{queue}/lease"),
    ("POST", "/v1/leases/{lease_id}/ack"),
    ("POST", "/v1/acks"),
    ("POST", "/v1/leases/{lease_id}/extend"),
    ("GET", "/v1/queues/{queue}/dead"),
    ("POST", "/v1/queues/{queue}/dead/{key}/retry"),
    ("POST", "/v1/queues/{queue}/dead/retry"),
    ("DELETE", "/v1/queues/{queue}/dead/{key}"),
    ("GET", "/v1/queues/{queue}/settings"),
    ("PUT", "/v1/queues/{queue}/settings"),
    ("PATCH", "/v1/queues/{queue}/settings"),
    ("DELETE", "/v1/queues/{queue}/settings"),
    ("POST", "/v1/queues/{queue}/pause"),
    ("POST", "/v1/queues/{queue}/resume"),
    ("DELETE", "/v1/queues/{queue}/tasks"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/access"),
    ("GET", "/v1/audit"),
];

/// A concrete path for a template.
pub fn concrete(template: &str) -> String {
    template.replace("{queue}", "q").replace("{key}", "k").replace("{tag}", "t").replace("{lease_id}", "x")
}

/// A minimal HTTP/1.1 client over a real socket: one request, `Connection: close`,
/// the status and the body.
pub async fn http(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}
