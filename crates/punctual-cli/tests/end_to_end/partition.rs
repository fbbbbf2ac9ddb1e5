//! A network partition: one of two servers on one Redis cut off from Redis while it
//! holds leases. Guards against the split-brain failures of the seeds' designs: a
//! node that keeps handing out work it can no longer account for, tasks stranded with
//! the node that holds them, and a task completed twice when the stranded node's acks
//! arrive after the network heals.
//!
//! Real processes and a real network path: node A runs in a network namespace made by
//! the test (`common::netns`), reaching Redis over one veth pair and reached by the test
//! over another; cutting the first drops A's Redis packets in silence while the test
//! still talks to A. Node B and a private `redis-server` run here.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::netns::Namespace;
use common::*;
use punctual_testkit::poll_until;
use punctual_testkit::redis::{self, Persistence};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

const QUEUE: &str = "work";
const TASKS: usize = 300;
/// The tasks node A leases before the cut.
const HELD: usize = 50;
/// Both servers' `[redis] timeout`.
const REDIS_TIMEOUT: Duration = Duration::from_secs(1);
/// The leases A holds through the cut.
const LEASE: &str = "3s";
/// The link the test reaches A over.
const HTTP_LINK: usize = 0;
/// The link A reaches Redis over.
const REDIS_LINK: usize = 1;

fn config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, format!("[redis]\ntimeout = \"{}s\"\n", REDIS_TIMEOUT.as_secs())).unwrap();
    config
}

/// Leases up to `max` tasks with `wait` 0: the leases, or the 503 "unavailable".
fn lease(api: &Api, max: usize, lease: &str) -> Result<Vec<Value>, Resp> {
    let body = json!({"max": max, "lease": lease, "wait": "0s"});
    let resp = api.call(reqwest::Method::POST, &format!("/v1/queues/{QUEUE}/lease"), Some(&body));
    match resp.status {
        200 => Ok(resp.json["leases"].as_array().cloned().unwrap_or_default()),
        _ => Err(resp),
    }
}

/// Acks `leases` done in one call: each lease's status, or the whole call's 503.
fn ack(api: &Api, leases: &[Value]) -> Result<Vec<u64>, Resp> {
    let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
    let resp = api.call(reqwest::Method::POST, "/v1/acks", Some(&json!({ "acks": acks })));
    match resp.status {
        200 => Ok(resp.json["results"].as_array().unwrap().iter().map(|r| r["status"].as_u64().unwrap()).collect()),
        _ => Err(resp),
    }
}

fn key(lease: &Value) -> String {
    lease["task"]["key"].as_str().unwrap().to_owned()
}

#[test]
fn a_node_cut_off_from_redis_mid_lease_stops_and_the_other_finishes_its_tasks_once() {
    let net = Namespace::new(2);
    let redis_ip = net.link(REDIS_LINK).outside_ip.to_string();
    let redis =
        redis::server_with(Persistence::AofAlways, &["--bind", "127.0.0.1", &redis_ip, "--protected-mode", "no"]);
    let dir = tempfile::tempdir().unwrap();
    let config = config(&dir);
    let node_a: ServerProcess = start(
        server_builder()
            .wrapper("ip", ["netns", "exec", net.name()])
            .host(net.link(HTTP_LINK).inside_ip)
            .store(format!("redis://{redis_ip}:{}", redis.port()))
            .arg("--config")
            .arg(&config),
    );
    let node_b = start(server_builder().store(redis.url()).arg("--config").arg(&config));
    let (a, b) = (Api::of(&node_a), Api::of(&node_b));

    let tasks: Vec<Value> = (0..TASKS).map(|i| json!({"key": format!("t-{i}")})).collect();
    b.post(&format!("/v1/queues/{QUEUE}/tasks"), json!({ "tasks": tasks })).expect(200, "schedule through B");
    let held = lease(&a, HELD, LEASE).unwrap_or_else(|r| panic!("A leases before the cut: {}", r.text));
    assert_eq!(held.len(), HELD, "A leased what it asked for");

    net.cut(REDIS_LINK);
    let cut_at = Instant::now();
    // A stops handing out work: every lease call answers 503 (or nothing) within its
    // Redis timeout, none hands out a task, for twice the lease's length.
    let mut answers = Vec::new();
    while cut_at.elapsed() < Duration::from_secs(6) {
        let started = Instant::now();
        let answer = lease(&a, 50, "10s");
        let took = started.elapsed();
        match &answer {
            Ok(leases) => assert!(leases.is_empty(), "A handed out {} tasks while cut off from Redis", leases.len()),
            Err(resp) => resp.expect_error(503, "unavailable", None, "A's lease while cut off"),
        }
        assert!(took <= REDIS_TIMEOUT + Duration::from_millis(500), "A's lease took {took:?} while cut off");
        answers.push((answer.is_err(), took));
    }
    // A's acks while cut off cannot be confirmed: 503, nothing changed.
    let acked_while_cut = ack(&a, &held);
    let refused = acked_while_cut.expect_err("A cannot confirm an ack without Redis");
    refused.expect_error(503, "unavailable", None, "A's ack while cut off");

    // B goes on: it completes every task, A's too once their leases expired.
    let mut completed: HashMap<String, u32> = HashMap::new();
    let b_started = Instant::now();
    let finished = poll_until(Duration::from_secs(30), || {
        let leases = lease(&b, 100, "10s").unwrap_or_else(|r| panic!("B's lease: {}", r.text));
        let statuses = ack(&b, &leases).unwrap_or_else(|r| panic!("B's ack: {}", r.text));
        for (lease, status) in leases.iter().zip(statuses) {
            assert_eq!(status, 204, "B's ack of {}", key(lease));
            *completed.entry(key(lease)).or_default() += 1;
        }
        (completed.len() == TASKS).then_some(())
    });
    assert!(finished.is_some(), "B completed {} of {TASKS} in 30 s:\n{}", completed.len(), node_b.logs());
    let (b_began_after, b_took) = (b_started - cut_at, b_started.elapsed());

    net.heal(REDIS_LINK);
    // A's late acks are refused: the tasks were completed by B meanwhile.
    let late = poll_until(Duration::from_secs(10), || ack(&a, &held).ok()).expect("A answers acks once healed");
    assert!(late.iter().all(|status| *status == 409), "A's late acks: {late:?}");
    let after_heal = lease(&a, 50, "10s").unwrap_or_else(|r| panic!("A leases again once healed: {}", r.text));
    assert!(after_heal.is_empty(), "nothing is left to lease: {after_heal:?}");

    assert!(completed.values().all(|n| *n == 1), "a task completed twice: {completed:?}");
    assert!(b.stored_keys(QUEUE).is_empty(), "every task completed, none left behind");
    let refusals = answers.iter().filter(|(refused, _)| *refused).count();
    let slowest = answers.iter().map(|(_, took)| *took).max().unwrap();
    println!(
        "partition: A held {HELD} leases at the cut; while cut off it answered {} lease calls ({refusals} with 503, the \
         rest empty), the slowest in {slowest:?}, and its ack got 503; B, asked \
         {b_began_after:?} after the cut, completed all {TASKS} tasks in {b_took:?}, A's {HELD} included (their \
         {LEASE} leases had expired), each once; after the heal A's {HELD} late acks \
         were refused with 409",
        answers.len()
    );
}
