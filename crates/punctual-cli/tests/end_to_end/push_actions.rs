//! Push actions through the real binary: `punctual serve --config` with a webhook
//! action delivers due tasks to a receiver on loopback (signed, with the secret taken
//! from the environment) and applies its answers; `punctual check-config` accepts a
//! good file and names the line of each broken one.
//!
//! Guards against: an action table that is parsed but never run, a secret read from
//! the file instead of the environment, a checker that passes what serve refuses.

use crate::common;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

use common::receiver::{Receiver, read_request, write_response};
use common::{Api, BIN, server_builder, start};
use serde_json::{Value, json};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the config file");
    path
}

#[test]
fn a_webhook_action_delivers_signed_tasks_and_applies_the_answers() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            r#"[egress]
allow = ["127.0.0.1"]

[queues."order.cancel"]
max_attempts = 5

[queues."order.cancel".action]
kind = "webhook"
url = "http://{}/hooks/order-cancel"
secret_env = "PUNCTUAL_E2E_HOOK_SECRET"
timeout = "5s"
concurrency = 1
final_statuses = [404, 422]         # by default a 404 is retried
"#,
            receiver.addr
        ),
    );
    let mut server = start(
        server_builder()
            .arg("--config")
            .arg(&config)
            .args(["--grace-period", "1s"])
            .env("PUNCTUAL_E2E_HOOK_SECRET", "e2e-secret"),
    );
    let api = Api::new(server.url());
    // One delivery at a time (concurrency 1), earliest first: when the receiver sees a
    // delivery, the previous one's answer has been applied.
    api.create("order.cancel", "paid-late", json!({"payload": {"order_id": 1}, "tags": ["o-1"]}));
    api.create("order.cancel", "unknown", json!({"payload": {"order_id": 2}, "delay": "50ms"}));
    api.create("order.cancel", "last", json!({"payload": {"order_id": 3}, "delay": "100ms"}));

    let first = receiver.next();
    assert!(first.head.starts_with("POST /hooks/order-cancel HTTP/1.1"), "{}", first.head);
    let body: Value = serde_json::from_slice(&first.body).expect("a JSON body");
    assert_eq!((body["queue"].as_str(), body["key"].as_str()), (Some("order.cancel"), Some("paid-late")));
    assert_eq!(body["payload"], json!({"order_id": 1}));
    assert_eq!(body["tags"], json!(["o-1"]));
    assert_eq!(first.header("punctual-delivery").as_deref(), body["delivery_id"].as_str());
    let signature = first.header("punctual-signature").expect("signed: the secret came from the environment");
    let t: i64 =
        signature.split(',').next().and_then(|p| p.strip_prefix("t=")).and_then(|t| t.parse().ok()).expect("t=…");
    // The signer is checked against an independent value in punctual-actions' tests.
    assert_eq!(signature, punctual_actions::signature(b"e2e-secret", t, &first.body));
    receiver.answer(200, "");

    let second = receiver.next();
    api.task("order.cancel", "paid-late").expect(404, "answered 2xx: done and deleted");
    let body: Value = serde_json::from_slice(&second.body).expect("a JSON body");
    assert_eq!(body["key"], "unknown");
    receiver.answer(404, "no such order");

    let third = receiver.next();
    let task = api.task("order.cancel", "unknown").expect(200, "answered 404, final here: kept as dead").clone();
    assert_eq!(task["state"], "dead", "{task}");
    let error = task["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("404") && error.contains("no such order"), "{task}");
    let body: Value = serde_json::from_slice(&third.body).expect("a JSON body");
    assert_eq!(body["key"], "last");

    // SIGTERM while that delivery is in flight: after the grace period its lease is
    // released, the server exits 0, and after a restart the task is delivered again
    // with the same delivery id and attempt (the try did not count).
    let status = server.terminate().expect("the server stops on SIGTERM");
    assert!(status.success(), "{status}");
    receiver.answer(200, ""); // to the connection the server dropped
    server.restart().expect("the server starts again");
    let again = receiver.next();
    let body_again: Value = serde_json::from_slice(&again.body).expect("a JSON body");
    assert_eq!(body_again["key"], "last");
    assert_eq!(body_again["delivery_id"], body["delivery_id"]);
    assert_eq!(body_again["attempt"], 1);
    receiver.answer(200, r#"{"outcome":"reschedule","delay":"1h"}"#);
}

/// `punctual check-config FILE`: exit status and output.
fn check_config(path: &std::path::Path) -> (i32, String, String) {
    let out =
        std::process::Command::new(BIN).arg("check-config").arg(path).output().expect("run punctual check-config");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn check_config_accepts_a_good_file_and_names_the_line_of_each_broken_one() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let good = write(
        &dir,
        "good.toml",
        r#"[egress]
allow = ["127.0.0.0/8"]

[queues."order.cancel".action]
kind = "webhook"
url = "http://127.0.0.1:8080/hooks"

[queues."flow.remind".action]
kind = "dingtalk"
url = "https://oapi.dingtalk.com/robot/send?access_token=abc"
text = "{{ assignee }}: step {{ step }} is overdue"
mention_mobiles = ["{{ mobile }}"]
rate = "20/1m"
"#,
    );
    let (code, stdout, stderr) = check_config(&good);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("OK") && stdout.contains("order.cancel (webhook)") && stdout.contains("flow.remind (dingtalk)"),
        "{stdout}"
    );

    let cases: &[(&str, usize, &str)] = &[
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ncolour = \"blue\"\n", 4, "unknown field `colour`"),
        ("[queues.q.action]\nkind = \"webhook\"\n\nurl = \"htp:/x\"\n", 4, "http:// or https://"),
        ("[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"{{ name \"\n", 4, "syntax error"),
        (
            "[queues.q.action]\nkind = \"wecom\"\nsecret_env = \"PUNCTUAL_E2E_SURELY_UNSET\"\ntext = \"hi\"\n",
            3,
            "PUNCTUAL_E2E_SURELY_UNSET is not set",
        ),
        ("[queues.q.action]\nkind = \"carrier-pigeon\"\n", 2, "unknown variant"),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://169.254.169.254/latest\"\n",
            3,
            "refused: 169.254.169.254 is a link-local address (cloud metadata lives here); add it to [egress] allow",
        ),
        ("[egress]\nallow = [\"10.0.0.0/8\",\n  \"10.0.0.1/8\"]\n", 3, "did you mean 10.0.0.0/8?"),
    ];
    for (i, (text, line, needle)) in cases.iter().enumerate() {
        let path = write(&dir, &format!("bad-{i}.toml"), text);
        let (code, stdout, stderr) = check_config(&path);
        assert_eq!(code, 1, "{text:?}: {stdout}{stderr}");
        assert!(stderr.contains(&format!("bad-{i}.toml, line {line}:")), "{text:?}: {stderr}");
        assert!(stderr.contains(needle), "{text:?}: {stderr}");
    }
    let (code, _, stderr) = check_config(&dir.path().join("missing.toml"));
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot read"), "{stderr}");
}

