//! Groups through the binary: `--group` and `punctual groups ls`, and a queue's
//! `group_concurrency = 1` held while several pull workers lease at once.
//!
//! Guards against a `group` lost between the CLI, the HTTP body and the store; a group
//! limit that holds for one lease call but not between concurrent ones (two workers each
//! handed a task of one group); a group whose tasks are handed out out of due order; and
//! a listing of groups that the CLI does not print.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::run::run;
use common::{Api, start_server};
use serde_json::json;

const QUEUE: &str = "order.cancel";

#[test]
fn the_cli_schedules_into_a_group_and_lists_the_groups() {
    let server = start_server();
    let url = server.url();
    for (key, group) in [("order-1", "customer-42"), ("order-2", "customer-42"), ("order-3", "customer-7")] {
        run(&url, &["schedule", QUEUE, key, "--delay", "1h", "--group", group]).expect_code(0, "schedule with --group");
    }
    let task = Api::of(&server).task(QUEUE, "order-1").expect(200, "GET").clone();
    assert_eq!(task["group"], "customer-42", "the group reached the store: {task}");
    run(&url, &["get", QUEUE, "order-1"]).expect_contains(&["Group", "customer-42"], "get shows the group");

    let listed = run(&url, &["groups", "ls", QUEUE]);
    listed.expect_code(0, "groups ls");
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert!(lines[0].starts_with("GROUP"), "{}", listed.stdout);
    assert!(
        lines[1].starts_with("customer-42") && lines[1].split_whitespace().nth(1) == Some("2"),
        "{}",
        listed.stdout
    );
    assert!(lines[2].starts_with("customer-7"), "{}", listed.stdout);
    let paged = run(&url, &["groups", "ls", QUEUE, "--limit", "1", "--json"]).json();
    assert_eq!(paged["groups"], json!([{"group": "customer-42", "scheduled": 2, "leased": 0, "dead": 0}]));
    assert!(paged["next_cursor"].is_string(), "{paged}");
    run(&url, &["groups", "ls", "no.such.queue"]).expect_contains(&["No groups"], "an empty queue");
}

/// What the workers saw: per group, the leases it holds now and the tasks in the
/// order they were handed out.
#[derive(Default)]
struct Seen {
    holding: HashMap<String, u32>,
    order: HashMap<String, Vec<usize>>,
    overlaps: u32,
}

/// `groups` groups of `per_group` tasks, due in order within each group; `workers`
/// pull workers per server lease (up to 5 at a time) and ack until every task is done.
/// Returns the overlaps seen (two leases of one group held at once).
pub fn run_grouped_workload(apis: &[Api], groups: usize, per_group: usize, workers: usize) -> u32 {
    let first = &apis[0];
    first.put(&format!("/v1/queues/{QUEUE}/settings"), json!({"group_concurrency": 1})).expect(201, "settings");
    for g in 0..groups {
        let now = common::now_ms();
        // Due soon (a time in the past would mean now), in index order; written newest
        // first so that insertion order is not due order.
        let tasks: Vec<_> = (0..per_group)
            .rev()
            .map(|i| {
                let due_at = now + 2_000 + 10 * i64::try_from(i).expect("a small index");
                json!({"key": format!("g{g:04}-t{i:03}"), "group": format!("customer-{g:04}"), "due_at": due_at})
            })
            .collect();
        first.post(&format!("/v1/queues/{QUEUE}/tasks"), json!({"tasks": tasks})).expect(200, "schedule");
    }
    // Every server reads the settings within a poll of its queue records.
    for api in apis {
        api.get_until(&format!("/v1/queues/{QUEUE}/settings"), "the group limit", |r| r.json["group_concurrency"] == 1);
    }
    let total = groups * per_group;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        for api in apis {
            for _ in 0..workers {
                let (seen, done, failed) = (seen.clone(), done.clone(), failed.clone());
                scope.spawn(move || {
                    while done.load(Ordering::SeqCst) < total && !failed.load(Ordering::SeqCst) {
                        let leases = api.lease(QUEUE, json!({"max": 5, "wait": "1s", "lease": "60s"}));
                        for lease in &leases {
                            let key = lease["task"]["key"].as_str().expect("a key").to_owned();
                            let group = lease["task"]["group"].as_str().expect("a group").to_owned();
                            let index: usize = key[key.len() - 3..].parse().expect("the task's index");
                            let mut s = seen.lock().expect("seen");
                            let held = s.holding.entry(group.clone()).or_default();
                            *held += 1;
                            if *held > 1 {
                                s.overlaps += 1;
                            }
                            s.order.entry(group).or_default().push(index);
                        }
                        for lease in &leases {
                            let group = lease["task"]["group"].as_str().expect("a group").to_owned();
                            // Released before the ack is sent: the server may hand the
                            // group's next task out as soon as the ack is applied.
                            *seen.lock().expect("seen").holding.get_mut(&group).expect("held") -= 1;
                            let lease_id = lease["lease_id"].as_str().expect("a lease id");
                            if api.ack(lease_id, json!({"outcome": "done"})).status != 204 {
                                failed.store(true, Ordering::SeqCst);
                            }
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        }
    });
    assert!(!failed.load(Ordering::SeqCst), "an ack was refused");
    let seen = seen.lock().expect("seen");
    assert_eq!(seen.order.len(), groups, "every group was served");
    for (group, order) in &seen.order {
        let expected: Vec<usize> = (0..per_group).collect();
        assert_eq!(order, &expected, "{group}: its tasks in due order, each once");
    }
    seen.overlaps
}

#[test]
fn group_concurrency_one_holds_each_group_to_one_lease_under_concurrent_workers() {
    let server = start_server();
    let overlaps = run_grouped_workload(&[Api::of(&server)], 50, 10, 6);
    println!("embedded store, 50 groups x 10 tasks, 6 workers: {overlaps} overlaps");
    assert_eq!(overlaps, 0, "two leases of one group were held at once");
}

/// The goal, scaled to a test's time: three servers on one Redis, 100 groups of
/// 10 tasks, `group_concurrency = 1` held across the servers.
#[test]
fn group_concurrency_one_holds_across_three_servers_on_one_redis() {
    let redis = punctual_testkit::redis::server();
    let servers: Vec<_> = (0..3).map(|_| common::start(common::server_builder().store(redis.url()))).collect();
    let apis: Vec<Api> = servers.iter().map(Api::of).collect();
    let overlaps = run_grouped_workload(&apis, 100, 10, 3);
    println!("Redis, 3 servers, 100 groups x 10 tasks, 3 workers each: {overlaps} overlaps");
    assert_eq!(overlaps, 0, "two leases of one group were held at once across the servers");
}
