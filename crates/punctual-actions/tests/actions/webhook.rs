//! Webhook deliveries end to end: a real engine on the embedded store, the core worker
//! running the webhook action, and a real HTTP receiver on loopback that checks the
//! body, headers and signature and answers each row of API.md's outcome table in turn.
//! Guards against: a delivery the receiver cannot verify, an answer mapped to the wrong
//! outcome (a 503 dropped; a 401 from a misconfigured receiver or a 404 during a deploy
//! sending every task to dead — issue I.8), a queue's `final_statuses` ignored,
//! `Retry-After` ignored.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Harness, Receiver, Reply, START_MS};
use punctual_actions::{Action, ActionKind, ActionSpec, FinalStatuses, Secret, WebhookConfig, signature};
use punctual_core::{Task, TaskSpec, TaskState, Timestamp, Worker};
use serde_json::json;

const QUEUE: &str = "order.cancel";
const SECRET: &str = "whsec-test-secret";

fn webhook(h: &Harness, url: String, timeout: Duration) -> Action {
    let spec =
        ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(url).secret(Secret::new(SECRET)))).timeout(timeout);
    Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap()
}

/// Checks everything API.md promises about one delivery.
fn check_delivery(seen: &common::Seen, key: &str, attempt: u32, now: Timestamp) -> String {
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/hooks/order-cancel");
    assert_eq!(seen.header("content-type"), "application/json");
    let body = seen.json();
    assert_eq!(body["queue"], QUEUE);
    assert_eq!(body["key"], key);
    assert_eq!(body["payload"], json!({"order_id": 1234}));
    assert_eq!(body["attempt"], attempt);
    assert_eq!(body["fired_at"], now.to_string());
    assert_eq!(body["tags"], json!(["pi-9"]));
    assert_eq!(body["priority"], 0, "API.md Wave 3: webhook bodies carry the task's priority");
    assert!(body["due_at"].as_str().unwrap().ends_with('Z'));
    // API.md Wave 3: the occurrence it stands for, its first due time (no jitter here),
    // which a retry's or a handler's reschedule's due time comes after.
    let (scheduled_for, due_at) = (body["scheduled_for"].as_str().unwrap(), body["due_at"].as_str().unwrap());
    assert!(scheduled_for <= due_at, "try {attempt}: scheduled for {scheduled_for}, due {due_at}");
    assert_eq!(body["missed"], 0, "API.md Wave 3: a one-off stands in for no other occurrence");
    let delivery_id = body["delivery_id"].as_str().unwrap().to_owned();
    assert_eq!(seen.header("punctual-delivery"), delivery_id);
    // The receiver's side of the signature: recompute over the raw body.
    let header = seen.header("punctual-signature");
    let t: i64 = header.split(',').next().unwrap().strip_prefix("t=").unwrap().parse().unwrap();
    assert_eq!(t, now.as_millis() / 1000);
    assert_eq!(header, signature(SECRET.as_bytes(), t, &seen.body));
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 11, "{keys:?}");
    delivery_id
}

