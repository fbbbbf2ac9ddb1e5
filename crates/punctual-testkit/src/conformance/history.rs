//! Task history (`punctual_core::history`): each change a store makes to a task is
//! told by an event written with it, the history outlives the task, keeps its latest
//! [`HISTORY_LIMIT`] events, and is forgotten once nothing happened to it since a
//! cutoff.
//!
//! Guards against a change that leaves no event (or an event of a change that did not
//! happen: a kept schedule, a cancel of nothing), events out of order, a field lost on
//! the way (who did it, the try, the lease, the due time, the handler's error, what a
//! delivery saw, what a replace changed), a history deleted with its task, one that
//! grows without bound, and a sweep that forgets a key something happened to since.

use punctual_core::history::{AckOutcome, Actor, DeliveryReport, EventKind, HISTORY_LIMIT, HistoryEvent};
use punctual_core::store::{
    CompleteRequest, Completion, ExtendRequest, GroupsRequest, HistoriesRequest, HistoryRequest, HistorySweepRequest,
    ImportRequest, Imported, KeyHistory, LeaseRequest, PurgeRequest, PurgeSelection, RetryDeadRequest, SweepRequest,
};
use punctual_core::transitions::imported;
use punctual_core::{Group, IfExists, MemoryStore, Store, StoreId, TaskState, Timestamp};
use serde_json::json;

use super::support::*;

/// The history of `queue_name`'s `key_name` since the epoch.
async fn history_of<S: Store>(store: &S, queue_name: &str, key_name: &str) -> Vec<HistoryEvent> {
    let request = HistoryRequest::new(queue(queue_name), key(key_name), Timestamp::EPOCH);
    store.history(request).await.unwrap_or_else(|e| panic!("history of {key_name}: {e}"))
}

fn kinds(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|event| event.kind.as_str()).collect()
}

fn by(name: &str) -> Option<Actor> {
    Some(Actor::new(name))
}

