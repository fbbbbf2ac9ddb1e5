//! Malformed requests, each with the status, code and field it must get; afterwards the
//! server is healthy and what was stored is intact. Guards against a panic, a 500, or
//! a vague error on bad input, and against bad input changing anything.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{TestServer, code, field};
use serde_json::{Value, json};

struct Case {
    method: Method,
    path: String,
    content_type: &'static str,
    body: String,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
}

fn case(
    method: Method,
    path: &str,
    body: impl Into<String>,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
) -> Case {
    Case { method, path: path.to_owned(), content_type: "application/json", body: body.into(), status, code, field }
}

#[tokio::test]
async fn each_malformed_request_gets_its_status_code_and_field() {
    let s = TestServer::start().await;
    let (_, original) = s.put("/v1/queues/keep/tasks/safe", json!({"delay": "1h", "payload": {"v": 1}})).await;
    s.put("/v1/queues/work/tasks/w", json!({})).await;
    let lease_id = s.lease("work", json!({"lease": "1h"})).await[0]["lease_id"].as_str().unwrap().to_owned();
    let mut tampered = lease_id.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();

    let put = |body: &str, status, code, field| case(Method::PUT, "/v1/queues/q/tasks/k", body, status, code, field);
    let lease = |body: &str, field| case(Method::POST, "/v1/queues/work/lease", body, 400, "invalid_argument", field);
    let ack = format!("/v1/leases/{lease_id}/ack");
    let big_payload = format!(r#"{{"payload": "{}"}}"#, "x".repeat(70_000));
    let huge_body = format!(r#"{{"payload": "{}"}}"#, "x".repeat(400_000));
    let over_batch =
        json!({"tasks": (0..10_001).map(|i| json!({"key": i.to_string()})).collect::<Vec<_>>()}).to_string();
    let over_acks =
        json!({"acks": (0..10_001).map(|_| json!({"lease_id": "x", "outcome": "done"})).collect::<Vec<_>>()})
            .to_string();
    let long_key = format!("/v1/queues/q/tasks/{}", "k".repeat(513));
    let invalid = "invalid_argument";

    let mut cases = vec![
        put(r#"{"delay": "#, 400, invalid, None),
        put(r#"{"delay": "1s"} trailing"#, 400, invalid, None),
        put("[]", 400, invalid, None),
        put(r#""just a string""#, 400, invalid, None),
        put(r#"{"max_attempts": "ten"}"#, 400, invalid, Some("max_attempts")),
        put(r#"{"max_attempts": 0}"#, 400, invalid, Some("max_attempts")),
        put(r#"{"max_attempts": 4294967296}"#, 400, invalid, Some("max_attempts")),
        put(r#"{"delay": "30 minutes"}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": -1}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": 1.5}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": 15.5}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": -1.0}"#, 400, invalid, Some("delay")),
        put(r#"{"max_attempts": 2.5}"#, 400, invalid, Some("max_attempts")),
        // API.md: a PUT of a task needs a JSON body ({} for a task due now).
        put("", 400, invalid, None),
        put("  \n", 400, invalid, None),
        // Epoch seconds, as Java's Instant.getEpochSecond() gives: was read as 1970.
        put(r#"{"due_at": 1796040000}"#, 400, invalid, Some("due_at")),
        put(r#"{"due_at": 99999999999}"#, 400, invalid, Some("due_at")),
        put(r#"{"repeat": {"every": "1h", "until": 1796040000}}"#, 400, invalid, Some("repeat.until")),
        put(r#"{"delay": "999999999999999d"}"#, 400, invalid, Some("delay")),
        put(r#"{"due_at": "tomorrow"}"#, 400, invalid, Some("due_at")),
        put(r#"{"due_at": -5}"#, 400, invalid, Some("due_at")),
        // Found by fuzzing: the end of 9999-12-31 was stored, then could not be shown.
        put(r#"{"due_at": 253402300799999}"#, 400, invalid, Some("due_at")),
        put(r#"{"due_at": "253402300799999"}"#, 400, invalid, Some("due_at")),
        put(r#"{"delay": "1s", "due_at": 0}"#, 400, invalid, Some("due_at")),
        put(r#"{"repeat": {"every": "0s"}}"#, 400, invalid, Some("repeat.every")),
        put(r#"{"repeat": {"every": "1h", "cron": "* * * * *"}}"#, 400, invalid, Some("repeat")),
        put(r#"{"repeat": {"cron": "61 * * * *"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"every": "1h", "times": 0}}"#, 400, invalid, Some("repeat.times")),
        put(r#"{"repeat": {"every": "1h", "colour": 1}}"#, 400, invalid, Some("repeat.colour")),
        put(r#"{"backoff": {"initial": "1s", "factor": 2, "max": "1ms"}}"#, 400, invalid, Some("backoff.max")),
        put(r#"{"backoff": {"initial": "1s", "factor": 2}}"#, 400, invalid, Some("backoff.max")),
        put(r#"{"dealy": "1s"}"#, 400, invalid, Some("dealy")),
        put(r#"{"tags": ["ok", ""]}"#, 400, invalid, Some("tags[1]")),
        put(r#"{"tags": "pi-9"}"#, 400, invalid, Some("tags")),
        put(r#"{"if_exists": "sometimes"}"#, 400, invalid, Some("if_exists")),
        put(r#"{"key": "other"}"#, 400, invalid, Some("key")),
        put(&big_payload, 413, "payload_too_large", Some("payload")),
        put(&huge_body, 413, "payload_too_large", None),
        case(Method::PUT, "/v1/queues/bad%2Fname/tasks/k", "{}", 400, invalid, Some("queue")),
        case(Method::PUT, &format!("/v1/queues/{}/tasks/k", "q".repeat(129)), "{}", 400, invalid, Some("queue")),
        case(Method::PUT, &long_key, "{}", 400, invalid, Some("key")),
        case(Method::PUT, "/v1/queues/q/tasks/a%0Ab", "{}", 400, invalid, Some("key")),
        case(Method::PUT, "/v1/queues/q/tasks/%FF", "{}", 400, invalid, Some("key")),
        case(Method::GET, "/v1/queues/q/tasks/%FF", "", 400, invalid, Some("key")),
        // Issue 14 (9): an invalid escape was taken literally, naming the task '%zz'.
        case(Method::PUT, "/v1/queues/q/tasks/%zz", "{}", 400, invalid, Some("key")),
        case(Method::GET, "/v1/queues/q/tasks/%zz", "", 400, invalid, Some("key")),
        case(Method::DELETE, "/v1/queues/q/tasks/a%2", "", 400, invalid, Some("key")),
        case(Method::GET, "/v1/queues/q%zz/tasks", "", 400, invalid, Some("queue")),
        case(Method::DELETE, "/v1/queues/q/tags/%", "", 400, invalid, Some("tag")),
        case(Method::POST, "/v1/queues/q/dead/%zz/retry", "", 400, invalid, Some("key")),
        case(Method::POST, "/v1/leases/%zz/ack", r#"{"outcome": "done"}"#, 400, invalid, Some("lease_id")),
        case(Method::GET, "/v1/queues/q/tasks?cursor=%zz", "", 400, invalid, Some("cursor")),
        case(Method::DELETE, "/v1/queues/q/tags/a%01", "", 400, invalid, Some("tag")),
        case(Method::POST, "/v1/queues/q/tasks", &over_batch, 400, invalid, Some("tasks")),
        case(Method::POST, "/v1/queues/q/tasks", r#"{"tasks": 5}"#, 400, invalid, Some("tasks")),
        case(Method::POST, "/v1/queues/q/tasks", r#"{}"#, 400, invalid, Some("tasks")),
        case(Method::POST, "/v1/queues/q/tasks", r#"{"tasks": [], "extra": 1}"#, 400, invalid, Some("extra")),
        case(Method::POST, "/v1/queues/bad%20q/tasks", r#"{"tasks": []}"#, 400, invalid, Some("queue")),
        lease(r#"{"max": 0}"#, Some("max")),
        lease(r#"{"max": 1001}"#, Some("max")),
        lease(r#"{"max": "ten"}"#, Some("max")),
        lease(r#"{"lease": "500ms"}"#, Some("lease")),
        lease(r#"{"lease": "13h"}"#, Some("lease")),
        lease(r#"{"wait": "61s"}"#, Some("wait")),
        lease(r#"{"wait": "x"}"#, Some("wait")),
        lease(r#"{"lease": 15.5}"#, Some("lease")),
        lease(r#"{"max": 1.5}"#, Some("max")),
        lease(r#"{"wiat": "1s"}"#, Some("wiat")),
        case(Method::POST, &ack, r#"{"outcome": "maybe"}"#, 400, invalid, Some("outcome")),
        case(Method::POST, &ack, r#"{}"#, 400, invalid, Some("outcome")),
        case(Method::POST, &ack, r#"{"outcome": 1}"#, 400, invalid, Some("outcome")),
        case(Method::POST, &ack, r#"{"outcome": "done", "delay": "1s"}"#, 400, invalid, Some("delay")),
        case(Method::POST, &ack, r#"{"outcome": "retry", "delay": "soon"}"#, 400, invalid, Some("delay")),
        case(Method::POST, &ack, r#"{"outcome": "reschedule", "due_at": "someday"}"#, 400, invalid, Some("due_at")),
        case(Method::POST, &format!("/v1/leases/{tampered}/ack"), r#"{"outcome": "done"}"#, 404, "not_found", None),
        case(Method::POST, "/v1/leases/x/ack", r#"{"outcome": "done"}"#, 404, "not_found", None),
        case(
            Method::POST,
            &format!("/v1/leases/{}/ack", "A".repeat(5000)),
            r#"{"outcome": "done"}"#,
            404,
            "not_found",
            None,
        ),
        case(Method::POST, "/v1/leases/%00%FF/ack", r#"{"outcome": "done"}"#, 400, invalid, Some("lease_id")),
        case(Method::POST, &format!("/v1/leases/{tampered}/extend"), r#"{"lease": "1m"}"#, 404, "not_found", None),
        case(
            Method::POST,
            &format!("/v1/leases/{lease_id}/extend"),
            r#"{"lease": "13h"}"#,
            400,
            invalid,
            Some("lease"),
        ),
        case(Method::POST, "/v1/acks", &over_acks, 400, invalid, Some("acks")),
        case(Method::POST, "/v1/acks", r#"{"acks": {}}"#, 400, invalid, Some("acks")),
        case(Method::GET, "/v1/queues/q/tasks?limit=abc", "", 400, invalid, Some("limit")),
        case(Method::GET, "/v1/queues/q/tasks?limit=-1", "", 400, invalid, Some("limit")),
        case(Method::GET, "/v1/queues/q/tasks?state=running", "", 400, invalid, Some("state")),
        case(Method::GET, "/v1/queues/q/tasks?state=dead&state=leased", "", 400, invalid, Some("state")),
        case(Method::GET, "/v1/queues/q/tasks?cursor=%FF", "", 400, invalid, Some("cursor")),
        case(Method::GET, "/v1/queues/q/dead?state=leased", "", 400, invalid, Some("state")),
    ];
    // First found through the real binary (crates/punctual-cli/tests/end_to_end/bad_input.rs).
    let payload_65_537 = format!(r#"{{"payload": "{}"}}"#, "x".repeat(65_535));
    let body_2_mib = format!(r#"{{"payload": "{}"}}"#, "x".repeat(2 << 20));
    let key_513_in_171 = format!("/v1/queues/q/tasks/{}", "%E2%82%AC".repeat(171));
    cases.extend([
        put("[1, 2]", 400, invalid, None),
        put(r#"{"delay": true}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": "1.5h"}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": ""}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": "5fortnights"}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": "P1M"}"#, 400, invalid, Some("delay")),
        put(r#"{"delay": "-PT5M"}"#, 400, invalid, Some("delay")),
        put(r#"{"due_at": "2026-13-45T00:00:00Z"}"#, 400, invalid, Some("due_at")),
        put(r#"{"due_at": "2099-01-01 10:00"}"#, 400, invalid, Some("due_at")),
        put(r#"{"due_at": true}"#, 400, invalid, Some("due_at")),
        put(r#"{"max_attempts": -1}"#, 400, invalid, Some("max_attempts")),
        put(r#"{"tags": [1]}"#, 400, invalid, Some("tags[0]")),
        put(r#"{"repeat": {"every": "soon"}}"#, 400, invalid, Some("repeat.every")),
        // 60 ms, meant as seconds.
        put(r#"{"repeat": {"every": 60}}"#, 400, invalid, Some("repeat.every")),
        put(r#"{"repeat": {"every": "500ms"}}"#, 400, invalid, Some("repeat.every")),
        put(&payload_65_537, 413, "payload_too_large", Some("payload")),
        put(&body_2_mib, 413, "payload_too_large", None),
        put(r#"{"repeat": {"cron": "0 9 * * *", "tz": "Mars/Olympus"}}"#, 400, invalid, Some("repeat.tz")),
        // Cron syntax beyond Vixie's, and repeats that would never fire (issue 14).
        put(r#"{"repeat": {"cron": "0 0 0 1 1 * 1999"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"cron": "* * * * * * *"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"cron": "1,,2 * * * *"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"cron": "0 0 L * ?"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"cron": "0 0 31 4 *"}}"#, 400, invalid, Some("repeat.cron")),
        // Spring's and Quartz's cron: another syntax's expression, or a syntax without cron.
        put(r#"{"repeat": {"cron": "0 9 * * MON-FRI", "cron_syntax": "spring"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"cron": "0 0 9 * * MON-FRI", "cron_syntax": "quartz"}}"#, 400, invalid, Some("repeat.cron")),
        put(r#"{"repeat": {"every": "1h", "cron_syntax": "spring"}}"#, 400, invalid, Some("repeat.cron_syntax")),
        put(r#"{"repeat": {"cron": "* * * * *", "cron_syntax": "unix"}}"#, 400, invalid, Some("repeat.cron_syntax")),
        put(r#"{"repeat": {"every": "1h", "until": "2020-01-01T00:00:00Z"}}"#, 400, invalid, Some("repeat.until")),
        put(
            r#"{"repeat": {"cron": "0 9 * * *", "until": "2020-01-01T00:00:00Z"}}"#,
            400,
            invalid,
            Some("repeat.until"),
        ),
        put(
            r#"{"delay": "36500d", "repeat": {"every": "1h", "until": "2100-01-01T00:00:00Z"}}"#,
            400,
            invalid,
            Some("repeat.until"),
        ),
        case(Method::PUT, "/v1/queues/bad%20queue/tasks/k", "{}", 400, invalid, Some("queue")),
        case(Method::PUT, "/v1/queues/%C3%BCn%C3%AFcode/tasks/k", "{}", 400, invalid, Some("queue")),
        case(Method::PUT, "/v1/queues/%FF/tasks/k", "{}", 400, invalid, Some("queue")),
        case(Method::GET, "/v1/queues/%FF", "", 400, invalid, Some("queue")),
        case(Method::PUT, "/v1/queues/q/tasks/a%01b", "{}", 400, invalid, Some("key")),
        case(Method::PUT, "/v1/queues/q/tasks/a%7F", "{}", 400, invalid, Some("key")),
        case(Method::PUT, &key_513_in_171, "{}", 400, invalid, Some("key")),
        case(Method::POST, "/v1/queues/q/tasks", r#"{"tasks": [{"key": "a"}"#, 400, invalid, None),
        case(Method::POST, "/v1/queues/bad%20queue/lease", "{}", 400, invalid, Some("queue")),
        case(Method::POST, &ack, "{outcome: done}", 400, invalid, None),
        case(
            Method::POST,
            &format!("/v1/leases/{lease_id}/extend"),
            r#"{"lease": "forever"}"#,
            400,
            invalid,
            Some("lease"),
        ),
        case(Method::POST, "/v1/acks", r#"{"acks": "x"}"#, 400, invalid, Some("acks")),
        case(Method::GET, "/v1/queues/q/tasks?cursor=garbage%21%21", "", 400, invalid, Some("cursor")),
        case(Method::GET, "/v1/queues/q/dead?limit=0", "", 400, invalid, Some("limit")),
    ]);
    let mut text_plain = put(r#"{"delay": "1s"}"#, 400, invalid, None);
    text_plain.content_type = "text/plain";
    cases.push(text_plain);
    let mut form = put("delay=1s", 400, invalid, None);
    form.content_type = "application/x-www-form-urlencoded";
    cases.push(form);

    for c in &cases {
        let req = Request::builder()
            .method(c.method.clone())
            .uri(&c.path)
            .header("content-type", c.content_type)
            .body(Body::from(c.body.clone()))
            .unwrap();
        let (status, body) = s.call(req).await;
        let shown = if c.body.len() > 80 { format!("{}…", &c.body[..80]) } else { c.body.clone() };
        let label = format!("{} {} {shown}", c.method, &c.path[..c.path.len().min(80)]);
        assert_eq!(status.as_u16(), c.status, "{label}: {body}");
        assert_eq!(code(&body), c.code, "{label}: {body}");
        assert_eq!(field(&body), c.field, "{label}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{label}");
    }

    // Nothing changed: the stored task, the lease (still live), and no task was created.
    assert_eq!(s.get("/healthz").await.0, StatusCode::OK);
    let (status, now) = s.get("/v1/queues/keep/tasks/safe").await;
    assert_eq!((status, &now), (StatusCode::OK, &original["task"]));
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.0, StatusCode::NOT_FOUND);
    // '%zz' was stored under the literal key '%zz', which '%25zz' names.
    assert_eq!(s.get("/v1/queues/q/tasks/%25zz").await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.get("/v1/queues/q").await.1["scheduled"], 0);
    let (status, _) = s.post(&format!("/v1/leases/{lease_id}/ack"), json!({"outcome": "done"})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn an_unknown_cursor_is_refused_not_a_500() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    let (status, body) = s.get("/v1/queues/q/tasks?cursor=not-a-cursor").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!((code(&body), field(&body)), ("invalid_argument", Some("cursor")));
}

/// Issue 14 (8): whole numbers written as floats (`{"lease": 15.0}`, as many JSON
/// encoders write numbers) were refused as "15 is not whole milliseconds".
#[tokio::test]
async fn whole_numbers_written_as_floats_are_taken() {
    let s = TestServer::manual().await;
    let (status, body) = s.put("/v1/queues/q/tasks/k", json!({"delay": 1500.0, "max_attempts": 3.0})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["task"]["due_at"], "2026-11-30T12:00:01.500Z");
    assert_eq!(body["task"]["max_attempts"], 3);
    let (status, body) =
        s.put("/v1/queues/q/tasks/at", json!({"due_at": 1.7964e12, "repeat": {"every": 60000.0, "times": 2.0}})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        (&body["task"]["due_at"], &body["task"]["repeat"]["every"]),
        (&json!("2026-12-04T16:00:00.000Z"), &json!("1m"))
    );
    s.clock.as_ref().unwrap().advance(std::time::Duration::from_secs(2));
    let leases = s.lease("q", json!({"lease": 15000.0, "max": 1.0, "wait": 0.0})).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0]["expires_at"], "2026-11-30T12:00:17.000Z");
    let id = leases[0]["lease_id"].as_str().unwrap();
    let (status, body) = s.post(&format!("/v1/leases/{id}/extend"), json!({"lease": 60000.0})).await;
    assert_eq!((status, &body["expires_at"]), (StatusCode::OK, &json!("2026-11-30T12:01:02.000Z")), "{body}");
    let (status, _) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "retry", "delay": 0.0})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

/// Issue 14 (9): a body that stalls past the request timeout answered 400.
#[tokio::test]
async fn a_body_that_never_ends_times_out() {
    let mut options = punctual_server::HttpOptions::default();
    options.request_timeout = std::time::Duration::from_millis(200);
    let s = TestServer::build(options, punctual_core::EngineConfig::default(), None).await;
    let never = futures_util::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
    let req = Request::builder()
        .method(Method::PUT)
        .uri("/v1/queues/q/tasks/k")
        .header("content-type", "application/json")
        .body(Body::from_stream(never))
        .unwrap();
    let (status, body) = common::within(10, s.call(req)).await;
    assert_eq!((status, code(&body)), (StatusCode::REQUEST_TIMEOUT, "request_timeout"));
    assert!(body["error"]["message"].as_str().unwrap().contains("did not arrive within 200ms"), "{body}");
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.0, StatusCode::NOT_FOUND);
    let _: Value = body;
}

/// The edges that are valid: a `/` in a key sent as `%2F`, keys of exactly 512 bytes,
/// the longest queue name, a payload of exactly 64 KiB, ISO 8601 durations, the
/// shortest repeat and the bounds of a lease. First checked through the real binary
/// (`crates/punctual-cli/tests/end_to_end/bad_input.rs`).
#[tokio::test]
async fn valid_edge_values_are_accepted() {
    let s = TestServer::manual().await;

    // A key with `/` travels as %2F and stays one key.
    let task = s.create("q", "a/b", json!({"delay": "1h"})).await;
    assert_eq!(task["key"], "a/b");
    assert_eq!(s.get("/v1/queues/q/tasks/a%2Fb").await.1["key"], "a/b", "GET of a key with %2F");
    assert_eq!(s.get("/v1/queues/q/tasks").await.1["tasks"][0]["key"], "a/b");
    assert_eq!(s.get("/v1/queues/q/tasks/a").await.0, StatusCode::NOT_FOUND, "a/b is not a");
    assert_eq!(s.delete("/v1/queues/q/tasks/a%2Fb").await.0, StatusCode::NO_CONTENT, "DELETE of a key with %2F");

    // Keys of exactly 512 bytes, in ASCII and in 3-byte characters; other printable
    // Unicode and punctuation.
    for key in
        ["k".repeat(512), format!("{}kk", "€".repeat(170)), "task-77@pi-9@zhang.wei".into(), "订单 #1?&=%".into()]
    {
        assert_eq!(s.create("q", &key, json!({})).await["key"], key.as_str());
        let (status, _) = s.get(&format!("/v1/queues/q/tasks/{}", common::enc(&key))).await;
        assert_eq!(status, StatusCode::OK, "GET of key {key:?}");
    }
    // The longest queue name and every allowed character.
    let queue = format!("{}._:-", "Q9".repeat(62));
    assert_eq!(queue.len(), 128);
    s.create(&queue, "k", json!({})).await;
    assert_eq!(s.get(&format!("/v1/queues/{queue}")).await.0, StatusCode::OK, "the longest queue name");

    // A payload of exactly 64 KiB serialized as JSON (the string and its two quotes).
    let task = s.create("q", "big", json!({"payload": "x".repeat(65_534)})).await;
    assert_eq!(task["payload"].as_str().map(str::len), Some(65_534));
    // ISO 8601 durations, as Jackson writes a java.time.Duration (were refused).
    let task = s.create("q", "iso", json!({"delay": "PT30M", "repeat": {"every": "P1D"}})).await;
    assert_eq!(task["repeat"]["every"], "1d", "{task}");
    assert_eq!(task["due_at"], common::at(1_800_000), "PT30M is 30 minutes: {task}");
    // The shortest repeat: one second.
    s.create("q", "every-second", json!({"repeat": {"every": 1000}})).await;
    // The bounds of lease: 1 s and 12 h, max 1000, wait 60 s... and 0.
    for body in [json!({"lease": "1s"}), json!({"lease": "12h", "max": 1000}), json!({"wait": 0, "lease": 43_200_000})]
    {
        let (status, answer) = s.post("/v1/queues/empty.q/lease", body.clone()).await;
        assert_eq!(status, StatusCode::OK, "lease {body}: {answer}");
    }
}
