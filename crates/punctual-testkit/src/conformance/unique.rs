//! Dedupe windows (`unique_for`): for a window after a task with one completed for
//! good, a schedule of its key creates nothing and answers the completion; with `dead`,
//! a dead task holds its key for the window after it died.
//!
//! Guards against a completion record that is never written (the key scheduled again
//! at once), written by something that is not a final completion (a repeat's
//! occurrence, a retry, a cancel, a purge), outliving its window, losing a field in the
//! store's encoding, or left behind by an earlier window over a later one; against a
//! window that a schedule's own `if_exists` or `unique_for` gets around; and against a
//! dead task replaced within its window, or held when its window does not count dead
//! tasks or has ended.

use std::time::Duration;

use punctual_core::store::{Completion, PurgeRequest, PurgeSelection};
use punctual_core::{
    Completed, IfExists, NewTask, Outcome, Repeat, ScheduleOutcome, Store, TaskSpec, TaskState, Timestamp, Unique,
};

use super::support::*;

const WINDOW: Duration = Duration::from_secs(3600);

/// A task of `receipts` with the dedupe window `window`, due at [`T0`].
fn unique(key_name: &str, window: Unique) -> NewTask {
    unique_in("receipts", key_name, window)
}

/// A task of `queue_name` with the dedupe window `window`, due at [`T0`].
fn unique_in(queue_name: &str, key_name: &str, window: Unique) -> NewTask {
    let mut task = new_task(queue_name, key_name, T0);
    task.unique_for = Some(window);
    task
}

/// Leases the one due task of `receipts`, `key_name`, at `now` and completes it with
/// `completion` a second later.
async fn finish<S: Store>(store: &S, key_name: &str, completion: Completion, now: Timestamp) {
    finish_in(store, "receipts", key_name, completion, now).await;
}

/// [`finish`] in `queue_name`.
async fn finish_in<S: Store>(store: &S, queue_name: &str, key_name: &str, completion: Completion, now: Timestamp) {
    let lease = lease_one(store, queue_name, secs(30), now).await;
    assert_eq!(lease.token.key.as_str(), key_name, "the one due task of {queue_name}");
    complete_ok(store, &lease.token, completion, now.saturating_add(secs(1))).await;
}

/// Schedules `task`, which a completion record must keep: the record it answers.
async fn kept_by_record<S: Store>(store: &S, task: NewTask, now: Timestamp) -> Completed {
    let what = format!("{}/{} at {now}", task.queue, task.key);
    let scheduled = schedule_one(store, task, now).await;
    assert_eq!((scheduled.outcome, &scheduled.task), (ScheduleOutcome::Kept, &None), "{what}: kept, nothing written");
    scheduled.completed.unwrap_or_else(|| panic!("{what}: kept without the completion that kept it"))
}

/// `schedule` and `complete` contracts, dedupe window: `Done` of a task with a window
/// writes a record of its id, attempts and occurrence, completed at the ack's time, held
/// until then + the window; a schedule of the key before that creates nothing and
/// answers the record, whatever its own `if_exists` and `unique_for` (alone or in a
/// batch, beside a key it creates); at the window's end the key is free.
pub async fn a_schedule_within_a_completed_tasks_window_is_kept_with_its_summary<S: Store>(store: S) {
    let created = create(&store, unique("receipt-1", Unique::new(WINDOW)), T0).await;
    assert_eq!(created.unique_for, Some(Unique::new(WINDOW)), "the task carries its window");
    assert_eq!(stored(&store, "receipts", "receipt-1").await, created, "get shows the window");
    // One failed try first, so the record has attempts to show.
    finish(&store, "receipt-1", Completion::Retry { at: at_secs(5), error: "busy".into() }, T0).await;
    finish(&store, "receipt-1", Completion::Done, at_secs(9)).await;
    assert!(get(&store, "receipts", "receipt-1").await.is_none(), "done deletes the task");

    let completed_at = at_secs(10);
    let record = kept_by_record(&store, new_task("receipts", "receipt-1", T0), at_secs(20)).await;
    assert_eq!((&record.queue, &record.key), (&queue("receipts"), &key("receipt-1")));
    assert_eq!((record.id, record.attempts, record.occurrence), (created.meta.id, 1, 1));
    assert_eq!((record.completed_at, record.unique_until), (completed_at, completed_at.saturating_add(WINDOW)));

    let last_instant = Timestamp::from_millis(record.unique_until.as_millis() - 1);
    for mode in [IfExists::Replace, IfExists::Keep, IfExists::Error] {
        let mut again = unique("receipt-1", Unique::new(secs(1)));
        again.if_exists = mode;
        assert_eq!(kept_by_record(&store, again, last_instant).await, record, "{mode:?}: the same record");
    }
    let results =
        schedule(&store, vec![new_task("receipts", "receipt-1", T0), new_task("receipts", "other", T0)], at_secs(30))
            .await;
    let outcomes: Vec<_> =
        results.iter().map(|r| r.as_ref().map(|s| (s.outcome, s.completed.is_some())).ok()).collect();
    assert_eq!(
        outcomes,
        [Some((ScheduleOutcome::Kept, true)), Some((ScheduleOutcome::Created, false))],
        "each item of a batch on its own"
    );
    assert!(get(&store, "receipts", "receipt-1").await.is_none(), "a kept schedule writes nothing");

    let after = upsert(&store, new_task("receipts", "receipt-1", record.unique_until), record.unique_until).await;
    assert_eq!(after.outcome, ScheduleOutcome::Created, "the window ends at completed_at + window, exclusive");
    assert_ne!(after.task.meta.id, created.meta.id, "a new task");
}

