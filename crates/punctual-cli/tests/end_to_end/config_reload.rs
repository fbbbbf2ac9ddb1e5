//! SIGHUP reads the config file again: new access rules take effect for the next
//! request, a file that no longer validates changes nothing (its line is logged), a
//! change that takes a restart is named in the log, and a server without a config file
//! (or without TLS) is not stopped by the signal.
//!
//! Guards against rotating a leaked token by restarting every server, against a typo
//! in the file locking everyone out on the next SIGHUP, and against the default action
//! of SIGHUP (the process ends) on a server that only reloads a certificate with TLS.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::{Api, server_builder, start, start_server};

fn hang_up(pid: u32) {
    let status = Command::new("kill").args(["-HUP", &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill -HUP {pid}");
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
    let queues = RULES.replace("TOKEN", "delta-token") + "\n[queues.\"order.cancel\"]\nmax_attempts = 3\n";
    std::fs::write(&file, queues).expect("rewrite");
    hang_up(pid);
    let logs = server.wait_for_log("restart to apply", Duration::from_secs(20)).expect("the restart is named");
    assert!(logs.contains("restart to apply the file's changes to queues"), "{logs}");
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