#[tokio::test]
async fn each_answer_of_the_outcome_table_does_what_api_md_says() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    let action = webhook(&h, receiver.url("/hooks/order-cancel"), Duration::from_secs(5));
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, action).start().unwrap();
    let spec = || TaskSpec::now().payload(json!({"order_id": 1234})).tag("pi-9");

    // 2xx with an empty body: done, the task is deleted.
    h.engine.schedule(QUEUE, "done-empty", spec()).await.unwrap();
    receiver.answer(Reply::status(200));
    check_delivery(&receiver.next().await, "done-empty", 1, h.now());
    assert_eq!(h.completed(QUEUE, "done-empty").await, None);

    // 2xx {"outcome":"done"}: done.
    h.engine.schedule(QUEUE, "done-json", spec()).await.unwrap();
    receiver.answer(Reply::status(200).body(r#"{"outcome":"done"}"#));
    check_delivery(&receiver.next().await, "done-json", 1, h.now());
    assert_eq!(h.completed(QUEUE, "done-json").await, None);

    // 2xx reschedule: fires again 24 h later as a new occurrence (new delivery id).
    h.engine.schedule(QUEUE, "remind", spec()).await.unwrap();
    receiver.answer(Reply::status(200).body(r#"{"outcome":"reschedule","delay":"24h"}"#));
    let first_id = check_delivery(&receiver.next().await, "remind", 1, h.now());
    let task = h.completed(QUEUE, "remind").await.unwrap();
    assert_eq!(task.state, TaskState::Scheduled);
    assert_eq!(task.due_at, h.now().saturating_add(Duration::from_secs(86_400)));
    assert_eq!(task.attempts, 0);
    h.clock.advance(Duration::from_secs(86_400));
    receiver.answer(Reply::status(410).body("the workflow moved on"));
    let second_id = check_delivery(&receiver.next().await, "remind", 1, h.now());
    assert_ne!(first_id, second_id);
    // 410 Gone: done.
    assert_eq!(h.completed(QUEUE, "remind").await, None);

    // 503 with Retry-After in seconds: retried exactly then, same delivery id.
    h.engine.schedule(QUEUE, "flaky", spec()).await.unwrap();
    receiver.answer(Reply::status(503).header("Retry-After", "120").body("maintenance"));
    let id = check_delivery(&receiver.next().await, "flaky", 1, h.now());
    let task = h.completed(QUEUE, "flaky").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert_eq!(task.due_at, h.now().saturating_add(Duration::from_secs(120)));
    let error = task.last_error.unwrap();
    assert!(error.contains("503") && error.contains("maintenance"), "{error}");

    // 429 with Retry-After as an HTTP date.
    h.clock.advance(Duration::from_secs(120));
    let later = h.now().saturating_add(Duration::from_secs(300));
    let date = httpdate(later);
    receiver.answer(Reply::status(429).header("Retry-After", &date));
    assert_eq!(check_delivery(&receiver.next().await, "flaky", 2, h.now()), id);
    let task = h.completed(QUEUE, "flaky").await.unwrap();
    assert_eq!((task.attempts, task.due_at), (2, later));

    // 500 without Retry-After: the task's backoff (1 s doubling, with jitter).
    h.clock.advance(Duration::from_secs(300));
    receiver.answer(Reply::status(500));
    check_delivery(&receiver.next().await, "flaky", 3, h.now());
    let task = h.completed(QUEUE, "flaky").await.unwrap();
    assert_eq!(task.attempts, 3);
    let wait = task.due_at.saturating_since(h.now());
    assert!(wait > Duration::ZERO && wait <= Duration::from_secs(4), "backoff of the third failure: {wait:?}");

    // 408: retried too; then 2xx: done.
    h.clock.advance(wait);
    receiver.answer(Reply::status(408));
    check_delivery(&receiver.next().await, "flaky", 4, h.now());
    let task = h.completed(QUEUE, "flaky").await.unwrap();
    assert_eq!(task.attempts, 4);
    h.clock.advance(task.due_at.saturating_since(h.now()));
    receiver.answer(Reply::status(204));
    check_delivery(&receiver.next().await, "flaky", 5, h.now());
    assert_eq!(h.completed(QUEUE, "flaky").await, None);

    // A final status (422, one of the default set): dead now, with a clear last_error.
    h.engine.schedule(QUEUE, "unknown-order", spec()).await.unwrap();
    receiver.answer(Reply::status(422).body("no such order"));
    check_delivery(&receiver.next().await, "unknown-order", 1, h.now());
    let task = h.completed(QUEUE, "unknown-order").await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    assert_eq!(
        task.last_error.as_deref(),
        Some(
            format!("webhook {} answered 422 Unprocessable Entity: no such order", receiver.url("/hooks/order-cancel"))
                .as_str()
        )
    );

    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

/// Answers `status` to the next delivery, checks it is try `attempt` of `key`, and
/// returns the task as the answer left it (`None`: done), moving the clock to when it
/// is due again.
async fn answered(
    h: &mut Harness,
    receiver: &mut Receiver,
    (queue, key): (&str, &str),
    attempt: u32,
    status: u16,
) -> Option<Task> {
    receiver.answer(Reply::status(status).body("answer"));
    let body = receiver.next().await.json();
    assert_eq!((body["queue"].as_str(), body["key"].as_str()), (Some(queue), Some(key)));
    assert_eq!(body["attempt"], attempt, "{body}");
    let task = h.completed(queue, key).await;
    if let Some(task) = &task {
        h.clock.set(task.due_at.max(h.now()));
    }
    task
}

#[tokio::test]
async fn only_the_queues_final_statuses_send_a_task_to_dead() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    let runtime = common::loopback_runtime(Arc::new(h.clock.clone()));
    let build = |final_statuses: Option<FinalStatuses>| {
        let mut spec = ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(receiver.url("/hook"))));
        if let Some(statuses) = final_statuses {
            spec = spec.final_statuses(statuses);
        }
        Action::build(&spec, &runtime).unwrap()
    };
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, build(None))
        .handle("custom", build(Some(FinalStatuses::new([404]).unwrap())))
        .start()
        .unwrap();

    // Default: a receiver that is misconfigured for a while (401) is retried, then done.
    let unauthorized = (QUEUE, "unauthorized");
    h.engine.schedule(QUEUE, "unauthorized", TaskSpec::now()).await.unwrap();
    let task = answered(&mut h, &mut receiver, unauthorized, 1, 401).await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.as_deref().unwrap().contains("answered 401 Unauthorized"), "{:?}", task.last_error);
    assert_eq!(answered(&mut h, &mut receiver, unauthorized, 2, 200).await, None);

    // Default: a receiver being deployed (404) is retried; 422 is final.
    let deploying = (QUEUE, "deploying");
    h.engine.schedule(QUEUE, "deploying", TaskSpec::now()).await.unwrap();
    let task = answered(&mut h, &mut receiver, deploying, 1, 404).await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    let task = answered(&mut h, &mut receiver, deploying, 2, 422).await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 2));

    // final_statuses = [404]: a 404 is final, a 422 is retried.
    let custom = ("custom", "unprocessable");
    h.engine.schedule("custom", "unprocessable", TaskSpec::now()).await.unwrap();
    let task = answered(&mut h, &mut receiver, custom, 1, 422).await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    let task = answered(&mut h, &mut receiver, custom, 2, 404).await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    assert!(task.last_error.as_deref().unwrap().contains("answered 404 Not Found"), "{:?}", task.last_error);

    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn timeouts_and_connection_errors_retry() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    receiver.always(Reply::hang());
    let hanging = webhook(&h, receiver.url("/hooks/order-cancel"), Duration::from_millis(300));
    // A port that was just free: nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let refused = webhook(&h, format!("http://{closed}/hook"), Duration::from_secs(5));
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, hanging).handle("refused", refused).start().unwrap();

    h.engine.schedule(QUEUE, "slow", TaskSpec::now().payload(json!({"order_id": 1234})).tag("pi-9")).await.unwrap();
    check_delivery(&receiver.next().await, "slow", 1, h.now());
    let task = h.completed(QUEUE, "slow").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.as_deref().unwrap().contains("did not answer within 300ms"), "{:?}", task.last_error);

    h.engine.schedule("refused", "k", TaskSpec::now()).await.unwrap();
    let task = h.completed("refused", "k").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.as_deref().unwrap().starts_with("cannot connect to webhook"), "{:?}", task.last_error);

    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_slow_receiver_on_one_queue_does_not_delay_another() {
    // Real time here: the lag is what is measured.
    let dir = tempfile::tempdir().unwrap();
    let store = punctual_sqlite::SqliteStore::open(dir.path()).unwrap();
    let engine = punctual_core::Engine::start(store, punctual_core::EngineConfig::default());
    let runtime = common::loopback_runtime(Arc::new(punctual_core::SystemClock));
    let mut slow = Receiver::start().await;
    slow.always(Reply::hang());
    let mut fast = Receiver::start().await;
    fast.always(Reply::status(200));
    let slow_action = Action::build(
        &ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(slow.url("/slow"))))
            .timeout(Duration::from_secs(30))
            .concurrency(2),
        &runtime,
    )
    .unwrap();
    let fast_action =
        Action::build(&ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(fast.url("/fast")))), &runtime).unwrap();
    // One worker per queue, as the server runs them.
    let slow_worker = Worker::new(engine.clone())
        .handle("slow", slow_action)
        .concurrency("slow", 2)
        .grace(Duration::from_millis(100))
        .start()
        .unwrap();
    let fast_worker = Worker::new(engine.clone()).handle("fast", fast_action).start().unwrap();

    for i in 0..20 {
        engine.schedule("slow", &format!("s{i}"), TaskSpec::now()).await.unwrap();
    }
    slow.next().await;
    slow.next().await;
    // Both slow slots are stuck; the fast queue must fire on time regardless.
    let mut lags = Vec::new();
    for i in 0..5 {
        engine.schedule("fast", &format!("f{i}"), TaskSpec::after(Duration::from_millis(50))).await.unwrap();
        let body = fast.next().await.json();
        let due = Timestamp::parse(body["due_at"].as_str().unwrap()).unwrap();
        let fired = Timestamp::parse(body["fired_at"].as_str().unwrap()).unwrap();
        lags.push(fired.saturating_since(due));
    }
    let worst = lags.iter().max().unwrap();
    assert!(*worst < Duration::from_millis(500), "fire lag of the fast queue: {lags:?}");
    assert_eq!(engine.stats(Some("slow")).await.unwrap()[0].leased, 2, "the slow queue holds only its own slots");

    fast_worker.shutdown().await;
    slow_worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// `at` as an HTTP date (IMF-fixdate).
