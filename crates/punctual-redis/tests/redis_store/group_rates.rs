//! Group rates as Redis keeps them: each lease of a grouped task under `group_rate`
//! takes a slot in `groups:slots` (and the group's latest end in `groups:slots:ends`),
//! kept when the group's tasks go and dropped by a lease under a rate once every slot
//! of the group ended; a lease without a rate writes none. Each scenario runs on the
//! reference store first, so its expectations are the contract's.
//!
//! Guards against paths the conformance checks do not reach: a group of urgent tasks
//! (the lease reads every ready group's head and takes offers from a heap) leased
//! past its rate within one call, and a next due time that takes a waiting group held
//! by its rate for one due before a ready group's room; and against slots that leak
//! (never dropped) or go with the group's tasks.

use std::collections::BTreeMap;
use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::store::{CompleteRequest, Completion, LeaseBatch, LeaseRequest};
use punctual_core::{Group, MemoryStore, NewTask, Priority, QueueName, Store, TaskKey, Timestamp};

use crate::support;

const NOW: i64 = 1_700_000_000_000;
const QUEUE: &str = "rated";

fn at_secs(s: i64) -> Timestamp {
    Timestamp::from_millis(NOW + s * 1000)
}

fn task(key: &str, due: Timestamp, group: Option<&str>, level: u8) -> NewTask {
    let mut task = NewTask::new(QueueName::new(QUEUE).expect("a queue"), TaskKey::new(key).expect("a key"), due);
    task.group = group.map(|g| Group::new(g).expect("a group"));
    task.priority = Priority::new(level.into()).expect("a priority");
    task
}

async fn schedule(store: &impl Store, tasks: Vec<NewTask>, now: Timestamp) {
    for result in store.schedule(tasks, now).await.expect("schedule") {
        result.expect("each write applies");
    }
}

/// A lease of up to `max` under `count` a minute (`None`: no rate).
async fn lease(store: &impl Store, max: u32, count: Option<u32>, now: Timestamp) -> LeaseBatch {
    let rate = count.map(|count| Rate { count, per: Duration::from_secs(60) });
    let req = LeaseRequest::new(QueueName::new(QUEUE).expect("a queue"), max, Duration::from_secs(30), now);
    store.lease(req.group_rate(rate)).await.expect("lease")
}

fn keys_of(batch: &LeaseBatch) -> Vec<&str> {
    batch.leases.iter().map(|l| l.task.key.as_str()).collect()
}

fn connection() -> redis::Connection {
    redis::Client::open(support::server().url()).expect("a client").get_connection().expect("a connection")
}

fn key_of(prefix: &str, name: &str) -> String {
    format!("{prefix}:{{{QUEUE}}}:{name}")
}

fn slots(prefix: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL").arg(key_of(prefix, "groups:slots")).query(&mut connection()).expect("HGETALL")
}