/// DESIGN.md's "what happened to my task?": a task created, replaced, leased, failed,
/// expired, dead, retried by hand and done is told event by event, in order, with who
/// did each change and what it did, and stays readable once the task is gone.
pub async fn a_tasks_life_is_told_event_by_event_and_outlives_it<S: Store>(store: S) {
    let mut first = new_task("orders", "remind", at_secs(60));
    first.by = by("shop");
    first.max_attempts = 2;
    create(&store, first, T0).await;
    let mut second = new_task("orders", "remind", at_secs(120));
    second.by = by("shop");
    second.max_attempts = 2;
    second.payload = json!({"order": 7});
    upsert(&store, second, at_secs(1)).await;

    // First try: fails, with what the webhook answered.
    let node = Some(std::sync::Arc::from("web-1:7575 (pid 42)"));
    let leased = store
        .lease(LeaseRequest::new(queue("orders"), 1, secs(30), at_secs(120)).by(by("worker-1")).on_node(node))
        .await
        .expect("lease");
    let token = leased.leases[0].token.clone();
    let delivery_id = leased.leases[0].delivery_id.clone();
    let retry = Completion::Retry { at: at_secs(180), error: "the shop answered 503".into() };
    let report = DeliveryReport::new(Some(41), Some(503), Some("busy".into()));
    store
        .complete(
            CompleteRequest::new(token.clone(), retry, at_secs(121)).by(by("worker-1")).report(Some(report.clone())),
        )
        .await
        .expect("complete");
    // Second try: its lease expires, which is its last attempt: dead.
    let second_lease = lease_one(&store, "orders", secs(30), at_secs(180)).await;
    assert_eq!(reap(&store, at_secs(210), 10).await.reaped.len(), 1, "the lease expired");
    // Retried by hand, then done.
    let revived =
        store.retry_dead(RetryDeadRequest::new(queue("orders"), key("remind"), at_secs(300)).by(by("ops"))).await;
    assert!(revived.expect("retry_dead").is_some(), "the task was dead");
    let last = lease_one(&store, "orders", secs(30), at_secs(300)).await;
    complete_ok(&store, &last.token, Completion::Done, at_secs(301)).await;
    assert!(get(&store, "orders", "remind").await.is_none(), "done: the task is gone");

    let events = history_of(&store, "orders", "remind").await;
    assert_eq!(
        kinds(&events),
        ["created", "replaced", "leased", "acked", "leased", "expired", "retried", "leased", "acked"],
        "{events:#?}"
    );
    let [created, replaced, leased, failed, leased_again, expired, retried, leased_last, done] = &events[..] else {
        unreachable!("nine events, as asserted")
    };
    assert_eq!(
        (created.at, created.by.as_deref(), created.state, created.due_at),
        (T0, Some("shop"), Some(TaskState::Scheduled), Some(at_secs(60)))
    );
    assert_eq!((replaced.at, replaced.by.as_deref(), replaced.due_at), (at_secs(1), Some("shop"), Some(at_secs(120))));
    assert_eq!(replaced.changed, ["due_at", "payload"], "the due time and the payload changed, nothing else");

    assert_eq!(
        (leased.at, leased.by.as_deref(), leased.state),
        (at_secs(120), Some("worker-1"), Some(TaskState::Leased))
    );
    assert_eq!((leased.attempt, leased.lease, leased.until), (Some(1), Some(token.fence), Some(at_secs(150))));
    assert_eq!(
        (leased.node.as_deref(), leased.delivery_id.as_deref()),
        (Some("web-1:7575 (pid 42)"), Some(delivery_id.as_str())),
        "the node that leased and the lease's delivery id"
    );
    assert_eq!(
        (failed.at, failed.by.as_deref(), failed.outcome),
        (at_secs(121), Some("worker-1"), Some(AckOutcome::Retry))
    );
    assert_eq!((failed.attempt, failed.lease, failed.state), (Some(1), Some(token.fence), Some(TaskState::Scheduled)));
    assert_eq!((failed.due_at, failed.error.as_deref()), (Some(at_secs(180)), Some("the shop answered 503")));
    assert_eq!(failed.report.as_ref(), Some(&report), "what the delivery saw is kept with the ack");

    assert_eq!((leased_again.attempt, leased_again.lease), (Some(2), Some(second_lease.token.fence)));
    assert_eq!(
        (leased_again.node.as_deref(), leased_again.delivery_id.as_deref()),
        (None, Some(second_lease.delivery_id.as_str())),
        "a lease on no named node names none"
    );
    assert_eq!(second_lease.delivery_id, delivery_id, "one occurrence, one delivery id");
    assert!(second_lease.token.fence > token.fence, "a later lease, a higher fence");
    assert_eq!((expired.at, expired.by.as_deref(), expired.state), (at_secs(210), None, Some(TaskState::Dead)));
    assert_eq!((expired.attempt, expired.lease), (Some(2), Some(second_lease.token.fence)));
    assert!(expired.error.is_some(), "the expiry says why it ended: {expired:?}");

    assert_eq!(
        (retried.at, retried.by.as_deref(), retried.state),
        (at_secs(300), Some("ops"), Some(TaskState::Scheduled))
    );
    assert_eq!(retried.due_at, Some(at_secs(300)));
    assert_eq!(leased_last.attempt, Some(1), "a retry by hand starts the attempts again");
    assert_eq!(
        (done.at, done.outcome, done.state, done.by.as_deref()),
        (at_secs(301), Some(AckOutcome::Done), None, None)
    );
    assert_eq!(done.report, None, "a pull worker's ack reports no delivery");
}

