//! Queues as stored resources: their records (settings and pause state, shared by
//! every process on a store) and purging their tasks.
//!
//! Guards against a record whose version repeats or skips (a conditional change made
//! against an old version would then apply to a newer record), a pause lost by a
//! settings change or settings lost by a resume, a conditional change that half
//! applies or that two racing processes both win, a listing of records that disagrees
//! with reading them one by one; and against a purge that reaches another queue or
//! state, leaves a purged task's tag or index entries behind (so it is still counted,
//! listed, or cancelled again by its tag), lets a purged lease complete, cancels more
//! than its batch, never finishes, or leaves a key that cannot be scheduled again.

use std::collections::BTreeSet;
use std::sync::Arc;

use punctual_core::store::{
    Completion, ExtendRequest, PurgeRequest, PurgeSelection, QueueChange, QueueChangeRequest, QueueRecord, QueueStats,
};
use punctual_core::{Error, Store, Task, TaskState, Timestamp, transitions};

use super::support::*;

/// A settings document with characters a store's own encoding could trip on.
const SETTINGS: &str = "{\"rate\":\"20/1m\",\"note\":\"a|b,c;\\nd é\"}";

fn change_request(queue_name: &str, change: QueueChange, now: Timestamp) -> QueueChangeRequest {
    QueueChangeRequest::new(queue(queue_name), change, now)
}

/// `change_queue`, failing the check if it fails.
async fn change<S: Store>(store: &S, queue_name: &str, change: QueueChange, now: Timestamp) -> QueueRecord {
    let what = format!("{change:?} of {queue_name}");
    store
        .change_queue(change_request(queue_name, change, now))
        .await
        .unwrap_or_else(|e| panic!("change_queue ({what}) failed: {e}"))
}

async fn record_of<S: Store>(store: &S, queue_name: &str) -> Option<QueueRecord> {
    store.queue_record(&queue(queue_name)).await.unwrap_or_else(|e| panic!("queue_record of {queue_name}: {e}"))
}

async fn records<S: Store>(store: &S) -> Vec<QueueRecord> {
    store.queue_records().await.unwrap_or_else(|e| panic!("queue_records: {e}"))
}

fn record(queue_name: &str, settings: Option<&str>, paused: bool, version: u64, at: Timestamp) -> QueueRecord {
    QueueRecord::new(queue(queue_name), settings.map(str::to_owned), paused, version, at)
}

fn assert_conflict<T: std::fmt::Debug>(result: punctual_core::Result<T>, what: &str) {
    match result {
        Err(Error::Conflict(_)) => {}
        other => panic!("{what}: expected Error::Conflict, got {other:?}"),
    }
}

async fn purge<S: Store>(store: &S, queue_name: &str, selection: PurgeSelection, limit: u32) -> u64 {
    store
        .purge(PurgeRequest::new(queue(queue_name), selection, limit))
        .await
        .unwrap_or_else(|e| panic!("purge {selection:?} of {queue_name}: {e}"))
}

/// Purges in batches of `limit` until a batch cancels none; each batch's count.
async fn purge_until_none<S: Store>(store: &S, queue_name: &str, selection: PurgeSelection, limit: u32) -> Vec<u64> {
    let mut counts = Vec::new();
    for _ in 0..1000 {
        let count = purge(store, queue_name, selection, limit).await;
        assert!(count <= u64::from(limit), "a batch of {limit} cancelled {count}");
        counts.push(count);
        if count == 0 {
            return counts;
        }
    }
    panic!("purging {queue_name} did not end after 1,000 batches");
}

/// Every task of these queues and their counts (`contents` counts every queue, the
/// purged one too).
async fn queues_as_they_are<S: Store>(store: &S, queue_names: &[&str]) -> Vec<(Vec<Task>, Vec<QueueStats>)> {
    let mut all = Vec::new();
    for name in queue_names {
        all.push((list_all(store, name, None).await, stats(store, Some(name)).await));
    }
    all
}

fn keys_in(tasks: &[Task]) -> BTreeSet<String> {
    tasks.iter().map(|task| task.key.to_string()).collect()
}

