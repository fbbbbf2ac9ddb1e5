//! A primary watched by Redis Sentinel killed under schedule + lease + ack load: what
//! teams running Redisson or Spring Data Redis run. Guards against acknowledged writes
//! lost in the failover, a server that keeps talking to the dead primary (or needs a
//! restart to find the new one), and errors other than 503 while Sentinel promotes a
//! replica; and against a Sentinel store that names a primary the Sentinels do not know
//! starting anyway.
//!
//! Real processes: a private `redis-server` primary with two replicas, three
//! `redis-server --sentinel` processes (quorum 2, the primary counted down after 1 s
//! unanswered), and the real `punctual` binary given `redis-sentinel://…/punctual`.
//! With `wait_replicas = 1` the promoted primary keeps a replica that confirms writes.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::time::Duration;

use common::failover::under_load;
use common::server_builder;
use punctual_testkit::redis::{RedisSentinels, SENTINEL_PRIMARY};

const DOWN_AFTER: Duration = Duration::from_secs(1);

#[test]
fn the_primary_killed_under_load_with_wait_replicas_loses_nothing_acknowledged_and_serving_resumes() {
    let mut redis = RedisSentinels::start(2, DOWN_AFTER);
    let url = redis.url();
    let run = under_load(&url, 1, || {
        let old = redis.primary().expect("the Sentinels name a primary");
        redis.kill(old);
        let promoted = redis.wait_until_promoted(old, Duration::from_secs(30));
        assert!(promoted.is_some(), "Sentinel did not promote a replica within 30 s");
    });
    run.report("Sentinel, SIGKILL, wait_replicas = 1");
    assert!(run.lost.is_empty(), "acknowledged schedules lost: {} (first {:?})", run.lost.len(), run.lost.first());
    assert!(run.completed_twice.is_empty(), "completions undone by the failover: {:?}", run.completed_twice);
    run.assert_serving_soon_after_the_promotion();
}

#[test]
fn a_primary_name_the_sentinels_do_not_know_stops_start_up_naming_it() {
    let redis = RedisSentinels::start(1, DOWN_AFTER);
    let url = redis.url().replace(&format!("/{SENTINEL_PRIMARY}"), "/no-such-primary");
    let error = server_builder().store(&url).start().expect_err("the server must not start");
    let text = error.to_string();
    assert!(text.contains("Redis Sentinel") && text.contains("'no-such-primary'"), "the error names it: {text}");
}
