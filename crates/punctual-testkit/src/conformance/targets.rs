//! Tasks carrying an HTTP target, and the lanes that keep them from pull workers.
//!
//! Guards against a target lost, truncated or mangled in the store's encoding (headers
//! in order, a body of any JSON, the defaults left out), a replace that keeps the old
//! target or drops the new one, a lease of one lane taking the other's tasks (a pull
//! worker handed a task the server should deliver), a next-due time that mixes the
//! lanes (a consumer woken for the other lane's work, or never woken for its own), a
//! retry, expiry, release or dead-retry that moves a task to the other lane, and a
//! cancel, purge or count that misses tasks of one lane.

use std::time::Duration;

use punctual_core::store::{Completion, LeaseRequest, PurgeRequest, PurgeSelection, RetryDeadRequest};
use punctual_core::{
    Lane, Lease, NewTask, Outcome, Store, Target, TargetMethod, TaskSpec, TaskState, Timestamp, Worker,
};
use serde_json::json;
use tokio::sync::mpsc;

use super::support::*;

/// A target with every field set, and characters an encoding could trip on.
fn full_target() -> Target {
    Target::new("https://hooks.example.com/cancel?order=1234&x=%7C")
        .expect("valid url")
        .method(TargetMethod::Patch)
        .header("X-Tenant", "acme|b,c;\"d\" é")
        .expect("valid header")
        .header("authorization", "Bearer t0k3n")
        .expect("valid header")
        .timeout(Duration::from_secs(30))
        .expect("valid timeout")
        .body(json!({"text": "line\nnext", "n": [1, 2.5, null], "nested": {"ok": true}}))
}

fn plain_target() -> Target {
    Target::new("http://127.0.0.1:9/hook").expect("valid url")
}

fn with_target(queue_name: &str, key_name: &str, due: Timestamp, target: Target) -> NewTask {
    let mut task = new_task(queue_name, key_name, due);
    task.target = Some(target);
    task
}

async fn lease_lane<S: Store>(
    store: &S,
    queue_name: &str,
    lane: Lane,
    max: u32,
    now: Timestamp,
) -> (Vec<String>, Option<Timestamp>) {
    let request = LeaseRequest::new(queue(queue_name), max, secs(30), now).in_lane(lane);
    let batch =
        store.lease(request).await.unwrap_or_else(|e| panic!("lease of {queue_name}'s {lane} lane failed: {e}"));
    (keys_of(&batch.leases), batch.next_due)
}

async fn lease_lane_one<S: Store>(store: &S, queue_name: &str, lane: Lane, now: Timestamp) -> Lease {
    let request = LeaseRequest::new(queue(queue_name), 1, secs(30), now).in_lane(lane);
    let mut batch = store.lease(request).await.unwrap_or_else(|e| panic!("lease of {queue_name}'s {lane} lane: {e}"));
    assert_eq!(batch.leases.len(), 1, "one task of the {lane} lane was due at {now}");
    batch.leases.remove(0)
}

/// A target is stored with its task exactly as given, and read back by every read;
/// a replace writes the new task's target (or none) over the old.
pub async fn a_target_is_stored_with_its_task_and_replaced_with_it<S: Store>(store: S) {
    let target = full_target();
    let created = create(&store, with_target("hooks", "t", at_secs(5), target.clone()), T0).await;
    assert_eq!(created.target.as_ref(), Some(&target), "schedule answers the task with its target");
    assert_eq!(stored(&store, "hooks", "t").await.target.as_ref(), Some(&target), "get reads the target back");
    let many = store.get_many(vec![(queue("hooks"), key("t"))]).await.expect("get_many");
    assert_eq!(many[0].as_ref().and_then(|task| task.target.as_ref()), Some(&target), "get_many reads it back");
    let listed = list_all(&store, "hooks", None).await;
    assert_eq!(listed[0].target.as_ref(), Some(&target), "list reads it back");

    let plain = create(&store, with_target("hooks", "plain", at_secs(5), plain_target()), T0).await;
    assert_eq!(plain.target, Some(plain_target()), "a target of defaults only reads back the same");

    let replaced = upsert(&store, new_task("hooks", "t", at_secs(6)), at_secs(1)).await;
    assert_eq!(replaced.task.target, None, "a replace without a target removes it");
    assert_eq!(stored(&store, "hooks", "t").await.target, None);
    let mut kept = with_target("hooks", "t", at_secs(7), plain_target());
    kept.if_exists = punctual_core::IfExists::Keep;
    assert_eq!(upsert(&store, kept, at_secs(2)).await.task.target, None, "keep leaves the task as it was");
    let again = upsert(&store, with_target("hooks", "t", at_secs(8), target.clone()), at_secs(3)).await;
    assert_eq!(again.task.target.as_ref(), Some(&target), "a replace with a target sets it");
    assert_eq!(stored(&store, "hooks", "t").await.target.as_ref(), Some(&target));
}

