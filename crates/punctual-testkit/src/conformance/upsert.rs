//! Scheduling: what a new task looks like, and the three `if_exists` modes — replace
//! (a new version, identity kept), keep (untouched) and error (that item refused
//! alone) — including a replace that races a live lease (guarantee 5).

use punctual_core::store::{Completion, ExtendRequest};
use punctual_core::{Backoff, Error, IfExists, Repeat, ScheduleOutcome, Store, TaskState};
use serde_json::json;

use super::support::*;

/// `schedule` contract for an absent task: created with `version` 1, `attempts` 0,
/// occurrence 1, anchor = `due_at`, state `scheduled`, every field as given, and an id
/// of its own.
pub async fn schedule_creates_a_task_as_documented<S: Store>(store: S) {
    let mut task = new_task("orders", "order-1", at_secs(60));
    task.payload = json!({"order_id": 1234, "items": ["a", "b"], "note": "订单"});
    task.max_attempts = 5;
    task.backoff = Backoff::new(millis(500), 3.0, secs(60)).expect("backoff");
    task.repeat = Some(Repeat::every(secs(3600)).expect("repeat").times(4).expect("times"));
    task.tags = vec![tag("flow-7"), tag("user:zhang.wei")];
    let created = create(&store, task.clone(), T0).await;

    assert_eq!(created.queue, task.queue);
    assert_eq!(created.key, task.key);
    assert_eq!(created.state, TaskState::Scheduled);
    assert_eq!(created.due_at, at_secs(60));
    assert_eq!(created.payload, task.payload);
    assert_eq!(created.max_attempts, 5);
    assert_eq!(created.backoff, task.backoff);
    assert_eq!(created.repeat, task.repeat);
    assert_eq!(created.tags, task.tags);
    assert_eq!(created.version, 1);
    assert_eq!(created.attempts, 0);
    assert_eq!(created.created_at, T0, "created now");
    assert_eq!(created.lease_expires_at, None);
    assert_eq!(created.last_error, None);
    assert_eq!(created.meta.occurrence, 1);
    assert_eq!(created.meta.anchor, at_secs(60), "repeats are anchored at the first due time");
    assert_eq!(stored(&store, "orders", "order-1").await, created, "get returns the task as schedule answered it");

    let other = create(&store, new_task("orders", "order-2", at_secs(60)), T0).await;
    let elsewhere = create(&store, new_task("mail", "order-1", at_secs(60)), T0).await;
    assert_ne!(other.meta.id, created.meta.id, "each task has an id of its own");
    assert_ne!(elsewhere.meta.id, created.meta.id, "the same key in another queue is another task");
    assert_ne!(other.delivery_id(), created.delivery_id());
}

/// `schedule` contract, `if_exists = replace`: due time, payload, policies and tags
/// replaced, `version` + 1, `attempts` 0, occurrence 1, anchor = new `due_at`,
/// `last_error` cleared, state `scheduled`; the id and `created_at` stay; outcome
/// `Replaced`.
pub async fn replace_updates_the_task_and_keeps_its_identity<S: Store>(store: S) {
    let mut first = new_task("orders", "order-1", at_secs(10));
    first.payload = json!({"v": 1});
    first.tags = vec![tag("w1")];
    first.max_attempts = 5;
    let original = create(&store, first, T0).await;
    // A failed try and a new occurrence, so there is something to reset.
    let token = lease_one(&store, "orders", secs(30), at_secs(10)).await.token;
    complete_ok(&store, &token, Completion::Retry { at: at_secs(20), error: "boom".into() }, at_secs(10)).await;
    let token = lease_one(&store, "orders", secs(30), at_secs(20)).await.token;
    complete_ok(&store, &token, Completion::Reschedule { at: at_secs(30), anchor: at_secs(30) }, at_secs(20)).await;
    let token = lease_one(&store, "orders", secs(30), at_secs(30)).await.token;
    complete_ok(&store, &token, Completion::Retry { at: at_secs(40), error: "boom again".into() }, at_secs(30)).await;
    let before = stored(&store, "orders", "order-1").await;
    assert_eq!((before.attempts, before.meta.occurrence), (1, 2), "set-up: one failure in occurrence 2");

    let mut second = new_task("orders", "order-1", at_secs(600));
    second.payload = json!({"v": 2});
    second.tags = vec![tag("w2")];
    second.max_attempts = 7;
    second.backoff = Backoff::new(secs(2), 2.0, secs(20)).expect("backoff");
    second.repeat = Some(Repeat::every(secs(60)).expect("repeat"));
    let replaced = upsert(&store, second.clone(), at_secs(35)).await;
    assert_eq!(replaced.outcome, ScheduleOutcome::Replaced);
    let task = replaced.task;
    assert_eq!(task.state, TaskState::Scheduled);
    assert_eq!(task.due_at, at_secs(600));
    assert_eq!(task.payload, second.payload);
    assert_eq!(task.tags, second.tags);
    assert_eq!(task.max_attempts, 7);
    assert_eq!(task.backoff, second.backoff);
    assert_eq!(task.repeat, second.repeat);
    assert_eq!(task.version, original.version + 1, "a replace bumps the version");
    assert_eq!(task.attempts, 0, "a replace resets attempts");
    assert_eq!(task.last_error, None, "a replace clears last_error");
    assert_eq!(task.meta.occurrence, 1, "a replace starts again at occurrence 1");
    assert_eq!(task.meta.anchor, at_secs(600), "a replace re-anchors repeats at the new due time");
    assert_eq!(task.meta.id, original.meta.id, "a replace keeps the task's id");
    assert_eq!(task.created_at, original.created_at, "a replace keeps created_at");
    assert_ne!(task.delivery_id(), before.delivery_id(), "a replace is a new delivery");
    assert_eq!(stored(&store, "orders", "order-1").await, task, "get returns the replaced task");
}

