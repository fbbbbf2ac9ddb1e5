//! Outbox rows applied once: `Store::apply_once` applies a row's schedule, cancel or
//! cancel by tag atomically with a mark of the row, and a row read again changes
//! nothing, whatever happened to its key since; marks are per outbox and row; a
//! schedule the store refuses leaves no mark, so the row applies once it can.
//!
//! Guards against a mark that is not checked (a replayed cancel removing a newer task,
//! a replayed schedule bringing back a task that fired), a mark written without its
//! effect (a refused row never applied), and marks that ignore the outbox's name.

use punctual_core::engine::OutboxCall;
use punctual_core::outbox::{OutboxName, OutboxRow};
use punctual_core::store::{ApplyOnceRequest, Completion, OnceEffect, OnceOp};
use punctual_core::{Error, IfExists, ScheduleOutcome, Store, TaskSpec, Timestamp};
use serde_json::json;

use super::support::*;

fn row(outbox: &str, id: i64) -> OutboxRow {
    OutboxRow::new(OutboxName::new(outbox).expect("the suite uses valid outbox names"), id)
}

async fn apply<S: Store>(store: &S, row: OutboxRow, op: OnceOp, now: Timestamp) -> Option<OnceEffect> {
    let what = format!("{row}");
    store.apply_once(ApplyOnceRequest::new(row, op, now)).await.unwrap_or_else(|e| panic!("apply_once of {what}: {e}"))
}

fn schedule_op(key_name: &str, due: Timestamp, payload: serde_json::Value) -> OnceOp {
    schedule_in("orders", key_name, due, payload)
}

fn schedule_in(queue_name: &str, key_name: &str, due: Timestamp, payload: serde_json::Value) -> OnceOp {
    let mut task = new_task(queue_name, key_name, due);
    task.payload = payload;
    OnceOp::Schedule(Box::new(task))
}

fn cancel_op(key_name: &str) -> OnceOp {
    OnceOp::Cancel { queue: queue("orders"), key: key(key_name) }
}

