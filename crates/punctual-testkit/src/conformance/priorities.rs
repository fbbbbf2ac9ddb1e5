//! Priorities: among a queue's due tasks, the higher priority is leased first, each
//! priority in due order; a priority never makes a task fire before its due time.
//!
//! Guards against a priority lost or changed in the store's encoding, a lease that
//! takes due tasks in due order only (an urgent task stuck behind a backlog), one that
//! hands out a high-priority task before it is due, a `next_due` that looks at one
//! priority only (a consumer never woken for the others), a replace that keeps the old
//! priority, and a retry or expiry that drops it.

use punctual_core::store::Completion;
use punctual_core::{NewTask, Priority, Store, TaskSpec, Timestamp};

use super::support::*;

fn with_priority(queue_name: &str, key_name: &str, due: Timestamp, level: u8) -> NewTask {
    let mut task = new_task(queue_name, key_name, due);
    task.priority = Priority::new(level.into()).expect("the suite uses valid priorities");
    task
}

/// `lease` contract: the due tasks of the highest priority first, each priority
/// earliest first, up to `max`; a task of any priority waits for its due time; and
/// `next_due` is the earliest due time over every priority.
pub async fn lease_takes_the_highest_priority_first_and_never_before_due<S: Store>(store: S) {
    // Written out of order, so neither insertion nor due order can pass for priority.
    for (name, due, level) in [
        ("low-b", 20, 0),
        ("urgent-late", 200, 9),
        ("high-w", 40, 9),
        ("mid-y", 25, 5),
        ("low-a", 10, 0),
        ("high-x", 30, 9),
    ] {
        let created = create(&store, with_priority("orders", name, at_secs(due), level), T0).await;
        assert_eq!(created.priority.get(), level, "{name}: the created task shows its priority");
        assert_eq!(stored(&store, "orders", name).await.priority.get(), level, "{name}: get shows the priority");
    }
    let now = at_secs(100);
    let first = lease(&store, "orders", 2, secs(30), now).await;
    assert_eq!(keys_of(&first.leases), ["high-x", "high-w"], "priority 9 first, in due order");
    assert_eq!(first.leases[0].task.priority.get(), 9, "a lease shows the task's priority");
    assert_eq!(first.next_due, Some(at_secs(10)), "the earliest due over every priority");
    let second = lease(&store, "orders", 2, secs(30), now).await;
    assert_eq!(keys_of(&second.leases), ["mid-y", "low-a"], "then priority 5, then priority 0 in due order");
    let third = lease(&store, "orders", 10, secs(30), now).await;
    assert_eq!(keys_of(&third.leases), ["low-b"], "urgent-late is not due, whatever its priority");
    assert_eq!(third.next_due, Some(at_secs(200)));
    let at_its_time = lease(&store, "orders", 10, secs(30), at_secs(200)).await;
    assert_eq!(keys_of(&at_its_time.leases), ["urgent-late"]);
}

/// A replace takes the new task's priority (also back to 0); a retry and an expired
/// lease keep the task's priority, so its next try still goes before lower ones.
pub async fn a_replace_changes_the_priority_and_a_retry_or_expiry_keeps_it<S: Store>(store: S) {
    create(&store, with_priority("orders", "promoted", at_secs(20), 0), T0).await;
    create(&store, with_priority("orders", "demoted", at_secs(10), 7), T0).await;
    create(&store, with_priority("orders", "plain", at_secs(5), 0), T0).await;
    upsert(&store, with_priority("orders", "promoted", at_secs(20), 8), T0).await;
    upsert(&store, with_priority("orders", "demoted", at_secs(10), 0), T0).await;
    assert_eq!(stored(&store, "orders", "promoted").await.priority.get(), 8);
    assert_eq!(stored(&store, "orders", "demoted").await.priority.get(), 0, "a replace back to the default");

    let now = at_secs(30);
    let first = lease(&store, "orders", 1, secs(30), now).await;
    assert_eq!(keys_of(&first.leases), ["promoted"], "the replace's priority decides");
    complete_ok(&store, &first.leases[0].token, Completion::Retry { at: now, error: "busy".into() }, now).await;
    assert_eq!(stored(&store, "orders", "promoted").await.priority.get(), 8, "a retry keeps the priority");
    let second = lease(&store, "orders", 1, secs(30), now).await;
    assert_eq!(keys_of(&second.leases), ["promoted"], "the retried task goes first again");

    // Its lease expires: due again at once, still at priority 8.
    let reaped_at = at_secs(60);
    reap(&store, reaped_at, 10).await;
    assert_eq!(stored(&store, "orders", "promoted").await.priority.get(), 8, "an expired lease keeps the priority");
    let third = lease(&store, "orders", 3, secs(30), reaped_at).await;
    assert_eq!(keys_of(&third.leases), ["promoted", "plain", "demoted"], "then the rest in due order");
}

/// The engine checks a spec's priority: above 9 is `Error::Invalid` about `priority`
/// and changes nothing; 9 is accepted and stored.
pub async fn schedule_refuses_a_priority_above_nine_and_changes_nothing<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    engine.schedule("orders", "kept", TaskSpec::now().priority(3)).await.expect("priority 3 is valid");
    let before = stored(engine.store(), "orders", "kept").await;
    for key_name in ["kept", "new"] {
        let what = format!("priority 10 for {key_name}");
        assert_refused(engine.schedule("orders", key_name, TaskSpec::now().priority(10)).await, "priority", &what);
    }
    assert_eq!(stored(engine.store(), "orders", "kept").await, before, "a refused replace changed the task");
    assert!(get(engine.store(), "orders", "new").await.is_none(), "a refused create stored a task");
    let highest = engine.schedule("orders", "new", TaskSpec::now().priority(9)).await.expect("priority 9 is valid");
    assert_eq!(highest.task.map(|t| t.priority), Some(Priority::HIGHEST));
}
