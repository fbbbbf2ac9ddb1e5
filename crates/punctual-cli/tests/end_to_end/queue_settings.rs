//! Queues managed at run time (API.md, "Queue settings"), through the real binary on
//! both stores: settings created, replaced, merged, changed only at the version given
//! by `If-Match`, refused field by field (a missing key named as the field at fault)
//! and for secret values, and removed; a queue
//! of the config file refusing changes with `409` naming the file yet pausing; a pause
//! that lasts across a restart, a long poll on a paused queue that answers nothing and
//! takes the task the moment the queue resumes; a purge by state after which the
//! acks of purged leases are `409`. And a webhook action added through one server of
//! two sharing a Redis, which then delivers from both with no restart, paused from one
//! and stopped on the other within a second; its concurrency lowered through one and
//! held by both; and 2,000 tasks due while it was paused fired at resume in due order,
//! each once.
//!
//! Real processes: `punctual serve` (embedded, and on a private `redis-server`), a
//! webhook receiver on loopback.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use common::receiver::answering_200;
use common::{Api, server_builder, start};
use punctual_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{Value, json};

const SETTINGS: &str = "/v1/queues/order.cancel/settings";

/// A settings call with `If-Match: <version>`.
fn if_match(server: &ServerProcess, method: Method, version: u64, body: Option<&Value>) -> common::Resp {
    let mut request = reqwest::blocking::Client::new()
        .request(method, format!("{}{SETTINGS}", server.url()))
        .header("if-match", version.to_string());
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    common::Resp { status, content_type: "application/json".into(), text, json }
}

/// Create, replace, merge, conditional changes, validation and removal.
fn settings_round_trip(server: &ServerProcess) {
    let api = Api::of(server);
    api.get(SETTINGS).expect_error(404, "not_found", None, "no settings yet");

    let body = json!({"defaults": {"max_attempts": 5}, "concurrency": 4});
    let created = api.put(SETTINGS, body.clone());
    let settings = created.expect(201, "create");
    assert_eq!((settings["source"].as_str(), settings["version"].as_u64()), (Some("api"), Some(1)));
    assert_eq!(settings["defaults"]["max_attempts"], 5);
    assert_eq!(settings["defaults"]["backoff"]["initial"], "1s", "effective defaults are shown");
    let queues = api.get("/v1/queues").expect(200, "list").clone();
    let listed = queues["queues"].as_array().unwrap().iter().any(|q| q["name"] == "order.cancel");
    assert!(listed, "a queue with settings is listed before its first task: {queues}");
    let task = api.create("order.cancel", "o-1", json!({}));
    assert_eq!(task["max_attempts"], 5, "a new task takes the queue's default");

    let replaced = api.put(SETTINGS, json!({"defaults": {"max_attempts": 7}}));
    assert_eq!(replaced.expect(200, "replace")["version"], 2);
    let patched = api.call(Method::PATCH, SETTINGS, Some(&json!({"rate": "10/1s"})));
    let patched = patched.expect(200, "merge");
    assert_eq!((patched["defaults"]["max_attempts"].as_u64(), patched["rate"].as_str()), (Some(7), Some("10/1s")));
    assert_eq!(patched["version"], 3);

    if_match(server, Method::PUT, 2, Some(&body)).expect_error(409, "conflict", None, "a stale If-Match");
    assert_eq!(api.get(SETTINGS).expect(200, "read")["version"], 3, "a refused change changed nothing");
    let current = if_match(server, Method::PATCH, 3, Some(&json!({"concurrency": 2})));
    assert_eq!(current.expect(200, "a current If-Match")["concurrency"], 2);

    api.put(SETTINGS, json!({"defaults": {"max_attempts": 0}})).expect_error(
        400,
        "invalid_argument",
        Some("defaults.max_attempts"),
        "a default out of range",
    );
    let secret = json!({"action": {"kind": "webhook", "url": "http://127.0.0.1:9/h", "secret": "whsec-1"}});
    api.put(SETTINGS, secret).expect_error(400, "invalid_argument", Some("action.secret"), "a secret value");
    api.put(SETTINGS, json!({"colour": "red"})).expect_error(400, "invalid_argument", Some("colour"), "unknown");
    let no_url = json!({"action": {"kind": "webhook"}});
    api.put(SETTINGS, no_url).expect_error(400, "invalid_argument", Some("action.url"), "a webhook without its url");
    assert_eq!(api.get(SETTINGS).expect(200, "read")["version"], 4, "refused bodies changed nothing");

    api.delete(SETTINGS).expect(204, "remove");
    api.get(SETTINGS).expect_error(404, "not_found", None, "removed");
    api.delete(SETTINGS).expect_error(404, "not_found", None, "nothing to remove");
    let task = api.create("order.cancel", "o-2", json!({}));
    assert_eq!(task["max_attempts"], 20, "built-in defaults again");
}

