//! How a try ends: the four completions as the store applies them, retries with
//! backoff until the task is dead, the handler's `fail` and `reschedule`, and the dead
//! list with its manual retry and delete.

use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, RetryDeadRequest};
use punctual_core::{Backoff, Clock, Error, ListOptions, Outcome, Store, TaskSpec, TaskState, Timestamp};

use super::support::*;

/// `Completion` contract as `complete` applies it: `Done` deletes; `Retry` counts a
/// failure and schedules at `at` in the same occurrence; `Reschedule` starts a new
/// occurrence (attempts 0, error cleared, new delivery id); `Dead` counts a failure
/// and parks the task. A completed lease is over: a second ack is `LeaseLost`.
pub async fn complete_applies_each_completion_as_documented<S: Store>(store: S) {
    for name in ["done", "retry", "reschedule", "dead"] {
        create(&store, new_task("orders", name, T0), T0).await;
    }
    let leases = lease(&store, "orders", 4, secs(30), T0).await.leases;
    assert_eq!(leases.len(), 4);
    let now = at_secs(1);
    let mut before = Vec::new();
    for lease in &leases {
        let completion = match lease.token.key.as_str() {
            "done" => Completion::Done,
            "retry" => Completion::Retry { at: at_secs(50), error: "timeout".into() },
            "reschedule" => Completion::Reschedule { at: at_secs(86_400), anchor: at_secs(86_400) },
            _ => Completion::Dead { error: "bad payload".into() },
        };
        complete_ok(&store, &lease.token, completion, now).await;
        before.push((lease.token.key.to_string(), lease.delivery_id.clone()));
    }
    let delivery_id_of = |name: &str| before.iter().find(|(k, _)| k == name).map(|(_, id)| id.clone()).expect("leased");

    assert_eq!(get(&store, "orders", "done").await, None, "Done deletes the task");
    let retry = stored(&store, "orders", "retry").await;
    assert_eq!(retry.state, TaskState::Scheduled);
    assert_eq!((retry.attempts, retry.due_at), (1, at_secs(50)));
    assert_eq!(retry.last_error.as_deref(), Some("timeout"));
    assert_eq!(retry.delivery_id(), delivery_id_of("retry"), "a retry stays in the occurrence");
    let rescheduled = stored(&store, "orders", "reschedule").await;
    assert_eq!(rescheduled.state, TaskState::Scheduled);
    assert_eq!((rescheduled.attempts, rescheduled.due_at), (0, at_secs(86_400)));
    assert_eq!(rescheduled.last_error, None);
    assert_eq!(rescheduled.meta.occurrence, 2, "a reschedule is the next occurrence");
    assert_ne!(rescheduled.delivery_id(), delivery_id_of("reschedule"), "a new occurrence is a new delivery");
    let dead = stored(&store, "orders", "dead").await;
    assert_eq!((dead.state, dead.attempts), (TaskState::Dead, 1));
    assert_eq!(dead.last_error.as_deref(), Some("bad payload"));

    let after = contents(&store, &["orders"]).await;
    for lease in &leases {
        let what = format!("a second ack of {}", lease.token.key);
        assert_lease_lost(complete(&store, &lease.token, Completion::Done, at_secs(2)).await, &what);
    }
    assert_eq!(contents(&store, &["orders"]).await, after, "a second ack changed the store");
}

/// `complete_many` contract: each completion is applied or refused on its own exactly
/// as `complete` would be, in order — so the same token twice applies once.
pub async fn complete_many_applies_or_refuses_each_on_its_own<S: Store>(store: S) {
    for name in ["a", "b", "c"] {
        create(&store, new_task("orders", name, T0), T0).await;
    }
    let leases = lease(&store, "orders", 3, secs(30), T0).await.leases;
    let token_of = |name: &str| leases.iter().find(|l| l.token.key == key(name)).expect("leased").token.clone();
    let now = at_secs(1);
    let mut stale = token_of("c");
    stale.fence += 1;
    let requests = vec![
        CompleteRequest::new(token_of("a"), Completion::Done, now),
        CompleteRequest::new(stale, Completion::Done, now),
        CompleteRequest::new(token_of("b"), Completion::Retry { at: at_secs(9), error: "x".into() }, now),
        CompleteRequest::new(token_of("b"), Completion::Done, now),
    ];
    let results = store.complete_many(requests).await.expect("complete_many");
    assert_eq!(results.len(), 4);
    assert_eq!(results[0], Ok(()));
    assert_eq!(results[1], Err(Error::LeaseLost), "a stale token among live ones");
    assert_eq!(results[2], Ok(()));
    assert_eq!(results[3], Err(Error::LeaseLost), "the lease of b was completed by the item before");
    assert_eq!(get(&store, "orders", "a").await, None);
    let b = stored(&store, "orders", "b").await;
    assert_eq!((b.state, b.attempts, b.due_at), (TaskState::Scheduled, 1, at_secs(9)));
    assert_eq!(stored(&store, "orders", "c").await.state, TaskState::Leased, "the refused item changed c");
    assert_eq!(store.complete_many(Vec::new()).await.expect("an empty batch"), Vec::<punctual_core::Result<()>>::new());
}

