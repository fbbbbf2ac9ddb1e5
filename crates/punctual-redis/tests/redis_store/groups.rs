//! Groups as Redis keeps them: whatever script wrote them, a scheduled task with a
//! group is in `scheduled:grouped` and its lane's group set (and in no lane set), each
//! group with such tasks is in the lane's `groups:scheduled` in the region of its state
//! (waiting at its earliest due time, ready at its turn, parked), and `groups` and
//! `groups:counts` name exactly the groups with tasks and count them by state; a queue
//! without groups keeps none of it; the record holds the group in its 17th field; and
//! a lease ending on one process wakes another's consumers when the group has work.
//!
//! Guards against a group set or count that leaks or drifts (a lease ended by a reap,
//! a cancel or a purge that never gives its group room back, so the group never runs
//! again; a group whose last task went but whose turn stays), a grouped task left in a
//! lane set (leased past its group's limit), and a group limit that holds on one node
//! only because the others are never told the group has room (tasks waiting for the
//! safety poll).

use std::collections::BTreeMap;
use std::time::Duration;

use punctual_core::store::{
    CompleteRequest, Completion, GroupsRequest, LeaseBatch, LeaseRequest, ListRequest, PurgeRequest, PurgeSelection,
    RetryDeadRequest, SweepRequest,
};
use punctual_core::{Group, Lane, NewTask, Priority, QueueName, Store, Tag, TaskKey, TaskState, Timestamp};

use crate::support;

const NOW: i64 = 1_700_000_000_000;

fn at_secs(s: i64) -> Timestamp {
    Timestamp::from_millis(NOW + s * 1000)
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("a queue")
}

fn task(queue_name: &str, key: &str, due: Timestamp, group: Option<&str>, level: u8) -> NewTask {
    let mut task = NewTask::new(queue(queue_name), TaskKey::new(key).expect("a key"), due);
    task.group = group.map(|g| Group::new(g).expect("a group"));
    task.priority = Priority::new(level.into()).expect("a priority");
    task
}

fn with_target(mut task: NewTask) -> NewTask {
    task.target = Some(punctual_core::Target::new("http://127.0.0.1:9/hook").expect("a target"));
    task
}

async fn schedule(store: &impl Store, tasks: Vec<NewTask>, now: Timestamp) {
    for result in store.schedule(tasks, now).await.expect("schedule") {
        result.expect("each write applies");
    }
}

async fn lease(store: &impl Store, q: &str, lane: Lane, max: u32, limit: Option<u32>, now: Timestamp) -> LeaseBatch {
    let req = LeaseRequest::new(queue(q), max, Duration::from_secs(30), now).in_lane(lane).group_limit(limit);
    store.lease(req).await.expect("lease")
}

fn keys_of(batch: &LeaseBatch) -> Vec<&str> {
    batch.leases.iter().map(|l| l.task.key.as_str()).collect()
}

async fn complete(store: &impl Store, batch: &LeaseBatch, i: usize, completion: Completion, now: Timestamp) {
    store.complete(CompleteRequest::new(batch.leases[i].token.clone(), completion, now)).await.expect("complete");
}

fn connection() -> redis::Connection {
    redis::Client::open(support::server().url()).expect("a client").get_connection().expect("a connection")
}

fn key_of(prefix: &str, q: &str, name: &str) -> String {
    format!("{prefix}:{{{q}}}:{name}")
}

/// The members of a sorted set of shard 0, with their scores, in Redis' order.
fn zset(prefix: &str, q: &str, name: &str) -> Vec<(String, i64)> {
    let found: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(key_of(prefix, q, name))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut connection())
        .expect("ZRANGE");
    found.into_iter().map(|(member, score)| (member, score as i64)).collect()
}

fn hash(prefix: &str, q: &str, name: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL").arg(key_of(prefix, q, name)).query(&mut connection()).expect("HGETALL")
}

/// The regions of a lane's groups' scores: parked from 2^50, waiting from 2^51.
const PARKED: i64 = 1 << 50;
const WAITING: i64 = 1 << 51;

/// A task's member of its lane's group set (`lua/common.lua`).
fn member(group: &str, priority: u8, due: Timestamp, key: &str) -> String {
    format!("{group}\n{}{:012x}\n{key}", 9 - priority, due.as_millis())
}

