//! Crash safety over HTTP: a server killed with SIGKILL in the middle of a load of
//! schedule requests, then restarted on the same data directory.
//!
//! Guards against a server that answers 2xx before the write is durable (group commit
//! acknowledging too early, a write buffered in memory), a batch whose items are
//! acknowledged but stored only in part, and a restart that does not bring back what
//! was on disk (tasks present but never handed out again).

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use common::{Api, now_ms, start_server};
use serde_json::{Value, json};

const WRITERS: usize = 4;
/// Acknowledged tasks to wait for before the kill.
const KILL_AFTER: usize = 600;
/// An upper bound on each writer's requests, so the load stops by itself.
const MAX_REQUESTS: usize = 20_000;

/// One writer: single PUTs and, every fifth request, a batch of 20; sends the key and
/// payload number of every task the server acknowledged, until the server is gone.
fn writer(url: String, id: usize, acked: mpsc::Sender<(String, u64)>, stop: Arc<AtomicBool>) {
    let api = Api::with_timeout(url, Duration::from_secs(10));
    for i in 0..MAX_REQUESTS {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Every third task is due a little later, so the timer's state counts too.
        let timing = |n: usize| if n.is_multiple_of(3) { json!({"due_at": now_ms() + 1_500}) } else { json!({}) };
        if i % 5 == 4 {
            let items: Vec<Value> = (0..20)
                .map(|j| {
                    let mut item = timing(j);
                    item["key"] = json!(format!("w{id}-r{i}-b{j}"));
                    item["payload"] = json!({"n": i * 100 + j});
                    item
                })
                .collect();
            let Ok(resp) =
                api.try_call(reqwest::Method::POST, "/v1/queues/crash.q/tasks", Some(&json!({"tasks": items})))
            else {
                return;
            };
            if resp.status == 200 {
                for (j, result) in resp.json["results"].as_array().into_iter().flatten().enumerate() {
                    if result["outcome"] == "created" || result["outcome"] == "replaced" {
                        let _ = acked.send((format!("w{id}-r{i}-b{j}"), (i * 100 + j) as u64));
                    }
                }
            }
        } else {
            let key = format!("w{id}-r{i}");
            let mut body = timing(i);
            body["payload"] = json!({"n": i * 100});
            let Ok(resp) = api.try_call(reqwest::Method::PUT, &common::task_path("crash.q", &key), Some(&body)) else {
                return;
            };
            if resp.status == 200 || resp.status == 201 {
                let _ = acked.send((key, (i * 100) as u64));
            }
        }
    }
}

#[test]
fn every_acknowledged_task_survives_sigkill_mid_load() {
    let mut server = start_server();
    assert!(server.data_dir().is_dir(), "the server creates its --data directory");
    let (sender, receiver) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|id| {
            let (url, sender, stop) = (server.url(), sender.clone(), Arc::clone(&stop));
            thread::spawn(move || writer(url, id, sender, stop))
        })
        .collect();
    drop(sender);

    let mut acked: HashMap<String, u64> = HashMap::new();
    while acked.len() < KILL_AFTER {
        match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok((key, n)) => {
                acked.insert(key, n);
            }
            Err(e) => {
                panic!("only {} tasks acknowledged before the load stopped ({e})\n{}", acked.len(), server.logs())
            }
        }
    }
    server.kill().expect("SIGKILL the server");
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().expect("a writer thread");
    }
    // Acknowledgements that were on the wire when the server died count too.
    acked.extend(receiver.try_iter());
    eprintln!("{} tasks acknowledged before SIGKILL", acked.len());

    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    let api = Api::of(&server);
    let mut leased: HashMap<String, Value> = HashMap::new();
    for _round in 0..1_000 {
        let leases = api.lease("crash.q", json!({"max": 1000, "wait": "3s", "lease": "10m"}));
        if leases.is_empty() {
            break;
        }
        for lease in leases {
            let key = lease["task"]["key"].as_str().expect("key").to_owned();
            leased.insert(key, lease["task"]["payload"].clone());
        }
    }
    let mut missing: Vec<&String> = acked.keys().filter(|k| !leased.contains_key(*k)).collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged tasks were not leased after the restart, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(10)]
    );
    for (key, n) in &acked {
        assert_eq!(leased[key], json!({"n": n}), "the payload of {key} survived");
    }
}