/// Deliveries over a queue's rate limit wait (they are not failed) and `/metrics` shows
/// them waiting. The receiver never answers, so the one delivery the limit lets through
/// holds its slot while the second waits its turn.
#[test]
fn deliveries_over_the_rate_limit_wait_and_are_counted_in_metrics() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n[queues.\"flow.remind\".action]\nkind = \"webhook\"\n\
             url = \"http://{}/remind\"\ntimeout = \"30s\"\n\
             concurrency = 4\nrate = \"1/1h\"\n",
            receiver.addr
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::of(&server);
    for key in ["step-1", "step-2"] {
        api.put(&format!("/v1/queues/flow.remind/tasks/{key}"), json!({})).expect(201, "schedule");
    }
    let first = receiver.next();
    assert!(first.head.starts_with("POST /remind"), "{}", first.head);
    let waiting = "punctual_action_rate_waiting{queue=\"flow.remind\"} 1\n";
    let metrics = punctual_testkit::poll_until(Duration::from_secs(10), || {
        Some(api.get("/metrics").text).filter(|metrics| metrics.contains(waiting))
    })
    .unwrap_or_else(|| api.get("/metrics").text);
    assert!(metrics.contains(waiting), "{metrics}");
    assert!(metrics.contains("punctual_action_rate_limited_total{queue=\"flow.remind\"} 1\n"), "{metrics}");
    assert!(receiver.is_idle(), "the second delivery waits for the limit, it is not sent");
    let task = api.get("/v1/queues/flow.remind/tasks/step-2");
    assert_eq!(task.expect(200, "the waiting task")["attempts"], 0, "waiting is not a failed attempt");
}

