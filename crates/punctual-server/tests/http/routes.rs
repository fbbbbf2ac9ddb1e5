//! Every route of API.md through the app, without a socket: the happy path, the
//! objects answered, and each route's own error statuses. Guards against a route that
//! answers the wrong status, shape or code.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{TestServer, code, field};
use serde_json::{Value, json};

#[tokio::test]
async fn put_creates_replaces_keeps_and_refuses_under_error() {
    let s = TestServer::start().await;
    let path = "/v1/queues/order.cancel/tasks/order-1234";
    let (status, body) = s.put(path, json!({"delay": "30m", "payload": {"order_id": 1234}, "tags": ["pi-9"]})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["outcome"], "created");
    let task = &body["task"];
    assert_eq!(task["queue"], "order.cancel");
    assert_eq!(task["key"], "order-1234");
    assert_eq!(task["state"], "scheduled");
    assert_eq!(task["payload"], json!({"order_id": 1234}));
    assert_eq!(task["max_attempts"], 20);
    assert_eq!(task["backoff"], json!({"initial": "1s", "factor": 2.0, "max": "1h"}));
    assert_eq!(task["repeat"], Value::Null);
    assert_eq!(task["tags"], json!(["pi-9"]));
    assert_eq!(task["version"], 1);
    let due = task["due_at"].as_str().unwrap();
    assert!(due.len() == 24 && due.ends_with('Z') && due.as_bytes()[19] == b'.', "{due}");

    let (status, body) = s.put(path, json!({"due_at": "2026-11-30T09:00:00+08:00", "repeat": {"every": "24h"}})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["outcome"], "replaced");
    assert_eq!(body["task"]["version"], 2);
    assert_eq!(body["task"]["repeat"], json!({"every": "1d"}));

    let (status, body) = s.put(path, json!({"delay": 5, "if_exists": "keep"})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::OK, Some("kept")));
    assert_eq!(body["task"]["version"], 2);

    let (status, body) = s.put(path, json!({"if_exists": "error"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"));

    // A key with a slash travels as %2F; the body may repeat the path's key.
    let (status, body) = s.put("/v1/queues/q/tasks/a%2Fb%20c", json!({"key": "a/b c"})).await;
    assert_eq!((status, body["task"]["key"].as_str()), (StatusCode::CREATED, Some("a/b c")));
    let (status, body) = s.get("/v1/queues/q/tasks/a%2Fb%20c").await;
    assert_eq!((status, body["key"].as_str()), (StatusCode::OK, Some("a/b c")));
}

#[tokio::test]
async fn batch_stores_valid_items_and_reports_each() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/exists", json!({})).await;
    let (status, body) = s
        .post(
            "/v1/queues/q/tasks",
            json!({"tasks": [
                {"key": "a", "delay": "1h"},
                {"key": "b", "delay": "soon"},
                {"delay": "1h"},
                {"key": "exists", "if_exists": "error"},
                {"key": "c", "payload": {"x": 1}},
                "not an object",
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    assert_eq!(results[0], json!({"key": "a", "outcome": "created"}));
    assert_eq!(results[1]["key"], "b");
    assert_eq!(code(&results[1]), "invalid_argument");
    assert_eq!(field(&results[1]), Some("tasks[1].delay"));
    assert_eq!(field(&results[2]), Some("tasks[2].key"));
    assert_eq!(results[2]["key"], Value::Null);
    assert_eq!(code(&results[3]), "conflict");
    assert_eq!(results[4], json!({"key": "c", "outcome": "created"}));
    assert_eq!(field(&results[5]), Some("tasks[5]"));
    for key in ["a", "c", "exists"] {
        assert_eq!(s.get(&format!("/v1/queues/q/tasks/{key}")).await.0, StatusCode::OK, "{key}");
    }
    assert_eq!(s.get("/v1/queues/q/tasks/b").await.0, StatusCode::NOT_FOUND);
}

/// Issue 14 (5): a batch item's key that is not a string was echoed as given
/// (`"key": -521`), against the result's schema (`string | null`); so was an ack's
/// `lease_id`.
#[tokio::test]
async fn batch_results_echo_only_string_keys_and_lease_ids() {
    let s = TestServer::start().await;
    let items = json!([-521, 1.5, true, {"k": 1}, ["a"], null]);
    let tasks: Vec<Value> = items.as_array().unwrap().iter().map(|key| json!({"key": key})).collect();
    let (status, body) = s.post("/v1/queues/q/tasks", json!({"tasks": tasks})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for (i, result) in body["results"].as_array().unwrap().iter().enumerate() {
        assert_eq!(result["key"], Value::Null, "{result}");
        assert_eq!(field(result), Some(format!("tasks[{i}].key").as_str()), "{result}");
    }
    let acks: Vec<Value> =
        items.as_array().unwrap().iter().map(|id| json!({"lease_id": id, "outcome": "done"})).collect();
    let (status, body) = s.post("/v1/acks", json!({"acks": acks})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for result in body["results"].as_array().unwrap() {
        assert_eq!((&result["lease_id"], &result["status"]), (&Value::Null, &json!(400)), "{result}");
    }
    // A string is echoed as sent, even one that is not a valid key or lease id.
    let (_, body) = s.post("/v1/queues/q/tasks", json!({"tasks": [{"key": ""}]})).await;
    assert_eq!(body["results"][0]["key"], "");
    let (_, body) = s.post("/v1/acks", json!({"acks": [{"lease_id": "nope", "outcome": "done"}]})).await;
    assert_eq!((&body["results"][0]["lease_id"], &body["results"][0]["status"]), (&json!("nope"), &json!(404)));
}

#[tokio::test]
async fn get_and_delete_a_task() {
    let s = TestServer::start().await;
    let (status, body) = s.get("/v1/queues/q/tasks/nope").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    s.put("/v1/queues/q/tasks/k", json!({"delay": "1h"})).await;
    let (status, body) = s.delete("/v1/queues/q/tasks/k").await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = s.delete("/v1/queues/q/tasks/k").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));

    // A leased task is cancelled for good: 204, and its lease can no longer ack.
    s.put("/v1/queues/q/tasks/l", json!({})).await;
    let leases = s.lease("q", json!({})).await;
    assert_eq!(s.delete("/v1/queues/q/tasks/l").await.0, StatusCode::NO_CONTENT);
    let id = leases[0]["lease_id"].as_str().unwrap();
    let (status, body) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "done"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"));
}

#[tokio::test]
async fn cancel_by_tag_counts_what_it_cancelled() {
    let s = TestServer::start().await;
    for (key, tag) in [("a", "pi-9"), ("b", "pi-9"), ("c", "other")] {
        s.put(&format!("/v1/queues/q/tasks/{key}"), json!({"delay": "1h", "tags": [tag]})).await;
    }
    let (status, body) = s.delete("/v1/queues/q/tags/pi-9").await;
    assert_eq!((status, body), (StatusCode::OK, json!({"cancelled": 2})));
    assert_eq!(s.delete("/v1/queues/q/tags/pi-9").await.1, json!({"cancelled": 0}));
    assert_eq!(s.get("/v1/queues/q/tasks/c").await.0, StatusCode::OK);
}

#[tokio::test]
async fn lists_page_in_due_order_with_a_cursor() {
    let s = TestServer::start().await;
    for (key, delay) in [("late", "3h"), ("early", "1h"), ("middle", "2h")] {
        s.put(&format!("/v1/queues/q/tasks/{key}"), json!({"delay": delay})).await;
    }
    let (status, page) = s.get("/v1/queues/q/tasks?state=scheduled&limit=2").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let keys: Vec<_> = page["tasks"].as_array().unwrap().iter().map(|t| t["key"].clone()).collect();
    assert_eq!(keys, vec![json!("early"), json!("middle")]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, page) = s.get(&format!("/v1/queues/q/tasks?limit=2&cursor={cursor}")).await;
    assert_eq!(page["tasks"][0]["key"], "late");
    assert_eq!(page["next_cursor"], Value::Null);
    let (_, page) = s.get("/v1/queues/q/tasks?state=dead").await;
    assert_eq!(page, json!({"tasks": [], "next_cursor": null}));
    let (status, body) = s.get("/v1/queues/q/tasks?state=done").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("state")));
    let (status, body) = s.get("/v1/queues/q/tasks?limit=0").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("limit")));
    let (status, body) = s.get("/v1/queues/q/tasks?limit=1001").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("limit")));
}