/// One worker: leases up to 20 tasks at a time and acks each `done`, one by one or all
/// in one `POST /v1/acks` (every other round); sends the key of every task whose ack
/// the server acknowledged (204), until the server is gone or nothing is left.
fn acker(url: String, acked: mpsc::Sender<String>, stop: Arc<AtomicBool>) {
    let api = Api::with_timeout(url, Duration::from_secs(10));
    for round in 0..MAX_REQUESTS {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(resp) = api.try_call(reqwest::Method::POST, "/v1/queues/ack.q/lease", Some(&json!({"max": 20}))) else {
            return;
        };
        let leases = resp.json["leases"].as_array().cloned().unwrap_or_default();
        if leases.is_empty() {
            return;
        }
        let id_and_key = |l: &Value| (l["lease_id"].as_str().unwrap_or_default().to_owned(), l["task"]["key"].clone());
        if round % 2 == 0 {
            let acks: Vec<Value> =
                leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
            let Ok(resp) = api.try_call(reqwest::Method::POST, "/v1/acks", Some(&json!({"acks": acks}))) else {
                return;
            };
            for (lease, result) in leases.iter().zip(resp.json["results"].as_array().into_iter().flatten()) {
                if result["status"] == 204 {
                    let _ = acked.send(id_and_key(lease).1.as_str().unwrap_or_default().to_owned());
                }
            }
        } else {
            for lease in &leases {
                let (id, key) = id_and_key(lease);
                let path = format!("/v1/leases/{}/ack", common::enc(&id));
                let Ok(resp) = api.try_call(reqwest::Method::POST, &path, Some(&json!({"outcome": "done"}))) else {
                    return;
                };
                if resp.status == 204 {
                    let _ = acked.send(key.as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
}

#[test]
fn an_acknowledged_done_or_cancel_is_not_undone_by_sigkill() {
    const TASKS: usize = 3_000;
    let mut server = start_server();
    let api = Api::of(&server);
    for chunk in 0..TASKS / 1_000 {
        let due: Vec<Value> = (0..1_000).map(|i| json!({"key": format!("t{}", chunk * 1_000 + i)})).collect();
        api.post("/v1/queues/ack.q/tasks", json!({"tasks": due})).expect(200, "batch of due tasks");
        let later: Vec<Value> =
            (0..1_000).map(|i| json!({"key": format!("c{}", chunk * 1_000 + i), "delay": "1h"})).collect();
        api.post("/v1/queues/cancel.q/tasks", json!({"tasks": later})).expect(200, "batch of later tasks");
    }

    let (sender, receiver) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads: Vec<_> = (0..WRITERS - 1)
        .map(|_| {
            let (url, sender, stop) = (server.url(), sender.clone(), Arc::clone(&stop));
            thread::spawn(move || acker(url, sender, stop))
        })
        .collect();
    // One thread cancels the later tasks, one by one.
    threads.push({
        let (api, sender, stop) = (Api::with_timeout(server.url(), Duration::from_secs(10)), sender, Arc::clone(&stop));
        thread::spawn(move || {
            for i in 0..TASKS {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let key = format!("c{i}");
                match api.try_call(reqwest::Method::DELETE, &common::task_path("cancel.q", &key), None) {
                    Ok(resp) if resp.status == 204 => {
                        let _ = sender.send(key);
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        })
    });

    let mut acked: Vec<String> = Vec::new();
    while acked.len() < KILL_AFTER {
        match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(key) => acked.push(key),
            Err(e) => panic!("only {} acks acknowledged before the load stopped ({e})\n{}", acked.len(), server.logs()),
        }
    }
    server.kill().expect("SIGKILL the server");
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("a worker thread");
    }
    acked.extend(receiver.try_iter());
    eprintln!("{} dones and cancels acknowledged before SIGKILL", acked.len());

    server.restart().unwrap_or_else(|e| panic!("restart on the same data dir: {e}"));
    let api = Api::of(&server);
    let mut revived = Vec::new();
    for key in &acked {
        let queue = if key.starts_with('c') { "cancel.q" } else { "ack.q" };
        let resp = api.task(queue, key);
        if resp.status != 404 {
            revived.push(format!("{queue}/{key}: {}", resp.status));
        }
    }
    assert!(
        revived.is_empty(),
        "{} of {} acknowledged dones and cancels came back after SIGKILL, e.g. {:?}",
        revived.len(),
        acked.len(),
        &revived[..revived.len().min(10)]
    );
}
