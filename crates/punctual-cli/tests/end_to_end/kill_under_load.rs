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

use common::{Api, pull_client, server_builder, start};
use punctual_client::ClientError;
use punctual_testkit::poll_until;
use punctual_testkit::pull::{AckEnd, Acks, Call, Lease, Next, PullLoop, Stop, StopWhen, Tally, Target};
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

impl Tally for Seen {
    fn leased(&self, leases: &[Lease]) {
        let mut fired = self.fired.lock().unwrap();
        for lease in leases {
            *fired.entry(lease.key.clone()).or_default() += 1;
        }
    }

    fn acked(&self, leases: &[Lease], ends: &[AckEnd], _acked_ms: i64) {
        let mut unconfirmed = self.unconfirmed.lock().unwrap();
        for (lease, end) in leases.iter().zip(ends) {
            if *end != AckEnd::Confirmed {
                unconfirmed.insert(lease.key.clone());
            }
        }
    }

    /// The server is down (killed, restarting): a lease is tried again shortly, and an
    /// ack's tasks stay unconfirmed.
    fn failed(&self, call: Call, _error: &ClientError, _took: Duration) -> Next {
        Next::BackOff(if call == Call::Lease { Duration::from_millis(20) } else { Duration::ZERO })
    }
}

/// The worker: leases up to 50 (2 s leases), records them as fired, acks them all;
/// until `stop` and nothing is left to fire.
fn worker() -> PullLoop {
    PullLoop {
        queue: "q".into(),
        max: 50,
        lease: Some(Duration::from_secs(2)),
        wait: Duration::from_millis(200),
        acks: Acks::Batch,
        stop_when: StopWhen::Empty,
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
    let target = Target::new(pull_client(&server.url(), Duration::from_secs(5)));
    let worker = worker().on_thread(target.clone(), stop_working.clone(), Arc::clone(&seen));
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
        target.point_at(pull_client(&server.url(), Duration::from_secs(5)));
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
