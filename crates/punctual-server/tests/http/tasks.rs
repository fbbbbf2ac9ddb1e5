//! Guards against a server that drifts from API.md's task contract: a task object with
//! a field more or less or times in another format, policies not shown as they apply,
//! an `if_exists` that changes what it must keep, a batch that stores an invalid item
//! or answers out of order, paging that skips or repeats tasks (ties across a page
//! boundary), a cancelled leased task that retries, repeats or still acks, and a
//! `due_at` before 1970 refused where any time in the past means now.
//!
//! The task routes through the app, on a manual clock: schedule with each `if_exists`,
//! the task object field by field, batches, get, delete, cancel (by key, of a leased
//! task, by tag) and the lists' paging. These were first checked through the real
//! binary (`crates/punctual-cli/tests/end_to_end/routes.rs`); the binary serves this same `app`,
//! so they are checked here, once.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use common::{START, TestServer, assert_task_shape, at, code, field, keys, time};
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000;

#[tokio::test]
async fn if_exists_replaces_keeps_or_refuses_an_existing_task_and_creates_a_new_one() {
    let s = TestServer::manual().await;
    let path = "/v1/queues/order.cancel/tasks/order-1234";

    let (status, body) = s.put(path, json!({"delay": "1h", "payload": {"v": 1}})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::CREATED, Some("created")), "{body}");
    let v1 = body["task"]["version"].as_i64().unwrap();
    assert!(v1 >= 1, "a new task's version is positive: {v1}");

    let (status, body) = s.put(path, json!({"delay": "2h", "payload": {"v": 2}})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::OK, Some("replaced")), "replace by default: {body}");
    assert_eq!(body["task"]["payload"], json!({"v": 2}));
    assert_eq!(body["task"]["due_at"], at(2 * HOUR), "the replaced due time");
    let v2 = body["task"]["version"].as_i64().unwrap();
    assert!(v2 > v1, "replace bumps the version: {v1} then {v2}");

    let (status, body) = s.put(path, json!({"delay": "3h", "payload": {"v": 3}, "if_exists": "replace"})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::OK, Some("replaced")), "{body}");
    let v3 = body["task"]["version"].as_i64().unwrap();
    assert!(v3 > v2, "replace bumps the version: {v2} then {v3}");
    let stored = body["task"].clone();

    let (status, body) = s.put(path, json!({"delay": "5m", "payload": {"v": 4}, "if_exists": "keep"})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::OK, Some("kept")), "{body}");
    assert_eq!(body["task"], stored, "keep answers the existing task, untouched");

    let (status, body) = s.put(path, json!({"payload": {"v": 5}, "if_exists": "error"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"));
    assert!(!body["error"]["message"].as_str().unwrap().is_empty(), "{body}");

    assert_eq!(s.get(path).await, (StatusCode::OK, stored), "neither keep nor error changed the stored task");

    for (key, if_exists) in [("order-5678", "error"), ("order-9999", "keep")] {
        let (status, body) = s
            .put(&format!("/v1/queues/order.cancel/tasks/{key}"), json!({"delay": "1h", "if_exists": if_exists}))
            .await;
        assert_eq!((status, body["outcome"].as_str()), (StatusCode::CREATED, Some("created")), "{if_exists}: {body}");
    }
}

#[tokio::test]
async fn the_task_object_has_exactly_api_fields_effective_policies_and_time_format() {
    let s = TestServer::manual().await;
    let task = s
        .create(
            "order.cancel",
            "k-full",
            json!({
                "due_at": "2099-11-30T09:00:00+08:00",
                "payload": {"order_id": 1234},
                "repeat": {"every": "24h", "times": 3},
                "tags": ["pi-9"],
                "max_attempts": 5,
                "if_exists": "keep"
            }),
        )
        .await;
    assert_task_shape(&task);
    assert_eq!(task["queue"], "order.cancel");
    assert_eq!(task["key"], "k-full");
    assert_eq!(task["state"], "scheduled");
    assert_eq!(task["due_at"], "2099-11-30T01:00:00.000Z", "due_at in UTC with three fractional digits");
    assert_eq!(task["payload"], json!({"order_id": 1234}));
    assert_eq!(task["attempts"], 0);
    assert_eq!(task["max_attempts"], 5);
    assert_eq!(task["repeat"], json!({"every": "1d", "times": 3}), "{task}");
    assert_eq!(task["tags"], json!(["pi-9"]));
    assert!(task["version"].as_i64().is_some_and(|v| v >= 1), "version: {task}");
    assert_eq!((&task["created_at"], &task["updated_at"]), (&json!(at(0)), &json!(at(0))));
    assert_eq!(task["lease_expires_at"], Value::Null);
    assert_eq!(task["last_error"], Value::Null);

    // Policies not given show the built-in defaults: 20 attempts, backoff 1 s ×2 up to 1 h.
    let task = s.create("order.cancel", "k-defaults", json!({})).await;
    assert_task_shape(&task);
    assert_eq!(task["due_at"], at(0), "no delay nor due_at: due now");
    assert_eq!(task["max_attempts"], 20, "default max_attempts: {task}");
    assert_eq!(task["backoff"], json!({"initial": "1s", "factor": 2.0, "max": "1h"}), "{task}");
    assert_eq!(task["repeat"], Value::Null);
    assert_eq!(task["tags"], json!([]), "no tags: an empty list");

    // Times as epoch milliseconds; delays as integer milliseconds and compound strings.
    let task = s.create("order.cancel", "k-epoch", json!({"due_at": 4_102_444_800_123_i64})).await;
    assert_eq!(task["due_at"], "2100-01-01T00:00:00.123Z");
    for (body, expected) in [
        (json!({"delay": 90_000}), at(90_000)),
        (json!({"delay": "1h 30m"}), at(90 * 60_000)),
        (json!({"delay": "1500ms"}), at(1_500)),
        (json!({"due_at": "2099-01-01T00:00:00.5Z"}), "2099-01-01T00:00:00.500Z".to_owned()),
        (json!({"delay": "7d"}), at(7 * 24 * HOUR)),
    ] {
        let (status, answer) = s.put("/v1/queues/order.cancel/tasks/k-times", body.clone()).await;
        assert!(status.is_success(), "{body}: {answer}");
        assert_eq!(answer["task"]["due_at"], expected, "{body}");
    }

    // A due_at in the past means due now: it is leased at once.
    s.create("past.due", "k-past", json!({"due_at": "2020-01-01T00:00:00Z"})).await;
    let leases = s.lease("past.due", json!({})).await;
    assert_eq!(leases.len(), 1, "a task due in the past is due now: {leases:?}");
    assert_eq!(leases[0]["task"]["key"], "k-past");
}

/// A batch item's error names the field as a path into the request (`tasks[1].delay`).
#[track_caller]
fn assert_item_error(result: &Value, code: &str, field: &str) {
    assert_eq!(result["error"]["code"], code, "{result}");
    assert_eq!(result["error"]["field"], field, "{result}");
    assert!(result["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{result}");
    assert!(result.get("outcome").is_none_or(Value::is_null), "an error item has no outcome: {result}");
}

#[tokio::test]
async fn a_batch_stores_its_valid_items_and_reports_each_in_order() {
    let s = TestServer::manual().await;
    let (status, body) = s
        .post(
            "/v1/queues/batch.q/tasks",
            json!({"tasks": [
                {"key": "a", "delay": "1h", "payload": {"n": 1}},
                {"key": "b", "delay": "soon"},
                {"key": "c", "due_at": "2099-01-01T00:00:00Z", "tags": ["x"]},
                {"delay": "1h"},
                {"key": "d", "due_at": "yesterday-ish"},
                {"key": "e", "payload": "x".repeat(70_000)},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 6, "one result per item, in order: {body}");
    assert_eq!(results[0], json!({"key": "a", "outcome": "created"}));
    assert_eq!(results[1]["key"], "b");
    assert_item_error(&results[1], "invalid_argument", "tasks[1].delay");
    assert_eq!(results[2], json!({"key": "c", "outcome": "created"}));
    assert_item_error(&results[3], "invalid_argument", "tasks[3].key");
    assert_eq!(results[4]["key"], "d");
    assert_item_error(&results[4], "invalid_argument", "tasks[4].due_at");
    assert_item_error(&results[5], "payload_too_large", "tasks[5].payload");

    let (_, a) = s.get("/v1/queues/batch.q/tasks/a").await;
    assert_eq!((&a["payload"], &a["due_at"]), (&json!({"n": 1}), &json!(at(HOUR))));
    let (_, c) = s.get("/v1/queues/batch.q/tasks/c").await;
    assert_eq!((&c["due_at"], &c["tags"]), (&json!("2099-01-01T00:00:00.000Z"), &json!(["x"])));
    for key in ["b", "d", "e"] {
        let (status, body) = s.get(&format!("/v1/queues/batch.q/tasks/{key}")).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "an invalid item {key} is not stored");
    }

    let (status, body) = s
        .post(
            "/v1/queues/batch.q/tasks",
            json!({"tasks": [
                {"key": "a", "delay": "5h", "if_exists": "keep"},
                {"key": "c", "delay": "5h"},
                {"key": "f", "delay": "5h", "if_exists": "error"},
                {"key": "a", "delay": "5h", "if_exists": "error"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let outcomes: Vec<&Value> = body["results"].as_array().unwrap().iter().map(|r| &r["outcome"]).collect();
    assert_eq!(outcomes[..3], [&json!("kept"), &json!("replaced"), &json!("created")], "{body}");
    assert_eq!(body["results"][3]["error"]["code"], "conflict", "if_exists error on an existing task: {body}");
    assert_eq!(s.get("/v1/queues/batch.q/tasks/a").await.1, a, "kept means untouched");
}

#[tokio::test]
async fn a_batch_holds_at_most_ten_thousand_tasks() {
    let s = TestServer::start().await;
    let items = |n: usize| -> Value { (0..n).map(|i| json!({"key": format!("k{i:05}"), "delay": "1h"})).collect() };
    let (status, body) = s.post("/v1/queues/big.batch/tasks", json!({"tasks": items(10_001)})).await;
    assert_eq!((status, code(&body), field(&body)), (StatusCode::BAD_REQUEST, "invalid_argument", Some("tasks")));
    assert_eq!(
        s.get("/v1/queues/big.batch/tasks/k00000").await.0,
        StatusCode::NOT_FOUND,
        "a refused batch stores nothing"
    );

    let (status, body) = s.post("/v1/queues/big.batch/tasks", json!({"tasks": items(10_000)})).await;
    assert_eq!(status, StatusCode::OK, "a batch of exactly 10,000 tasks");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 10_000);
    assert!(results.iter().all(|r| r["outcome"] == "created"), "every item created");
    assert_eq!(s.get("/v1/queues/big.batch").await.1["scheduled"], 10_000);
}

#[tokio::test]
async fn get_and_delete_a_task_and_their_not_founds() {
    let s = TestServer::start().await;
    let path = "/v1/queues/q/tasks/k";
    for (status, body) in [s.get(path).await, s.delete(path).await] {
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "an unknown task");
    }
    s.create("q", "k", json!({"delay": "1h", "payload": [1, 2, 3]})).await;
    let (status, task) = s.get(path).await;
    assert_eq!(status, StatusCode::OK);
    assert_task_shape(&task);
    assert_eq!(task["payload"], json!([1, 2, 3]));

    assert_eq!(s.delete(path).await, (StatusCode::NO_CONTENT, Value::Null), "204 has no body");
    assert_eq!(s.get(path).await.0, StatusCode::NOT_FOUND, "GET after DELETE");
    assert_eq!(s.delete(path).await.0, StatusCode::NOT_FOUND, "a second DELETE");
    // Another queue's task of the same key is a different task.
    s.create("q2", "k", json!({"delay": "1h"})).await;
    assert_eq!(s.get(path).await.0, StatusCode::NOT_FOUND, "(queue, key) is the identity");
}

#[tokio::test]
async fn a_cancelled_leased_task_is_gone_for_good() {
    let s = TestServer::manual().await;
    s.create("q", "plain", json!({})).await;
    s.create("q", "repeating", json!({"repeat": {"every": "1s"}})).await;
    let leases = s.lease("q", json!({"max": 2})).await;
    assert_eq!(leases.len(), 2, "{leases:?}");
    for lease in &leases {
        let path = format!("/v1/queues/q/tasks/{}", lease["task"]["key"].as_str().unwrap());
        assert_eq!(s.delete(&path).await.0, StatusCode::NO_CONTENT, "DELETE of a leased task");
        assert_eq!(s.get(&path).await.0, StatusCode::NOT_FOUND, "GET of a cancelled leased task");
        let (status, body) = s.ack(lease, json!({"outcome": "done"})).await;
        assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "ack of a cancelled task's lease");
    }
    // Past any retry, repeat or lease expiry: nothing comes back.
    s.clock.as_ref().unwrap().advance(Duration::from_secs(3600));
    let leases = s.lease("q", json!({"max": 10})).await;
    assert!(leases.is_empty(), "a cancelled leased task neither retries nor repeats: {leases:?}");
}

#[tokio::test]
async fn cancel_by_tag_counts_the_cancelled_and_spares_the_rest() {
    let s = TestServer::start().await;
    for (queue, key, body) in [
        ("tag.q", "a", json!({"delay": "1h", "tags": ["t1"]})),
        ("tag.q", "b", json!({"delay": "2h", "tags": ["t1"]})),
        ("tag.q", "c", json!({"delay": "1h", "tags": ["t2", "t1"]})),
        ("tag.q", "d", json!({"delay": "1h", "tags": ["t2"]})),
        ("tag.q", "e", json!({"delay": "1h"})),
        ("tag.other", "f", json!({"delay": "1h", "tags": ["t1"]})),
        ("tag.q", "leased", json!({"tags": ["t1"]})),
    ] {
        s.create(queue, key, body).await;
    }
    let lease = s.lease_one("tag.q").await;
    assert_eq!(lease["task"]["key"], "leased");

    let (status, body) = s.delete("/v1/queues/tag.q/tags/t1").await;
    assert_eq!((status, body), (StatusCode::OK, json!({"cancelled": 4})), "a, b, c and the leased task carry t1");
    for key in ["a", "b", "c", "leased"] {
        assert_eq!(s.get(&format!("/v1/queues/tag.q/tasks/{key}")).await.0, StatusCode::NOT_FOUND, "{key}");
    }
    for (queue, key) in [("tag.q", "d"), ("tag.q", "e"), ("tag.other", "f")] {
        let path = format!("/v1/queues/{queue}/tasks/{key}");
        assert_eq!(s.get(&path).await.0, StatusCode::OK, "a task without the tag, or in another queue, stays");
    }
    let (status, body) = s.ack(&lease, json!({"outcome": "done"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "ack of a task cancelled by tag");
    assert_eq!(s.delete("/v1/queues/tag.q/tags/t1").await, (StatusCode::OK, json!({"cancelled": 0})));
}

#[tokio::test]
async fn lists_page_in_due_order_until_next_cursor_is_null() {
    let s = TestServer::manual().await;
    // Shuffled due times, two pairs of ties across page boundaries.
    let offsets = [5, 1, 7, 3, 3, 2, 6, 4, 4, 0, 8];
    let mut want: Vec<String> = Vec::new();
    for (i, offset) in offsets.iter().enumerate() {
        let key = format!("task-{i:02}");
        s.create("list.q", &key, json!({"due_at": START.as_millis() + HOUR + offset * 60_000})).await;
        want.push(key);
    }
    want.sort();
    // A leased and a dead task are not `scheduled`.
    s.create("list.q", "leased", json!({})).await;
    assert_eq!(s.lease_one("list.q").await["task"]["key"], "leased");
    s.create("list.q", "dead", json!({})).await;
    let dead = s.lease_one("list.q").await;
    assert_eq!(s.ack(&dead, json!({"outcome": "fail", "error": "x"})).await.0, StatusCode::NO_CONTENT);

    for limit in [1, 2, 3, 100] {
        let tasks = s.list_all("/v1/queues/list.q/tasks?state=scheduled", limit).await;
        for task in &tasks {
            assert_task_shape(task);
            assert_eq!(task["state"], "scheduled", "state=scheduled lists scheduled tasks only");
        }
        let dues: Vec<i64> = tasks.iter().map(|t| time(&t["due_at"]).as_millis()).collect();
        assert!(dues.windows(2).all(|w| w[0] <= w[1]), "tasks in due order (limit {limit}): {dues:?}");
        let mut got = keys(&tasks);
        assert_eq!(got.len(), want.len(), "every scheduled task exactly once (limit {limit}): {got:?}");
        got.sort();
        assert_eq!(got, want, "every scheduled task exactly once (limit {limit})");
    }
    for state in ["leased", "dead"] {
        let tasks = s.list_all(&format!("/v1/queues/list.q/tasks?state={state}"), 10).await;
        assert_eq!(keys(&tasks), [state], "state={state} lists the {state} task only");
        assert_eq!(tasks[0]["state"], state);
    }
    assert_eq!(s.get("/v1/queues/empty.q/tasks").await, (StatusCode::OK, json!({"tasks": [], "next_cursor": null})));
}

#[tokio::test]
async fn a_due_at_before_1970_is_due_now() {
    // API.md: a due_at in the past means due now; one before 1970 was refused (issue Q).
    let s = TestServer::manual().await;
    for (key, due_at) in [("a", "1969-12-31T23:59:59Z"), ("b", "0001-01-01T00:00:00+01:00")] {
        let task = s.create("q", key, json!({"due_at": due_at})).await;
        assert_eq!(time(&task["due_at"]), START, "{due_at} is in the past: due now");
    }
}

/// API.md "Wave 3 additions": `priority` 0–9 (default 0) is shown on every task, and a
/// lease hands out the due tasks of the highest priority first, each in due order,
/// never one before its due time; a priority out of range is refused with its field
/// and changes nothing.
#[tokio::test]
async fn a_lease_hands_out_the_highest_priority_first_among_due_tasks() {
    let s = TestServer::manual().await;
    let task = s.create("mail", "plain", json!({"due_at": at(-3 * HOUR)})).await;
    assert_eq!(task["priority"], 0, "the default priority: {task}");
    let urgent = s.create("mail", "urgent", json!({"due_at": at(-HOUR), "priority": 9})).await;
    assert_eq!(urgent["priority"], 9);
    s.create("mail", "middle", json!({"due_at": at(-2 * HOUR), "priority": 4})).await;
    s.create("mail", "urgent-later", json!({"delay": "1h", "priority": 9})).await;

    for bad in [json!(10), json!(-1), json!(2.5), json!("high")] {
        let (status, body) = s.put("/v1/queues/mail/tasks/plain", json!({"priority": bad})).await;
        assert_eq!(
            (status, code(&body), field(&body)),
            (StatusCode::BAD_REQUEST, "invalid_argument", Some("priority")),
            "{bad}: {body}"
        );
    }
    assert_eq!(s.get("/v1/queues/mail/tasks/plain").await.1, task, "a refused priority changed nothing");
    let (status, body) = s
        .post(
            "/v1/queues/mail/tasks",
            json!({"tasks": [{"key": "batch-bad", "priority": 12}, {"key": "batch-ok", "priority": 1}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"][0]["error"]["field"], "tasks[0].priority", "{body}");
    assert_eq!(body["results"][1]["outcome"], "created", "{body}");

    let leases = s.lease("mail", json!({"max": 10})).await;
    let keys: Vec<&str> = leases.iter().map(|lease| lease["task"]["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["urgent", "middle", "batch-ok", "plain"], "by priority, never one not yet due");
    assert_eq!(leases[0]["task"]["priority"], 9, "a lease shows the priority");
}

/// API.md "Wave 3 additions": `debounce: {"max_wait": D}` on a PUT: a burst of
/// schedules of one key moves the task's due time and payload, never past the burst's
/// first schedule + `max_wait`; a bad debounce is refused with its field and changes
/// nothing.
#[tokio::test]
async fn a_debounced_burst_of_puts_ends_in_one_task_due_by_the_first_put_plus_max_wait() {
    let s = TestServer::manual().await;
    let path = "/v1/queues/order.notify/tasks/order-1234";
    let debounced = |status: &str, delay: &str| json!({"delay": delay, "payload": {"status": status}, "debounce": {"max_wait": "10s"}});
    let (status, first) = s.put(path, debounced("paid", "5s")).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["task"]["due_at"], at(5_000));
    s.clock.as_ref().unwrap().advance(Duration::from_secs(8));
    let (status, last) = s.put(path, debounced("shipped", "5s")).await;
    assert_eq!((status, last["outcome"].as_str()), (StatusCode::OK, Some("replaced")), "{last}");
    assert_eq!(last["task"]["due_at"], at(10_000), "capped at the first PUT + max_wait, not 8 s + 5 s");
    assert_eq!(last["task"]["payload"], json!({"status": "shipped"}));

    for (bad, field_name) in [
        (json!({"debounce": {"max_wait": 0}}), "debounce.max_wait"),
        (json!({"debounce": {"max_wait": "soon"}}), "debounce.max_wait"),
        (json!({"debounce": {}}), "debounce.max_wait"),
        (json!({"debounce": {"max_wait": "1m", "extra": 1}}), "debounce.extra"),
        (json!({"debounce": {"max_wait": "1m"}, "if_exists": "keep"}), "debounce"),
    ] {
        let (status, body) = s.put(path, bad.clone()).await;
        assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some(field_name)), "{bad}: {body}");
    }
    assert_eq!(s.get(path).await.1, last["task"], "a refused debounce changed nothing");
}

/// API.md "Wave 3 additions": `group` on a task, the queue's `group_concurrency` in its
/// settings (at most that many leased tasks per group; a group's tasks in due order),
/// groups handed out in turns, and `GET /v1/queues/{queue}/groups` with counts by state;
/// a bad group or limit is refused with its field and changes nothing.
#[tokio::test]
async fn group_concurrency_holds_each_groups_leases_and_the_groups_are_listed() {
    let s = TestServer::manual().await;
    let (status, settings) = s.put("/v1/queues/order.cancel/settings", json!({"group_concurrency": 1})).await;
    assert_eq!(status, StatusCode::CREATED, "{settings}");
    assert_eq!(settings["group_concurrency"], 1, "{settings}");
    for (key, ago, group) in [("a-1", 5, "customer-a"), ("a-2", 4, "customer-a"), ("a-3", 3, "customer-a")] {
        let task = s.create("order.cancel", key, json!({"due_at": at(-ago * HOUR), "group": group})).await;
        assert_eq!(task["group"], group, "the task shows its group: {task}");
    }
    let single = s.create("order.cancel", "b-1", json!({"due_at": at(-HOUR), "group": "customer-b"})).await;
    let plain = s.create("order.cancel", "plain", json!({"due_at": at(-2 * HOUR)})).await;
    assert_eq!(plain["group"], Value::Null, "no group: {plain}");
    for bad in [json!(""), json!(7), json!("a\nb")] {
        let (status, body) = s.put("/v1/queues/order.cancel/tasks/b-1", json!({"group": bad})).await;
        assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("group")), "{bad}: {body}");
    }
    assert_eq!(s.get("/v1/queues/order.cancel/tasks/b-1").await.1, single, "a refused group changed nothing");
    let (status, body) = s.put("/v1/queues/order.cancel/settings", json!({"group_concurrency": 0})).await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("group_concurrency")), "{body}");

    // Turns: the ungrouped tasks first among equals, then by name; one of customer-a at a time.
    let leases = s.lease("order.cancel", json!({"max": 10})).await;
    let keys: Vec<&str> = leases.iter().map(|lease| lease["task"]["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["plain", "a-1", "b-1"], "one lease per group, each group's earliest");
    assert_eq!(leases[1]["task"]["group"], "customer-a", "a lease shows the group");
    assert!(s.lease("order.cancel", json!({"max": 10})).await.is_empty(), "customer-a waits for its lease");

    let (status, page) = s.get("/v1/queues/order.cancel/groups?limit=1").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["groups"], json!([{"group": "customer-a", "scheduled": 2, "leased": 1, "dead": 0}]));
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let (_, rest) = s.get(&format!("/v1/queues/order.cancel/groups?limit=1&cursor={cursor}")).await;
    assert_eq!(
        rest,
        json!({"groups": [{"group": "customer-b", "scheduled": 0, "leased": 1, "dead": 0}], "next_cursor": null})
    );
    let (status, body) = s.get("/v1/queues/order.cancel/groups?state=dead").await;
    assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("state")), "{body}");

    let (status, _) = s.ack(&leases[1], json!({"outcome": "done"})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let next = s.lease("order.cancel", json!({"max": 10})).await;
    assert_eq!(next.len(), 1, "room again for customer-a: {next:?}");
    assert_eq!(next[0]["task"]["key"], "a-2", "the group's next, in due order");
}

/// API.md "Wave 3 additions": `unique_for`. A PUT of a key whose task completed within
/// its window answers 200 `{"outcome": "kept", "completed": {…}}` and creates nothing
/// (a batch item likewise); after the window it creates the task. With `{"window",
/// "dead": true}` a dead task is kept, shown. The task object shows the window. A
/// window of 0 or one that cannot be read is refused with its field.
#[tokio::test]
async fn a_put_within_a_completed_tasks_window_is_kept_with_the_completion() {
    let s = TestServer::manual().await;
    let clock = s.clock.as_ref().unwrap();
    let path = "/v1/queues/receipts/tasks/receipt-1";
    let task = s.create("receipts", "receipt-1", json!({"unique_for": "1h"})).await;
    assert_eq!(task["unique_for"], "1h", "{task}");
    let lease = s.lease_one("receipts").await;
    clock.advance(Duration::from_secs(5));
    assert_eq!(s.ack(&lease, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT);

    let (status, kept) = s.put(path, json!({"payload": {"again": true}, "if_exists": "error"})).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let id = kept["completed"]["id"].as_u64().expect("the task's id");
    let completed = json!({"queue": "receipts", "key": "receipt-1", "id": id, "state": "done",
        "completed_at": at(5_000), "attempts": 0, "occurrence": 1, "unique_until": at(5_000 + HOUR)});
    assert_eq!(kept, json!({"outcome": "kept", "completed": completed}), "no task member");
    assert_eq!(s.get(path).await.0, StatusCode::NOT_FOUND, "kept: nothing created");
    let batch = json!({"tasks": [{"key": "receipt-1"}, {"key": "receipt-2"}]});
    let (status, answer) = s.post("/v1/queues/receipts/tasks", batch).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["results"][0], json!({"key": "receipt-1", "outcome": "kept", "completed": completed}));
    assert_eq!(answer["results"][1], json!({"key": "receipt-2", "outcome": "created"}));
    clock.advance(Duration::from_secs(3600));
    let (status, again) = s.put(path, json!({})).await;
    assert_eq!((status, again["outcome"].as_str()), (StatusCode::CREATED, Some("created")), "the window ended");

    let window = json!({"window": "10m", "dead": true});
    let dead = s.create("receipts.dead", "receipt-9", json!({"unique_for": window})).await;
    assert_eq!(dead["unique_for"], window);
    let lease = s.lease_one("receipts.dead").await;
    assert_eq!(s.ack(&lease, json!({"outcome": "fail", "error": "declined"})).await.0, StatusCode::NO_CONTENT);
    let (status, kept) = s.put("/v1/queues/receipts.dead/tasks/receipt-9", json!({})).await;
    assert_eq!((status, kept["outcome"].as_str()), (StatusCode::OK, Some("kept")), "{kept}");
    assert_eq!((&kept["task"]["state"], &kept["task"]["last_error"]), (&json!("dead"), &json!("declined")));

    for (bad, field_name) in [
        (json!({"unique_for": 0}), "unique_for"),
        (json!({"unique_for": "0ms"}), "unique_for"),
        (json!({"unique_for": "soon"}), "unique_for"),
        (json!({"unique_for": true}), "unique_for"),
        (json!({"unique_for": {"window": 0, "dead": true}}), "unique_for"),
        (json!({"unique_for": {"window": "soon"}}), "unique_for.window"),
        (json!({"unique_for": {"window": "1h", "dead": "yes"}}), "unique_for.dead"),
    ] {
        let (status, body) = s.put("/v1/queues/receipts/tasks/bad", bad.clone()).await;
        assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some(field_name)), "{bad}: {body}");
    }
    assert_eq!(s.get("/v1/queues/receipts/tasks/bad").await.0, StatusCode::NOT_FOUND, "refused: nothing stored");
}

/// A PUT with the request's `traceparent` header.
async fn put_traced(s: &TestServer, path: &str, traceparent: &str, body: Value) -> (StatusCode, Value) {
    let req = axum::http::Request::builder()
        .method(axum::http::Method::PUT)
        .uri(path)
        .header("content-type", "application/json")
        .header("traceparent", traceparent)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    s.call(req).await
}

/// README "Traces": with traces off, a PUT's valid `traceparent` is kept with the task
/// as given and shown by get, list and the lease answer; an invalid one is ignored,
/// never refused, and a replace without a valid one leaves the task with none; every
/// task of a batch keeps the batch's.
#[tokio::test]
async fn a_tasks_traceparent_is_the_schedule_requests_and_is_shown_with_it() {
    let s = TestServer::manual().await;
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (status, body) = put_traced(&s, "/v1/queues/q/tasks/traced", given, json!({"payload": 1})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["task"]["traceparent"], given, "{body}");
    assert_task_shape(&body["task"]);
    let (_, task) = s.get("/v1/queues/q/tasks/traced").await;
    assert_eq!(task["traceparent"], given, "{task}");
    let plain = s.create("q", "plain", json!({"delay": "1h"})).await;
    assert!(plain.get("traceparent").is_none(), "left out when none: {plain}");
    let listed = s.list_all("/v1/queues/q/tasks", 10).await;
    assert_eq!(listed.iter().map(|t| t["traceparent"].clone()).collect::<Vec<_>>(), [json!(given), Value::Null]);

    let lease = s.lease_one("q").await;
    assert_eq!(lease["task"]["traceparent"], given, "the lease answer carries it: {lease}");

    for invalid in ["00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "not a trace", "ff-0-0-0"] {
        let (status, body) = put_traced(&s, "/v1/queues/q/tasks/traced", invalid, json!({})).await;
        assert_eq!(status, StatusCode::OK, "{invalid} is ignored, not refused: {body}");
        assert!(body["task"].get("traceparent").is_none(), "a replace without a valid one clears it: {body}");
    }

    let batch = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let req = axum::http::Request::builder()
        .method(axum::http::Method::POST)
        .uri("/v1/queues/q/tasks")
        .header("content-type", "application/json")
        .header("traceparent", batch)
        .body(axum::body::Body::from(json!({"tasks": [{"key": "b1"}, {"key": "b2"}]}).to_string()))
        .unwrap();
    let (status, body) = s.call(req).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for key in ["b1", "b2"] {
        let (_, task) = s.get(&format!("/v1/queues/q/tasks/{key}")).await;
        assert_eq!(task["traceparent"], batch, "{key}: {task}");
    }
}
