//! Leasing: a task is handed out only once it is due, earliest first, to one holder at
//! a time, and `lease` tells the caller when the queue has work next.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use punctual_core::store::Completion;
use punctual_core::{Error, ScheduleOutcome, Store, TaskState};

use super::support::*;

/// Guarantee 1 (fires at or after `due_at`, never before) and the `lease` contract: a
/// task is leased only once `due_at ≤ now`; the lease expires `lease_for` after `now`,
/// increases the fence, and is attempt `attempts + 1` of the task's delivery.
pub async fn lease_hands_out_a_task_only_once_it_is_due<S: Store>(store: S) {
    let due = at_secs(10);
    let created = create(&store, new_task("orders", "order-1", due), T0).await;

    let early = lease(&store, "orders", 10, secs(30), at_ms(9_999)).await;
    assert!(early.leases.is_empty(), "a task due at {due} was leased 1 ms early: {:?}", early.leases);
    assert_eq!(early.next_due, Some(due), "next_due while the only task waits");
    assert_eq!(stored(&store, "orders", "order-1").await, created, "a lease that handed out nothing changed the task");

    let batch = lease(&store, "orders", 10, secs(30), due).await;
    assert_eq!(keys_of(&batch.leases), ["order-1"], "the task is due at exactly its due time");
    assert_eq!(batch.next_due, None, "nothing is left scheduled");
    let lease = &batch.leases[0];
    assert_eq!(lease.task.state, TaskState::Leased);
    assert_eq!(lease.expires_at, at_secs(40), "the lease lasts lease_for from now");
    assert_eq!(lease.task.lease_expires_at, Some(at_secs(40)));
    assert_eq!(lease.attempt, 1, "the first try is attempt 1");
    assert_eq!(lease.token.task_id, created.meta.id);
    assert_eq!(lease.token.version, created.version);
    // "Incremented" in the contract: strictly greater is what liveness relies on (a
    // store may jump ahead, e.g. so fences never repeat across restarts).
    assert!(lease.token.fence > created.meta.fence, "leasing must increase the fence");
    assert_eq!(lease.task.meta.fence, lease.token.fence, "the token holds the task's new fence");
    assert_eq!(lease.delivery_id, created.delivery_id(), "a lease does not start a new occurrence");
    assert_eq!(stored(&store, "orders", "order-1").await, lease.task, "get shows the task as leased");
}

/// `lease` contract: up to `max` due tasks, earliest first, in due order; tasks not yet
/// due stay; `next_due` may be ≤ `now` when more were due than `max`.
pub async fn lease_hands_out_due_tasks_earliest_first_up_to_max<S: Store>(store: S) {
    // Written out of due order, so insertion order cannot pass for due order.
    for (name, due) in [("e", 50), ("a", 10), ("future", 200), ("c", 30), ("b", 20), ("d", 40)] {
        create(&store, new_task("orders", name, at_secs(due)), T0).await;
    }
    let now = at_secs(100);
    let first = lease(&store, "orders", 2, secs(30), now).await;
    assert_eq!(keys_of(&first.leases), ["a", "b"], "the two earliest, in due order");
    assert_eq!(first.next_due, Some(at_secs(30)), "c is due and still scheduled");
    let second = lease(&store, "orders", 2, secs(30), now).await;
    assert_eq!(keys_of(&second.leases), ["c", "d"]);
    assert_eq!(second.next_due, Some(at_secs(50)));
    let third = lease(&store, "orders", 2, secs(30), now).await;
    assert_eq!(keys_of(&third.leases), ["e"], "only e is left due; future is not due");
    assert_eq!(third.next_due, Some(at_secs(200)));
    let fourth = lease(&store, "orders", 2, secs(30), now).await;
    assert!(fourth.leases.is_empty(), "nothing due is left: {:?}", fourth.leases);
    assert_eq!(fourth.next_due, Some(at_secs(200)));
    assert_eq!(stored(&store, "orders", "future").await.state, TaskState::Scheduled);
}

/// `LeaseBatch::next_due` contract: the earliest `due_at` among the queue's tasks still
/// `scheduled` — leased and dead tasks and other queues do not count — and `None` when
/// there are none.
pub async fn lease_reports_when_the_queue_has_work_next<S: Store>(store: S) {
    create(&store, new_task("mail", "leased", at_secs(10)), T0).await;
    create(&store, new_task("mail", "dead", at_secs(20)), T0).await;
    create(&store, new_task("mail", "waiting", at_secs(500)), T0).await;
    create(&store, new_task("other", "elsewhere", at_secs(5)), T0).await;

    let first = lease(&store, "mail", 1, secs(300), at_secs(10)).await;
    assert_eq!(keys_of(&first.leases), ["leased"]);
    assert_eq!(first.next_due, Some(at_secs(20)));
    let second = lease(&store, "mail", 1, secs(300), at_secs(20)).await;
    assert_eq!(keys_of(&second.leases), ["dead"]);
    complete_ok(&store, &second.leases[0].token, Completion::Dead { error: "gave up".into() }, at_secs(20)).await;

    let idle = lease(&store, "mail", 1, secs(300), at_secs(30)).await;
    assert!(idle.leases.is_empty());
    assert_eq!(idle.next_due, Some(at_secs(500)), "only 'waiting' is scheduled in this queue");

    assert!(store.cancel(&queue("mail"), &key("waiting"), None).await.expect("cancel"));
    let empty = lease(&store, "mail", 1, secs(300), at_secs(30)).await;
    assert!(empty.leases.is_empty());
    assert_eq!(empty.next_due, None, "a leased and a dead task remain, but nothing scheduled");
}

