//! The embedded store on a full disk. Guards against the failures that turn a full disk
//! into lost or corrupted tasks: a write answered 2xx that never reached the disk, a
//! half-written batch, a database damaged by the failed writes, an error that says
//! nothing useful to the operator, and a server that needs a restart once space
//! returns.
//!
//! Real parts: the real binary, its data directory on a small tmpfs mounted for the
//! test (`mount -t tmpfs -o size=…`; CI runs as root), then grown with `remount`.

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Api, server_builder, start};
use serde_json::{Value, json};

/// A tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .expect("run mount");
        assert!(
            output.status.success(),
            "this test mounts a small tmpfs to fill it and needs root (CI runs as root): mount said {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Tmpfs { at: at.to_owned() }
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.at)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount the tmpfs with size {size}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Schedules a batch of 200 tasks with 1 KiB payloads; the answer.
fn schedule_batch(api: &Api, first: usize) -> (common::Resp, Vec<String>) {
    let keys: Vec<String> = (first..first + 200).map(|n| format!("order-{n}")).collect();
    let filler = "x".repeat(1024);
    let tasks: Vec<Value> = keys.iter().map(|k| json!({"key": k, "delay": "1h", "payload": {"pad": filler}})).collect();
    (api.post("/v1/queues/q/tasks", json!({ "tasks": tasks })), keys)
}

fn scheduled_count(api: &Api) -> u64 {
    api.get("/v1/queues/q").expect(200, "the queue's counts")["scheduled"].as_u64().unwrap()
}

#[test]
fn a_full_disk_refuses_writes_clearly_keeps_what_was_stored_and_recovers_when_space_returns() {
    let mut server = start(server_builder());
    server.kill().unwrap();
    let disk = Tmpfs::mount(&server.data_dir(), "6m");
    server.restart().unwrap();
    let api = Api::of(&server);

    // Fill the disk: every batch answered 200 is stored whole.
    let mut acknowledged = Vec::new();
    let refusal = loop {
        assert!(acknowledged.len() < 100_000, "6 MiB never filled up");
        let (answer, keys) = schedule_batch(&api, acknowledged.len());
        if answer.status != 200 {
            break answer;
        }
        acknowledged.extend(keys);
    };
    refusal.expect_error(503, "unavailable", None, "a write to a full disk");
    // Clients are told to retry later; the operator's log says why and what to do.
    assert!(refusal.text.contains("retry later"), "{}", refusal.text);
    let logged = server.wait_for_log("the disk is full; free space and retry", std::time::Duration::from_secs(5));
    assert!(logged.is_ok(), "the log says why:\n{}", logged.unwrap_err());
    assert!(!acknowledged.is_empty(), "some batches fit before the disk filled");

    // Nothing stored was lost or damaged; reads still work; the refused batch left nothing.
    assert_eq!(scheduled_count(&api), acknowledged.len() as u64, "exactly the acknowledged batches are stored");
    for key in [&acknowledged[0], &acknowledged[acknowledged.len() / 2], acknowledged.last().unwrap()] {
        api.task("q", key).expect(200, "an acknowledged task is readable on a full disk");
    }
    api.get("/readyz").expect(200, "reads still work, so the store is up");

    // Space returns: writes succeed again without a restart.
    disk.resize("64m");
    let (answer, keys) = schedule_batch(&api, acknowledged.len());
    answer.expect(200, "a write once space returned");
    acknowledged.extend(keys);

    // And everything survives a kill -9 and a restart on the same disk.
    server.restart().unwrap();
    let api = Api::of(&server);
    assert_eq!(scheduled_count(&api), acknowledged.len() as u64, "all acknowledged tasks after a restart");
    println!(
        "disk full after {} tasks: 503, logged \"the disk is full\"; writes succeeded again once the tmpfs grew, \
         no restart; all {} acknowledged tasks present after kill -9",
        acknowledged.len() - 200,
        acknowledged.len()
    );
}
