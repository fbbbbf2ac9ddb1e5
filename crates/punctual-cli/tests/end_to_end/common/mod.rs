//! Shared by the end-to-end tests: starting the real `punctual` binary as a server, a
//! small blocking HTTP client that returns status and JSON body, and readers for the
//! wire formats of API.md (times, durations, the error body) that check the format as
//! they read it.
//!
//! Every test file includes this module and uses a different part of it.

pub mod certs;
pub mod failover;
pub mod faketime;
pub mod netns;
pub mod receiver;
pub mod run;

use std::time::Duration;

use punctual_testkit::server::{ServerBuilder, ServerProcess};
use reqwest::Method;
use reqwest::blocking::Client;
use serde_json::Value;

/// The `punctual` binary built by this package.
pub const BIN: &str = env!("CARGO_BIN_EXE_punctual");

/// A server with no extra flags; panics with the server's output if it does not start.
pub fn start_server() -> ServerProcess {
    ServerProcess::start(BIN).unwrap_or_else(|e| panic!("{e}"))
}

/// A builder for a server with extra flags or environment.
pub fn server_builder() -> ServerBuilder {
    ServerProcess::builder(BIN)
}

/// Starts a server from a builder; panics with the server's output if it does not start.
pub fn start(builder: ServerBuilder) -> ServerProcess {
    builder.start().unwrap_or_else(|e| panic!("{e}"))
}

/// A response: status, raw body, and the body parsed as JSON (`Null` when empty or not
/// JSON).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub content_type: String,
    pub text: String,
    pub json: Value,
}

impl Resp {
    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(&self, status: u16, what: &str) -> &Value {
        assert_eq!(self.status, status, "{what}: expected HTTP {status}, got {}: {}", self.status, self.text);
        if !self.text.is_empty() && !self.json.is_null() {
            assert!(
                self.content_type.starts_with("application/json"),
                "{what}: a JSON body, but its content-type is '{}'",
                self.content_type
            );
        }
        &self.json
    }

    /// Asserts an API.md error: the status, `{"error": {"code", "message", "field"?}}`
    /// with the given code, a non-empty message, and the field when one is given.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str, field: Option<&str>, what: &str) {
        assert_eq!(self.status, status, "{what}: expected HTTP {status} {code}, got {}: {}", self.status, self.text);
        let error = &self.json["error"];
        assert!(error.is_object(), "{what}: the body is not an API error body: {}", self.text);
        assert!(
            self.content_type.starts_with("application/json"),
            "{what}: an error body is JSON, but its content-type is '{}'",
            self.content_type
        );
        assert_eq!(error["code"], code, "{what}: error code; body {}", self.text);
        let message = error["message"].as_str().unwrap_or_default();
        assert!(!message.trim().is_empty(), "{what}: the error has no message: {}", self.text);
        if let Some(field) = field {
            assert_eq!(error["field"], field, "{what}: error field; body {}", self.text);
        }
    }
}

/// A blocking HTTP client bound to one server, with an optional bearer token.
#[derive(Debug, Clone)]
pub struct Api {
    pub base: String,
    client: Client,
    token: Option<String>,
}

impl Api {
    pub fn new(base: impl Into<String>) -> Api {
        Api::with_timeout(base, Duration::from_secs(30))
    }

    /// A client whose requests give up after `timeout` (for tests of clients that go
    /// away).
    pub fn with_timeout(base: impl Into<String>, timeout: Duration) -> Api {
        let client =
            Client::builder().no_proxy().timeout(timeout).build().expect("a blocking HTTP client can be built");
        Api { base: base.into(), client, token: None }
    }

    pub fn of(server: &ServerProcess) -> Api {
        Api::new(server.url())
    }

    /// The same client sending `Authorization: Bearer <token>`.
    pub fn token(&self, token: &str) -> Api {
        Api { token: Some(token.to_owned()), ..self.clone() }
    }

    /// Sends a request; `body` is sent as JSON when given. Panics when there is no
    /// HTTP answer at all.
    #[track_caller]
    pub fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Resp {
        let raw = body.map(|b| serde_json::to_vec(b).expect("a JSON value serializes"));
        self.raw(method, path, raw, Some("application/json"), None)
    }

