//! Long-poll leases: `POST /v1/queues/{queue}/lease` with `wait`.
//!
//! Guards against a long poll that is really a polling loop (the task arrives a poll
//! interval late), that answers before the task is due, that never answers with the
//! empty list once `wait` has passed, that gives one task to two concurrent waiters, or
//! that hands a task to a waiter whose client has gone away and leaves it stuck there.
//!
//! The measured fire lag is printed (`cargo test -- --nocapture`); the bound asserted
//! here is loose on purpose, the benchmark measures it precisely.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::{Api, now_ms, parse_time, start_server};
use serde_json::{Value, json};

/// The lag bound asserted: generous for a loaded CI machine, far below any poll loop
/// of a second.
const MAX_LAG_MS: i64 = 500;

/// The default lease, which the lease time is computed back from.
const DEFAULT_LEASE_MS: i64 = 30_000;

fn lease_thread(api: &Api, queue: &str, body: Value, start: Arc<Barrier>) -> thread::JoinHandle<Vec<Value>> {
    let (api, queue) = (api.clone(), queue.to_owned());
    thread::spawn(move || {
        start.wait();
        api.lease(&queue, body)
    })
}

#[test]
fn a_waiting_lease_answers_soon_after_the_task_falls_due() {
    let server = start_server();
    let api = Api::of(&server);
    let mut lags = Vec::new();
    for sample in 0..6 {
        let queue = format!("poll.{sample}");
        let key = format!("k{sample}");
        let due = now_ms() + 300;
        // Half the samples start waiting before the task exists, half after.
        let waiter_first = sample % 2 == 0;
        let start = Arc::new(Barrier::new(2));
        let waiter = waiter_first.then(|| lease_thread(&api, &queue, json!({"wait": "10s"}), Arc::clone(&start)));
        if waiter_first {
            start.wait();
        }
        api.create(&queue, &key, json!({"due_at": due}));
        let leases = match waiter {
            Some(waiter) => waiter.join().expect("the waiting thread"),
            None => api.lease(&queue, json!({"wait": "10s"})),
        };
        let arrived = now_ms();
        assert_eq!(leases.len(), 1, "the waiting lease answers with the task once due: {leases:?}");
        assert_eq!(leases[0]["task"]["key"], key.as_str());
        let leased_at = parse_time(&leases[0]["expires_at"]) - DEFAULT_LEASE_MS;
        assert!(leased_at >= due, "leased {} ms before the task was due", due - leased_at);
        lags.push(arrived - due);
    }
    lags.sort_unstable();
    eprintln!(
        "long-poll fire lag (due_at to response at the client), ms: {lags:?}; median {}, max {}",
        lags[lags.len() / 2],
        lags[lags.len() - 1]
    );
    assert!(lags.iter().all(|&lag| lag < MAX_LAG_MS), "fire lag over {MAX_LAG_MS} ms: {lags:?}");
}

#[test]
fn a_waiting_lease_answers_an_empty_list_once_wait_has_passed() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("idle.q", "later", json!({"delay": "1h"}));

    let started = now_ms();
    let leases = api.lease("idle.q", json!({"wait": "1s"}));
    let waited = now_ms() - started;
    assert!(leases.is_empty(), "nothing falls due within the wait: {leases:?}");
    assert!(waited >= 900, "the request was held for the wait of 1 s, not {waited} ms");
    assert!(waited < 5_000, "the request was answered after the wait of 1 s, not {waited} ms");

    let leases = api.lease("idle.q", json!({"wait": 0}));
    assert!(leases.is_empty(), "wait 0 answers at once, empty: {leases:?}");
}

#[test]
fn concurrent_waiters_each_get_a_different_task() {
    const WAITERS: usize = 8;
    let server = start_server();
    let api = Api::of(&server);
    let start = Arc::new(Barrier::new(WAITERS + 1));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| lease_thread(&api, "crowd.q", json!({"max": 1, "wait": "10s"}), Arc::clone(&start)))
        .collect();
    start.wait();
    let due = now_ms() + 300;
    let tasks: Vec<Value> = (0..WAITERS).map(|i| json!({"key": format!("t{i}"), "due_at": due})).collect();
    api.post("/v1/queues/crowd.q/tasks", json!({"tasks": tasks})).expect(200, "batch of the waiters' tasks");

    let mut keys = Vec::new();
    for waiter in waiters {
        let leases = waiter.join().expect("a waiting thread");
        assert_eq!(leases.len(), 1, "each of {WAITERS} waiters gets one of {WAITERS} tasks: {leases:?}");
        keys.push(leases[0]["task"]["key"].as_str().expect("key").to_owned());
    }
    let distinct: HashSet<&String> = keys.iter().collect();
    assert_eq!(distinct.len(), WAITERS, "no task went to two waiters: {keys:?}");
    let queue = api.get("/v1/queues/crowd.q").json;
    assert_eq!(queue["leased"], WAITERS, "{queue}");
    assert_eq!(queue["scheduled"], 0, "{queue}");
}