/// Issue 15 (10): `?tag=` was ignored, listing every task of the queue.
#[tokio::test]
async fn lists_keep_only_tasks_carrying_the_tag_with_state_and_a_cursor() {
    let s = TestServer::start().await;
    for (key, delay, tags) in [
        ("wf-late", "3h", json!(["pi-9"])),
        ("wf-early", "1h", json!(["pi-9", "x"])),
        ("other", "30m", json!(["pi-10"])),
        ("untagged", "10m", json!([])),
        ("wf-middle", "2h", json!(["pi-9"])),
        ("wf-now", "0ms", json!(["pi-9"])),
    ] {
        s.put(&format!("/v1/queues/q/tasks/{key}"), json!({"delay": delay, "tags": tags})).await;
    }
    s.put("/v1/queues/elsewhere/tasks/wf-early", json!({"tags": ["pi-9"]})).await;
    assert_eq!(s.lease("q", json!({})).await[0]["task"]["key"], "wf-now", "set-up: one of them leased");
    let keys = |page: &Value| -> Vec<String> {
        page["tasks"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap().to_owned()).collect()
    };
    let (status, page) = s.get("/v1/queues/q/tasks?tag=pi-9&limit=2").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(keys(&page), ["wf-now", "wf-early"]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, page) = s.get(&format!("/v1/queues/q/tasks?tag=pi-9&limit=2&cursor={cursor}")).await;
    assert_eq!(keys(&page), ["wf-middle", "wf-late"]);
    assert_eq!(page["next_cursor"], Value::Null);
    let (_, page) = s.get("/v1/queues/q/tasks?tag=pi-9&state=scheduled").await;
    assert_eq!(keys(&page), ["wf-early", "wf-middle", "wf-late"], "with state: both filters");
    let (_, page) = s.get("/v1/queues/q/tasks?state=leased&tag=pi-9").await;
    assert_eq!(keys(&page), ["wf-now"]);
    let (_, page) = s.get("/v1/queues/q/tasks?tag=pi%2D10").await;
    assert_eq!(keys(&page), ["other"], "percent-decoded");
    let (_, page) = s.get("/v1/queues/q/tasks?tag=nobody").await;
    assert_eq!(page, json!({"tasks": [], "next_cursor": null}));
    let (_, page) = s.get("/v1/queues/q/tasks?tag=").await;
    assert_eq!(keys(&page).len(), 6, "an empty tag is no filter, as an empty state is");
    let long = "t".repeat(257);
    let (status, body) = s.get(&format!("/v1/queues/q/tasks?tag={long}")).await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("tag")));
    let (status, body) = s.get("/v1/queues/q/tasks?tag=a%07b").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("tag")));
    let (status, body) = s.get("/v1/queues/q/dead?tag=pi-9").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("tag")), "the dead list takes none");
}

