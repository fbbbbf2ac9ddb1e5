//! A Redis primary failing under schedule + lease + ack load, whatever fails it over (a
//! Cluster, Sentinel): the load, the failure, and what was lost, completed twice or
//! refused. Used by `cluster_failover` and `sentinel_failover`.
//!
//! The load: two clients scheduling batches (far-future tasks that must stay stored,
//! due-now tasks that must each be leased and completed once) and one worker leasing
//! and acking, through the real `punctual` binary with a 1 s Redis timeout.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use punctual_client::ClientError;
use punctual_testkit::poll_until;
use punctual_testkit::pull::{AckEnd, Acks, Call, Lease, Next, PullLoop, Stop, StopWhen, Tally, Target};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

use super::*;

/// Far-future tasks: they must still be stored at the end.
const STORED: &str = "order.cancel";
/// Tasks due now: each must be leased at least once and completed once.
const WORK: &str = "work";

/// A server on `store` giving up on a Redis call after 1 s, confirming each write
/// with `wait_replicas` replicas.
fn node(store: &str, wait_replicas: u32, dir: &tempfile::TempDir) -> ServerProcess {
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, format!("[redis]\ntimeout = \"1s\"\nwait_replicas = {wait_replicas}\n")).unwrap();
    start(server_builder().store(store).arg("--config").arg(&config))
}

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Each acknowledged far-future key and when its answer came.
    stored: Mutex<Vec<(String, Instant)>>,
    /// Each acknowledged due-now key and when its answer came.
    work: Mutex<HashMap<String, Instant>>,
    /// Due-now key → how many times a lease handed it out.
    fired: Mutex<HashMap<String, u32>>,
    /// Due-now key → how many of its acks were confirmed (204).
    completed: Mutex<HashMap<String, u32>>,
    /// When each 503 was answered.
    refused: Mutex<Vec<Instant>>,
    /// Failures other than 503 "unavailable": the test fails on any, with the logs.
    unexpected: Mutex<Vec<String>>,
}

impl Seen {
    /// Records a 503 "unavailable", or any other failure as unexpected.
    fn refusal(&self, what: &'static str, resp: &Resp) {
        if resp.status == 503 && resp.json["error"]["code"] == "unavailable" {
            self.refused.lock().unwrap().push(Instant::now());
        } else {
            self.unexpected.lock().unwrap().push(format!("{what}: {} {}", resp.status, resp.text));
        }
    }

    /// [`Seen::refusal`] of a pull loop's call, as the harness reports it: the server
    /// must have answered.
    fn refused_call(&self, what: &'static str, error: &ClientError) {
        match error {
            ClientError::Api(e) if e.status == 503 && e.code == "unavailable" => {
                self.refused.lock().unwrap().push(Instant::now());
            }
            ClientError::Api(e) => self.unexpected.lock().unwrap().push(format!("{what}: {} {e}", e.status)),
            other => panic!("the server must answer the {what} call, not drop it: {other}"),
        }
    }

    fn acknowledged(&self) -> usize {
        self.stored.lock().unwrap().len()
    }
}

