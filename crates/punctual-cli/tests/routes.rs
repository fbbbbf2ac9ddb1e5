//! Every route and every status code of API.md, over real HTTP against the real binary.
//!
//! Guards against a server that drifts from its contract: a route missing or answering
//! with another status, an error without API.md's body, a task object with a field more
//! or less or times in another format, paging that skips or repeats tasks, an ack from a
//! stale lease that changes something, acks and outcomes that do not do what API.md
//! says (retry, reschedule, fail, repeat), and an OpenAPI document that leaves routes out.

mod common;

use std::collections::HashSet;

use common::{
    Api, assert_near, assert_task_shape, now_ms, parse_duration, parse_time, queue_entry, start_server, task_path,
};
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000;

/// Schedules a task due now with a payload naming it.
fn due_now(api: &Api, queue: &str, key: &str) -> Value {
    api.create(queue, key, json!({"payload": {"key": key}}))
}

fn lease_id(lease: &Value) -> &str {
    lease["lease_id"].as_str().unwrap_or_else(|| panic!("a lease has a string `lease_id`: {lease}"))
}

/// Every task of a list route, following `next_cursor` until `null`, checking that each
/// page holds at most `limit` tasks and every page but the last exactly `limit`.
fn list_all(api: &Api, path_and_query: &str, limit: usize) -> Vec<Value> {
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..100 {
        let separator = if path_and_query.contains('?') { '&' } else { '?' };
        let mut url = format!("{path_and_query}{separator}limit={limit}");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={}", common::enc(cursor)));
        }
        let resp = api.get(&url);
        resp.expect(200, &format!("GET {url}"));
        let page =
            resp.json["tasks"].as_array().unwrap_or_else(|| panic!("GET {url}: no `tasks` array: {}", resp.text));
        assert!(page.len() <= limit, "GET {url}: {} tasks on a page of limit {limit}", page.len());
        tasks.extend(page.iter().cloned());
        match &resp.json["next_cursor"] {
            Value::Null => return tasks,
            Value::String(next) => {
                assert_eq!(page.len(), limit, "GET {url}: a page before the end holds fewer than `limit` tasks");
                cursor = Some(next.clone());
            }
            other => panic!("GET {url}: `next_cursor` must be a string or null, got {other}"),
        }
    }
    panic!("GET {path_and_query}: next_cursor never became null in 100 pages")
}

fn keys(tasks: &[Value]) -> Vec<String> {
    tasks.iter().map(|t| t["key"].as_str().expect("a task has a string key").to_owned()).collect()
}

#[test]
fn put_creates_replaces_keeps_and_refuses_by_if_exists() {
    let server = start_server();
    let api = Api::of(&server);
    let path = task_path("order.cancel", "order-1234");

    let resp = api.put(&path, json!({"delay": "1h", "payload": {"v": 1}}));
    resp.expect(201, "PUT of a new task");
    assert_eq!(resp.json["outcome"], "created", "{}", resp.text);
    let v1 = resp.json["task"]["version"].as_i64().expect("an integer version");
    assert!(v1 >= 1, "a new task's version is positive: {v1}");

    let resp = api.put(&path, json!({"delay": "2h", "payload": {"v": 2}}));
    resp.expect(200, "PUT of an existing task (replace by default)");
    assert_eq!(resp.json["outcome"], "replaced", "{}", resp.text);
    assert_eq!(resp.json["task"]["payload"], json!({"v": 2}));
    assert_near(parse_time(&resp.json["task"]["due_at"]), now_ms() + 2 * HOUR, 60_000, "replaced due_at");
    let v2 = resp.json["task"]["version"].as_i64().expect("an integer version");
    assert!(v2 > v1, "replace bumps the version: {v1} then {v2}");

    let resp = api.put(&path, json!({"delay": "3h", "payload": {"v": 3}, "if_exists": "replace"}));
    resp.expect(200, "PUT with if_exists replace");
    assert_eq!(resp.json["outcome"], "replaced", "{}", resp.text);
    let v3 = resp.json["task"]["version"].as_i64().expect("an integer version");
    assert!(v3 > v2, "replace bumps the version: {v2} then {v3}");
    let stored = resp.json["task"].clone();

    let resp = api.put(&path, json!({"delay": "5m", "payload": {"v": 4}, "if_exists": "keep"}));
    resp.expect(200, "PUT with if_exists keep on an existing task");
    assert_eq!(resp.json["outcome"], "kept", "{}", resp.text);
    assert_eq!(resp.json["task"], stored, "keep answers the existing task, untouched");

    let resp = api.put(&path, json!({"payload": {"v": 5}, "if_exists": "error"}));
    resp.expect_error(409, "conflict", None, "PUT with if_exists error on an existing task");

    let resp = api.get(&path);
    resp.expect(200, "GET after keep and error");
    assert_eq!(resp.json, stored, "neither keep nor error changed the stored task");

    let resp = api.put(&task_path("order.cancel", "order-5678"), json!({"delay": "1h", "if_exists": "error"}));
    resp.expect(201, "PUT with if_exists error on a new task");
    assert_eq!(resp.json["outcome"], "created");
    let resp = api.put(&task_path("order.cancel", "order-9999"), json!({"delay": "1h", "if_exists": "keep"}));
    resp.expect(201, "PUT with if_exists keep on a new task");
    assert_eq!(resp.json["outcome"], "created");
}