/// The wait before the next try after `failures` failures, as policy/backoff.rs bounds it:
/// between 80 % and 100 % of `min(max, initial × factor^(failures − 1))`.
fn backoff_bounds(backoff: &Backoff, failures: u32, now: Timestamp) -> (Timestamp, Timestamp) {
    let full = backoff.initial().as_secs_f64() * backoff.factor().powi(failures as i32 - 1);
    let full = Duration::from_secs_f64(full.min(backoff.max().as_secs_f64()));
    (now.saturating_add(full.mul_f64(0.8)), now.saturating_add(full))
}

/// DESIGN.md retry rules through `Engine::complete` and `Engine::ack`: each failure
/// schedules the same delivery again after a backoff within the bounds of policy/backoff.rs,
/// attempt numbers count up, and after `max_attempts` failures the task is `dead` with
/// the last error — listed as dead, never leased again.
pub async fn engine_retries_with_backoff_then_the_task_dies<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    let backoff = Backoff::new(secs(2), 3.0, secs(10)).expect("backoff");
    let spec = TaskSpec::now().max_attempts(3).backoff(backoff);
    engine.schedule("orders", "order-1", spec).await.expect("schedule");
    engine.schedule("orders", "bystander", TaskSpec::after(secs(3600))).await.expect("schedule");

    let first = engine_lease_one(&engine, "orders", secs(30)).await;
    assert_eq!(first.attempt, 1);
    engine.complete(&first, Outcome::retry("boom 1")).await.expect("complete");
    let task = stored(engine.store(), "orders", "order-1").await;
    let (earliest, latest) = backoff_bounds(&backoff, 1, T0);
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert_eq!(task.last_error.as_deref(), Some("boom 1"));
    assert!(
        earliest <= task.due_at && task.due_at <= latest,
        "retry 1 due {} outside {earliest}..={latest}",
        task.due_at
    );
    assert!(engine_lease(&engine, "orders", 1, secs(30)).await.is_empty(), "leased during its backoff");

    clock.set(task.due_at);
    let second = engine_lease_one(&engine, "orders", secs(30)).await;
    assert_eq!(second.attempt, 2);
    assert_eq!(second.delivery_id, first.delivery_id, "tries of one occurrence share the delivery id");
    let now = clock.now();
    engine.ack(&second.token, Outcome::retry("boom 2")).await.expect("ack");
    let task = stored(engine.store(), "orders", "order-1").await;
    let (earliest, latest) = backoff_bounds(&backoff, 2, now);
    assert_eq!(task.attempts, 2);
    assert!(
        earliest <= task.due_at && task.due_at <= latest,
        "retry 2 due {} outside {earliest}..={latest}",
        task.due_at
    );

    clock.set(task.due_at);
    let third = engine_lease_one(&engine, "orders", secs(30)).await;
    assert_eq!(third.attempt, 3);
    engine.ack(&third.token, Outcome::retry("boom 3")).await.expect("ack");
    let task = stored(engine.store(), "orders", "order-1").await;
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 3), "the third failure of three is the last");
    assert_eq!(task.last_error.as_deref(), Some("boom 3"));

    let dead = engine.list("orders", ListOptions::default().state(Some(TaskState::Dead))).await.expect("list");
    assert_eq!(dead.tasks.iter().map(name_of).collect::<Vec<_>>(), ["orders/order-1"], "the dead list");
    clock.advance(secs(86_400));
    let leased = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&leased), ["bystander"], "a dead task is never leased");
}

/// `Outcome::Fail`: the task goes `dead` at once, whatever attempts are left.
pub async fn outcome_fail_sends_the_task_to_dead_at_once<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    engine.schedule("orders", "order-1", TaskSpec::now().max_attempts(20)).await.expect("schedule");
    let lease = engine_lease_one(&engine, "orders", secs(30)).await;
    engine.ack(&lease.token, Outcome::fail("order no longer exists")).await.expect("ack");
    let task = stored(engine.store(), "orders", "order-1").await;
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1));
    assert_eq!(task.last_error.as_deref(), Some("order no longer exists"));
}