#[test]
fn waiters_leasing_many_at_once_never_share_a_task() {
    const WAITERS: usize = 6;
    const TASKS: usize = 40;
    let server = start_server();
    let api = Api::of(&server);
    let start = Arc::new(Barrier::new(WAITERS + 1));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| lease_thread(&api, "many.q", json!({"max": 5, "wait": "5s"}), Arc::clone(&start)))
        .collect();
    start.wait();
    let due = now_ms() + 200;
    let tasks: Vec<Value> = (0..TASKS).map(|i| json!({"key": format!("t{i:02}"), "due_at": due})).collect();
    api.post("/v1/queues/many.q/tasks", json!({"tasks": tasks})).expect(200, "batch");

    let mut leased: Vec<String> = Vec::new();
    for waiter in waiters {
        let leases = waiter.join().expect("a waiting thread");
        assert!(!leases.is_empty() && leases.len() <= 5, "each waiter gets 1..=max tasks: {}", leases.len());
        leased.extend(leases.iter().map(|l| l["task"]["key"].as_str().expect("key").to_owned()));
    }
    let rest = api.lease("many.q", json!({"max": 1000}));
    leased.extend(rest.iter().map(|l| l["task"]["key"].as_str().expect("key").to_owned()));
    let distinct: HashSet<&String> = leased.iter().collect();
    assert_eq!(distinct.len(), leased.len(), "a task was handed out twice: {leased:?}");
    assert_eq!(leased.len(), TASKS, "every task leased once");
}

#[test]
fn a_task_is_not_left_with_a_waiter_whose_client_went_away() {
    let server = start_server();
    let impatient = Api::with_timeout(server.url(), Duration::from_millis(300));
    let gone = impatient.try_call(reqwest::Method::POST, "/v1/queues/gone.q/lease", Some(&json!({"wait": "10s"})));
    assert!(gone.is_err(), "the client gives up before the wait: {gone:?}");

    let api = Api::of(&server);
    api.create("gone.q", "k", json!({}));
    let leases = api.lease("gone.q", json!({"wait": "3s"}));
    assert_eq!(leases.len(), 1, "the task goes to a live waiter, not to the one that went away: {leases:?}");
    assert_eq!(leases[0]["task"]["key"], "k");
}

#[test]
fn a_waiting_lease_does_not_wait_to_fill_max() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("fill.q", "due", json!({}));
    api.create("fill.q", "due-too", json!({}));
    let started = now_ms();
    let leases = api.lease("fill.q", json!({"max": 10, "wait": "10s"}));
    assert_eq!(leases.len(), 2, "both due tasks: {leases:?}");
    assert!(now_ms() - started < 2_000, "due tasks are returned at once, not after the wait");

    api.create("fill.q", "soon", json!({"delay": "300ms"}));
    api.create("fill.q", "much-later", json!({"delay": "1h"}));
    let started = now_ms();
    let leases = api.lease("fill.q", json!({"max": 10, "wait": "10s"}));
    assert_eq!(leases.len(), 1, "the task that fell due: {leases:?}");
    assert_eq!(leases[0]["task"]["key"], "soon");
    assert!(now_ms() - started < 2_000, "answered the moment one fell due, not after the wait");
}

#[test]
fn a_waiter_is_woken_by_a_task_moved_earlier_and_not_by_a_cancelled_one() {
    let server = start_server();
    let api = Api::of(&server);

    // Moved earlier: the waiter gets it at its new due time, not an hour later.
    api.create("move.q", "k", json!({"delay": "1h"}));
    let start = Arc::new(Barrier::new(2));
    let waiter = lease_thread(&api, "move.q", json!({"wait": "10s"}), Arc::clone(&start));
    start.wait();
    let due = now_ms() + 300;
    api.schedule("move.q", "k", json!({"due_at": due})).expect(200, "replace with an earlier due time");
    let leases = waiter.join().expect("the waiting thread");
    let lag = now_ms() - due;
    assert_eq!(leases.len(), 1, "the waiter gets the task moved earlier: {leases:?}");
    assert!(lag < MAX_LAG_MS, "the task moved earlier arrived {lag} ms after its new due time");

    // Cancelled before due: the waiter gets nothing.
    api.create("cancel.q", "k", json!({"delay": "1s"}));
    let start = Arc::new(Barrier::new(2));
    let waiter = lease_thread(&api, "cancel.q", json!({"wait": "3s"}), Arc::clone(&start));
    start.wait();
    api.delete(&common::task_path("cancel.q", "k")).expect(204, "cancel before due");
    let leases = waiter.join().expect("the waiting thread");
    assert!(leases.is_empty(), "a task cancelled before it was due is never leased: {leases:?}");
}