/// Pause lasts across a restart; a long poll waits on a paused queue and is answered
/// at resume.
fn pause_and_resume(server: &mut ServerProcess) {
    let api = Api::of(server);
    api.create("flow.remind", "due", json!({}));
    let paused = api.post("/v1/queues/flow.remind/pause", json!({})).expect(200, "pause").clone();
    assert_eq!(paused["paused"], true);
    server.restart().unwrap();
    let api = Api::of(server);
    let queues = api.get("/v1/queues").expect(200, "list").clone();
    let listed = queues["queues"].as_array().unwrap().iter().find(|q| q["name"] == "flow.remind").unwrap().clone();
    assert_eq!(listed["paused"], true, "paused after the restart: {listed}");
    assert!(api.lease("flow.remind", json!({"max": 10, "wait": "1s"})).is_empty(), "leased while paused");

    let waiting = {
        let api = Api::of(server);
        std::thread::spawn(move || {
            let leases = api.lease("flow.remind", json!({"max": 10, "wait": "20s"}));
            (leases, Instant::now())
        })
    };
    api.get_until("/metrics", "a long poll waiting on flow.remind", |m| {
        m.text.contains("punctual_consumers_waiting{queue=\"flow.remind\"} 1")
    });
    let resumed_at = Instant::now();
    assert_eq!(api.post("/v1/queues/flow.remind/resume", json!({})).expect(200, "resume")["paused"], false);
    let (leases, at) = waiting.join().unwrap();
    assert_eq!(leases.len(), 1, "the waiting poll took the task");
    let after = at.duration_since(resumed_at);
    assert!(after < Duration::from_secs(1), "the poll answered {after:?} after the resume");
}

/// A purge by state; the acks of purged leases are refused.
fn purge(server: &ServerProcess) {
    let api = Api::of(server);
    for n in 0..5 {
        api.create("purged", &format!("p{n}"), json!({}));
    }
    let leased = api.lease("purged", json!({"max": 2}));
    assert_eq!(leased.len(), 2);
    let scheduled = api.delete("/v1/queues/purged/tasks?state=scheduled");
    assert_eq!(scheduled.expect(200, "purge scheduled")["cancelled"], 3);
    let all = api.delete("/v1/queues/purged/tasks");
    assert_eq!(all.expect(200, "purge the rest")["cancelled"], 2);
    for lease in &leased {
        let lease_id = lease["lease_id"].as_str().unwrap();
        api.ack(lease_id, json!({"outcome": "done"})).expect_error(409, "conflict", None, "ack of a purged lease");
    }
    api.delete("/v1/queues/purged/tasks?state=leased").expect_error(400, "invalid_argument", Some("state"), "state");
}

#[test]
fn queue_settings_pause_and_purge_on_the_embedded_store() {
    let mut server = start(server_builder());
    settings_round_trip(&server);
    pause_and_resume(&mut server);
    purge(&server);
}

#[test]
fn queue_settings_pause_and_purge_on_redis() {
    let redis = punctual_testkit::redis::server();
    let mut server = start(server_builder().store(redis.url()));
    settings_round_trip(&server);
    pause_and_resume(&mut server);
    purge(&server);
}

