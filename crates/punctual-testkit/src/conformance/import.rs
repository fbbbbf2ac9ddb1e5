//! Moving between stores: `import` stores tasks and completion records as another store
//! holds them, and `completions` pages a queue's records so that they can be read out.
//! The other store here is the reference [`MemoryStore`], which holds the tasks in
//! every state a deployment leaves behind.
//!
//! Guards against a field lost or reset on the way (attempts, version, times, the lease
//! expiry, the occurrence and anchor that repeats count from), an imported task missing
//! from the indexes that lease, reap, list, count, sweep or cancel by tag read, an id
//! that an imported or later task shares (a lease token of the other store that
//! completes here), an import that overwrites a task or a record already here, a
//! completion record lost, or imported after its window ended, and paging that skips or
//! repeats records.

use punctual_core::transitions::as_moved;
use std::time::Duration;

use punctual_core::store::{Completion, CompletionsRequest, ImportRequest, Imported, LeaseRequest, SweepRequest};
use punctual_core::{
    Completed, Group, MemoryStore, Repeat, ScheduleOutcome, Store, Task, TaskState, Timestamp, Unique,
};
use serde_json::json;

use super::support::*;

const WINDOW: Duration = Duration::from_secs(3600);

/// Every task of `queue_name` in `store`, in due order.
async fn everything<S: Store>(store: &S, queue_name: &str) -> Vec<Task> {
    list_all(store, queue_name, None).await
}

/// `import`, failing the check when the call fails as a whole.
async fn import<S: Store>(store: &S, tasks: Vec<Task>, completions: Vec<Completed>, now: Timestamp) -> Vec<Imported> {
    let count = tasks.len();
    let answers = store
        .import(ImportRequest::new(tasks, completions, now))
        .await
        .unwrap_or_else(|e| panic!("import failed as a whole: {e}"));
    assert_eq!(answers.len(), count, "import of {count} tasks answered {} results", answers.len());
    answers
}

/// A deployment's tasks in each state, in `orders` of a reference store:
/// - `waiting`: tagged `t`, priority 5, a payload, a repeat, a trace context, failed
///   once (attempts 1, an error), due at 200 s;
/// - `again`: replaced twice (version 3), due at 300 s;
/// - `running`: leased at 100 s for 30 s, in its second occurrence;
/// - `broken`: dead since 120 s;
/// - `hooked`: with a target, due at 400 s.
async fn deployment() -> MemoryStore {
    let source = MemoryStore::new();
    let mut waiting = new_task("orders", "waiting", at_secs(10));
    waiting.tags = vec![tag("t")];
    waiting.priority = punctual_core::Priority::new(5).expect("a valid priority");
    waiting.payload = json!({"order": 42, "lines": ["a", "b"]});
    waiting.repeat = Some(Repeat::every(secs(3600)).expect("a valid repeat"));
    waiting.max_attempts = 5;
    waiting.traceparent = Some(
        punctual_core::TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .expect("a valid traceparent"),
    );
    create(&source, waiting, T0).await;
    let lease = lease_one(&source, "orders", secs(30), at_secs(10)).await;
    let retry = Completion::Retry { at: at_secs(200), error: "the shop answered 503".into() };
    complete_ok(&source, &lease.token, retry, at_secs(11)).await;
    for version in 0..3 {
        create_or_replace(&source, new_task("orders", "again", at_secs(300 + version)), at_secs(version)).await;
    }
    create(&source, new_task("orders", "running", at_secs(50)), T0).await;
    let first = lease_one(&source, "orders", secs(30), at_secs(50)).await;
    let next = Completion::Reschedule { at: at_secs(100), anchor: at_secs(100) };
    complete_ok(&source, &first.token, next, at_secs(51)).await;
    let running = lease_one(&source, "orders", secs(30), at_secs(100)).await;
    assert_eq!(running.token.key.as_str(), "running");
    let mut broken = new_task("orders", "broken", at_secs(110));
    broken.tags = vec![tag("t")];
    create(&source, broken, T0).await;
    let lease = lease_one(&source, "orders", secs(30), at_secs(115)).await;
    complete_ok(&source, &lease.token, Completion::Dead { error: "no such order".into() }, at_secs(120)).await;
    let mut hooked = new_task("orders", "hooked", at_secs(400));
    hooked.target = Some(punctual_core::Target::new("http://127.0.0.1:9/hook").expect("a valid url"));
    create(&source, hooked, T0).await;
    source
}

/// Schedules `task` with the default `if_exists` (replace).
async fn create_or_replace<S: Store>(store: &S, task: punctual_core::NewTask, now: Timestamp) {
    upsert(store, task, now).await;
}

