//! Groups: a queue's `group_concurrency` bounds each group's leased tasks, a group's
//! tasks go in due order, and due tasks are handed out round robin between groups (the
//! ungrouped tasks taking turns as one more group), so one group's backlog never
//! starves another.
//!
//! Guards against a group lost in the store's encoding, a limit that counts one lane or
//! one call only, a lease that walks due order across groups (a backlog first), turns
//! that are not kept between calls or not forgotten when a group empties, a `next_due`
//! that names a group at its limit (a consumer spinning on work it cannot take), and an
//! engine that does not wake its consumers when a group gets room again.

use punctual_core::store::{Completion, GroupsRequest, LeaseRequest};
use punctual_core::{
    EngineConfig, Group, LeaseOptions, ManualClock, NewTask, QueueDefaults, Store, TaskSpec, Timestamp,
};
use std::sync::Arc;

use super::support::*;

fn in_group(queue_name: &str, key_name: &str, due: Timestamp, group: &str) -> NewTask {
    let mut task = new_task(queue_name, key_name, due);
    task.group = Some(Group::new(group).expect("the suite uses valid groups"));
    task
}

async fn lease_limited<S: Store>(store: &S, max: u32, limit: Option<u32>, now: Timestamp) -> Vec<String> {
    let request = LeaseRequest::new(queue("orders"), max, secs(30), now).group_limit(limit);
    let batch = store.lease(request).await.unwrap_or_else(|e| panic!("lease failed: {e}"));
    keys_of(&batch.leases)
}

/// `lease` contract: with a group limit of 1 a group has one leased task at a time, in
/// due order, across calls; other groups are not held up; `next_due` leaves out a group
/// at its limit; an ended lease gives the group its room back.
pub async fn a_group_limit_holds_its_leased_tasks_and_a_group_runs_in_due_order<S: Store>(store: S) {
    for (name, due, group) in
        [("c1-late", 30, "c1"), ("c2-only", 15, "c2"), ("c1-first", 10, "c1"), ("c1-mid", 20, "c1")]
    {
        let created = create(&store, in_group("orders", name, at_secs(due), group), T0).await;
        assert_eq!(created.group.as_ref().map(Group::as_str), Some(group), "{name}: the created task shows its group");
        assert_eq!(stored(&store, "orders", name).await.group, created.group, "{name}: get shows the group");
    }
    let now = at_secs(100);
    let request = LeaseRequest::new(queue("orders"), 10, secs(30), now).group_limit(Some(1));
    let first = store.lease(request.clone()).await.expect("lease");
    assert_eq!(keys_of(&first.leases), ["c1-first", "c2-only"], "one task per group, each group's earliest");
    assert_eq!(first.leases[0].task.group.as_ref().map(Group::as_str), Some("c1"), "a lease shows the group");
    assert_eq!(first.next_due, None, "c1 is at its limit: nothing it holds is offered");
    assert!(lease_limited(&store, 10, Some(1), now).await.is_empty(), "c1 waits for its lease to end");
    assert_eq!(lease_limited(&store, 10, Some(2), now).await, ["c1-mid"], "a limit of 2 gives c1 a second lease");

    complete_ok(&store, &first.leases[0].token, Completion::Done, now).await;
    let retry = Completion::Retry { at: at_secs(500), error: "busy".into() };
    // c1-mid's lease (taken under a limit of 2) still counts: c1 is at 1 of 1.
    assert!(lease_limited(&store, 10, Some(1), now).await.is_empty(), "the second lease still holds c1");
    let mid = stored(&store, "orders", "c1-mid").await;
    let mid_token =
        punctual_core::LeaseToken::new(mid.queue.clone(), mid.key.clone(), mid.meta.id, mid.version, mid.meta.fence);
    complete_ok(&store, &mid_token, retry, now).await;
    assert_eq!(lease_limited(&store, 10, Some(1), now).await, ["c1-late"], "room again: the group's next in due order");
    let blocked = store.lease(request.clone()).await.expect("lease");
    assert_eq!(blocked.next_due, None, "c1 is full again: c1-mid's retry at 500 is not offered");
    let unlimited = store.lease(request.group_limit(None)).await.expect("lease");
    assert!(unlimited.leases.is_empty());
    assert_eq!(unlimited.next_due, Some(at_secs(500)), "without a limit, the retry's time");
}