#[test]
fn a_config_file_queue_refuses_changes_and_still_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, "[queues.\"order.cancel\"]\nmax_attempts = 3\n").unwrap();
    let server = start(server_builder().arg("--config").arg(&config));
    let api = Api::of(&server);
    let shown = api.get(SETTINGS).expect(200, "a config queue's settings").clone();
    assert_eq!((shown["source"].as_str(), shown["defaults"]["max_attempts"].as_u64()), (Some("config"), Some(3)));
    for (method, body) in [(Method::PUT, Some(json!({}))), (Method::PATCH, Some(json!({}))), (Method::DELETE, None)] {
        let answer = api.call(method.clone(), SETTINGS, body.as_ref());
        answer.expect_error(409, "conflict", None, "a change of a config queue");
        let message = answer.json["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("punctual.toml"), "{method}: the message names the file: {message}");
    }
    let paused = api.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "pause a config queue").clone();
    assert_eq!((paused["paused"].as_bool(), paused["source"].as_str()), (Some(true), Some("config")));
}

/// Two servers on one private Redis, allowed to deliver to loopback; dropped in reverse
/// order (servers, then the config's directory, then Redis).
struct TwoNodes {
    a: ServerProcess,
    b: ServerProcess,
    _config: tempfile::TempDir,
    _redis: punctual_testkit::redis::RedisServer,
}

impl TwoNodes {
    fn start() -> TwoNodes {
        let redis = punctual_testkit::redis::server();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("punctual.toml");
        std::fs::write(&config, "[egress]\nallow = [\"127.0.0.1\"]\n").unwrap();
        let node = || {
            let builder = server_builder().store(redis.url()).arg("--config").arg(&config);
            start(builder.args(["--grace-period", "1s"]))
        };
        let (a, b) = (node(), node());
        TwoNodes { a, b, _config: dir, _redis: redis }
    }

    /// Waits until both servers started the queue's push action with `tuning` (e.g.
    /// `concurrency=2 version=1`, as their logs say).
    fn took_up_on_both(&self, tuning: &str) {
        for (name, node) in [("A", &self.a), ("B", &self.b)] {
            let took_up = node.wait_for_log(
                &format!("push action ready (settings from the API) queue=order.cancel kind=\"webhook\" {tuning}"),
                Duration::from_secs(10),
            );
            took_up.unwrap_or_else(|logs| panic!("{name} did not start the action with {tuning}:\n{logs}"));
        }
    }
}

#[test]
fn a_webhook_added_through_one_server_delivers_from_both_and_pauses_on_both() {
    let (addr, deliveries) = answering_200();
    let url = format!("http://{addr}/hook");
    let nodes = TwoNodes::start();
    let (api_a, api_b) = (Api::of(&nodes.a), Api::of(&nodes.b));

    let action = json!({"action": {"kind": "webhook", "url": url, "timeout": "5s"}, "concurrency": 2});
    api_a.put(SETTINGS, action).expect(201, "add a webhook action through A");
    // B takes up the action within a second; a lease there is then refused for it.
    nodes.took_up_on_both("concurrency=2 version=1");
    let lease = api_b.call(Method::POST, "/v1/queues/order.cancel/lease", Some(&json!({})));
    lease.expect_error(409, "conflict", None, "a lease on B of a queue with an action");
    let tasks: Vec<Value> = (0..40).map(|n| json!({"key": format!("o-{n}")})).collect();
    api_b.post("/v1/queues/order.cancel/tasks", json!({ "tasks": tasks })).expect(200, "schedule through B");
    let mut keys = BTreeSet::new();
    while keys.len() < 40 {
        let delivery = deliveries.recv_timeout(Duration::from_secs(15));
        let key = delivery.unwrap_or_else(|_| panic!("{} of 40", keys.len()))["key"].as_str().unwrap().to_owned();
        assert!(keys.insert(key.clone()), "{key} was delivered twice");
    }

    api_a.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "pause through A");
    paused_on(&api_b, "order.cancel");
    api_b.create("order.cancel", "while-paused", json!({}));
    assert!(deliveries.recv_timeout(Duration::from_secs(2)).is_err(), "a paused queue was delivered");
    api_b.post("/v1/queues/order.cancel/resume", json!({})).expect(200, "resume through B");
    let delivery = deliveries.recv_timeout(Duration::from_secs(5)).expect("delivered after the resume");
    assert_eq!(delivery["key"], "while-paused");
}

/// Deliveries held by a receiver, and the most held at once since the last reset.
#[derive(Default)]
struct Held {
    counts: Mutex<(usize, usize)>,
    changed: Condvar,
}

