//! Redis going away under load. Guards against the failures that make a queue on Redis
//! untrustworthy: an acknowledged schedule lost in a Redis crash, a server that hangs
//! while Redis is down (or frozen: connections open, nothing answered, so only
//! timeouts help), and one that needs a restart once Redis is back.
//!
//! Real processes: a private `redis-server` with AOF (`appendfsync always`, then
//! `everysec`), killed with SIGKILL and started again on the same files, or frozen with
//! SIGSTOP and resumed with SIGCONT, and the real `punctual` binary. With `everysec`
//! Redis may lose the writes of about the last second before a crash of the machine
//! (docs/redis.md); a killed `redis-server` process has already handed every answered
//! write to the kernel, so here it loses nothing, and the test checks the documented
//! bound (which a punctual that answered before Redis had the write would break).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use punctual_client::ClientError;
use punctual_testkit::poll_until;
use punctual_testkit::pull::{AckEnd, Acks, Call, Lease, Next, PullLoop, Stop, StopWhen, Tally, Target};
use punctual_testkit::redis::{self, Persistence, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

/// A server on `redis` that gives up on a Redis call after 1 s.
fn node(redis: &RedisServer, dir: &tempfile::TempDir) -> ServerProcess {
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, "[redis]\ntimeout = \"1s\"\n").unwrap();
    start(server_builder().store(redis.url()).arg("--config").arg(&config))
}

/// A call the server refused with 503 "unavailable".
#[derive(Debug, Clone)]
struct Refusal {
    /// Which call: `schedule`, `lease`, `ack`.
    what: &'static str,
    /// From sending the request to its answer.
    took: Duration,
    answered_at: Instant,
    message: String,
}

impl Refusal {
    /// Checks the answer is API.md's 503 "unavailable" and records it.
    fn record(seen: &Seen, what: &'static str, started: Instant, resp: &Resp) {
        resp.expect_error(503, "unavailable", None, what);
        let message = resp.json["error"]["message"].as_str().unwrap_or_default().to_owned();
        Refusal::push(seen, what, started.elapsed(), message);
    }

    /// The same for a call of the pull loop, which the harness reports as the client
    /// read it: the server must have answered, with API.md's 503 "unavailable".
    fn record_failure(seen: &Seen, what: &'static str, took: Duration, error: &ClientError) {
        let ClientError::Api(refused) = error else {
            panic!("the server must answer the {what} call, not drop it: {error}")
        };
        assert_eq!((refused.status, refused.code.as_str()), (503, "unavailable"), "{what}: {refused}");
        assert!(!refused.message.trim().is_empty(), "{what}: the error has no message");
        Refusal::push(seen, what, took, refused.message.clone());
    }

    fn push(seen: &Seen, what: &'static str, took: Duration, message: String) {
        let refusal = Refusal { what, took, answered_at: Instant::now(), message };
        seen.refused.lock().unwrap().push(refusal);
    }
}

/// What a client saw while scheduling in a loop.
#[derive(Default)]
struct Seen {
    /// Each acknowledged key and when its answer came.
    acknowledged: Mutex<Vec<(String, Instant)>>,
    /// Every refused call.
    refused: Mutex<Vec<Refusal>>,
}