/// `import` contract: each task is stored with every field as the other store held it
/// (state, due time, attempts, version, times, lease expiry, policies, tags, priority,
/// target, trace context, occurrence, anchor) and an id of this store that no other task has, before
/// or after; a key already here is left as it is, so an import run again writes
/// nothing.
pub async fn import_stores_each_task_as_it_stands_with_an_id_of_its_own<S: Store>(store: S) {
    let local = create(&store, new_task("orders", "local", at_secs(900)), T0).await;
    let source = deployment().await;
    let moved = everything(&source, "orders").await;
    assert_eq!(moved.len(), 5, "the deployment's tasks: {moved:?}");
    let mut clash = new_task("orders", "local", at_secs(1));
    clash.payload = json!("theirs");
    create(&source, clash, T0).await;
    let mut offered = everything(&source, "orders").await;
    offered.sort_by(|a, b| a.key.cmp(&b.key));

    let answers = import(&store, offered.clone(), Vec::new(), at_secs(130)).await;
    let expected: Vec<Imported> =
        offered.iter().map(|t| if t.key.as_str() == "local" { Imported::Present } else { Imported::Written }).collect();
    assert_eq!(answers, expected, "in order: {:?}", offered.iter().map(name_of).collect::<Vec<_>>());
    assert_eq!(stored(&store, "orders", "local").await, local, "a task already here is left as it is");

    let mut ids = vec![local.meta.id];
    for original in &moved {
        let here = stored(&store, "orders", original.key.as_str()).await;
        assert_eq!(as_moved(&here), as_moved(original), "{} came through unchanged", name_of(original));
        assert_eq!(here.meta.store, local.meta.store, "{}: this store's identity", name_of(original));
        assert!(!ids.contains(&here.meta.id), "{}: id {} is taken", name_of(original), here.meta.id);
        ids.push(here.meta.id);
    }
    let again = import(&store, moved.clone(), Vec::new(), at_secs(131)).await;
    assert!(again.iter().all(|answer| *answer == Imported::Present), "run again, nothing is written: {again:?}");
    let later = create(&store, new_task("orders", "later", at_secs(900)), at_secs(132)).await;
    assert!(!ids.contains(&later.meta.id), "a task created after an import gets an id of its own");
    let counts = stats(&store, Some("orders")).await;
    assert_eq!(
        (counts[0].scheduled, counts[0].leased, counts[0].dead),
        (5, 1, 1),
        "counted by state: local, later, waiting, again, hooked; running; broken"
    );
}

/// `import` contract: an imported task is leased, reaped, listed, swept and cancelled by
/// tag as its state says; a lease token of the other store is not live here.
pub async fn imported_tasks_lease_expire_die_and_list_as_their_state_says<S: Store>(store: S) {
    let source = deployment().await;
    let their_lease = source_lease(&source).await;
    import(&store, everything(&source, "orders").await, Vec::new(), at_secs(101)).await;

    let dead: Vec<String> =
        list_all(&store, "orders", Some(TaskState::Dead)).await.iter().map(|t| t.key.to_string()).collect();
    assert_eq!(dead, ["broken"], "the dead task is listed as dead");
    assert_lease_lost(
        complete(&store, &their_lease, Completion::Done, at_secs(102)).await,
        "an ack of the other store's lease",
    );
    assert!(lease(&store, "orders", 10, secs(30), at_secs(129)).await.leases.is_empty(), "nothing due before 200 s");
    let reaped = reap(&store, at_secs(130), 10).await;
    assert_eq!(reaped.reaped.len(), 1, "the imported lease ends at its expiry: {reaped:?}");
    let running = stored(&store, "orders", "running").await;
    assert_eq!((running.state, running.attempts, running.due_at), (TaskState::Scheduled, 1, at_secs(130)));
    assert_eq!(running.meta.occurrence, 2, "still its second occurrence");

    let batch = lease(&store, "orders", 10, secs(30), at_secs(250)).await;
    let leased: Vec<(String, u32)> = batch.leases.iter().map(|l| (l.token.key.to_string(), l.attempt)).collect();
    assert_eq!(leased, [("waiting".to_owned(), 2), ("running".to_owned(), 2)], "the higher priority first; try 2 each");
    assert_eq!(batch.leases[0].task.payload, json!({"order": 42, "lines": ["a", "b"]}));
    let target_lane = store
        .lease(LeaseRequest::new(queue("orders"), 10, secs(30), at_secs(500)).in_lane(punctual_core::Lane::Target))
        .await
        .expect("lease of the target lane");
    assert_eq!(keys_of(&target_lane.leases), ["hooked"], "a task with a target stays in the target lane");

    let swept = store.sweep_dead(SweepRequest::new(queue("orders"), at_secs(120), 10)).await.expect("sweep");
    assert_eq!(swept.deleted, 1, "the dead task died at 120 s, as it did there");
    assert_eq!(
        store.cancel_tag(&queue("orders"), &tag("t"), None).await.expect("cancel by tag"),
        1,
        "waiting carries t"
    );
    assert!(get(&store, "orders", "waiting").await.is_none());
}

/// The token of `running`'s live lease in the deployment.
async fn source_lease(source: &MemoryStore) -> punctual_core::LeaseToken {
    let running = stored(source, "orders", "running").await;
    punctual_core::LeaseToken::new(
        running.queue.clone(),
        running.key.clone(),
        running.meta.id,
        running.version,
        running.meta.fence,
    )
}

