//! Tasks that carry their own HTTP target, through the real binary on the embedded
//! store: delivered to the target with its method, headers and body, signed, every
//! class of answer applied as docs/webhooks.md says; pull leases never take them; a
//! queue's webhook secret signs its targets and its action keeps the other tasks; the
//! egress policy, the limits and `"targets": false` refuse what they must.
//!
//! Guards against: a target stored but never delivered (or delivered to the queue's
//! action), a pull worker handed a task the server should deliver, an answer applied
//! differently than for a webhook action, a redirect followed, an SSRF through a
//! literal address or a name resolving to loopback, a refused input that still
//! changes something.

use crate::common;

use std::path::PathBuf;

use common::receiver::{Receiver, Request};
use common::{Api, now_ms, parse_time, server_builder, start};
use serde_json::{Value, json};

const TARGET_SECRET: &str = "e2e-target-secret";
const QUEUE: &str = "shop.hooks";

fn config(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).expect("write the config file");
    path
}

/// `Punctual-Signature` of `request` checked against `secret`.
fn assert_signed(request: &Request, secret: &str) {
    let signature = request.header("punctual-signature").expect("the delivery is signed");
    let t: i64 =
        signature.split(',').next().and_then(|p| p.strip_prefix("t=")).and_then(|t| t.parse().ok()).expect("t=…");
    assert_eq!(signature, punctual_actions::signature(secret.as_bytes(), t, &request.body), "signed with {secret}");
}

fn target_to(receiver: &Receiver, path: &str) -> Value {
    json!({"url": format!("http://{}{path}", receiver.addr)})
}

