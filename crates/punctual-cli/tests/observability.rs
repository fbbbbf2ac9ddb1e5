//! The real binary's readiness and logs: guards against a `/readyz` that stays ready
//! while due tasks wait for nobody, a log that says nothing (or says it on every probe)
//! when readiness changes, and JSON logs whose task events lack the fields operators
//! search by (queue, key, delivery_id, attempt).

mod common;

use std::time::Duration;

use common::{Api, server_builder, start};
use serde_json::{Value, json};

/// Calls `/readyz` until it answers `status`, at most 400 times 50 ms apart (20 s).
fn readyz_until(api: &Api, status: u16) -> common::Resp {
    let mut last = None;
    for _ in 0..400 {
        let resp = api.get("/readyz");
        if resp.status == status {
            return resp;
        }
        last = Some(resp);
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("/readyz never answered {status} within 20 s; last: {last:?}");
}

#[test]
fn readyz_fails_while_a_due_task_waits_too_long_and_the_log_says_why_once() {
    let server = start(
        server_builder()
            .args(["--max-overdue", "1s", "--log-format", "json"])
            .env("RUST_LOG", "info,punctual_core=debug"),
    );
    let api = Api::of(&server);
    api.get("/readyz").expect(200, "nothing is due yet");
    api.create("reminders", "task-77@pi-9", json!({"payload": {"n": 1}}));

    let unready = readyz_until(&api, 503);
    unready.expect_error(503, "unavailable", None, "GET /readyz with a task overdue past max_overdue");
    let message = unready.json["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("reminders") && message.contains("max_overdue"), "{message}");
    for _ in 0..3 {
        api.get("/readyz").expect_error(503, "unavailable", None, "still unready");
    }
    let text = api.get("/metrics").text;
    let line = text.lines().find(|l| l.starts_with("punctual_oldest_overdue_seconds{queue=\"reminders\"}"));
    let overdue: f64 = line.and_then(|l| l.split(' ').nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    assert!(overdue >= 1.0, "the gauge shows the wait: {line:?}");

    // A consumer takes it: ready again.
    let lease = api.lease_one("reminders");
    api.ack(lease["lease_id"].as_str().unwrap_or_default(), json!({"outcome": "done"})).expect(204, "ack");
    readyz_until(&api, 200);

    let logs = server.logs();
    let events: Vec<Value> = logs.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let messages: Vec<&str> = events.iter().filter_map(|e| e["fields"]["message"].as_str()).collect();
    let not_ready = messages.iter().filter(|m| m.starts_with("not ready")).count();
    assert_eq!(not_ready, 1, "logged once per change, not per probe:\n{logs}");
    assert_eq!(messages.iter().filter(|m| **m == "ready again").count(), 1, "{logs}");

    for event in ["task scheduled", "task fired", "task completed"] {
        let found = events.iter().find(|e| e["fields"]["message"] == event);
        let fields = &found.unwrap_or_else(|| panic!("no '{event}' in the JSON log:\n{logs}"))["fields"];
        assert_eq!(fields["queue"], "reminders", "{event}: {fields}");
        assert_eq!(fields["key"], "task-77@pi-9", "{event}: {fields}");
        if event != "task scheduled" {
            assert_eq!(fields["attempt"], 1, "{event}: {fields}");
            assert_eq!(fields["delivery_id"], lease["delivery_id"], "{event}: {fields}");
        }
    }
}