/// `QueueRecord` and `change_queue` contract: created at version 1 by the first
/// change, one version up and `updated_at` the change's `now` at every change after,
/// a pause that changes nothing included; the pause state survives settings being
/// set, replaced and cleared, the settings survive pause and resume, the document is
/// kept as given (an empty one is not none), and a record left with neither is kept.
pub async fn a_queue_record_starts_at_version_one_and_each_change_adds_one<S: Store>(store: S) {
    assert_eq!(record_of(&store, "orders").await, None, "no record before the first change");
    let steps = [
        (QueueChange::Paused(true), record("orders", None, true, 1, at_secs(1)), "created by a pause"),
        (QueueChange::Paused(true), record("orders", None, true, 2, at_secs(2)), "a pause of a paused queue counts"),
        (QueueChange::Settings(SETTINGS.into()), record("orders", Some(SETTINGS), true, 3, at_secs(3)), "pause kept"),
        (QueueChange::Paused(false), record("orders", Some(SETTINGS), false, 4, at_secs(4)), "settings kept"),
        (QueueChange::Settings("{}".into()), record("orders", Some("{}"), false, 5, at_secs(5)), "replaced"),
        (QueueChange::Paused(true), record("orders", Some("{}"), true, 6, at_secs(6)), "settings kept"),
        (QueueChange::ClearSettings, record("orders", None, true, 7, at_secs(7)), "pause kept across a clear"),
        (QueueChange::Settings(String::new()), record("orders", Some(""), true, 8, at_secs(8)), "empty, not none"),
        (QueueChange::ClearSettings, record("orders", None, true, 9, at_secs(9)), "cleared"),
        (QueueChange::Paused(false), record("orders", None, false, 10, at_secs(10)), "left with neither"),
    ];
    for (step, expected, what) in steps {
        let now = expected.updated_at;
        assert_eq!(change(&store, "orders", step, now).await, expected, "the answer: {what}");
        assert_eq!(record_of(&store, "orders").await, Some(expected), "as stored: {what}");
    }
    let first = change(&store, "mail", QueueChange::Settings(SETTINGS.into()), at_secs(20)).await;
    assert_eq!(first, record("mail", Some(SETTINGS), false, 1, at_secs(20)), "created by settings, not paused");
    assert_eq!(record_of(&store, "orders").await.map(|r| r.version), Some(10), "another queue's change");
}

/// `queue_records` contract: every record, sorted by name, each as `queue_record`
/// reads it; a queue holding tasks but no record has none, and a record needs no task.
pub async fn queue_records_are_sorted_by_name_and_each_is_its_queue_record<S: Store>(store: S) {
    assert_eq!(records(&store).await, Vec::new(), "a new store has no records");
    create(&store, new_task("tasks-only", "order-1", T0), T0).await;
    let names = ["orders", "a-z", "orders.eu", "0", "mail", "Orders", "a_z", "a:z"];
    for (i, name) in names.iter().enumerate() {
        let now = at_secs(i as i64);
        let step = if i % 2 == 0 { QueueChange::Paused(true) } else { QueueChange::Settings(format!("{{\"n\":{i}}}")) };
        change(&store, name, step, now).await;
    }
    change(&store, "mail", QueueChange::Paused(true), at_secs(30)).await;

    let all = records(&store).await;
    let listed: Vec<String> = all.iter().map(|r| r.queue.to_string()).collect();
    let mut sorted: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    sorted.sort();
    assert_eq!(listed, sorted, "every record once, by name (bytewise), none for a queue without one");
    for listed in &all {
        assert_eq!(record_of(&store, listed.queue.as_str()).await.as_ref(), Some(listed), "{}", listed.queue);
    }
    let mail = all.iter().find(|r| r.queue.as_str() == "mail").expect("mail's record");
    assert_eq!((mail.version, mail.paused, mail.updated_at), (2, true, at_secs(30)));
    assert_eq!(record_of(&store, "tasks-only").await, None, "tasks make no record");
    assert_eq!(stored(&store, "tasks-only", "order-1").await.state, TaskState::Scheduled, "records touch no task");
}

