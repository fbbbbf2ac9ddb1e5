//! Guards against priorities that hold in process but not through the binary: a
//! `priority` lost between the HTTP body and the store, or a lease over HTTP that hands
//! out a backlog in due order while urgent tasks wait behind it — on the embedded store
//! and on Redis.
//!
//! The goal of issue R: 10,000 tasks due at priority 0, then 100 due at priority 9:
//! the 100 are handed out within the next 2 lease answers.

use crate::common;

use common::{Api, server_builder, start, start_server};
use punctual_testkit::redis;
use punctual_testkit::server::ServerProcess;
use serde_json::json;

const BACKLOG: usize = 10_000;
const URGENT: usize = 100;

fn urgent_within_two_lease_answers(server: &ServerProcess) {
    let api = Api::of(server);
    for first in (0..BACKLOG).step_by(1_000) {
        let tasks: Vec<_> = (first..first + 1_000).map(|n| json!({"key": format!("backlog-{n:05}")})).collect();
        let answer = api.post("/v1/queues/order.cancel/tasks", json!({"tasks": tasks}));
        let results = answer.expect(200, "schedule the backlog")["results"].as_array().expect("results").clone();
        assert!(results.iter().all(|r| r["outcome"] == "created"), "{}", answer.text);
    }
    let tasks: Vec<_> = (0..URGENT).map(|n| json!({"key": format!("urgent-{n:03}"), "priority": 9})).collect();
    api.post("/v1/queues/order.cancel/tasks", json!({"tasks": tasks})).expect(200, "schedule the urgent tasks");
    assert_eq!(api.task("order.cancel", "urgent-000").expect(200, "GET")["priority"], 9);

    let mut urgent_per_answer = Vec::new();
    for answer in 0..2 {
        let leases = api.lease("order.cancel", json!({"max": URGENT}));
        assert_eq!(leases.len(), URGENT, "answer {answer}: a full batch is due");
        urgent_per_answer.push(leases.iter().filter(|lease| lease["task"]["priority"] == 9).count());
    }
    println!("urgent tasks per lease answer of {URGENT}, after a due backlog of {BACKLOG}: {urgent_per_answer:?}");
    assert_eq!(urgent_per_answer.iter().sum::<usize>(), URGENT, "every urgent task within the next 2 lease answers");
}

#[test]
fn urgent_tasks_overtake_a_due_backlog_on_the_embedded_store() {
    urgent_within_two_lease_answers(&start_server());
}

#[test]
fn urgent_tasks_overtake_a_due_backlog_on_redis() {
    let redis = redis::server();
    urgent_within_two_lease_answers(&start(server_builder().store(redis.url())));
}
