//! Priorities as Redis keeps them: each lane's urgent set (`…:scheduled:urgent`,
//! `…:scheduled:target:urgent`) holds exactly the lane's scheduled tasks of priority
//! above 0, scored (9 − priority) · 2^48 + due, whatever script wrote them; urgent tasks
//! overtake a backlog of due tasks of priority 0 at once, on one shard and across
//! shards; and a sharded queue's processes hear of another's urgent tasks.
//!
//! Guards against an urgent set that leaks (an entry left for a task leased, completed,
//! cancelled, purged, replaced at priority 0 or moved to the other lane: it would be
//! looked at by every lease, or leased twice), one that misses a task (the task would
//! wait behind the backlog, in due order), and a sharded lease that takes a shard's
//! tasks of priority 0 while another shard holds due urgent ones, the case: an
//! urgent task scheduled behind 10,000 due ones went out after all of them.

use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseBatch, LeaseRequest, ListRequest, PurgeSelection};
use punctual_core::store::{PurgeRequest, RetryDeadRequest};
use punctual_core::{Lane, NewTask, Priority, QueueName, Store, Tag, TaskKey, TaskState, Timestamp, Wakeup};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use tokio::sync::broadcast;

use crate::support;

const NOW: i64 = 1_700_000_000_000;
/// The width of a priority's band in an urgent set's scores (`lua/common.lua`).
const BAND: i64 = 1 << 48;
const WAIT: Duration = Duration::from_secs(10);

fn at_secs(s: i64) -> Timestamp {
    Timestamp::from_millis(NOW + s * 1000)
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("a queue")
}

fn task(queue_name: &str, key: &str, due: Timestamp, level: u8) -> NewTask {
    let mut task = NewTask::new(queue(queue_name), TaskKey::new(key).expect("a key"), due);
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

async fn lease(store: &impl Store, queue_name: &str, lane: Lane, max: u32, now: Timestamp) -> LeaseBatch {
    let req = LeaseRequest::new(queue(queue_name), max, Duration::from_secs(30), now).in_lane(lane);
    store.lease(req).await.expect("lease")
}

fn keys_of(batch: &LeaseBatch) -> Vec<&str> {
    batch.leases.iter().map(|l| l.task.key.as_str()).collect()
}

async fn complete(store: &impl Store, batch: &LeaseBatch, i: usize, completion: Completion, now: Timestamp) {
    store.complete(CompleteRequest::new(batch.leases[i].token.clone(), completion, now)).await.expect("complete");
}

/// The members of one of shard 0's sets of `queue_name` under `prefix`, with scores.
fn members(prefix: &str, queue_name: &str, set: &str) -> Vec<(String, i64)> {
    let key = format!("{prefix}:{{{queue_name}}}:{set}");
    let reply = support::server().command(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]).expect("ZRANGE");
    let lines: Vec<&str> = reply.lines().collect();
    let mut found: Vec<(String, i64)> =
        lines.chunks(2).map(|pair| (pair[0].to_owned(), pair[1].parse::<f64>().expect("a score") as i64)).collect();
    found.sort();
    found
}

/// Each lane's urgent set holds exactly the lane's scheduled tasks of priority above 0,
/// each scored by its priority and due time.
async fn assert_urgent_sets_exact(store: &impl Store, prefix: &str, queue_name: &str, after: &str) {
    let listed = store.list(ListRequest::new(queue(queue_name), Some(TaskState::Scheduled), 1000, None));
    let scheduled = listed.await.expect("list").tasks;
    for (lane, set) in [(Lane::Handler, "scheduled:urgent"), (Lane::Target, "scheduled:target:urgent")] {
        let mut expected: Vec<(String, i64)> = scheduled
            .iter()
            .filter(|t| t.lane() == lane && t.priority > Priority::LOWEST)
            .map(|t| (t.key.to_string(), (9 - i64::from(t.priority.get())) * BAND + t.due_at.as_millis()))
            .collect();
        expected.sort();
        assert_eq!(members(prefix, queue_name, set), expected, "{set} after {after}");
    }
}

