//! `kill -9` of `punctual serve` ten times in a row (more on request, see below) while
//! clients schedule, lease and acknowledge without pause, on the embedded store and on
//! Redis. Guards against the seeds' losses (a task taken by a consumer that dies is
//! gone, an acknowledged write not yet durable) and against duplicates beyond
//! at-least-once: a task may fire again only if its first firing's ack was not
//! confirmed, because the server died first.
//!
//! Real processes: the real binary, restarted on the same data directory (or Redis),
//! a producer and a pull worker talking HTTP to it.
//!
//! Larger runs: `PUNCTUAL_CHAOS_KILLS=50` kills 50 times instead of 10 (each kill comes
//! after the server took 100–300 more acknowledged schedules, so the load runs longer in
//! proportion); RELIABILITY.md quotes such runs.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{Api, Stop, server_builder, start};
use punctual_testkit::poll_until;
use punctual_testkit::server::{ServerBuilder, ServerProcess};
use serde_json::{Value, json};

/// Kills per run unless `PUNCTUAL_CHAOS_KILLS` says otherwise.
const DEFAULT_KILLS: usize = 10;

/// How many times to kill the server: `PUNCTUAL_CHAOS_KILLS`, else [`DEFAULT_KILLS`].
fn kills() -> usize {
    match std::env::var("PUNCTUAL_CHAOS_KILLS") {
        Ok(text) => text
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .unwrap_or_else(|| panic!("PUNCTUAL_CHAOS_KILLS must be a whole number of at least 1, not '{text}'")),
        Err(_) => DEFAULT_KILLS,
    }
}

/// What the clients saw, shared with the test.
#[derive(Default)]
struct Seen {
    /// Keys whose schedule was answered with success.
    acknowledged: Mutex<HashSet<String>>,
    /// Key → how many times a lease handed it out.
    fired: Mutex<HashMap<String, u32>>,
    /// Keys fired whose ack was not confirmed (the server died first).
    unconfirmed: Mutex<HashSet<String>>,
}

/// The server's current address: a restart may move it to another port.
type Url = Arc<Mutex<String>>;

fn api(url: &Url) -> Api {
    Api::with_timeout(url.lock().unwrap().clone(), Duration::from_secs(5))
}

/// Schedules batches of 20 tasks due now until `stop`; a failed call is retried with new
/// keys (its tasks may or may not exist: only acknowledged ones count).
fn producer(url: Url, stop: Stop, seen: Arc<Seen>) {
    let mut n = 0;
    while !stop.is_stopped() {
        let keys: Vec<String> = (n..n + 20).map(|i| format!("t-{i}")).collect();
        n += 20;
        let tasks: Vec<Value> = keys.iter().map(|k| json!({"key": k})).collect();
        match api(&url).try_call(reqwest::Method::POST, "/v1/queues/q/tasks", Some(&json!({ "tasks": tasks }))) {
            Ok(resp) if resp.status == 200 => {
                let results = resp.json["results"].as_array().unwrap();
                assert!(results.iter().all(|r| r["outcome"] == "created"), "{}", resp.text);
                seen.acknowledged.lock().unwrap().extend(keys);
            }
            // The server is down (killed, restarting): try again shortly.
            _ => stop.back_off(Duration::from_millis(20)),
        }
    }
}

/// Leases up to 50, records them as fired, acks them all; until `stop` and nothing is
/// left to fire.
fn worker(url: Url, stop: Stop, seen: Arc<Seen>) {
    loop {
        let leased = api(&url).try_call(
            reqwest::Method::POST,
            "/v1/queues/q/lease",
            Some(&json!({"max": 50, "lease": "2s", "wait": "200ms"})),
        );
        let Ok(leased) = leased.map_err(|_| ()).and_then(|r| if r.status == 200 { Ok(r) } else { Err(()) }) else {
            stop.back_off(Duration::from_millis(20));
            continue;
        };
        let leases = leased.json["leases"].as_array().cloned().unwrap_or_default();
        if leases.is_empty() {
            if stop.is_stopped() {
                return;
            }
            continue;
        }
        let keys: Vec<String> = leases.iter().map(|l| l["task"]["key"].as_str().unwrap().to_owned()).collect();
        {
            let mut fired = seen.fired.lock().unwrap();
            for key in &keys {
                *fired.entry(key.clone()).or_default() += 1;
            }
        }
        let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
        let statuses: Vec<u64> =
            match api(&url).try_call(reqwest::Method::POST, "/v1/acks", Some(&json!({ "acks": acks }))) {
                Ok(resp) if resp.status == 200 => {
                    resp.json["results"].as_array().unwrap().iter().map(|r| r["status"].as_u64().unwrap()).collect()
                }
                _ => vec![0; keys.len()],
            };
        let mut unconfirmed = seen.unconfirmed.lock().unwrap();
        for (key, status) in keys.into_iter().zip(statuses) {
            if status != 204 {
                unconfirmed.insert(key);
            }
        }
    }
}

