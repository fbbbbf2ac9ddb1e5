//! `punctual migrate` through the binary: a deployment on the embedded store, with
//! tasks in every state, settings, a pause, a calendar and a dedupe window, moved to a
//! private `redis-server` and back, each server answering every task exactly as the
//! first did; a run killed (`kill -9`) half-way resumed by running it again; the check
//! failing, naming the key, when the destination lost a task.
//!
//! Guards against a move that resets attempts, versions or times, drops a leased or
//! dead task, a repeat, a tag or a group, loses the settings, pauses, calendars or
//! dedupe windows that decide what fires, writes a task twice when run again, or
//! reports success over a destination that does not match.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common;

use common::run::run_env;
use common::*;
use punctual_testkit::redis::server as redis_server;
use serde_json::{Value, json};

const QUEUES: [&str; 4] = ["order.cancel", "flow.remind", "work", "receipts"];

/// Every task of the deployment's queues, by queue and key, as `api` answers them.
fn every_task(api: &Api) -> BTreeMap<String, BTreeMap<String, Value>> {
    QUEUES.iter().map(|queue| ((*queue).to_owned(), api.stored_tasks(queue))).collect()
}

/// A deployment in every state a server leaves behind; the lease id of the task it
/// leaves leased.
fn deploy(api: &Api) -> String {
    let office = json!({"tz": "Europe/Berlin", "hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"]}});
    api.put("/v1/calendars/office", office).expect(201, "a calendar");
    api.put("/v1/queues/flow.remind/settings", json!({"defaults": {"max_attempts": 7}})).expect(201, "settings");
    for n in 0..30 {
        let body = json!({"delay": format!("{}m", 30 + n), "payload": {"order": n}, "tags": ["shop-1"],
                          "group": format!("customer-{}", n % 4), "priority": n % 10});
        api.schedule("order.cancel", &format!("o-{n}"), body).expect(201, "an order's cancel");
    }
    api.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "a pause");
    api.schedule("flow.remind", "wf-1", json!({"delay": "1h", "repeat": {"every": "24h"}, "payload": {"step": 1}}))
        .expect(201, "a daily reminder");
    api.schedule("flow.remind", "wf-2", json!({"delay": "8h", "calendar": "office"})).expect(201, "business time");
    for key in ["running", "bad", "flaky"] {
        api.schedule("work", key, json!({"delay": "0s", "max_attempts": if key == "bad" { 1 } else { 5 }}))
            .expect(201, "work due now");
    }
    let (mut running, mut handled) = (None, 0);
    while handled < 3 {
        for lease in api.lease("work", json!({"max": 3, "wait": "5s", "lease": "10m"})) {
            handled += 1;
            let id = lease["lease_id"].as_str().unwrap().to_owned();
            match lease["task"]["key"].as_str().unwrap() {
                "running" => running = Some(id),
                "bad" => {
                    api.ack(&id, json!({"outcome": "retry", "error": "no such order"})).expect(204, "the last try");
                }
                _ => {
                    api.ack(&id, json!({"outcome": "retry", "delay": "1h", "error": "503"})).expect(204, "a retry");
                }
            }
        }
    }
    api.schedule("receipts", "r-1", json!({"delay": "0s", "unique_for": "1h"})).expect(201, "a receipt");
    let lease = api.lease_one("receipts");
    api.ack(lease["lease_id"].as_str().unwrap(), json!({"outcome": "done"})).expect(204, "done: its window starts");
    running.expect("the running task was leased")
}

/// Whether `GET /v1/queues` shows `queue` paused.
pub fn paused(api: &Api, queue: &str) -> bool {
    let queues = api.get("/v1/queues");
    let list = queues.expect(200, "the queues")["queues"].as_array().unwrap().clone();
    list.iter().any(|q| q["name"] == queue && q["paused"] == true)
}

fn migrate(from: &str, to: &str, extra: &[&str]) -> common::run::Out {
    let mut args = vec!["migrate", "--from", from, "--to", to];
    args.extend(extra);
    run_env(&args, &[])
}