/// Cancels, cancels by tag, purges, deletions of dead tasks, extensions, releases and
/// imports are told too, with who did them; a write that changes nothing (a schedule
/// kept, a cancel of no task, a delete of a task that is not dead) tells nothing.
pub async fn cancels_purges_and_other_changes_are_told_and_no_change_is_not<S: Store>(store: S) {
    for name in ["by-key", "by-tag", "purged", "kept", "held"] {
        create(&store, tagged("orders", name, &["t"]), T0).await;
    }
    assert!(store.cancel(&queue("orders"), &key("by-key"), by("ops").as_ref()).await.expect("cancel"));
    assert!(!store.cancel(&queue("orders"), &key("never"), by("ops").as_ref()).await.expect("cancel"));
    let mut keep = tagged("orders", "kept", &["u"]);
    keep.if_exists = IfExists::Keep;
    upsert(&store, keep, at_secs(1)).await;
    assert!(
        !store.delete_dead(&queue("orders"), &key("kept"), by("ops").as_ref()).await.expect("delete_dead"),
        "kept is not dead"
    );
    // held: leased, extended, released.
    let mut held = None;
    for lease in lease(&store, "orders", 5, secs(30), at_secs(2)).await.leases {
        if lease.token.key.as_str() == "held" {
            held = Some(lease.token.clone());
        } else {
            store.release(&lease.token, at_secs(2)).await.expect("release");
        }
    }
    let held = held.expect("held was leased");
    let extended =
        store.extend(ExtendRequest::new(held.clone(), secs(60), at_secs(3)).by(by("worker-2"))).await.expect("extend");
    assert_eq!(extended, at_secs(63));
    store.release(&held, at_secs(4)).await.expect("release");
    assert_eq!(store.cancel_tag(&queue("orders"), &tag("t"), by("ops").as_ref()).await.expect("cancel_tag"), 4);
    create(&store, new_task("orders", "purged", at_secs(5)), at_secs(5)).await;
    let purge = PurgeRequest::new(queue("orders"), PurgeSelection::All, 10).by(by("admin"));
    assert_eq!(store.purge(purge).await.expect("purge"), 1);

    let cancelled = history_of(&store, "orders", "by-key").await;
    assert_eq!(kinds(&cancelled), ["created", "cancelled"], "{cancelled:#?}");
    assert_eq!(
        (cancelled[1].by.as_deref(), cancelled[1].state, cancelled[1].tag.as_deref()),
        (Some("ops"), None, None)
    );
    assert!(history_of(&store, "orders", "never").await.is_empty(), "a cancel of nothing tells nothing");

    let kept = history_of(&store, "orders", "kept").await;
    assert_eq!(
        kinds(&kept),
        ["created", "leased", "released", "cancelled"],
        "a kept schedule tells nothing: {kept:#?}"
    );
    let held_events = history_of(&store, "orders", "held").await;
    assert_eq!(kinds(&held_events), ["created", "leased", "extended", "released", "cancelled"], "{held_events:#?}");
    let extended_event = &held_events[2];
    assert_eq!((extended_event.at, extended_event.by.as_deref()), (at_secs(3), Some("worker-2")));
    assert_eq!((extended_event.lease, extended_event.until), (Some(held.fence), Some(at_secs(63))));
    assert_eq!((held_events[3].at, held_events[3].state), (at_secs(4), Some(TaskState::Scheduled)));
    let by_tag = &held_events[4];
    assert_eq!((by_tag.by.as_deref(), by_tag.tag.as_deref(), by_tag.state), (Some("ops"), Some("t"), None));

    let purged = history_of(&store, "orders", "purged").await;
    assert_eq!(kinds(&purged), ["created", "leased", "released", "cancelled", "created", "purged"], "{purged:#?}");
    assert_eq!(purged[5].by.as_deref(), Some("admin"), "a task created again adds to its key's history");

    // A dead task deleted by hand, and one swept by the dead-task retention.
    for name in ["deleted", "swept"] {
        let mut task = new_task("orders", name, T0);
        task.max_attempts = 1;
        create(&store, task, T0).await;
    }
    assert_eq!(kill_due(&store, "orders", at_secs(10)).await.len(), 2);
    assert!(store.delete_dead(&queue("orders"), &key("deleted"), by("ops").as_ref()).await.expect("delete_dead"));
    let swept = store.sweep_dead(SweepRequest::new(queue("orders"), at_secs(3600), 10)).await.expect("sweep_dead");
    assert_eq!(swept.deleted, 1);
    let deleted = history_of(&store, "orders", "deleted").await;
    assert_eq!(kinds(&deleted), ["created", "leased", "acked", "deleted"], "{deleted:#?}");
    assert_eq!((deleted[2].outcome, deleted[2].state), (Some(AckOutcome::Dead), Some(TaskState::Dead)));
    assert_eq!((deleted[3].by.as_deref(), deleted[3].state), (Some("ops"), None));
    assert_eq!(kinds(&history_of(&store, "orders", "swept").await), ["created", "leased", "acked", "deleted"]);

    // An imported task.
    let source = MemoryStore::new();
    let moved = create(&source, new_task("orders", "moved", at_secs(900)), T0).await;
    let moved = imported(moved, StoreId::from_bits(1), 1);
    store.import(ImportRequest::new(vec![moved], Vec::new(), at_secs(20))).await.expect("import");
    let arrived = history_of(&store, "orders", "moved").await;
    assert_eq!(kinds(&arrived), ["imported"], "{arrived:#?}");
    assert_eq!(
        (arrived[0].at, arrived[0].state, arrived[0].due_at),
        (at_secs(20), Some(TaskState::Scheduled), Some(at_secs(900)))
    );
}

