//! Guards against an ack that does not do what API.md says, a stale lease that still
//! changes a task, defaults (lease 30 s, max 1) not applied, a repeat that is not
//! re-armed at a fixed rate or keeps its delivery id into the next occurrence, and
//! queue counts that disagree with the tasks.
//!
//! Leases and acks through the app, on a manual clock: what a lease hands out, what
//! each outcome does to the task (done, retry with a delay or the backoff, reschedule,
//! fail, exhausted attempts, repeats by `every` and by cron), the dead routes, and the
//! acks and extends that must be refused (a superseded lease, an expired one, a lease id
//! unknown, malformed or tampered with) without changing anything. These were first
//! checked through the real binary (`crates/punctual-cli/tests/end_to_end/routes.rs`); the binary
//! serves this same `app`, so they are checked here, once, where the clock can be moved.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{START, TestServer, assert_task_shape, at, code, keys, lease_id, tamper, time, within};
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000;

/// The key of a lease's task.
fn key_of(lease: &Value) -> String {
    lease["task"]["key"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn lease_hands_out_due_tasks_with_its_defaults_and_ack_done_removes_them() {
    let s = TestServer::manual().await;
    for key in ["t1", "t2", "t3"] {
        s.create("lease.q", key, json!({"payload": {"key": key}})).await;
    }
    s.create("lease.q", "future", json!({"delay": "1h"})).await;

    let first = s.lease("lease.q", json!({})).await;
    assert_eq!(first.len(), 1, "max defaults to 1: {first:?}");
    let lease = &first[0];
    assert!(!lease_id(lease).is_empty());
    assert_eq!(lease["expires_at"], at(30_000), "lease defaults to 30 s");
    assert_eq!(lease["attempt"], 1, "the first try: {lease}");
    assert!(lease["delivery_id"].as_str().is_some_and(|d| !d.is_empty()), "a delivery_id: {lease}");
    assert_task_shape(&lease["task"]);
    assert_eq!(lease["task"]["state"], "leased");
    assert_eq!(lease["task"]["lease_expires_at"], lease["expires_at"]);
    assert_eq!(lease["task"]["attempts"], 0);
    let key = key_of(lease);
    assert_eq!(lease["task"]["payload"], json!({"key": key}));
    assert_eq!(s.get(&format!("/v1/queues/lease.q/tasks/{key}")).await.1["state"], "leased", "GET shows it leased");

    let rest = s.lease("lease.q", json!({"max": 10, "lease": "2m"})).await;
    assert_eq!(rest.len(), 2, "the two other due tasks, not the future one: {rest:?}");
    for lease in &rest {
        assert_eq!(lease["expires_at"], at(120_000), "lease \"2m\"");
    }
    let mut seen: HashSet<String> = rest.iter().map(key_of).collect();
    assert!(seen.insert(key), "three different tasks");
    assert!(s.lease("lease.q", json!({"max": 10})).await.is_empty(), "nothing else is due");

    for lease in first.iter().chain(&rest) {
        assert_eq!(s.ack(lease, json!({"outcome": "done"})).await, (StatusCode::NO_CONTENT, Value::Null), "ack done");
        let (status, body) = s.get(&format!("/v1/queues/lease.q/tasks/{}", key_of(lease))).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "a done task is deleted");
    }
    assert_eq!(s.get("/v1/queues/lease.q/tasks/future").await.0, StatusCode::OK, "the future task stays");
}

#[tokio::test]
async fn an_ack_from_a_superseded_lease_is_conflict_and_changes_nothing() {
    let s = TestServer::manual().await;
    s.create("q", "k", json!({})).await;
    let lease = s.lease_one("q").await;
    let (status, body) = s.put("/v1/queues/q/tasks/k", json!({"delay": "1h", "payload": {"v": 2}})).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::OK, Some("replaced")), "replace of a leased task");
    let (_, replaced) = s.get("/v1/queues/q/tasks/k").await;

    for outcome in [
        json!({"outcome": "done"}),
        json!({"outcome": "fail", "error": "x"}),
        json!({"outcome": "retry"}),
        json!({"outcome": "reschedule", "delay": "1m"}),
    ] {
        let (status, body) = s.ack(&lease, outcome.clone()).await;
        assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "{outcome} of a superseded lease");
    }
    let (status, body) = s.post(&format!("/v1/leases/{}/extend", lease_id(&lease)), json!({"lease": "30s"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "extend of a superseded lease");
    let (status, now) = s.get("/v1/queues/q/tasks/k").await;
    assert_eq!((status, &now), (StatusCode::OK, &replaced), "the replaced task survives the old lease's acks");
    assert_eq!(now["payload"], json!({"v": 2}));
}

#[tokio::test]
async fn an_expired_lease_makes_the_task_due_again_and_its_ack_is_conflict() {
    let s = TestServer::manual().await;
    s.create("q", "k", json!({})).await;
    let first = s.lease("q", json!({"lease": "1s"})).await;
    assert_eq!(first.len(), 1);
    s.clock.as_ref().unwrap().advance(Duration::from_secs(1));
    // The reaper finds the expired lease on the engine's clock; the long poll answers then.
    let second = within(10, s.lease("q", json!({"wait": "10s"}))).await;
    assert_eq!(second.len(), 1, "the task is due again once its lease expired");
    let (first, second) = (&first[0], &second[0]);
    assert_eq!(second["task"]["key"], "k");
    assert_eq!(second["attempt"], 2, "the second try: {second}");
    assert_eq!(second["task"]["attempts"], 1, "the expired lease counts as an attempt: {second}");
    assert_eq!(second["delivery_id"], first["delivery_id"], "the same occurrence keeps its delivery_id");
    assert_ne!(second["lease_id"], first["lease_id"]);

    let (status, body) = s.ack(first, json!({"outcome": "done"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "ack of an expired lease");
    let (status, body) = s.post(&format!("/v1/leases/{}/extend", lease_id(first)), json!({"lease": "30s"})).await;
    assert_eq!((status, code(&body)), (StatusCode::CONFLICT, "conflict"), "extend of an expired lease");
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.0, StatusCode::OK, "the expired lease's ack changed nothing");
    assert_eq!(s.ack(second, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT, "ack of the live lease");
    assert_eq!(s.get("/v1/queues/q/tasks/k").await.0, StatusCode::NOT_FOUND, "done");
}

#[tokio::test]
async fn an_unknown_malformed_or_tampered_lease_id_is_not_found() {
    let s = TestServer::start().await;
    for id in ["nonsense", "0", &"A".repeat(64)] {
        for (route, body) in [("ack", json!({"outcome": "done"})), ("extend", json!({"lease": "30s"}))] {
            let (status, answer) = s.post(&format!("/v1/leases/{id}/{route}"), body).await;
            assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "{route} of lease id '{id}'");
        }
    }
    s.create("q", "k", json!({})).await;
    let lease = s.lease_one("q").await;
    let id = lease_id(&lease);
    for tampered in tamper(id) {
        let (status, answer) = s.post(&format!("/v1/leases/{tampered}/ack"), json!({"outcome": "done"})).await;
        assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "'{tampered}' (real: '{id}')");
    }
    assert_eq!(s.ack(&lease, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT, "the real lease still acks");
}

#[tokio::test]
async fn batch_acks_answer_a_status_per_item_each_applied_on_its_own() {
    let s = TestServer::manual().await;
    for key in ["k1", "k2", "k3", "k4"] {
        s.create("acks.q", key, json!({})).await;
    }
    let leases = s.lease("acks.q", json!({"max": 4})).await;
    assert_eq!(leases.len(), 4);
    let by_key = |key: &str| lease_id(leases.iter().find(|l| l["task"]["key"] == key).unwrap()).to_owned();
    let (status, _) = s.put("/v1/queues/acks.q/tasks/k4", json!({"delay": "1h", "payload": "new"})).await;
    assert_eq!(status, StatusCode::OK, "replace k4 while leased");

    let (status, body) = s
        .post(
            "/v1/acks",
            json!({"acks": [
                {"lease_id": by_key("k1"), "outcome": "done"},
                {"lease_id": "garbage", "outcome": "done"},
                {"lease_id": by_key("k2"), "outcome": "retry", "delay": "5m", "error": "smtp timeout"},
                {"lease_id": by_key("k4"), "outcome": "done"},
                {"lease_id": by_key("k3"), "outcome": "fail", "error": "boom"},
                {"lease_id": by_key("k1"), "outcome": "done"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    let statuses: Vec<u64> = results.iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses[..5], [204, 404, 204, 409, 204], "per-item statuses in order: {body}");
    assert!([409, 404].contains(&statuses[5]), "a second ack of a done lease is refused: {body}");
    assert_eq!(results[0]["lease_id"], by_key("k1"));
    assert_eq!(results[1]["lease_id"], "garbage");
    assert_eq!(results[1]["error"]["code"], "not_found", "{body}");
    assert_eq!(results[3]["error"]["code"], "conflict", "{body}");

    assert_eq!(s.get("/v1/queues/acks.q/tasks/k1").await.0, StatusCode::NOT_FOUND, "k1 done");
    let (_, k2) = s.get("/v1/queues/acks.q/tasks/k2").await;
    assert_eq!(
        (&k2["state"], &k2["attempts"], &k2["last_error"]),
        (&json!("scheduled"), &json!(1), &json!("smtp timeout"))
    );
    assert_eq!(k2["due_at"], at(300_000), "retry after 5m");
    let (_, k3) = s.get("/v1/queues/acks.q/tasks/k3").await;
    assert_eq!((&k3["state"], &k3["last_error"]), (&json!("dead"), &json!("boom")));
    let (_, k4) = s.get("/v1/queues/acks.q/tasks/k4").await;
    assert_eq!((&k4["state"], &k4["payload"]), (&json!("scheduled"), &json!("new")), "untouched by the stale ack");
}

#[tokio::test]
async fn extend_prolongs_a_live_lease_and_refuses_a_finished_one() {
    let s = TestServer::manual().await;
    s.create("q", "k", json!({})).await;
    let lease = s.lease("q", json!({"lease": "5s"})).await.remove(0);
    let (status, body) = s.post(&format!("/v1/leases/{}/extend", lease_id(&lease)), json!({"lease": "60s"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["expires_at"], at(60_000), "extended to 60 s from now");
    let (_, task) = s.get("/v1/queues/q/tasks/k").await;
    assert_eq!(task["lease_expires_at"], body["expires_at"], "the task shows the new expiry");
    assert_eq!(s.ack(&body, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT, "ack with the extended lease");
    let (status, answer) = s.post(&format!("/v1/leases/{}/extend", lease_id(&body)), json!({"lease": "60s"})).await;
    assert_eq!((status, code(&answer)), (StatusCode::CONFLICT, "conflict"), "extend of a finished lease");
}

#[tokio::test]
async fn retry_waits_for_the_given_delay_or_the_backoff() {
    let s = TestServer::manual().await;
    s.create("q", "explicit", json!({})).await;
    let lease = s.lease_one("q").await;
    let (status, _) = s.ack(&lease, json!({"outcome": "retry", "delay": "5m", "error": "smtp timeout"})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, task) = s.get("/v1/queues/q/tasks/explicit").await;
    assert_eq!((&task["state"], &task["attempts"]), (&json!("scheduled"), &json!(1)), "{task}");
    assert_eq!((&task["last_error"], &task["lease_expires_at"]), (&json!("smtp timeout"), &Value::Null), "{task}");
    assert_eq!(task["due_at"], at(300_000), "retry after 5m");

    s.create("q2", "backoff", json!({})).await;
    let lease = s.lease_one("q2").await;
    assert_eq!(s.ack(&lease, json!({"outcome": "retry"})).await.0, StatusCode::NO_CONTENT, "retry without a delay");
    let (_, task) = s.get("/v1/queues/q2/tasks/backoff").await;
    let after = time(&task["due_at"]).as_millis() - START.as_millis();
    assert!((-1_000..=3_000).contains(&after), "the first backoff is about 1 s: due {after} ms after the ack");
    s.clock.as_ref().unwrap().advance(Duration::from_secs(3));
    let again = s.lease("q2", json!({})).await;
    assert_eq!(again.len(), 1, "the retried task falls due again");
    assert_eq!((&again[0]["attempt"], &again[0]["task"]["attempts"]), (&json!(2), &json!(1)));
}

#[tokio::test]
async fn reschedule_sets_a_new_due_time_without_counting_an_attempt() {
    let s = TestServer::manual().await;
    s.create("q", "by-delay", json!({})).await;
    s.create("q", "by-time", json!({})).await;
    for lease in s.lease("q", json!({"max": 2})).await {
        let body = match key_of(&lease).as_str() {
            "by-delay" => json!({"outcome": "reschedule", "delay": "24h"}),
            _ => json!({"outcome": "reschedule", "due_at": "2099-01-01T00:00:00Z"}),
        };
        assert_eq!(s.ack(&lease, body).await.0, StatusCode::NO_CONTENT, "ack reschedule");
    }
    let (_, task) = s.get("/v1/queues/q/tasks/by-delay").await;
    assert_eq!((&task["state"], &task["attempts"]), (&json!("scheduled"), &json!(0)), "not a failed attempt: {task}");
    assert_eq!(task["due_at"], at(24 * HOUR), "rescheduled in 24h");
    let (_, task) = s.get("/v1/queues/q/tasks/by-time").await;
    assert_eq!((&task["state"], &task["due_at"]), (&json!("scheduled"), &json!("2099-01-01T00:00:00.000Z")));
}

#[tokio::test]
async fn fail_makes_a_task_dead_and_the_dead_routes_list_retry_and_delete_it() {
    let s = TestServer::manual().await;
    s.create("dead.q", "k", json!({"payload": {"order": 1}})).await;
    let lease = s.lease_one("dead.q").await;
    assert_eq!(s.ack(&lease, json!({"outcome": "fail", "error": "order not found"})).await.0, StatusCode::NO_CONTENT);
    let (_, task) = s.get("/v1/queues/dead.q/tasks/k").await;
    assert_eq!((&task["state"], &task["last_error"]), (&json!("dead"), &json!("order not found")), "{task}");
    assert!(s.lease("dead.q", json!({"max": 10})).await.is_empty(), "a dead task is not leased");

    let dead = s.list_all("/v1/queues/dead.q/dead", 10).await;
    assert_eq!(keys(&dead), ["k"]);
    assert_task_shape(&dead[0]);
    assert_eq!((&dead[0]["payload"], &dead[0]["state"]), (&json!({"order": 1}), &json!("dead")));

    // The dead routes touch dead tasks only.
    s.create("dead.q", "live", json!({"delay": "1h"})).await;
    let (status, body) = s.post("/v1/queues/dead.q/dead/live/retry", json!({})).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "retry of a live task");
    let (status, body) = s.delete("/v1/queues/dead.q/dead/live").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "dead DELETE of a live task");
    assert_eq!(s.get("/v1/queues/dead.q/tasks/live").await.1["state"], "scheduled", "the live task is untouched");

    // API.md gives retry no body: none at all, not even a content type.
    let request = Request::builder().method(Method::POST).uri("/v1/queues/dead.q/dead/k/retry").body(Body::empty());
    let (status, task) = s.call(request.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "retry of a dead task: {task}");
    assert_task_shape(&task);
    assert_eq!((&task["state"], &task["attempts"], &task["due_at"]), (&json!("scheduled"), &json!(0), &json!(at(0))));
    let lease = s.lease_one("dead.q").await;
    assert_eq!(lease["attempt"], 1, "attempts reset: {lease}");
    assert_eq!(s.ack(&lease, json!({"outcome": "fail"})).await.0, StatusCode::NO_CONTENT);

    assert_eq!(s.delete("/v1/queues/dead.q/dead/k").await.0, StatusCode::NO_CONTENT, "DELETE of a dead task");
    assert_eq!(s.get("/v1/queues/dead.q/tasks/k").await.0, StatusCode::NOT_FOUND, "a deleted dead task is gone");
    assert!(s.list_all("/v1/queues/dead.q/dead", 10).await.is_empty());
    let (status, body) = s.post("/v1/queues/dead.q/dead/k/retry", json!({})).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "retry of an unknown dead task");
    let (status, body) = s.delete("/v1/queues/dead.q/dead/k").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "DELETE of an unknown dead task");

    // The dead list pages like every list.
    for i in 0..5 {
        s.create("dead.many", &format!("d{i}"), json!({})).await;
    }
    for lease in s.lease("dead.many", json!({"max": 5})).await {
        assert_eq!(s.ack(&lease, json!({"outcome": "fail"})).await.0, StatusCode::NO_CONTENT);
    }
    let mut got = keys(&s.list_all("/v1/queues/dead.many/dead", 2).await);
    got.sort();
    assert_eq!(got, ["d0", "d1", "d2", "d3", "d4"]);
}

#[tokio::test]
async fn exhausted_attempts_make_a_task_dead_with_the_last_error() {
    let s = TestServer::manual().await;
    s.create("q", "k", json!({"max_attempts": 2})).await;
    let lease = s.lease_one("q").await;
    assert_eq!(s.ack(&lease, json!({"outcome": "retry", "delay": 0, "error": "one"})).await.0, StatusCode::NO_CONTENT);
    let lease = s.lease_one("q").await;
    assert_eq!(lease["attempt"], 2);
    assert_eq!(s.ack(&lease, json!({"outcome": "retry", "delay": 0, "error": "two"})).await.0, StatusCode::NO_CONTENT);
    let (_, task) = s.get("/v1/queues/q/tasks/k").await;
    assert_eq!(task["state"], "dead", "two failed attempts of max_attempts 2: {task}");
    assert_eq!((&task["attempts"], &task["last_error"]), (&json!(2), &json!("two")), "{task}");
}

#[tokio::test]
async fn a_repeating_task_is_armed_again_after_done_and_ends_after_its_times() {
    let s = TestServer::manual().await;
    let task = s.create("rep.q", "k", json!({"repeat": {"every": "1s", "times": 2}})).await;
    let first_due = time(&task["due_at"]).as_millis();
    let first = s.lease_one("rep.q").await;
    assert_eq!(s.ack(&first, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT, "done, first occurrence");
    let (status, task) = s.get("/v1/queues/rep.q/tasks/k").await;
    assert_eq!((status, &task["state"]), (StatusCode::OK, &json!("scheduled")), "a repeating task stays: {task}");
    let next_due = time(&task["due_at"]).as_millis();
    assert!(
        next_due > first_due && (next_due - first_due) % 1_000 == 0,
        "fixed rate: the next due time is due_at + k·every ({first_due} then {next_due})"
    );
    s.clock.as_ref().unwrap().advance(Duration::from_millis((next_due - first_due) as u64));
    let second = s.lease_one("rep.q").await;
    assert_eq!(second["attempt"], 1, "a new occurrence starts at attempt 1");
    assert_ne!(second["delivery_id"], first["delivery_id"], "a new occurrence has a new delivery_id");
    assert_eq!(s.ack(&second, json!({"outcome": "done"})).await.0, StatusCode::NO_CONTENT, "done, second occurrence");
    assert_eq!(s.get("/v1/queues/rep.q/tasks/k").await.0, StatusCode::NOT_FOUND, "times 2: gone after two");
}

#[tokio::test]
async fn a_cron_repeat_falls_on_its_schedule_in_its_zone() {
    // START is Monday 2026-11-30, 12:00 UTC: 20:00 in Shanghai.
    let s = TestServer::manual().await;
    let task = s.create("cron.q", "k", json!({"repeat": {"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}})).await;
    assert_eq!(task["repeat"], json!({"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}), "{task}");
    // 09:00 in Shanghai (UTC+8, no daylight saving) is 01:00 UTC, on the next weekday.
    assert_eq!(task["due_at"], "2026-12-01T01:00:00.000Z", "{task}");
}

#[tokio::test]
async fn spring_and_quartz_cron_repeats_keep_and_show_their_syntax() {
    // START is Monday 2026-11-30, 12:00 UTC: 20:00 in Shanghai.
    let s = TestServer::manual().await;
    let spring = json!({"cron": "0 0 9 ? * MON-FRI", "tz": "Asia/Shanghai", "cron_syntax": "spring"});
    let task = s.create("cron.q", "spring", json!({"repeat": spring})).await;
    assert_eq!(task["repeat"], spring, "{task}");
    assert_eq!(task["due_at"], "2026-12-01T01:00:00.000Z", "{task}");
    // Quartz in a batch: its Sunday is 1, so `1` is Sunday 2026-12-06.
    let item = json!({"key": "quartz", "repeat": {"cron": "0 0 9 ? * 1", "cron_syntax": "quartz"}});
    let (status, answer) = s.post("/v1/queues/cron.q/tasks", json!({"tasks": [item]})).await;
    assert_eq!((status, &answer["results"][0]["outcome"]), (StatusCode::OK, &json!("created")), "{answer}");
    let (_, task) = s.get("/v1/queues/cron.q/tasks/quartz").await;
    assert_eq!(task["repeat"], json!({"cron": "0 0 9 ? * 1", "tz": "UTC", "cron_syntax": "quartz"}), "{task}");
    assert_eq!(task["due_at"], "2026-12-06T09:00:00.000Z", "{task}");
    // Vixie, named or null, shows as a repeat did before the field: without it.
    for (key, syntax) in [("vixie", json!("vixie")), ("null", Value::Null)] {
        let task = s.create("cron.q", key, json!({"repeat": {"cron": "0 9 * * 1", "cron_syntax": syntax}})).await;
        assert_eq!(task["repeat"], json!({"cron": "0 9 * * 1", "tz": "UTC"}), "{task}");
    }
}

#[tokio::test]
async fn a_repeating_occurrence_retries_with_its_delivery_id_and_fails_to_dead() {
    let s = TestServer::manual().await;
    s.create("rep.q", "k", json!({"repeat": {"every": "1h"}})).await;
    let first = s.lease_one("rep.q").await;
    assert_eq!(s.ack(&first, json!({"outcome": "retry", "delay": 0})).await.0, StatusCode::NO_CONTENT);
    let again = s.lease_one("rep.q").await;
    assert_eq!(again["attempt"], 2, "the same occurrence, tried again: {again}");
    assert_eq!(again["delivery_id"], first["delivery_id"], "every try of one occurrence has its delivery_id");
    assert_eq!(s.ack(&again, json!({"outcome": "fail", "error": "gone"})).await.0, StatusCode::NO_CONTENT);
    let (_, task) = s.get("/v1/queues/rep.q/tasks/k").await;
    assert_eq!(task["state"], "dead", "fail is dead now, even for a repeating task: {task}");
}

#[tokio::test]
async fn queues_count_each_state_and_one_queue_answers_as_its_list_entry() {
    let s = TestServer::manual().await;
    let soon = s.create("stat.q", "soon", json!({"delay": "1h"})).await;
    s.create("stat.q", "later", json!({"delay": "2h"})).await;
    s.create("stat.q", "leased", json!({})).await;
    s.lease_one("stat.q").await;
    s.create("stat.q", "dead", json!({})).await;
    let dead = s.lease_one("stat.q").await;
    assert_eq!(s.ack(&dead, json!({"outcome": "fail"})).await.0, StatusCode::NO_CONTENT);
    s.create("stat.other", "x", json!({"delay": "1h"})).await;

    let (_, list) = s.get("/v1/queues").await;
    let entry = |name: &str| list["queues"].as_array().unwrap().iter().find(|q| q["name"] == name).cloned().unwrap();
    let stat = entry("stat.q");
    assert_eq!((&stat["scheduled"], &stat["leased"], &stat["dead"]), (&json!(2), &json!(1), &json!(1)), "{stat}");
    assert_eq!(stat["next_due_at"], soon["due_at"], "next_due_at is the earliest scheduled due_at: {stat}");
    assert_eq!(entry("stat.other")["scheduled"], 1);

    let (status, one) = s.get("/v1/queues/stat.q").await;
    assert_eq!(status, StatusCode::OK);
    for field in ["name", "scheduled", "leased", "dead", "next_due_at"] {
        assert_eq!(one[field], stat[field], "GET /v1/queues/{{queue}} has the list's `{field}`: {one}");
    }
    assert_eq!(one["lag_ms"], json!({"p50": 0, "p99": 0}), "two leases, each at its due time: {one}");

    // An overdue task nobody leases shows in oldest_overdue_ms (a due_at in the past
    // is now: it is overdue from now on).
    s.create("stat.q", "overdue", json!({"due_at": START.as_millis() - 5_000})).await;
    s.clock.as_ref().unwrap().advance(Duration::from_secs(5));
    assert_eq!(s.get("/v1/queues/stat.q").await.1["oldest_overdue_ms"], 5_000);
}
