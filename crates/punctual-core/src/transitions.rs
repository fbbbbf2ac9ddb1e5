//! The task state machine as pure functions: what each [`Store`](crate::Store)
//! operation does to one task at time `now`, and what a handler's [`Outcome`] asks the
//! store to do ([`completion_for`]). `docs/state-machine.md` draws the same arrows.
//!
//! No clock, no I/O, no async: `now` is an argument and every function returns the
//! task as it must be stored afterwards (or `None` when the task goes away). A store
//! decides *which* tasks an operation reaches (its indexes, its tie order) and applies
//! these functions to each; [`MemoryStore`](crate::MemoryStore) does exactly that, so
//! it is the executable form of the contract.
//!
//! Invariants every function keeps (checked by `debug_assert!` where a caller could
//! break them):
//! - `lease_expires_at` is set exactly while the task is `leased`;
//! - `updated_at` is the `now` of the last write, so a dead task's is when it died;
//! - a write by a caller (create, replace) starts occurrence 1 with no attempts and no
//!   error; only a lease raises the fence, only a replace raises the version, and
//!   nothing but a creation gives an id;
//! - a task's trace context (`traceparent`) is its writer's: a replace takes the new
//!   request's (none when it has none), and nothing else changes it.
//!
//! Deletions have no function of their own: `cancel` and `cancel_tag` delete a task in
//! any state (a leased one's lease can then never complete), `delete_dead` only a task
//! that [`is_dead`], `sweep_dead` only one that [`died_by`] the retention's instant,
//! and `purge` only one that [`is_purged`] by its selection.
//!
//! A queue's record (its settings and pause state) has one rule too:
//! [`change_queue`] gives the record after a change, so every store numbers versions
//! and checks `if_version` the same way.

use std::time::Duration;

use crate::Outcome;
use crate::calendar::Calendar;
use crate::error::{Error, Result};
use crate::history::{EventKind, HistoryEvent, clip};
use crate::identity::StoreId;
use crate::meta::TaskMeta;
use crate::model::{IfExists, NewTask, Task, TaskState};
use crate::policy::Progress;
use crate::store::{
    Completed, Completion, LeaseToken, PurgeSelection, QueueChange, QueueChangeRequest, QueueRecord, ScheduleOutcome,
    Scheduled,
};
use crate::time::Timestamp;

/// A task created from `new` at `now`, with identity `id` in store `store`: `scheduled`,
/// version 1, attempts 0, occurrence 1, anchor = [`anchor`], fence 0 (the first lease
/// raises it to 1). A debounced `new` starts a burst: due no later than `now +
/// max_wait`, the bound it keeps.
pub fn create(mut new: NewTask, store: StoreId, id: u64, now: Timestamp) -> Task {
    let debounce_until = debounce(None, &mut new, now);
    let mut meta = TaskMeta::new(store, id, 0, 1, anchor(&new));
    meta.debounce_until = debounce_until;
    Task::from_new(new, meta, now)
}

/// `task`, read from another store, as store `store` keeps it with identity `id`: every
/// field as it was, its bookkeeping (occurrence, anchor, debounce bound) too, but for
/// the store, the id and a fence of 0, so that no lease token of the other store
/// matches it here. See [`Store::import`](crate::Store::import).
pub fn imported(mut task: Task, store: StoreId, id: u64) -> Task {
    task.meta = TaskMeta { store, id, fence: 0, ..task.meta };
    task
}

/// `task` without what belongs to the store holding it (its identity, id and fence):
/// what a move between stores keeps, so two stores' copies of a task compare equal.
pub fn as_moved(task: &Task) -> Task {
    imported(task.clone(), StoreId::from_bits(0), 0)
}

/// The history's `acked` event of `leased` (the task as its lease held it) completed
/// by `completion` at `now`: the task's state after, and its due time when it is
/// scheduled again, as [`complete`] leaves it.
pub fn acked(leased: &Task, completion: &Completion, now: Timestamp) -> HistoryEvent {
    let (state, due_at) = match completion {
        Completion::Done => (None, None),
        Completion::Retry { at, .. } | Completion::Reschedule { at, .. } => (Some(TaskState::Scheduled), Some(*at)),
        Completion::Dead { .. } => (Some(TaskState::Dead), None),
    };
    let mut event = HistoryEvent::new(now, EventKind::Acked, None, state);
    event.attempt = Some(leased.attempts + 1);
    event.lease = Some(leased.meta.fence);
    event.outcome = Some(completion.outcome());
    event.due_at = due_at;
    event.error = completion.error().map(|error| clip(error).to_owned());
    event
}

