//! Graceful shutdown: SIGTERM makes the server exit with status 0, and nothing it
//! acknowledged is lost.
//!
//! Guards against a server that dies on SIGTERM without flushing (acknowledged writes
//! lost), exits non-zero (supervisors then report a crash on every deploy), or hangs on
//! an open long poll instead of exiting.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use common::{Api, now_ms, server_builder, start, start_server, task_path};
use serde_json::json;

/// Acknowledged tasks to wait for before SIGTERM.
const TERMINATE_AFTER: usize = 100;
const MAX_REQUESTS: usize = 5_000;

#[test]
fn sigterm_under_light_load_exits_zero_and_loses_nothing() {
    let mut server = start_server();
    let (sender, receiver) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|id| {
            let (api, sender, stop) =
                (Api::with_timeout(server.url(), Duration::from_secs(10)), sender.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                for i in 0..MAX_REQUESTS {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let key = format!("w{id}-{i}");
                    let body = json!({"delay": "1h", "payload": {"i": i}});
                    match api.try_call(reqwest::Method::PUT, &task_path("term.q", &key), Some(&body)) {
                        Ok(resp) if resp.status == 201 => {
                            let _ = sender.send(key);
                        }
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    drop(sender);
    let mut acked = HashSet::new();
    while acked.len() < TERMINATE_AFTER {
        let key = receiver.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| {
            panic!("only {} tasks acknowledged before the load stopped ({e})\n{}", acked.len(), server.logs())
        });
        acked.insert(key);
    }

    let status = server.terminate().unwrap_or_else(|e| panic!("SIGTERM: {e}"));
    stop.store(true, Ordering::Relaxed);
    assert!(status.success(), "exit status after SIGTERM: {status}\n{}", server.logs());
    for writer in writers {
        writer.join().expect("a writer thread");
    }
    acked.extend(receiver.try_iter());

    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    let api = Api::of(&server);
    let mut stored = HashSet::new();
    let mut cursor: Option<String> = None;
    for _page in 0..1_000 {
        let mut path = "/v1/queues/term.q/tasks?limit=500".to_owned();
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={}", common::enc(cursor)));
        }
        let resp = api.get(&path);
        resp.expect(200, "list after the restart");
        for task in resp.json["tasks"].as_array().expect("tasks") {
            stored.insert(task["key"].as_str().expect("key").to_owned());
        }
        match resp.json["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let mut lost: Vec<&String> = acked.difference(&stored).collect();
    lost.sort();
    assert!(lost.is_empty(), "{} of {} acknowledged tasks lost over SIGTERM: {lost:?}", lost.len(), acked.len());
}

#[test]
fn sigterm_with_an_open_long_poll_and_a_live_lease_exits_zero_within_the_grace_period() {
    let mut server = start(server_builder().args(["--grace-period", "3s"]));
    let api = Api::of(&server);
    api.create("q", "leased", json!({"payload": "in flight"}));
    api.create("q", "later", json!({"delay": "1h"}));
    api.lease_one("q");
    let poller = {
        let api = Api::with_timeout(server.url(), Duration::from_secs(60));
        thread::spawn(move || api.try_call(reqwest::Method::POST, "/v1/queues/q/lease", Some(&json!({"wait": "30s"}))))
    };
    // Whether the poll is already open when the signal arrives is a race; the checks
    // below hold either way, and it is open in nearly every run.
    api.get("/healthz").expect(200, "healthz");

    let signalled = now_ms();
    let status = server.terminate().unwrap_or_else(|e| panic!("SIGTERM: {e}"));
    let took = now_ms() - signalled;
    assert!(status.success(), "exit status after SIGTERM: {status}\n{}", server.logs());
    assert!(took < 3_000 + 2_000, "exited {took} ms after SIGTERM, beyond the grace period of 3 s");
    if let Ok(resp) = poller.join().expect("the poller thread") {
        let leases = resp.json["leases"].as_array().map(Vec::len);
        assert!(resp.status == 200 && leases == Some(0), "an open long poll ends without a lease: {}", resp.text);
    }

    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    let api = Api::of(&server);
    for key in ["leased", "later"] {
        api.task("q", key).expect(200, &format!("{key} survives SIGTERM"));
    }
    assert_eq!(api.task("q", "leased").json["payload"], "in flight");
}

#[test]
fn sigint_exits_zero_and_loses_nothing() {
    let mut server = start_server();
    let api = Api::of(&server);
    api.create("q", "k", json!({"delay": "1h", "payload": [1]}));
    let status = server.interrupt().unwrap_or_else(|e| panic!("SIGINT: {e}"));
    assert!(status.success(), "exit status after SIGINT: {status}\n{}", server.logs());
    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    assert_eq!(Api::of(&server).task("q", "k").json["payload"], json!([1]), "the task survives SIGINT");
}