#[tokio::test]
async fn the_urgent_sets_hold_exactly_the_scheduled_tasks_of_priority_above_0() {
    let (prefix, q) = ("prio-sets", "sets");
    let store = support::on_server_under(prefix).await;
    let t0 = at_secs(0);
    let batch = vec![
        task(q, "a", at_secs(-10), 5),
        task(q, "b", at_secs(-9), 0),
        with_target(task(q, "c", at_secs(-8), 9)),
        task(q, "d", at_secs(-7), 3),
        task(q, "d", at_secs(-7), 0),
        task(q, "e", at_secs(-6), 2),
        with_target(task(q, "e", at_secs(-6), 4)),
        task(q, "f", at_secs(3600), 6),
        {
            let mut tagged = task(q, "g", at_secs(-5), 1);
            tagged.tags = vec![Tag::new("bulk").expect("a tag")];
            tagged
        },
        task(q, "h", at_secs(-4), 8),
    ];
    schedule(&store, batch, t0).await;
    assert_urgent_sets_exact(&store, prefix, q, "a batch writing keys twice, across lanes and priorities").await;
    assert_eq!(members(prefix, q, "scheduled:urgent").len(), 4, "a, f, g and h");
    schedule(&store, vec![task(q, "a", at_secs(-10), 0), task(q, "b", at_secs(-9), 7)], t0).await;
    assert_urgent_sets_exact(&store, prefix, q, "replaces to and from priority 0").await;

    let first = lease(&store, q, Lane::Handler, 2, t0).await;
    assert_eq!(keys_of(&first), ["h", "b"], "priority 8, then 7; f is not due");
    assert_urgent_sets_exact(&store, prefix, q, "a lease").await;
    complete(&store, &first, 0, Completion::Retry { at: at_secs(-1), error: "busy".into() }, t0).await;
    complete(&store, &first, 1, Completion::Reschedule { at: at_secs(60), anchor: at_secs(60) }, t0).await;
    assert_urgent_sets_exact(&store, prefix, q, "a retry and a reschedule").await;

    let retried = lease(&store, q, Lane::Handler, 1, t0).await;
    assert_eq!(keys_of(&retried), ["h"], "the retried task keeps its priority");
    store.release(&retried.leases[0].token, t0).await.expect("release");
    assert_urgent_sets_exact(&store, prefix, q, "a release").await;
    let expiring = lease(&store, q, Lane::Handler, 1, t0).await;
    assert_eq!(keys_of(&expiring), ["h"]);
    store.reap(at_secs(31), 10).await.expect("reap");
    assert_urgent_sets_exact(&store, prefix, q, "a reap").await;
    let dying = lease(&store, q, Lane::Handler, 1, at_secs(31)).await;
    assert_eq!(keys_of(&dying), ["h"], "an expired lease keeps its priority");
    complete(&store, &dying, 0, Completion::Dead { error: "no".into() }, at_secs(31)).await;
    assert_urgent_sets_exact(&store, prefix, q, "a death").await;
    let revived = store.retry_dead(RetryDeadRequest::new(queue(q), TaskKey::new("h").unwrap(), at_secs(32))).await;
    assert!(revived.expect("retry_dead").is_some());
    assert_urgent_sets_exact(&store, prefix, q, "a dead task retried").await;

    assert!(store.cancel(&queue(q), &TaskKey::new("h").unwrap(), None).await.expect("cancel"));
    assert_eq!(store.cancel_tag(&queue(q), &Tag::new("bulk").unwrap(), None).await.expect("cancel_tag"), 1);
    assert_urgent_sets_exact(&store, prefix, q, "a cancel and a tag's cancel").await;
    let targets = lease(&store, q, Lane::Target, 10, at_secs(32)).await;
    assert_eq!(keys_of(&targets), ["c", "e"], "the target lane's own urgent set, priority 9 then 4");
    for i in 0..2 {
        complete(&store, &targets, i, Completion::Done, at_secs(32)).await;
    }
    assert_urgent_sets_exact(&store, prefix, q, "leases completed").await;
    let left =
        [("b".to_owned(), 2 * BAND + at_secs(60).as_millis()), ("f".to_owned(), 3 * BAND + at_secs(3600).as_millis())];
    assert_eq!(members(prefix, q, "scheduled:urgent"), left, "the rescheduled task, and the one not due");
    store.purge(PurgeRequest::new(queue(q), PurgeSelection::Scheduled, 100)).await.expect("purge");
    for set in ["scheduled:urgent", "scheduled:target:urgent"] {
        let key = format!("{prefix}:{{{q}}}:{set}");
        assert_eq!(support::server().command(&["EXISTS", &key]).expect("EXISTS"), "0", "{set} after a purge");
    }
}

