//! Task history on Redis, beyond what the conformance suite checks on every store: the
//! scripts build each event themselves (`lua/common.lua`, `tell`), so a replace must
//! name exactly the fields the memory store names, a script that writes one key more
//! than the limit of times must still keep only the latest, a group commit and a
//! lease of many tasks must tell each task its own event, and the stored form must
//! stay compact and in the task's shard.
//!
//! Guards against a replace that names a field it did not change (or misses one), a
//! history trimmed wrong when one call overflows it, an event lost or given to the
//! wrong key in a batch, an actor written as `null`, and a history that grows past its
//! bytes or leaves its shard.

use std::time::Duration;

use punctual_core::history::{self, AckOutcome, Actor, EventKind, HISTORY_LIMIT, HistoryEvent};
use punctual_core::store::{
    CompleteRequest, Completion, HistoryRequest, HistorySweepRequest, LeaseRequest, LeaseToken,
};
use punctual_core::{
    Backoff, Group, MemoryStore, NewTask, Priority, QueueName, Store, Tag, Target, TaskKey, TaskState, Timestamp,
    Unique,
};
use serde_json::json;

use crate::support;

const T0: i64 = 1_765_000_000_000;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_millis(T0 + secs * 1000)
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("a queue name")
}

fn key(name: &str) -> TaskKey {
    TaskKey::new(name).expect("a key")
}

fn task(queue_name: &str, key_name: &str, due: Timestamp) -> NewTask {
    NewTask::new(queue(queue_name), key(key_name), due)
}

async fn history_of<S: Store>(store: &S, queue_name: &str, key_name: &str) -> Vec<HistoryEvent> {
    let request = HistoryRequest::new(queue(queue_name), key(key_name), Timestamp::EPOCH);
    store.history(request).await.expect("history")
}

fn kinds(events: &[HistoryEvent]) -> Vec<EventKind> {
    events.iter().map(|event| event.kind).collect()
}

async fn write<S: Store>(store: &S, task: NewTask, now: Timestamp) {
    for result in store.schedule(vec![task], now).await.expect("schedule") {
        result.expect("written");
    }
}

/// The first write of a key.
fn first_write() -> NewTask {
    let mut first = task("orders", "remind", at(600));
    first.payload = json!({"order": 7});
    first.tags = vec![Tag::new("x").expect("a tag")];
    first.max_attempts = 5;
    first
}

/// Changes to [`first_write`], each with the fields a replace by it names.
fn changes() -> Vec<(Vec<&'static str>, NewTask)> {
    let changed = |names: &[&'static str], change: &dyn Fn(&mut NewTask)| {
        let mut task = first_write();
        change(&mut task);
        (names.to_vec(), task)
    };
    let backoff = || Backoff::new(Duration::from_secs(2), 3.0, Duration::from_secs(60)).expect("a backoff");
    vec![
        changed(&["due_at"], &|t| t.due_at = at(900)),
        changed(&["payload"], &|t| t.payload = json!({"order": 8})),
        changed(&["payload"], &|t| t.payload = serde_json::Value::Null),
        changed(&["tags"], &|t| t.tags.push(Tag::new("y").expect("a tag"))),
        changed(&["priority"], &|t| t.priority = Priority::new(3).expect("a priority")),
        changed(&["group"], &|t| t.group = Some(Group::new("customer-1").expect("a group"))),
        changed(&["target"], &|t| t.target = Some(Target::new("https://hooks.example.com/r").expect("a target"))),
        changed(&["policies"], &|t| t.max_attempts = 7),
        changed(&["policies"], &|t| t.unique_for = Some(Unique::new(Duration::from_secs(60)))),
        changed(&["policies"], &|t| t.unique_for = Some(Unique::new(Duration::from_secs(60)).counting_dead())),
        changed(&["policies"], &|t| t.backoff = backoff()),
        changed(&["due_at", "payload", "tags", "priority", "group", "target", "policies"], &|t| {
            t.due_at = at(1200);
            t.payload = json!({"order": 9});
            t.tags.clear();
            t.priority = Priority::new(9).expect("a priority");
            t.group = Some(Group::new("customer-2").expect("a group"));
            t.target = Some(Target::new("https://hooks.example.com/r").expect("a target"));
            t.max_attempts = 2;
        }),
    ]
}