#[tokio::test]
async fn queues_report_counts_overdue_time_and_lag() {
    let s = TestServer::manual().await;
    let clock = s.clock.clone().unwrap();
    s.put("/v1/queues/a/tasks/1", json!({})).await;
    s.put("/v1/queues/a/tasks/2", json!({"delay": "1h"})).await;
    s.put("/v1/queues/b/tasks/1", json!({"delay": "1s"})).await;
    let (status, body) = s.get("/v1/queues").await;
    assert_eq!(status, StatusCode::OK);
    let queues = body["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 2);
    assert_eq!(queues[0]["name"], "a");
    assert_eq!((queues[0]["scheduled"].as_u64(), queues[0]["leased"].as_u64()), (Some(2), Some(0)));
    assert_eq!(queues[0]["dead"], 0);
    assert_eq!(queues[0]["next_due_at"], "2026-11-30T12:00:00.000Z");

    let (_, b) = s.get("/v1/queues/b").await;
    assert_eq!(b["lag_ms"], json!({"p50": null, "p99": null}));
    assert_eq!(b["oldest_overdue_ms"], 0);
    clock.advance(std::time::Duration::from_millis(1500));
    let (_, b) = s.get("/v1/queues/b").await;
    assert_eq!(b["oldest_overdue_ms"], 500);
    assert_eq!(s.lease("b", json!({})).await.len(), 1);
    let (_, b) = s.get("/v1/queues/b").await;
    assert_eq!(b["lag_ms"], json!({"p50": 500, "p99": 500}));
    assert_eq!((b["name"].as_str(), b["scheduled"].as_u64(), b["leased"].as_u64()), (Some("b"), Some(0), Some(1)));

    let (status, unknown) = s.get("/v1/queues/never.used").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        unknown,
        json!({"name": "never.used", "scheduled": 0, "leased": 0, "dead": 0, "next_due_at": null, "paused": false,
               "oldest_overdue_ms": 0, "lag_ms": {"p50": null, "p99": null}})
    );
    let (status, body) = s.get("/v1/queues/bad%20name").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("queue")));
}