/// Schedules batches of 50 far-future tasks with keys `<prefix>-<n>` until `stop`,
/// recording what was answered.
fn schedule_until(api: Api, prefix: &str, stop: Stop, seen: Arc<Seen>) {
    let mut n = 0;
    while !stop.is_stopped() {
        let keys: Vec<String> = (0..50).map(|i| format!("{prefix}-{}", n + i)).collect();
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
                Refusal::record(&seen, "schedule", started, &resp);
                stop.back_off(Duration::from_millis(50));
            }
            Err(e) => panic!("the server must answer, not drop the call: {e}"),
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
    let stop = Stop::default();
    let seen = Arc::new(Seen::default());
    let client = thread::spawn({
        let (api, stop, seen) = (Api::of(&server), stop.clone(), Arc::clone(&seen));
        move || schedule_until(api, "order", stop, seen)
    });
    let wait_for_more = |than: usize| {
        let more =
            poll_until(Duration::from_secs(30), || (seen.acknowledged.lock().unwrap().len() > than).then_some(()));
        assert!(more.is_some(), "no schedule succeeded in 30 s");
    };
    wait_for_more(2_000);

    redis.kill();
    let killed_at = Instant::now();
    let refused =
        |n: usize| poll_until(Duration::from_secs(20), || (seen.refused.lock().unwrap().len() >= n).then_some(()));
    assert!(refused(3).is_some(), "no 503 within 20 s of Redis dying");
    // Redis stays down until the server has said so and refused three calls more: an
    // outage, not a blip (each refusal takes one reconnect attempt, about 0.5 s).
    let noticed = server.wait_for_log("Redis is unreachable", Duration::from_secs(20));
    assert!(noticed.is_ok(), "the server never logged that Redis is unreachable:\n{}", server.logs());
    let first = seen.refused.lock().unwrap().len();
    assert!(refused(first + 3).is_some(), "no three more 503s within 20 s");
    redis.restart().unwrap_or_else(|e| panic!("restart redis-server: {e}"));
    let back = Instant::now();
    let before = seen.acknowledged.lock().unwrap().len();
    wait_for_more(before + 500);
    let recovered_in = back.elapsed();
    stop.stop();
    client.join().unwrap();

    let acknowledged = seen.acknowledged.lock().unwrap().clone();
    let stored = Api::of(&server).stored_keys("order.cancel");
    let lost = acknowledged.iter().filter(|(k, _)| !stored.contains(k)).cloned().collect();
    let refused = seen.refused.lock().unwrap();
    let slowest_refusal = refused.iter().map(|r| r.took).max().unwrap();
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
    let logs = run.server.wait_for_log("Redis is reachable again", Duration::from_secs(5)).unwrap_or_else(|l| l);
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

/// How long the frozen-Redis test freezes Redis.
const FREEZE: Duration = Duration::from_secs(5);
/// Its `[redis] timeout`: no Redis call waits longer.
const REDIS_TIMEOUT: Duration = Duration::from_secs(1);
/// Its `request_timeout`: no request runs longer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(4);
/// Its clients scheduling in a loop.
const SCHEDULERS: usize = 2;
/// Its burst of concurrent schedules to a node with no task ids in hand.
const BURST: usize = 8;

/// What the pull side of the frozen-Redis test saw: tasks due now, scheduled by one
/// client, leased and acknowledged by another.
#[derive(Default)]
struct Work {
    /// Keys whose schedule was answered with success.
    acknowledged: Mutex<HashSet<String>>,
    /// Key → how many times a lease handed it out.
    fired: Mutex<HashMap<String, u32>>,
    /// Keys fired whose ack was not confirmed (refused, or the lease expired meanwhile).
    unconfirmed: Mutex<HashSet<String>>,
}

/// Schedules batches of 20 tasks due now on queue `work` until `stop`.
fn produce_work_until(api: Api, stop: Stop, seen: Arc<Seen>, work: Arc<Work>) {
    let mut n = 0;
    while !stop.is_stopped() {
        let keys: Vec<String> = (n..n + 20).map(|i| format!("w-{i}")).collect();
        n += 20;
        let tasks: Vec<Value> = keys.iter().map(|k| json!({"key": k})).collect();
        let started = Instant::now();
        match api.try_call(reqwest::Method::POST, "/v1/queues/work/tasks", Some(&json!({ "tasks": tasks }))) {
            Ok(resp) if resp.status == 200 => {
                let results = resp.json["results"].as_array().unwrap();
                assert!(results.iter().all(|r| r["outcome"] == "created"), "{}", resp.text);
                work.acknowledged.lock().unwrap().extend(keys);
            }
            Ok(resp) => {
                Refusal::record(&seen, "schedule", started, &resp);
                stop.back_off(Duration::from_millis(50));
            }
            Err(e) => panic!("the server must answer, not drop the call: {e}"),
        }
    }
}

/// The pull side's tally: what it leased and acknowledged into [`Work`], the server's
/// refusals into [`Seen`].
struct Pulled {
    seen: Arc<Seen>,
    work: Arc<Work>,
}

impl Tally for Pulled {
    fn leased(&self, leases: &[Lease]) {
        let mut fired = self.work.fired.lock().unwrap();
        for lease in leases {
            *fired.entry(lease.key.clone()).or_default() += 1;
        }
    }

    fn acked(&self, leases: &[Lease], ends: &[AckEnd], _acked_ms: i64) {
        let mut unconfirmed = self.work.unconfirmed.lock().unwrap();
        for (lease, end) in leases.iter().zip(ends) {
            if *end != AckEnd::Confirmed {
                unconfirmed.insert(lease.key.clone());
            }
        }
    }

    fn failed(&self, call: Call, error: &ClientError, took: Duration) -> Next {
        match call {
            Call::Lease => {
                Refusal::record_failure(&self.seen, "lease", took, error);
                Next::BackOff(Duration::from_millis(50))
            }
            Call::Ack => {
                Refusal::record_failure(&self.seen, "ack", took, error);
                Next::BackOff(Duration::ZERO)
            }
        }
    }
}

/// Leases up to 50 tasks of `work` (2 s leases), records them as fired and acks them,
/// until stopped and nothing is left to lease.
fn worker() -> PullLoop {
    PullLoop {
        queue: "work".into(),
        max: 50,
        lease: Some(Duration::from_secs(2)),
        wait: Duration::from_millis(200),
        acks: Acks::Batch,
        stop_when: StopWhen::Empty,
    }
}

/// Redis frozen with SIGSTOP for 5 s under schedule, lease and ack load, then resumed
/// with SIGCONT. Connections stay open and nothing answers, so only the Redis call
/// timeout stops a request from hanging. Guards against requests that wait past the
/// Redis timeout (or forever), answers other than 503 "unavailable", a server that
/// needs a restart once Redis answers again, and acknowledged work lost on the way.
///
/// A burst of schedules to a second node that has no task ids in hand guards against
/// a convoy of timeouts: callers queued behind one that refills the ids from Redis each
/// waited out the timeouts of those before them, until the request timeout cut them off
/// (fixed in `punctual-redis`: waiting for the refill counts against the Redis timeout).
#[test]
fn redis_frozen_for_five_seconds_under_load_is_answered_with_quick_503s_and_loses_nothing() {
    let redis = redis::server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("punctual.toml");
    std::fs::write(
        &config,
        format!(
            "request_timeout = \"{}ms\"\n[redis]\ntimeout = \"{}ms\"\n",
            REQUEST_TIMEOUT.as_millis(),
            REDIS_TIMEOUT.as_millis()
        ),
    )
    .unwrap();
    let server = start(server_builder().store(redis.url()).arg("--config").arg(&config));
    // The client waits longer than the server may take, to see a server that hangs.
    let client = || Api::with_timeout(server.url(), REQUEST_TIMEOUT * 3);
    let (stop_producing, stop_working) = (Stop::default(), Stop::default());
    let seen = Arc::new(Seen::default());
    let work = Arc::new(Work::default());
    let schedulers: Vec<_> = (0..SCHEDULERS)
        .map(|i| {
            let (api, stop, seen) = (client(), stop_producing.clone(), Arc::clone(&seen));
            thread::spawn(move || schedule_until(api, &format!("order-{i}"), stop, seen))
        })
        .collect();
    let producer = thread::spawn({
        let (api, stop, seen, work) = (client(), stop_producing.clone(), Arc::clone(&seen), Arc::clone(&work));
        move || produce_work_until(api, stop, seen, work)
    });
    let target = Target::new(pull_client(&server.url(), REQUEST_TIMEOUT * 3));
    let pulled = Arc::new(Pulled { seen: Arc::clone(&seen), work: Arc::clone(&work) });
    let worker = worker().on_thread(target, stop_working.clone(), pulled);
    let acknowledged = || seen.acknowledged.lock().unwrap().len();
    let wait_for_more = |than: usize| {
        let more = poll_until(Duration::from_secs(30), || (acknowledged() > than).then_some(()));
        assert!(more.is_some(), "no schedule succeeded in 30 s");
    };
    wait_for_more(2_000);

    // A node that has scheduled nothing yet must reserve a block of task ids from Redis
    // for its first schedule, as every node does each 4,096 tasks: a burst of
    // concurrent schedules to it while Redis is frozen, all wanting that block.
    let fresh = start(server_builder().store(redis.url()).arg("--config").arg(&config));

    punctual_testkit::signal(redis.pid().expect("redis-server runs"), "STOP");
    let frozen_at = Instant::now();
    let burst: Vec<_> = (0..BURST)
        .map(|i| {
            let (api, seen) = (Api::with_timeout(fresh.url(), REQUEST_TIMEOUT * 3), Arc::clone(&seen));
            thread::spawn(move || {
                let started = Instant::now();
                let path = format!("/v1/queues/order.cancel/tasks/fresh-{i}");
                match api.try_call(reqwest::Method::PUT, &path, Some(&json!({"delay": "1h"}))) {
                    Ok(resp) => Refusal::record(&seen, "schedule", started, &resp),
                    Err(e) => panic!("the server must answer, not drop the call: {e}"),
                }
            })
        })
        .collect();
    // Frozen until the clients have been refused for FREEZE: longer than the request
    // timeout, so a call that waited on Redis instead of timing out would be cut off.
    let refused_through_the_freeze = poll_until(FREEZE * 3, || {
        let refused = seen.refused.lock().unwrap();
        refused.iter().any(|r| r.answered_at.saturating_duration_since(frozen_at) >= FREEZE).then_some(())
    });
    assert!(refused_through_the_freeze.is_some(), "no 503 answered {FREEZE:?} into the freeze");
    punctual_testkit::signal(redis.pid().expect("redis-server runs"), "CONT");
    let resumed_at = Instant::now();
    for call in burst {
        call.join().unwrap();
    }
    let before = acknowledged();
    wait_for_more(before + 500);
    // From the answers' own times: the first schedule acknowledged after SIGCONT, and
    // the 500th (ten batches: steady again).
    let (first_success, recovered_in) = {
        let acknowledged = seen.acknowledged.lock().unwrap();
        let first = acknowledged.iter().map(|(_, at)| *at).filter(|at| *at > resumed_at).min().unwrap();
        (first - resumed_at, acknowledged[before + 499].1.saturating_duration_since(resumed_at))
    };
    stop_producing.stop();
    for scheduler in schedulers {
        scheduler.join().unwrap();
    }
    producer.join().unwrap();
    // Drain: leases granted by calls whose answer timed out come back when they
    // expire (2 s).
    let work_acknowledged = work.acknowledged.lock().unwrap().clone();
    let all_fired = || {
        let fired = work.fired.lock().unwrap();
        work_acknowledged.iter().all(|k| fired.contains_key(k)).then_some(())
    };
    // Checked below, with what never fired.
    let _ = poll_until(Duration::from_secs(30), all_fired);
    stop_working.stop();
    worker.join().unwrap();

    let api = Api::of(&server);
    let scheduled: Vec<(String, Instant)> = seen.acknowledged.lock().unwrap().clone();
    let stored = api.stored_keys("order.cancel");
    let lost: Vec<&String> = scheduled.iter().map(|(k, _)| k).filter(|k| !stored.contains(*k)).collect();
    let fired = work.fired.lock().unwrap();
    let unconfirmed = work.unconfirmed.lock().unwrap();
    let never_fired: Vec<&String> = work_acknowledged.iter().filter(|k| !fired.contains_key(*k)).collect();
    let duplicates: Vec<&String> = fired.iter().filter(|(_, n)| **n > 1).map(|(k, _)| k).collect();
    let unexplained: Vec<&&String> = duplicates.iter().filter(|k| !unconfirmed.contains(**k)).collect();
    let refused = seen.refused.lock().unwrap().clone();
    let slowest = |what: &str| refused.iter().filter(|r| r.what == what).map(|r| r.took).max();
    let ms = |d: Option<Duration>| d.map_or_else(|| "none refused".to_owned(), |d| format!("{} ms", d.as_millis()));
    let first_refusal = refused.iter().map(|r| r.answered_at).min().map(|at| at.saturating_duration_since(frozen_at));
    let during = refused.iter().filter(|r| r.answered_at >= frozen_at).count();
    println!(
        "redis frozen {FREEZE:?} (redis timeout {REDIS_TIMEOUT:?}, request timeout {REQUEST_TIMEOUT:?}): \
         {} schedules acknowledged, lost {}; {} work tasks acknowledged, never fired {}, fired twice {} \
         (all among the {} whose ack was not confirmed: {}); {during} calls refused with 503 \
         (the first {} after the freeze; slowest schedule {}, lease {}, ack {}); \
         after SIGCONT the first schedule succeeded in {} ms, 500 more in {} ms",
        scheduled.len(),
        lost.len(),
        work_acknowledged.len(),
        never_fired.len(),
        duplicates.len(),
        unconfirmed.len(),
        unexplained.is_empty(),
        ms(first_refusal),
        ms(slowest("schedule")),
        ms(slowest("lease")),
        ms(slowest("ack")),
        first_success.as_millis(),
        recovered_in.as_millis(),
    );

    assert!(lost.is_empty(), "acknowledged schedules lost: {} (first {:?})", lost.len(), lost.first());
    assert!(never_fired.is_empty(), "acknowledged work never fired: {} (first {:?})", never_fired.len(), never_fired);
    assert!(unexplained.is_empty(), "fired twice though its ack was confirmed: {unexplained:?}");
    assert!(work_acknowledged.len() > 100 && fired.len() > 100, "the pull load ran");
    // Refused about one Redis timeout after the freeze, and every refused call about one
    // Redis timeout after it was sent (twice that leaves room for a loaded machine and
    // a long poll's wait), never cut off by the request timeout.
    assert!(during >= BURST + 3, "calls were refused while Redis was frozen: {refused:?}");
    let first_refusal = first_refusal.unwrap();
    assert!(first_refusal < REDIS_TIMEOUT * 2, "the first 503 came {first_refusal:?} after the freeze");
    for refusal in &refused {
        assert!(
            !refusal.message.contains("did not complete within"),
            "a call ran into the request timeout instead of the Redis timeout: {refusal:?}"
        );
        assert!(refusal.took < REDIS_TIMEOUT * 2, "a refusal took over twice the Redis timeout: {refusal:?}");
    }
    assert!(recovered_in < Duration::from_secs(5), "recovery took {recovered_in:?}");
    api.get("/readyz").expect(200, "ready again once Redis answers");
    // Logged once per change of state, not once per failed call.
    let logs = server.wait_for_log("Redis is reachable again", Duration::from_secs(5)).unwrap_or_else(|l| l);
    assert_eq!(logs.matches("Redis is unreachable").count(), 1, "{logs}");
    assert_eq!(logs.matches("Redis is reachable again").count(), 1, "{logs}");
}