/// `Outcome::Reschedule` ("remind again in 24 h"): a new occurrence at the asked time —
/// attempts 0, error cleared, a different delivery id — that fires as attempt 1.
pub async fn outcome_reschedule_starts_a_new_occurrence<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    engine.schedule("flow.reminder", "step-7", TaskSpec::now()).await.expect("schedule");
    let first = engine_lease_one(&engine, "flow.reminder", secs(30)).await;
    engine.ack(&first.token, Outcome::retry_in(secs(5), "mail server down")).await.expect("ack");
    clock.advance(secs(5));
    let second = engine_lease_one(&engine, "flow.reminder", secs(30)).await;
    assert_eq!(second.attempt, 2, "set-up: one failed try");

    engine.ack(&second.token, Outcome::reschedule_in(secs(86_400))).await.expect("ack");
    let task = stored(engine.store(), "flow.reminder", "step-7").await;
    assert_eq!(task.state, TaskState::Scheduled);
    assert_eq!(task.due_at, at_secs(5 + 86_400), "due 24 h after the ack");
    assert_eq!((task.attempts, task.last_error.as_deref()), (0, None));

    clock.set(task.due_at);
    let next = engine_lease_one(&engine, "flow.reminder", secs(30)).await;
    assert_eq!(next.attempt, 1, "a new occurrence starts at attempt 1");
    assert_ne!(next.delivery_id, first.delivery_id, "a new occurrence is a new delivery");
}

/// `retry_dead` contract: a dead task comes back `scheduled`, due now, attempts 0,
/// `last_error` kept, and is leased at once; it answers `None` (and changes nothing)
/// for a task that is not dead or not there.
pub async fn dead_tasks_are_listed_and_can_be_retried<S: Store>(store: S) {
    create(&store, new_task("orders", "dead", T0), T0).await;
    create(&store, new_task("orders", "alive", at_secs(600)), T0).await;
    let token = lease_one(&store, "orders", secs(30), T0).await.token;
    complete_ok(&store, &token, Completion::Dead { error: "gave up".into() }, T0).await;
    let dead = list_all(&store, "orders", Some(TaskState::Dead)).await;
    assert_eq!(dead.iter().map(name_of).collect::<Vec<_>>(), ["orders/dead"]);

    let before = contents(&store, &["orders"]).await;
    let retried =
        store.retry_dead(RetryDeadRequest::new(queue("orders"), key("alive"), at_secs(60))).await.expect("retry_dead");
    assert_eq!(retried, None, "'alive' is not dead");
    let missing = store
        .retry_dead(RetryDeadRequest::new(queue("orders"), key("missing"), at_secs(60)))
        .await
        .expect("retry_dead");
    assert_eq!(missing, None);
    assert_eq!(contents(&store, &["orders"]).await, before, "retry_dead of a task that is not dead changed the store");

    let retried =
        store.retry_dead(RetryDeadRequest::new(queue("orders"), key("dead"), at_secs(60))).await.expect("retry_dead");
    let retried = retried.expect("a dead task is retried");
    assert_eq!(retried.state, TaskState::Scheduled);
    assert_eq!((retried.due_at, retried.attempts), (at_secs(60), 0), "due now, attempts reset");
    assert_eq!(retried.last_error.as_deref(), Some("gave up"), "last_error is kept for reference");
    assert_eq!(stored(&store, "orders", "dead").await, retried);
    assert!(list_all(&store, "orders", Some(TaskState::Dead)).await.is_empty());
    let lease = lease_one(&store, "orders", secs(30), at_secs(60)).await;
    assert_eq!((lease.token.key.as_str(), lease.attempt), ("dead", 1));
}

/// `delete_dead` contract: deletes a dead task; `false` for a task in another state
/// (left alone) or no task.
pub async fn delete_dead_removes_only_dead_tasks<S: Store>(store: S) {
    for name in ["dead", "leased", "scheduled"] {
        create(&store, new_task("orders", name, T0), T0).await;
    }
    create(&store, new_task("mail", "dead", T0), T0).await;
    for queue_name in ["orders", "mail"] {
        let leases = lease(&store, queue_name, 3, secs(300), T0).await.leases;
        for lease in leases.iter().filter(|l| l.token.key.as_str() == "dead") {
            complete_ok(&store, &lease.token, Completion::Dead { error: "gave up".into() }, T0).await;
        }
        for lease in leases.iter().filter(|l| l.token.key.as_str() == "scheduled") {
            store.release(&lease.token, T0).await.expect("release");
        }
    }
    let before = contents(&store, &["orders", "mail"]).await;
    for name in ["leased", "scheduled", "missing"] {
        assert!(
            !store.delete_dead(&queue("orders"), &key(name), None).await.expect("delete_dead"),
            "{name} is not dead"
        );
    }
    assert_eq!(contents(&store, &["orders", "mail"]).await, before, "delete_dead touched a task that is not dead");

    assert!(store.delete_dead(&queue("orders"), &key("dead"), None).await.expect("delete_dead"));
    assert_eq!(get(&store, "orders", "dead").await, None);
    assert_eq!(stored(&store, "mail", "dead").await.state, TaskState::Dead, "only that queue's dead task");
    assert_eq!(stored(&store, "orders", "leased").await.state, TaskState::Leased);
    assert_eq!(stored(&store, "orders", "scheduled").await.state, TaskState::Scheduled);
    assert!(!store.delete_dead(&queue("orders"), &key("dead"), None).await.expect("delete_dead"), "already deleted");
}