/// `change_queue` contract, conditional: a change whose `if_version` is not the
/// record's (0: no record) is `Error::Conflict` and changes nothing; `if_version(0)`
/// creates only when there is no record; and of changes racing on one version,
/// exactly one applies, while unconditional ones racing all apply, none lost.
pub async fn a_queue_change_at_another_version_is_a_conflict_and_changes_nothing<S: Store>(store: S) {
    let conditional =
        |change: QueueChange, version: u64, now| change_request("orders", change, now).if_version(version);
    assert_conflict(store.change_queue(conditional(QueueChange::Paused(true), 1, at_secs(1))).await, "no record");
    assert_eq!(record_of(&store, "orders").await, None, "the refused change created nothing");
    assert_eq!(records(&store).await, Vec::new());

    let created = store.change_queue(conditional(QueueChange::Settings(SETTINGS.into()), 0, at_secs(2))).await;
    let created = created.expect("if_version 0 with no record");
    assert_eq!(created, record("orders", Some(SETTINGS), false, 1, at_secs(2)));
    let again = store.change_queue(conditional(QueueChange::Settings("{}".into()), 0, at_secs(3))).await;
    assert_conflict(again, "if_version 0 once there is a record");
    for stale in [0, 2, 7] {
        let refused = store.change_queue(conditional(QueueChange::Paused(true), stale, at_secs(4))).await;
        assert_conflict(refused, &format!("if_version {stale} of a record at version 1"));
    }
    assert_eq!(record_of(&store, "orders").await, Some(created.clone()), "refused changes changed nothing");
    let next = store.change_queue(conditional(QueueChange::ClearSettings, 1, at_secs(5))).await;
    assert_eq!(next.expect("at the record's version"), record("orders", None, false, 2, at_secs(5)));

    let store = Arc::new(store);
    let mut racers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        racers.spawn(async move {
            let settings = QueueChange::Settings(format!("{{\"racer\":{i}}}"));
            store.change_queue(change_request("orders", settings, at_secs(6)).if_version(2)).await
        });
    }
    let won = winners("the racing conditional changes", racers).await;
    assert_eq!(won.len(), 1, "exactly one change at version 2 applies: {won:?}");
    assert_eq!(record_of(&*store, "orders").await.as_ref(), Some(&won[0]));
    assert_eq!(won[0].version, 3);

    let mut racers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        racers.spawn(async move { change(&*store, "orders", QueueChange::Paused(i % 2 == 0), at_secs(7)).await });
    }
    while let Some(joined) = within("the racing changes", racers.join_next()).await {
        joined.expect("a racer panicked");
    }
    let last = record_of(&*store, "orders").await.expect("the record");
    assert_eq!(last.version, 11, "eight unconditional changes, none lost");
    assert_eq!(last.settings, won[0].settings, "pauses keep the winner's settings");
}

/// The queue set up by [`mixed`]: what each selection holds.
const SCHEDULED_KEYS: [&str; 2] = ["scheduled-1", "scheduled-2"];
const LEASED_KEYS: [&str; 1] = ["leased"];
const DEAD_KEYS: [&str; 2] = ["dead-1", "dead-2"];

/// In `queue_name`: two dead tasks, one leased (for an hour from T0), two scheduled
/// (due at 10 s and 600 s), some tagged `wf-1`.
async fn mixed<S: Store>(store: &S, queue_name: &str) {
    create(store, tagged(queue_name, "dead-1", &["wf-1"]), T0).await;
    create(store, new_task(queue_name, "dead-2", T0), T0).await;
    assert_eq!(kill_due(store, queue_name, T0).await.len(), 2, "set-up: two dead");
    create(store, tagged(queue_name, "leased", &["wf-1"]), T0).await;
    lease_one(store, queue_name, secs(3600), T0).await;
    let mut first = tagged(queue_name, "scheduled-1", &["wf-1"]);
    first.due_at = at_secs(10);
    create(store, first, T0).await;
    create(store, new_task(queue_name, "scheduled-2", at_secs(600)), T0).await;
}