/// `schedule` contract: a present task "in any state" is replaced — a dead task comes
/// back `scheduled` with its attempts and error cleared.
pub async fn replace_revives_a_dead_task<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    let token = lease_one(&store, "orders", secs(30), T0).await.token;
    complete_ok(&store, &token, Completion::Dead { error: "fatal".into() }, T0).await;
    assert_eq!(stored(&store, "orders", "order-1").await.state, TaskState::Dead);

    let replaced = upsert(&store, new_task("orders", "order-1", at_secs(5)), at_secs(1)).await;
    assert_eq!(replaced.outcome, ScheduleOutcome::Replaced);
    assert_eq!(replaced.task.state, TaskState::Scheduled);
    assert_eq!((replaced.task.attempts, replaced.task.last_error.as_deref()), (0, None));
    assert_eq!(replaced.task.version, 2);
    assert_eq!(keys_of(&lease(&store, "orders", 5, secs(30), at_secs(5)).await.leases), ["order-1"]);
}

/// `schedule` contract, `if_exists = keep`: an existing task (here, one under a live
/// lease) is untouched and answered with outcome `Kept`; an absent one is created.
pub async fn keep_leaves_an_existing_task_untouched<S: Store>(store: S) {
    let mut original = new_task("orders", "order-1", T0);
    original.payload = json!({"v": 1});
    create(&store, original, T0).await;
    let token = lease_one(&store, "orders", secs(30), T0).await.token;
    let before = stored(&store, "orders", "order-1").await;

    let mut again = new_task("orders", "order-1", at_secs(600));
    again.payload = json!({"v": 2});
    again.if_exists = IfExists::Keep;
    let kept = upsert(&store, again, at_secs(1)).await;
    assert_eq!(kept.outcome, ScheduleOutcome::Kept);
    assert_eq!(kept.task, before, "keep answers the existing task as it is");
    assert_eq!(stored(&store, "orders", "order-1").await, before, "keep changes nothing");
    complete_ok(&store, &token, Completion::Done, at_secs(2)).await;

    let mut absent = new_task("orders", "order-2", at_secs(60));
    absent.if_exists = IfExists::Keep;
    let created = upsert(&store, absent, at_secs(2)).await;
    assert_eq!((created.outcome, created.task.version), (ScheduleOutcome::Created, 1), "keep creates what is absent");
}

/// `schedule` contract, `if_exists = error`: `Error::Conflict` for that task only; the
/// others of the same call are stored, and the existing task is unchanged.
pub async fn error_mode_refuses_only_the_conflicting_item<S: Store>(store: S) {
    let mut existing = new_task("orders", "taken", at_secs(60));
    existing.payload = json!({"v": 1});
    let before = create(&store, existing, T0).await;

    let mut conflicting = new_task("orders", "taken", at_secs(5));
    conflicting.payload = json!({"v": 2});
    conflicting.if_exists = IfExists::Error;
    let mut fresh_in_error_mode = new_task("orders", "fresh-2", at_secs(5));
    fresh_in_error_mode.if_exists = IfExists::Error;
    let results =
        schedule(&store, vec![new_task("orders", "fresh-1", at_secs(5)), conflicting, fresh_in_error_mode], at_secs(1))
            .await;
    assert_eq!(results[0].as_ref().map(|s| s.outcome), Ok(ScheduleOutcome::Created), "the item before the conflict");
    assert!(matches!(results[1], Err(Error::Conflict(_))), "expected Error::Conflict, got {:?}", results[1]);
    assert_eq!(results[2].as_ref().map(|s| s.outcome), Ok(ScheduleOutcome::Created), "error mode creates the absent");
    assert_eq!(stored(&store, "orders", "taken").await, before, "the conflicting write changed nothing");
    assert!(get(&store, "orders", "fresh-1").await.is_some());
    assert!(get(&store, "orders", "fresh-2").await.is_some());
}