/// The scripts compare the old and new records field by field, in Lua; the memory
/// store compares the tasks (`history::changed_fields`): both name the same fields,
/// each change named by its replace and by the replace that undoes it.
#[tokio::test]
async fn a_replace_names_the_fields_it_changed_as_the_memory_store_does() {
    let (redis, memory) = (support::on_server().await, MemoryStore::new());
    let mut writes = vec![first_write(), first_write()];
    for (_, change) in changes() {
        writes.extend([change, first_write()]);
    }
    for (i, write_task) in writes.iter().enumerate() {
        let now = at(i as i64);
        write(&redis, write_task.clone(), now).await;
        write(&memory, write_task.clone(), now).await;
    }
    let (told, expected) =
        (history_of(&redis, "orders", "remind").await, history_of(&memory, "orders", "remind").await);
    assert_eq!(told.len(), writes.len(), "{told:#?}");
    assert_eq!(told, expected, "Redis tells what the memory store tells");
    assert!(told[1].changed.is_empty(), "a replace with the same task changes nothing");
    for (i, (names, _)) in changes().into_iter().enumerate() {
        assert_eq!(told[2 + 2 * i].changed, names, "change {i}");
        assert_eq!(told[3 + 2 * i].changed, names, "change {i} undone");
    }
}

/// One schedule call writing one key more often than the limit: the script trims what
/// it appends too, oldest first.
#[tokio::test]
async fn one_call_writing_a_key_past_the_limit_keeps_its_latest_events() {
    let store = support::on_server().await;
    let writes = HISTORY_LIMIT + 7;
    let batch: Vec<NewTask> = (0..writes)
        .map(|i| {
            let mut write = task("orders", "busy", at(100 + i as i64));
            write.by = Some(Actor::new(format!("writer-{i}")));
            write
        })
        .collect();
    for result in store.schedule(batch, at(0)).await.expect("schedule") {
        result.expect("written");
    }
    let events = history_of(&store, "orders", "busy").await;
    assert_eq!(events.len(), HISTORY_LIMIT);
    assert_eq!((events[0].kind, events[0].by.as_deref()), (EventKind::Replaced, Some("writer-7")));
    let last = &events[HISTORY_LIMIT - 1];
    let newest = format!("writer-{}", writes - 1);
    assert_eq!((last.by.as_deref(), last.due_at), (Some(newest.as_str()), Some(at(100 + writes as i64 - 1))));
    // One more, in a call of its own: still the limit.
    write(&store, task("orders", "busy", at(1)), at(1)).await;
    let events = history_of(&store, "orders", "busy").await;
    assert_eq!((events.len(), events[0].by.as_deref()), (HISTORY_LIMIT, Some("writer-8")));
    assert_eq!(events[HISTORY_LIMIT - 1].by, None, "no actor, no field");
}

/// A lease of several tasks and a group commit of their acks (one script each) tell
/// each task its own event, and a lost lease tells nothing.
#[tokio::test]
async fn a_batch_tells_each_task_its_own_event() {
    let store = support::on_server().await;
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        let mut new = task("orders", name, at(i as i64));
        new.max_attempts = 3;
        write(&store, new, at(0)).await;
    }
    let leased = store
        .lease(LeaseRequest::new(queue("orders"), 4, Duration::from_secs(30), at(10)).by(Some(Actor::new("w"))))
        .await
        .expect("lease");
    assert_eq!(leased.leases.len(), 4);
    let token = |name: &str| leased.leases.iter().find(|l| l.token.key.as_str() == name).expect("leased").token.clone();
    let held = token("d");
    let lost = LeaseToken::new(held.queue.clone(), held.key.clone(), held.task_id, held.version, held.fence + 100);
    let acks = vec![
        CompleteRequest::new(token("a"), Completion::Done, at(11)),
        CompleteRequest::new(token("b"), Completion::Retry { at: at(60), error: "busy".into() }, at(11)),
        CompleteRequest::new(token("c"), Completion::Dead { error: "gone".into() }, at(11)),
        CompleteRequest::new(lost, Completion::Done, at(11)),
    ];
    let results = store.complete_many(acks).await.expect("complete_many");
    assert!(results[..3].iter().all(Result::is_ok) && results[3].is_err(), "{results:?}");

    let expected = [
        ("a", AckOutcome::Done, None, None, None),
        ("b", AckOutcome::Retry, Some(TaskState::Scheduled), Some(at(60)), Some("busy")),
        ("c", AckOutcome::Dead, Some(TaskState::Dead), None, Some("gone")),
    ];
    for (name, outcome, state, due, error) in expected {
        let events = history_of(&store, "orders", name).await;
        assert_eq!(kinds(&events), [EventKind::Created, EventKind::Leased, EventKind::Acked], "{name}: {events:#?}");
        let (leased_event, acked) = (&events[1], &events[2]);
        assert_eq!(
            (leased_event.by.as_deref(), leased_event.lease, leased_event.until),
            (Some("w"), Some(token(name).fence), Some(at(40)))
        );
        assert_eq!(
            (acked.outcome, acked.state, acked.due_at, acked.error.as_deref()),
            (Some(outcome), state, due, error)
        );
        assert_eq!((acked.lease, acked.attempt, acked.at), (Some(token(name).fence), Some(1), at(11)));
    }
    assert_eq!(kinds(&history_of(&store, "orders", "d").await), [EventKind::Created, EventKind::Leased]);
}