/// Guarantee 3 (at most one live lease per task) and the `lease` contract ("no task is
/// ever in two live leases"): leases at the same instant, or later while the first is
/// live, never hand out a task again.
pub async fn two_leases_at_the_same_instant_never_share_a_task<S: Store>(store: S) {
    for name in ["a", "b", "c"] {
        create(&store, new_task("orders", name, T0), T0).await;
    }
    let first = lease(&store, "orders", 2, secs(30), T0).await;
    let second = lease(&store, "orders", 2, secs(30), T0).await;
    assert_eq!(first.leases.len(), 2);
    assert_eq!(second.leases.len(), 1, "only one task was left");
    let mut seen: Vec<String> = keys_of(&first.leases);
    seen.extend(keys_of(&second.leases));
    seen.sort();
    assert_eq!(seen, ["a", "b", "c"], "each task leased once");
    let while_live = lease(&store, "orders", 10, secs(30), at_ms(29_999)).await;
    assert!(while_live.leases.is_empty(), "tasks under live leases were leased again: {:?}", while_live.leases);
}

/// Guarantee 3 under real concurrency: many `lease` calls at once over N due tasks hand
/// out each task exactly once, and each ends up `leased`.
pub async fn concurrent_leases_hand_out_each_due_task_exactly_once<S: Store>(store: S) {
    const TASKS: usize = 120;
    const LEASERS: usize = 12;
    let tasks = (0..TASKS).map(|i| new_task("orders", &format!("order-{i:03}"), at_ms(i as i64))).collect();
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    let store = Arc::new(store);
    let now = at_secs(60);
    let mut leasers = tokio::task::JoinSet::new();
    for _ in 0..LEASERS {
        let store = Arc::clone(&store);
        leasers.spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = lease(&*store, "orders", 3, secs(30), now).await;
                if batch.leases.is_empty() {
                    return mine;
                }
                mine.extend(keys_of(&batch.leases));
            }
        });
    }
    let mut times_leased: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(joined) = within("the concurrent leasers", leasers.join_next()).await {
        for name in joined.expect("a leaser panicked") {
            *times_leased.entry(name).or_default() += 1;
        }
    }
    let twice: Vec<_> = times_leased.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "tasks leased more than once: {twice:?}");
    assert_eq!(times_leased.len(), TASKS, "every due task must be leased once");
    let counts = stats(&*store, Some("orders")).await;
    assert_eq!((counts[0].scheduled, counts[0].leased), (0, TASKS as u64));
}

/// Guarantee 3 and the `complete` contract under concurrency: of many acks of one
/// lease racing, exactly one applies; the others are `LeaseLost`, so a failure is
/// counted once.
pub async fn concurrent_acks_of_one_lease_succeed_once<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    let token = lease_one(&store, "orders", secs(30), T0).await.token;
    let store = Arc::new(store);
    let mut ackers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let (store, token) = (Arc::clone(&store), token.clone());
        ackers.spawn(async move {
            let retry = Completion::Retry { at: at_secs(10), error: format!("failure {i}") };
            complete(&*store, &token, retry, at_secs(1)).await
        });
    }
    let mut applied = 0;
    while let Some(joined) = within("the concurrent acks", ackers.join_next()).await {
        match joined.expect("an acker panicked") {
            Ok(()) => applied += 1,
            Err(Error::LeaseLost) => {}
            Err(e) => panic!("an ack failed with {e} instead of LeaseLost"),
        }
    }
    assert_eq!(applied, 1, "exactly one ack of a lease may apply");
    let task = stored(&*store, "orders", "order-1").await;
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1), "the failure was counted once");
}

/// (queue, key) is unique (DESIGN.md vocabulary) and `schedule` is atomic: racing
/// schedules of one key make one task, one creation and a version per write.
pub async fn concurrent_schedules_of_one_key_keep_one_task<S: Store>(store: S) {
    const WRITERS: u64 = 16;
    let store = Arc::new(store);
    let mut writers = tokio::task::JoinSet::new();
    for i in 0..WRITERS {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let mut task = new_task("orders", "order-1", at_secs(60));
            task.payload = serde_json::json!({ "writer": i });
            upsert(&*store, task, T0).await
        });
    }
    let mut created = 0;
    let mut versions = HashSet::new();
    while let Some(joined) = within("the concurrent schedules", writers.join_next()).await {
        let scheduled = joined.expect("a writer panicked");
        match scheduled.outcome {
            ScheduleOutcome::Created => created += 1,
            ScheduleOutcome::Replaced => {}
            other => panic!("replace answered {other:?}"),
        }
        assert!(versions.insert(scheduled.task.version), "two writes answered version {}", scheduled.task.version);
    }
    assert_eq!(created, 1, "one write creates, the others replace");
    assert_eq!(versions, (1..=WRITERS).collect::<HashSet<_>>(), "each write bumps the version once");
    let all = list_all(&*store, "orders", None).await;
    assert_eq!(all.len(), 1, "one (queue, key), one task: {all:?}");
    assert_eq!(all[0].version, WRITERS);
}