/// `purge` contract, by selection: `Scheduled` cancels the queue's scheduled tasks
/// (not leased ones), `Dead` its dead ones, `All` every one; the count is what it
/// cancelled; nothing of another queue or another state is touched, nor the queue's
/// record; the tasks left keep their tags; a second purge finds none.
pub async fn purge_cancels_exactly_the_selection_in_its_queue<S: Store>(store: S) {
    let every_key = [&SCHEDULED_KEYS[..], &LEASED_KEYS[..], &DEAD_KEYS[..]].concat();
    let cases = [
        ("by-scheduled", PurgeSelection::Scheduled, &SCHEDULED_KEYS[..]),
        ("by-dead", PurgeSelection::Dead, &DEAD_KEYS[..]),
        ("by-all", PurgeSelection::All, &every_key[..]),
    ];
    let every: BTreeSet<String> = every_key.iter().map(|k| k.to_string()).collect();
    for (name, _, _) in &cases {
        mixed(&store, name).await;
    }
    mixed(&store, "mail").await;
    let paused = change(&store, "by-all", QueueChange::Paused(true), at_secs(1)).await;

    for (i, (name, selection, purged)) in cases.iter().enumerate() {
        let others: Vec<&str> = cases.iter().skip(i + 1).map(|(other, _, _)| *other).chain(["mail"]).collect();
        let before = queues_as_they_are(&store, &others).await;
        let count = purge(&store, name, *selection, 100).await;
        assert_eq!(count, purged.len() as u64, "{name}: {selection:?} cancels {purged:?}");
        let expected_left: BTreeSet<String> = every.iter().filter(|k| !purged.contains(&k.as_str())).cloned().collect();
        let left = list_all(&store, name, None).await;
        assert_eq!(keys_in(&left), expected_left, "{name}: what {selection:?} leaves");
        for task in &left {
            assert!(!transitions::is_purged(task, *selection), "{name}: {} is left", task.key);
        }
        let tagged_left = keys_in(&list_all_tagged(&store, name, "wf-1", None, 10).await);
        let expected_tagged: BTreeSet<String> = ["dead-1", "leased", "scheduled-1"]
            .iter()
            .filter(|k| expected_left.contains(**k))
            .map(|k| k.to_string())
            .collect();
        assert_eq!(tagged_left, expected_tagged, "{name}: the tag lists what is left of it");
        assert_eq!(queues_as_they_are(&store, &others).await, before, "{name}: the purge touched other queues");
        assert_eq!(purge(&store, name, *selection, 100).await, 0, "{name}: nothing left to purge");
    }
    let counts = &stats(&store, Some("by-all")).await[0];
    assert_eq!((counts.scheduled, counts.leased, counts.dead, counts.next_due_at), (0, 0, 0, None));
    assert_eq!(record_of(&store, "by-all").await, Some(paused), "a purge does not touch the queue's record");
    assert_eq!(purge(&store, "unknown", PurgeSelection::All, 100).await, 0, "an unknown queue");
}

/// `purge` contract, a leased task (`All`): cancelled as `cancel` would, for good —
/// its lease can no longer complete, extend or release, nor be reaped back; it is gone
/// from `get`, `list` (with and without its tag), `stats` and its tag (a later
/// `cancel_tag` counts none); its key can be scheduled again as a new task, which the
/// old lease cannot touch either.
pub async fn a_purged_leased_task_cannot_complete_and_leaves_no_trace<S: Store>(store: S) {
    create(&store, tagged("flow", "leased", &["wf-1"]), T0).await;
    let old = lease_one(&store, "flow", secs(30), T0).await;
    create(&store, tagged("other", "leased", &["wf-1"]), T0).await;
    lease_one(&store, "other", secs(30), T0).await;

    assert_eq!(purge(&store, "flow", PurgeSelection::Scheduled, 10).await, 0, "a leased task is not scheduled");
    assert_eq!(purge(&store, "flow", PurgeSelection::Dead, 10).await, 0, "nor dead");
    assert_eq!(stored(&store, "flow", "leased").await, old.task, "untouched so far");
    assert_eq!(purge(&store, "flow", PurgeSelection::All, 10).await, 1);

    let token = &old.token;
    assert_lease_lost(complete(&store, token, Completion::Done, at_secs(1)).await, "ack of a purged lease");
    let retry = Completion::Retry { at: at_secs(5), error: "boom".into() };
    assert_lease_lost(complete(&store, token, retry, at_secs(1)).await, "retry of a purged lease");
    let extended = store.extend(ExtendRequest::new(token.clone(), secs(30), at_secs(1))).await;
    assert_lease_lost(extended, "extend of a purged lease");
    assert_lease_lost(store.release(token, at_secs(1)).await, "release of a purged lease");
    let reaped = reap(&store, at_secs(60), 100).await;
    assert!(reaped.reaped.iter().all(|r| r.queue.as_str() != "flow"), "a purged lease is not reaped: {reaped:?}");

    assert_eq!(get(&store, "flow", "leased").await, None);
    assert!(list_all(&store, "flow", None).await.is_empty(), "listed after the purge");
    assert!(list_all(&store, "flow", Some(TaskState::Leased)).await.is_empty(), "listed as leased");
    assert!(list_all_tagged(&store, "flow", "wf-1", None, 10).await.is_empty(), "listed by its tag");
    let counts = &stats(&store, Some("flow")).await[0];
    assert_eq!((counts.scheduled, counts.leased, counts.dead), (0, 0, 0), "counted after the purge");
    assert!(stats(&store, None).await.iter().all(|s| s.name.as_str() != "flow"), "an empty queue is not listed");
    assert_eq!(store.cancel_tag(&queue("flow"), &tag("wf-1"), None).await.expect("cancel_tag"), 0, "its tag is empty");
    assert_eq!(store.cancel_tag(&queue("other"), &tag("wf-1"), None).await.expect("cancel_tag"), 1, "another queue's");

    let again = create(&store, tagged("flow", "leased", &["wf-1"]), at_secs(2)).await;
    assert_ne!(again.meta.id, old.task.meta.id, "a new task, with an id of its own");
    assert_eq!((again.version, again.attempts, again.state), (1, 0, TaskState::Scheduled));
    assert_eq!(keys_in(&list_all_tagged(&store, "flow", "wf-1", None, 10).await), ["leased".to_string()].into());
    assert_lease_lost(complete(&store, token, Completion::Done, at_secs(3)).await, "the old lease on the new task");
    let new = lease_one(&store, "flow", secs(30), at_secs(3)).await;
    assert_ne!(new.delivery_id, old.delivery_id, "the new task's delivery id is not the purged one's");
    complete_ok(&store, &new.token, Completion::Done, at_secs(4)).await;
}

