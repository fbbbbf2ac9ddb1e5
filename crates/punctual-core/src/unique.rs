//! Dedupe windows (`unique_for`, API.md "Wave 3 additions"): for a while after a task
//! with a [`Unique`] window completed for good, a schedule of its key creates nothing
//! and answers what completed ([`Completed`](crate::Completed)); with [`Unique::dead`],
//! a task that went dead holds its key the same way for the window after it died.
//!
//! Invariants: a window is longer than 0 (the engine refuses 0, field `unique_for`). A
//! completion record is written by the store in the same atomic step that deletes its
//! task on [`Completion::Done`](crate::store::Completion::Done), and only then (a
//! cancel, a purge or a repeat's next occurrence writes none); it counts from
//! `completed_at` until `unique_until`, exclusive, and for nothing after, when the
//! store may drop it. [`transitions`](crate::transitions) applies both rules. Below
//! the model: the task carries a window, so this module names no task.

use std::time::Duration;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::time::format_duration;

/// A task's dedupe window: for `window` after the task completed (and, with `dead`,
/// after it died), a schedule of its key is kept instead of written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Unique {
    /// How long the key stays held; longer than 0.
    pub window: Duration,
    /// Whether a task that went dead holds its key too (from when it died).
    pub dead: bool,
}

impl Unique {
    /// A window held after the task completed (done), not after it died.
    pub fn new(window: Duration) -> Unique {
        Unique { window, dead: false }
    }

    /// The same window, held after the task died too.
    pub fn counting_dead(mut self) -> Unique {
        self.dead = true;
        self
    }
}

/// As the API shows it: `"1h"` for a window held after done only, else
/// `{"window": "1h", "dead": true}`.
impl Serialize for Unique {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.dead {
            return s.serialize_str(&format_duration(self.window));
        }
        let mut object = s.serialize_struct("Unique", 2)?;
        object.serialize_field("window", &format_duration(self.window))?;
        object.serialize_field("dead", &true)?;
        object.end()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_window_shows_as_a_duration_or_with_dead_as_an_object() {
        let hour = Duration::from_secs(3600);
        assert_eq!(serde_json::to_value(Unique::new(hour)).unwrap(), json!("1h"));
        assert_eq!(
            serde_json::to_value(Unique::new(hour).counting_dead()).unwrap(),
            json!({"window": "1h", "dead": true})
        );
    }
}
