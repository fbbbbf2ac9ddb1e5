//! Nodes sharing one Redis must share `[egress]` and `[targets]`, and say so when they
//! do not. Guards against issue Q, 10: a node whose egress policy refused a target's
//! address sent the task to dead at its first attempt, though the node it was
//! scheduled through would have delivered it, and nothing told the operator that the
//! nodes differed.
//!
//! Real processes: a private `redis-server` and servers of the real binary with
//! different `[egress]` tables. Every wait is on a condition, bounded by a few of the
//! nodes' announcement periods (2 s).

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Api, server_builder, start};
use punctual_testkit::poll_until;
use punctual_testkit::redis::{self, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::json;

/// Several announcement periods of the nodes.
const PATIENCE: Duration = Duration::from_secs(15);

fn config(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn node(redis: &RedisServer, config: &Path) -> ServerProcess {
    start(server_builder().store(redis.url()).arg("--config").arg(config).args(["--grace-period", "1s"]))
}

/// The node's name in the others' reports: `host:port (pid N)`.
fn pid_of(node: &ServerProcess) -> String {
    format!(":{} (pid {})", node.addr().port(), node.pid().unwrap())
}

/// What the node reports now: `punctual_delivery_policy_mismatch`, and the warnings
/// of its `/readyz`, which stays ready either way.
fn reported(api: &Api) -> (String, Vec<String>) {
    let metrics = api.get("/metrics");
    let gauge = metrics.text.lines().find_map(|line| line.strip_prefix("punctual_delivery_policy_mismatch "));
    let gauge = gauge.unwrap_or_else(|| panic!("no mismatch gauge in /metrics: {}", metrics.text)).to_owned();
    let ready = api.get("/readyz");
    let body = ready.expect(200, "a mismatch leaves the node ready");
    assert_eq!(body["status"], "ready", "{body}");
    let warnings = body["warnings"].as_array().map(|w| w.iter().map(|w| w.as_str().unwrap().to_owned()).collect());
    (gauge, warnings.unwrap_or_default())
}

/// Waits until the node reports a mismatch (`true`) or none; its warnings then.
#[track_caller]
fn until_reported(api: &Api, mismatch: bool) -> Vec<String> {
    let wanted = if mismatch { "1" } else { "0" };
    poll_until(PATIENCE, || {
        let (gauge, warnings) = reported(api);
        (gauge == wanted && warnings.is_empty() != mismatch).then_some(warnings)
    })
    .unwrap_or_else(|| panic!("{} never reported mismatch = {mismatch}: {:?}", api.base, reported(api)))
}

#[test]
fn nodes_with_different_egress_on_one_redis_report_it_until_their_policies_agree() {
    let redis = redis::server();
    let dir = tempfile::tempdir().unwrap();
    let loopback = config(&dir, "loopback.toml", "[egress]\nallow = [\"127.0.0.1\"]\n");
    let public = config(&dir, "public.toml", "");

    let mut a = node(&redis, &loopback);
    let mut p = node(&redis, &public);
    let (a_api, p_api) = (Api::of(&a), Api::of(&p));
    // Both report the other, naming it, its policy and what to do.
    for (api, other, its_policy) in
        [(&a_api, pid_of(&p), "allow = [] and [targets]"), (&p_api, pid_of(&a), "allow = [\"127.0.0.1\"]")]
    {
        let warnings = until_reported(api, true);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let warning = &warnings[0];
        assert!(warning.contains(&format!("{other} has [egress] allow_private = false, {its_policy}")), "{warning}");
        assert!(warning.contains("Every node sharing a store must have the same [egress] and [targets]"), "{warning}");
    }
    a.wait_for_log("the delivery policy differs between nodes sharing this store", PATIENCE)
        .unwrap_or_else(|logs| panic!("no error in the log: {logs}"));

    // The refusing node stops: it withdraws its policy, and the other's report ends.
    p.terminate().unwrap();
    until_reported(&a_api, false);
    a.wait_for_log("the delivery policy of every live node sharing this store is this node's again", PATIENCE)
        .unwrap_or_else(|logs| panic!("no line saying the mismatch ended: {logs}"));
    // A node whose policy is the same, written differently, reports none from its
    // first answer (it reads the others before it serves).
    let same =
        config(&dir, "same.toml", "[egress]\nallow_private = false\nallow = [\"127.0.0.1/32\", \"127.0.0.1\"]\n");
    let mut b = node(&redis, &same);
    assert_eq!(reported(&Api::of(&b)), ("0".to_owned(), Vec::new()));

    // A node that refuses what the others allow: a target it sends to dead says so.
    p.restart().unwrap();
    let p_api = Api::of(&p);
    assert_eq!(reported(&p_api).0, "1", "it read the others before it served");
    let target = json!({"url": "http://127.0.0.1:9/hook"});
    a_api.create("order.cancel", "hook-1", json!({"delay": "2s", "target": target}));
    // Only the refusing node is left to deliver it (the others' policies hold in Redis
    // for a while: the nodes still differ).
    a.kill().unwrap();
    b.kill().unwrap();
    let dead = poll_until(PATIENCE, || {
        let task = p_api.task("order.cancel", "hook-1").json;
        (task["state"] == "dead").then_some(task)
    })
    .unwrap_or_else(|| panic!("the target task never went dead: {}", p_api.task("order.cancel", "hook-1").text));
    let error = dead["last_error"].as_str().unwrap();
    assert!(error.contains("refused: 127.0.0.1 is a loopback address"), "{error}");
    assert!(error.contains("has another delivery policy than"), "{error}");
    assert!(error.contains(&pid_of(&p)), "the refusing node names itself: {error}");
    assert!(error.contains("every node sharing a store must have the same [egress] and [targets]"), "{error}");
}
