//! Long-poll leases: the engine wakes a waiting request the moment a task falls due (no
//! polling), concurrent waiters never share a task, a wait ends empty, and leases a
//! client never received are released at once instead of being left to expire.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{TestServer, within};
use punctual_core::{LeaseOptions, Timestamp};
use punctual_server::serve_on;
use serde_json::{Value, json};
use tower::ServiceExt;

fn lease_request(queue: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(format!("/v1/queues/{queue}/lease"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn a_waiting_lease_answers_within_milliseconds_of_due() {
    let s = TestServer::start().await;
    let (_, created) = s.put("/v1/queues/q/tasks/soon", json!({"delay": "300ms"})).await;
    let due = Timestamp::parse(created["task"]["due_at"].as_str().unwrap()).unwrap();
    let leases = within(10, s.lease("q", json!({"wait": "20s"}))).await;
    let answered = s.engine().clock().now();
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0]["task"]["key"], "soon");
    assert!(answered >= due, "answered before the task was due");
    let lag = answered.saturating_since(due);
    // Loose bound for a shared CI machine; the benchmark measures it precisely.
    assert!(lag < Duration::from_millis(250), "fire lag {lag:?}");
    let (_, queue) = s.get("/v1/queues/q").await;
    assert!(queue["lag_ms"]["p99"].as_u64().unwrap() < 250, "{queue}");
}

#[tokio::test]
async fn a_waiter_sleeps_until_due_on_the_engine_clock() {
    let s = TestServer::manual().await;
    let clock = s.clock.clone().unwrap();
    s.put("/v1/queues/q/tasks/later", json!({"delay": "10m"})).await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "60s"}))));
    // Only the engine's clock passing the due time can release it.
    clock.advance(Duration::from_secs(600));
    let response = within(10, waiter).await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(body["leases"][0]["task"]["key"], "later");
}

#[tokio::test]
async fn a_wait_with_nothing_due_ends_with_an_empty_list() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/far", json!({"delay": "1h"})).await;
    let started = s.engine().clock().now();
    let leases = within(10, s.lease("q", json!({"wait": "150ms"}))).await;
    let waited = s.engine().clock().now().saturating_since(started);
    assert!(leases.is_empty());
    assert!(waited >= Duration::from_millis(150), "the request was held for the wait, not {waited:?}");
    assert!(waited < Duration::from_secs(5), "the request was answered after the wait, not {waited:?}");
    assert_eq!(s.lease("q", json!({})).await.len(), 0);
    assert_eq!(within(10, s.lease("q", json!({"wait": 0}))).await.len(), 0, "wait 0 answers at once, empty");
}

/// Issue 16: checked through the real binary before (`crates/punctual-cli/tests/long_poll.rs`),
/// where the waiter could be asked before or after the task was scheduled.
#[tokio::test]
async fn a_waiter_already_waiting_answers_within_milliseconds_of_due() {
    let s = TestServer::start().await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "20s"}))));
    s.until_waiting("q", 1).await;
    let (_, created) = s.put("/v1/queues/q/tasks/soon", json!({"delay": "300ms"})).await;
    let due = Timestamp::parse(created["task"]["due_at"].as_str().unwrap()).unwrap();
    let response = within(10, waiter).await.unwrap().unwrap();
    let answered = s.engine().clock().now();
    let body: Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(body["leases"][0]["task"]["key"], "soon", "{body}");
    let leased_at = Timestamp::parse(body["leases"][0]["expires_at"].as_str().unwrap()).unwrap().as_millis() - 30_000;
    assert!(leased_at >= due.as_millis(), "leased {} ms before due", due.as_millis() - leased_at);
    let lag = answered.saturating_since(due);
    // Loose bound for a shared CI machine; the benchmark measures it precisely.
    assert!(lag < Duration::from_millis(250), "fire lag {lag:?}");
}