/// Each lane's lease takes only its own tasks, in due order, and reports its own next
/// due time; the queue's counts and next due time cover both lanes.
pub async fn leases_of_one_lane_never_take_the_other_lanes_tasks<S: Store>(store: S) {
    let tasks = vec![
        new_task("mixed", "h1", at_secs(1)),
        with_target("mixed", "t1", at_secs(2), plain_target()),
        new_task("mixed", "h2", at_secs(3)),
        with_target("mixed", "t2", at_secs(4), full_target()),
        with_target("mixed", "t3", at_secs(50), plain_target()),
        new_task("mixed", "h3", at_secs(60)),
    ];
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    let counts = stats(&store, Some("mixed")).await;
    assert_eq!((counts[0].scheduled, counts[0].next_due_at), (6, Some(at_secs(1))), "counts cover both lanes");

    let (leased, next) = lease_lane(&store, "mixed", Lane::Target, 1, at_secs(10)).await;
    assert_eq!((leased, next), (vec!["t1".to_owned()], Some(at_secs(4))), "the target lane's first, then its next");
    let (leased, next) = lease_lane(&store, "mixed", Lane::Handler, 10, at_secs(10)).await;
    assert_eq!(leased, ["h1", "h2"], "a handler lease takes only tasks without a target");
    assert_eq!(next, Some(at_secs(60)), "the handler lane's next due time ignores the target lane's");
    let (leased, next) = lease_lane(&store, "mixed", Lane::Target, 10, at_secs(10)).await;
    assert_eq!((leased, next), (vec!["t2".to_owned()], Some(at_secs(50))));
    let (leased, _) = lease_lane(&store, "mixed", Lane::Handler, 10, at_secs(55)).await;
    assert!(leased.is_empty(), "t3 is due yet a handler lease must not take it, took {leased:?}");
    let (leased, next) = lease_lane(&store, "mixed", Lane::Target, 10, at_secs(70)).await;
    assert_eq!((leased, next), (vec!["t3".to_owned()], None));
    let counts = stats(&store, Some("mixed")).await;
    assert_eq!((counts[0].scheduled, counts[0].leased), (1, 5));
}

/// A task keeps its lane through everything that puts it back to work: a retry, a
/// reschedule, an expired lease, a release and a dead task's retry.
pub async fn a_target_task_keeps_its_lane_through_retries_expiry_release_and_dead_retry<S: Store>(store: S) {
    create(&store, with_target("lanes", "t", T0, full_target()), T0).await;
    let lease = lease_lane_one(&store, "lanes", Lane::Target, T0).await;
    let retry = Completion::Retry { at: at_secs(1), error: "503".into() };
    complete_ok(&store, &lease.token, retry, T0).await;
    assert_handler_lane_empty(&store, at_secs(2), "after a retry").await;

    let lease = lease_lane_one(&store, "lanes", Lane::Target, at_secs(2)).await;
    complete_ok(&store, &lease.token, Completion::Reschedule { at: at_secs(3), anchor: at_secs(3) }, at_secs(2)).await;
    assert_handler_lane_empty(&store, at_secs(4), "after a reschedule").await;

    let lease = lease_lane_one(&store, "lanes", Lane::Target, at_secs(4)).await;
    let reaped = reap(&store, at_secs(40), 10).await;
    assert_eq!(reaped.reaped.len(), 1, "the lease expired at 34 s");
    assert_handler_lane_empty(&store, at_secs(40), "after its lease expired").await;
    drop(lease);

    let lease = lease_lane_one(&store, "lanes", Lane::Target, at_secs(40)).await;
    store.release(&lease.token, at_secs(41)).await.expect("release");
    assert_handler_lane_empty(&store, at_secs(41), "after a release").await;

    let lease = lease_lane_one(&store, "lanes", Lane::Target, at_secs(41)).await;
    complete_ok(&store, &lease.token, Completion::Dead { error: "410".into() }, at_secs(42)).await;
    assert_eq!(stored(&store, "lanes", "t").await.state, TaskState::Dead);
    let retried = store.retry_dead(RetryDeadRequest::new(queue("lanes"), key("t"), at_secs(43))).await.expect("retry");
    assert_eq!(retried.and_then(|task| task.target), Some(full_target()), "a dead task's retry keeps its target");
    assert_handler_lane_empty(&store, at_secs(43), "after a dead task's retry").await;
    let lease = lease_lane_one(&store, "lanes", Lane::Target, at_secs(43)).await;
    assert_eq!(lease.task.target, Some(full_target()), "the lease hands out the task with its target");
}

