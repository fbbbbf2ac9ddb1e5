//! The completion policy.

use crate::model::Task;
use crate::outcome::Outcome;
use crate::store::Completion;
use crate::time::Timestamp;

/// Turns a handler's outcome into what the store applies, by the task's policies.
/// `jitter` ∈ [0, 1) shortens backoff waits (see [`Backoff::delay`]).
pub fn completion_for(task: &Task, outcome: Outcome, now: Timestamp, jitter: f64) -> Completion {
    match outcome {
        Outcome::Done => {
            match task.repeat.as_ref().and_then(|r| r.next_after(task.meta.occurrence, task.meta.anchor, now)) {
                Some(at) => Completion::Reschedule { at },
                None => Completion::Done,
            }
        }
        Outcome::Retry { after, error } => {
            let failures = task.attempts + 1;
            if failures >= task.max_attempts {
                Completion::Dead { error }
            } else {
                let wait = after.unwrap_or_else(|| task.backoff.delay(failures, jitter));
                Completion::Retry { at: now.saturating_add(wait), error }
            }
        }
        Outcome::Reschedule(when) => Completion::Reschedule { at: when.resolve(now) },
        Outcome::Fail(error) => Completion::Dead { error },
    }
}
