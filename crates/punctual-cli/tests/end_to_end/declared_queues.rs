//! Guards against issue 15 (7): a pull worker that leased a push queue's task, which
//! its webhook then never received. Through the real binary with a config file, the
//! lease is `409 conflict` naming the action and the webhook gets the task; and (9) the
//! file's queues are listed by `punctual ls` before their first task.
//!
//! Real processes: `punctual serve --config` with a webhook action delivering to a
//! receiver on loopback, and `punctual ls`. The listing over HTTP and the refusal of
//! misspelled queues under `strict_queues` (`404` naming the nearest) are asserted in
//! process by the server's own tests (`crates/punctual-server/tests/http/declared_queues.rs`).

use crate::common;

use std::time::Duration;

use common::receiver::answering_200;
use common::{Api, BIN, server_builder, start};
use serde_json::json;

const TYPO: &str = "no queue 'flow.remnid': did you mean 'flow.remind'?";

#[test]
fn the_files_queues_are_listed_and_a_push_queue_is_never_leased() {
    let (addr, deliveries) = answering_200();
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

    let ls = std::process::Command::new(BIN).args(["ls", "--server", &server.url()]).output().expect("run ls");
    let shown = String::from_utf8_lossy(&ls.stdout);
    assert!(ls.status.success(), "{shown}{}", String::from_utf8_lossy(&ls.stderr));
    assert!(shown.contains("flow.escalate") && shown.contains("flow.remind"), "punctual ls:\n{shown}");

    // strict_queues is on: the file's settings reach the server (a typo is refused).
    let typo = api.schedule("flow.remnid", "task-77", json!({}));
    typo.expect_error(404, "not_found", None, "a typo");
    assert_eq!(typo.json["error"]["message"], TYPO);

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