/// Every group key of `q` holds exactly what its tasks say, and `Store::groups` lists
/// the same counts.
async fn assert_group_keys_exact(store: &impl Store, prefix: &str, q: &str, after: &str) {
    let listed = store.list(ListRequest::new(queue(q), None, 1000, None)).await.expect("list").tasks;
    let grouped = |lane: Option<Lane>| {
        listed.iter().filter(move |t| {
            t.group.is_some() && t.state == TaskState::Scheduled && lane.is_none_or(|lane| t.lane() == lane)
        })
    };
    let mut by_due: Vec<(String, i64)> = grouped(None).map(|t| (t.key.to_string(), t.due_at.as_millis())).collect();
    by_due.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    assert_eq!(zset(prefix, q, "scheduled:grouped"), by_due, "scheduled:grouped after {after}");
    let counts_and_turns = hash(prefix, q, "groups:counts");
    let turn_of = |group: &str| -> i64 {
        let text = counts_and_turns.get(group).unwrap_or_else(|| panic!("{group} has counts after {after}"));
        text.rsplit(',').next().and_then(|turn| turn.parse().ok()).expect("a turn")
    };
    for (lane, set, order, ready) in [
        (Lane::Handler, "scheduled:groups", "groups:scheduled", "groups:ready"),
        (Lane::Target, "scheduled:target:groups", "groups:target:scheduled", "groups:target:ready"),
    ] {
        let group_of = |t: &punctual_core::Task| t.group.as_ref().expect("grouped").to_string();
        let mut members: Vec<(String, i64)> = grouped(Some(lane))
            .map(|t| (member(&group_of(t), t.priority.get(), t.due_at, t.key.as_str()), 0))
            .collect();
        members.sort();
        assert_eq!(zset(prefix, q, set), members, "{set} after {after}");
        let mut earliest: BTreeMap<String, i64> = BTreeMap::new();
        for t in grouped(Some(lane)) {
            let due = earliest.entry(group_of(t)).or_insert(i64::MAX);
            *due = (*due).min(t.due_at.as_millis());
        }
        // Each group with tasks in the lane, and only those, in the region of its state.
        let found: BTreeMap<String, i64> = zset(prefix, q, order).into_iter().collect();
        assert_eq!(found.keys().collect::<Vec<_>>(), earliest.keys().collect::<Vec<_>>(), "{order} after {after}");
        // The ready ones, and only those, in the ready index at their earliest due time.
        let ready_earliest: BTreeMap<String, i64> = found
            .iter()
            .filter(|(_, score)| **score < PARKED)
            .map(|(group, _)| (group.clone(), earliest[group]))
            .collect();
        let indexed: BTreeMap<String, i64> = zset(prefix, q, ready).into_iter().collect();
        assert_eq!(indexed, ready_earliest, "{ready} after {after}");
        for (group, score) in found {
            let leased = listed
                .iter()
                .filter(|t| t.state == TaskState::Leased && t.group.as_ref().is_some_and(|g| g.as_str() == group));
            match score {
                s if s >= WAITING => {
                    assert_eq!(s - WAITING, earliest[&group], "{group} waits in {order} after {after}")
                }
                s if s >= PARKED => {
                    let at_park = s - PARKED;
                    assert!(
                        at_park >= 1 && at_park <= leased.count() as i64,
                        "{group} parked in {order} after {after}"
                    );
                }
                turn => assert_eq!(turn, turn_of(&group), "{group} ready in {order} after {after}"),
            }
        }
        let urgent = grouped(Some(lane)).filter(|t| t.priority > Priority::LOWEST).count();
        let field = if lane == Lane::Handler { "urgent" } else { "urgent:target" };
        let counted = hash(prefix, q, "turns").get(field).map(|n| n.parse::<usize>().expect("a count"));
        assert_eq!(counted, (urgent > 0).then_some(urgent), "turns' {field} after {after}");
    }
    for set in ["scheduled", "scheduled:target", "scheduled:urgent", "scheduled:target:urgent"] {
        let in_set: Vec<String> = zset(prefix, q, set).into_iter().map(|(k, _)| k).collect();
        let strays: Vec<&String> = in_set.iter().filter(|k| grouped(None).any(|t| t.key.as_str() == *k)).collect();
        assert!(strays.is_empty(), "grouped tasks {strays:?} in {set} after {after}");
    }
    let mut counts: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for t in listed.iter().filter(|t| t.group.is_some()) {
        let state = match t.state {
            TaskState::Scheduled => 0,
            TaskState::Leased => 1,
            TaskState::Dead => 2,
        };
        counts.entry(t.group.as_ref().expect("grouped").to_string()).or_default()[state] += 1;
    }
    let names: Vec<String> = zset(prefix, q, "groups").into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, counts.keys().cloned().collect::<Vec<_>>(), "groups after {after}");
    let stored: BTreeMap<String, [u64; 3]> = hash(prefix, q, "groups:counts")
        .into_iter()
        .map(|(group, text)| {
            let n: Vec<u64> = text.split(',').map(|n| n.parse().expect("a count")).collect();
            (group, [n[0], n[1], n[2]])
        })
        .collect();
    assert_eq!(stored, counts, "groups:counts after {after}");
    let page = store.groups(GroupsRequest::new(queue(q), 100, None)).await.expect("groups");
    let listed: BTreeMap<String, [u64; 3]> =
        page.groups.iter().map(|g| (g.group.to_string(), [g.scheduled, g.leased, g.dead])).collect();
    assert_eq!(listed, counts, "Store::groups after {after}");
}