/// The default egress policy through the real binary: a webhook whose host name
/// resolves to loopback is refused when connecting, without an `[egress]` entry. The
/// receiver gets nothing and the task is dead at once with a sentence saying what to
/// allow (retrying would be refused again).
#[test]
fn a_webhook_to_a_name_that_resolves_to_loopback_is_refused_without_an_allow_entry() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("http://localhost:{}/hooks", receiver.addr.port());
    let config = write(&dir, "punctual.toml", &format!("[queues.q.action]\nkind = \"webhook\"\nurl = \"{url}\"\n"));
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::of(&server);
    api.create("q", "k", json!({}));
    let current = || api.task("q", "k").expect(200, "a refused task is kept").clone();
    let task =
        punctual_testkit::poll_until(Duration::from_secs(10), || Some(current()).filter(|t| t["state"] == "dead"))
            .unwrap_or_else(current);
    assert_eq!((&task["state"], &task["attempts"]), (&json!("dead"), &json!(1)), "{task}");
    let error = task["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(&format!("webhook {url}: refused: localhost resolves only to refused addresses")),
        "{task}"
    );
    assert!(error.contains("127.0.0.1 is a loopback address") && error.contains("[egress] allow"), "{task}");
    assert!(receiver.is_idle(), "the receiver got nothing");

    // check-config takes the URL from url_env too and names that line.
    let literal =
        write(&dir, "literal.toml", "[queues.q.action]\nkind = \"webhook\"\n\nurl_env = \"PUNCTUAL_E2E_HOOK_URL\"\n");
    let out = std::process::Command::new(BIN)
        .arg("check-config")
        .arg(&literal)
        .env("PUNCTUAL_E2E_HOOK_URL", "http://[::1]:8080/hook")
        .output()
        .expect("run punctual check-config");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("literal.toml, line 4: url: refused: ::1 is a loopback address"), "{stderr}");
}

