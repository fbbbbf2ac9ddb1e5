//! The real binary's readiness and logs: guards against a `/readyz` that one queue's
//! backlog makes unready (issue 15, 5: a queue nobody drains is the same on every node
//! sharing the store, so every node would leave the load balancer, and the scheduling
//! API with them) — with `--max-overdue` it stays ready and names the queue in its body
//! — and JSON logs whose task events lack the fields operators search by (queue, key,
//! delivery_id, attempt).

use crate::common;

use std::time::Duration;

use common::{Api, server_builder, start};
use serde_json::{Value, json};

#[test]
fn readyz_stays_ready_while_a_due_task_waits_too_long_and_names_its_queue() {
    let server = start(
        server_builder()
            .args(["--max-overdue", "1s", "--log-format", "json"])
            .env("RUST_LOG", "info,punctual_core=debug"),
    );
    let api = Api::of(&server);
    assert_eq!(api.get("/readyz").expect(200, "nothing is due yet"), &json!({"status": "ready"}));
    api.create("reminders", "task-77@pi-9", json!({"payload": {"n": 1}}));

    let over = api.readyz_until("naming the overdue queue", |r| r.json.get("overdue").is_some());
    over.expect(200, "a backlog leaves the node ready");
    assert_eq!(over.json["status"], "ready", "{}", over.text);
    let overdue = over.json["overdue"].as_array().unwrap();
    assert_eq!(overdue.len(), 1, "{}", over.text);
    assert_eq!(overdue[0]["queue"], "reminders", "{}", over.text);
    assert!(overdue[0]["oldest_overdue_ms"].as_u64().unwrap_or(0) > 1000, "{}", over.text);
    for _ in 0..3 {
        api.get("/readyz").expect(200, "still ready");
    }
    let text = api.get("/metrics").text;
    let line = text.lines().find(|l| l.starts_with("punctual_oldest_overdue_seconds{queue=\"reminders\"}"));
    let overdue: f64 = line.and_then(|l| l.split(' ').nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    assert!(overdue >= 1.0, "the gauge to alert on shows the wait: {line:?}");

    // A consumer takes it: the body no longer names it.
    let lease = api.lease_one("reminders");
    api.ack(lease["lease_id"].as_str().unwrap_or_default(), json!({"outcome": "done"})).expect(204, "ack");
    api.readyz_until("without overdue queues", |r| r.status == 200 && r.json == json!({"status": "ready"}));

    // The log reaches the test through a reader thread: wait for the last line expected.
    let logs = server.wait_for_log("task completed", Duration::from_secs(5)).unwrap_or_else(|logs| logs);
    let events: Vec<Value> = logs.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let messages: Vec<&str> = events.iter().filter_map(|e| e["fields"]["message"].as_str()).collect();
    assert!(!messages.iter().any(|m| m.starts_with("not ready")), "never unready:\n{logs}");

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
