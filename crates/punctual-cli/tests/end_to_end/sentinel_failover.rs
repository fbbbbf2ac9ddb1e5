//! A primary watched by Redis Sentinel killed under schedule + lease + ack load: what
//! teams running Redisson or Spring Data Redis run. Guards against acknowledged writes
//! lost in the failover, a server that keeps talking to the dead primary (or needs a
//! restart to find the new one), and errors other than 503 while Sentinel promotes a
//! replica; and against a Sentinel store that names a primary the Sentinels do not know
//! starting anyway, and against the user and password of the URL not reaching the
//! nodes the Sentinels name.
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
use common::{Api, server_builder, start};
use punctual_testkit::redis::{RedisSentinels, SENTINEL_PRIMARY};
use serde_json::json;

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

#[test]
fn the_user_and_password_of_the_url_open_the_nodes_the_sentinels_name() {
    let redis =
        RedisSentinels::start_with_node_args(1, DOWN_AFTER, &["--user", "app", "on", ">s3cret", "~*", "&*", "+@all"]);
    let url = redis.url().replace("redis-sentinel://", "redis-sentinel://app:s3cret@");
    let server = start(server_builder().store(&url));
    let api = Api::of(&server);
    api.put("/v1/queues/acl.q/tasks/k", json!({"delay": "1h"})).expect(201, "schedule as the ACL user");
    // Every client of the primary but the Sentinels', the replica's (flags S) and this
    // look is punctual's, as `app`.
    let clients = redis.nodes()[0].command(&["CLIENT", "LIST"]).unwrap();
    let users: Vec<&str> = clients
        .lines()
        .filter(|line| !["cmd=client|list", "name=sentinel-", "flags=S"].iter().any(|own| line.contains(own)))
        .filter_map(|line| line.split(' ').find_map(|field| field.strip_prefix("user=")))
        .collect();
    assert!(!users.is_empty() && users.iter().all(|u| *u == "app"), "punctual's connections: {users:?}");
    drop(server);

    let wrong = redis.url().replace("redis-sentinel://", "redis-sentinel://app:wrong@");
    let error = server_builder().store(&wrong).start().expect_err("a wrong password must stop start-up");
    let text = error.to_string();
    assert!(text.contains("'punctual'") && !text.contains("wrong@"), "names the primary, hides the password: {text}");
    assert!(text.to_lowercase().contains("password"), "says the password was refused: {text}");
}