#[test]
fn the_task_object_has_exactly_api_fields_effective_policies_and_time_format() {
    let server = start_server();
    let api = Api::of(&server);
    let before = now_ms();

    let task = api.create(
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
    );
    assert_task_shape(&task);
    assert_eq!(task["queue"], "order.cancel");
    assert_eq!(task["key"], "k-full");
    assert_eq!(task["state"], "scheduled");
    assert_eq!(task["due_at"], "2099-11-30T01:00:00.000Z", "due_at in UTC with three fractional digits");
    assert_eq!(task["payload"], json!({"order_id": 1234}));
    assert_eq!(task["attempts"], 0);
    assert_eq!(task["max_attempts"], 5);
    assert_eq!(parse_duration(&task["repeat"]["every"]), 24 * HOUR as u64, "repeat.every: {task}");
    assert_eq!(task["repeat"]["times"], 3, "repeat.times: {task}");
    assert_eq!(task["tags"], json!(["pi-9"]));
    assert!(task["version"].as_i64().is_some_and(|v| v >= 1), "version: {task}");
    assert_near(parse_time(&task["created_at"]), before, 60_000, "created_at");
    assert_near(parse_time(&task["updated_at"]), before, 60_000, "updated_at");
    assert_eq!(task["lease_expires_at"], Value::Null);
    assert_eq!(task["last_error"], Value::Null);

    // Policies not given show the built-in defaults: 20 attempts, backoff 1 s ×2 up to 1 h.
    let task = api.create("order.cancel", "k-defaults", json!({}));
    assert_task_shape(&task);
    assert_near(parse_time(&task["due_at"]), now_ms(), 10_000, "no delay nor due_at: due now");
    assert_eq!(task["max_attempts"], 20, "default max_attempts: {task}");
    assert_eq!(parse_duration(&task["backoff"]["initial"]), 1_000, "backoff.initial: {task}");
    assert_eq!(task["backoff"]["factor"].as_f64(), Some(2.0), "backoff.factor: {task}");
    assert_eq!(parse_duration(&task["backoff"]["max"]), HOUR as u64, "backoff.max: {task}");
    assert_eq!(task["repeat"], Value::Null);
    assert_eq!(task["tags"], json!([]), "no tags: an empty list");

    // Times as epoch milliseconds; delays as integer milliseconds and compound strings.
    let at = 4_102_444_800_123_i64; // 2100-01-01T00:00:00.123Z
    let task = api.create("order.cancel", "k-epoch", json!({"due_at": at}));
    assert_eq!(task["due_at"], "2100-01-01T00:00:00.123Z");
    assert_eq!(parse_time(&task["due_at"]), at);
    let task = api.create("order.cancel", "k-ms", json!({"delay": 90_000}));
    assert_near(parse_time(&task["due_at"]), now_ms() + 90_000, 10_000, "delay in integer ms");
    let task = api.create("order.cancel", "k-compound", json!({"delay": "1h 30m"}));
    assert_near(parse_time(&task["due_at"]), now_ms() + 90 * 60_000, 10_000, "delay \"1h 30m\"");
    let task = api.create("order.cancel", "k-1500ms", json!({"delay": "1500ms"}));
    assert_near(parse_time(&task["due_at"]), now_ms() + 1_500, 10_000, "delay \"1500ms\"");
    let task = api.create("order.cancel", "k-fraction", json!({"due_at": "2099-01-01T00:00:00.5Z"}));
    assert_eq!(task["due_at"], "2099-01-01T00:00:00.500Z", "fractions of a second, three digits");
    let task = api.create("order.cancel", "k-days", json!({"delay": "7d"}));
    assert_near(parse_time(&task["due_at"]), now_ms() + 7 * 24 * HOUR, 10_000, "delay \"7d\"");

    // A due_at in the past means due now: it is leased at once.
    api.create("past.due", "k-past", json!({"due_at": "2020-01-01T00:00:00Z"}));
    let leases = api.lease("past.due", json!({}));
    assert_eq!(leases.len(), 1, "a task due in the past is due now: {leases:?}");
    assert_eq!(leases[0]["task"]["key"], "k-past");
}

/// A batch item's error names the field, bare (`delay`) or as a path into the request
/// (`tasks[1].delay`): API.md leaves the form open.
#[track_caller]
fn assert_field(result: &Value, field: &str) {
    let named = result["error"]["field"].as_str().unwrap_or_default();
    let ok = named == field || (named.starts_with("tasks[") && named.ends_with(&format!("].{field}")));
    assert!(ok, "the item's error names the field {field}: {result}");
}