#[test]
fn a_task_with_a_target_is_delivered_there_and_every_answer_applies() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file =
        config(&dir, "[egress]\nallow = [\"127.0.0.1\"]\n\n[targets]\nsecret_env = \"PUNCTUAL_E2E_TARGET_SECRET\"\n");
    let server = start(server_builder().arg("--config").arg(&file).env("PUNCTUAL_E2E_TARGET_SECRET", TARGET_SECRET));
    let api = Api::new(server.url());

    // Every field of the target arrives as given.
    let target = json!({"url": format!("http://{}/cancel?o=1", receiver.addr), "method": "PUT",
                        "headers": {"X-Tenant": "acme"}, "timeout": "5s", "body": {"cancel": 1}});
    let task = api.create(QUEUE, "o-1", json!({"payload": {"order_id": 1}, "target": target}));
    assert_eq!(task["target"], target, "the task object shows its target as given");
    let request = receiver.next();
    assert!(request.head.starts_with("PUT /cancel?o=1 HTTP/1.1"), "{}", request.head);
    assert_eq!(request.header("x-tenant").as_deref(), Some("acme"));
    assert!(request.header("punctual-delivery").is_some_and(|id| !id.is_empty()), "{}", request.head);
    assert_eq!(serde_json::from_slice::<Value>(&request.body).expect("JSON"), json!({"cancel": 1}));
    assert_signed(&request, TARGET_SECRET);
    receiver.answer(200, r#"{"outcome": "reschedule", "delay": "1h"}"#);
    let path = format!("/v1/queues/{QUEUE}/tasks/o-1");
    let rescheduled = api.get_until(&path, "rescheduled", |r| {
        r.json["attempts"] == 0 && parse_time(&r.json["due_at"]) > now_ms() + 3_000_000
    });
    assert_eq!(rescheduled.json["state"], "scheduled", "{}", rescheduled.text);
    assert_eq!(rescheduled.json["target"], target, "a reschedule keeps the target");

    // Without a body of its own, the standard delivery body, by POST.
    api.create(
        QUEUE,
        "o-2",
        json!({"payload": {"order_id": 2}, "tags": ["t-2"], "target": target_to(&receiver, "/std")}),
    );
    let request = receiver.next();
    assert!(request.head.starts_with("POST /std HTTP/1.1"), "{}", request.head);
    let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
    assert_eq!((body["queue"].as_str(), body["key"].as_str()), (Some(QUEUE), Some("o-2")));
    assert_eq!(
        (body["payload"].clone(), body["tags"].clone(), body["attempt"].clone()),
        (json!({"order_id": 2}), json!(["t-2"]), json!(1))
    );
    assert_eq!(request.header("punctual-delivery").as_deref(), body["delivery_id"].as_str());
    assert_signed(&request, TARGET_SECRET);
    // 503 with Retry-After: retried after it, then a 410 is done.
    let asked = now_ms();
    receiver.answer_with(503, &[("Retry-After", "2")], "busy");
    let again = receiver.next();
    assert!(now_ms() - asked >= 1_900, "the retry came {} ms after a Retry-After of 2 s", now_ms() - asked);
    let body_again: Value = serde_json::from_slice(&again.body).expect("a JSON body");
    assert_eq!(
        (body_again["attempt"].clone(), body_again["delivery_id"].clone()),
        (json!(2), body["delivery_id"].clone())
    );
    receiver.answer(410, "");
    api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-2"), "gone after 410", |r| r.status == 404);

    // 429 with Retry-After is retried after it; a 4xx not among the final statuses is
    // retried with the task's backoff; so is a refused connection.
    let slow_backoff = json!({"initial": "1h", "factor": 2.0, "max": "1h"});
    api.create(QUEUE, "o-429", json!({"target": target_to(&receiver, "/busy")}));
    let _ = receiver.next();
    let asked = now_ms();
    receiver.answer_with(429, &[("Retry-After", "1")], "slow down");
    let _ = receiver.next();
    assert!(now_ms() - asked >= 900, "the retry came {} ms after a Retry-After of 1 s", now_ms() - asked);
    receiver.answer(200, "");
    api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-429"), "done", |r| r.status == 404);
    api.create(QUEUE, "o-404", json!({"target": target_to(&receiver, "/missing"), "backoff": slow_backoff}));
    let _ = receiver.next();
    receiver.answer(404, "no such hook");
    let retried = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-404"), "retried", |r| r.json["attempts"] == 1);
    assert_eq!(retried.json["state"], "scheduled", "a 404 is retried: {}", retried.text);
    assert!(retried.json["last_error"].as_str().is_some_and(|e| e.contains("404")), "{}", retried.text);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let closed_port = closed.local_addr().expect("its address").port();
    drop(closed);
    let unreachable = json!({"url": format!("http://127.0.0.1:{closed_port}/x")});
    api.create(QUEUE, "o-refused", json!({"target": unreachable, "backoff": slow_backoff}));
    let refused = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-refused"), "retried", |r| r.json["attempts"] == 1);
    assert!(refused.json["last_error"].as_str().is_some_and(|e| e.contains("cannot connect")), "{}", refused.text);

    // A final status makes it dead; so does {"outcome": "fail"}.
    api.create(QUEUE, "o-3", json!({"target": target_to(&receiver, "/final")}));
    let _ = receiver.next();
    receiver.answer(400, r#"{"error": "bad order"}"#);
    let dead = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-3"), "dead", |r| r.json["state"] == "dead");
    assert!(
        dead.json["last_error"].as_str().is_some_and(|e| e.contains("400") && e.contains("bad order")),
        "{}",
        dead.text
    );
    api.create(QUEUE, "o-4", json!({"target": target_to(&receiver, "/fail")}));
    let _ = receiver.next();
    receiver.answer(200, r#"{"outcome": "fail", "error": "no such order"}"#);
    let dead = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-4"), "dead", |r| r.json["state"] == "dead");
    assert_eq!(dead.json["last_error"], "no such order", "{}", dead.text);

    // A redirect is not followed: retried, saying so.
    api.create(
        QUEUE,
        "o-5",
        json!({"target": target_to(&receiver, "/moved"), "backoff": {"initial": "1h", "factor": 2.0, "max": "1h"}}),
    );
    let _ = receiver.next();
    receiver.answer_with(302, &[("Location", "http://127.0.0.1:9/elsewhere")], "");
    let retried = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-5"), "retried", |r| r.json["attempts"] == 1);
    assert!(
        retried.json["last_error"].as_str().is_some_and(|e| e.contains("redirects are not followed")),
        "{}",
        retried.text
    );

    // A target that does not answer within its timeout is retried.
    api.create(
        QUEUE,
        "o-6",
        json!({"target": {"url": format!("http://{}/slow", receiver.addr), "timeout": "1s"},
                                    "backoff": {"initial": "1h", "factor": 2.0, "max": "1h"}}),
    );
    let _ = receiver.next();
    let late = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/o-6"), "timed out", |r| r.json["attempts"] == 1);
    assert!(late.json["last_error"].as_str().is_some_and(|e| e.contains("did not answer")), "{}", late.text);
    receiver.answer(200, ""); // to the connection the server gave up on

    receiver.answer(200, "");
}

/// With one target delivery at a time on the queue, a second task with a target stays
/// due and scheduled while the first is held, and a pull lease then, with both due,
/// takes only the task without a target.
#[test]
fn pull_leases_never_take_a_due_task_with_a_target_and_the_queues_concurrency_holds() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = start(server_builder().arg("--config").arg(config(&dir, "[egress]\nallow = [\"127.0.0.1\"]\n")));
    let api = Api::new(server.url());
    let queue = "one.at.a.time";
    api.put(&format!("/v1/queues/{queue}/settings"), json!({"concurrency": 1})).expect(201, "settings created");
    api.create(queue, "held", json!({"target": target_to(&receiver, "/held")}));
    server
        .wait_for_log("target deliveries ready queue=one.at.a.time concurrency=1", std::time::Duration::from_secs(10))
        .unwrap_or_else(|logs| panic!("the queue's target worker never took up its settings: {logs}"));
    let held = receiver.next();
    assert!(held.head.starts_with("POST /held"), "{}", held.head);
    api.create(queue, "waiting", json!({"target": target_to(&receiver, "/waiting")}));
    api.create(queue, "pulled", json!({}));
    let leases = api.lease(queue, json!({"max": 10}));
    let keys: Vec<&str> = leases.iter().filter_map(|l| l["task"]["key"].as_str()).collect();
    assert_eq!(keys, ["pulled"], "a pull lease takes only the task without a target: {leases:?}");
    let waiting = api.task(queue, "waiting").expect(200, "the second target task").clone();
    assert_eq!(waiting["state"], "scheduled", "due, but the queue's one delivery slot is taken: {waiting}");
    assert!(receiver.is_idle(), "a second delivery was sent while the first was held (concurrency 1)");
    receiver.answer(200, "");
    let next = receiver.next();
    assert!(next.head.starts_with("POST /waiting"), "{}", next.head);
    receiver.answer(200, "");
    api.get_until(&format!("/v1/queues/{queue}/tasks/waiting"), "done", |r| r.status == 404);
}

#[test]
fn a_queues_webhook_secret_signs_its_targets_and_its_action_keeps_the_rest() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = config(
        &dir,
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n[targets]\nsecret_env = \"PUNCTUAL_E2E_TARGET_SECRET\"\n\n\
             [queues.\"mixed\".action]\nkind = \"webhook\"\nurl = \"http://{}/action\"\n\
             secret_env = \"PUNCTUAL_E2E_QUEUE_SECRET\"\nconcurrency = 1\n",
            receiver.addr
        ),
    );
    let server = start(
        server_builder()
            .arg("--config")
            .arg(&file)
            .env("PUNCTUAL_E2E_TARGET_SECRET", TARGET_SECRET)
            .env("PUNCTUAL_E2E_QUEUE_SECRET", "e2e-queue-secret"),
    );
    let api = Api::new(server.url());
    api.create("mixed", "to-target", json!({"target": target_to(&receiver, "/target")}));
    let request = receiver.next();
    assert!(request.head.starts_with("POST /target"), "the task's target wins over the action: {}", request.head);
    assert_signed(&request, "e2e-queue-secret");
    receiver.answer(200, "");
    api.create("mixed", "to-action", json!({}));
    let request = receiver.next();
    assert!(request.head.starts_with("POST /action"), "a task without a target goes to the action: {}", request.head);
    receiver.answer(200, "");
    api.get_until("/v1/queues/mixed/tasks/to-action", "done", |r| r.status == 404);
    api.get_until("/v1/queues/mixed/tasks/to-target", "done", |r| r.status == 404);
}