impl Held {
    fn most(&self) -> usize {
        self.counts.lock().unwrap().1
    }

    fn reset_most(&self) {
        let mut counts = self.counts.lock().unwrap();
        counts.1 = counts.0;
    }
}

/// A receiver answering 200, a thread per connection, that holds each delivery until
/// three are held at once or `bound` passes, so that deliveries running together are
/// seen together; its counts, and each delivery's key.
fn holding_receiver(bound: Duration) -> (String, Arc<Held>, mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let held = Arc::new(Held::default());
    let (tx, rx) = mpsc::channel();
    let counts = Arc::clone(&held);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (held, tx) = (Arc::clone(&counts), tx.clone());
            std::thread::spawn(move || {
                let Some(request) = common::receiver::read_request(&stream) else { return };
                let mut counts = held.counts.lock().unwrap();
                counts.0 += 1;
                counts.1 = counts.1.max(counts.0);
                held.changed.notify_all();
                let (mut counts, _) = held.changed.wait_timeout_while(counts, bound, |c| c.0 < 3).unwrap();
                counts.0 -= 1;
                drop(counts);
                // Recorded before the answer: a node sends its next delivery only after
                // this one's answer, so each node's deliveries are recorded in its order.
                let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
                let _ = tx.send(body["key"].as_str().unwrap_or_default().to_owned());
                common::receiver::write_response(&mut stream, 200, "");
            });
        }
    });
    (url, held, rx)
}

/// Waits until `api`'s server shows `queue` paused (it applied the pause).
fn paused_on(api: &Api, queue: &str) {
    api.get_until("/v1/queues", &format!("{queue} paused"), |list| {
        list.json["queues"].as_array().is_some_and(|qs| qs.iter().any(|q| q["name"] == queue && q["paused"] == true))
    });
}

#[test]
fn concurrency_lowered_through_one_server_holds_on_both_and_a_resume_fires_in_due_order() {
    const TASKS: usize = 2_000;
    let (url, held, deliveries) = holding_receiver(Duration::from_millis(10));
    let nodes = TwoNodes::start();
    let (api_a, api_b) = (Api::of(&nodes.a), Api::of(&nodes.b));

    // Concurrency 8 on each node: more than two deliveries are held at once.
    let action = json!({"action": {"kind": "webhook", "url": url, "timeout": "5s"}, "concurrency": 8});
    api_a.put(SETTINGS, action).expect(201, "a webhook action");
    nodes.took_up_on_both("concurrency=8 version=1");
    let wide: Vec<Value> = (0..40).map(|n| json!({"key": format!("wide-{n}")})).collect();
    api_b.post("/v1/queues/order.cancel/tasks", json!({ "tasks": wide })).expect(200, "schedule");
    for _ in 0..40 {
        deliveries.recv_timeout(Duration::from_secs(15)).expect("a delivery at concurrency 8");
    }
    assert!(held.most() > 2, "concurrency 8 held only {} at once", held.most());

    // Lowered to 1 through A, and paused: B applies both within a second.
    api_a.call(Method::PATCH, SETTINGS, Some(&json!({"concurrency": 1}))).expect(200, "lower the concurrency");
    api_a.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "pause");
    nodes.took_up_on_both("concurrency=1 version=");
    paused_on(&api_b, "order.cancel");
    held.reset_most();
    // Due in the order of their numbers, one millisecond apart, all due by the resume.
    let start_ms = common::now_ms();
    let tasks: Vec<Value> =
        (0..TASKS).map(|n| json!({"key": format!("t{n:05}"), "due_at": start_ms + n as i64})).collect();
    for chunk in tasks.chunks(1_000) {
        api_b.post("/v1/queues/order.cancel/tasks", json!({ "tasks": chunk })).expect(200, "schedule while paused");
    }
    let all_due = Duration::from_millis(u64::try_from(start_ms + TASKS as i64 - common::now_ms()).unwrap_or(0));
    let early = deliveries.recv_timeout(all_due + Duration::from_millis(500));
    assert!(early.is_err(), "a paused queue was delivered: {early:?}");
    api_b.post("/v1/queues/order.cancel/resume", json!({})).expect(200, "resume");

    let mut seen = BTreeSet::new();
    let mut order = Vec::with_capacity(TASKS);
    while order.len() < TASKS {
        let key =
            deliveries.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{} of {TASKS}", order.len()));
        assert!(seen.insert(key.clone()), "{key} was delivered twice");
        order.push(key);
    }
    let most_at_once = held.most();
    assert!(most_at_once <= 2, "concurrency 1 on each of two nodes, yet {most_at_once} deliveries at once");
    // Two nodes lease one task each at a time, each in due order: the deliveries are two
    // due-ordered streams interleaved, so no three of them came in falling order (how far
    // one stream runs ahead while the other node waits is up to the machine's scheduler).
    let ranks: Vec<usize> = order.iter().map(|key| key[1..].parse().unwrap()).collect();
    let falling = longest_falling_run(&ranks);
    assert!(falling <= 2, "{falling} deliveries came in falling due order: more than two streams, or one out of order");
}