#[test]
fn batch_stores_valid_items_and_reports_invalid_ones_in_order() {
    let server = start_server();
    let api = Api::of(&server);
    let resp = api.post(
        "/v1/queues/batch.q/tasks",
        json!({"tasks": [
            {"key": "a", "delay": "1h", "payload": {"n": 1}},
            {"key": "b", "delay": "soon"},
            {"key": "c", "due_at": "2099-01-01T00:00:00Z", "tags": ["x"]},
            {"delay": "1h"},
            {"key": "d", "due_at": "yesterday-ish"},
            {"key": "e", "payload": "x".repeat(70_000)},
        ]}),
    );
    resp.expect(200, "POST batch with valid and invalid items");
    let results = resp.json["results"].as_array().unwrap_or_else(|| panic!("no `results` array: {}", resp.text));
    assert_eq!(results.len(), 6, "one result per item, in order: {}", resp.text);
    assert_eq!(results[0]["key"], "a");
    assert_eq!(results[0]["outcome"], "created", "{}", results[0]);
    assert_eq!(results[1]["key"], "b");
    assert_eq!(results[1]["error"]["code"], "invalid_argument", "{}", results[1]);
    assert_field(&results[1], "delay");
    assert!(results[1]["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", results[1]);
    assert!(results[1].get("outcome").is_none_or(Value::is_null), "an error item has no outcome: {}", results[1]);
    assert_eq!(results[2]["key"], "c");
    assert_eq!(results[2]["outcome"], "created", "{}", results[2]);
    assert_eq!(results[3]["error"]["code"], "invalid_argument", "{}", results[3]);
    assert_field(&results[3], "key");
    assert_eq!(results[4]["key"], "d");
    assert_field(&results[4], "due_at");
    assert_eq!(results[5]["error"]["code"], "payload_too_large", "{}", results[5]);
    assert_field(&results[5], "payload");

    let a = api.task("batch.q", "a");
    a.expect(200, "GET of a valid batch item");
    assert_eq!(a.json["payload"], json!({"n": 1}));
    let c = api.task("batch.q", "c");
    c.expect(200, "GET of a valid batch item");
    assert_eq!(c.json["due_at"], "2099-01-01T00:00:00.000Z");
    assert_eq!(c.json["tags"], json!(["x"]));
    api.task("batch.q", "b").expect_error(404, "not_found", None, "an invalid batch item is not stored");
    api.task("batch.q", "d").expect_error(404, "not_found", None, "an invalid batch item is not stored");
    api.task("batch.q", "e").expect_error(404, "not_found", None, "an oversized batch item is not stored");

    let resp = api.post(
        "/v1/queues/batch.q/tasks",
        json!({"tasks": [
            {"key": "a", "delay": "5h", "if_exists": "keep"},
            {"key": "c", "delay": "5h"},
            {"key": "f", "delay": "5h", "if_exists": "error"},
            {"key": "a", "delay": "5h", "if_exists": "error"},
        ]}),
    );
    resp.expect(200, "POST batch over existing tasks");
    let results = resp.json["results"].as_array().expect("results");
    assert_eq!(results[0]["outcome"], "kept", "{}", resp.text);
    assert_eq!(results[1]["outcome"], "replaced", "{}", resp.text);
    assert_eq!(results[2]["outcome"], "created", "{}", resp.text);
    assert_eq!(results[3]["error"]["code"], "conflict", "if_exists error on an existing task: {}", resp.text);
    assert_eq!(api.task("batch.q", "a").json["payload"], json!({"n": 1}), "kept means untouched");
}

#[test]
fn a_batch_holds_at_most_ten_thousand_tasks() {
    let server = start_server();
    let api = Api::of(&server);
    let items = |n: usize| -> Value {
        Value::Array((0..n).map(|i| json!({"key": format!("k{i:05}"), "delay": "1h"})).collect())
    };

    let resp = api.post("/v1/queues/big.batch/tasks", json!({"tasks": items(10_001)}));
    resp.expect_error(400, "invalid_argument", Some("tasks"), "a batch of 10,001 tasks");
    api.task("big.batch", "k00000").expect_error(404, "not_found", None, "a refused batch stores nothing");

    let resp = api.post("/v1/queues/big.batch/tasks", json!({"tasks": items(10_000)}));
    resp.expect(200, "a batch of exactly 10,000 tasks");
    let results = resp.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 10_000);
    assert!(results.iter().all(|r| r["outcome"] == "created"), "every item created");
    let queue = api.get("/v1/queues/big.batch");
    queue.expect(200, "GET /v1/queues/big.batch");
    assert_eq!(queue.json["scheduled"], 10_000, "{}", queue.text);
}

#[test]
fn get_and_delete_a_task_and_their_not_founds() {
    let server = start_server();
    let api = Api::of(&server);
    let path = task_path("q", "k");
    api.get(&path).expect_error(404, "not_found", None, "GET of an unknown task");
    api.delete(&path).expect_error(404, "not_found", None, "DELETE of an unknown task");

    api.create("q", "k", json!({"delay": "1h", "payload": [1, 2, 3]}));
    let resp = api.get(&path);
    resp.expect(200, "GET of a stored task");
    assert_task_shape(&resp.json);
    assert_eq!(resp.json["payload"], json!([1, 2, 3]));

    let resp = api.delete(&path);
    resp.expect(204, "DELETE of a stored task");
    assert!(resp.text.is_empty(), "204 has no body: {}", resp.text);
    api.get(&path).expect_error(404, "not_found", None, "GET after DELETE");
    api.delete(&path).expect_error(404, "not_found", None, "a second DELETE");
    // Another queue's task of the same key is a different task.
    api.create("q2", "k", json!({"delay": "1h"}));
    api.get(&path).expect_error(404, "not_found", None, "(queue, key) is the identity");
}

#[test]
fn a_cancelled_leased_task_is_gone_for_good() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "plain");
    api.create("q", "repeating", json!({"repeat": {"every": "1s"}}));
    let leases = api.lease("q", json!({"max": 2}));
    assert_eq!(leases.len(), 2, "{leases:?}");
    for lease in &leases {
        let key = lease["task"]["key"].as_str().expect("key");
        api.delete(&task_path("q", key)).expect(204, "DELETE of a leased task");
        api.task("q", key).expect_error(404, "not_found", None, "GET of a cancelled leased task");
        api.ack(lease_id(lease), json!({"outcome": "done"})).expect_error(
            409,
            "conflict",
            None,
            "ack of a lease whose task was cancelled",
        );
    }
    let leases = api.lease("q", json!({"max": 10, "wait": "2s"}));
    assert!(leases.is_empty(), "a cancelled leased task neither retries nor repeats: {leases:?}");
}

#[test]
fn cancel_by_tag_counts_the_cancelled_and_spares_the_rest() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("tag.q", "a", json!({"delay": "1h", "tags": ["t1"]}));
    api.create("tag.q", "b", json!({"delay": "2h", "tags": ["t1"]}));
    api.create("tag.q", "c", json!({"delay": "1h", "tags": ["t2", "t1"]}));
    api.create("tag.q", "d", json!({"delay": "1h", "tags": ["t2"]}));
    api.create("tag.q", "e", json!({"delay": "1h"}));
    api.create("tag.other", "f", json!({"delay": "1h", "tags": ["t1"]}));
    api.create("tag.q", "leased", json!({"tags": ["t1"]}));
    let lease = api.lease_one("tag.q");
    assert_eq!(lease["task"]["key"], "leased");

    let resp = api.delete("/v1/queues/tag.q/tags/t1");
    resp.expect(200, "DELETE of a tag");
    assert_eq!(resp.json, json!({"cancelled": 4}), "a, b, c and the leased task carry t1 in tag.q");
    for key in ["a", "b", "c", "leased"] {
        api.task("tag.q", key).expect_error(404, "not_found", None, "a task of the cancelled tag");
    }
    for (queue, key) in [("tag.q", "d"), ("tag.q", "e"), ("tag.other", "f")] {
        api.task(queue, key).expect(200, "a task without the tag, or in another queue, stays");
    }
    api.ack(lease_id(&lease), json!({"outcome": "done"})).expect_error(
        409,
        "conflict",
        None,
        "ack of a lease whose task was cancelled by tag",
    );

    let resp = api.delete("/v1/queues/tag.q/tags/t1");
    resp.expect(200, "DELETE of a tag no task carries any more");
    assert_eq!(resp.json, json!({"cancelled": 0}));
}