/// `purge` contract, in batches: no batch cancels more than its limit, repeating until
/// a batch cancels none cancels each task of the selection once (whatever the batch
/// size against the queue's tasks, and on a sharded store across shards), and the
/// keys can be scheduled again as new tasks.
pub async fn purge_in_batches_converges_to_none_left<S: Store>(store: S) {
    let mut tasks = Vec::new();
    for i in 0..23 {
        let mut task = if i % 3 == 0 {
            tagged("orders", &format!("k{i:02}"), &["wf-1"])
        } else {
            new_task("orders", &format!("k{i:02}"), T0)
        };
        task.due_at = at_secs(100 + i);
        tasks.push(task);
    }
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    for i in 0..5 {
        create(&store, new_task("orders", &format!("dead-{i}"), T0), T0).await;
    }
    kill_due(&store, "orders", T0).await;
    for i in 0..4 {
        create(&store, new_task("orders", &format!("leased-{i}"), T0), T0).await;
    }
    assert_eq!(lease(&store, "orders", 10, secs(3600), T0).await.leases.len(), 4, "set-up: four leased");
    mixed(&store, "mail").await;
    let mail = queues_as_they_are(&store, &["mail"]).await;

    let scheduled = purge_until_none(&store, "orders", PurgeSelection::Scheduled, 4).await;
    assert_eq!(scheduled.iter().sum::<u64>(), 23, "every scheduled task once, in batches of 4: {scheduled:?}");
    let counts = &stats(&store, Some("orders")).await[0];
    assert_eq!((counts.scheduled, counts.leased, counts.dead), (0, 4, 5), "only scheduled ones went");
    let all = purge_until_none(&store, "orders", PurgeSelection::All, 2).await;
    assert_eq!(all.iter().sum::<u64>(), 9, "the leased and dead ones, in batches of 2: {all:?}");
    assert!(list_all(&store, "orders", None).await.is_empty());
    assert_eq!(store.cancel_tag(&queue("orders"), &tag("wf-1"), None).await.expect("cancel_tag"), 0, "no tag left");
    assert_eq!(queues_as_they_are(&store, &["mail"]).await, mail, "another queue is untouched");

    for name in ["k07", "dead-1", "leased-2"] {
        let again = create(&store, new_task("orders", name, T0), at_secs(1)).await;
        assert_eq!((again.version, again.state), (1, TaskState::Scheduled), "{name} is new");
    }
    assert_eq!(
        keys_in(&list_all(&store, "orders", None).await),
        ["dead-1", "k07", "leased-2"].map(String::from).into()
    );
    let batches = purge_until_none(&store, "orders", PurgeSelection::All, 1000).await;
    assert_eq!(batches.iter().sum::<u64>(), 3);
}