fn httpdate(at: Timestamp) -> String {
    at.to_jiff().strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[test]
fn the_test_clock_starts_where_documented() {
    assert_eq!(Timestamp::from_millis(START_MS).to_string(), "2026-11-30T12:00:00.000Z");
}

/// A secret being rotated: with `previous_secret` beside `secret`, every delivery
/// carries one `v1` per secret, the current one first, so a receiver checking with
/// either accepts it; a previous secret without a current one is refused. Guards
/// against a rotation that breaks the receivers not yet given the new secret.
#[tokio::test]
async fn a_previous_secret_signs_beside_the_current_one() {
    let h = Harness::start();
    let mut receiver = Receiver::start().await;
    let config = WebhookConfig::new(receiver.url("/hooks/order-cancel"))
        .secret(Secret::new("whsec-new"))
        .previous_secret(Secret::new("whsec-old"));
    let runtime = common::loopback_runtime(Arc::new(h.clock.clone()));
    let action = Action::build(&ActionSpec::new(ActionKind::Webhook(config)), &runtime).unwrap();
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, action).start().unwrap();
    h.engine.schedule(QUEUE, "rotating", TaskSpec::now().payload(json!({"order_id": 1}))).await.unwrap();
    receiver.answer(Reply::status(200));
    let seen = receiver.next().await;
    let t = h.now().as_millis() / 1000;
    let (new, old) = (signature(b"whsec-new", t, &seen.body), signature(b"whsec-old", t, &seen.body));
    let old_v1 = old.split_once(',').unwrap().1;
    assert_eq!(seen.header("punctual-signature"), format!("{new},{old_v1}"));

    let lone = WebhookConfig::new(receiver.url("/hooks/x")).previous_secret(Secret::new("whsec-old"));
    let refused = Action::build(&ActionSpec::new(ActionKind::Webhook(lone)), &runtime).unwrap_err();
    assert_eq!(refused.field(), "previous_secret", "{refused}");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}