#[test]
fn list_pages_in_due_order_until_next_cursor_is_null() {
    let server = start_server();
    let api = Api::of(&server);
    let base = now_ms() + HOUR;
    // Shuffled due times, two pairs of ties across page boundaries.
    let offsets = [5, 1, 7, 3, 3, 2, 6, 4, 4, 0, 8];
    let mut expected: Vec<(i64, String)> = Vec::new();
    for (i, offset) in offsets.iter().enumerate() {
        let key = format!("task-{i:02}");
        let due = base + offset * 60_000;
        api.create("list.q", &key, json!({"due_at": due}));
        expected.push((due, key));
    }
    // A leased and a dead task are not `scheduled`.
    due_now(&api, "list.q", "leased");
    let lease = api.lease_one("list.q");
    due_now(&api, "list.q", "dead");
    let dead = api.lease_one("list.q");
    api.ack(lease_id(&dead), json!({"outcome": "fail", "error": "x"})).expect(204, "fail");
    assert_eq!(lease["task"]["key"], "leased");

    for limit in [1, 2, 3, 100] {
        let tasks = list_all(&api, "/v1/queues/list.q/tasks?state=scheduled", limit);
        for task in &tasks {
            assert_task_shape(task);
            assert_eq!(task["state"], "scheduled", "state=scheduled lists scheduled tasks only");
        }
        let dues: Vec<i64> = tasks.iter().map(|t| parse_time(&t["due_at"])).collect();
        assert!(dues.windows(2).all(|w| w[0] <= w[1]), "tasks in due order (limit {limit}): {dues:?}");
        let mut got = keys(&tasks);
        let mut want: Vec<String> = expected.iter().map(|(_, k)| k.clone()).collect();
        assert_eq!(got.len(), want.len(), "every scheduled task exactly once (limit {limit}): {got:?}");
        got.sort();
        want.sort();
        assert_eq!(got, want, "every scheduled task exactly once (limit {limit})");
    }
    for (state, key) in [("leased", "leased"), ("dead", "dead")] {
        let tasks = list_all(&api, &format!("/v1/queues/list.q/tasks?state={state}"), 10);
        assert_eq!(keys(&tasks), [key], "state={state} lists the {state} task only");
        assert_eq!(tasks[0]["state"], state);
    }
    let resp = api.get("/v1/queues/empty.q/tasks");
    resp.expect(200, "the list of an unknown queue");
    assert_eq!(resp.json, json!({"tasks": [], "next_cursor": null}));
}