/// The stored form: one field of the shard's history Hash, the count (three digits) then one line
/// per event, as `history::encode` writes it, the key indexed by its first event; an
/// ack of the core's example takes under 100 bytes.
#[tokio::test]
async fn a_history_is_one_field_of_its_shards_hash_and_an_ack_is_small() {
    let prefix = "history-bytes";
    let store = support::on_server_under(prefix).await;
    write(&store, task("reminders", "order-1234567", at(0)), at(0)).await;
    let worker = Some(Actor::new("worker-eu-1"));
    let leased = store
        .lease(LeaseRequest::new(queue("reminders"), 1, Duration::from_secs(30), at(0)).by(worker.clone()))
        .await
        .expect("lease");
    let token = leased.leases[0].token.clone();
    store.complete(CompleteRequest::new(token, Completion::Done, at(1)).by(worker)).await.expect("complete");

    let server = support::server();
    let hash = format!("{prefix}:{{reminders}}:history");
    let stored = server.command(&["HGET", &hash, "order-1234567"]).expect("HGET");
    let lines: Vec<&str> = stored.split('\n').collect();
    assert_eq!(lines.len(), 4, "{stored}");
    assert_eq!(lines[0], "003", "the count first, in three digits");
    assert!(!lines[1].contains("\"by\""), "no actor, no field: {}", lines[1]);
    let told = history_of(&store, "reminders", "order-1234567").await;
    for (line, event) in lines[1..].iter().zip(&told) {
        assert_eq!(history::decode(line).expect("an event"), *event);
    }
    let ack = lines[3];
    assert!(ack.len() < 100, "{} bytes: {ack}", ack.len());
    println!("an ack: {} bytes: {ack}; the whole history: {} bytes", ack.len(), stored.len());
    // Indexed by the history's first event, written once: the sweep reads the latest.
    let indexed = server.command(&["ZSCORE", &format!("{hash}:latest"), "order-1234567"]).expect("ZSCORE");
    assert_eq!(indexed, at(0).as_millis().to_string());
    let tasks = format!("{prefix}:{{reminders}}:tasks");
    assert_eq!(server.command(&["HEXISTS", &tasks, "order-1234567"]).expect("HEXISTS"), "0", "the task is gone");
}

/// A sweep on a queue split into shards deletes at most its limit per call, in every
/// shard, and only the histories quiet since its cutoff, index and events alike.
#[tokio::test]
async fn a_sweep_takes_every_shards_quiet_histories_up_to_its_limit() {
    let store = support::on_cluster(4).await;
    let quiet: Vec<String> = (0..11).map(|i| format!("quiet-{i}")).collect();
    for name in &quiet {
        write(&store, task("orders", name, at(3600)), at(0)).await;
    }
    write(&store, task("orders", "recent", at(3600)), at(100)).await;
    let mut calls = Vec::new();
    loop {
        let swept =
            store.sweep_history(HistorySweepRequest::new(queue("orders"), at(50), 4)).await.expect("sweep_history");
        calls.push(swept);
        if swept == 0 {
            break;
        }
    }
    assert_eq!(calls, [4, 4, 3, 0]);
    for name in &quiet {
        assert!(history_of(&store, "orders", name).await.is_empty(), "{name}");
        assert!(store.get(&queue("orders"), &key(name)).await.expect("get").is_some(), "the task stays");
    }
    assert_eq!(kinds(&history_of(&store, "orders", "recent").await), [EventKind::Created]);
    // Told again after a sweep: a history afresh.
    store.cancel(&queue("orders"), &key("quiet-0"), None).await.expect("cancel");
    assert_eq!(kinds(&history_of(&store, "orders", "quiet-0").await), [EventKind::Cancelled]);
}
