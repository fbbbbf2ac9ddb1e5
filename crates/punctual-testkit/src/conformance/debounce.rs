//! Debounce: a burst of debounced schedules of one key ends in one firing, with the
//! last payload, never later than `max_wait` after the burst's first schedule.
//!
//! Guards against a debounced replace that pushes the due time without bound (a burst
//! that never fires), a bound that moves with every schedule instead of holding the
//! first one's, a bound lost in the store's encoding (kept on `get`, through a restart
//! of the record's reading), a burst that survives a lease (a schedule after the task
//! fired capped by an old bound, so it fires at once), a plain replace that keeps
//! capping the due time, and the lease of a task in a burst told with another delivery
//! id than it handed out.

use std::time::Duration;

use punctual_core::history::EventKind;
use punctual_core::store::{Completion, HistoryRequest};
use punctual_core::{IfExists, NewTask, ScheduleOutcome, Store, TaskSpec, Timestamp};
use serde_json::json;

use super::support::*;

const MAX_WAIT: Duration = Duration::from_secs(10);

fn debounced(key_name: &str, due: Timestamp, version: i64) -> NewTask {
    let mut task = new_task("notify", key_name, due);
    task.payload = json!({"status": version});
    task.debounce = Some(MAX_WAIT);
    task
}

/// `schedule` contract, debounce: each debounced schedule replaces the payload and
/// moves the due time, but never past the first schedule's time + `max_wait`; one
/// lease then hands out the task once, with the last payload.
pub async fn a_debounced_burst_fires_once_with_the_last_payload_by_its_first_time_plus_max_wait<S: Store>(store: S) {
    let created = create(&store, debounced("order-7", at_secs(5), 1), T0).await;
    assert_eq!(created.due_at, at_secs(5), "due as asked: within max_wait");
    assert_eq!(created.meta.debounce_until, Some(at_secs(10)), "the burst's bound: first schedule + max_wait");

    let second = upsert(&store, debounced("order-7", at_secs(9), 2), at_secs(4)).await;
    assert_eq!(second.outcome, ScheduleOutcome::Replaced);
    assert_eq!(second.task.due_at, at_secs(9), "moved to the new due time, still within the bound");
    assert_eq!(second.task.meta.debounce_until, Some(at_secs(10)), "the bound stays the first schedule's");

    let third = upsert(&store, debounced("order-7", at_secs(13), 3), at_secs(8)).await;
    assert_eq!(third.task.due_at, at_secs(10), "never past the first schedule + max_wait");
    assert_eq!(third.task.payload, json!({"status": 3}));
    assert_eq!(third.task.version, created.version + 2, "each debounced schedule is a replace");
    assert_eq!(stored(&store, "notify", "order-7").await, third.task, "get shows the debounced task and its bound");

    assert!(lease(&store, "notify", 10, secs(30), at_ms(9_999)).await.leases.is_empty(), "not due before the bound");
    let batch = lease(&store, "notify", 10, secs(30), at_secs(10)).await;
    assert_eq!(keys_of(&batch.leases), ["order-7"], "one firing for the burst");
    assert_eq!(batch.leases[0].task.payload, json!({"status": 3}), "with the last payload");
    assert_eq!(batch.leases[0].task.meta.debounce_until, None, "a lease ends the burst");
    let told = store.history(HistoryRequest::new(queue("notify"), key("order-7"), T0)).await.expect("history");
    let leased = told.last().expect("the lease is told");
    assert_eq!(
        (leased.kind, leased.delivery_id.as_deref()),
        (EventKind::Leased, Some(batch.leases[0].delivery_id.as_str())),
        "the lease of a debounced task is told with its delivery id"
    );
}

/// A lease ends the burst: a debounced schedule while the task runs, or after it was
/// retried, starts a new burst from its own time, not the old bound.
pub async fn a_debounced_schedule_after_a_lease_starts_a_new_burst<S: Store>(store: S) {
    create(&store, debounced("order-8", at_secs(5), 1), T0).await;
    let leased = lease(&store, "notify", 1, secs(30), at_secs(5)).await;
    assert_eq!(keys_of(&leased.leases), ["order-8"]);

    // While it runs: the old bound (T0 + 10 s) no longer applies.
    let during = upsert(&store, debounced("order-8", at_secs(20), 2), at_secs(6)).await;
    assert_eq!(during.task.due_at, at_secs(16), "a new burst: its own time + max_wait");
    assert_eq!(during.task.meta.debounce_until, Some(at_secs(16)));

    // A retry of a later lease is scheduled without a burst: the next debounced
    // schedule starts one from its own time.
    let again = lease(&store, "notify", 1, secs(30), at_secs(16)).await;
    let token = &again.leases[0].token;
    complete_ok(&store, token, Completion::Retry { at: at_secs(100), error: "busy".into() }, at_secs(17)).await;
    assert_eq!(stored(&store, "notify", "order-8").await.meta.debounce_until, None, "a retry is no burst");
    let after = upsert(&store, debounced("order-8", at_secs(60), 3), at_secs(18)).await;
    assert_eq!(after.task.due_at, at_secs(28), "a new burst from the schedule after the retry");
}

/// A schedule without debounce is a plain replace: it ends the burst, and its due time
/// is not capped; a debounced one after it starts a new burst.
pub async fn a_plain_replace_ends_a_debounced_burst<S: Store>(store: S) {
    create(&store, debounced("order-9", at_secs(5), 1), T0).await;
    let plain = upsert(&store, new_task("notify", "order-9", at_secs(300)), at_secs(1)).await;
    assert_eq!(plain.task.due_at, at_secs(300), "a plain replace is not capped");
    assert_eq!(plain.task.meta.debounce_until, None, "and ends the burst");
    let restarted = upsert(&store, debounced("order-9", at_secs(300), 2), at_secs(2)).await;
    assert_eq!(restarted.task.due_at, at_secs(12), "a new burst from its own time");
}

/// The engine checks a debounced spec: `max_wait` 0 is refused (field
/// `debounce.max_wait`), and so is a debounce with `if_exists` keep or error (field
/// `debounce`: a debounced schedule replaces); neither changes anything.
pub async fn schedule_refuses_a_bad_debounce_and_changes_nothing<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    let spec = || TaskSpec::after(secs(5)).payload(json!({"v": 1}));
    engine.schedule("notify", "kept", spec()).await.expect("a plain schedule");
    let before = stored(engine.store(), "notify", "kept").await;
    for key_name in ["kept", "new"] {
        let zero = spec().debounce(Duration::ZERO);
        assert_refused(engine.schedule("notify", key_name, zero).await, "debounce.max_wait", "max_wait 0");
        for mode in [IfExists::Keep, IfExists::Error] {
            let with_mode = spec().debounce(MAX_WAIT).if_exists(mode);
            assert_refused(engine.schedule("notify", key_name, with_mode).await, "debounce", &format!("{mode:?}"));
        }
    }
    assert_eq!(stored(engine.store(), "notify", "kept").await, before, "a refused debounce changed the task");
    assert!(get(engine.store(), "notify", "new").await.is_none(), "a refused debounce created a task");
    let accepted = engine.schedule("notify", "new", spec().debounce(MAX_WAIT)).await.expect("a valid debounce");
    assert_eq!(accepted.task.map(|t| t.meta.debounce_until), Some(Some(T0.saturating_add(MAX_WAIT))));
}