#[test]
fn queues_answer_counts_next_due_overdue_and_lag() {
    let server = start_server();
    let api = Api::of(&server);
    let soon = api.create("stat.q", "soon", json!({"delay": "1h"}));
    api.create("stat.q", "later", json!({"delay": "2h"}));
    due_now(&api, "stat.q", "leased");
    api.lease_one("stat.q");
    due_now(&api, "stat.q", "dead");
    let dead = api.lease_one("stat.q");
    api.ack(lease_id(&dead), json!({"outcome": "fail"})).expect(204, "fail");
    api.create("stat.other", "x", json!({"delay": "1h"}));

    let entry = queue_entry(&api, "stat.q").expect("GET /v1/queues lists stat.q");
    assert_eq!(entry["scheduled"], 2, "{entry}");
    assert_eq!(entry["leased"], 1, "{entry}");
    assert_eq!(entry["dead"], 1, "{entry}");
    assert_eq!(entry["next_due_at"], soon["due_at"], "next_due_at is the earliest scheduled due_at: {entry}");
    let other = queue_entry(&api, "stat.other").expect("GET /v1/queues lists stat.other");
    assert_eq!(other["scheduled"], 1, "{other}");

    let resp = api.get("/v1/queues/stat.q");
    resp.expect(200, "GET /v1/queues/stat.q");
    let one = &resp.json;
    for field in ["name", "scheduled", "leased", "dead", "next_due_at"] {
        assert_eq!(one[field], entry[field], "GET /v1/queues/{{queue}} has the list's `{field}`: {one}");
    }
    assert!(one.get("oldest_overdue_ms").is_some(), "oldest_overdue_ms present: {one}");
    for p in ["p50", "p99"] {
        let lag = &one["lag_ms"][p];
        assert!(lag.as_f64().is_some_and(|v| v >= 0.0), "lag_ms.{p} is a number after two leases: {one}");
    }

    // An overdue task nobody leases shows in oldest_overdue_ms.
    let created = now_ms();
    api.create("stat.q", "overdue", json!({"due_at": created - 5_000}));
    let resp = api.get("/v1/queues/stat.q");
    let overdue = resp.json["oldest_overdue_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("oldest_overdue_ms is a number while a task is overdue: {}", resp.text));
    let bound = (now_ms() - created + 5_000 + 1_000) as f64;
    assert!((0.0..=bound).contains(&overdue), "oldest_overdue_ms {overdue} within 0..={bound}");
}

#[test]
fn an_unknown_queue_answers_zero_counts() {
    let server = start_server();
    let api = Api::of(&server);
    let resp = api.get("/v1/queues/never.used");
    resp.expect(200, "GET of an unknown queue");
    assert_eq!(resp.json["name"], "never.used", "{}", resp.text);
    assert_eq!(resp.json["scheduled"], 0, "{}", resp.text);
    assert_eq!(resp.json["leased"], 0, "{}", resp.text);
    assert_eq!(resp.json["dead"], 0, "{}", resp.text);
    assert_eq!(resp.json["next_due_at"], Value::Null, "{}", resp.text);
    let resp = api.get("/v1/queues");
    resp.expect(200, "GET /v1/queues on an empty server");
    assert!(resp.json["queues"].is_array(), "{}", resp.text);
}

#[test]
fn lease_hands_out_due_tasks_and_ack_done_removes_them() {
    let server = start_server();
    let api = Api::of(&server);
    for key in ["t1", "t2", "t3"] {
        due_now(&api, "lease.q", key);
    }
    api.create("lease.q", "future", json!({"delay": "1h"}));

    let before = now_ms();
    let first = api.lease("lease.q", json!({}));
    assert_eq!(first.len(), 1, "max defaults to 1: {first:?}");
    let lease = &first[0];
    assert!(!lease_id(lease).is_empty());
    assert_near(parse_time(&lease["expires_at"]), before + 30_000, 5_000, "lease defaults to 30 s");
    assert_eq!(lease["attempt"], 1, "the first try: {lease}");
    assert!(lease["delivery_id"].as_str().is_some_and(|d| !d.is_empty()), "a delivery_id: {lease}");
    assert_task_shape(&lease["task"]);
    assert_eq!(lease["task"]["state"], "leased");
    assert_eq!(lease["task"]["lease_expires_at"], lease["expires_at"]);
    assert_eq!(lease["task"]["attempts"], 0);
    let key = lease["task"]["key"].as_str().expect("key").to_owned();
    assert_eq!(lease["task"]["payload"], json!({"key": key}));
    assert_eq!(api.task("lease.q", &key).json["state"], "leased", "GET shows the task leased");

    let before = now_ms();
    let rest = api.lease("lease.q", json!({"max": 10, "lease": "2m"}));
    assert_eq!(rest.len(), 2, "the two other due tasks, not the future one: {rest:?}");
    for lease in &rest {
        assert_near(parse_time(&lease["expires_at"]), before + 120_000, 5_000, "lease \"2m\"");
    }
    let mut seen: HashSet<String> = rest.iter().map(|l| l["task"]["key"].as_str().expect("key").to_owned()).collect();
    assert!(seen.insert(key), "three different tasks");
    assert_eq!(seen.len(), 3);
    assert!(api.lease("lease.q", json!({"max": 10})).is_empty(), "nothing else is due");

    for lease in first.iter().chain(&rest) {
        let resp = api.ack(lease_id(lease), json!({"outcome": "done"}));
        resp.expect(204, "ack done");
        assert!(resp.text.is_empty(), "204 has no body: {}", resp.text);
        let key = lease["task"]["key"].as_str().expect("key");
        api.task("lease.q", key).expect_error(404, "not_found", None, "a done task is deleted");
    }
    api.task("lease.q", "future").expect(200, "the future task stays");
}

#[test]
fn an_ack_from_a_superseded_lease_is_conflict_and_changes_nothing() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "k");
    let lease = api.lease_one("q");
    let resp = api.schedule("q", "k", json!({"delay": "1h", "payload": {"v": 2}}));
    resp.expect(200, "replace of a leased task");
    assert_eq!(resp.json["outcome"], "replaced");
    let replaced = api.task("q", "k").json;

    for outcome in [
        json!({"outcome": "done"}),
        json!({"outcome": "fail", "error": "x"}),
        json!({"outcome": "retry"}),
        json!({"outcome": "reschedule", "delay": "1m"}),
    ] {
        api.ack(lease_id(&lease), outcome.clone()).expect_error(
            409,
            "conflict",
            None,
            &format!("{outcome} of a superseded lease"),
        );
    }
    api.extend(lease_id(&lease), json!({"lease": "30s"})).expect_error(
        409,
        "conflict",
        None,
        "extend of a superseded lease",
    );
    let now = api.task("q", "k");
    now.expect(200, "the replaced task survives the old lease's acks");
    assert_eq!(now.json, replaced, "nothing changed");
    assert_eq!(now.json["payload"], json!({"v": 2}));
}

#[test]
fn an_expired_lease_makes_the_task_due_again_and_its_ack_is_conflict() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "k");
    let first = api.lease("q", json!({"lease": "1s"}));
    assert_eq!(first.len(), 1);
    // The long poll answers once the first lease expires, about a second from now.
    let second = api.lease("q", json!({"wait": "10s"}));
    assert_eq!(second.len(), 1, "the task is due again once its lease expired");
    let (first, second) = (&first[0], &second[0]);
    assert_eq!(second["task"]["key"], "k");
    assert_eq!(second["attempt"], 2, "the second try: {second}");
    assert_eq!(second["task"]["attempts"], 1, "the expired lease counts as an attempt: {second}");
    assert_eq!(second["delivery_id"], first["delivery_id"], "the same occurrence keeps its delivery_id");
    assert_ne!(second["lease_id"], first["lease_id"]);

    api.ack(lease_id(first), json!({"outcome": "done"})).expect_error(409, "conflict", None, "ack of an expired lease");
    api.extend(lease_id(first), json!({"lease": "30s"})).expect_error(
        409,
        "conflict",
        None,
        "extend of an expired lease",
    );
    api.task("q", "k").expect(200, "the expired lease's ack changed nothing");
    api.ack(lease_id(second), json!({"outcome": "done"})).expect(204, "ack of the live lease");
    api.task("q", "k").expect_error(404, "not_found", None, "done");
}