/// A node frozen past its lease (SIGSTOP: a stand-in for a long GC pause or a VM
/// stall) while its webhook delivery is in flight. Guards against the seeds' failure
/// where a lock's holder wakes up and finishes a task someone else already finished:
/// the lease expires, another node on the same Redis delivers the task again (same
/// delivery id, so the receiver can tell it is a retry) and completes it; when the
/// frozen node resumes and its own delivery answers "done", its completion is refused
/// (the lease is fenced) and the task is not completed a second time.
#[test]
fn a_node_frozen_past_its_lease_cannot_complete_the_task_late() {
    let redis = punctual_testkit::redis::server();
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n[queues.q.action]\nkind = \"webhook\"\nurl = \"http://{}/hook\"\ntimeout = \"60s\"\n",
            receiver.addr
        ),
    );
    let node =
        || start(server_builder().store(redis.url()).arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let frozen = node();
    let api = Api::of(&frozen);
    api.create("q", "order-7", json!({}));
    let first = receiver.next();
    punctual_testkit::signal(frozen.pid().expect("the server runs"), "STOP");
    // The frozen node reads this answer only when it resumes.
    receiver.answer(200, "");
    #[allow(clippy::disallowed_methods, reason = "real processes take real time")]
    let frozen_at = std::time::Instant::now();

    let other = node();
    let again = receiver.next_within(Duration::from_secs(60));
    let waited = frozen_at.elapsed();
    receiver.answer(200, "");
    let (first, again): (Value, Value) = (
        serde_json::from_slice(&first.body).unwrap_or_default(),
        serde_json::from_slice(&again.body).unwrap_or_default(),
    );
    assert_eq!(again["delivery_id"], first["delivery_id"], "the same occurrence, delivered again");
    assert_eq!((&first["attempt"], &again["attempt"]), (&json!(1), &json!(2)), "{first} {again}");
    let other_api = Api::of(&other);
    let gone = punctual_testkit::poll_until(Duration::from_secs(5), || {
        (other_api.task("q", "order-7").status == 404).then_some(())
    });
    assert!(gone.is_some(), "the other node completed the task");

    punctual_testkit::signal(frozen.pid().expect("the server runs"), "CONT");
    let refused = frozen.wait_for_log("ack refused", Duration::from_secs(5));
    assert!(refused.is_ok(), "the resumed node's late completion is refused:\n{}", frozen.logs());
    assert_eq!(other_api.task("q", "order-7").status, 404, "and changes nothing");
    assert!(receiver.is_idle(), "no third delivery");
    println!("frozen node: lease lost after {waited:?}, task delivered again by another node, late ack refused");
}

/// A receiver that misbehaves: `hang` accepts connections and never answers; `reset`
/// accepts and closes each connection at once. Counts the connections it accepted.
fn misbehaving_receiver(hang: bool) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    let addr = listener.local_addr().expect("the receiver's address");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&accepted);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if hang {
                held.push(stream);
            }
        }
    });
    (addr, accepted)
}

