//! A real `punctual serve` on a Redis that loses its data, and on Redis settings that
//! would make it lose data.
//!
//! Guards against the silence seen in use: after Redis came back empty the server only
//! logged "Redis is reachable again" — every task scheduled before was gone and
//! nothing said so — and a Redis without `appendonly`, or with an eviction policy,
//! was used without a word. Now an emptied Redis is an error in the log, a count in
//! `/metrics` (`punctual_store_resets_total`) and the reason in `/readyz` (which stays
//! ready: the node serves on), and the first delivery id after it repeats none from
//! before; and each risky setting is one warning at start-up.
//!
//! Real processes: private `redis-server`s (never the machine's own Redis) and the real
//! binary, waited on with deadlines.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use punctual_testkit::redis::{self, Persistence, RedisServer};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

/// Calls `check` until it answers `Some`, failing after [`DEADLINE`].
fn until<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    punctual_testkit::poll_until(DEADLINE, check).unwrap_or_else(|| panic!("{what}: not within {DEADLINE:?}"))
}

fn node(redis: &RedisServer) -> ServerProcess {
    start(server_builder().store(redis.url()).args(["--log-format", "json"]))
}

/// The server's log events (`--log-format json`).
fn events(server: &ServerProcess) -> Vec<Value> {
    server.logs().lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

fn message(event: &Value) -> &str {
    event["fields"]["message"].as_str().unwrap_or_default()
}

/// The value of an unlabelled sample in `/metrics`.
fn sample(api: &Api, name: &str) -> Option<f64> {
    let text = api.get("/metrics").text;
    text.lines().find_map(|line| line.strip_prefix(&format!("{name} "))?.parse().ok())
}

fn delivery_id_of(api: &Api, key: &str) -> String {
    api.create("order.cancel", key, json!({}));
    let lease = api.lease_one("order.cancel");
    assert_eq!(lease["task"]["key"], key);
    lease["delivery_id"].as_str().unwrap().to_owned()
}

#[test]
fn an_emptied_redis_is_logged_counted_and_shown_by_readyz() {
    let redis = redis::server();
    let server = node(&redis);
    let api = Api::of(&server);
    let before = delivery_id_of(&api, "order-1");
    assert_eq!(sample(&api, "punctual_store_resets_total"), Some(0.0));
    let ready = api.get("/readyz");
    assert_eq!(ready.expect(200, "ready").clone(), json!({"status": "ready"}));

    let flushed = Instant::now();
    redis.command(&["FLUSHALL"]).unwrap();
    let error = until("the server logs that Redis lost its data", || {
        api.get("/readyz");
        events(&server).into_iter().find(|e| message(e).starts_with("Redis lost punctual's data"))
    });
    println!("FLUSHALL logged after {:?}: {}", flushed.elapsed(), message(&error));
    assert_eq!(error["level"], "ERROR", "{error}");
    assert!(message(&error).contains("Every task scheduled before is gone"), "{error}");

    // Logged as it is found, counted once the engine hears of it, a moment later.
    until("the reset is counted", || (sample(&api, "punctual_store_resets_total") == Some(1.0)).then_some(()));
    let ready = api.get("/readyz");
    let body = ready.expect(200, "still ready: the node serves on");
    let reason = body["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("Redis lost punctual's data") && reason.contains("noticed at"), "{body}");
    assert_eq!(api.task("order.cancel", "order-1").status, 404, "the task was lost with Redis' data");

    // The node serves on under the new identity: the same key, first task of the new
    // store, is a new delivery.
    let after = delivery_id_of(&api, "order-1");
    println!("delivery id before FLUSHALL {before}, after {after}");
    assert_ne!(after, before);
    assert_ne!(after.split('-').next(), before.split('-').next(), "the store identity changed");
    assert!(api.lease("order.cancel", json!({})).is_empty(), "nothing else is due");
    // Counted once, however often the node looks again.
    api.get("/readyz");
    assert_eq!(sample(&api, "punctual_store_resets_total"), Some(1.0));
    let resets = events(&server).iter().filter(|e| message(e).starts_with("Redis lost punctual's data")).count();
    assert_eq!(resets, 1, "{}", server.logs());
}

/// The start-up warnings of `server`, by setting.
fn warnings(server: &ServerProcess, setting: &str) -> Vec<String> {
    events(server)
        .iter()
        .filter(|e| e["level"] == "WARN" && e["fields"]["setting"] == setting)
        .map(|e| message(e).to_owned())
        .collect()
}

#[test]
fn redis_settings_that_lose_tasks_are_each_warned_about_once_at_start_up() {
    let without_aof = redis::server_with(Persistence::None, &["--appendonly", "no"]);
    let evicting = redis::server_with(Persistence::AofEverySec, &["--maxmemory-policy", "allkeys-lru"]);
    let safe = redis::server_with(Persistence::AofEverySec, &[]);
    let (without_aof, evicting, safe) = (node(&without_aof), node(&evicting), node(&safe));

    let appendonly = warnings(&without_aof, "appendonly");
    assert_eq!(appendonly.len(), 1, "{}", without_aof.logs());
    assert!(appendonly[0].contains("appendonly no") && appendonly[0].contains("every task is lost"), "{appendonly:?}");
    assert!(warnings(&without_aof, "maxmemory-policy").is_empty(), "{}", without_aof.logs());

    let eviction = warnings(&evicting, "maxmemory-policy");
    assert_eq!(eviction.len(), 1, "{}", evicting.logs());
    assert!(eviction[0].contains("allkeys-lru") && eviction[0].contains("never fire"), "{eviction:?}");
    assert!(warnings(&evicting, "appendonly").is_empty(), "{}", evicting.logs());

    assert!(warnings(&safe, "appendonly").is_empty() && warnings(&safe, "maxmemory-policy").is_empty());
}

#[test]
fn every_primary_of_a_cluster_is_checked_and_named_in_one_line() {
    let cluster = redis::RedisCluster::start(3);
    let server = start(server_builder().store(cluster.url()).args(["--log-format", "json"]));
    let appendonly = warnings(&server, "appendonly");
    assert_eq!(appendonly.len(), 1, "one line for the three nodes:\n{}", server.logs());
    println!("{}", appendonly[0]);
    for node in cluster.nodes() {
        assert!(appendonly[0].contains(&format!(":{}", node.port())), "{} is not named: {appendonly:?}", node.port());
    }
    assert!(warnings(&server, "maxmemory-policy").is_empty(), "{}", server.logs());
}