/// `lease` contract: groups take turns, the ungrouped tasks as one more group, between
/// calls as within one; a group that empties is forgotten and starts again at turn 0.
pub async fn groups_take_turns_so_a_backlog_never_starves_a_small_group<S: Store>(store: S) {
    let mut tasks: Vec<NewTask> =
        (1..=12).map(|i| in_group("orders", &format!("big-{i:02}"), at_secs(i), "big")).collect();
    tasks.extend([
        in_group("orders", "s1", at_secs(15), "s1"),
        in_group("orders", "s2", at_secs(16), "s2"),
        in_group("orders", "s3", at_secs(17), "s3"),
        new_task("orders", "u1", at_secs(5)),
        new_task("orders", "u2", at_secs(6)),
    ]);
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    let now = at_secs(100);
    // Turns start at 0; ties go to the ungrouped tasks, then by group name.
    assert_eq!(lease_limited(&store, 3, None, now).await, ["u1", "big-01", "s1"]);
    assert_eq!(lease_limited(&store, 4, None, now).await, ["s2", "s3", "u2", "big-02"], "turns carry across calls");
    let s1 = stored(&store, "orders", "s1").await;
    let s1_token =
        punctual_core::LeaseToken::new(s1.queue.clone(), s1.key.clone(), s1.meta.id, s1.version, s1.meta.fence);
    complete_ok(&store, &s1_token, Completion::Done, now).await;
    create(&store, in_group("orders", "s1-again", at_secs(50), "s1"), now).await;
    assert_eq!(
        lease_limited(&store, 2, None, now).await,
        ["s1-again", "big-03"],
        "an emptied group starts again at turn 0"
    );
    let rest = lease_limited(&store, 100, None, now).await;
    let expected: Vec<String> = (4..=12).map(|i| format!("big-{i:02}")).collect();
    assert_eq!(rest, expected, "alone, a group goes in due order");
}

/// `groups` contract: the queue's groups with tasks, by name, each counted by state,
/// paged; ungrouped tasks and emptied groups are not listed.
pub async fn groups_are_listed_by_name_with_their_tasks_by_state<S: Store>(store: S) {
    for (name, group) in [("b1", "beta"), ("a1", "alpha"), ("a2", "alpha"), ("c1", "gamma"), ("d1", "delta")] {
        create(&store, in_group("orders", name, at_secs(1), group), T0).await;
    }
    create(&store, new_task("orders", "plain", at_secs(1)), T0).await;
    create(&store, in_group("other", "x1", at_secs(1), "alpha"), T0).await;
    let now = at_secs(10);
    let leased = lease(&store, "orders", 10, secs(30), now).await;
    let a1 = leased.leases.iter().find(|l| l.token.key.as_str() == "a1").expect("a1 was leased");
    let b1 = leased.leases.iter().find(|l| l.token.key.as_str() == "b1").expect("b1 was leased");
    complete_ok(&store, &b1.token, Completion::Dead { error: "gone".into() }, now).await;
    assert!(store.cancel(&queue("orders"), &key("c1"), None).await.expect("cancel"), "c1 was there");
    let _ = a1;
    let all_leased = leased.leases.len();
    assert_eq!(all_leased, 6, "every due task was leased");

    let first = store.groups(GroupsRequest::new(queue("orders"), 2, None)).await.expect("groups");
    let counts = |page: &punctual_core::GroupsPage| -> Vec<(String, u64, u64, u64)> {
        page.groups.iter().map(|g| (g.group.to_string(), g.scheduled, g.leased, g.dead)).collect()
    };
    assert_eq!(counts(&first), [("alpha".into(), 0, 2, 0), ("beta".into(), 0, 0, 1)]);
    let cursor = first.next_cursor.clone().expect("more groups");
    let second = store.groups(GroupsRequest::new(queue("orders"), 2, Some(cursor))).await.expect("groups");
    assert_eq!(counts(&second), [("delta".into(), 0, 1, 0)], "gamma emptied; the ungrouped task is no group");
    assert_eq!(second.next_cursor, None);
    let empty = store.groups(GroupsRequest::new(queue("nothing"), 10, None)).await.expect("groups");
    assert!(empty.groups.is_empty() && empty.next_cursor.is_none());
}

/// The engine leases under the queue's `group_concurrency`, and a consumer waiting on a
/// group at its limit gets the group's next task as soon as the lease before it ends.
pub async fn engine_holds_the_group_limit_and_wakes_a_consumer_when_the_group_has_room<S: Store>(store: S) {
    let clock = ManualClock::new(T0);
    let mut defaults = QueueDefaults::default();
    defaults.group_concurrency = Some(1);
    let config = EngineConfig::default().clock(Arc::new(clock.clone())).queue(queue("orders"), defaults);
    let engine = punctual_core::Engine::start(store, config);
    for name in ["first", "second"] {
        engine.schedule("orders", name, TaskSpec::now().group("customer-42")).await.expect("schedule");
    }
    let first = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&first), ["first"], "one lease of customer-42 at a time");
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let options = LeaseOptions::default().max(10).wait(secs(30));
            engine.lease("orders", options).await
        })
    };
    engine.complete(&first[0], punctual_core::Outcome::Done).await.expect("ack");
    let second = within("the waiting consumer's lease", waiting).await.expect("join").expect("lease");
    assert_eq!(keys_of(&second), ["second"], "woken when the group had room, not at the wait's end");
    engine.shutdown().await.expect("shutdown");
}
