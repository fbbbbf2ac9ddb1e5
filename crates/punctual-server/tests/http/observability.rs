//! `/metrics`, `/readyz` and the activity history over HTTP, on a manual clock.
//!
//! Guards against counters that disagree with what the API did, histogram counts that
//! miss tries, and a stall that stays invisible: a handler pool blocked on purpose must
//! make `punctual_oldest_overdue_seconds` grow and `/readyz` name the queue (with
//! `max_overdue` set) while staying ready — a backlog is the same on every node, so
//! failing readiness for it would take every node out of the load balancer (issue 15,
//! 5) — and unblocking it must recover both. The watchdog must not take a full pool
//! for a stalled loop.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use common::{START, TestServer, metrics_text, sample, within};
use punctual_core::{Delivery, EngineConfig, ManualClock, Outcome, Worker};
use punctual_server::HttpOptions;
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};

#[tokio::test]
async fn counters_and_histograms_after_a_scripted_run() {
    let s = TestServer::manual().await;
    let clock = s.clock.clone().unwrap();
    for key in ["a", "b", "c", "d"] {
        assert_eq!(s.put(&format!("/v1/queues/q/tasks/{key}"), json!({"max_attempts": 3})).await.0, 201);
    }
    assert_eq!(s.put("/v1/queues/q/tasks/a", json!({"if_exists": "keep"})).await.0, 200, "kept: not counted");
    assert_eq!(s.delete("/v1/queues/q/tasks/d").await.0, StatusCode::NO_CONTENT);

    clock.advance(Duration::from_millis(1500));
    let leases = s.lease("q", json!({"max": 10, "lease": "1m"})).await;
    assert_eq!(leases.len(), 3);
    clock.advance(Duration::from_secs(2));
    let server = &s;
    let ack = |i: usize, body: serde_json::Value| {
        let id = leases[i]["lease_id"].as_str().unwrap().to_owned();
        async move { server.post(&format!("/v1/leases/{id}/ack"), body).await.0 }
    };
    assert_eq!(ack(0, json!({"outcome": "done"})).await, StatusCode::NO_CONTENT);
    assert_eq!(ack(1, json!({"outcome": "retry", "delay": "1h", "error": "smtp timeout"})).await, 204);
    assert_eq!(ack(2, json!({"outcome": "fail", "error": "order not found"})).await, 204);
    assert_eq!(ack(0, json!({"outcome": "done"})).await, StatusCode::CONFLICT, "refused: counts nothing");

    let text = metrics_text(&s).await;
    let q = "{queue=\"q\"}";
    for (name, expected) in [
        ("punctual_tasks_scheduled_total", 4.0),
        ("punctual_tasks_fired_total", 3.0),
        ("punctual_tasks_done_total", 1.0),
        ("punctual_tasks_retried_total", 1.0),
        ("punctual_tasks_rescheduled_total", 0.0),
        ("punctual_tasks_cancelled_total", 1.0),
        ("punctual_tasks_dead_total", 1.0),
        ("punctual_leases_expired_total", 0.0),
        ("punctual_fire_lag_seconds_count", 3.0),
        ("punctual_fire_lag_seconds_sum", 4.5),
        ("punctual_handler_duration_seconds_count", 3.0),
        ("punctual_handler_duration_seconds_sum", 6.0),
    ] {
        assert_eq!(sample(&text, &format!("{name}{q}")), expected, "{name}");
    }
    assert_eq!(sample(&text, "punctual_fire_lag_seconds_bucket{queue=\"q\",le=\"1\"}"), 0.0);
    assert_eq!(sample(&text, "punctual_fire_lag_seconds_bucket{queue=\"q\",le=\"2.5\"}"), 3.0);
    assert_eq!(sample(&text, "punctual_tasks{queue=\"q\",state=\"scheduled\"}"), 1.0, "the retried task");
    assert_eq!(sample(&text, "punctual_tasks{queue=\"q\",state=\"dead\"}"), 1.0);
    assert!(sample(&text, "punctual_store_op_seconds_count{op=\"lease\"}") >= 1.0);
    assert_eq!(sample(&text, "punctual_watchdog_restarts_total{loop=\"consumer\"}"), 0.0);
    let build = format!("punctual_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    assert_eq!(sample(&text, &build), 1.0, "the build's version, for telling nodes apart");
    assert!(text.contains("# TYPE punctual_fire_lag_seconds histogram"), "{text}");
    assert!(text.contains("# TYPE punctual_tasks_done_total counter"), "{text}");

    let (status, activity) = s.get("/v1/queues/q/activity").await;
    assert_eq!(status, StatusCode::OK);
    let recent = activity["recent"].as_array().unwrap();
    let outcomes: Vec<&str> = recent.iter().map(|o| o["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["dead", "retried", "done"], "newest first");
    assert_eq!((recent[2]["lag_ms"].as_u64(), recent[2]["duration_ms"].as_u64()), (Some(1500), Some(2000)));
    assert_eq!(recent[1]["error"], "smtp timeout");
    assert_eq!(activity["slot_ms"], 10_000);
    assert_eq!(activity["fired"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum::<u64>(), 3);
    let (status, empty) = s.get("/v1/queues/never.used/activity").await;
    assert_eq!((status, empty["recent"].as_array().unwrap().len()), (StatusCode::OK, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_handler_pool_shows_in_metrics_and_in_a_ready_readyz_until_unblocked() {
    let clock = ManualClock::new(START);
    let mut options = HttpOptions::default();
    options.max_overdue = Some(Duration::from_secs(30));
    let config = EngineConfig::default().clock(Arc::new(clock.clone()));
    let s = TestServer::build(options, config, Some(clock.clone())).await;

    // One handler slot; each handler waits for a permit: the pool is blocked.
    let gate = Arc::new(Semaphore::new(0));
    let (started, mut started_rx) = mpsc::unbounded_channel();
    let handler_gate = Arc::clone(&gate);
    let worker = Worker::new(s.engine().clone())
        .handle("q", move |d: Delivery| {
            let (gate, started) = (Arc::clone(&handler_gate), started.clone());
            async move {
                started.send(d.task.key.to_string()).unwrap();
                gate.acquire().await.unwrap().forget();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .concurrency("q", 1)
        .lease_for(Duration::from_secs(3600))
        .start()
        .unwrap();
    s.put("/v1/queues/q/tasks/a", json!({})).await;
    assert_eq!(within(10, started_rx.recv()).await.unwrap(), "a");
    s.put("/v1/queues/q/tasks/b", json!({})).await;
    assert_eq!(s.get("/readyz").await.0, StatusCode::OK, "due for no time yet");

    let overdue = "punctual_oldest_overdue_seconds{queue=\"q\"}";
    clock.advance(Duration::from_secs(20));
    assert_eq!(sample(&metrics_text(&s).await, overdue), 20.0);
    assert_eq!(s.get("/readyz").await, (StatusCode::OK, json!({"status": "ready"})), "20 s is within max_overdue");
    clock.advance(Duration::from_secs(25));
    assert_eq!(sample(&metrics_text(&s).await, overdue), 45.0, "it grows while the pool is blocked");
    let over = json!({"status": "ready", "overdue": [{"queue": "q", "oldest_overdue_ms": 45_000}]});
    assert_eq!(s.get("/readyz").await, (StatusCode::OK, over), "ready, naming the queue over max_overdue");

    // Unblock: "a" finishes, "b" is leased and finishes; both recover.
    gate.add_permits(2);
    assert_eq!(within(10, started_rx.recv()).await.unwrap(), "b");
    within(10, async {
        while s.state.metrics().queues.iter().find(|q| q.queue.as_str() == "q").unwrap().done < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let text = metrics_text(&s).await;
    assert_eq!(sample(&text, overdue), 0.0);
    assert_eq!(sample(&text, "punctual_tasks_done_total{queue=\"q\"}"), 2.0);
    assert_eq!(s.get("/readyz").await, (StatusCode::OK, json!({"status": "ready"})));
    assert_eq!(
        sample(&text, "punctual_watchdog_restarts_total{loop=\"consumer\"}"),
        0.0,
        "a full pool is not a stalled loop"
    );
    worker.shutdown().await;
}

/// `/metrics` answers Prometheus text (its content type, `# TYPE` lines, and every other
/// line a `name value` sample) and `/` the dashboard's HTML. First checked through the
/// real binary (`crates/punctual-cli/tests/end_to_end/routes.rs`).
#[tokio::test]
async fn metrics_are_prometheus_text_and_the_dashboard_is_html() {
    use tower::ServiceExt;
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/k", json!({})).await;
    assert_eq!(s.lease("q", json!({})).await.len(), 1);
    let mut texts = Vec::new();
    for (path, content_type) in [("/metrics", "text/plain"), ("/", "text/html")] {
        let request = axum::http::Request::builder().uri(path).body(axum::body::Body::empty()).unwrap();
        let response = s.app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        let got = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(got.starts_with(content_type), "GET {path}: content-type {got}");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        texts.push(String::from_utf8(bytes.to_vec()).unwrap());
    }
    let text = &texts[0];
    assert!(text.contains("# TYPE "), "metrics declare their types:\n{text}");
    let mut samples = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line `name value`: '{line}'"));
        let name = name.split('{').next().unwrap_or_default();
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "a metric name: '{line}'"
        );
        let value = value.trim();
        assert!(value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value), "a sample value: '{line}'");
        samples += 1;
    }
    assert!(samples > 0, "some samples:\n{text}");
}

#[tokio::test]
async fn a_paused_queue_is_not_overdue_for_readyz_and_shows_paused_in_metrics() {
    let clock = ManualClock::new(START);
    let mut options = HttpOptions::default();
    options.max_overdue = Some(Duration::from_secs(30));
    let config = EngineConfig::default().clock(Arc::new(clock.clone()));
    let s = TestServer::build(options, config, Some(clock.clone())).await;
    s.put("/v1/queues/held/tasks/a", json!({})).await;
    s.put("/v1/queues/late/tasks/a", json!({})).await;
    let (status, _) = s.post("/v1/queues/held/pause", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    clock.advance(Duration::from_secs(60));
    let over = json!({"status": "ready", "overdue": [{"queue": "late", "oldest_overdue_ms": 60_000}]});
    assert_eq!(s.get("/readyz").await, (StatusCode::OK, over), "only the queue that is not paused is named");
    let text = metrics_text(&s).await;
    assert_eq!(sample(&text, "punctual_queue_paused{queue=\"held\"}"), 1.0, "{text}");
    let (status, _) = s.post("/v1/queues/held/resume", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sample(&metrics_text(&s).await, "punctual_queue_paused{queue=\"held\"}"), 0.0);
}
