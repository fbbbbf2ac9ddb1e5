//! What the real server's log says about risks and failures. Guards against the small
//! traps of issue 15 (12): a server listening beyond loopback with auth off without a
//! word about it; a not-ready line that says its reason twice (in its message and again
//! in a field) — readiness is logged once per change, saying why once; and a shutdown
//! that says "every write is durable" while the store cannot be reached.
//!
//! Real processes: the real binary, and a private `redis-server` killed to make the
//! store unreachable. Logs are read after the server exited (SIGTERM), so nothing is
//! still on its way.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use common::*;
use punctual_testkit::redis;
use punctual_testkit::server::{ServerBuilder, ServerProcess};
use serde_json::json;

/// The log of a server started from `builder` and stopped with SIGTERM, which must
/// exit 0.
fn log_until_stopped(builder: ServerBuilder) -> String {
    let mut server = start(builder);
    let status = server.terminate().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status}\n{}", server.logs());
    server.logs()
}

fn open_warnings(logs: &str) -> usize {
    logs.lines().filter(|l| l.contains("WARN") && l.contains("anyone who can reach")).count()
}

#[test]
fn listening_beyond_loopback_without_tokens_is_a_warning_that_says_how_to_set_tokens() {
    let logs = log_until_stopped(server_builder().every_interface());
    assert_eq!(open_warnings(&logs), 1, "{logs}");
    let line = logs.lines().find(|l| l.contains("anyone who can reach")).unwrap();
    assert!(line.contains("0.0.0.0:"), "names the address: {line}");
    assert!(line.contains("schedule, cancel and lease tasks"), "{line}");
    assert!(line.contains("--token") && line.contains("PUNCTUAL_TOKENS") && line.contains("tokens = ["), "{line}");

    let with_tokens = log_until_stopped(server_builder().every_interface().args(["--token", "s3cret"]));
    assert_eq!(open_warnings(&with_tokens), 0, "tokens set: {with_tokens}");
    let loopback = log_until_stopped(server_builder());
    assert_eq!(open_warnings(&loopback), 0, "loopback only: {loopback}");
}

#[test]
fn an_unreachable_store_is_one_not_ready_line_and_the_stop_says_what_could_not_be_made_durable() {
    let mut redis = redis::server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, "[redis]\ntimeout = \"1s\"\n").unwrap();
    let mut server: ServerProcess = start(server_builder().store(redis.url()).arg("--config").arg(&config));
    let api = Api::of(&server);
    api.create("order.cancel", "o-1", json!({"delay": "1h"}));
    api.get("/readyz").expect(200, "Redis answers");

    redis.kill();
    api.readyz_until("unready", |r| r.status == 503);
    for _ in 0..5 {
        api.get("/readyz").expect_error(503, "unavailable", None, "still unreachable");
    }
    let refused = api.put("/v1/queues/order.cancel/tasks/o-2", json!({"delay": "1h"}));
    refused.expect_error(503, "unavailable", None, "a write Redis cannot confirm");

    let status = server.terminate().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "API.md: SIGTERM exits 0; {status}\n{}", server.logs());
    let logs = server.logs();
    let not_ready: Vec<&str> = logs.lines().filter(|l| l.contains("not ready")).collect();
    assert_eq!(not_ready.len(), 1, "one line per change, not per probe:\n{logs}");
    assert_eq!(not_ready[0].matches("the store cannot be reached").count(), 1, "said once: {}", not_ready[0]);
    assert!(not_ready[0].contains("error="), "with the store's error: {}", not_ready[0]);

    assert!(!logs.contains("every write is durable"), "untrue while Redis is down:\n{logs}");
    let stopped = logs.lines().find(|l| l.contains("stopped while the store cannot be reached"));
    let stopped = stopped.unwrap_or_else(|| panic!("no stop line saying the store is unreachable:\n{logs}"));
    assert!(stopped.contains("WARN") && stopped.contains("could not be made durable"), "{stopped}");
}

#[test]
fn a_stop_with_the_store_reachable_says_every_acknowledged_write_is_durable() {
    let logs = log_until_stopped(server_builder());
    assert_eq!(logs.matches("stopped; every acknowledged write is durable").count(), 1, "{logs}");
    assert!(!logs.contains("stopped while the store cannot be reached"), "{logs}");
}