/// Both due tasks at once, then the one that falls due the moment it does: a wait ends
/// with the first due tasks, it does not wait to fill `max`. On the manual clock, an
/// answer that came only when the wait ran out could not come at all.
#[tokio::test]
async fn a_waiting_lease_does_not_wait_to_fill_max() {
    let s = TestServer::manual().await;
    s.create("fill.q", "due", json!({})).await;
    s.create("fill.q", "due-too", json!({})).await;
    let leases = within(10, s.lease("fill.q", json!({"max": 10, "wait": "10s"}))).await;
    assert_eq!(leases.len(), 2, "both due tasks, at once: {leases:?}");

    s.create("fill.q", "soon", json!({"delay": "300ms"})).await;
    s.create("fill.q", "much-later", json!({"delay": "1h"})).await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("fill.q", json!({"max": 10, "wait": "10s"}))));
    s.until_waiting("fill.q", 1).await;
    s.clock.as_ref().unwrap().advance(Duration::from_millis(300));
    let body = body_of(within(10, waiter).await.unwrap().unwrap()).await;
    let leases = body["leases"].as_array().unwrap();
    assert_eq!(leases.len(), 1, "the task that fell due: {body}");
    assert_eq!(leases[0]["task"]["key"], "soon");
}

/// On the manual clock: a waiter gets a task moved earlier at its new due time (not an
/// hour later), and a task cancelled before it was due never.
#[tokio::test]
async fn a_waiter_is_woken_by_a_task_moved_earlier_and_not_by_a_cancelled_one() {
    let s = TestServer::manual().await;
    let clock = s.clock.clone().unwrap();
    s.create("move.q", "k", json!({"delay": "1h"})).await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("move.q", json!({"wait": "10s"}))));
    s.until_waiting("move.q", 1).await;
    let (status, _) = s.put("/v1/queues/move.q/tasks/k", json!({"delay": "300ms"})).await;
    assert_eq!(status, StatusCode::OK, "replaced with an earlier due time");
    clock.advance(Duration::from_millis(300));
    let body = body_of(within(10, waiter).await.unwrap().unwrap()).await;
    assert_eq!(body["leases"].as_array().unwrap().len(), 1, "the waiter gets the task moved earlier: {body}");
    assert_eq!(body["leases"][0]["expires_at"], common::at(30_300), "leased at its new due time");

    s.create("cancel.q", "k", json!({"delay": "1s"})).await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("cancel.q", json!({"wait": "3s"}))));
    s.until_waiting("cancel.q", 1).await;
    assert_eq!(s.delete("/v1/queues/cancel.q/tasks/k").await.0, StatusCode::NO_CONTENT, "cancel before due");
    clock.advance(Duration::from_secs(3));
    let body = body_of(within(10, waiter).await.unwrap().unwrap()).await;
    assert_eq!(body, json!({"leases": []}), "a task cancelled before it was due is never leased");
}

async fn body_of(response: axum::response::Response) -> Value {
    assert_eq!(response.status(), StatusCode::OK);
    serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap()
}

#[tokio::test]
async fn concurrent_waiters_never_share_a_task() {
    let s = TestServer::start().await;
    let waiters: Vec<_> = (0..8)
        .map(|_| tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "20s", "max": 1})))))
        .collect();
    let tasks: Vec<Value> = (0..8).map(|i| json!({"key": format!("t{i}")})).collect();
    let (status, _) = s.post("/v1/queues/q/tasks", json!({"tasks": tasks})).await;
    assert_eq!(status, StatusCode::OK);
    let mut keys = Vec::new();
    for waiter in waiters {
        let response = within(20, waiter).await.unwrap().unwrap();
        let body: Value =
            serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
        for lease in body["leases"].as_array().unwrap() {
            keys.push(lease["task"]["key"].as_str().unwrap().to_owned());
        }
    }
    keys.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    assert_eq!(keys, expected, "each task leased exactly once");
    let (_, queue) = s.get("/v1/queues/q").await;
    assert_eq!((&queue["leased"], &queue["scheduled"]), (&json!(8), &json!(0)), "{queue}");
}