/// Webhook receivers that hang or drop every connection must not hold up other
/// queues. Guards against a shared delivery pool that one stuck endpoint fills (the
/// seeds' single consumer thread), timeouts that are not enforced, and failures that
/// are lost instead of retried. While one queue's receiver hangs and another's resets
/// every connection, a third queue's tasks, due every 100 ms, still arrive on time;
/// the failing queues' tasks are kept and retried with the reason in `last_error`.
#[test]
fn hanging_and_resetting_receivers_do_not_delay_other_queues() {
    let (hang_addr, hang_accepted) = misbehaving_receiver(true);
    let (reset_addr, reset_accepted) = misbehaving_receiver(false);
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n\
             [queues.hang.action]\nkind = \"webhook\"\nurl = \"http://{hang_addr}/h\"\ntimeout = \"1s\"\nconcurrency = 4\n\n\
             [queues.reset.action]\nkind = \"webhook\"\nurl = \"http://{reset_addr}/r\"\ntimeout = \"1s\"\nconcurrency = 4\n\n\
             [queues.fast.action]\nkind = \"webhook\"\nurl = \"http://{}/f\"\ntimeout = \"5s\"\nconcurrency = 1\n",
            receiver.addr
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::of(&server);
    for i in 0..20 {
        api.create("hang", &format!("h-{i}"), json!({}));
        api.create("reset", &format!("r-{i}"), json!({}));
    }
    for i in 0..10 {
        api.create("fast", &format!("f-{i}"), json!({"delay": format!("{}ms", 300 + i * 100)}));
    }
    let mut lags = Vec::new();
    for _ in 0..10 {
        let request = receiver.next();
        let arrived = common::now_ms();
        let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
        lags.push(arrived - common::parse_time(&body["due_at"]));
        receiver.answer(200, "");
    }
    let worst = *lags.iter().max().unwrap_or(&0);
    println!("fast queue lags while the others fail: {lags:?} ms");
    assert!(worst < 500, "a healthy queue was held up by failing receivers: lags {lags:?} ms");

    // The failing queues' tasks are kept, retried, and say why: wait for a failed try.
    for (queue, key, reason) in [("hang", "h-0", "did not answer within 1s"), ("reset", "r-0", "request to")] {
        let current = || api.task(queue, key).expect(200, "a failing delivery keeps its task").clone();
        let tried = |task: &Value| task["last_error"].as_str().is_some_and(|e| e.contains(reason));
        let task = punctual_testkit::poll_until(Duration::from_secs(10), || Some(current()).filter(tried))
            .unwrap_or_else(current);
        // Waiting for its next try, or in it: never dead, never gone.
        assert!(task["state"] == "scheduled" || task["state"] == "leased", "{task}");
        assert!(task["attempts"].as_u64().unwrap_or(0) >= 1, "{task}");
        assert!(task["last_error"].as_str().unwrap_or_default().contains(reason), "{queue}: {task}");
    }
    let open = hang_accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!(open >= 4, "the hanging receiver was tried: {open}");
    assert!(reset_accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the resetting receiver was tried");
}

/// What a slow receiver saw.
#[derive(Default)]
struct SlowSeen {
    /// Requests read and not yet answered.
    in_flight: std::sync::atomic::AtomicUsize,
    /// The most requests it held at once.
    most_in_flight: std::sync::atomic::AtomicUsize,
    /// Task key → the delivery id of each request for it.
    deliveries: std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
}

/// A receiver that answers every delivery 200, but only after `delay(key)`; each
/// connection on its own thread, so it holds as many requests at once as it is sent.
fn slow_receiver(delay: fn(&str) -> Duration) -> (SocketAddr, std::sync::Arc<SlowSeen>) {
    use std::sync::atomic::Ordering;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    let addr = listener.local_addr().expect("the receiver's address");
    let seen = std::sync::Arc::new(SlowSeen::default());
    let shared = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = std::sync::Arc::clone(&shared);
            std::thread::spawn(move || {
                let Some(request) = read_request(&stream) else { return };
                let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                seen.most_in_flight.fetch_max(now, Ordering::SeqCst);
                let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
                let key = body["key"].as_str().expect("a key").to_owned();
                let delivery_id = body["delivery_id"].as_str().expect("a delivery id").to_owned();
                seen.deliveries.lock().expect("not poisoned").entry(key.clone()).or_default().push(delivery_id);
                // The receiver's slowness is what this test is about, not a wait for
                // something: it holds each answer back as a slow endpoint would.
                std::thread::sleep(delay(&key));
                // No longer in flight once answered: the server may send the next one
                // as soon as it reads this.
                seen.in_flight.fetch_sub(1, Ordering::SeqCst);
                write_response(&mut stream, 200, "");
            });
        }
    });
    (addr, seen)
}

/// The slow receiver's delay for task `s-<i>`: 300 to 799 ms, spread over the tasks.
fn slow_delay(key: &str) -> Duration {
    let i: u64 = key.strip_prefix("s-").and_then(|i| i.parse().ok()).unwrap_or(0);
    Duration::from_millis(300 + (i * 137) % 500)
}