#[tokio::test]
async fn lease_ack_extend_and_batch_acks() {
    let s = TestServer::start().await;
    for key in ["a", "b", "c", "d"] {
        s.put(&format!("/v1/queues/q/tasks/{key}"), json!({"payload": {"k": key}})).await;
    }
    let leases = s.lease("q", json!({"max": 10, "lease": "30s"})).await;
    assert_eq!(leases.len(), 4);
    let lease = &leases[0];
    assert_eq!(lease["attempt"], 1);
    assert_eq!(lease["task"]["state"], "leased");
    assert!(lease["delivery_id"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(lease["expires_at"], lease["task"]["lease_expires_at"]);
    let ids: Vec<String> = leases.iter().map(|l| l["lease_id"].as_str().unwrap().to_owned()).collect();

    let (status, body) = s.post(&format!("/v1/leases/{}/extend", ids[0]), json!({"lease": "1h"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["lease_id"], ids[0].as_str());
    assert!(body["expires_at"].as_str().unwrap() > lease["expires_at"].as_str().unwrap());

    let (status, body) = s.post(&format!("/v1/leases/{}/ack", ids[0]), json!({"outcome": "done"})).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    assert_eq!(s.get("/v1/queues/q/tasks/a").await.0, StatusCode::NOT_FOUND);
    // The same lease again: no longer live.
    let (status, body) = s.post(&format!("/v1/leases/{}/ack", ids[0]), json!({"outcome": "done"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"));
    let (status, body) = s.post(&format!("/v1/leases/{}/extend", ids[0]), json!({})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"));

    let (status, body) = s
        .post(
            "/v1/acks",
            json!({"acks": [
                {"lease_id": ids[1], "outcome": "retry", "delay": "5m", "error": "smtp timeout"},
                {"lease_id": ids[0], "outcome": "done"},
                {"lease_id": "garbage", "outcome": "done"},
                {"lease_id": ids[2], "outcome": "maybe"},
                {"lease_id": ids[2], "outcome": "reschedule", "delay": "24h"},
                {"lease_id": ids[3], "outcome": "fail", "error": "order not found"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let statuses: Vec<_> = body["results"].as_array().unwrap().iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, vec![204, 409, 404, 400, 204, 204]);
    assert_eq!(body["results"][0], json!({"lease_id": ids[1], "status": 204}));
    assert_eq!(field(&body["results"][3]), Some("acks[3].outcome"));
    let (_, b) = s.get("/v1/queues/q/tasks/b").await;
    assert_eq!((b["state"].as_str(), b["attempts"].as_u64()), (Some("scheduled"), Some(1)));
    assert_eq!(b["last_error"], "smtp timeout");
    let (_, c) = s.get("/v1/queues/q/tasks/c").await;
    assert_eq!((c["state"].as_str(), c["attempts"].as_u64()), (Some("scheduled"), Some(0)));
    let (_, d) = s.get("/v1/queues/q/tasks/d").await;
    assert_eq!((d["state"].as_str(), d["last_error"].as_str()), (Some("dead"), Some("order not found")));
}

#[tokio::test]
async fn ack_outcomes_retry_reschedule_and_fail() {
    let s = TestServer::start().await;
    s.put("/v1/queues/q/tasks/k", json!({"max_attempts": 2})).await;
    let id = s.lease("q", json!({})).await[0]["lease_id"].as_str().unwrap().to_owned();
    let (status, _) = s
        .post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "reschedule", "due_at": 1_000_000_000_000_u64}))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let id = s.lease("q", json!({})).await[0]["lease_id"].as_str().unwrap().to_owned();
    let (status, _) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "retry", "delay": 0})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let lease = s.lease("q", json!({})).await.remove(0);
    assert_eq!(lease["attempt"], 2);
    // The last attempt failing makes the task dead.
    let id = lease["lease_id"].as_str().unwrap();
    let (status, _) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "retry"})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.1["state"], "dead");
}

#[tokio::test]
async fn dead_tasks_are_listed_retried_and_deleted() {
    let s = TestServer::start().await;
    for key in ["x", "y"] {
        s.put(&format!("/v1/queues/q/tasks/{key}"), json!({})).await;
    }
    for lease in s.lease("q", json!({"max": 2})).await {
        let id = lease["lease_id"].as_str().unwrap();
        s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "fail", "error": "no"})).await;
    }
    let (status, page) = s.get("/v1/queues/q/dead?limit=1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["tasks"][0]["key"], "x");
    assert!(page["next_cursor"].is_string());
    let (status, task) = s.post("/v1/queues/q/dead/x/retry", json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{task}");
    assert_eq!((task["state"].as_str(), task["attempts"].as_u64()), (Some("scheduled"), Some(0)));
    let (status, body) = s.post("/v1/queues/q/dead/x/retry", json!(null)).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    assert_eq!(s.delete("/v1/queues/q/dead/y").await.0, StatusCode::NO_CONTENT);
    let (status, body) = s.delete("/v1/queues/q/dead/y").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    // A scheduled task is not dead: neither retried nor deleted as dead.
    assert_eq!(s.delete("/v1/queues/q/dead/x").await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.get("/v1/queues/q/tasks/x").await.0, StatusCode::OK);
}

/// Issue 15 (11): dead tasks could only be retried one by one.
#[tokio::test]
async fn dead_tasks_are_retried_in_bulk_every_one_by_tag_or_by_keys() {
    let s = TestServer::start().await;
    let kill = |queue: &'static str, keys: Vec<(&'static str, Value)>| {
        let s = &s;
        async move {
            for (key, tags) in &keys {
                s.put(&format!("/v1/queues/{queue}/tasks/{key}"), json!({"tags": tags, "max_attempts": 1})).await;
            }
            for lease in s.lease(queue, json!({"max": 100})).await {
                let id = lease["lease_id"].as_str().unwrap();
                let (status, _) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "fail"})).await;
                assert_eq!(status, StatusCode::NO_CONTENT);
            }
        }
    };
    kill(
        "q",
        vec![("a", json!(["pi-9"])), ("b", json!(["pi-9"])), ("c", json!([])), ("d", json!([])), ("e", json!([]))],
    )
    .await;
    kill("other", vec![("a", json!(["pi-9"]))]).await;
    let state = |key: &str| {
        let s = &s;
        let path = format!("/v1/queues/q/tasks/{key}");
        async move { s.get(&path).await.1["state"].as_str().unwrap().to_owned() }
    };

    let (status, body) = s.post("/v1/queues/q/dead/retry", json!({"tag": "pi-9"})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"retried": 2})));
    assert_eq!((state("a").await, state("c").await), ("scheduled".into(), "dead".into()));
    let (status, body) = s.post("/v1/queues/q/dead/retry", json!({"keys": ["c", "c", "a", "missing"]})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"retried": 1})), "c, once; a is not dead");
    let (status, body) = s.post("/v1/queues/q/dead/retry", json!({})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"retried": 2})), "d and e");
    let (_, page) = s.get("/v1/queues/q/dead").await;
    assert_eq!(page["tasks"], json!([]));
    let (_, task) = s.get("/v1/queues/q/tasks/e").await;
    assert_eq!((task["state"].as_str(), task["attempts"].as_u64()), (Some("scheduled"), Some(0)));
    assert_eq!(s.post("/v1/queues/q/dead/retry", json!({})).await.1, json!({"retried": 0}));
    assert_eq!(s.get("/v1/queues/other/tasks/a").await.1["state"], "dead", "another queue's");
    assert_eq!(s.post("/v1/queues/empty/dead/retry", json!({"keys": []})).await.1, json!({"retried": 0}));

    let too_many: Vec<String> = (0..10_001).map(|i| format!("k{i}")).collect();
    for (body, expected) in [
        (json!({"tag": "pi-9", "keys": ["a"]}), Some("keys")),
        (json!({"keys": ["a", 7]}), Some("keys[1]")),
        (json!({"keys": "a"}), Some("keys")),
        (json!({"keys": null}), Some("keys")),
        (json!({"tag": null}), Some("tag")),
        (json!({"tag": ""}), Some("tag")),
        (json!({"keys": ["ok", ""]}), Some("keys[1]")),
        (json!({"keys": too_many}), Some("keys")),
        (json!({"state": "dead"}), Some("state")),
        (json!([]), None),
    ] {
        let (status, answer) = s.post("/v1/queues/other/dead/retry", body.clone()).await;
        assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, expected), "{body}: {answer}");
    }
    let (status, answer) = s.send_text(Method::POST, "/v1/queues/other/dead/retry", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a body is required: {answer}");
    let (status, answer) = s.post("/v1/queues/bad%2Fq/dead/retry", json!({})).await;
    assert_eq!((status, field(&answer)), (StatusCode::BAD_REQUEST, Some("queue")));
    assert_eq!(s.get("/v1/queues/other/tasks/a").await.1["state"], "dead", "refused bodies changed nothing");
}