/// `apply_once` contract: each op applies as its call would and answers its answer;
/// the same row again answers `None` and changes nothing, after a newer schedule of
/// its key, after its task fired, after a later cancel; marks are per outbox.
pub async fn an_outbox_row_applies_once_whatever_its_key_went_through<S: Store>(store: S) {
    let now = at_secs(1);
    // A schedule, replayed: nothing more.
    let Some(OnceEffect::Scheduled(first)) =
        apply(&store, row("shop", 1), schedule_op("order-1", at_secs(1800), json!(1)), now).await
    else {
        panic!("row 1 applied as a schedule");
    };
    assert_eq!(first.outcome, ScheduleOutcome::Created);
    assert_eq!(apply(&store, row("shop", 1), schedule_op("order-1", at_secs(1800), json!(1)), now).await, None);
    let written = stored(&store, "orders", "order-1").await;
    assert_eq!(written.version, first.task.as_ref().expect("a task").version, "the replay wrote nothing");
    // A newer schedule of the key, then the first row again: the newer one stays.
    let mut newer = new_task("orders", "order-1", at_secs(3600));
    newer.payload = json!(2);
    schedule_one(&store, newer, now).await;
    assert_eq!(apply(&store, row("shop", 1), schedule_op("order-1", at_secs(1800), json!(1)), now).await, None);
    assert_eq!(stored(&store, "orders", "order-1").await.payload, json!(2), "the replay did not undo a newer write");
    // A cancel, then a newer schedule, then the cancel again: the new task stays.
    assert_eq!(apply(&store, row("shop", 2), cancel_op("order-1"), now).await, Some(OnceEffect::Cancelled(true)));
    assert!(get(&store, "orders", "order-1").await.is_none());
    schedule_one(&store, new_task("orders", "order-1", at_secs(7200)), now).await;
    assert_eq!(apply(&store, row("shop", 2), cancel_op("order-1"), now).await, None);
    assert!(get(&store, "orders", "order-1").await.is_some(), "a replayed cancel removed a newer task");
    // A cancel of an absent key applies (and marks): false.
    assert_eq!(apply(&store, row("shop", 3), cancel_op("absent"), now).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(apply(&store, row("shop", 3), cancel_op("absent"), now).await, None);
    // A cancel by tag, then a newer tagged task, then the row again.
    schedule_one(&store, tagged("orders", "t-1", &["batch-7"]), now).await;
    let by_tag = || OnceOp::CancelTag { queue: queue("orders"), tag: tag("batch-7") };
    assert_eq!(apply(&store, row("shop", 4), by_tag(), now).await, Some(OnceEffect::CancelledTag(1)));
    schedule_one(&store, tagged("orders", "t-2", &["batch-7"]), now).await;
    assert_eq!(apply(&store, row("shop", 4), by_tag(), now).await, None);
    assert!(get(&store, "orders", "t-2").await.is_some(), "a replayed cancel by tag removed a newer task");
    // A schedule whose task fired: read again, it brings nothing back.
    let due = at_secs(2);
    let fires = || schedule_in("receipts", "fires", due, json!("once"));
    apply(&store, row("shop", 5), fires(), now).await.expect("row 5 applied");
    let leased = lease_one(&store, "receipts", secs(30), at_secs(3)).await;
    assert_eq!(leased.task.key.as_str(), "fires");
    complete_ok(&store, &leased.token, Completion::Done, at_secs(4)).await;
    assert_eq!(apply(&store, row("shop", 5), fires(), at_secs(5)).await, None);
    assert!(get(&store, "receipts", "fires").await.is_none(), "a replayed schedule brought back a task that fired");
    // Another outbox's row of the same id is another row.
    let other = apply(&store, row("billing", 1), schedule_op("order-9", at_secs(60), json!(9)), now).await;
    assert!(matches!(other, Some(OnceEffect::Scheduled(_))), "marks are per outbox: {other:?}");
}

/// `apply_once` contract: a schedule the store refuses (here `if_exists: error` over a
/// task of the key) answers the refusal and leaves no mark, so the row applies once
/// the key is free; nothing else changed meanwhile.
pub async fn a_refused_outbox_row_leaves_no_mark_and_applies_later<S: Store>(store: S) {
    let now = at_secs(1);
    let mut existing = new_task("orders", "order-1", at_secs(60));
    existing.payload = json!("existing");
    schedule_one(&store, existing, now).await;
    let strict = || {
        let mut task = new_task("orders", "order-1", at_secs(120));
        task.payload = json!("from the row");
        task.if_exists = IfExists::Error;
        OnceOp::Schedule(Box::new(task))
    };
    let refused = store.apply_once(ApplyOnceRequest::new(row("shop", 7), strict(), now)).await;
    assert!(matches!(refused, Err(Error::Conflict(_))), "refused as schedule refuses it: {refused:?}");
    assert_eq!(stored(&store, "orders", "order-1").await.payload, json!("existing"), "nothing changed");
    assert!(store.cancel(&queue("orders"), &key("order-1"), None).await.expect("cancel"));
    let applied = apply(&store, row("shop", 7), strict(), now).await;
    assert!(matches!(applied, Some(OnceEffect::Scheduled(_))), "the row was never marked: {applied:?}");
    assert_eq!(stored(&store, "orders", "order-1").await.payload, json!("from the row"));
}

/// `apply_once_many` contract: each row answers as `apply_once` would, on its own (a
/// refused row changes nothing of the others), and a key's rows apply in the order
/// given, a row given twice the second time as a replay.
pub async fn many_outbox_rows_apply_each_on_its_own_and_a_keys_rows_in_order<S: Store>(store: S) {
    let now = at_secs(1);
    schedule_one(&store, new_task("orders", "taken", at_secs(60)), now).await;
    let strict = {
        let mut task = new_task("orders", "taken", at_secs(120));
        task.if_exists = IfExists::Error;
        OnceOp::Schedule(Box::new(task))
    };
    let requests = vec![
        ApplyOnceRequest::new(row("shop", 1), schedule_op("a", at_secs(60), json!("a")), now),
        ApplyOnceRequest::new(row("shop", 2), strict, now),
        ApplyOnceRequest::new(row("shop", 3), schedule_op("b", at_secs(60), json!("b")), now),
        ApplyOnceRequest::new(row("shop", 4), cancel_op("a"), now),
        ApplyOnceRequest::new(row("shop", 1), schedule_op("a", at_secs(60), json!("a")), now),
    ];
    let answers = store.apply_once_many(requests).await.expect("apply_once_many");
    assert_eq!(answers.len(), 5);
    assert!(matches!(answers[0], Ok(Some(OnceEffect::Scheduled(_)))), "{:?}", answers[0]);
    assert!(matches!(answers[1], Err(Error::Conflict(_))), "refused on its own: {:?}", answers[1]);
    assert!(matches!(answers[2], Ok(Some(OnceEffect::Scheduled(_)))), "{:?}", answers[2]);
    assert_eq!(answers[3].as_ref().ok(), Some(&Some(OnceEffect::Cancelled(true))), "after row 1: {:?}", answers[3]);
    assert_eq!(answers[4].as_ref().ok(), Some(&None), "row 1 again: a replay");
    assert!(get(&store, "orders", "a").await.is_none(), "a's rows in order: scheduled, cancelled, not again");
    assert_eq!(stored(&store, "orders", "b").await.payload, json!("b"));
    assert_eq!(stored(&store, "orders", "taken").await.due_at, at_secs(60), "the refused row changed nothing");
}

/// `Engine::apply_once`: a row applies as its call (the queue's defaults, the task
/// handed out when due), once; a row the engine refuses (a bad key) answers the
/// refusal and changes nothing.
pub async fn engine_applies_an_outbox_row_as_its_call_and_once<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    let call =
        || OutboxCall::Schedule { key: "order-1".into(), spec: Box::new(TaskSpec::now().payload(json!({"order": 1}))) };
    let applied = engine.apply_once(row("shop", 1), "orders", call()).await.expect("apply");
    assert!(matches!(applied, Some(OnceEffect::Scheduled(_))), "{applied:?}");
    assert_eq!(engine.apply_once(row("shop", 1), "orders", call()).await.expect("apply again"), None);
    let leased = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&leased), ["order-1"], "handed out once");
    let bad = OutboxCall::Cancel { key: String::new() };
    assert_refused(engine.apply_once(row("shop", 2), "orders", bad).await, "key", "an empty key");
    let cancel = OutboxCall::Cancel { key: "order-1".into() };
    let cancelled = engine.apply_once(row("shop", 2), "orders", cancel).await.expect("apply");
    assert_eq!(cancelled, Some(OnceEffect::Cancelled(true)), "row 2 was not marked by its refusal");
    engine.shutdown().await.expect("shutdown");
}