async fn assert_handler_lane_empty<S: Store>(store: &S, now: Timestamp, when: &str) {
    let (leased, next) = lease_lane(store, "lanes", Lane::Handler, 10, now).await;
    assert!(leased.is_empty(), "{when}, a handler lease took the target task: {leased:?}");
    assert_eq!(next, None, "{when}, the handler lane has nothing scheduled");
}

/// A replace moves a task to the lane of its new version, both ways.
pub async fn a_replace_moves_a_task_between_lanes<S: Store>(store: S) {
    create(&store, new_task("moves", "k", T0), T0).await;
    upsert(&store, with_target("moves", "k", T0, plain_target()), T0).await;
    let (leased, next) = lease_lane(&store, "moves", Lane::Handler, 10, at_secs(1)).await;
    assert!(leased.is_empty() && next.is_none(), "the task moved to the target lane, a handler lease took {leased:?}");
    upsert(&store, new_task("moves", "k", T0), at_secs(1)).await;
    let (leased, next) = lease_lane(&store, "moves", Lane::Target, 10, at_secs(2)).await;
    assert!(leased.is_empty() && next.is_none(), "the task moved back, a target lease took {leased:?}");
    let (leased, _) = lease_lane(&store, "moves", Lane::Handler, 10, at_secs(2)).await;
    assert_eq!(leased, ["k"]);
}

/// Cancels, tag cancels and purges reach tasks of both lanes and leave nothing behind.
pub async fn cancels_and_purges_reach_both_lanes<S: Store>(store: S) {
    let mut tagged_target = with_target("gone", "t-tagged", T0, plain_target());
    tagged_target.tags = vec![tag("pi-9")];
    let tasks = vec![
        tagged_target,
        tagged("gone", "h-tagged", &["pi-9"]),
        with_target("gone", "t-one", T0, plain_target()),
        with_target("gone", "t-purged", T0, full_target()),
        new_task("gone", "h-purged", T0),
    ];
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    assert_eq!(store.cancel_tag(&queue("gone"), &tag("pi-9"), None).await.expect("cancel_tag"), 2);
    assert!(store.cancel(&queue("gone"), &key("t-one"), None).await.expect("cancel"));
    let purged = store.purge(PurgeRequest::new(queue("gone"), PurgeSelection::Scheduled, 100)).await.expect("purge");
    assert_eq!(purged, 2, "the purge cancels the scheduled tasks of both lanes");
    for lane in Lane::ALL {
        let (leased, next) = lease_lane(&store, "gone", lane, 10, at_secs(1)).await;
        assert!(leased.is_empty() && next.is_none(), "the {lane} lane still holds {leased:?} (next {next:?})");
    }
    let counts = stats(&store, Some("gone")).await;
    assert_eq!((counts[0].scheduled, counts[0].leased, counts[0].dead), (0, 0, 0));
}

/// Through the engine: a pull lease never hands out a task with a target, a worker on
/// the target lane runs exactly those, and one on both lanes runs both.
pub async fn engine_pull_leases_never_hand_out_a_task_with_a_target<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    engine.schedule("orders", "pull", TaskSpec::at(at_secs(1))).await.expect("schedule");
    engine.schedule("orders", "pushed", TaskSpec::at(T0).target(full_target())).await.expect("schedule");
    clock.advance(secs(1));
    let pulled = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&pulled), ["pull"], "a pull lease must never take the task with a target");
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let handler = reporting_handler(clock.clone(), fired_tx, |_| Outcome::Done);
    let worker =
        Worker::new(engine.clone()).handle("orders", handler).lanes("orders", &[Lane::Target]).start().expect("start");
    let delivered = next_fired(&mut fired, "the task with a target").await;
    assert_eq!(delivered.key, "pushed");
    within("the target worker to shut down", worker.shutdown()).await;

    // The clock is at 1 s.
    engine.schedule("both", "a", TaskSpec::at(at_secs(10))).await.expect("schedule");
    engine.schedule("both", "b", TaskSpec::at(at_secs(20)).target(plain_target())).await.expect("schedule");
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let handler = reporting_handler(clock.clone(), fired_tx, |_| Outcome::Done);
    let worker = Worker::new(engine.clone()).handle("both", handler).lanes("both", &Lane::ALL).start().expect("start");
    clock.advance(secs(9));
    assert_eq!(next_fired(&mut fired, "the task without a target").await.key, "a");
    clock.advance(secs(10));
    assert_eq!(next_fired(&mut fired, "the task with a target, woken by its lane").await.key, "b");
    stop(worker, engine).await;
}