/// The debounce bound of the task that `new` writes over `old` (none: a creation) at
/// `now`: `None` when `new` is not debounced; `old`'s bound when `old` is a scheduled
/// task of a burst still going (a debounced schedule wrote it and no lease took it
/// since); else a new burst's, `now + max_wait`.
pub fn debounce_until(old: Option<&Task>, new: &NewTask, now: Timestamp) -> Option<Timestamp> {
    let max_wait = new.debounce?;
    let going = old.filter(|old| old.state == TaskState::Scheduled).and_then(|old| old.meta.debounce_until);
    Some(going.unwrap_or_else(|| now.saturating_add(max_wait)))
}

/// Applies debounce to `new` as it is written over `old` (none: a creation) at `now`:
/// its `due_at` no later than the bound of [`debounce_until`], which it returns for the
/// written task's `meta.debounce_until`. Every store's create and replace call this.
pub fn debounce(old: Option<&Task>, new: &mut NewTask, now: Timestamp) -> Option<Timestamp> {
    let bound = debounce_until(old, new, now);
    if let Some(bound) = bound {
        new.due_at = new.due_at.min(bound);
    }
    bound
}

/// The anchor of the task `new` writes, once debounced: the time its first occurrence
/// is scheduled for, or its due time when debounce brought that earlier.
pub fn anchor(new: &NewTask) -> Timestamp {
    new.scheduled_for.min(new.due_at)
}

/// What scheduling `new` does to `existing`, a task already stored under its (queue,
/// key) in any state: kept untouched while [`held_dead`]; else by `new.if_exists`:
/// replaced ([`replace`]), kept untouched, or refused with [`Error::Conflict`].
pub fn upsert(existing: &Task, new: NewTask, now: Timestamp) -> Result<Scheduled> {
    if held_dead(existing, now) {
        return Ok(Scheduled::new(ScheduleOutcome::Kept, existing.clone()));
    }
    match new.if_exists {
        IfExists::Replace => Ok(Scheduled::new(ScheduleOutcome::Replaced, replace(existing, new, now))),
        IfExists::Keep => Ok(Scheduled::new(ScheduleOutcome::Kept, existing.clone())),
        IfExists::Error => Err(Error::Conflict(format!(
            "task '{}' already exists in queue '{}' (if_exists is error)",
            new.key, new.queue
        ))),
    }
}

/// `new` written over `old` (any state): due time, payload, policies and tags from
/// `new`; version + 1; `scheduled`, attempts 0, occurrence 1, anchor = [`anchor`], no
/// error, no lease. The id, `created_at` and fence stay: a live lease of `old` still
/// names this id and fence, and is lost by its version alone. A debounced `new` is due
/// no later than its burst's bound ([`debounce_until`]), which the task keeps.
pub fn replace(old: &Task, mut new: NewTask, now: Timestamp) -> Task {
    let debounce_until = debounce(Some(old), &mut new, now);
    let mut meta = TaskMeta::new(old.meta.store, old.meta.id, old.meta.fence, 1, anchor(&new));
    meta.debounce_until = debounce_until;
    let mut task = Task::from_new(new, meta, now);
    task.version = old.version + 1;
    task.created_at = old.created_at;
    task
}

/// Whether the task is dead within its dedupe window at `now`, so that a schedule of its
/// key keeps it, whatever the schedule asks: its window holds dead tasks
/// ([`Unique::dead`](crate::Unique::dead)) and `now` is before it died (its
/// `updated_at`) + the window.
pub fn held_dead(task: &Task, now: Timestamp) -> bool {
    task.state == TaskState::Dead
        && task.unique_for.is_some_and(|unique| unique.dead && now < task.updated_at.saturating_add(unique.window))
}

/// The completion record that `completion` of `task`'s live lease at `now` leaves (see
/// [`Store::complete`](crate::Store::complete)): for `Done` of a task with a dedupe
/// window, its id, attempts and occurrence, completed at `now`, holding the key until
/// `now` + the window; `None` for any other completion or task.
pub fn completion_record(task: &Task, completion: &Completion, now: Timestamp) -> Option<Completed> {
    let unique = task.unique_for.filter(|_| *completion == Completion::Done)?;
    let until = now.saturating_add(unique.window);
    let mut record = Completed::new(task.queue.clone(), task.key.clone(), task.meta.id, now, until);
    record.attempts = task.attempts;
    record.occurrence = task.meta.occurrence;
    Some(record)
}

/// Whether `lease` may hand the task out at `now`: `scheduled` and `due_at ≤ now`.
pub fn is_due(task: &Task, now: Timestamp) -> bool {
    task.state == TaskState::Scheduled && task.due_at <= now
}

/// The task leased at `now` for `lease_for`: `leased`, fence + 1, `lease_expires_at =
/// now + lease_for`. `attempts` stays: it counts tries that failed, and this one has
/// not (the lease's [`attempt`](crate::Lease::attempt) is `attempts + 1`).
pub fn lease(task: &Task, lease_for: Duration, now: Timestamp) -> Task {
    debug_assert!(is_due(task, now), "only a due scheduled task is leased: {task:?} at {now}");
    let mut leased = task.clone();
    leased.state = TaskState::Leased;
    leased.meta.fence = task.meta.fence + 1;
    leased.lease_expires_at = Some(now.saturating_add(lease_for));
    leased.updated_at = now;
    // A lease ends a debounce burst: a debounced schedule after it starts a new one.
    leased.meta.debounce_until = None;
    leased
}

