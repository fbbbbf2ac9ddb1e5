//! Trace contexts: a task keeps the W3C `traceparent` it was scheduled with, so that
//! each of its deliveries continues the scheduler's trace (README "Traces").
//!
//! Guards against a trace context lost in the store's encoding, dropped by a write that
//! puts the task back to work (a retry, a reschedule, an expired lease, a release, a
//! dead task's retry), missing from what a lease hands out, and a replace that keeps
//! the old task's trace when the new request brought none.

use punctual_core::store::{Completion, RetryDeadRequest};
use punctual_core::{NewTask, Store, TaskState, TraceContext};

use super::support::*;

/// The trace of the first schedule.
const FIRST: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// The trace of a replace.
const SECOND: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn trace(text: &str) -> TraceContext {
    TraceContext::new(text).expect("the suite uses valid traceparents")
}

fn traced(key_name: &str, traceparent: &str) -> NewTask {
    new_task("traced", key_name, T0).traceparent(trace(traceparent))
}

/// `schedule`, `get`, `lease`, `complete`, `reap`, `release` and `retry_dead`
/// contracts: the task's trace context is the one its last write gave — kept through
/// every lease, retry, reschedule, expiry, release and dead task's retry, handed out
/// with each lease — and a replace writes the new request's, none when it has none.
pub async fn a_tasks_trace_context_lives_through_its_tries_and_a_replace_writes_its_own<S: Store>(store: S) {
    let created = create(&store, traced("t", FIRST), T0).await;
    assert_eq!(created.traceparent, Some(trace(FIRST)), "the schedule's answer shows the trace");
    let plain = create(&store, new_task("traced", "plain", at_secs(900)), T0).await;
    assert_eq!(plain.traceparent, None, "a task scheduled without a trace has none");
    assert_first_trace(&store, "as stored").await;

    let first = lease_one(&store, "traced", secs(30), T0).await;
    assert_eq!(first.task.traceparent, Some(trace(FIRST)), "a lease hands out the trace");
    complete_ok(&store, &first.token, Completion::Retry { at: at_secs(1), error: "503".into() }, T0).await;
    assert_first_trace(&store, "after a retry").await;
    let second = lease_one(&store, "traced", secs(30), at_secs(1)).await;
    assert_eq!(second.task.traceparent, Some(trace(FIRST)), "the retry's lease hands out the trace");
    let next = Completion::Reschedule { at: at_secs(2), anchor: at_secs(2) };
    complete_ok(&store, &second.token, next, at_secs(1)).await;
    assert_first_trace(&store, "after a reschedule").await;

    let third = lease_one(&store, "traced", secs(30), at_secs(2)).await;
    assert_eq!(third.task.traceparent, Some(trace(FIRST)), "the next occurrence's lease hands out the trace");
    assert_eq!(reap(&store, at_secs(40), 10).await.reaped.len(), 1, "the lease expired at 32 s");
    assert_first_trace(&store, "after its lease expired").await;
    let fourth = lease_one(&store, "traced", secs(30), at_secs(40)).await;
    store.release(&fourth.token, at_secs(41)).await.expect("release");
    assert_first_trace(&store, "after a release").await;
    let fifth = lease_one(&store, "traced", secs(30), at_secs(41)).await;
    complete_ok(&store, &fifth.token, Completion::Dead { error: "410".into() }, at_secs(42)).await;
    let dead = stored(&store, "traced", "t").await;
    assert_eq!((dead.state, dead.traceparent), (TaskState::Dead, Some(trace(FIRST))), "a dead task keeps it");
    let revived = store.retry_dead(RetryDeadRequest::new(queue("traced"), key("t"), at_secs(43))).await;
    let revived = revived.expect("retry_dead").expect("the task was dead");
    assert_eq!(revived.traceparent, Some(trace(FIRST)), "a dead task's retry keeps the trace");
    assert_first_trace(&store, "after a dead task's retry").await;

    let replaced = upsert(&store, traced("t", SECOND), at_secs(44)).await;
    assert_eq!(replaced.task.traceparent, Some(trace(SECOND)), "a replace writes the new request's trace");
    assert_eq!(stored(&store, "traced", "t").await.traceparent, Some(trace(SECOND)));
    let cleared = upsert(&store, new_task("traced", "t", at_secs(45)), at_secs(45)).await;
    assert_eq!(cleared.task.traceparent, None, "a replace without a trace clears it");
    assert_eq!(stored(&store, "traced", "t").await.traceparent, None, "get after a replace without a trace");
    let last = lease_one(&store, "traced", secs(30), at_secs(45)).await;
    assert_eq!((last.task.key.as_str(), last.task.traceparent), ("t", None), "nor does its lease hand one out");
    assert_eq!(stored(&store, "traced", "plain").await.traceparent, None);
}

/// Checks that `t` of `traced` holds the first schedule's trace.
async fn assert_first_trace<S: Store>(store: &S, when: &str) {
    assert_eq!(stored(store, "traced", "t").await.traceparent, Some(trace(FIRST)), "{when}");
}
