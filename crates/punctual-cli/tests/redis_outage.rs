//! Redis going away under load. Guards against the failures that make a queue on Redis
//! untrustworthy: an acknowledged schedule lost in a Redis crash, a server that hangs
//! while Redis is down, and one that needs a restart once Redis is back.
//!
//! Real processes: a private `redis-server` with AOF (`appendfsync always`, then
//! `everysec`), killed with SIGKILL and started again on the same files, and the real
//! `punctual` binary. With `everysec` Redis may lose the writes of about the last second
//! before a crash of the machine (docs/redis.md); a killed `redis-server` process has
//! already handed every answered write to the kernel, so here it loses nothing, and the
//! test checks the documented bound (which a punctual that answered before Redis had
//! the write would break).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use punctual_testkit::redis::{self, Persistence, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

/// A server on `redis` that gives up on a Redis call after 1 s.
fn node(redis: &RedisServer, dir: &tempfile::TempDir) -> ServerProcess {
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, "[redis]\ntimeout = \"1s\"\n").unwrap();
    start(server_builder().store(redis.url()).arg("--config").arg(&config))
}

/// What a client saw while scheduling in a loop.
#[derive(Default)]
struct Seen {
    /// Each acknowledged key and when its answer came.
    acknowledged: Mutex<Vec<(String, Instant)>>,
    /// Status and latency of every refused call.
    refused: Mutex<Vec<(u16, Duration)>>,
}

/// Schedules batches of 50 far-future tasks until `stop`, recording what was answered.
fn schedule_until(api: Api, stop: Arc<AtomicBool>, seen: Arc<Seen>) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let keys: Vec<String> = (0..50).map(|i| format!("order-{}", n + i)).collect();
        n += 50;
        let tasks: Vec<Value> = keys.iter().map(|k| json!({"key": k, "delay": "1h"})).collect();
        let started = Instant::now();
        match api.try_call(reqwest::Method::POST, "/v1/queues/order.cancel/tasks", Some(&json!({ "tasks": tasks }))) {
            Ok(resp) if resp.status == 200 => {
                let results = resp.json["results"].as_array().unwrap();
                assert!(results.iter().all(|r| r["outcome"] == "created"), "{}", resp.text);
                let at = Instant::now();
                seen.acknowledged.lock().unwrap().extend(keys.into_iter().map(|k| (k, at)));
            }
            Ok(resp) => {
                resp.expect_error(503, "unavailable", None, "a schedule while Redis is down");
                seen.refused.lock().unwrap().push((resp.status, started.elapsed()));
                thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("the server must answer, not drop the call: {e}"),
        }
    }
}

fn stored_keys(api: &Api) -> HashSet<String> {
    let mut keys = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/queues/order.cancel/tasks?limit=1000&cursor={c}"),
            None => "/v1/queues/order.cancel/tasks?limit=1000".to_owned(),
        };
        let page = api.get(&path);
        let body = page.expect(200, "list the stored tasks");
        keys.extend(body["tasks"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap().to_owned()));
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return keys,
        }
    }
}

/// What one outage run saw.
struct Outage {
    acknowledged: Vec<(String, Instant)>,
    /// Acknowledged keys missing afterwards, with when they were acknowledged.
    lost: Vec<(String, Instant)>,
    killed_at: Instant,
    refused: usize,
    slowest_refusal: Duration,
    recovered_in: Duration,
    server: ServerProcess,
    /// Kept running until the checks are done.
    _redis: RedisServer,
}

