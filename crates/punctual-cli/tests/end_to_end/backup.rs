//! `punctual backup` of a running server's store under load, and `punctual restore` of
//! it into another server's directory: every task the first server answered before the
//! backup began is served by the second exactly as the first serves it, and no task of
//! the backup is one nobody scheduled. A restore into a running server's directory is
//! refused and changes nothing.
//!
//! Guards against a backup that copies the database file under a running writer (a
//! torn or stale store) and a restore that pulls a store from under a server.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use common::run::run_env;
use common::{Api, start_server, task_path};
use serde_json::json;

const QUEUE: &str = "backup.q";

#[test]
fn a_backup_under_load_restores_every_task_answered_before_it() {
    let source = start_server();
    let (answered_tx, answered) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let (api, answered_tx, stop) =
                (Api::with_timeout(source.url(), Duration::from_secs(10)), answered_tx.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                for n in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let key = format!("w{writer}-{n}");
                    let body = json!({"delay": "1h", "payload": {"writer": writer, "n": n}, "tags": ["backup"]});
                    if api.put(&task_path(QUEUE, &key), body).status == 201 {
                        let _ = answered_tx.send(key);
                    }
                }
            })
        })
        .collect();
    drop(answered_tx);
    let mut before = HashSet::new();
    while before.len() < 300 {
        before.insert(answered.recv_timeout(Duration::from_secs(60)).expect("schedules answered"));
    }
    while let Ok(key) = answered.try_recv() {
        before.insert(key);
    }

    let files = tempfile::tempdir().expect("a temporary directory");
    let file = files.path().join("punctual.backup");
    let data = source.data_dir();
    let (data, file_arg) = (data.to_str().expect("a UTF-8 path"), file.to_str().expect("a UTF-8 path"));
    let out = run_env(&["backup", "--data", data, "--to", file_arg, "--json"], &[]);
    out.expect_code(0, "punctual backup under load");
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().expect("a writer");
    }
    let taken = out.json();
    assert!(taken["tasks"].as_u64().expect("tasks") >= before.len() as u64, "{taken}");

    // Into a running server's directory: refused, and its store is untouched.
    let mut target = start_server();
    let target_data = target.data_dir();
    let target_data = target_data.to_str().expect("a UTF-8 path");
    let refused = run_env(&["restore", "--from", file_arg, "--data", target_data, "--replace"], &[]);
    refused.expect_code(1, "a restore into a running server's directory");
    refused.expect_contains(&["in use by a running punctual"], "the refusal says why");
    Api::of(&target).get("/readyz").expect(200, "the running server goes on");

    target.terminate().expect("stop the target");
    let restored = run_env(&["restore", "--from", file_arg, "--data", target_data, "--replace"], &[]);
    restored.expect_code(0, "punctual restore");
    restored.expect_contains(&[&format!("restored {} tasks", taken["tasks"])], "what was restored");
    target.restart().expect("the target starts on the restored store");

    let (from, to) = (Api::of(&source), Api::of(&target));
    for key in &before {
        let original = from.get(&task_path(QUEUE, key));
        let copy = to.get(&task_path(QUEUE, key));
        assert_eq!(copy.status, 200, "{key} answered before the backup, missing after the restore");
        assert_eq!(copy.json, original.json, "{key} differs after the restore");
    }
    let restored_keys = to.stored_keys(QUEUE);
    assert_eq!(restored_keys.len() as u64, taken["tasks"].as_u64().expect("tasks"));
    for key in &restored_keys {
        let original = from.get(&task_path(QUEUE, key));
        assert_eq!(original.status, 200, "{key} is in the backup but was never scheduled");
    }
}

/// `punctual backup --store URL`: a Redis store exported into one file, restored into a
/// directory whose server answers every task as the server on Redis does.
#[test]
fn a_redis_store_is_exported_to_a_file_that_restores() {
    let redis = punctual_testkit::redis::server();
    let on_redis = common::start(common::server_builder().store(redis.url()));
    let api = Api::of(&on_redis);
    for n in 0..50 {
        let body = json!({"delay": format!("{}m", n + 1), "payload": {"n": n}, "tags": ["export"]});
        api.put(&task_path(QUEUE, &format!("r-{n}")), body).expect(201, "a task on Redis");
    }
    api.post(&format!("/v1/queues/{QUEUE}/pause"), json!({})).expect(200, "a pause");

    let files = tempfile::tempdir().expect("a temporary directory");
    let file = files.path().join("redis.backup");
    let file_arg = file.to_str().expect("a UTF-8 path");
    let out = run_env(&["backup", "--store", &redis.url(), "--to", file_arg, "--json"], &[]);
    out.expect_code(0, "punctual backup --store");
    assert_eq!(out.json()["tasks"], 50, "{}", out.stdout);
    let leftovers: Vec<_> = std::fs::read_dir(files.path()).expect("the directory").collect();
    assert_eq!(leftovers.len(), 1, "only the file is left beside it: {leftovers:?}");
    run_env(&["backup", "--store", &redis.url(), "--to", file_arg], &[])
        .expect_code(1, "a backup over an existing file")
        .expect_contains(&["exists"], "the refusal says why");

    let mut target = common::start_server();
    target.terminate().expect("stop the target");
    let data = target.data_dir();
    let data = data.to_str().expect("a UTF-8 path");
    run_env(&["restore", "--from", file_arg, "--data", data, "--replace"], &[]).expect_code(0, "punctual restore");
    target.restart().expect("the target starts on the restored export");
    let restored = Api::of(&target);
    assert_eq!(restored.stored_tasks(QUEUE), api.stored_tasks(QUEUE), "every task as the server on Redis has it");
    assert!(crate::migrate::paused(&restored, QUEUE), "the pause came along");
}
