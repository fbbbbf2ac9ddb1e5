//! Dead-task retention through the real server: with `dead_retention` in its
//! `[queues."…"]` table, a queue's dead tasks are deleted once they have been dead that
//! long; a queue with a longer one, or none, keeps them, and a retention changed in
//! the file applies at the SIGHUP. Guards against what issue 15 (11) found: dead tasks
//! piled up for ever.
//!
//! The server's wall clock is libfaketime's, read from a file at start, so the server
//! can stop and start again ten minutes later (by its clock) with the same data: the
//! sweep it runs at start finds the dead tasks of `short` (kept 1 minute) due to go.

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use serde_json::json;

/// How long the sweep may take to show after the server is up.
const PATIENCE: Duration = Duration::from_secs(20);

/// A directory of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills a task of `queue` now: max_attempts 1, leased, its handler fails.
fn kill(api: &Api, queue: &str, key: &str) {
    api.put(&format!("/v1/queues/{queue}/tasks/{key}"), json!({"max_attempts": 1})).expect(201, "schedule");
    let lease = api.lease_one(queue);
    let id = lease["lease_id"].as_str().unwrap();
    api.ack(id, json!({"outcome": "fail", "error": "order not found"})).expect(204, "fail");
}

fn dead_count(api: &Api, queue: &str) -> u64 {
    api.get(&format!("/v1/queues/{queue}")).expect(200, "queue")["dead"].as_u64().unwrap()
}

#[test]
fn dead_tasks_are_deleted_once_past_their_queues_retention() {
    faketime::require();
    let scratch = Scratch(std::env::temp_dir().join(format!("punctual-dead-retention-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).unwrap();
    let clock = scratch.0.join("faketime");
    std::fs::write(&clock, "@2026-03-01 12:00:00\n").unwrap();
    let config = scratch.0.join("punctual.toml");
    std::fs::write(
        &config,
        "[queues.short]\ndead_retention = \"1m\"\n\n[queues.long]\ndead_retention = \"1h\"\n\n[queues.kept]\n",
    )
    .unwrap();
    let mut server = start(faketime::clock_from_file(server_builder().arg("--config").arg(&config), &clock));
    let api = Api::of(&server);
    for queue in ["short", "long", "kept"] {
        kill(&api, queue, "order-1");
    }
    let died = api.get("/v1/queues/short/tasks/order-1").expect(200, "the dead task").clone();
    assert_eq!(died["state"], "dead");
    assert!(died["updated_at"].as_str().unwrap().starts_with("2026-03-01T12:00"), "the fake clock: {died}");
    assert_eq!(dead_count(&api, "short"), 1, "dead for under a minute: kept");

    // Ten minutes later, by the server's clock.
    std::fs::write(&clock, "@2026-03-01 12:10:00\n").unwrap();
    server.restart().unwrap();
    let api = Api::of(&server);
    let deleted = punctual_testkit::poll_until(PATIENCE, || (dead_count(&api, "short") == 0).then_some(()));
    assert!(deleted.is_some(), "short's dead task was not deleted:\n{}", server.logs());
    api.get("/v1/queues/short/tasks/order-1").expect_error(404, "not_found", None, "deleted by the retention");
    assert_eq!(dead_count(&api, "long"), 1, "dead for ten minutes of the hour it is kept");
    assert_eq!(dead_count(&api, "kept"), 1, "a queue without a retention keeps its dead tasks");
    let logged = server.wait_for_log("deleted dead tasks past their retention", PATIENCE);
    assert!(logged.is_ok(), "{}", logged.unwrap_err());

    // `long` kept five minutes instead, by a SIGHUP: its task, dead ten, goes at once.
    std::fs::write(&config, "[queues.short]\ndead_retention = \"1m\"\n\n[queues.long]\ndead_retention = \"5m\"\n")
        .unwrap();
    let status = std::process::Command::new("kill").args(["-HUP", &server.pid().unwrap().to_string()]).status();
    assert!(status.unwrap().success(), "kill -HUP");
    let deleted = punctual_testkit::poll_until(PATIENCE, || (dead_count(&api, "long") == 0).then_some(()));
    assert!(deleted.is_some(), "long's dead task was not deleted after the reload:\n{}", server.logs());
    assert_eq!(dead_count(&api, "kept"), 1, "still no retention");
    assert!(!server.logs().contains("restart to apply"), "a retention takes no restart:\n{}", server.logs());
}
