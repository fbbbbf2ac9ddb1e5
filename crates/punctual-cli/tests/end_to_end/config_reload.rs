//! SIGHUP reads the config file again: new access rules take effect for the next
//! request, the file's queues (policies, declared names, `strict_queues`, push actions)
//! and calendars apply as they would at start, a file that no longer validates changes
//! nothing (its line is logged), a change that takes a restart is named in the log, and
//! a server without a config file (or without TLS) is not stopped by the signal.
//!
//! Guards against rotating a leaked token by restarting every server, against a typo
//! in the file locking everyone out on the next SIGHUP, against a queue's retry policy
//! or a holiday calendar edited in the file being ignored until a restart nobody knew
//! was needed, and against the default action of SIGHUP (the process ends) on a server
//! that only reloads a certificate with TLS.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::receiver::answering_200;
use common::{Api, server_builder, start, start_server};
use punctual_testkit::server::ServerProcess;
use serde_json::json;

fn hang_up(pid: u32) {
    let status = Command::new("kill").args(["-HUP", &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill -HUP {pid}");
}

/// What the server logs when a SIGHUP applied the file's queues and calendars.
const QUEUES_RELOADED: &str = "SIGHUP: queues and calendars reloaded";

/// Waits until the server has logged `QUEUES_RELOADED` `times` times in all.
#[track_caller]
fn wait_for_reloads(server: &ServerProcess, times: usize) {
    let done = punctual_testkit::poll_until(Duration::from_secs(20), || {
        (server.logs().matches(QUEUES_RELOADED).count() >= times).then_some(())
    });
    assert!(done.is_some(), "reload {times} not logged within 20 s:\n{}", server.logs());
}

fn status_with(api: &Api, token: &str) -> u16 {
    api.token(token).get("/v1/queues").status
}

const RULES: &str = r#"tokens = ["ops-token"]

[[access]]
token = "TOKEN"
permissions = ["read"]
"#;

#[test]
fn sighup_puts_new_access_rules_in_force_and_keeps_them_through_a_bad_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("punctual.toml");
    std::fs::write(&file, RULES.replace("TOKEN", "alpha-token")).expect("write the config");
    let server = start(server_builder().arg("--config").arg(&file));
    let api = Api::of(&server);
    let pid = server.pid().expect("running");
    assert_eq!((status_with(&api, "alpha-token"), status_with(&api, "beta-token")), (200, 401));

    // The leaked token is replaced in the file: the next request is checked against it.
    std::fs::write(&file, RULES.replace("TOKEN", "beta-token")).expect("rewrite the config");
    hang_up(pid);
    server.wait_for_log("SIGHUP: access rules reloaded", Duration::from_secs(20)).expect("the reload is logged");
    assert_eq!((status_with(&api, "alpha-token"), status_with(&api, "beta-token")), (401, 200));
    assert_eq!(status_with(&api, "ops-token"), 200);

    // A typo: nothing changes, and the log says where.
    std::fs::write(&file, RULES.replace("TOKEN", "gamma-token").replace("\"read\"", "\"write\"")).expect("rewrite");
    hang_up(pid);
    let logs = server.wait_for_log("nothing reloaded", Duration::from_secs(20)).expect("the refusal is logged");
    assert!(logs.contains("line 5") && logs.contains("'write' is not a permission"), "{logs}");
    assert_eq!((status_with(&api, "beta-token"), status_with(&api, "gamma-token")), (200, 401));

    // What is read at start only is named, and the rules still reload beside it.
    let limits = RULES.replace("TOKEN", "delta-token").replace("tokens =", "max_payload_bytes = 1024\ntokens =");
    std::fs::write(&file, limits).expect("rewrite");
    hang_up(pid);
    let logs = server.wait_for_log("restart to apply", Duration::from_secs(20)).expect("the restart is named");
    assert!(logs.contains("restart to apply the file's changes to limits;"), "{logs}");
    assert_eq!((status_with(&api, "beta-token"), status_with(&api, "delta-token")), (401, 200));
    Api::of(&server).get("/readyz").expect(200, "the server goes on");
}

#[test]
fn sighup_does_not_stop_a_server_without_a_config_file() {
    let server = start_server();
    hang_up(server.pid().expect("running"));
    server
        .wait_for_log("SIGHUP: no config file to read again", Duration::from_secs(20))
        .expect("the signal is handled");
    Api::of(&server).get("/readyz").expect(200, "the server goes on");
}

/// The file as the server starts with it: one queue with its retry policy, one
/// calendar. Egress to loopback is read at start only, so it is there from the start.
const QUEUES_AT_START: &str = r#"[egress]
allow = ["127.0.0.1"]

[queues."order.cancel"]
max_attempts = 3

[calendars.office]
tz = "Europe/Berlin"
hours = { mon = ["09:00-17:00"] }
"#;

/// The file edited: the policy changed, a queue and a push queue added, strict
/// queues on, the calendar changed and another added.
const QUEUES_EDITED: &str = r#"strict_queues = true

[egress]
allow = ["127.0.0.1"]

[queues."order.cancel"]
max_attempts = 7

[queues."flow.remind"]
group_concurrency = 2

[queues."flow.escalate".action]
kind = "webhook"
url = "http://RECEIVER/hooks/escalate"

[calendars.office]
tz = "Asia/Shanghai"
hours = { mon = ["09:00-18:00"] }

[calendars.shop]
tz = "UTC"
hours = { sat = ["10:00-16:00"] }
"#;

/// The file pared down: `order.cancel`, the push action and the office calendar gone.
const QUEUES_PARED: &str = r#"strict_queues = true

[egress]
allow = ["127.0.0.1"]

[queues."flow.remind"]
group_concurrency = 2

[queues."flow.escalate"]
max_attempts = 2

[calendars.shop]
tz = "UTC"
hours = { sat = ["10:00-16:00"] }
"#;

fn listed_queues(api: &Api) -> Vec<String> {
    let listed = api.get("/v1/queues");
    let queues = listed.expect(200, "GET /v1/queues")["queues"].as_array().expect("a list of queues").clone();
    queues.iter().map(|q| q["name"].as_str().expect("a name").to_owned()).collect()
}

#[test]
fn sighup_applies_the_files_queues_and_calendars_as_a_restart_would() {
    let (receiver, deliveries) = answering_200();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("punctual.toml");
    std::fs::write(&file, QUEUES_AT_START).expect("write the config");
    let server = start(server_builder().arg("--config").arg(&file));
    let api = Api::of(&server);
    let pid = server.pid().expect("running");
    let settings = api.get("/v1/queues/order.cancel/settings").expect(200, "a queue of the file").clone();
    assert_eq!((settings["source"].as_str(), settings["defaults"]["max_attempts"].as_u64()), (Some("config"), Some(3)));
    assert_eq!(api.get("/v1/calendars/office").expect(200, "a calendar of the file")["tz"], "Europe/Berlin");
    api.get("/v1/calendars/shop").expect_error(404, "not_found", None, "not in the file yet");
    assert_eq!(listed_queues(&api), ["order.cancel"]);
    api.schedule("flow.remnid", "before", json!({})).expect(201, "strict_queues is off");

    // Edited: every change is in force for the next request, no restart.
    std::fs::write(&file, QUEUES_EDITED.replace("RECEIVER", &receiver.to_string())).expect("rewrite");
    hang_up(pid);
    wait_for_reloads(&server, 1);
    let settings = api.get("/v1/queues/order.cancel/settings").expect(200, "still a queue of the file").clone();
    assert_eq!(settings["defaults"]["max_attempts"], 7, "{settings}");
    assert_eq!(api.create("order.cancel", "o-1", json!({}))["max_attempts"], 7, "a new task takes the new policy");
    let remind = api.get("/v1/queues/flow.remind/settings").expect(200, "a queue added to the file").clone();
    assert_eq!((remind["source"].as_str(), remind["group_concurrency"].as_u64()), (Some("config"), Some(2)));
    assert_eq!(listed_queues(&api), ["flow.escalate", "flow.remind", "flow.remnid", "order.cancel"]);
    let typo = api.schedule("flow.remnid", "after", json!({}));
    typo.expect_error(404, "not_found", None, "strict_queues is on");
    assert!(typo.text.contains("did you mean 'flow.remind'?"), "{}", typo.text);
    let office = api.get("/v1/calendars/office").expect(200, "a changed calendar").clone();
    assert_eq!((office["tz"].as_str(), office["source"].as_str()), (Some("Asia/Shanghai"), Some("config")));
    assert_eq!(api.get("/v1/calendars/shop").expect(200, "a calendar added to the file")["tz"], "UTC");
    // The push queue added to the file delivers; pull workers are refused it.
    api.create("flow.escalate", "e-1", json!({"payload": {"step": 2}}));
    let delivered = deliveries.recv_timeout(Duration::from_secs(20)).expect("the new action delivers within 20 s");
    assert_eq!((delivered["queue"].as_str(), delivered["key"].as_str()), (Some("flow.escalate"), Some("e-1")));
    let refused = api.post("/v1/queues/flow.escalate/lease", json!({"max": 1, "wait": "0s"}));
    refused.expect_error(409, "conflict", None, "a lease on the new push queue");

    // Pared down: what left the file is no longer declared, its tasks stay; a queue
    // without its action is leased by pull workers again.
    std::fs::write(&file, QUEUES_PARED).expect("rewrite");
    hang_up(pid);
    wait_for_reloads(&server, 2);
    api.get("/v1/queues/order.cancel/settings").expect_error(404, "not_found", None, "no longer in the file");
    api.schedule("order.cancel", "o-2", json!({})).expect_error(404, "not_found", None, "no longer declared");
    assert_eq!(api.task("order.cancel", "o-1").expect(200, "its task stays")["max_attempts"], 7);
    api.get("/v1/calendars/office").expect_error(404, "not_found", None, "a calendar removed from the file");
    assert_eq!(api.get("/v1/calendars/shop").expect(200, "still in the file")["tz"], "UTC");
    let released = punctual_testkit::poll_until(Duration::from_secs(20), || {
        let lease = api.post("/v1/queues/flow.escalate/lease", json!({"max": 1, "wait": "0s"}));
        (lease.status != 409).then_some(lease)
    });
    released.expect("the push action stops within 20 s").expect(200, "pull workers lease the queue again");
    Api::of(&server).get("/readyz").expect(200, "the server goes on");
}
