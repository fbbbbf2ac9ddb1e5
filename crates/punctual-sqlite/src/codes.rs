//! The `tasks.state` codes, named once: every statement writes them through these
//! names ([`Sql`] formats them in, once per statement), and a row's code is read back
//! only through [`state_of`]. The codes are part of the on-disk layout (`schema`), so
//! they never change. They are written into the SQL as literals, not bound as
//! parameters, where a partial index (`WHERE state = …`) must serve the statement:
//! SQLite uses one only for a query whose own terms name the same code.
//!
//! Invariants: a task's code is its state's ([`code_of`]), and a scheduled task's code
//! names its lane and whether it has a group ([`scheduled_code`], [`grouped_code`]),
//! so the scheduled tasks of each lane, with and without a group, are one range of
//! `tasks_by_due` each; a code decodes to the state it was written for, and a code no
//! state has is corrupt data, never read as another state (checked by the tests
//! below).

use std::sync::LazyLock;

use punctual_core::store::corrupt;
use punctual_core::{Lane, Result, Task, TaskState};

/// Scheduled, in the handler lane (no target).
pub(crate) const SCHEDULED_HANDLER_LANE: i64 = 0;
/// Leased.
pub(crate) const LEASED: i64 = 1;
/// Dead.
pub(crate) const DEAD: i64 = 2;
/// Scheduled, in the target lane.
pub(crate) const SCHEDULED_TARGET_LANE: i64 = 3;
/// Scheduled, in the handler lane, in a group.
pub(crate) const GROUPED_HANDLER_LANE: i64 = 4;
/// Scheduled, in the target lane, in a group.
pub(crate) const GROUPED_TARGET_LANE: i64 = 5;
/// Not a task: the row of a task that completed done, kept as its key's newest history
/// events (`history`) until the key is scheduled again or the retention sweep deletes
/// it. Below every task's code, so it is a range of `tasks_by_due` of its own, in the
/// order of its `due_at` (the time of its last event), outside `tasks_by_group` and
/// before the others: a statement that reads tasks of any state says so ([`ANY_TASK`]).
pub(crate) const KEPT: i64 = -1;
/// SQL: the row is a task, in any state (not [`KEPT`]).
pub(crate) const ANY_TASK: &str = "state >= 0";
/// Every code of a scheduled task.
pub(crate) const SCHEDULED_CODES: [i64; 4] =
    [SCHEDULED_HANDLER_LANE, SCHEDULED_TARGET_LANE, GROUPED_HANDLER_LANE, GROUPED_TARGET_LANE];

/// A statement built from named parts (state codes, [`TASK_COLUMNS`]): formatted at
/// its first use, then kept.
///
/// [`TASK_COLUMNS`]: crate::row::TASK_COLUMNS
pub(crate) type Sql = LazyLock<String>;

/// The state code of a scheduled task of `lane` without a group.
pub(crate) fn scheduled_code(lane: Lane) -> i64 {
    match lane {
        Lane::Handler => SCHEDULED_HANDLER_LANE,
        Lane::Target => SCHEDULED_TARGET_LANE,
    }
}

/// The state code of a scheduled task of `lane` in a group.
pub(crate) fn grouped_code(lane: Lane) -> i64 {
    match lane {
        Lane::Handler => GROUPED_HANDLER_LANE,
        Lane::Target => GROUPED_TARGET_LANE,
    }
}

/// The state code of a scheduled task of `lane`, in a group or not.
pub(crate) fn code_of_scheduled(lane: Lane, grouped: bool) -> i64 {
    if grouped { grouped_code(lane) } else { scheduled_code(lane) }
}

/// The state code of `task` as it stands: its state, and when scheduled its lane and
/// whether it has a group.
pub(crate) fn code_of(task: &Task) -> i64 {
    match task.state {
        TaskState::Scheduled => code_of_scheduled(task.lane(), task.group.is_some()),
        TaskState::Leased => LEASED,
        TaskState::Dead => DEAD,
    }
}