#[tokio::test]
async fn the_group_keys_hold_exactly_what_the_tasks_say_after_every_kind_of_write() {
    let (prefix, q) = ("group-keys", "keys");
    let store = support::on_server_under(prefix).await;
    let t0 = at_secs(0);
    let tagged = |mut task: NewTask| {
        task.tags = vec![Tag::new("bulk").expect("a tag")];
        task
    };
    let batch = vec![
        task(q, "a", at_secs(-10), Some("g1"), 0),
        task(q, "b", at_secs(-9), Some("g1"), 5),
        with_target(task(q, "c", at_secs(-8), Some("g2"), 0)),
        // Written twice: without a group, then with; with, then without; two groups.
        task(q, "d", at_secs(-7), None, 3),
        task(q, "d", at_secs(-7), Some("g2"), 0),
        task(q, "e", at_secs(-6), Some("g3"), 0),
        with_target(task(q, "e", at_secs(-6), None, 4)),
        task(q, "f", at_secs(-5), Some("g1"), 0),
        task(q, "f", at_secs(-5), Some("g3"), 2),
        task(q, "g", at_secs(3600), Some("g3"), 0),
        tagged(task(q, "h", at_secs(-4), Some("g4"), 0)),
        task(q, "u", at_secs(-3), None, 0),
    ];
    schedule(&store, batch, t0).await;
    assert_group_keys_exact(&store, prefix, q, "a batch writing keys twice, into and out of groups").await;
    schedule(&store, vec![task(q, "a", at_secs(-11), Some("g4"), 1), task(q, "u", at_secs(-3), Some("g1"), 0)], t0)
        .await;
    assert_group_keys_exact(&store, prefix, q, "replaces moving tasks between groups").await;

    // g1: b (priority 5), u; g2: d; g3: f (priority 2), g (not due); g4: a (priority 1), h.
    let first = lease(&store, q, Lane::Handler, 3, Some(1), t0).await;
    assert_eq!(keys_of(&first), ["b", "f", "a"], "each group's head, the highest priority first");
    assert_group_keys_exact(&store, prefix, q, "a lease").await;
    complete(&store, &first, 0, Completion::Retry { at: at_secs(-1), error: "busy".into() }, t0).await;
    complete(&store, &first, 1, Completion::Reschedule { at: at_secs(60), anchor: at_secs(60) }, t0).await;
    complete(&store, &first, 2, Completion::Done, t0).await;
    assert_group_keys_exact(&store, prefix, q, "a retry, a reschedule and a done").await;

    let second = lease(&store, q, Lane::Handler, 2, Some(1), t0).await;
    assert_eq!(keys_of(&second), ["b", "d"], "g1's retried task keeps its priority; then g2's, the lower turn");
    store.release(&second.leases[0].token, t0).await.expect("release");
    assert_group_keys_exact(&store, prefix, q, "a release").await;
    store.reap(at_secs(31), 10).await.expect("reap");
    assert_group_keys_exact(&store, prefix, q, "a reap").await;
    let dying = lease(&store, q, Lane::Handler, 1, Some(1), at_secs(31)).await;
    assert_eq!(keys_of(&dying), ["b"]);
    complete(&store, &dying, 0, Completion::Dead { error: "no".into() }, at_secs(31)).await;
    assert_group_keys_exact(&store, prefix, q, "a death").await;
    let revived =
        store.retry_dead(RetryDeadRequest::new(queue(q), TaskKey::new("b").expect("a key"), at_secs(32))).await;
    assert!(revived.expect("retry_dead").is_some());
    assert_group_keys_exact(&store, prefix, q, "a dead task retried").await;

    let targets = lease(&store, q, Lane::Target, 10, Some(1), at_secs(32)).await;
    assert_eq!(keys_of(&targets), ["e", "c"], "the target lane: the ungrouped priority 4, then g2's");
    assert_group_keys_exact(&store, prefix, q, "a lease of the target lane").await;
    assert!(store.cancel(&queue(q), &TaskKey::new("c").expect("a key"), None).await.expect("cancel"), "a leased task");
    assert_eq!(store.cancel_tag(&queue(q), &Tag::new("bulk").expect("a tag"), None).await.expect("cancel_tag"), 1);
    assert_group_keys_exact(&store, prefix, q, "a cancel of a leased task and a tag's cancel").await;
    let doomed = lease(&store, q, Lane::Handler, 10, None, at_secs(32)).await;
    assert!(!doomed.leases.is_empty());
    complete(&store, &doomed, 0, Completion::Dead { error: "no".into() }, at_secs(32)).await;
    store.purge(PurgeRequest::new(queue(q), PurgeSelection::Scheduled, 100)).await.expect("purge");
    assert_group_keys_exact(&store, prefix, q, "a death and a purge of the scheduled tasks").await;
    store.sweep_dead(SweepRequest::new(queue(q), at_secs(40), 100)).await.expect("sweep");
    store.purge(PurgeRequest::new(queue(q), PurgeSelection::All, 100)).await.expect("purge");
    assert_group_keys_exact(&store, prefix, q, "a sweep and a purge of everything").await;
    for name in ["groups", "groups:counts", "groups:scheduled", "groups:ready", "scheduled:groups", "scheduled:grouped"]
    {
        let exists: i64 = redis::cmd("EXISTS").arg(key_of(prefix, q, name)).query(&mut connection()).expect("EXISTS");
        assert_eq!(exists, 0, "{name} once the queue is empty");
    }
}