    /// Sends raw bytes with the given content type and `Authorization` header value.
    #[track_caller]
    pub fn raw(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: Option<&str>,
        authorization: Option<&str>,
    ) -> Resp {
        match self.try_raw(method.clone(), path, body, content_type, authorization) {
            Ok(resp) => resp,
            Err(e) => panic!("{method} {path}: no HTTP answer: {e}"),
        }
    }

    /// Like [`Api::raw`], returning the transport error instead of panicking.
    pub fn try_raw(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: Option<&str>,
        authorization: Option<&str>,
    ) -> Result<Resp, reqwest::Error> {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.body(body);
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
        }
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        } else if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send()?;
        let status = response.status().as_u16();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let text = response.text()?;
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Resp { status, content_type, text, json })
    }

    /// Like [`Api::call`], returning the transport error instead of panicking.
    pub fn try_call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Resp, reqwest::Error> {
        let raw = body.map(|b| serde_json::to_vec(b).expect("a JSON value serializes"));
        self.try_raw(method, path, raw, Some("application/json"), None)
    }

    #[track_caller]
    pub fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None)
    }

    #[track_caller]
    pub fn put(&self, path: &str, body: Value) -> Resp {
        self.call(Method::PUT, path, Some(&body))
    }

    #[track_caller]
    pub fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(&body))
    }

    #[track_caller]
    pub fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, None)
    }

    // The routes of API.md, by name.

    #[track_caller]
    pub fn schedule(&self, queue: &str, key: &str, body: Value) -> Resp {
        self.put(&task_path(queue, key), body)
    }

    /// Schedules a task and asserts it was created; returns the task object.
    #[track_caller]
    pub fn create(&self, queue: &str, key: &str, body: Value) -> Value {
        let resp = self.schedule(queue, key, body);
        resp.expect(201, &format!("PUT {}", task_path(queue, key)));
        resp.json["task"].clone()
    }

    #[track_caller]
    pub fn task(&self, queue: &str, key: &str) -> Resp {
        self.get(&task_path(queue, key))
    }

    /// Leases from a queue; asserts 200 and returns the `leases` array.
    #[track_caller]
    pub fn lease(&self, queue: &str, body: Value) -> Vec<Value> {
        let resp = self.post(&format!("/v1/queues/{}/lease", enc(queue)), body);
        resp.expect(200, &format!("POST /v1/queues/{queue}/lease"));
        resp.json["leases"]
            .as_array()
            .unwrap_or_else(|| panic!("the lease answer has no `leases` array: {}", resp.text))
            .clone()
    }

    /// Leases exactly one task that is due now; panics otherwise.
    #[track_caller]
    pub fn lease_one(&self, queue: &str) -> Value {
        let leases = self.lease(queue, serde_json::json!({"max": 1, "wait": "5s"}));
        assert_eq!(leases.len(), 1, "expected one lease from {queue}: {leases:?}");
        leases[0].clone()
    }

    #[track_caller]
    pub fn ack(&self, lease_id: &str, body: Value) -> Resp {
        self.post(&format!("/v1/leases/{}/ack", enc(lease_id)), body)
    }

    #[track_caller]
    pub fn extend(&self, lease_id: &str, body: Value) -> Resp {
        self.post(&format!("/v1/leases/{}/extend", enc(lease_id)), body)
    }

    /// The keys of every task stored in `queue`, read page by page.
    pub fn stored_keys(&self, queue: &str) -> std::collections::HashSet<String> {
        self.stored_tasks(queue).into_keys().collect()
    }

    /// Every task stored in `queue`, by key, read page by page.
    pub fn stored_tasks(&self, queue: &str) -> std::collections::BTreeMap<String, Value> {
        let mut tasks = std::collections::BTreeMap::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/v1/queues/{}/tasks?limit=1000&cursor={}", enc(queue), enc(c)),
                None => format!("/v1/queues/{}/tasks?limit=1000", enc(queue)),
            };
            let page = self.get(&path);
            let body = page.expect(200, "list the stored tasks");
            for task in body["tasks"].as_array().expect("a page lists tasks") {
                tasks.insert(task["key"].as_str().expect("each task has a key").to_owned(), task.clone());
            }
            match body["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return tasks,
            }
        }
    }

    /// Calls `GET /readyz` until its answer is `wanted`, failing after 20 s with the
    /// last answer.
    #[track_caller]
    pub fn readyz_until(&self, what: &str, wanted: impl Fn(&Resp) -> bool) -> Resp {
        self.get_until("/readyz", what, wanted)
    }

    /// GETs `path` until the answer is `wanted` (at most 20 s); that answer.
    #[track_caller]
    pub fn get_until(&self, path: &str, what: &str, wanted: impl Fn(&Resp) -> bool) -> Resp {
        let mut last = None;
        let found = punctual_testkit::poll_until(Duration::from_secs(20), || {
            let resp = self.get(path);
            if wanted(&resp) {
                return Some(resp);
            }
            last = Some(resp);
            None
        });
        found.unwrap_or_else(|| panic!("{path}: never {what} within 20 s; last: {last:?}"))
    }
}