/// A key's history keeps its latest [`HISTORY_LIMIT`] events, and a read gives only
/// those at or after its `since`.
pub async fn a_history_keeps_its_latest_events_and_a_read_only_those_since<S: Store>(store: S) {
    let writes = HISTORY_LIMIT as i64 + 5;
    for i in 0..writes {
        let mut task = new_task("orders", "busy", at_secs(10_000 + i));
        task.by = by(&format!("writer-{i}"));
        upsert(&store, task, at_secs(i)).await;
    }
    let events = history_of(&store, "orders", "busy").await;
    assert_eq!(events.len(), HISTORY_LIMIT, "bounded per key");
    assert_eq!(events[0].by.as_deref(), Some("writer-5"), "the oldest went first");
    assert_eq!(events[HISTORY_LIMIT - 1].by.as_deref(), Some(format!("writer-{}", writes - 1).as_str()));
    assert!(events.windows(2).all(|pair| pair[0].at < pair[1].at), "in the order they happened");
    let since = HistoryRequest::new(queue("orders"), key("busy"), at_secs(writes - 3));
    let recent = store.history(since).await.expect("history");
    assert_eq!(recent.len(), 3, "{recent:#?}");
    assert!(recent.iter().all(|event| event.kind == EventKind::Replaced));
    let other = HistoryRequest::new(queue("other"), key("busy"), Timestamp::EPOCH);
    assert!(store.history(other).await.expect("history").is_empty(), "a history is its queue's");
}

/// `sweep_history` forgets the keys nothing happened to since its cutoff, done tasks'
/// and live ones' alike, and only those: a key that had an event since keeps its older
/// events too, those of a task before its own. A queue whose only trace is a history is
/// among `queue_names`.
pub async fn sweeping_histories_forgets_the_keys_quiet_since_the_cutoff<S: Store>(store: S) {
    for name in ["old-done", "old-waiting", "returned"] {
        create(&store, new_task("quiet", name, at_secs(60)), T0).await;
    }
    create(&store, new_task("quiet", "busy", at_secs(60)), T0).await;
    create(&store, new_task("loud", "old", at_secs(60)), T0).await;
    let done = lease(&store, "quiet", 4, secs(10_000), at_secs(60)).await.leases;
    assert_eq!(done.len(), 4);
    for lease in done {
        match lease.token.key.as_str() {
            "old-done" | "returned" => complete_ok(&store, &lease.token, Completion::Done, at_secs(61)).await,
            "old-waiting" => {
                let later = Completion::Reschedule { at: at_secs(100_000), anchor: at_secs(100_000) };
                complete_ok(&store, &lease.token, later, at_secs(61)).await;
            }
            _ => complete_ok(&store, &lease.token, Completion::Done, at_secs(5_000)).await,
        }
    }
    // A task of its own under a done task's key, after the first sweep's cutoff.
    create(&store, new_task("quiet", "returned", at_secs(2_000)), at_secs(2_000)).await;
    assert!(store.queue_names().await.expect("queue_names").contains(&queue("quiet")));

    let sweep_all = async |before: Timestamp| {
        let mut swept = 0;
        loop {
            let batch =
                store.sweep_history(HistorySweepRequest::new(queue("quiet"), before, 1)).await.expect("sweep_history");
            assert!(batch <= 1, "at most the limit");
            if batch == 0 {
                return swept;
            }
            swept += batch;
        }
    };
    assert_eq!(sweep_all(at_secs(1_000)).await, 2, "old-done and old-waiting were quiet since 61 s");
    assert!(history_of(&store, "quiet", "old-done").await.is_empty());
    assert!(history_of(&store, "quiet", "old-waiting").await.is_empty());
    assert_eq!(kinds(&history_of(&store, "quiet", "busy").await), ["created", "leased", "acked"]);
    assert_eq!(
        kinds(&history_of(&store, "quiet", "returned").await),
        ["created", "leased", "acked", "created"],
        "its key had an event since the cutoff, so its done task's events stay"
    );
    assert_eq!(history_of(&store, "loud", "old").await.len(), 1, "another queue's history is left alone");
    assert!(stored(&store, "quiet", "old-waiting").await.state == TaskState::Scheduled, "the task stays");

    let back = lease_one(&store, "quiet", secs(30), at_secs(2_000)).await;
    assert_eq!(back.token.key.as_str(), "returned");
    complete_ok(&store, &back.token, Completion::Done, at_secs(2_001)).await;
    assert_eq!(sweep_all(at_secs(2_000)).await, 0, "returned's task was done after this cutoff");
    assert_eq!(
        kinds(&history_of(&store, "quiet", "returned").await),
        ["created", "leased", "acked", "created", "leased", "acked"],
        "a done task's key keeps the events of the task before it while its own are newer than the cutoff"
    );
    assert_eq!(sweep_all(at_secs(3_000)).await, 1, "returned was quiet since 2,001 s: one key");
    assert!(history_of(&store, "quiet", "returned").await.is_empty(), "its older events went with the rest");
    assert_eq!(kinds(&history_of(&store, "quiet", "busy").await), ["created", "leased", "acked"]);
}

