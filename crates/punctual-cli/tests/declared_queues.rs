//! The config file's queues through the real binary. Guards against issue 15: a pull
//! worker that leased a push queue's task, which its webhook then never received (7:
//! the lease must be `409 conflict` naming the action, and the webhook must get the
//! task), and misspelled queues that passed silently (9: the file's queues are listed
//! by `GET /v1/queues` and `punctual ls` before their first task, and with
//! `strict_queues = true` a schedule, a batch and a lease to `flow.remnid` are `404`
//! naming `flow.remind`).
//!
//! Real processes: `punctual serve --config` with a webhook action delivering to a
//! receiver on loopback, and `punctual ls`.

mod common;

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::receiver::{read_request, write_response};
use common::{Api, BIN, server_builder, start};
use serde_json::{Value, json};

/// A webhook receiver answering 200 to every delivery; the deliveries' bodies.
fn receiver() -> (std::net::SocketAddr, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    let addr = listener.local_addr().expect("the receiver's address");
    let (deliveries, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            write_response(&mut stream, 200, "");
            let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            if deliveries.send(body).is_err() {
                return;
            }
        }
    });
    (addr, received)
}

const TYPO: &str = "no queue 'flow.remnid': did you mean 'flow.remind'?";

#[test]
fn the_files_queues_are_listed_typos_are_refused_and_a_push_queue_is_never_leased() {
    let (addr, deliveries) = receiver();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("punctual.toml");
    let text = format!(
        r#"strict_queues = true

[egress]
allow = ["127.0.0.1"]

[queues."flow.remind"]
max_attempts = 5

[queues."flow.escalate".action]
kind = "webhook"
url = "http://{addr}/hooks/escalate"
"#
    );
    std::fs::write(&config, text).expect("write the config file");
    let server = start(server_builder().arg("--config").arg(&config));
    let api = Api::of(&server);

    let list = api.get("/v1/queues");
    let zero = |name: &str| json!({"name": name, "scheduled": 0, "leased": 0, "dead": 0, "next_due_at": null});
    assert_eq!(list.expect(200, "GET /v1/queues"), &json!({"queues": [zero("flow.escalate"), zero("flow.remind")]}));
    let ls = std::process::Command::new(BIN).args(["ls", "--server", &server.url()]).output().expect("run ls");
    let shown = String::from_utf8_lossy(&ls.stdout);
    assert!(ls.status.success(), "{shown}{}", String::from_utf8_lossy(&ls.stderr));
    assert!(shown.contains("flow.escalate") && shown.contains("flow.remind"), "punctual ls:\n{shown}");

    api.schedule("flow.remnid", "task-77", json!({"delay": "24h"})).expect_error(404, "not_found", None, "a typo");
    assert_eq!(api.schedule("flow.remnid", "task-77", json!({})).json["error"]["message"], TYPO);
    let batch = api.post("/v1/queues/flow.remnid/tasks", json!({"tasks": [{"key": "a"}, {"key": "b"}]}));
    let results = batch.expect(200, "a batch answers per item")["results"].as_array().expect("results").clone();
    assert!(results.iter().all(|r| r["error"]["code"] == "not_found" && r["error"]["message"] == TYPO), "{results:?}");
    let lease = api.post("/v1/queues/flow.remnid/lease", json!({}));
    lease.expect_error(404, "not_found", None, "a lease on a typo");
    assert_eq!(lease.json["error"]["message"], TYPO);
    api.create("flow.remind", "task-77", json!({"delay": "24h"}));
    let list = api.get("/v1/queues");
    let names: Vec<&str> =
        list.json["queues"].as_array().expect("queues").iter().filter_map(|q| q["name"].as_str()).collect();
    assert_eq!(names, ["flow.escalate", "flow.remind"], "nothing stored for the typo");

    // A push queue: the pull worker is refused, the webhook gets the task.
    api.create("flow.escalate", "task-77@li.na", json!({"payload": {"step": 3}}));
    let refused = api.post("/v1/queues/flow.escalate/lease", json!({"max": 10, "wait": "1s"}));
    refused.expect_error(409, "conflict", None, "a lease on a push queue");
    let message = refused.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("flow.escalate") && message.contains("webhook action"), "{message}");
    let delivered = deliveries.recv_timeout(Duration::from_secs(15)).expect("the webhook gets the task within 15 s");
    assert_eq!(
        (delivered["queue"].as_str(), delivered["key"].as_str()),
        (Some("flow.escalate"), Some("task-77@li.na"))
    );
    assert_eq!(delivered["payload"], json!({"step": 3}));
}