/// `import` contract: an imported leased task counts toward its group's limit until it
/// is reaped, and the group's tasks keep their group.
pub async fn an_imported_lease_holds_its_group_until_it_is_reaped<S: Store>(store: S) {
    let source = MemoryStore::new();
    let group = Group::new("customer-7").expect("a valid group");
    for (name, due) in [("first", 1), ("second", 2)] {
        let mut task = new_task("orders", name, at_secs(due));
        task.group = Some(group.clone());
        create(&source, task, T0).await;
    }
    let limited = |now| LeaseRequest::new(queue("orders"), 10, secs(30), now).group_limit(Some(1));
    let taken = source.lease(limited(at_secs(5))).await.expect("lease");
    assert_eq!(keys_of(&taken.leases), ["first"]);
    import(&store, everything(&source, "orders").await, Vec::new(), at_secs(6)).await;

    let held = store.lease(limited(at_secs(10))).await.expect("lease");
    assert!(held.leases.is_empty(), "the imported lease holds customer-7 at its limit: {:?}", keys_of(&held.leases));
    assert_eq!(stored(&store, "orders", "second").await.group.as_ref(), Some(&group));
    reap(&store, at_secs(35), 10).await;
    let room = store.lease(limited(at_secs(36))).await.expect("lease");
    assert_eq!(keys_of(&room.leases), ["second"], "reaped, the group has room: its earliest due task");
}

/// `completions`, `queue_names` and `import` contracts: a queue's records that hold are
/// paged by key, each once, and a queue holding only records is named; imported, a record holds its key here as there, unless it ended by the
/// import's `now` or a record of its key is here already.
pub async fn completion_records_are_paged_by_key_and_imported_while_they_hold<S: Store>(store: S) {
    for (name, window) in [("k3", WINDOW), ("k1", WINDOW), ("short", secs(10)), ("k2", WINDOW)] {
        let mut task = new_task("receipts", name, T0);
        task.unique_for = Some(Unique::new(window));
        create(&store, task, T0).await;
        let lease = lease_one(&store, "receipts", secs(30), at_secs(1)).await;
        complete_ok(&store, &lease.token, Completion::Done, at_secs(2)).await;
    }
    create(&store, new_task("other", "k0", T0), T0).await;
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .completions(CompletionsRequest::new(queue("receipts"), 1, cursor, at_secs(60)))
            .await
            .expect("a page of records");
        assert!(page.completions.len() <= 1, "a page holds at most its limit");
        keys.extend(page.completions.iter().map(|record| record.key.to_string()));
        if page.next_cursor.is_none() {
            break;
        }
        cursor = page.next_cursor;
    }
    assert_eq!(keys, ["k1", "k2", "k3"], "by key, each once; `short` ended at 12 s");
    let names = store.queue_names().await.expect("queue names");
    let names: Vec<&str> = names.iter().map(|name| name.as_str()).collect();
    let (other, receipts) = (names.iter().position(|n| *n == "other"), names.iter().position(|n| *n == "receipts"));
    assert!(other.is_some() && receipts.is_some(), "a queue holding only records is named too: {names:?}");
    assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "sorted, each once: {names:?}");

    let source = MemoryStore::new();
    for (name, window) in [("m1", WINDOW), ("m2", secs(10)), ("k1", WINDOW)] {
        let mut task = new_task("receipts", name, at_secs(30));
        task.unique_for = Some(Unique::new(window));
        create(&source, task, T0).await;
        let lease = lease_one(&source, "receipts", secs(30), at_secs(30)).await;
        complete_ok(&source, &lease.token, Completion::Done, at_secs(31)).await;
    }
    let theirs = source
        .completions(CompletionsRequest::new(queue("receipts"), 10, None, at_secs(40)))
        .await
        .expect("the source's records")
        .completions;
    assert_eq!(theirs.len(), 3, "m1, m2 and k1 hold at 40 s");
    let ours = kept_record(&store, "k1", at_secs(45)).await;
    import(&store, Vec::new(), theirs.clone(), at_secs(50)).await;

    let m1 = kept_record(&store, "m1", at_secs(60)).await;
    assert_eq!(Some(&m1), theirs.iter().find(|r| r.key.as_str() == "m1"), "the record as it was there");
    assert_eq!(kept_record(&store, "k1", at_secs(60)).await, ours, "the record already here stays");
    let m2 = schedule_one(&store, new_task("receipts", "m2", at_secs(60)), at_secs(60)).await;
    assert_eq!(m2.outcome, ScheduleOutcome::Created, "m2's record ended at 41 s, before the import");
}

/// The record that keeps a schedule of `receipts/<key_name>` at `now`.
async fn kept_record<S: Store>(store: &S, key_name: &str, now: Timestamp) -> Completed {
    let mut task = new_task("receipts", key_name, now);
    task.if_exists = punctual_core::IfExists::Replace;
    let scheduled = schedule_one(store, task, now).await;
    assert_eq!(scheduled.outcome, ScheduleOutcome::Kept, "{key_name} at {now} is held by a record");
    scheduled.completed.unwrap_or_else(|| panic!("{key_name}: kept without a record"))
}