/// `schedule` contract: "the same key twice in one call is applied in order" — the
/// second write sees the first.
pub async fn same_key_twice_in_one_batch_is_applied_in_order<S: Store>(store: S) {
    let with = |name: &str, due: i64, value: i64, mode: IfExists| {
        let mut task = new_task("orders", name, at_secs(due));
        task.payload = json!({ "v": value });
        task.if_exists = mode;
        task
    };
    let results = schedule(
        &store,
        vec![
            with("replaced", 10, 1, IfExists::Replace),
            with("replaced", 20, 2, IfExists::Replace),
            with("kept", 10, 1, IfExists::Replace),
            with("kept", 20, 2, IfExists::Keep),
            with("refused", 10, 1, IfExists::Replace),
            with("refused", 20, 2, IfExists::Error),
        ],
        T0,
    )
    .await;
    let outcomes: Vec<_> = results.iter().map(|r| r.as_ref().map(|s| s.outcome).map_err(Clone::clone)).collect();
    assert_eq!(
        outcomes[..4],
        [
            Ok(ScheduleOutcome::Created),
            Ok(ScheduleOutcome::Replaced),
            Ok(ScheduleOutcome::Created),
            Ok(ScheduleOutcome::Kept)
        ]
    );
    assert_eq!(outcomes[4], Ok(ScheduleOutcome::Created));
    assert!(matches!(outcomes[5], Err(Error::Conflict(_))), "expected Error::Conflict, got {:?}", outcomes[5]);

    let replaced = stored(&store, "orders", "replaced").await;
    assert_eq!((replaced.version, replaced.due_at, &replaced.payload), (2, at_secs(20), &json!({"v": 2})));
    let kept = stored(&store, "orders", "kept").await;
    assert_eq!((kept.version, kept.due_at, &kept.payload), (1, at_secs(10), &json!({"v": 1})));
    let refused = stored(&store, "orders", "refused").await;
    assert_eq!((refused.version, refused.due_at, &refused.payload), (1, at_secs(10), &json!({"v": 1})));
    assert_eq!(list_all(&store, "orders", None).await.len(), 3, "one task per key");
}

/// Guarantee 5 (replacing a task while it is leased keeps the new version): the old
/// lease can no longer complete, extend or release, and the task stays scheduled
/// with the new payload; the new version is leased under a new delivery id.
pub async fn replace_while_leased_keeps_the_new_version<S: Store>(store: S) {
    let mut original = new_task("orders", "order-1", T0);
    original.payload = json!({"v": 1});
    create(&store, original, T0).await;
    let old = lease_one(&store, "orders", secs(30), T0).await;

    let mut newer = new_task("orders", "order-1", at_secs(100));
    newer.payload = json!({"v": 2});
    let replaced = upsert(&store, newer, at_secs(1)).await;
    assert_eq!(replaced.outcome, ScheduleOutcome::Replaced);
    assert_eq!((replaced.task.state, replaced.task.version), (TaskState::Scheduled, 2));

    let now = at_secs(2);
    assert_lease_lost(complete(&store, &old.token, Completion::Done, now).await, "Done on the replaced version");
    let retry = Completion::Retry { at: now, error: "old".into() };
    assert_lease_lost(complete(&store, &old.token, retry, now).await, "Retry on the replaced version");
    let dead = Completion::Dead { error: "old".into() };
    assert_lease_lost(complete(&store, &old.token, dead, now).await, "Dead on the replaced version");
    assert_lease_lost(
        store.extend(ExtendRequest::new(old.token.clone(), secs(30), now)).await,
        "extend of the replaced version",
    );
    assert_lease_lost(store.release(&old.token, now).await, "release of the replaced version");
    assert_eq!(stored(&store, "orders", "order-1").await, replaced.task, "the old lease changed the new version");

    let fresh = lease_one(&store, "orders", secs(30), at_secs(100)).await;
    assert_eq!(fresh.token.version, 2);
    assert_eq!(fresh.task.payload, json!({"v": 2}));
    assert_eq!(fresh.attempt, 1);
    assert_ne!(fresh.delivery_id, old.delivery_id, "a new version is a new delivery");
    complete_ok(&store, &fresh.token, Completion::Done, at_secs(101)).await;
    assert_eq!(get(&store, "orders", "order-1").await, None);
}
