//! On Redis, Redis' clock decides when a task is due, not the clock of the server that
//! scheduled or leases it. Guards against a node whose clock is minutes off firing
//! tasks minutes early or late, or computing "in 30s" on its own wrong time.
//!
//! The skewed servers run under libfaketime (Debian's `faketime` package), their wall
//! clock moved by ten minutes; the test's own clock and Redis' agree (one machine).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::faketime::{self, LIBFAKETIME};
use common::*;
use punctual_testkit::redis::{self, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::json;

fn real_now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A server on `redis` whose wall clock is `offset` (libfaketime syntax: "-10m").
fn skewed_node(redis: &RedisServer, offset: &str) -> ServerProcess {
    faketime::require();
    // The preload must really move the clock, or this test proves nothing.
    let date = std::process::Command::new("date")
        .arg("+%s")
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME", offset)
        .output()
        .unwrap();
    let faked: i64 = String::from_utf8_lossy(&date.stdout).trim().parse().unwrap();
    assert!((faked * 1000 - real_now_ms()).abs() > 300_000, "libfaketime did not move the clock: {faked}");
    start(server_builder().store(redis.url()).env("LD_PRELOAD", LIBFAKETIME).env("FAKETIME", offset))
}

#[test]
fn a_node_ten_minutes_behind_schedules_and_fires_on_redis_time() {
    let redis = redis::server();
    let slow = skewed_node(&redis, "-10m");
    let api = Api::of(&slow);
    let before = real_now_ms();
    let answer = api.put("/v1/queues/remind/tasks/step-1", json!({"delay": "2s"}));
    let task = &answer.expect(201, "schedule through the skewed node")["task"];
    let due = parse_time(&task["due_at"]);
    assert!((due - (before + 2_000)).abs() < 1_000, "due in 2 s of Redis time, not of the node's: {task}");

    let leased = api.post("/v1/queues/remind/lease", json!({"wait": "10s"}));
    let fired_at = real_now_ms();
    let leases = leased.expect(200, "long poll on the skewed node")["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 1, "the task fired within the wait: {leases:?}");
    assert!(fired_at >= due, "not before its due time ({fired_at} < {due})");
    assert!(fired_at - due < 1_000, "fired {} ms after its due time", fired_at - due);
}

#[test]
fn a_node_ten_minutes_ahead_does_not_fire_early() {
    let redis = redis::server();
    let honest = start(server_builder().store(redis.url()));
    let fast = skewed_node(&redis, "+10m");
    let answer = Api::of(&honest).put("/v1/queues/remind/tasks/step-2", json!({"delay": "3s"}));
    let due = parse_time(&answer.expect(201, "schedule through the honest node")["task"]["due_at"]);

    // To the fast node's own clock the task is ten minutes overdue; Redis says 3 s.
    let api = Api::with_timeout(fast.url(), Duration::from_secs(30));
    let early = api.post("/v1/queues/remind/lease", json!({"wait": "0s"}));
    assert_eq!(early.expect(200, "lease at once")["leases"], json!([]), "nothing is due yet on Redis' clock");
    let leased = api.post("/v1/queues/remind/lease", json!({"wait": "10s"}));
    let fired_at = real_now_ms();
    assert_eq!(leased.expect(200, "long poll")["leases"].as_array().unwrap().len(), 1, "fired within the wait");
    assert!(fired_at >= due, "the fast node fired {} ms early", due - fired_at);
    assert!(fired_at - due < 1_000, "fired {} ms after its due time", fired_at - due);
}
