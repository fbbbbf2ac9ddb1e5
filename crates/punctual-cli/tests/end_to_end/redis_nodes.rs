//! Several `punctual serve` processes on one Redis share the work. Guards against the
//! failures of the seeds' designs: one task fired by two nodes (keyspace events are
//! broadcast to every subscriber), tasks lost when a node dies holding them (no ack),
//! and duplicates beyond what a dead node held.
//!
//! Real processes throughout: a private `redis-server` on a free port, three servers
//! of the real binary, pull workers in this process talking HTTP to them.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use punctual_testkit::redis::{self, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

const QUEUE: &str = "order.cancel";
const TASKS: usize = 10_000;
const DEADLINE: Duration = Duration::from_secs(120);

fn node(redis: &RedisServer) -> ServerProcess {
    start(server_builder().store(redis.url()))
}

/// Schedules `TASKS` tasks through `api`, due over the next second or so.
fn schedule_all(api: &Api) {
    for chunk in 0..TASKS / 1000 {
        let tasks: Vec<Value> = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                json!({"key": format!("order-{n}"), "delay": format!("{}ms", n % 1000)})
            })
            .collect();
        let answer = api.post(&format!("/v1/queues/{QUEUE}/tasks"), json!({ "tasks": tasks }));
        let body = answer.expect(200, "schedule a batch");
        let created = body["results"].as_array().unwrap().iter().filter(|r| r["outcome"] == "created").count();
        assert_eq!(created, 1000, "every task of the batch is created: {body}");
    }
}

/// Every firing seen by the workers: key → how many times it was handed out.
#[derive(Default)]
struct Fired {
    counts: Mutex<HashMap<String, u32>>,
}

impl Fired {
    fn record(&self, keys: &[String]) {
        let mut counts = self.counts.lock().unwrap();
        for key in keys {
            *counts.entry(key.clone()).or_default() += 1;
        }
    }
    fn distinct(&self) -> usize {
        self.counts.lock().unwrap().len()
    }
}

/// One pull worker on one node: leases up to 100, records them as fired, acks them
/// all. Stops when every task has fired, at the deadline, or when its node is gone;
/// returns the keys it had leased but could not ack.
fn worker(api: Api, fired: Arc<Fired>, stop_after_batches: Option<usize>) -> Vec<String> {
    let started = Instant::now();
    let mut batches = 0;
    while fired.distinct() < TASKS && started.elapsed() < DEADLINE {
        let Ok(answer) = api.try_call(
            reqwest::Method::POST,
            &format!("/v1/queues/{QUEUE}/lease"),
            Some(&json!({"max": 100, "lease": "2s", "wait": "1s"})),
        ) else {
            return Vec::new();
        };
        if answer.status != 200 {
            return Vec::new();
        }
        let leases = answer.json["leases"].as_array().cloned().unwrap_or_default();
        let keys: Vec<String> = leases.iter().map(|l| l["task"]["key"].as_str().unwrap().to_owned()).collect();
        fired.record(&keys);
        batches += 1;
        if stop_after_batches.is_some_and(|n| batches >= n) && !keys.is_empty() {
            // Hold this batch un-acked: the test kills this worker's node now.
            return keys;
        }
        if leases.is_empty() {
            continue;
        }
        let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
        let Ok(acked) = api.try_call(reqwest::Method::POST, "/v1/acks", Some(&json!({ "acks": acks }))) else {
            return keys;
        };
        let statuses: Vec<u64> =
            acked.json["results"].as_array().unwrap().iter().map(|r| r["status"].as_u64().unwrap()).collect();
        assert!(statuses.iter().all(|s| *s == 204), "every ack of a live lease succeeds: {statuses:?}");
    }
    Vec::new()
}

#[test]
fn three_nodes_on_one_redis_fire_each_task_exactly_once() {
    let redis = redis::server();
    let nodes: Vec<ServerProcess> = (0..3).map(|_| node(&redis)).collect();
    schedule_all(&Api::of(&nodes[0]));
    let fired = Arc::new(Fired::default());
    let workers: Vec<_> = nodes
        .iter()
        .map(|n| {
            let (api, fired) = (Api::of(n), Arc::clone(&fired));
            thread::spawn(move || worker(api, fired, None))
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let counts = fired.counts.lock().unwrap();
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    println!("3 nodes, {TASKS} tasks: fired {} distinct, {} more than once", counts.len(), twice.len());
    assert_eq!(counts.len(), TASKS, "every task fired");
    assert!(twice.is_empty(), "no task fired twice: {twice:?}");
}

#[test]
fn a_node_killed_mid_run_loses_nothing_and_duplicates_only_what_it_held() {
    let redis = redis::server();
    let mut nodes: Vec<ServerProcess> = (0..3).map(|_| node(&redis)).collect();
    schedule_all(&Api::of(&nodes[0]));
    let fired = Arc::new(Fired::default());
    let victim = thread::spawn({
        let (api, fired) = (Api::of(&nodes[2]), Arc::clone(&fired));
        move || worker(api, fired, Some(5))
    });
    let survivors: Vec<_> = nodes[..2]
        .iter()
        .map(|n| {
            let (api, fired) = (Api::of(n), Arc::clone(&fired));
            thread::spawn(move || worker(api, fired, None))
        })
        .collect();
    let held: HashSet<String> = victim.join().expect("victim worker").into_iter().collect();
    assert!(!held.is_empty(), "the victim's node held leases when it was killed");
    nodes[2].kill().expect("SIGKILL the node");
    let killed_at = Instant::now();
    for w in survivors {
        w.join().expect("worker");
    }
    let counts = fired.counts.lock().unwrap();
    let twice: HashSet<String> = counts.iter().filter(|(_, n)| **n > 1).map(|(k, _)| k.clone()).collect();
    println!(
        "node killed holding {} leases: all {} tasks fired {:?} after the kill; {} fired twice, all among those held",
        held.len(),
        counts.len(),
        killed_at.elapsed(),
        twice.len()
    );
    assert_eq!(counts.len(), TASKS, "every task fired, including those the killed node held");
    assert!(twice.is_subset(&held), "duplicates only among the killed node's leases: {:?}", twice.difference(&held));
    assert!(counts.values().all(|n| *n <= 2), "no task fired more than twice");
}