/// The task of `token`'s lease, if that lease is live at `now` (see
/// [`LeaseToken::is_live_for`]); [`Error::LeaseLost`] otherwise, also when there is no
/// task. Complete, extend and release apply only to what this returns.
pub fn live<'t>(task: Option<&'t Task>, token: &LeaseToken, now: Timestamp) -> Result<&'t Task> {
    task.filter(|task| token.is_live_for(task, now)).ok_or(Error::LeaseLost)
}

/// What `completion` does to the task of a live lease at `now`; `None` when the task
/// is deleted.
/// - `Done`: deleted.
/// - `Retry { at, error }`: attempts + 1, `last_error = error`, `scheduled` at `at`.
/// - `Reschedule { at, anchor }`: occurrence + 1, attempts 0, no error, `scheduled` at
///   `at`, anchored at `anchor`.
/// - `Dead { error }`: attempts + 1, `last_error = error`, `dead` (due time kept).
pub fn complete(task: &Task, completion: &Completion, now: Timestamp) -> Option<Task> {
    debug_assert_eq!(task.state, TaskState::Leased, "only a leased task is completed");
    let mut next = task.clone();
    next.lease_expires_at = None;
    next.updated_at = now;
    match completion {
        Completion::Done => return None,
        Completion::Retry { at, error } => {
            next.state = TaskState::Scheduled;
            next.due_at = *at;
            next.attempts = task.attempts.saturating_add(1);
            next.last_error = Some(error.clone());
        }
        Completion::Reschedule { at, anchor } => {
            next.state = TaskState::Scheduled;
            next.due_at = *at;
            next.meta.anchor = *anchor;
            next.attempts = 0;
            next.meta.occurrence = task.meta.occurrence.saturating_add(1);
            next.last_error = None;
        }
        Completion::Dead { error } => {
            next.state = TaskState::Dead;
            next.attempts = task.attempts.saturating_add(1);
            next.last_error = Some(error.clone());
        }
    }
    Some(next)
}

/// The task of a live lease with the lease moved to `now + lease_for` (shorter or
/// longer than before).
pub fn extend(task: &Task, lease_for: Duration, now: Timestamp) -> Task {
    debug_assert_eq!(task.state, TaskState::Leased, "only a leased task is extended");
    let mut extended = task.clone();
    extended.lease_expires_at = Some(now.saturating_add(lease_for));
    extended.updated_at = now;
    extended
}

/// The task of a live lease given back untried: `scheduled` again, `due_at`,
/// attempts and fence unchanged.
pub fn release(task: &Task, now: Timestamp) -> Task {
    debug_assert_eq!(task.state, TaskState::Leased, "only a leased task is released");
    let mut released = task.clone();
    released.state = TaskState::Scheduled;
    released.lease_expires_at = None;
    released.updated_at = now;
    released
}

/// Whether `reap` ends the task's lease at `now`: `leased` with `lease_expires_at ≤
/// now` (the lease is not live from its expiry on).
pub fn is_expired(task: &Task, now: Timestamp) -> bool {
    task.state == TaskState::Leased && task.lease_expires_at.is_some_and(|expiry| expiry <= now)
}

/// The `last_error` a reaped lease leaves, naming when it expired.
pub fn expiry_error(expired_at: Timestamp) -> String {
    format!("lease expired at {expired_at} before the handler finished")
}

/// The task whose lease expired, reaped at `now`: a failed try (attempts + 1,
/// `last_error` from [`expiry_error`]), then `dead` when attempts reached
/// `max_attempts`, else `scheduled` with `due_at = now` (due again at once: the
/// handler vanished, the task did not fail, so no backoff).
pub fn expire(task: &Task, now: Timestamp) -> Task {
    debug_assert!(is_expired(task, now), "only an expired lease is reaped: {task:?} at {now}");
    let mut reaped = task.clone();
    reaped.attempts = task.attempts.saturating_add(1);
    reaped.last_error = Some(expiry_error(task.lease_expires_at.unwrap_or(now)));
    reaped.lease_expires_at = None;
    reaped.updated_at = now;
    if reaped.attempts >= reaped.max_attempts {
        reaped.state = TaskState::Dead;
    } else {
        reaped.state = TaskState::Scheduled;
        reaped.due_at = now;
    }
    reaped
}

/// Whether the task is `dead` (what `retry_dead`, `delete_dead` and the sweep act on).
pub fn is_dead(task: &Task) -> bool {
    task.state == TaskState::Dead
}