/// Schedules in a loop against a server on a Redis with `persistence`, kills Redis with
/// SIGKILL, waits for 503s, restarts Redis on its files and waits for schedules to
/// succeed again; then compares what was acknowledged with what is stored.
fn outage(persistence: Persistence) -> Outage {
    let mut redis = redis::server_with(persistence, &[]);
    let dir = tempfile::tempdir().unwrap();
    let server = node(&redis, &dir);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let client = thread::spawn({
        let (api, stop, seen) = (Api::of(&server), Arc::clone(&stop), Arc::clone(&seen));
        move || schedule_until(api, stop, seen)
    });
    let wait_for_more = |than: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen.acknowledged.lock().unwrap().len() <= than {
            assert!(Instant::now() < deadline, "no schedule succeeded in 30 s");
            thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for_more(2_000);

    redis.kill();
    let killed_at = Instant::now();
    while seen.refused.lock().unwrap().len() < 3 {
        assert!(killed_at.elapsed() < Duration::from_secs(20), "no 503 within 20 s of Redis dying");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_secs(2));
    redis.restart().unwrap_or_else(|e| panic!("restart redis-server: {e}"));
    let back = Instant::now();
    let before = seen.acknowledged.lock().unwrap().len();
    wait_for_more(before + 500);
    let recovered_in = back.elapsed();
    stop.store(true, Ordering::SeqCst);
    client.join().unwrap();

    let acknowledged = seen.acknowledged.lock().unwrap().clone();
    let stored = stored_keys(&Api::of(&server));
    let lost = acknowledged.iter().filter(|(k, _)| !stored.contains(k)).cloned().collect();
    let refused = seen.refused.lock().unwrap();
    let slowest_refusal = refused.iter().map(|(_, took)| *took).max().unwrap();
    Outage {
        acknowledged,
        lost,
        killed_at,
        refused: refused.len(),
        slowest_refusal,
        recovered_in,
        server,
        _redis: redis,
    }
}

/// Prints the run's figures and checks what every persistence setting must give: 503s
/// answered quickly while Redis is down, recovery without a restart, and one log line
/// per change of state.
fn report_and_check_recovery(name: &str, run: &Outage) {
    println!(
        "{name}: acknowledged {} schedules, lost {}; {} refused with 503 while Redis was down (slowest answer \
         {:?}); schedules succeeded again {:?} after Redis restarted",
        run.acknowledged.len(),
        run.lost.len(),
        run.refused,
        run.slowest_refusal,
        run.recovered_in
    );
    assert!(
        run.slowest_refusal < Duration::from_secs(5),
        "a refusal took {:?}: the server must not hang",
        run.slowest_refusal
    );
    assert!(run.recovered_in < Duration::from_secs(15), "recovery took {:?}", run.recovered_in);
    let readyz = Api::of(&run.server).get("/readyz");
    readyz.expect(200, "ready again once Redis is back");
    // Logged once per change of state, not once per failed call.
    let logs = run.server.logs();
    assert_eq!(logs.matches("Redis is unreachable").count(), 1, "{logs}");
    assert_eq!(logs.matches("Redis is reachable again").count(), 1, "{logs}");
}

#[test]
fn redis_killed_under_load_with_aof_always_loses_no_acknowledged_task_and_the_server_recovers() {
    let run = outage(Persistence::AofAlways);
    report_and_check_recovery("appendfsync always", &run);
    assert!(run.lost.is_empty(), "acknowledged schedules lost: {} (first {:?})", run.lost.len(), run.lost.first());
}

#[test]
fn redis_killed_under_load_with_aof_everysec_loses_at_most_the_last_seconds_writes() {
    let run = outage(Persistence::AofEverySec);
    report_and_check_recovery("appendfsync everysec", &run);
    // Redis fsyncs the AOF once a second (a slow disk can delay it by another second):
    // only writes acknowledged in the last two seconds before the kill may be gone.
    let bound = run.killed_at - Duration::from_secs(2);
    let too_old: Vec<_> = run.lost.iter().filter(|(_, at)| *at < bound).collect();
    let window = run.acknowledged.iter().filter(|(_, at)| *at >= bound && *at <= run.killed_at).count();
    println!(
        "appendfsync everysec: lost {} of the {window} acknowledged in the last 2 s before the kill",
        run.lost.len()
    );
    assert!(
        too_old.is_empty(),
        "lost writes acknowledged over 2 s before the kill: {} (first {:?})",
        too_old.len(),
        too_old.first()
    );
}