#[tokio::test]
async fn a_queue_without_groups_keeps_no_group_key_but_its_turns() {
    let (prefix, q) = ("group-none", "plain");
    let store = support::on_server_under(prefix).await;
    schedule(
        &store,
        (0..20).map(|i| task(q, &format!("k{i}"), at_secs(-1), None, (i % 3) as u8)).collect(),
        at_secs(0),
    )
    .await;
    let batch = lease(&store, q, Lane::Handler, 10, Some(1), at_secs(0)).await;
    assert_eq!(batch.leases.len(), 10, "a group limit is no limit on ungrouped tasks");
    for i in 0..10 {
        complete(&store, &batch, i, Completion::Retry { at: at_secs(5), error: "x".into() }, at_secs(0)).await;
    }
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{prefix}:{{{q}}}:*")).query(&mut connection()).expect("KEYS");
    let group_keys: Vec<&str> = keys
        .iter()
        .filter_map(|k| k.split_once("}:").map(|(_, name)| name))
        .filter(|name| name.contains("group") || *name == "turns")
        .collect();
    assert_eq!(group_keys, ["turns"], "{keys:?}");
    assert_eq!(
        hash(prefix, q, "turns").into_iter().collect::<Vec<_>>(),
        [("last".into(), "1".into()), ("ungrouped".into(), "1".into())]
    );
}

#[tokio::test]
async fn the_group_is_the_records_17th_field_through_lease_and_debounce() {
    let (prefix, q) = ("group-record", "record");
    let store = support::on_server_under(prefix).await;
    let mut debounced = task(q, "debounced", at_secs(-1), Some("customer-42"), 0);
    debounced.debounce = Some(Duration::from_secs(60));
    schedule(&store, vec![task(q, "plain", at_secs(-2), Some("customer-42"), 0), debounced], at_secs(-3)).await;
    let record = |key: &str| -> String {
        redis::cmd("HGET").arg(key_of(prefix, q, "tasks")).arg(key).query(&mut connection()).expect("HGET")
    };
    let (header, texts) = record("plain").split_once('|').map(|(h, t)| (h.to_owned(), t.to_owned())).expect("a header");
    assert_eq!(header.split(',').count(), 17, "{header}");
    assert!(header.ends_with(",b"), "the group's 11 bytes: {header}");
    assert_eq!(texts, "customer-42", "no payload: the group's text is the whole rest");
    let batch = lease(&store, q, Lane::Handler, 10, None, at_secs(0)).await;
    assert_eq!(keys_of(&batch), ["plain", "debounced"], "one group, in due order");
    for key in ["plain", "debounced"] {
        let leased = record(key);
        let (header, texts) = leased.split_once('|').expect("a header");
        let fields: Vec<&str> = header.split(',').collect();
        assert_eq!((fields.len(), fields[15], fields[16], texts), (17, "", "b", "customer-42"), "{leased}");
        let stored = store.get(&queue(q), &TaskKey::new(key).expect("a key")).await.expect("get").expect("the task");
        assert_eq!(stored.group.as_ref().map(Group::as_str), Some("customer-42"));
        assert_eq!((stored.state, stored.meta.debounce_until), (TaskState::Leased, None), "{key}");
    }
}