/// The state a row's code stands for.
pub(crate) fn state_of(code: i64) -> Result<TaskState> {
    match code {
        SCHEDULED_HANDLER_LANE | SCHEDULED_TARGET_LANE | GROUPED_HANDLER_LANE | GROUPED_TARGET_LANE => {
            Ok(TaskState::Scheduled)
        }
        LEASED => Ok(TaskState::Leased),
        DEAD => Ok(TaskState::Dead),
        other => Err(corrupt(format!("unknown state {other}"))),
    }
}

/// `(code, count)` rows (a `GROUP BY state`) as counts of scheduled, leased and dead
/// tasks: every code adds to the state it stands for.
pub(crate) fn counts_by_state(rows: Vec<(i64, i64)>) -> Result<(u64, u64, u64)> {
    let (mut scheduled, mut leased, mut dead) = (0, 0, 0);
    for (code, count) in rows {
        let count = u64::try_from(count).unwrap_or(0);
        match state_of(code)? {
            TaskState::Scheduled => scheduled += count,
            TaskState::Leased => leased += count,
            TaskState::Dead => dead += count,
        }
    }
    Ok((scheduled, leased, dead))
}

/// SQL for the state code of a row put back to scheduled: its lane's, by its target,
/// and by whether it has a group.
pub(crate) fn scheduled_by_target() -> String {
    format!(
        "CASE WHEN target IS NULL THEN \
         (CASE WHEN group_name IS NULL THEN {SCHEDULED_HANDLER_LANE} ELSE {GROUPED_HANDLER_LANE} END) \
         ELSE (CASE WHEN group_name IS NULL THEN {SCHEDULED_TARGET_LANE} ELSE {GROUPED_TARGET_LANE} END) END"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use punctual_core::{Group, QueueName, StoreId, Target, TaskKey, TaskMeta, Timestamp};

    use super::*;

    #[test]
    fn every_code_reads_back_as_its_state_and_unknown_codes_as_corrupt() {
        for lane in Lane::ALL {
            assert_eq!(state_of(scheduled_code(lane)).unwrap(), TaskState::Scheduled);
            assert_eq!(state_of(grouped_code(lane)).unwrap(), TaskState::Scheduled);
        }
        assert_eq!(state_of(LEASED).unwrap(), TaskState::Leased);
        assert_eq!(state_of(DEAD).unwrap(), TaskState::Dead);
        assert!(state_of(6).is_err() && state_of(KEPT).is_err(), "a kept row is no task");
        // Fixed by the on-disk layout (`schema`): stores already written hold them.
        assert_eq!([KEPT, SCHEDULED_HANDLER_LANE, LEASED, DEAD, SCHEDULED_TARGET_LANE], [-1, 0, 1, 2, 3]);
        assert_eq!(Lane::ALL.map(scheduled_code), [0, 3]);
        assert_eq!(Lane::ALL.map(grouped_code), [4, 5]);
    }

    /// A task's code is the one its state, lane and group give, and reads back as its
    /// state.
    #[test]
    fn a_task_is_coded_by_its_state_lane_and_group() {
        let meta = TaskMeta::new(StoreId::from_bits(1), 1, 0, 1, Timestamp::EPOCH);
        let mut task = crate::row::blank_task(QueueName::new("q").unwrap(), TaskKey::new("k").unwrap(), meta);
        let target = Target::new("https://hooks.example.com/x").unwrap();
        let group = Group::new("g").unwrap();
        for (state, target, group, code) in [
            (TaskState::Scheduled, None, None, SCHEDULED_HANDLER_LANE),
            (TaskState::Scheduled, Some(&target), None, SCHEDULED_TARGET_LANE),
            (TaskState::Scheduled, None, Some(&group), GROUPED_HANDLER_LANE),
            (TaskState::Scheduled, Some(&target), Some(&group), GROUPED_TARGET_LANE),
            (TaskState::Leased, Some(&target), Some(&group), LEASED),
            (TaskState::Dead, None, Some(&group), DEAD),
        ] {
            (task.state, task.target, task.group) = (state, target.cloned(), group.cloned());
            assert_eq!(code_of(&task), code, "{state:?}, target {target:?}, group {group:?}");
            assert_eq!(state_of(code).unwrap(), state);
        }
    }
}