/// Whether a retention sweep up to `died_by` deletes the task: dead, and died (its
/// `updated_at`) at or before `died_by`.
pub fn died_by(task: &Task, died_by: Timestamp) -> bool {
    is_dead(task) && task.updated_at <= died_by
}

/// A dead task put back to work at `now`: `scheduled`, due `now`, attempts 0,
/// `last_error` kept for reference; `None` when the task is not dead (nothing
/// changes).
pub fn retry_dead(task: &Task, now: Timestamp) -> Option<Task> {
    if !is_dead(task) {
        return None;
    }
    let mut revived = task.clone();
    revived.state = TaskState::Scheduled;
    revived.due_at = now;
    revived.attempts = 0;
    revived.updated_at = now;
    Some(revived)
}

/// Turns a handler's outcome into what the store applies, by the task's policies.
/// `jitter` ∈ [0, 1) shortens backoff waits (see [`Backoff::delay`](crate::Backoff::delay)).
/// - `done`: the next occurrence of the repeat after `now` ([`Completion::Reschedule`]),
///   or [`Completion::Done`] when there is no repeat or it is exhausted;
/// - `retry`: [`Completion::Dead`] when this failure is the last of `max_attempts`,
///   else [`Completion::Retry`] after the handler's delay or the backoff;
/// - `reschedule`: a new occurrence at the time asked for (never before `now`);
/// - `fail`: [`Completion::Dead`].
///
/// A task with a calendar goes through [`completion_in`], which is given it.
pub fn completion_for(task: &Task, outcome: Outcome, now: Timestamp, jitter: f64) -> Completion {
    completion_in(task, outcome, now, jitter, None)
}

/// [`completion_for`] by the task's whole timing ([`Timing`](crate::policy::Timing)):
/// a repeat's next occurrence in `calendar` (the task's, read by the caller; `None`
/// when it has none), catching up or queueing by its misfire and overlap policies
/// ([`Repeat::next_occurrence`](crate::Repeat::next_occurrence)), moved later by
/// `random` × its jitter. A failure of the calendar's arithmetic, or a task whose
/// calendar is not given, ends in [`Completion::Dead`] with the reason: the repeat
/// cannot say when it is due.
pub fn completion_in(
    task: &Task,
    outcome: Outcome,
    now: Timestamp,
    random: f64,
    calendar: Option<&Calendar>,
) -> Completion {
    match outcome {
        Outcome::Done => {
            let Some(repeat) = &task.repeat else { return Completion::Done };
            if let (Some(name), None) = (&task.timing.calendar, calendar) {
                return Completion::Dead {
                    error: format!(
                        "calendar '{name}' does not exist, so the repeat's next occurrence is unknown: put the \
                         calendar back (PUT /v1/calendars/{name}), then retry the task"
                    ),
                };
            }
            let progress = Progress { now, leased_at: task.updated_at, calendar, timing: &task.timing };
            match repeat.next_occurrence(&task.meta, &progress) {
                Ok(Some(anchor)) => Completion::Reschedule { at: jittered(anchor, &task.timing, random), anchor },
                Ok(None) => Completion::Done,
                Err(e) => Completion::Dead { error: format!("the repeat's next occurrence: {e}") },
            }
        }
        Outcome::Retry { after, error } => {
            let failures = task.attempts + 1;
            if failures >= task.max_attempts {
                Completion::Dead { error }
            } else {
                let wait = after.unwrap_or_else(|| task.backoff.delay(failures, random));
                Completion::Retry { at: now.saturating_add(wait), error }
            }
        }
        Outcome::Reschedule(when) => Completion::Reschedule { at: when.resolve(now), anchor: task.meta.anchor },
        Outcome::Fail(error) => Completion::Dead { error },
    }
}

/// `at` moved later by `random` ∈ [0, 1) × the timing's jitter (none: `at`).
pub fn jittered(at: Timestamp, timing: &crate::policy::Timing, random: f64) -> Timestamp {
    let Some(jitter) = timing.jitter else { return at };
    at.saturating_add(jitter.mul_f64(random.clamp(0.0, 1.0)))
}

/// Whether a purge with `selection` cancels `task`.
pub fn is_purged(task: &Task, selection: PurgeSelection) -> bool {
    match selection {
        PurgeSelection::Scheduled => task.state == TaskState::Scheduled,
        PurgeSelection::Dead => task.state == TaskState::Dead,
        PurgeSelection::All => true,
    }
}