#[test]
fn an_unknown_or_malformed_lease_id_is_not_found() {
    let server = start_server();
    let api = Api::of(&server);
    for id in ["nonsense", "0", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
        api.ack(id, json!({"outcome": "done"})).expect_error(
            404,
            "not_found",
            None,
            &format!("ack of lease id '{id}'"),
        );
        api.extend(id, json!({"lease": "30s"})).expect_error(
            404,
            "not_found",
            None,
            &format!("extend of lease id '{id}'"),
        );
    }
    due_now(&api, "q", "k");
    let lease = api.lease_one("q");
    let id = lease_id(&lease);
    for tampered in common::tamper(id) {
        api.ack(&tampered, json!({"outcome": "done"})).expect_error(
            404,
            "not_found",
            None,
            &format!("ack of a tampered lease id '{tampered}' (real: '{id}')"),
        );
    }
    api.ack(id, json!({"outcome": "done"})).expect(204, "the real lease still acks");
}

#[test]
fn batch_acks_answer_a_status_per_item_applied_on_its_own() {
    let server = start_server();
    let api = Api::of(&server);
    for key in ["k1", "k2", "k3", "k4"] {
        due_now(&api, "acks.q", key);
    }
    let leases = api.lease("acks.q", json!({"max": 4}));
    assert_eq!(leases.len(), 4);
    let by_key = |key: &str| -> String {
        lease_id(leases.iter().find(|l| l["task"]["key"] == key).expect("every task leased")).to_owned()
    };
    api.schedule("acks.q", "k4", json!({"delay": "1h", "payload": "new"})).expect(200, "replace k4 while leased");

    let resp = api.post(
        "/v1/acks",
        json!({"acks": [
            {"lease_id": by_key("k1"), "outcome": "done"},
            {"lease_id": "garbage", "outcome": "done"},
            {"lease_id": by_key("k2"), "outcome": "retry", "delay": "5m", "error": "smtp timeout"},
            {"lease_id": by_key("k4"), "outcome": "done"},
            {"lease_id": by_key("k3"), "outcome": "fail", "error": "boom"},
            {"lease_id": by_key("k1"), "outcome": "done"},
        ]}),
    );
    resp.expect(200, "POST /v1/acks");
    let results = resp.json["results"].as_array().unwrap_or_else(|| panic!("no `results`: {}", resp.text));
    let statuses: Vec<i64> = results.iter().map(|r| r["status"].as_i64().unwrap_or(-1)).collect();
    let first_again = statuses.get(5).copied().unwrap_or(-1);
    assert_eq!(&statuses[..5], [204, 404, 204, 409, 204], "per-item statuses in order: {}", resp.text);
    assert!(first_again == 409 || first_again == 404, "a second ack of a done lease is refused: {}", resp.text);
    assert_eq!(results[1]["lease_id"], "garbage");
    assert_eq!(results[0]["lease_id"], by_key("k1"));
    assert_eq!(results[1]["error"]["code"], "not_found", "{}", resp.text);
    assert_eq!(results[3]["error"]["code"], "conflict", "{}", resp.text);

    api.task("acks.q", "k1").expect_error(404, "not_found", None, "k1 done");
    let k2 = api.task("acks.q", "k2").json;
    assert_eq!(k2["state"], "scheduled", "{k2}");
    assert_eq!(k2["attempts"], 1, "{k2}");
    assert_eq!(k2["last_error"], "smtp timeout", "{k2}");
    assert_near(parse_time(&k2["due_at"]), now_ms() + 300_000, 30_000, "retry after 5m");
    let k3 = api.task("acks.q", "k3").json;
    assert_eq!(k3["state"], "dead", "{k3}");
    assert_eq!(k3["last_error"], "boom", "{k3}");
    let k4 = api.task("acks.q", "k4").json;
    assert_eq!(k4["state"], "scheduled", "the replaced task is untouched by the stale ack: {k4}");
    assert_eq!(k4["payload"], "new");
}

#[test]
fn extend_prolongs_a_live_lease_and_refuses_a_finished_one() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "k");
    let leases = api.lease("q", json!({"lease": "5s"}));
    let id = lease_id(&leases[0]).to_owned();
    let before = now_ms();
    let resp = api.extend(&id, json!({"lease": "60s"}));
    resp.expect(200, "extend of a live lease");
    let new_id = resp.json["lease_id"].as_str().unwrap_or_else(|| panic!("extend answers lease_id: {}", resp.text));
    let expires = parse_time(&resp.json["expires_at"]);
    assert_near(expires, before + 60_000, 5_000, "extended by 60 s");
    assert_eq!(api.task("q", "k").json["lease_expires_at"], resp.json["expires_at"], "the task shows the new expiry");
    api.ack(new_id, json!({"outcome": "done"})).expect(204, "ack with the extended lease");
    api.extend(new_id, json!({"lease": "60s"})).expect_error(409, "conflict", None, "extend of a finished lease");
}

#[test]
fn retry_waits_for_the_given_delay_or_the_backoff() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "explicit");
    let lease = api.lease_one("q");
    let resp = api.ack(lease_id(&lease), json!({"outcome": "retry", "delay": "5m", "error": "smtp timeout"}));
    resp.expect(204, "ack retry with a delay");
    let task = api.task("q", "explicit").json;
    assert_eq!(task["state"], "scheduled", "{task}");
    assert_eq!(task["attempts"], 1, "{task}");
    assert_eq!(task["last_error"], "smtp timeout", "{task}");
    assert_eq!(task["lease_expires_at"], Value::Null, "{task}");
    assert_near(parse_time(&task["due_at"]), now_ms() + 300_000, 30_000, "retry after 5m");

    due_now(&api, "q2", "backoff");
    let lease = api.lease_one("q2");
    let acked = now_ms();
    api.ack(lease_id(&lease), json!({"outcome": "retry"})).expect(204, "ack retry without a delay");
    let task = api.task("q2", "backoff").json;
    let due = parse_time(&task["due_at"]);
    assert!(
        (acked - 1_000..=acked + 3_000).contains(&due),
        "the first backoff is about 1 s: due {} ms after the ack",
        due - acked
    );
    let again = api.lease("q2", json!({"wait": "10s"}));
    assert_eq!(again.len(), 1, "the retried task falls due again");
    assert_eq!(again[0]["attempt"], 2);
    assert_eq!(again[0]["task"]["attempts"], 1);
}