/// The value at `fraction` (0 to 1) of sorted `values`.
fn percentile(sorted: &[i64], fraction: f64) -> i64 {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

/// A receiver that answers, but slowly (300–800 ms a request), with 40 tasks due at
/// once on it and a concurrency of 2. Guards against a dispatcher that leases more than
/// it can run (leases that expire while waiting for a slot, so tasks are delivered
/// twice), a concurrency limit that is not enforced (the receiver is flooded), and a
/// slow queue that holds up the deliveries of another queue, whose tasks fall due every
/// 100 ms meanwhile.
#[test]
fn a_slow_receiver_gets_back_pressure_each_task_once_and_does_not_delay_other_queues() {
    use std::sync::atomic::Ordering;
    const SLOW_TASKS: usize = 40;
    const FAST_TASKS: usize = 60;
    let (slow_addr, slow) = slow_receiver(slow_delay);
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n\
             [queues.slow.action]\nkind = \"webhook\"\nurl = \"http://{slow_addr}/s\"\ntimeout = \"3s\"\nconcurrency = 2\n\n\
             [queues.fast.action]\nkind = \"webhook\"\nurl = \"http://{}/f\"\ntimeout = \"5s\"\nconcurrency = 1\n",
            receiver.addr
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::of(&server);
    let slow_tasks: Vec<Value> = (0..SLOW_TASKS).map(|i| json!({"key": format!("s-{i}"), "delay": "200ms"})).collect();
    api.post("/v1/queues/slow/tasks", json!({ "tasks": slow_tasks })).expect(200, "schedule the slow queue's tasks");
    let fast_tasks: Vec<Value> =
        (0..FAST_TASKS).map(|i| json!({"key": format!("f-{i}"), "delay": format!("{}ms", 300 + i * 100)})).collect();
    api.post("/v1/queues/fast/tasks", json!({ "tasks": fast_tasks })).expect(200, "schedule the fast queue's tasks");
    #[allow(clippy::disallowed_methods, reason = "real processes take real time")]
    let scheduled_at = std::time::Instant::now();

    let mut lags = Vec::new();
    for _ in 0..FAST_TASKS {
        let request = receiver.next();
        let arrived = common::now_ms();
        let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
        lags.push(arrived - common::parse_time(&body["due_at"]));
        receiver.answer(200, "");
    }
    let delivered_during_fast = slow.deliveries.lock().expect("not poisoned").len();

    // Every slow task answered and completed (a completed task is deleted).
    let pending = || (0..SLOW_TASKS).filter(|i| api.task("slow", &format!("s-{i}")).status != 404).count();
    let pending =
        punctual_testkit::poll_until(Duration::from_secs(30), || (pending() == 0).then_some(0)).unwrap_or_else(pending);
    let drained_in = scheduled_at.elapsed();
    // Every task is deleted (completed), so none can be leased and delivered again; a
    // second delivery sent before is one the receiver has read (counted below) or still
    // holds: wait until it holds none.
    let idle = punctual_testkit::poll_until(Duration::from_secs(10), || {
        (slow.in_flight.load(Ordering::SeqCst) == 0).then_some(())
    });
    assert!(idle.is_some(), "the slow receiver still holds requests 10 s after the last task completed");
    let deliveries = slow.deliveries.lock().expect("not poisoned").clone();
    let most_in_flight = slow.most_in_flight.load(Ordering::SeqCst);
    let delivered_twice: Vec<_> = deliveries.iter().filter(|(_, ids)| ids.len() > 1).collect();
    lags.sort_unstable();
    let (p50, max) = (percentile(&lags, 0.5), *lags.last().unwrap_or(&0));
    println!(
        "slow receiver (300-800 ms, concurrency 2): {} of {SLOW_TASKS} tasks delivered ({delivered_during_fast} \
         while the fast queue ran), {} more than once, at most {most_in_flight} requests at once, all completed \
         {drained_in:?} after scheduling; fast queue ({FAST_TASKS} tasks due every 100 ms): lag p50 {p50} ms, \
         max {max} ms",
        deliveries.len(),
        delivered_twice.len(),
    );
    assert_eq!(pending, 0, "slow tasks not completed in 30 s");
    assert_eq!(deliveries.len(), SLOW_TASKS, "every slow task was delivered");
    assert!(delivered_twice.is_empty(), "delivered more than once: {delivered_twice:?}");
    assert!(most_in_flight <= 2, "the receiver held {most_in_flight} requests at once, over the concurrency of 2");
    assert_eq!(most_in_flight, 2, "the concurrency of 2 was used");
    assert!(delivered_during_fast >= 10, "the slow queue ran alongside the fast one: {delivered_during_fast}");
    assert!(max < 250, "the fast queue was held up by the slow one: lags {lags:?} ms");
}