#[test]
fn a_deployment_moves_to_redis_and_back_with_every_task_as_it_was() {
    let redis = redis_server();
    let mut first = start_server();
    let api = Api::of(&first);
    let running_lease = deploy(&api);
    let before = every_task(&api);
    let total: usize = before.values().map(BTreeMap::len).sum();
    assert_eq!(total, 30 + 2 + 3, "the receipt is done; its window is a record, not a task");
    assert_eq!(before["work"]["running"]["state"], "leased");
    assert_eq!(before["work"]["bad"]["state"], "dead");
    assert_eq!(before["work"]["flaky"]["attempts"], 1);
    first.terminate().unwrap();

    let data = first.data_dir();
    let data = data.to_str().unwrap();
    let moved = migrate(data, &redis.url(), &["--json"]);
    moved.expect_code(0, "punctual migrate to Redis");
    let report = moved.json();
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["check"]["same"], total, "{report}");
    let written: u64 = report["queues"].as_array().unwrap().iter().map(|q| q["written"].as_u64().unwrap()).sum();
    assert_eq!(written, total as u64, "{report}");
    let history_events = |report: &Value| -> u64 {
        report["queues"].as_array().unwrap().iter().map(|q| q["history_events"].as_u64().unwrap()).sum()
    };
    assert!(history_events(&report) > total as u64, "every task's history moved, a done one's too: {report}");
    assert_eq!(report["calendars"]["copied"], json!(["office"]), "{report}");
    let settings = report["settings"]["copied"].as_array().unwrap();
    assert!(settings.contains(&json!("flow.remind")) && settings.contains(&json!("order.cancel")), "{report}");

    let again = migrate(data, &redis.url(), &["--json"]);
    again.expect_code(0, "run again");
    let again = again.json();
    let present: u64 = again["queues"].as_array().unwrap().iter().map(|q| q["present"].as_u64().unwrap()).sum();
    let written: u64 = again["queues"].as_array().unwrap().iter().map(|q| q["written"].as_u64().unwrap()).sum();
    assert_eq!((written, present), (0, total as u64), "run again, nothing is written twice: {again}");
    assert_eq!(history_events(&again), 0, "nor any history event: {again}");

    let mut second = start(server_builder().store(redis.url()));
    let on_redis = Api::of(&second);
    assert_eq!(every_task(&on_redis), before, "the server on Redis answers every task as the first did");
    let told = |api: &Api, queue: &str, key: &str| -> Vec<String> {
        let history = api.get(&format!("/v1/queues/{queue}/tasks/{key}/history"));
        let events = history.expect(200, "a history")["events"].as_array().unwrap().clone();
        events.iter().map(|e| e["event"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(told(&on_redis, "work", "flaky"), ["created", "leased", "acked", "imported"], "its past, then its move");
    assert_eq!(told(&on_redis, "receipts", "r-1"), ["created", "leased", "acked"], "a done task's history moved too");
    on_redis.get("/v1/calendars/office").expect(200, "the calendar moved");
    let remind = on_redis.get("/v1/queues/flow.remind/settings");
    assert_eq!(remind.expect(200, "settings moved")["defaults"]["max_attempts"], 7);
    assert!(paused(&on_redis, "order.cancel"), "the pause moved");
    let kept = on_redis.schedule("receipts", "r-1", json!({"delay": "0s", "unique_for": "1h"}));
    assert_eq!(kept.expect(200, "within the window")["outcome"], "kept", "the dedupe window moved");
    let stale = on_redis.ack(&running_lease, json!({"outcome": "done"}));
    assert!(stale.status >= 400, "a lease of the old store completes nothing here: {}", stale.text);
    assert_eq!(on_redis.task("work", "running").expect(200, "still there")["state"], "leased");
    let live = migrate(&redis.url(), data, &["--check"]);
    live.expect_code(0, "a check against the first store, unchanged");
    live.expect_contains(&["1 server(s) run on the source"], "a server on the source is named");
    second.terminate().unwrap();

    // And back, into a directory a server then serves.
    let mut third = start_server();
    third.terminate().unwrap();
    let back = third.data_dir();
    let back = back.to_str().unwrap();
    migrate(&redis.url(), back, &[]).expect_code(0, "punctual migrate back to the embedded store");
    third.restart().unwrap();
    assert_eq!(every_task(&Api::of(&third)), before, "moved back, every task as it was");

    // The check fails, naming the key, when the destination lost a task.
    Api::of(&third).delete(&task_path("order.cancel", "o-7")).expect(204, "a cancel on the destination");
    third.terminate().unwrap();
    let checked = migrate(&redis.url(), back, &["--check"]);
    checked.expect_code(1, "the check of a destination missing a task");
    checked.expect_contains(&["order.cancel/o-7: missing", "1 missing"], "the check names the missing task");
}

#[test]
fn a_migration_killed_half_way_is_resumed_by_running_it_again() {
    const TASKS: usize = 20_000;
    let redis = redis_server();
    let mut source = start_server();
    let api = Api::of(&source);
    for chunk in 0..TASKS / 5_000 {
        let tasks: Vec<Value> = (0..5_000)
            .map(|n| json!({"key": format!("k-{}", chunk * 5_000 + n), "delay": "1h", "payload": {"n": n}}))
            .collect();
        api.post("/v1/queues/bulk/tasks", json!({"tasks": tasks})).expect(200, "a batch");
    }
    source.terminate().unwrap();
    let data = source.data_dir();
    let data = data.to_str().unwrap();

    let mut child = Command::new(BIN)
        .args(["migrate", "--from", data, "--to", &redis.url(), "--batch", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let progress = BufReader::new(child.stderr.take().unwrap());
    let mut lines = progress.lines();
    let half_way = lines.by_ref().map_while(Result::ok).find(|line| line.contains("10000 of 20000"));
    assert!(half_way.is_some(), "the migration reports its progress");
    child.kill().unwrap();
    child.wait().unwrap();

    let resumed = migrate(data, &redis.url(), &["--json"]);
    resumed.expect_code(0, "run again after kill -9");
    let report = resumed.json();
    assert_eq!(report["check"]["same"], TASKS, "every task once: {report}");
    let queue = &report["queues"][0];
    let present = queue["present"].as_u64().unwrap();
    assert!(present >= 10_000, "the first run's tasks were kept, not written again: {report}");
    assert_eq!(present + queue["written"].as_u64().unwrap(), TASKS as u64, "{report}");
}

/// Given the destination server's config file, a queue split into shards on a Redis
/// Cluster is written where its servers read it: every task moved is served and
/// leased there.
#[test]
fn a_queue_split_into_shards_on_a_cluster_is_written_where_its_servers_read_it() {
    const TASKS: usize = 200;
    let cluster = punctual_testkit::redis::RedisCluster::start(3);
    let mut source = start_server();
    let api = Api::of(&source);
    let tasks: Vec<Value> =
        (0..TASKS).map(|n| json!({"key": format!("o-{n}"), "delay": "0s", "payload": {"n": n}})).collect();
    api.post("/v1/queues/bulk/tasks", json!({"tasks": tasks})).expect(200, "a batch");
    let before = api.stored_tasks("bulk");
    source.terminate().unwrap();

    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("cluster.toml");
    std::fs::write(&config, format!("store = \"{}\"\n\n[queues.\"bulk\"]\nshards = 4\n", cluster.url())).unwrap();
    let data = source.data_dir();
    let moved = migrate(data.to_str().unwrap(), config.to_str().unwrap(), &["--json"]);
    moved.expect_code(0, "punctual migrate into a sharded queue");
    assert_eq!(moved.json()["check"]["same"], TASKS);
    let registered: Vec<String> = cluster
        .nodes()
        .iter()
        .filter_map(|node| {
            let mut conn = redis::Client::open(node.url()).ok()?.get_connection().ok()?;
            redis::cmd("HGET").arg("punctual:queues").arg("bulk").query::<Option<String>>(&mut conn).ok()?
        })
        .collect();
    assert_eq!(registered, ["4"], "the queue is registered with the config file's 4 shards");

    let on_cluster = start(server_builder().store(cluster.url()).arg("--config").arg(&config));
    let api = Api::of(&on_cluster);
    assert_eq!(api.stored_tasks("bulk"), before, "every task as it was");
    let mut leased = std::collections::BTreeSet::new();
    while leased.len() < TASKS {
        let batch = api.lease("bulk", json!({"max": 100, "wait": "5s"}));
        assert!(!batch.is_empty(), "every moved task is leased from its shard: {} of {TASKS}", leased.len());
        leased.extend(batch.iter().map(|lease| lease["task"]["key"].as_str().unwrap().to_owned()));
    }
}