/// A task done is gone from every read and write of tasks (a read by key, a listing,
/// the counts, its group's, its lease, a cancel by key or tag) but its history; a task
/// created again under its key, or imported there, is a task of its own and adds to
/// that history.
pub async fn a_done_tasks_key_keeps_only_its_history_until_a_task_comes_again<S: Store>(store: S) {
    // The group is the key's hash tag, as a sharded queue asks of a grouped task.
    let mut task = tagged("orders", "{customer-7}pay-7", &["order-7"]);
    task.group = Some(Group::new("customer-7").expect("a valid group"));
    let first = create(&store, task, T0).await;
    create(&store, new_task("orders", "later", at_secs(3_600)), T0).await;
    let leased = lease_one(&store, "orders", secs(30), at_secs(1)).await;
    complete_ok(&store, &leased.token, Completion::Done, at_secs(2)).await;

    assert!(get(&store, "orders", "{customer-7}pay-7").await.is_none(), "done: no task");
    assert_eq!(list_all(&store, "orders", None).await.iter().map(name_of).collect::<Vec<_>>(), ["orders/later"]);
    let counts = &stats(&store, Some("orders")).await[0];
    assert_eq!((counts.scheduled, counts.leased, counts.dead), (1, 0, 0), "only the live task counts");
    let groups = store.groups(GroupsRequest::new(queue("orders"), 10, None)).await.expect("groups");
    assert!(groups.groups.is_empty(), "the group held only the done task: {groups:?}");
    let again_at = at_secs(3);
    assert_lease_lost(store.extend(ExtendRequest::new(leased.token.clone(), secs(30), again_at)).await, "extend");
    assert_lease_lost(store.release(&leased.token, again_at).await, "release");
    assert_lease_lost(complete(&store, &leased.token, Completion::Done, again_at).await, "a second ack");
    assert!(
        !store.cancel(&queue("orders"), &key("{customer-7}pay-7"), None).await.expect("cancel"),
        "no task to cancel"
    );
    assert_eq!(store.cancel_tag(&queue("orders"), &tag("order-7"), None).await.expect("cancel_tag"), 0, "nor by tag");
    let purge = PurgeRequest::new(queue("orders"), PurgeSelection::All, 10);
    assert_eq!(store.purge(purge).await.expect("purge"), 1, "a purge of every task takes only the live one");
    assert_eq!(kinds(&history_of(&store, "orders", "{customer-7}pay-7").await), ["created", "leased", "acked"]);

    // Created again: a task of its own, at its first try; the history goes on.
    let again = create(&store, new_task("orders", "{customer-7}pay-7", at_secs(10)), at_secs(5)).await;
    assert_ne!(again.meta.id, first.meta.id, "a new task, not the done one");
    assert_eq!((again.attempts, again.group.as_ref(), again.version), (0, None, 1));
    let second = lease_one(&store, "orders", secs(30), at_secs(10)).await;
    assert_eq!(second.task.meta.id, again.meta.id);
    complete_ok(&store, &second.token, Completion::Done, at_secs(11)).await;
    // Imported there once done again: written, as where no task is.
    let answers = store.import(ImportRequest::new(vec![again.clone()], Vec::new(), at_secs(12))).await;
    assert_eq!(answers.expect("import"), [Imported::Written]);
    assert_eq!(stored(&store, "orders", "{customer-7}pay-7").await.due_at, at_secs(10));
    let events = history_of(&store, "orders", "{customer-7}pay-7").await;
    assert_eq!(kinds(&events), ["created", "leased", "acked", "created", "leased", "acked", "imported"]);
    assert_eq!(
        events.iter().map(|event| event.at).collect::<Vec<_>>()[..6],
        [T0, at_secs(1), at_secs(2), at_secs(5), at_secs(10), at_secs(11)]
    );
}