/// A later completion's record replaces an earlier one's: a task created after its
/// key's window ended, completing with a window of its own, holds the key from its own
/// completion; one completing without a window leaves no record.
pub async fn a_later_completion_replaces_the_record_and_one_without_a_window_leaves_none<S: Store>(store: S) {
    create(&store, unique("receipt-2", Unique::new(secs(60))), T0).await;
    finish(&store, "receipt-2", Completion::Done, T0).await;
    let second = create(&store, unique("receipt-2", Unique::new(WINDOW)), at_secs(61)).await;
    finish(&store, "receipt-2", Completion::Done, at_secs(100)).await;
    let record = kept_by_record(&store, new_task("receipts", "receipt-2", T0), at_secs(200)).await;
    assert_eq!((record.id, record.completed_at), (second.meta.id, at_secs(101)), "the later completion's");
    assert_eq!(record.unique_until, at_secs(101).saturating_add(WINDOW));

    create(&store, new_task("receipts", "plain", T0), T0).await;
    finish(&store, "plain", Completion::Done, at_secs(300)).await;
    let again = upsert(&store, new_task("receipts", "plain", T0), at_secs(302)).await;
    assert_eq!(again.outcome, ScheduleOutcome::Created, "no window, no record");
}

/// Dead tasks: with `dead`, a task that died holds its key until it died + the window
/// (its `updated_at`): a schedule of the key keeps it untouched, whatever its
/// `if_exists`; after that, it replaces it as usual. A window of done only holds no dead
/// task, and its death writes no record.
pub async fn a_dead_task_holds_its_key_for_its_window_only_when_asked<S: Store>(store: S) {
    let window = Unique::new(secs(60)).counting_dead();
    let declined = || Completion::Dead { error: "card declined".into() };
    create(&store, unique_in("receipts.held", "held", window), T0).await;
    create(&store, unique_in("receipts.free", "free", Unique::new(secs(60))), T0).await;
    finish_in(&store, "receipts.held", "held", declined(), T0).await;
    finish_in(&store, "receipts.free", "free", declined(), T0).await;
    let dead = stored(&store, "receipts.held", "held").await;
    assert_eq!((dead.state, dead.updated_at, dead.unique_for), (TaskState::Dead, at_secs(1), Some(window)));

    for mode in [IfExists::Replace, IfExists::Keep, IfExists::Error] {
        let mut again = new_task("receipts.held", "held", T0);
        again.if_exists = mode;
        let kept = upsert(&store, again, at_secs(60)).await;
        assert_eq!((kept.outcome, &kept.task), (ScheduleOutcome::Kept, &dead), "{mode:?}: the dead task, untouched");
    }
    assert_eq!(stored(&store, "receipts.held", "held").await, dead, "kept: untouched");
    let replaced = upsert(&store, new_task("receipts.held", "held", T0), at_secs(61)).await;
    assert_eq!((replaced.outcome, replaced.task.state), (ScheduleOutcome::Replaced, TaskState::Scheduled));
    assert_eq!(replaced.task.unique_for, None, "the replacing task's own window: none");

    let revived = upsert(&store, new_task("receipts.free", "free", T0), at_secs(2)).await;
    assert_eq!(revived.outcome, ScheduleOutcome::Replaced, "a window of done only holds no dead task");
    create(&store, unique_in("receipts.gone", "gone", window), T0).await;
    finish_in(&store, "receipts.gone", "gone", declined(), T0).await;
    assert!(store.delete_dead(&queue("receipts.gone"), &key("gone"), None).await.expect("delete_dead"));
    let created = upsert(&store, new_task("receipts.gone", "gone", T0), at_secs(5)).await;
    assert_eq!(created.outcome, ScheduleOutcome::Created, "a death writes no record: deleted, the key is free");
}