/// `/v1/queues/{queue}/tasks/{key}` with both segments percent-encoded.
pub fn task_path(queue: &str, key: &str) -> String {
    format!("/v1/queues/{}/tasks/{}", enc(queue), enc(key))
}

/// Percent-encodes one path segment (or query value) as the CLI's client does.
pub use punctual_client::path_segment as enc;

/// The client of the load harness (`punctual_testkit::pull`) for the server at `url`,
/// giving up on a call after `timeout`.
pub fn pull_client(url: &str, timeout: Duration) -> punctual_client::Client {
    let url = punctual_client::parse_server_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    punctual_client::Client::with_timeout(&url, None, timeout).unwrap_or_else(|e| panic!("{e}"))
}

/// Milliseconds since the Unix epoch by this machine's clock (the server's clock too).
pub fn now_ms() -> i64 {
    // The tests read the wall clock to compare with the server's times.
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    let since = now.duration_since(std::time::UNIX_EPOCH).expect("the clock is after 1970");
    i64::try_from(since.as_millis()).expect("epoch milliseconds fit in i64")
}

/// Reads a time of a response: RFC 3339 UTC with exactly three fractional digits and
/// `Z` (`2026-11-30T12:00:00.000Z`), as API.md fixes it. Panics on any other shape.
#[track_caller]
pub fn parse_time(value: &Value) -> i64 {
    let text = value.as_str().unwrap_or_else(|| panic!("a time must be a string, got {value}"));
    let shape_ok = punctual_testkit::api::is_api_time(text);
    assert!(shape_ok, "time '{text}' is not of the form 2026-11-30T12:00:00.000Z");
    let num = |range: std::ops::Range<usize>| -> i64 { text[range].parse().expect("checked digits") };
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let (hour, minute, second, milli) = (num(11..13), num(14..16), num(17..19), num(20..23));
    assert!((1..=12).contains(&month) && (1..=31).contains(&day), "time '{text}' has no such date");
    assert!(hour < 24 && minute < 60 && second < 60, "time '{text}' has no such time of day");
    days_from_civil(year, month, day) * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + milli
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Reads a duration of a response as milliseconds: integer milliseconds or API.md's
/// string form (`"1500ms"`, `"30s"`, `"1h 30m"`, `"7d"`). Panics on any other shape.
#[track_caller]
pub fn parse_duration(value: &Value) -> u64 {
    if let Some(ms) = value.as_u64() {
        return ms;
    }
    let text = value.as_str().unwrap_or_else(|| panic!("a duration must be a string or integer, got {value}"));
    let mut total = 0u64;
    let mut rest = text.trim();
    assert!(!rest.is_empty(), "empty duration");
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        assert!(digits > 0, "duration '{text}' is not of API.md's form");
        let number: u64 = rest[..digits].parse().expect("checked digits");
        rest = &rest[digits..];
        let unit = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let scale = match &rest[..unit] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            other => panic!("duration '{text}' has unit '{other}', not one of API.md's"),
        };
        total += number * scale;
        rest = rest[unit..].trim_start();
    }
    total
}

/// Asserts a task object has exactly API.md's fields and its times are of API.md's
/// form.
#[track_caller]
pub fn assert_task_shape(task: &Value) {
    punctual_testkit::api::assert_task_shape(task, parse_time);
}

/// Asserts `|actual - expected| <= tolerance` for two epoch-millisecond times.
#[track_caller]
pub fn assert_near(actual: i64, expected: i64, tolerance: i64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} is {} ms from the expected {expected} (tolerance {tolerance} ms)",
        actual - expected
    );
}