/// Schedules batches of `tasks` with keys `<prefix>-<n>` into `queue` until `stop`,
/// recording what was answered.
fn schedule_until(api: &Api, queue: &str, prefix: &str, delay: &str, stop: &Stop, seen: &Seen) {
    let mut n = 0;
    while !stop.is_stopped() {
        let keys: Vec<String> = (n..n + 25).map(|i| format!("{prefix}-{i}")).collect();
        n += 25;
        let tasks: Vec<Value> = keys.iter().map(|k| json!({"key": k, "delay": delay})).collect();
        let path = format!("/v1/queues/{queue}/tasks");
        match api.try_call(reqwest::Method::POST, &path, Some(&json!({ "tasks": tasks }))) {
            Ok(resp) if resp.status == 200 => {
                let results = resp.json["results"].as_array().unwrap();
                assert!(results.iter().all(|r| r["outcome"] == "created"), "{}", resp.text);
                let at = Instant::now();
                if queue == STORED {
                    seen.stored.lock().unwrap().extend(keys.into_iter().map(|k| (k, at)));
                } else {
                    seen.work.lock().unwrap().extend(keys.into_iter().map(|k| (k, at)));
                }
            }
            Ok(resp) => {
                seen.refusal("schedule", &resp);
                stop.back_off(Duration::from_millis(50));
            }
            Err(e) => panic!("the server must answer, not drop the call: {e}"),
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
        let mut completed = self.completed.lock().unwrap();
        for (lease, end) in leases.iter().zip(ends) {
            if *end == AckEnd::Confirmed {
                *completed.entry(lease.key.clone()).or_default() += 1;
            }
        }
    }

    fn failed(&self, call: Call, error: &ClientError, _took: Duration) -> Next {
        match call {
            Call::Lease => {
                self.refused_call("lease", error);
                Next::BackOff(Duration::from_millis(50))
            }
            Call::Ack => {
                self.refused_call("ack", error);
                Next::BackOff(Duration::ZERO)
            }
        }
    }
}

/// Leases due-now tasks (2 s leases) and acks them, until stopped and every
/// acknowledged one has been leased, or `drain_by` passes.
fn worker(seen: &Arc<Seen>, drain_by: &Arc<Mutex<Option<Instant>>>) -> PullLoop {
    let (seen, drain_by) = (Arc::clone(seen), Arc::clone(drain_by));
    let drained = move || {
        let work = seen.work.lock().unwrap();
        let fired = seen.fired.lock().unwrap();
        let past_deadline = drain_by.lock().unwrap().is_some_and(|by| Instant::now() > by);
        past_deadline || work.keys().all(|k| fired.contains_key(k))
    };
    PullLoop {
        queue: WORK.into(),
        max: 50,
        lease: Some(Duration::from_secs(2)),
        wait: Duration::from_millis(200),
        acks: Acks::Batch,
        stop_when: StopWhen::Drained(Arc::new(drained)),
    }
}

/// What a failover under load showed.
pub struct Failover {
    /// Acknowledged far-future schedules and due-now schedules.
    pub acknowledged: usize,
    /// Acknowledged keys missing afterwards (far-future: not stored; due-now: never
    /// leased), with when they were acknowledged.
    pub lost: Vec<(String, Instant)>,
    /// Due-now keys whose ack was confirmed twice: a completion the failover undid.
    pub completed_twice: Vec<String>,
    /// When the failure began.
    pub failed_at: Instant,
    /// 503 answers after the failure: how many, the first and the last (since
    /// `failed_at`).
    pub refused: usize,
    pub first_refusal: Option<Duration>,
    pub last_refusal: Option<Duration>,
    /// From the failure until a replica was promoted (as the Cluster or the Sentinels
    /// tell it).
    pub promoted_in: Duration,
}

impl Failover {
    pub fn report(&self, name: &str) {
        println!(
            "{name}: acknowledged {} schedules, lost {}, completed twice {}; {} answers 503 after the failure (first \
             {:?}, last {:?} after it); a replica was promoted {:?} after it",
            self.acknowledged,
            self.lost.len(),
            self.completed_twice.len(),
            self.refused,
            self.first_refusal,
            self.last_refusal,
            self.promoted_in,
        );
    }
    /// Answers 503 only while Redis fails over: the last one at most 2 s after a
    /// replica was promoted (Redis itself takes a while to agree a primary failed and
    /// to elect a replica: a Cluster about 1.5 × its node timeout, then up to 1.5 s).
    pub fn assert_serving_soon_after_the_promotion(&self) {
        let serving_again = self.last_refusal.unwrap_or_default();
        assert!(
            serving_again <= self.promoted_in + Duration::from_secs(2),
            "503s went on {serving_again:?} after the failure, {:?} after the promotion",
            serving_again.saturating_sub(self.promoted_in)
        );
    }
}

/// Runs the load against a server with `wait_replicas` on `store`, calls
/// `fail_until_promoted` once the load is steady (it fails a primary and returns once a
/// replica is promoted), waits for the load to go on, then drains and compares what was
/// acknowledged with what is stored and what was fired.
pub fn under_load(store: &str, wait_replicas: u32, fail_until_promoted: impl FnOnce()) -> Failover {
    let dir = tempfile::tempdir().unwrap();
    let server = node(store, wait_replicas, &dir);
    let (stop, seen, drain_by) = (Stop::default(), Arc::new(Seen::default()), Arc::new(Mutex::new(None)));
    let target = Target::new(pull_client(&server.url(), Duration::from_secs(30)));
    let clients: Vec<_> = [(STORED, "order", "1h"), (WORK, "w", "0s")]
        .into_iter()
        .map(|(queue, prefix, delay)| {
            let (api, stop, seen) = (Api::of(&server), stop.clone(), Arc::clone(&seen));
            thread::spawn(move || schedule_until(&api, queue, prefix, delay, &stop, &seen))
        })
        .chain(std::iter::once(worker(&seen, &drain_by).on_thread(target, stop.clone(), Arc::clone(&seen))))
        .collect();
    let acknowledged_past = |n: usize, within: Duration| {
        let reached = poll_until(within, || (seen.acknowledged() > n).then_some(()));
        assert!(reached.is_some(), "fewer than {n} schedules acknowledged in {within:?}:\n{}", server.logs());
    };
    acknowledged_past(1_500, Duration::from_secs(30));

    let failed_at = Instant::now();
    fail_until_promoted();
    let promoted_in = failed_at.elapsed();
    // The load goes on: as many schedules again, and the last 503 well behind.
    let before = seen.acknowledged();
    acknowledged_past(before + 1_500, Duration::from_secs(30));
    stop.stop();
    *drain_by.lock().unwrap() = Some(Instant::now() + Duration::from_secs(30));
    for client in clients {
        client.join().unwrap();
    }

    let unexpected = seen.unexpected.lock().unwrap();
    assert!(unexpected.is_empty(), "answers other than 503 unavailable: {unexpected:?}\n{}", server.logs());
    let api = Api::of(&server);
    let stored = api.stored_keys(STORED);
    let stored_acknowledged = seen.stored.lock().unwrap();
    let work = seen.work.lock().unwrap();
    let fired = seen.fired.lock().unwrap();
    let mut lost: Vec<(String, Instant)> =
        stored_acknowledged.iter().filter(|(k, _)| !stored.contains(k)).cloned().collect();
    lost.extend(work.iter().filter(|(k, _)| !fired.contains_key(*k)).map(|(k, at)| (k.clone(), *at)));
    let completed_twice =
        seen.completed.lock().unwrap().iter().filter(|(_, n)| **n > 1).map(|(k, _)| k.clone()).collect();
    let refused: Vec<Duration> =
        seen.refused.lock().unwrap().iter().filter(|at| **at >= failed_at).map(|at| *at - failed_at).collect();
    Failover {
        acknowledged: stored_acknowledged.len() + work.len(),
        lost,
        completed_twice,
        failed_at,
        refused: refused.len(),
        first_refusal: refused.iter().min().copied(),
        last_refusal: refused.iter().max().copied(),
        promoted_in,
    }
}