/// 10,000 tasks due at priority 0, then 100 at priority 9: the 100 go out within the
/// next two lease answers of 100, and leave no entry in the urgent set.
async fn urgent_tasks_overtake_a_backlog(store: &impl Store, prefix: &str, q: &str, shards: u32) {
    for chunk in 0..10 {
        let backlog = (0..1000).map(|i| task(q, &format!("backlog-{chunk}-{i}"), at_secs(-60), 0)).collect();
        schedule(store, backlog, at_secs(-61)).await;
    }
    let urgent = (0..100).map(|i| task(q, &format!("urgent-{i:03}"), at_secs(-1), 9)).collect();
    schedule(store, urgent, at_secs(-1)).await;
    let mut urgent_out = 0;
    for answer in 1..=2 {
        let batch = lease(store, q, Lane::Handler, 100, at_secs(0)).await;
        urgent_out += keys_of(&batch).iter().filter(|k| k.starts_with("urgent-")).count();
        for i in 0..batch.leases.len() {
            complete(store, &batch, i, Completion::Done, at_secs(0)).await;
        }
        if urgent_out == 100 {
            println!("{shards} shard(s): the 100 urgent tasks went out within {answer} lease answer(s)");
            break;
        }
    }
    assert_eq!(urgent_out, 100, "{shards} shard(s): urgent tasks still waiting after two leases of 100");
    for shard in 0..shards {
        let tag = if shard == 0 { q.to_owned() } else { format!("{q}/{shard}") };
        let key = format!("{prefix}:{{{tag}}}:scheduled:urgent");
        assert_eq!(support::server().command(&["EXISTS", &key]).expect("EXISTS"), "0", "shard {shard}");
    }
}

/// A store on the private server under `prefix`, every queue in `shards` shards, with
/// the default shard order slack.
async fn sharded_store(prefix: &str, shards: u32) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&support::server().url()).expect("server url"));
    config.prefix = prefix.into();
    config.default_shards = shards;
    config.time = TimeSource::Caller;
    RedisStore::connect(config).await.expect("connect")
}

#[tokio::test]
async fn urgent_tasks_overtake_ten_thousand_due_ones_within_two_leases() {
    let store = support::on_server_under("prio-backlog").await;
    urgent_tasks_overtake_a_backlog(&store, "prio-backlog", "backlog", 1).await;
}

#[tokio::test]
async fn urgent_tasks_overtake_ten_thousand_due_ones_across_four_shards() {
    let store = sharded_store("prio-backlog-sharded", 4).await;
    urgent_tasks_overtake_a_backlog(&store, "prio-backlog-sharded", "backlog", 4).await;
}

/// Schedules probes in fresh queues until one's wake-up is heard: the store subscribes
/// on its own time.
async fn until_subscribed(store: &impl Store, wakeups: &mut broadcast::Receiver<Wakeup>) {
    for probe in 0.. {
        let name = format!("probe-{probe}");
        schedule(store, vec![task(&name, "k", at_secs(0), 0)], at_secs(0)).await;
        let heard = tokio::time::timeout(Duration::from_millis(200), async {
            while wakeups.recv().await.expect("the wake-up channel").queue.as_str() != name {}
        });
        if heard.await.is_ok() {
            return;
        }
        assert!(probe < 50, "the store never heard its own wake-ups");
    }
}

#[tokio::test]
async fn a_process_hears_of_urgent_tasks_another_schedules_in_any_shard() {
    let prefix = "prio-heard";
    let (q, shards) = ("heard", 4);
    let (writer, leaser) = (sharded_store(prefix, shards).await, sharded_store(prefix, shards).await);
    let mut wakeups = leaser.peers().expect("a shared store has peers").wakeups;
    until_subscribed(&leaser, &mut wakeups).await;
    let backlog = (0..400).map(|i| task(q, &format!("backlog-{i}"), at_secs(-60), 0)).collect();
    schedule(&leaser, backlog, at_secs(-61)).await;
    // The leaser learns every shard's head (and that no shard holds urgent tasks).
    assert_eq!(lease(&leaser, q, Lane::Handler, 1, at_secs(0)).await.leases.len(), 1);
    // Urgent tasks in every shard, due after the backlog: no lane's head is earlier,
    // only each shard's urgent band (one wake-up per shard).
    let urgent: Vec<NewTask> = (0..40).map(|i| task(q, &format!("urgent-{i}"), at_secs(-1), 9)).collect();
    schedule(&writer, urgent, at_secs(-1)).await;
    let mut heard = 0;
    while heard < shards {
        let wakeup = tokio::time::timeout(WAIT, wakeups.recv()).await.expect("a wake-up in time").expect("channel");
        if wakeup.queue.as_str() == q && wakeup.due_at == at_secs(-1) {
            heard += 1;
        }
    }
    // Its heads, learnt a moment ago, are still trusted: it finds the urgent tasks only
    // through the wake-ups.
    let batch = lease(&leaser, q, Lane::Handler, 40, at_secs(0)).await;
    let keys = keys_of(&batch);
    assert!(keys.iter().all(|k| k.starts_with("urgent-")), "a task of priority 0 before urgent ones: {keys:?}");
    assert_eq!(keys.len(), 40, "{keys:?}");
}