/// A lease of a grouped task (a store's group path) tells it like any lease.
pub async fn a_grouped_tasks_lease_is_told<S: Store>(store: S) {
    let mut task = new_task("orders", "in-group", T0);
    task.group = Some(Group::new("customer-1").expect("a valid group"));
    create(&store, task, T0).await;
    let request = LeaseRequest::new(queue("orders"), 1, secs(30), at_secs(1)).group_limit(Some(1)).by(by("worker-3"));
    let leased = store.lease(request).await.expect("lease");
    assert_eq!(keys_of(&leased.leases), ["in-group"]);
    let events = history_of(&store, "orders", "in-group").await;
    assert_eq!(kinds(&events), ["created", "leased"], "{events:#?}");
    assert_eq!(
        (events[1].by.as_deref(), events[1].attempt, events[1].lease),
        (Some("worker-3"), Some(1), Some(leased.leases[0].token.fence))
    );
}

/// All of a queue's histories read from another store page by page, whole, since a
/// cutoff.
async fn all_histories<S: Store>(store: &S, queue_name: &str, since: Timestamp) -> Vec<KeyHistory> {
    let mut read: Vec<KeyHistory> = Vec::new();
    let mut cursor = None;
    loop {
        let request = HistoriesRequest::new(queue(queue_name), 1, cursor, since);
        let page = store.histories(request).await.expect("histories");
        assert!(!page.histories.is_empty() || page.next_cursor.is_none(), "only the last page is empty");
        for history in page.histories {
            if !read.iter().any(|known| known.key == history.key) {
                read.push(history);
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return read;
        }
    }
}

/// `histories` and `import_histories`, as `punctual migrate` moves a queue's histories:
/// every key's history is read, page by page and whole (a gone task's too, only the
/// events since the cutoff); imported into another store, each key's events go before
/// those it has there (a task imported first tells `imported` after its past); moved
/// again, nothing is added twice.
pub async fn histories_are_read_page_by_page_and_imported_before_a_keys_own<S: Store>(store: S) {
    // Here: a done task, a waiting one, and one whose events are all before the cutoff.
    create(&store, new_task("orders", "old", at_secs(1_000)), T0).await;
    upsert(&store, new_task("orders", "old", at_secs(2_000)), at_secs(2)).await;
    for name in ["done", "waiting"] {
        create(&store, new_task("orders", name, at_secs(60)), at_secs(10)).await;
    }
    let done = lease(&store, "orders", 1, secs(30), at_secs(60)).await;
    complete_ok(&store, &done.leases[0].token, Completion::Done, at_secs(61)).await;
    create(&store, new_task("elsewhere", "done", at_secs(60)), at_secs(10)).await;

    let since = at_secs(5);
    let read = all_histories(&store, "orders", since).await;
    let mut keys: Vec<&str> = read.iter().map(|history| history.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["done", "waiting"], "the keys with events since the cutoff, once each");
    for history in &read {
        let whole = history_of(&store, "orders", history.key.as_str()).await;
        assert_eq!(history.events, whole, "{}: whole, as history reads it", history.key);
    }
    assert!(all_histories(&store, "nowhere", Timestamp::EPOCH).await.is_empty());

    // Elsewhere: "moved" has a past only there, "both" a past there and its task
    // imported here before its history came.
    let source = MemoryStore::new();
    for name in ["moved", "both"] {
        let mut task = new_task("orders", name, at_secs(900));
        task.by = by("shop");
        create(&source, task, at_secs(1)).await;
        upsert(&source, new_task("orders", name, at_secs(950)), at_secs(2)).await;
    }
    let both = stored(&source, "orders", "both").await;
    let both = imported(both, StoreId::from_bits(1), 1);
    store.import(ImportRequest::new(vec![both], Vec::new(), at_secs(20))).await.expect("import");
    let theirs = all_histories(&source, "orders", Timestamp::EPOCH).await;
    assert_eq!(theirs.len(), 2);
    let added = store.import_histories(&queue("orders"), theirs.clone()).await.expect("import_histories");
    assert_eq!(added, 4, "two events of each key, none here before them");
    let moved = history_of(&store, "orders", "moved").await;
    assert_eq!(kinds(&moved), ["created", "replaced"], "{moved:#?}");
    assert_eq!((moved[0].at, moved[0].by.as_deref()), (at_secs(1), Some("shop")), "as the source told it");
    let both = history_of(&store, "orders", "both").await;
    assert_eq!(kinds(&both), ["created", "replaced", "imported"], "its past, then its arrival: {both:#?}");
    assert_eq!(
        store.import_histories(&queue("orders"), theirs).await.expect("import_histories"),
        0,
        "moved again: nothing older than what is here"
    );
    assert_eq!(kinds(&history_of(&store, "orders", "both").await), ["created", "replaced", "imported"]);
    assert_eq!(history_of(&store, "orders", "moved").await, moved);
}