/// Runs the load against a server from `builder`, kills it [`kills`] times, drains,
/// and checks what was lost and duplicated.
fn kill_under_load(name: &str, builder: ServerBuilder) {
    let kills = kills();
    let mut server: ServerProcess = start(builder);
    let url: Url = Arc::new(Mutex::new(server.url()));
    let (stop_producing, stop_working) = (Stop::default(), Stop::default());
    let seen = Arc::new(Seen::default());
    let producer = thread::spawn({
        let (url, stop, seen) = (Arc::clone(&url), stop_producing.clone(), Arc::clone(&seen));
        move || producer(url, stop, seen)
    });
    let worker = thread::spawn({
        let (url, stop, seen) = (Arc::clone(&url), stop_working.clone(), Arc::clone(&seen));
        move || worker(url, stop, seen)
    });
    let mut recoveries = Vec::new();
    for round in 0..kills {
        // Each kill comes once this run of the server has taken load: more schedules
        // acknowledged and more tasks fired, by an amount that varies with the round so
        // that the kills fall at different points of the clients' calls.
        let more = 100 + 50 * (round % 5);
        let (acknowledged, fired) = (seen.acknowledged.lock().unwrap().len(), seen.fired.lock().unwrap().len());
        let loaded = poll_until(Duration::from_secs(30), || {
            let now = (seen.acknowledged.lock().unwrap().len(), seen.fired.lock().unwrap().len());
            (now.0 >= acknowledged + more && now.1 >= fired + more / 2).then_some(())
        });
        assert!(loaded.is_some(), "kill -9 #{}: the load did not reach the server within 30 s", round + 1);
        let killed = Instant::now();
        server.restart().unwrap_or_else(|e| panic!("restart after kill -9 #{}: {e}", round + 1));
        recoveries.push(killed.elapsed());
        *url.lock().unwrap() = server.url();
    }
    stop_producing.stop();
    producer.join().unwrap();
    // Drain: leases the killed servers held come back when they expire (2 s).
    let acknowledged = seen.acknowledged.lock().unwrap().clone();
    // Checked below, with what never fired.
    let _ = poll_until(Duration::from_secs(60), || {
        let fired = seen.fired.lock().unwrap();
        acknowledged.iter().all(|k| fired.contains_key(k)).then_some(())
    });
    stop_working.stop();
    worker.join().unwrap();

    let fired = seen.fired.lock().unwrap();
    let unconfirmed = seen.unconfirmed.lock().unwrap();
    let lost: Vec<&String> = acknowledged.iter().filter(|k| !fired.contains_key(*k)).collect();
    let duplicates: Vec<&String> = fired.iter().filter(|(_, n)| **n > 1).map(|(k, _)| k).collect();
    let unexplained: Vec<&&String> = duplicates.iter().filter(|k| !unconfirmed.contains(**k)).collect();
    recoveries.sort_unstable();
    let (median, slowest) = (recoveries[recoveries.len() / 2], recoveries[recoveries.len() - 1]);
    println!(
        "{name}: {kills} × kill -9 under load; {} tasks acknowledged, {} fired, lost {}, fired twice {} \
         (all among the {} whose ack the dead server had not confirmed: {}); restart → healthy in {median:?} (median), at most {slowest:?}",
        acknowledged.len(),
        fired.len(),
        lost.len(),
        duplicates.len(),
        unconfirmed.len(),
        unexplained.is_empty(),
    );
    assert!(acknowledged.len() > 1_000, "the load ran: {} acknowledged", acknowledged.len());
    assert!(lost.is_empty(), "acknowledged tasks never fired: {} (first {:?})", lost.len(), lost.first());
    assert!(unexplained.is_empty(), "fired twice though its ack was confirmed: {unexplained:?}");
}

#[test]
fn kills_under_load_on_the_embedded_store_lose_nothing() {
    kill_under_load("embedded", server_builder());
}

#[test]
fn kills_under_load_on_redis_lose_nothing() {
    let redis = punctual_testkit::redis::server();
    kill_under_load("redis", server_builder().store(redis.url()));
}