/// Six waiters leasing up to five each, forty tasks falling due at once: each waiter
/// gets one to five, and no task goes to two of them.
#[tokio::test]
async fn waiters_leasing_many_at_once_never_share_a_task() {
    let s = TestServer::start().await;
    let waiters: Vec<_> = (0..6)
        .map(|_| tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "20s", "max": 5})))))
        .collect();
    let tasks: Vec<Value> = (0..40).map(|i| json!({"key": format!("t{i:02}")})).collect();
    assert_eq!(s.post("/v1/queues/q/tasks", json!({"tasks": tasks})).await.0, StatusCode::OK);
    let mut leased = Vec::new();
    for waiter in waiters {
        let body = body_of(within(20, waiter).await.unwrap().unwrap()).await;
        let leases = body["leases"].as_array().unwrap();
        assert!((1..=5).contains(&leases.len()), "each waiter gets 1..=max tasks: {}", leases.len());
        leased.extend(leases.iter().map(|l| l["task"]["key"].as_str().unwrap().to_owned()));
    }
    let rest = s.lease("q", json!({"max": 1000})).await;
    leased.extend(rest.iter().map(|l| l["task"]["key"].as_str().unwrap().to_owned()));
    let distinct: std::collections::HashSet<&String> = leased.iter().collect();
    assert_eq!(distinct.len(), leased.len(), "a task was handed out twice: {leased:?}");
    assert_eq!(leased.len(), 40, "every task leased once");
}

#[tokio::test]
async fn a_response_dropped_unsent_releases_its_leases() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    let response = s.app.clone().oneshot(lease_request("q", json!({"lease": "1h"}))).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.1["state"], "leased");
    drop(response);
    // Released, the task is due again at once; left to expire it would be leased for an hour.
    let leases = within(10, s.lease("q", json!({"wait": "10s"}))).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0]["attempt"], 1, "a release is not a failed attempt");
}

#[tokio::test]
async fn a_response_read_keeps_its_leases() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    assert_eq!(s.lease("q", json!({"lease": "1h"})).await.len(), 1);
    assert_eq!(s.lease("q", json!({"wait": "200ms"})).await.len(), 0);
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.1["state"], "leased");
}

#[tokio::test]
async fn a_waiter_whose_client_left_takes_nothing() {
    let s = TestServer::start().await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "30s", "lease": "1h"}))));
    tokio::task::yield_now().await;
    waiter.abort();
    let _ = waiter.await;
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    // Had the abandoned waiter kept the task, it would stay leased for an hour.
    let leases =
        within(10, s.engine().lease("q", LeaseOptions::default().wait(Duration::from_secs(10)))).await.unwrap();
    assert_eq!(leases.len(), 1);
}

#[tokio::test]
async fn a_client_that_hangs_up_over_tcp_loses_no_task() {
    use tokio::io::AsyncWriteExt;
    let s = TestServer::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(
        listener,
        s.state.clone(),
        async { stopped.await.unwrap_or(()) },
        Duration::from_secs(5),
    ));
    let body = r#"{"wait": "30s", "lease": "1h"}"#;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /v1/queues/q/lease HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // The request is in; the client goes away while it waits.
    let (status, _) = common::http(addr, "GET", "/healthz", "").await;
    assert_eq!(status, 200);
    drop(stream);
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    let leases =
        within(10, s.engine().lease("q", LeaseOptions::default().wait(Duration::from_secs(10)))).await.unwrap();
    assert_eq!(leases.len(), 1, "the task went to a client that had left");
    stop.send(()).unwrap();
    within(10, server).await.unwrap();
}

#[tokio::test]
async fn stopping_answers_waiting_leases_at_once_with_nothing() {
    let s = TestServer::start().await;
    let waiter = tokio::spawn(s.app.clone().oneshot(lease_request("q", json!({"wait": "60s"}))));
    tokio::task::yield_now().await;
    s.state.shutdown_token().cancel();
    let response = within(10, waiter).await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(body, json!({"leases": []}));
}

#[tokio::test]
async fn a_long_poll_may_outlast_the_request_timeout() {
    let mut options = punctual_server::HttpOptions::default();
    options.request_timeout = Duration::from_millis(100);
    let s = TestServer::build(options, punctual_core::EngineConfig::default(), None).await;
    let leases = within(10, s.lease("q", json!({"wait": "400ms"}))).await;
    assert!(leases.is_empty());
    // Other routes keep the short limit (a body that never arrives is cut at 100 ms).
    let never = futures_util::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/queues/q/tasks")
        .header("content-type", "application/json")
        .body(Body::from_stream(never))
        .unwrap();
    let (status, _) = within(10, s.call(req)).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
}