#[test]
fn reschedule_sets_a_new_due_time_without_counting_an_attempt() {
    let server = start_server();
    let api = Api::of(&server);
    due_now(&api, "q", "by-delay");
    due_now(&api, "q", "by-time");
    let leases = api.lease("q", json!({"max": 2}));
    for lease in &leases {
        let key = lease["task"]["key"].as_str().expect("key");
        let body = if key == "by-delay" {
            json!({"outcome": "reschedule", "delay": "24h"})
        } else {
            json!({"outcome": "reschedule", "due_at": "2099-01-01T00:00:00Z"})
        };
        api.ack(lease_id(lease), body).expect(204, "ack reschedule");
    }
    let task = api.task("q", "by-delay").json;
    assert_eq!(task["state"], "scheduled", "{task}");
    assert_eq!(task["attempts"], 0, "a reschedule is not a failed attempt: {task}");
    assert_near(parse_time(&task["due_at"]), now_ms() + 24 * HOUR, 60_000, "rescheduled in 24h");
    let task = api.task("q", "by-time").json;
    assert_eq!(task["due_at"], "2099-01-01T00:00:00.000Z", "{task}");
    assert_eq!(task["state"], "scheduled", "{task}");
}

#[test]
fn fail_makes_a_task_dead_and_the_dead_routes_list_retry_and_delete_it() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("dead.q", "k", json!({"payload": {"order": 1}}));
    let lease = api.lease_one("dead.q");
    api.ack(lease_id(&lease), json!({"outcome": "fail", "error": "order not found"})).expect(204, "ack fail");
    let task = api.task("dead.q", "k").json;
    assert_eq!(task["state"], "dead", "{task}");
    assert_eq!(task["last_error"], "order not found", "{task}");
    assert!(api.lease("dead.q", json!({"max": 10})).is_empty(), "a dead task is not leased");

    let dead = list_all(&api, "/v1/queues/dead.q/dead", 10);
    assert_eq!(keys(&dead), ["k"]);
    assert_task_shape(&dead[0]);
    assert_eq!(dead[0]["payload"], json!({"order": 1}));
    assert_eq!(dead[0]["state"], "dead");

    // The dead routes touch dead tasks only.
    api.create("dead.q", "live", json!({"delay": "1h"}));
    api.post("/v1/queues/dead.q/dead/live/retry", json!({})).expect_error(
        404,
        "not_found",
        None,
        "retry of a live task",
    );
    api.delete("/v1/queues/dead.q/dead/live").expect_error(404, "not_found", None, "dead DELETE of a live task");
    assert_eq!(api.task("dead.q", "live").json["state"], "scheduled", "the live task is untouched");

    // API.md gives retry no body.
    let resp = api.raw(reqwest::Method::POST, "/v1/queues/dead.q/dead/k/retry", None, None, None);
    resp.expect(200, "retry of a dead task");
    assert_task_shape(&resp.json);
    assert_eq!(resp.json["state"], "scheduled", "{}", resp.text);
    assert_eq!(resp.json["attempts"], 0, "attempts reset: {}", resp.text);
    assert_near(parse_time(&resp.json["due_at"]), now_ms(), 10_000, "due now");
    let lease = api.lease_one("dead.q");
    assert_eq!(lease["attempt"], 1, "attempts reset: {lease}");
    api.ack(lease_id(&lease), json!({"outcome": "fail"})).expect(204, "ack fail");

    let resp = api.delete("/v1/queues/dead.q/dead/k");
    resp.expect(204, "DELETE of a dead task");
    api.task("dead.q", "k").expect_error(404, "not_found", None, "a deleted dead task is gone");
    assert!(list_all(&api, "/v1/queues/dead.q/dead", 10).is_empty());
    api.post("/v1/queues/dead.q/dead/k/retry", json!({})).expect_error(
        404,
        "not_found",
        None,
        "retry of an unknown dead task",
    );
    api.delete("/v1/queues/dead.q/dead/k").expect_error(404, "not_found", None, "DELETE of an unknown dead task");

    // The dead list pages like every list.
    for i in 0..5 {
        due_now(&api, "dead.many", &format!("d{i}"));
    }
    for lease in api.lease("dead.many", json!({"max": 5})) {
        api.ack(lease_id(&lease), json!({"outcome": "fail"})).expect(204, "fail");
    }
    let dead = list_all(&api, "/v1/queues/dead.many/dead", 2);
    let mut got = keys(&dead);
    got.sort();
    assert_eq!(got, ["d0", "d1", "d2", "d3", "d4"]);
}

#[test]
fn exhausted_attempts_make_a_task_dead() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("q", "k", json!({"max_attempts": 2}));
    let lease = api.lease_one("q");
    api.ack(lease_id(&lease), json!({"outcome": "retry", "delay": 0, "error": "one"})).expect(204, "retry");
    let lease = api.lease_one("q");
    assert_eq!(lease["attempt"], 2);
    api.ack(lease_id(&lease), json!({"outcome": "retry", "delay": 0, "error": "two"})).expect(204, "retry");
    let task = api.task("q", "k").json;
    assert_eq!(task["state"], "dead", "two failed attempts of max_attempts 2: {task}");
    assert_eq!(task["attempts"], 2, "{task}");
    assert_eq!(task["last_error"], "two", "{task}");
}

