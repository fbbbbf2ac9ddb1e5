//! How a try of a task ends: the [`Outcome`] a handler (or a pull worker's ack) decides,
//! and the [`TryEnd`] it came to once the task's policies were applied — a `retry` on the
//! last attempt ends the task as [`TryEnd::Dead`], a `done` of a repeating task is still
//! [`TryEnd::Done`] though the task is re-armed. What the store applies in between is a
//! [`Completion`](crate::store::Completion) (see `engine::completion`).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::model::When;
use crate::store::Completion;
use crate::time::{Timestamp, format_duration};

/// What a handler decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Finished. A repeating task is re-armed at its next occurrence; otherwise the task
    /// is deleted.
    Done,
    /// Failed: try again after `after` (or the task's backoff); dead once the attempts
    /// are spent.
    Retry { after: Option<Duration>, error: String },
    /// Fire again later as a new occurrence (e.g. "still pending: remind again in 24 h").
    Reschedule(When),
    /// Give up now: the task goes to `dead`.
    Fail(String),
}

/// For logs: `done`, `retry in 5s: smtp timeout`, `reschedule in 1d`, `fail: order not
/// found`.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Done => f.write_str("done"),
            Outcome::Retry { after: Some(after), error } => write!(f, "retry in {}: {error}", format_duration(*after)),
            Outcome::Retry { after: None, error } => write!(f, "retry after the backoff: {error}"),
            Outcome::Reschedule(When::Now) => f.write_str("reschedule now"),
            Outcome::Reschedule(When::After(after)) => write!(f, "reschedule in {}", format_duration(*after)),
            Outcome::Reschedule(When::At(at)) => write!(f, "reschedule at {at}"),
            Outcome::Fail(error) => write!(f, "fail: {error}"),
        }
    }
}

impl Outcome {
    /// Retry after the task's backoff.
    pub fn retry(error: impl fmt::Display) -> Outcome {
        Outcome::Retry { after: None, error: error.to_string() }
    }
    /// Retry after `after`.
    pub fn retry_in(after: Duration, error: impl fmt::Display) -> Outcome {
        Outcome::Retry { after: Some(after), error: error.to_string() }
    }
    /// Fire again `after` from now.
    pub fn reschedule_in(after: Duration) -> Outcome {
        Outcome::Reschedule(When::After(after))
    }
    /// Fire again at `at`.
    pub fn reschedule_at(at: Timestamp) -> Outcome {
        Outcome::Reschedule(When::At(at))
    }
    /// Send the task to `dead` now.
    pub fn fail(error: impl fmt::Display) -> Outcome {
        Outcome::Fail(error.to_string())
    }
}

/// How one try ended, as counted, logged and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TryEnd {
    /// The handler finished (a repeating task is re-armed: still done).
    Done,
    /// The try failed and will be tried again.
    Retried,
    /// The handler asked to fire again later.
    Rescheduled,
    /// Gave up: the task is dead.
    Dead,
    /// The lease expired before an ack (the handler was too slow or vanished).
    Expired,
}

impl TryEnd {
    /// How a try ends when `completion` is applied; `handler_done`: the handler said
    /// done (a repeat's re-arm is then still done, not a reschedule).
    pub fn of(completion: &Completion, handler_done: bool) -> TryEnd {
        match completion {
            Completion::Done => TryEnd::Done,
            Completion::Reschedule { .. } if handler_done => TryEnd::Done,
            Completion::Reschedule { .. } => TryEnd::Rescheduled,
            Completion::Retry { .. } => TryEnd::Retried,
            Completion::Dead { .. } => TryEnd::Dead,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            TryEnd::Done => "done",
            TryEnd::Retried => "retried",
            TryEnd::Rescheduled => "rescheduled",
            TryEnd::Dead => "dead",
            TryEnd::Expired => "expired",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_words_in_logs() {
        // Were Rust debug structures: `Retry { after: Some(1s), error: "…" }`.
        assert_eq!(Outcome::Done.to_string(), "done");
        assert_eq!(
            Outcome::retry_in(Duration::from_secs(90), "smtp timeout").to_string(),
            "retry in 1m 30s: smtp timeout"
        );
        assert_eq!(Outcome::retry("HTTP 503").to_string(), "retry after the backoff: HTTP 503");
        assert_eq!(Outcome::reschedule_in(Duration::from_secs(86_400)).to_string(), "reschedule in 1d");
        assert_eq!(Outcome::Reschedule(When::Now).to_string(), "reschedule now");
        assert_eq!(
            Outcome::Reschedule(When::At(Timestamp::from_millis(1_764_504_000_000))).to_string(),
            "reschedule at 2025-11-30T12:00:00.000Z"
        );
        assert_eq!(Outcome::Fail("order not found".into()).to_string(), "fail: order not found");
    }
}