/// The length of the longest subsequence of `ranks` in strictly falling order (patience
/// sorting on the negated ranks).
fn longest_falling_run(ranks: &[usize]) -> usize {
    let mut tails: Vec<std::cmp::Reverse<usize>> = Vec::new();
    for &rank in ranks {
        let rank = std::cmp::Reverse(rank);
        match tails.binary_search(&rank) {
            Ok(_) => {}
            Err(at) if at == tails.len() => tails.push(rank),
            Err(at) => tails[at] = rank,
        }
    }
    tails.len()
}

#[test]
fn a_resume_through_one_server_fires_ten_thousand_due_tasks_from_both_in_due_order_each_once() {
    const TASKS: usize = 10_000;
    let (addr, deliveries) = answering_200();
    let nodes = TwoNodes::start();
    let (api_a, api_b) = (Api::of(&nodes.a), Api::of(&nodes.b));
    let action =
        json!({"action": {"kind": "webhook", "url": format!("http://{addr}/h"), "timeout": "5s"}, "concurrency": 4});
    api_a.put(SETTINGS, action).expect(201, "a webhook action");
    nodes.took_up_on_both("concurrency=4 version=1");
    api_a.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "pause");
    paused_on(&api_b, "order.cancel");

    // Due in the order of their numbers, ten to the millisecond, all due by the resume.
    let start_ms = common::now_ms();
    let tasks: Vec<Value> =
        (0..TASKS).map(|n| json!({"key": format!("t{n:05}"), "due_at": start_ms + (n / 10) as i64})).collect();
    for chunk in tasks.chunks(1_000) {
        api_b.post("/v1/queues/order.cancel/tasks", json!({ "tasks": chunk })).expect(200, "schedule while paused");
    }
    let last_due = start_ms + (TASKS / 10) as i64;
    let all_due = Duration::from_millis(u64::try_from(last_due - common::now_ms()).unwrap_or(0));
    let early = deliveries.recv_timeout(all_due + Duration::from_millis(500));
    assert!(early.is_err(), "a paused queue was delivered: {early:?}");
    api_a.post("/v1/queues/order.cancel/resume", json!({})).expect(200, "resume");

    let mut seen = BTreeSet::new();
    let mut order = Vec::with_capacity(TASKS);
    while order.len() < TASKS {
        let body =
            deliveries.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{} of {TASKS}", order.len()));
        let key = body["key"].as_str().unwrap_or_else(|| panic!("a delivery without a key: {body}")).to_owned();
        assert!(seen.insert(key.clone()), "{key} was delivered twice");
        order.push(key);
    }
    // Two nodes with four deliveries each in flight, leased in due order: a delivery is
    // at most a few batches of 8 from its rank (ties of one millisecond are in any
    // order). One node's batch can wait on a loaded machine while the other goes on
    // (26 places seen in CI), so the bound is 6 batches; a lease out of due order would
    // put deliveries thousands of places off.
    let rank = |key: &str| key[1..].parse::<usize>().unwrap() / 10 * 10;
    let displaced = order.iter().enumerate().map(|(at, key)| at.abs_diff(rank(key))).max().unwrap_or(0);
    assert!(displaced <= 48, "deliveries out of due order by {displaced} places");
}