#[test]
fn a_repeating_task_is_armed_again_after_done_and_ends_after_its_times() {
    let server = start_server();
    let api = Api::of(&server);
    let task = api.create("rep.q", "k", json!({"repeat": {"every": "1s", "times": 2}}));
    let first_due = parse_time(&task["due_at"]);
    let first = api.lease_one("rep.q");
    api.ack(lease_id(&first), json!({"outcome": "done"})).expect(204, "done, first occurrence");
    let task = api.task("rep.q", "k");
    task.expect(200, "a repeating task stays after done");
    assert_eq!(task.json["state"], "scheduled", "{}", task.text);
    let next_due = parse_time(&task.json["due_at"]);
    assert!(
        next_due > first_due && (next_due - first_due) % 1_000 == 0,
        "fixed rate: the next due time is due_at + k·every ({first_due} then {next_due})"
    );
    let second = api.lease("rep.q", json!({"wait": "10s"}));
    assert_eq!(second.len(), 1, "the second occurrence falls due");
    assert_eq!(second[0]["attempt"], 1, "a new occurrence starts at attempt 1");
    assert_ne!(second[0]["delivery_id"], first["delivery_id"], "a new occurrence has a new delivery_id");
    api.ack(lease_id(&second[0]), json!({"outcome": "done"})).expect(204, "done, second occurrence");
    api.task("rep.q", "k").expect_error(404, "not_found", None, "times 2: gone after two occurrences");
}

#[test]
fn the_operations_endpoints_answer() {
    let server = start_server();
    let api = Api::of(&server);
    api.get("/healthz").expect(200, "GET /healthz");
    api.get("/readyz").expect(200, "GET /readyz");
    due_now(&api, "q", "k");
    api.lease_one("q");

    let resp = api.get("/metrics");
    resp.expect(200, "GET /metrics");
    assert!(resp.content_type.starts_with("text/plain"), "Prometheus text: content-type {}", resp.content_type);
    assert!(resp.text.contains("# TYPE "), "metrics declare their types:\n{}", resp.text);
    let mut samples = 0;
    for line in resp.text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
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
    assert!(samples > 0, "some samples:\n{}", resp.text);

    let resp = api.get("/");
    resp.expect(200, "GET / (dashboard)");
    assert!(resp.content_type.starts_with("text/html"), "the dashboard is HTML: {}", resp.content_type);
}

#[test]
fn openapi_json_documents_every_route_of_api_md() {
    let server = start_server();
    let api = Api::of(&server);
    let resp = api.get("/openapi.json");
    resp.expect(200, "GET /openapi.json");
    assert!(resp.json.is_object(), "valid JSON: {}", resp.text);
    assert!(resp.json["openapi"].as_str().is_some_and(|v| v.starts_with('3')), "an OpenAPI 3 document");
    let paths = &resp.json["paths"];
    let routes: [(&str, &[&str]); 17] = [
        ("/v1/queues/{queue}/tasks/{key}", &["put", "get", "delete"]),
        ("/v1/queues/{queue}/tasks", &["post", "get"]),
        ("/v1/queues/{queue}/tags/{tag}", &["delete"]),
        ("/v1/queues", &["get"]),
        ("/v1/queues/{queue}", &["get"]),
        ("/v1/queues/{queue}/lease", &["post"]),
        ("/v1/leases/{lease_id}/ack", &["post"]),
        ("/v1/acks", &["post"]),
        ("/v1/leases/{lease_id}/extend", &["post"]),
        ("/v1/queues/{queue}/dead", &["get"]),
        ("/v1/queues/{queue}/dead/{key}/retry", &["post"]),
        ("/v1/queues/{queue}/dead/{key}", &["delete"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
        ("/metrics", &["get"]),
        ("/", &["get"]),
        ("/openapi.json", &["get"]),
    ];
    let mut missing = Vec::new();
    for (path, methods) in routes {
        for method in methods {
            let operation = &paths[path][method];
            if !operation.is_object() {
                missing.push(format!("{} {path}", method.to_uppercase()));
            } else if operation["responses"].as_object().is_none_or(|r| r.is_empty()) {
                missing.push(format!("the responses of {} {path}", method.to_uppercase()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "/openapi.json lacks {missing:?}; it has {:?}",
        paths.as_object().map(|p| p.keys().collect::<Vec<_>>())
    );
}

#[test]
fn a_cron_repeat_falls_on_its_schedule_in_its_zone() {
    let server = start_server();
    let api = Api::of(&server);
    let task = api.create("cron.q", "k", json!({"repeat": {"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}}));
    assert_eq!(task["repeat"]["cron"], "0 9 * * MON-FRI", "{task}");
    assert_eq!(task["repeat"]["tz"], "Asia/Shanghai", "{task}");
    let due = parse_time(&task["due_at"]);
    // 09:00 in Shanghai (UTC+8, no daylight saving) is 01:00 UTC; Monday to Friday.
    assert_eq!(due.rem_euclid(86_400_000), HOUR, "due at 01:00:00.000Z: {}", task["due_at"]);
    let weekday = (due.div_euclid(86_400_000) + 3).rem_euclid(7); // 0 = Monday; 1970-01-01 was a Thursday
    assert!(weekday < 5, "due on a weekday: {}", task["due_at"]);
    assert!(due > now_ms() && due <= now_ms() + 4 * 24 * HOUR, "the next occurrence: {}", task["due_at"]);
}

#[test]
fn a_repeating_occurrence_retries_with_its_delivery_id_and_fails_to_dead() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("rep.q", "k", json!({"repeat": {"every": "1h"}}));
    let first = api.lease_one("rep.q");
    api.ack(lease_id(&first), json!({"outcome": "retry", "delay": 0})).expect(204, "retry of an occurrence");
    let again = api.lease_one("rep.q");
    assert_eq!(again["attempt"], 2, "the same occurrence, tried again: {again}");
    assert_eq!(again["delivery_id"], first["delivery_id"], "every try of one occurrence has its delivery_id");
    api.ack(lease_id(&again), json!({"outcome": "fail", "error": "gone"})).expect(204, "fail of an occurrence");
    let task = api.task("rep.q", "k").json;
    assert_eq!(task["state"], "dead", "fail is dead now, even for a repeating task: {task}");
}
