//! The codes by which the scripts and the stored record name the values of our enums:
//! one mapping per enum, each an exhaustive match, so a new variant does not compile
//! until it is given its code here (and the scripts are taught it). What the codes
//! mean to the scripts is in their headers (`lua/*.lua`); the state codes are part of
//! the stored record (`lua/common.lua`), so they never change.
//!
//! Invariant: a code decoded here is the code encoded for the same value (checked by
//! the tests below); anything else is corrupt data, never read as some other value.

use punctual_core::store::{Completion, PurgeSelection, ScheduleOutcome};
use punctual_core::{IfExists, Lane, TaskState, Timestamp};

use crate::TimeSource;

/// How `lua/schedule.lua` treats a task that exists.
pub(crate) fn if_exists(mode: IfExists) -> &'static str {
    match mode {
        IfExists::Replace => "r",
        IfExists::Keep => "k",
        IfExists::Error => "e",
    }
}

/// The lane `lua/lease.lua` leases from.
pub(crate) fn lane(lane: Lane) -> &'static str {
    match lane {
        Lane::Handler => "h",
        Lane::Target => "t",
    }
}

/// A state as the record's first field and the scripts hold it.
pub(crate) fn state(state: TaskState) -> u8 {
    match state {
        TaskState::Scheduled => 0,
        TaskState::Leased => 1,
        TaskState::Dead => 2,
    }
}

/// The state a record or a script names by `code`; `None` for a code no state has.
pub(crate) fn state_of(code: i64) -> Option<TaskState> {
    match code {
        0 => Some(TaskState::Scheduled),
        1 => Some(TaskState::Leased),
        2 => Some(TaskState::Dead),
        _unknown => None,
    }
}

/// A state as the first byte of a record of format 2 (`lua/common.lua`) marks it. Only
/// the scripts write records; the tests write them as the scripts do.
#[cfg(test)]
pub(crate) fn state_mark(state: TaskState) -> u8 {
    match state {
        TaskState::Scheduled => b'S',
        TaskState::Leased => b'L',
        TaskState::Dead => b'D',
    }
}

/// The state a record of format 2 marks with `mark`; `None` for a byte no state has.
pub(crate) fn state_of_mark(mark: u8) -> Option<TaskState> {
    match mark {
        b'S' => Some(TaskState::Scheduled),
        b'L' => Some(TaskState::Leased),
        b'D' => Some(TaskState::Dead),
        _unknown => None,
    }
}

/// The state filter of the listing scripts: a state's code, or `""` for any state.
pub(crate) fn state_filter(filter: Option<TaskState>) -> String {
    filter.map(|s| state(s).to_string()).unwrap_or_default()
}

/// What `lua/complete.lua` does with a live lease: its kind code, the time it is
/// scheduled again at (ms, 0 when it is not), the error it keeps (`""`: none) and the
/// anchor a reschedule sets (ms, 0 for any other completion, which keeps the anchor).
pub(crate) fn completion(completion: &Completion) -> (&'static str, i64, &str, i64) {
    match completion {
        Completion::Done => ("d", 0, "", 0),
        Completion::Retry { at, error } => ("r", at.as_millis(), error.as_str(), 0),
        Completion::Reschedule { at, anchor } => ("s", at.as_millis(), "", anchor.as_millis()),
        Completion::Dead { error } => ("x", 0, error.as_str(), 0),
    }
}

/// What `lua/schedule.lua` did with a task, by its answer's code: `Some(None)` for
/// `e`, the task exists and `if_exists` is error; `None` for a code it never answers.
pub(crate) fn schedule_outcome(code: &[u8]) -> Option<Option<ScheduleOutcome>> {
    match code {
        b"c" => Some(Some(ScheduleOutcome::Created)),
        b"r" => Some(Some(ScheduleOutcome::Replaced)),
        b"k" => Some(Some(ScheduleOutcome::Kept)),
        b"e" => Some(None),
        _unknown => None,
    }
}

/// The selection as `lua/purge.lua` names it.
pub(crate) fn purge_selection(selection: PurgeSelection) -> &'static str {
    match selection {
        PurgeSelection::Scheduled => "scheduled",
        PurgeSelection::Dead => "dead",
        PurgeSelection::All => "all",
    }
}

/// `ARGV[1]` of every script: `now` in ms, or `""` for Redis' own `TIME`.
pub(crate) fn now(time: TimeSource, now: Timestamp) -> String {
    match time {
        TimeSource::Redis => String::new(),
        TimeSource::Caller => now.as_millis().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_as_itself_and_unknown_codes_as_none() {
        for s in [TaskState::Scheduled, TaskState::Leased, TaskState::Dead] {
            assert_eq!(state_of(i64::from(state(s))), Some(s));
            assert_eq!(state_filter(Some(s)), state(s).to_string());
            assert_eq!(state_of_mark(state_mark(s)), Some(s));
        }
        assert_eq!(state_filter(None), "");
        assert_eq!((state_of(3), state_of(-1)), (None, None));
        // A mark is never a digit: a record of format 1 opens with one.
        assert!((0..=u8::MAX).filter(u8::is_ascii_digit).all(|b| state_of_mark(b).is_none()));
        // Fixed by the record format (lua/common.lua).
        let marks = [TaskState::Scheduled, TaskState::Leased, TaskState::Dead].map(state_mark);
        assert_eq!(&marks, b"SLD");
    }

    #[test]
    fn the_codes_are_the_ones_the_scripts_know() {
        // Fixed by the scripts' headers (lua/schedule.lua, lua/complete.lua).
        let modes = [IfExists::Replace, IfExists::Keep, IfExists::Error].map(if_exists);
        assert_eq!(modes, ["r", "k", "e"]);
        let (at, anchor) = (Timestamp::from_millis(7), Timestamp::from_millis(5));
        assert_eq!(completion(&Completion::Retry { at, error: "e".into() }), ("r", 7, "e", 0));
        assert_eq!(completion(&Completion::Reschedule { at, anchor }), ("s", 7, "", 5));
        assert_eq!(completion(&Completion::Dead { error: "e".into() }), ("x", 0, "e", 0));
        assert_eq!(completion(&Completion::Done), ("d", 0, "", 0));
        assert_eq!(schedule_outcome(b"e"), Some(None));
        assert_eq!(schedule_outcome(b"k"), Some(Some(ScheduleOutcome::Kept)));
        assert_eq!(schedule_outcome(b"x"), None);
        let common = include_str!("lua/common.lua");
        assert!(common.contains("LANE_OF_CODE = { h = HANDLER, t = TARGET }"), "lua/common.lua knows other lanes");
        assert_eq!(Lane::ALL.map(lane), ["h", "t"]);
        let script = include_str!("lua/purge.lua");
        for selection in [PurgeSelection::Scheduled, PurgeSelection::Dead, PurgeSelection::All] {
            let code = purge_selection(selection);
            assert!(script.contains(&format!("{code} = {{")), "lua/purge.lua knows no selection '{code}'");
        }
    }
}