#[tokio::test]
async fn operations_endpoints() {
    let s = TestServer::start().await;
    assert_eq!(s.get("/healthz").await, (StatusCode::OK, json!({"status": "ok"})));
    assert_eq!(s.get("/readyz").await, (StatusCode::OK, json!({"status": "ready"})));
    s.put("/v1/queues/order.cancel/tasks/1", json!({"delay": "1h"})).await;
    let (status, metrics) = s.get("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    let text = metrics.as_str().unwrap();
    assert!(text.contains("punctual_tasks{queue=\"order.cancel\",state=\"scheduled\"} 1"), "{text}");
    assert!(text.contains("punctual_tasks{queue=\"order.cancel\",state=\"dead\"} 0"), "{text}");
    assert!(text.contains("# TYPE punctual_tasks gauge"), "{text}");
    let (status, page) = s.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.as_str().unwrap().contains("/openapi.json"));
    let (status, doc) = s.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));

    s.state.shutdown_token().cancel();
    let (status, body) = s.get("/readyz").await;
    assert_eq!((status, code(&body)), (StatusCode::SERVICE_UNAVAILABLE, "unavailable"));
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_the_error_body() {
    let s = TestServer::start().await;
    let (status, body) = s.get("/v1/nothing/here").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
}

/// Issue 14 (6): a wrong method answered 404 not_found (with an `Allow` header).
#[tokio::test]
async fn a_method_a_path_does_not_take_answers_405_with_allow() {
    let s = TestServer::start().await;
    for (method, path, allow) in [
        (Method::POST, "/v1/queues", "GET,HEAD"),
        (Method::PATCH, "/v1/queues/q/tasks/k", "PUT,GET,HEAD,DELETE"),
        (Method::GET, "/v1/queues/q/lease", "POST"),
        (Method::DELETE, "/openapi.json", "GET,HEAD"),
    ] {
        let req = axum::http::Request::builder().method(method.clone()).uri(path).body(Body::empty()).unwrap();
        let response = tower::ServiceExt::oneshot(s.app.clone(), req).await.unwrap();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        let mut allowed: Vec<&str> = response.headers()["allow"].to_str().unwrap().split(',').collect();
        let mut expected: Vec<&str> = allow.split(',').collect();
        allowed.sort_unstable();
        expected.sort_unstable();
        assert_eq!(allowed, expected, "{method} {path}");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(code(&body), "method_not_allowed", "{method} {path}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(method.as_str()), "{body}");
    }
}