fn slot_ends(prefix: &str) -> BTreeMap<String, i64> {
    let found: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(key_of(prefix, "groups:slots:ends"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut connection())
        .expect("ZRANGE");
    found.into_iter().map(|(group, score)| (group, score as i64)).collect()
}

fn exists(prefix: &str, name: &str) -> bool {
    redis::cmd("EXISTS").arg(key_of(prefix, name)).query::<i64>(&mut connection()).expect("EXISTS") == 1
}

/// Two groups leased under 2 a minute: g twice, h once, their slots kept while their
/// tasks go; a lease without a rate and one within the window leave them.
async fn leases_take_slots_that_outlive_the_tasks(store: &impl Store) {
    let tasks = vec![task("a", at_secs(-2), Some("g"), 0), task("b", at_secs(-1), Some("g"), 0)];
    schedule(store, [tasks, vec![task("c", at_secs(-1), Some("h"), 0)]].concat(), at_secs(0)).await;
    let batch = lease(store, 10, Some(2), at_secs(0)).await;
    assert_eq!(keys_of(&batch), ["a", "c", "b"], "groups by name at turn 0, then g again");
    for lease in &batch.leases {
        let done = CompleteRequest::new(lease.token.clone(), Completion::Done, at_secs(0));
        store.complete(done).await.expect("complete");
    }
    schedule(store, vec![task("d", at_secs(1), Some("g"), 0)], at_secs(1)).await;
    let held = lease(store, 10, Some(2), at_secs(59)).await;
    assert_eq!((keys_of(&held), held.next_due), (vec![], Some(at_secs(60))), "g's tasks went, its slots stay");
    let unrated = lease(store, 10, None, at_secs(59)).await;
    assert_eq!(keys_of(&unrated), ["d"], "without a rate, no slot holds g");
}

#[tokio::test]
async fn slots_outlive_the_groups_tasks_and_go_once_every_one_ended() {
    leases_take_slots_that_outlive_the_tasks(&MemoryStore::new()).await;
    let prefix = "group-rate-slots";
    let store = support::on_server_under(prefix).await;
    leases_take_slots_that_outlive_the_tasks(&store).await;
    let (t0, until) = (at_secs(0).as_millis(), at_secs(60).as_millis());
    let expected: BTreeMap<String, String> =
        [("g".into(), format!("{t0}+60000 {t0}+60000")), ("h".into(), format!("{t0}+60000"))].into();
    assert_eq!(slots(prefix), expected, "one slot a lease under the rate, none without");
    assert_eq!(slot_ends(prefix), [("g".into(), until), ("h".into(), until)].into());
    assert_eq!(
        redis::cmd("HLEN").arg(key_of(prefix, "groups:counts")).query::<i64>(&mut connection()).expect("HLEN"),
        1,
        "h has no task left: its counts went, its slot stays"
    );
    let trimmed = lease(&store, 10, Some(2), at_secs(60)).await;
    assert!(trimmed.leases.is_empty(), "d is leased");
    assert!(!exists(prefix, "groups:slots") && !exists(prefix, "groups:slots:ends"), "every slot ended at 60 s");
}

/// A group of urgent tasks under 1 a minute gets one lease per call and per minute.
async fn urgent_tasks_of_a_group_hold_the_rate(store: &impl Store) {
    let grouped = vec![task("u1", at_secs(-3), Some("g"), 5), task("u2", at_secs(-2), Some("g"), 5)];
    schedule(store, [grouped, vec![task("plain", at_secs(-1), None, 0)]].concat(), at_secs(0)).await;
    let first = lease(store, 3, Some(1), at_secs(0)).await;
    assert_eq!(keys_of(&first), ["u1", "plain"], "one of g, then the ungrouped task");
    assert_eq!(first.next_due, Some(at_secs(60)), "g has room a minute later");
    let later = lease(store, 3, Some(1), at_secs(60)).await;
    assert_eq!((keys_of(&later), later.next_due), (vec!["u2"], None));
}

#[tokio::test]
async fn a_group_of_urgent_tasks_is_leased_no_faster_than_its_rate() {
    urgent_tasks_of_a_group_hold_the_rate(&MemoryStore::new()).await;
    urgent_tasks_of_a_group_hold_the_rate(&support::on_server().await).await;
}

/// g has room at 60 s and a task due; w's task falls due at 15 s but w has room only at
/// 70 s: the queue has work next at 60 s.
async fn the_earliest_room_among_held_groups_is_the_next_due_time(store: &impl Store) {
    schedule(store, vec![task("g1", at_secs(-1), Some("g"), 0), task("w1", at_secs(5), Some("w"), 0)], at_secs(0))
        .await;
    assert_eq!(keys_of(&lease(store, 10, Some(1), at_secs(0)).await), ["g1"]);
    assert_eq!(keys_of(&lease(store, 10, Some(1), at_secs(10)).await), ["w1"]);
    schedule(store, vec![task("g2", at_secs(10), Some("g"), 0), task("w2", at_secs(15), Some("w"), 0)], at_secs(10))
        .await;
    let held = lease(store, 10, Some(1), at_secs(12)).await;
    assert_eq!((keys_of(&held), held.next_due), (vec![], Some(at_secs(60))));
    let unrated = lease(store, 10, None, at_secs(12)).await;
    assert_eq!((keys_of(&unrated), unrated.next_due), (vec!["g2"], Some(at_secs(15))));
}

#[tokio::test]
async fn a_waiting_group_held_longer_than_a_ready_one_leaves_the_ready_ones_room_next() {
    the_earliest_room_among_held_groups_is_the_next_due_time(&MemoryStore::new()).await;
    the_earliest_room_among_held_groups_is_the_next_due_time(&support::on_server().await).await;
}