/// The queue record after `req` (see [`Store::change_queue`](crate::Store::change_queue)):
/// created at version 1 from nothing, else one version up; [`Error::Conflict`] when
/// the request's `if_version` is not the record's (0 standing for no record).
pub fn change_queue(existing: Option<&QueueRecord>, req: &QueueChangeRequest) -> Result<QueueRecord> {
    let version = existing.map_or(0, |record| record.version);
    if let Some(expected) = req.if_version
        && expected != version
    {
        return Err(Error::Conflict(match existing {
            Some(_) => format!("queue {} is at version {version}, not {expected}", req.queue),
            None => format!("queue {} has no settings yet, so it is not at version {expected}", req.queue),
        }));
    }
    let (mut settings, mut paused) = existing.map_or((None, false), |r| (r.settings.clone(), r.paused));
    match &req.change {
        QueueChange::Settings(document) => settings = Some(document.clone()),
        QueueChange::ClearSettings => settings = None,
        QueueChange::Paused(now_paused) => paused = *now_paused,
    }
    Ok(QueueRecord::new(req.queue.clone(), settings, paused, version + 1, req.now))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    //! One test per arrow of `docs/state-machine.md`, in its order.

    use super::*;
    use crate::model::{QueueName, TaskKey, When};
    use crate::policy::{Backoff, Repeat};

    const STORE: StoreId = StoreId::from_bits(7);
    /// 2026-01-01T00:00:00Z.
    const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(T0.as_millis() + secs * 1000)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn new_task(due: Timestamp) -> NewTask {
        let mut new = NewTask::new(QueueName::new("orders").unwrap(), TaskKey::new("order-1").unwrap(), due);
        new.max_attempts = 3;
        new
    }

    /// Created at T0, due at T0 + 10 s.
    fn scheduled() -> Task {
        create(new_task(at(10)), STORE, 42, T0)
    }

    /// [`scheduled`], leased at T0 + 10 s for 30 s.
    fn leased() -> Task {
        lease(&scheduled(), secs(30), at(10))
    }

    fn token_of(task: &Task) -> LeaseToken {
        LeaseToken::new(task.queue.clone(), task.key.clone(), task.meta.id, task.version, task.meta.fence)
    }

    #[test]
    fn create_starts_a_first_occurrence_with_nothing_tried() {
        let task = scheduled();
        assert_eq!(task.state, TaskState::Scheduled);
        assert_eq!((task.version, task.attempts, task.meta.occurrence, task.meta.fence), (1, 0, 1, 0));
        assert_eq!((task.meta.store, task.meta.id, task.meta.anchor), (STORE, 42, at(10)));
        assert_eq!((task.created_at, task.updated_at, task.due_at), (T0, T0, at(10)));
        assert_eq!((task.lease_expires_at, task.last_error), (None, None));
    }

    #[test]
    fn replace_writes_the_new_task_over_any_state_and_keeps_its_identity() {
        let mut dead = complete(&leased(), &Completion::Dead { error: "boom".into() }, at(11)).unwrap();
        dead.meta.occurrence = 4;
        let mut new = new_task(at(60));
        new.payload = serde_json::json!({"v": 2});
        new.max_attempts = 9;
        let replaced = replace(&dead, new, at(20));
        assert_eq!(replaced.state, TaskState::Scheduled);
        assert_eq!((replaced.version, replaced.attempts, replaced.meta.occurrence), (2, 0, 1));
        assert_eq!((replaced.due_at, replaced.meta.anchor, replaced.max_attempts), (at(60), at(60), 9));
        assert_eq!(replaced.payload, serde_json::json!({"v": 2}));
        assert_eq!((replaced.meta.id, replaced.meta.fence, replaced.created_at), (42, dead.meta.fence, T0));
        assert_eq!((replaced.updated_at, replaced.last_error), (at(20), None));
    }

    #[test]
    fn the_trace_context_is_the_writers_and_every_other_arrow_keeps_it() {
        let trace = crate::TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let task = create(new_task(at(10)).traceparent(trace.clone()), STORE, 42, T0);
        assert_eq!(task.traceparent.as_ref(), Some(&trace));
        let leased = lease(&task, secs(30), at(10));
        let retried = complete(&leased, &Completion::Retry { at: at(20), error: "busy".into() }, at(11)).unwrap();
        let rescheduled = complete(&leased, &Completion::Reschedule { at: at(99), anchor: at(99) }, at(11)).unwrap();
        let dead = complete(&leased, &Completion::Dead { error: "boom".into() }, at(11)).unwrap();
        let kept = [
            retried,
            rescheduled,
            release(&leased, at(12)),
            extend(&leased, secs(60), at(12)),
            expire(&leased, at(40)),
            retry_dead(&dead, at(50)).unwrap(),
            dead,
        ];
        for after in kept {
            assert_eq!(after.traceparent.as_ref(), Some(&trace), "{after:?}");
        }
        let other = crate::TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
        assert_eq!(replace(&task, new_task(at(10)).traceparent(other.clone()), at(12)).traceparent, Some(other));
        assert_eq!(replace(&task, new_task(at(10)), at(12)).traceparent, None, "a replace without one clears it");
    }

    #[test]
    fn replacing_a_leased_task_loses_its_lease_by_the_version() {
        let leased = leased();
        let token = token_of(&leased);
        let replaced = replace(&leased, new_task(at(10)), at(12));
        assert_eq!((replaced.state, replaced.lease_expires_at), (TaskState::Scheduled, None));
        assert_eq!(replaced.meta.fence, leased.meta.fence, "the fence is the lease's to raise");
        assert_eq!(live(Some(&replaced), &token, at(12)), Err(Error::LeaseLost));
    }

    #[test]
    fn upsert_follows_if_exists() {
        let existing = scheduled();
        let mut new = new_task(at(99));
        let replaced = upsert(&existing, new.clone(), at(1)).unwrap();
        assert_eq!((replaced.outcome, replaced.task.map(|t| t.version)), (ScheduleOutcome::Replaced, Some(2)));
        new.if_exists = IfExists::Keep;
        let kept = upsert(&existing, new.clone(), at(1)).unwrap();
        assert_eq!((kept.outcome, kept.task), (ScheduleOutcome::Kept, Some(existing.clone())));
        new.if_exists = IfExists::Error;
        assert!(matches!(upsert(&existing, new, at(1)), Err(Error::Conflict(_))));
    }

    #[test]
    fn only_a_scheduled_task_at_or_after_its_due_time_is_due() {
        let task = scheduled();
        assert!(!is_due(&task, at(9)));
        assert!(is_due(&task, at(10)));
        assert!(!is_due(&leased(), at(99)));
    }

    #[test]
    fn lease_raises_the_fence_and_sets_the_expiry_but_counts_no_attempt() {
        let task = leased();
        assert_eq!(task.state, TaskState::Leased);
        assert_eq!((task.meta.fence, task.attempts), (1, 0));
        assert_eq!((task.lease_expires_at, task.updated_at), (Some(at(40)), at(10)));
        let lease = crate::Lease::of(task.clone());
        assert_eq!((lease.attempt, lease.expires_at), (1, at(40)));
    }

    #[test]
    fn a_lease_is_live_until_its_expiry_and_only_with_the_matching_token() {
        let task = leased();
        let token = token_of(&task);
        assert!(live(Some(&task), &token, at(39)).is_ok());
        assert_eq!(live(Some(&task), &token, at(40)), Err(Error::LeaseLost), "not live at its expiry");
        assert_eq!(live(None, &token, at(11)), Err(Error::LeaseLost), "no task");
        for stale in [
            LeaseToken { fence: token.fence + 1, ..token.clone() },
            LeaseToken { version: token.version + 1, ..token.clone() },
            LeaseToken { task_id: token.task_id + 1, ..token.clone() },
        ] {
            assert_eq!(live(Some(&task), &stale, at(11)), Err(Error::LeaseLost), "{stale:?}");
        }
    }

    #[test]
    fn release_gives_the_task_back_untried() {
        let task = release(&leased(), at(12));
        assert_eq!((task.state, task.lease_expires_at, task.updated_at), (TaskState::Scheduled, None, at(12)));
        assert_eq!((task.due_at, task.attempts, task.meta.fence), (at(10), 0, 1));
    }

    #[test]
    fn retry_counts_the_failure_and_schedules_the_next_try() {
        let completion = Completion::Retry { at: at(70), error: "HTTP 503".into() };
        let task = complete(&leased(), &completion, at(12)).unwrap();
        assert_eq!((task.state, task.due_at, task.attempts), (TaskState::Scheduled, at(70), 1));
        assert_eq!((task.last_error.as_deref(), task.lease_expires_at), (Some("HTTP 503"), None));
        assert_eq!((task.meta.occurrence, task.updated_at), (1, at(12)));
    }

    #[test]
    fn reschedule_starts_a_new_occurrence() {
        let mut task = leased();
        task.attempts = 2;
        task.last_error = Some("earlier".into());
        let task = complete(&task, &Completion::Reschedule { at: at(86_400), anchor: at(86_400) }, at(12)).unwrap();
        assert_eq!((task.state, task.due_at, task.attempts), (TaskState::Scheduled, at(86_400), 0));
        assert_eq!((task.meta.occurrence, task.last_error, task.version), (2, None, 1));
    }

    #[test]
    fn done_deletes_the_task() {
        assert_eq!(complete(&leased(), &Completion::Done, at(12)), None);
    }

    #[test]
    fn done_of_a_task_with_a_dedupe_window_leaves_a_record_and_nothing_else_does() {
        let mut task = leased();
        assert_eq!(completion_record(&task, &Completion::Done, at(12)), None, "no window, no record");
        task.unique_for = Some(crate::Unique::new(secs(60)));
        task.attempts = 2;
        task.meta.occurrence = 3;
        let record = completion_record(&task, &Completion::Done, at(12)).unwrap();
        assert_eq!((record.id, record.attempts, record.occurrence), (42, 2, 3));
        assert_eq!((record.completed_at, record.unique_until), (at(12), at(72)));
        assert_eq!((&record.queue, &record.key), (&task.queue, &task.key));
        assert!(record.holds_at(at(71)) && !record.holds_at(at(72)), "until completed + window, exclusive");
        for other in [
            Completion::Retry { at: at(20), error: "e".into() },
            Completion::Reschedule { at: at(20), anchor: at(20) },
            Completion::Dead { error: "e".into() },
        ] {
            assert_eq!(completion_record(&task, &other, at(12)), None, "{other:?}");
        }
    }

    #[test]
    fn a_dead_task_holds_its_key_only_when_its_window_counts_dead_and_until_it_ends() {
        let mut task = leased();
        task.unique_for = Some(crate::Unique::new(secs(60)));
        let dead = complete(&task, &Completion::Dead { error: "boom".into() }, at(12)).unwrap();
        assert!(!held_dead(&dead, at(13)), "a window of done only");
        task.unique_for = Some(crate::Unique::new(secs(60)).counting_dead());
        let dead = complete(&task, &Completion::Dead { error: "boom".into() }, at(12)).unwrap();
        assert!(held_dead(&dead, at(71)));
        assert!(!held_dead(&dead, at(72)), "the window ends a window after the death");
        let mut replacing = new_task(at(99));
        replacing.if_exists = IfExists::Error;
        let kept = upsert(&dead, replacing, at(13)).unwrap();
        assert_eq!((kept.outcome, kept.task), (ScheduleOutcome::Kept, Some(dead.clone())), "whatever if_exists says");
        assert!(!held_dead(&task, at(13)), "a leased task is not dead");
    }

    #[test]
    fn dead_counts_the_failure_and_keeps_the_task_for_inspection() {
        let task = complete(&leased(), &Completion::Dead { error: "order not found".into() }, at(12)).unwrap();
        assert_eq!((task.state, task.attempts, task.due_at), (TaskState::Dead, 1, at(10)));
        assert_eq!((task.last_error.as_deref(), task.updated_at), (Some("order not found"), at(12)));
        assert_eq!(task.lease_expires_at, None);
    }

    #[test]
    fn extend_moves_the_expiry_either_way() {
        let task = extend(&leased(), secs(5), at(20));
        assert_eq!((task.lease_expires_at, task.updated_at, task.state), (Some(at(25)), at(20), TaskState::Leased));
    }

    #[test]
    fn a_lease_expires_at_its_expiry() {
        let task = leased();
        assert!(!is_expired(&task, at(39)));
        assert!(is_expired(&task, at(40)));
        assert!(!is_expired(&scheduled(), at(99)));
    }

    #[test]
    fn an_expired_lease_is_a_failed_try_due_again_at_once() {
        let task = expire(&leased(), at(45));
        assert_eq!((task.state, task.due_at, task.attempts), (TaskState::Scheduled, at(45), 1));
        assert_eq!(task.last_error, Some(expiry_error(at(40))));
        assert!(task.last_error.as_deref().unwrap().contains("lease expired at 2026-01-01T00:00:40.000Z"));
        assert_eq!((task.lease_expires_at, task.updated_at, task.meta.fence), (None, at(45), 1));
    }

    #[test]
    fn an_expired_lease_of_the_last_attempt_makes_the_task_dead() {
        let mut task = leased();
        task.attempts = 2;
        let task = expire(&task, at(45));
        assert_eq!((task.state, task.attempts, task.due_at), (TaskState::Dead, 3, at(10)));
        assert_eq!(task.updated_at, at(45), "a dead task's updated_at is when it died");
    }

    #[test]
    fn retry_dead_puts_a_dead_task_back_due_now_and_keeps_its_error() {
        let dead = complete(&leased(), &Completion::Dead { error: "boom".into() }, at(12)).unwrap();
        let task = retry_dead(&dead, at(100)).unwrap();
        assert_eq!((task.state, task.due_at, task.attempts), (TaskState::Scheduled, at(100), 0));
        assert_eq!((task.last_error.as_deref(), task.updated_at), (Some("boom"), at(100)));
        assert_eq!(retry_dead(&scheduled(), at(100)), None, "only a dead task");
        assert_eq!(retry_dead(&leased(), at(100)), None, "only a dead task");
    }

    #[test]
    fn retention_takes_dead_tasks_that_died_by_its_instant() {
        let dead = complete(&leased(), &Completion::Dead { error: "boom".into() }, at(12)).unwrap();
        assert!(is_dead(&dead));
        assert!(died_by(&dead, at(12)));
        assert!(!died_by(&dead, at(11)));
        assert!(!died_by(&scheduled(), at(99)), "only dead tasks");
    }

    #[test]
    fn done_re_arms_a_repeat_until_it_is_exhausted() {
        let mut task = leased();
        assert_eq!(completion_for(&task, Outcome::Done, at(12), 0.0), Completion::Done);
        task.repeat = Some(Repeat::every(secs(60)).unwrap().times(2).unwrap());
        // Fixed rate from the anchor (T0 + 10 s), the first slot after now.
        assert_eq!(
            completion_for(&task, Outcome::Done, at(75), 0.0),
            Completion::Reschedule { at: at(130), anchor: at(130) }
        );
        task.meta.occurrence = 2;
        assert_eq!(completion_for(&task, Outcome::Done, at(75), 0.0), Completion::Done, "two occurrences in all");
    }

    #[test]
    fn a_failure_retries_after_the_backoff_or_the_handlers_delay_until_the_last_attempt() {
        let mut task = leased();
        task.backoff = Backoff::new(secs(2), 3.0, secs(60)).unwrap();
        task.attempts = 1;
        let error = || "HTTP 503".to_string();
        assert_eq!(
            completion_for(&task, Outcome::retry("HTTP 503"), at(20), 0.0),
            Completion::Retry { at: at(26), error: error() },
            "the second failure waits initial × factor"
        );
        assert_eq!(
            completion_for(&task, Outcome::retry_in(secs(90), "HTTP 503"), at(20), 0.0),
            Completion::Retry { at: at(110), error: error() }
        );
        task.attempts = 2;
        assert_eq!(completion_for(&task, Outcome::retry("HTTP 503"), at(20), 0.0), Completion::Dead { error: error() });
    }

    #[test]
    fn reschedule_and_fail_are_taken_as_asked() {
        let task = leased();
        let reschedule = |when| completion_for(&task, Outcome::Reschedule(when), at(20), 0.0);
        assert_eq!(reschedule(When::Now), Completion::Reschedule { at: at(20), anchor: at(10) });
        assert_eq!(reschedule(When::After(secs(5))), Completion::Reschedule { at: at(25), anchor: at(10) });
        assert_eq!(
            reschedule(When::At(at(3))),
            Completion::Reschedule { at: at(20), anchor: at(10) },
            "never before now"
        );
        assert_eq!(reschedule(When::At(at(500))), Completion::Reschedule { at: at(500), anchor: at(10) });
        assert_eq!(
            completion_for(&task, Outcome::fail("order not found"), at(20), 0.0),
            Completion::Dead { error: "order not found".into() }
        );
    }

    fn change(change: QueueChange, now: Timestamp) -> QueueChangeRequest {
        QueueChangeRequest::new(QueueName::new("orders").unwrap(), change, now)
    }

    #[test]
    fn a_queue_record_starts_at_version_1_and_every_change_adds_one() {
        let created = change_queue(None, &change(QueueChange::Paused(true), at(1))).unwrap();
        assert_eq!((created.settings.as_deref(), created.paused, created.version), (None, true, 1));
        let again = change_queue(Some(&created), &change(QueueChange::Paused(true), at(2))).unwrap();
        assert_eq!((again.paused, again.version, again.updated_at), (true, 2, at(2)), "a no-op pause counts");
        let set = change_queue(Some(&again), &change(QueueChange::Settings("{}".into()), at(3))).unwrap();
        assert_eq!((set.settings.as_deref(), set.paused, set.version), (Some("{}"), true, 3), "pause kept");
        let resumed = change_queue(Some(&set), &change(QueueChange::Paused(false), at(4))).unwrap();
        assert_eq!((resumed.settings.as_deref(), resumed.paused), (Some("{}"), false), "settings kept");
        let cleared = change_queue(Some(&resumed), &change(QueueChange::ClearSettings, at(5))).unwrap();
        assert_eq!((cleared.settings, cleared.paused, cleared.version), (None, false, 5));
    }

    #[test]
    fn a_queue_change_applies_only_at_the_version_it_names() {
        let first = change_queue(None, &change(QueueChange::ClearSettings, at(1)).if_version(1));
        assert!(matches!(first, Err(Error::Conflict(_))), "no record is version 0");
        let created = change_queue(None, &change(QueueChange::ClearSettings, at(1)).if_version(0)).unwrap();
        let stale = change_queue(Some(&created), &change(QueueChange::Paused(true), at(2)).if_version(0));
        assert!(matches!(stale, Err(Error::Conflict(_))), "0 only while there is no record");
        let next = change_queue(Some(&created), &change(QueueChange::Paused(true), at(2)).if_version(1)).unwrap();
        assert_eq!(next.version, 2);
    }

    #[test]
    fn a_purge_selects_by_state() {
        let dead = complete(&leased(), &Completion::Dead { error: "boom".into() }, at(11)).unwrap();
        let tasks = [scheduled(), leased(), dead];
        let selected = |selection| tasks.iter().map(|task| is_purged(task, selection)).collect::<Vec<_>>();
        assert_eq!(selected(PurgeSelection::Scheduled), [true, false, false]);
        assert_eq!(selected(PurgeSelection::Dead), [false, false, true]);
        assert_eq!(selected(PurgeSelection::All), [true, true, true]);
    }
}