#[test]
fn bad_targets_are_refused_and_change_nothing() {
    // The default egress policy: public addresses only.
    let server = start(server_builder());
    let api = Api::new(server.url());
    let refused = |target: Value, field: &str| {
        let resp = api.schedule(QUEUE, "bad", json!({"target": target}));
        resp.expect_error(400, "invalid_argument", Some(field), &format!("target {target}"));
        api.task(QUEUE, "bad").expect(404, "a refused schedule stores nothing");
    };
    for literal in [
        "http://127.0.0.1:9/x",
        "http://[::1]/x",
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest",
        "http://2130706433/x",
    ] {
        refused(json!({"url": literal}), "target.url");
    }
    refused(json!({"url": "ftp://example.com/x"}), "target.url");
    refused(json!({"url": "https://user:pw@example.com/x"}), "target.url");
    refused(json!({}), "target.url");
    refused(json!({"url": "https://example.com/x", "method": "TRACE"}), "target.method");
    refused(json!({"url": "https://example.com/x", "timeout": "61s"}), "target.timeout");
    for header in ["Host", "Content-Length", "Transfer-Encoding", "Connection", "Punctual-Signature"] {
        refused(json!({"url": "https://example.com/x", "headers": {header: "v"}}), "target.headers");
    }
    let many: serde_json::Map<String, Value> = (0..33).map(|i| (format!("X-H{i}"), json!("v"))).collect();
    refused(json!({"url": "https://example.com/x", "headers": many}), "target.headers");
    refused(json!({"url": "https://example.com/x", "headers": {"X-Big": "v".repeat(1024)}}), "target.headers");

    // In a batch, only the bad item is refused, with its position.
    let batch = api.post(
        &format!("/v1/queues/{QUEUE}/tasks"),
        json!({"tasks": [
        {"key": "fine", "target": {"url": "https://example.com/x"}},
        {"key": "loopback", "target": {"url": "http://127.0.0.1/x"}}]}),
    );
    batch.expect(200, "a batch answers per item");
    assert_eq!(batch.json["results"][0]["outcome"], "created", "{}", batch.text);
    assert_eq!(batch.json["results"][1]["error"]["field"], "tasks[1].target.url", "{}", batch.text);
    api.task(QUEUE, "loopback").expect(404, "the refused item is not stored");

    // A queue whose settings say "targets": false refuses them, and only them.
    api.put("/v1/queues/no.targets/settings", json!({"targets": false})).expect(201, "settings created");
    api.get_until("/v1/queues/no.targets/settings", "applied", |r| r.json["targets"] == false);
    let resp = api.schedule("no.targets", "t", json!({"target": {"url": "https://example.com/x"}}));
    resp.expect_error(400, "invalid_argument", Some("target"), "a target on a queue refusing them");
    api.schedule("no.targets", "plain", json!({})).expect(201, "a task without a target is fine");
}

#[test]
fn a_target_name_resolving_only_to_refused_addresses_makes_the_task_dead() {
    // The egress policy allows no loopback: `localhost` passes at schedule time (a
    // name), and its connection is refused when it resolves to 127.0.0.1 / ::1.
    let receiver = Receiver::start();
    let server = start(server_builder());
    let api = Api::new(server.url());
    let url = format!("http://localhost:{}/x", receiver.addr.port());
    api.create(QUEUE, "ssrf", json!({"target": {"url": url}}));
    let dead = api.get_until(&format!("/v1/queues/{QUEUE}/tasks/ssrf"), "dead", |r| r.json["state"] == "dead");
    let error = dead.json["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("refused") && error.contains("localhost"), "{}", dead.text);
}