/// A cancel, a cancel by tag or a purge deletes a task without completing it: no record,
/// so the key can be scheduled again at once (a leased task included).
pub async fn a_cancel_or_a_purge_writes_no_record<S: Store>(store: S) {
    let receipts = queue("receipts");
    for key_name in ["cancelled", "leased", "tagged", "tagged-too"] {
        let mut task = unique(key_name, Unique::new(WINDOW).counting_dead());
        task.tags = vec![tag("batch-9")];
        create(&store, task, T0).await;
    }
    lease(&store, "receipts", 4, secs(30), T0).await;
    assert!(store.cancel(&receipts, &key("cancelled"), None).await.expect("cancel"));
    assert!(store.cancel(&receipts, &key("leased"), None).await.expect("cancel"));
    let mut lone = unique("purged-alone", Unique::new(WINDOW));
    lone.queue = queue("receipts.purge");
    create(&store, lone, T0).await;
    let purged = store.purge(PurgeRequest::new(queue("receipts.purge"), PurgeSelection::All, 10)).await;
    assert_eq!(purged.expect("purge"), 1);
    assert_eq!(store.cancel_tag(&receipts, &tag("batch-9"), None).await.expect("cancel_tag"), 2);
    for key_name in ["cancelled", "leased", "tagged", "tagged-too"] {
        let again = upsert(&store, new_task("receipts", key_name, T0), at_secs(1)).await;
        assert_eq!(again.outcome, ScheduleOutcome::Created, "{key_name}: no record");
    }
    let mut again = new_task("receipts.purge", "purged-alone", T0);
    again.if_exists = IfExists::Error;
    assert_eq!(upsert(&store, again, at_secs(1)).await.outcome, ScheduleOutcome::Created, "a purge: no record");
}

/// A repeat completes for good only after its last occurrence: an occurrence that
/// reschedules leaves no record (the key is free once the task is cancelled), the final
/// one's record names its occurrence.
pub async fn a_repeat_holds_its_key_only_after_its_final_occurrence<S: Store>(store: S) {
    let mut task = unique("weekly", Unique::new(WINDOW));
    task.repeat = Some(Repeat::every(secs(10)).expect("repeat").times(2).expect("times"));
    create(&store, task.clone(), T0).await;
    finish(&store, "weekly", Completion::Reschedule { at: at_secs(10), anchor: at_secs(10) }, T0).await;
    assert_eq!(stored(&store, "receipts", "weekly").await.meta.occurrence, 2);
    assert!(store.cancel(&queue("receipts"), &key("weekly"), None).await.expect("cancel"));
    let again = create(&store, task, at_secs(2)).await;
    finish(&store, "weekly", Completion::Reschedule { at: at_secs(10), anchor: at_secs(10) }, at_secs(2)).await;
    finish(&store, "weekly", Completion::Done, at_secs(10)).await;
    let record = kept_by_record(&store, new_task("receipts", "weekly", T0), at_secs(12)).await;
    assert_eq!((record.id, record.occurrence, record.completed_at), (again.meta.id, 2, at_secs(11)));
}

/// The engine checks a window: 0 is refused (field `unique_for`) and changes nothing;
/// through the engine, a schedule kept by a record answers it.
pub async fn schedule_refuses_a_zero_unique_window_and_changes_nothing<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    let spec = || TaskSpec::now().payload(serde_json::json!({"order": 7}));
    engine.schedule("receipts", "kept", spec()).await.expect("a plain schedule");
    let before = stored(engine.store(), "receipts", "kept").await;
    for key_name in ["kept", "new"] {
        let zero = spec().unique_for(Unique::new(Duration::ZERO).counting_dead());
        assert_refused(engine.schedule("receipts", key_name, zero).await, "unique_for", "a window of 0");
    }
    assert_eq!(stored(engine.store(), "receipts", "kept").await, before, "a refused window changed the task");
    assert!(get(engine.store(), "receipts", "new").await.is_none(), "a refused window created a task");

    let valid = spec().unique_for(Unique::new(WINDOW));
    engine.schedule("receipts.once", "new", valid).await.expect("a valid window");
    let lease = engine_lease_one(&engine, "receipts.once", secs(30)).await;
    engine.ack(&lease.token, Outcome::Done).await.expect("the ack of a live lease");
    clock.advance(secs(5));
    let kept = engine.schedule("receipts.once", "new", spec()).await.expect("kept");
    assert_eq!((kept.outcome, kept.task), (ScheduleOutcome::Kept, None));
    assert_eq!(kept.completed.map(|record| record.unique_until), Some(T0.saturating_add(WINDOW)));
}
