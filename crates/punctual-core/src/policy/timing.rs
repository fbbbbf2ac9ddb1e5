//! A task's timing policies: the working-time calendar it counts in, what happens to
//! occurrences missed while no node ran or the queue was paused (misfire), to
//! occurrences that fall due while the previous firing is still leased (overlap), and
//! jitter. Kept with the task in every store as JSON (absent when every policy is the
//! default, so a task without them reads and writes as it did before they existed);
//! the engine applies them when it schedules, leases and completes (see
//! [`crate::policy::Occurrences`] for the arithmetic).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::calendar::CalendarName;
use crate::error::{Error, Result};
use crate::time::{serde_duration, serde_option_duration};

/// What becomes of occurrences missed while no node ran or the queue was paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Misfire {
    /// One firing stands in for all that were missed (its delivery counts them in
    /// `missed`), then the schedule goes on from now.
    #[default]
    FireOnce,
    /// Each missed occurrence fires, oldest first, at most `catch_up_max` of them
    /// (the oldest beyond that are dropped, counted in `missed`).
    FireAll,
    /// A first try leased later than `misfire_after` past its due time does not fire:
    /// a repeat moves to its next occurrence after now, a one-off task ends.
    Skip,
}

/// What becomes of occurrences of a repeat that fall due while its firing is leased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Overlap {
    /// They are dropped: the next occurrence is the first after the firing ends.
    #[default]
    Skip,
    /// The latest of them fires as soon as the firing ends, the others are dropped.
    Queue,
    /// They fire while it runs: each occurrence fires as a task of its own, keyed
    /// `<key>@<scheduled_for>`, and the repeat moves on at once.
    Allow,
}

/// A task's timing policies; the default is the behaviour of a task without them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Timing {
    /// The working-time calendar: a repeat runs in its working time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar: Option<CalendarName>,
    #[serde(skip_serializing_if = "is_default")]
    pub misfire: Misfire,
    /// A first try leased later than this past its due time is a misfire.
    #[serde(skip_serializing_if = "Option::is_none", with = "serde_option_duration")]
    pub misfire_after: Option<Duration>,
    /// Under [`Misfire::FireAll`], at most this many missed occurrences fire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catch_up_max: Option<u32>,
    #[serde(skip_serializing_if = "is_default")]
    pub overlap: Overlap,
    /// Each due time is moved later by a uniform draw in `[0, jitter)`.
    #[serde(skip_serializing_if = "Option::is_none", with = "serde_option_duration")]
    pub jitter: Option<Duration>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Timing {
    /// `misfire_after` when none is given: Quartz's default misfire threshold.
    pub const DEFAULT_MISFIRE_AFTER: Duration = Duration::from_secs(60);
    /// `catch_up_max` when none is given.
    pub const DEFAULT_CATCH_UP_MAX: u32 = 10;
    /// The largest `catch_up_max`.
    pub const MAX_CATCH_UP: u32 = 1000;
    /// The longest `jitter`.
    pub const MAX_JITTER: Duration = Duration::from_secs(12 * 3600);

    /// Whether every policy is the default (nothing to store).
    pub fn is_default(&self) -> bool {
        *self == Timing::default()
    }

    /// Later than this past its due time, a first try is a misfire.
    pub fn misfire_after(&self) -> Duration {
        self.misfire_after.unwrap_or(Timing::DEFAULT_MISFIRE_AFTER)
    }

    /// Under [`Misfire::FireAll`], how many missed occurrences fire at most; else 0.
    pub fn catch_up(&self) -> u32 {
        match self.misfire {
            Misfire::FireAll => self.catch_up_max.unwrap_or(Timing::DEFAULT_CATCH_UP_MAX),
            _ => 0,
        }
    }

    /// The policies with their effective values, every field present (the task object
    /// of the API, where policies not given show their defaults); the stored form is
    /// this type's own, which leaves defaults out.
    pub fn serialize_effective<S: serde::Serializer>(timing: &Timing, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Effective<'a> {
            calendar: Option<&'a CalendarName>,
            misfire: Misfire,
            #[serde(with = "serde_duration")]
            misfire_after: Duration,
            catch_up_max: u32,
            overlap: Overlap,
            #[serde(with = "serde_option_duration")]
            jitter: Option<Duration>,
        }
        Effective {
            calendar: timing.calendar.as_ref(),
            misfire: timing.misfire,
            misfire_after: timing.misfire_after(),
            catch_up_max: timing.catch_up_max.unwrap_or(Timing::DEFAULT_CATCH_UP_MAX),
            overlap: timing.overlap,
            jitter: timing.jitter,
        }
        .serialize(s)
    }

    /// Checks the policies against each other (field names relative to the task).
    pub fn validate(&self) -> Result<()> {
        // `catch_up_max` and `misfire_after` are kept whatever the misfire (they apply
        // under fire_all and skip): a task object, which shows every policy, can be
        // sent back as it reads.
        if let Some(n) = self.catch_up_max
            && (n == 0 || n > Timing::MAX_CATCH_UP)
        {
            return Err(Error::invalid(
                "catch_up_max",
                format!("catch_up_max must be 1 to {}, not {n}", Timing::MAX_CATCH_UP),
            ));
        }
        if self.misfire_after.is_some_and(|after| after.is_zero()) {
            return Err(Error::invalid("misfire_after", "misfire_after must be longer than 0"));
        }
        if let Some(jitter) = self.jitter
            && (jitter.is_zero() || jitter > Timing::MAX_JITTER)
        {
            return Err(Error::invalid("jitter", "jitter must be longer than 0 and at most 12h"));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use super::*;

    #[test]
    fn the_default_writes_nothing_and_reads_back() {
        assert_eq!(serde_json::to_string(&Timing::default()).unwrap(), "{}");
        let timing = Timing {
            calendar: Some(CalendarName::new("cn-office").unwrap()),
            misfire: Misfire::Skip,
            misfire_after: Some(Duration::from_secs(600)),
            jitter: Some(Duration::from_secs(30)),
            ..Timing::default()
        };
        let json = serde_json::to_string(&timing).unwrap();
        assert_eq!(json, r#"{"calendar":"cn-office","misfire":"skip","misfire_after":"10m","jitter":"30s"}"#);
        assert_eq!(serde_json::from_str::<Timing>(&json).unwrap(), timing);
    }

    #[test]
    fn policies_that_do_not_go_together_are_refused_by_field() {
        let field = |timing: Timing| match timing.validate() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let fire_all = Timing { misfire: Misfire::FireAll, ..Timing::default() };
        assert!(Timing { catch_up_max: Some(3), ..Timing::default() }.validate().is_ok(), "kept, unused");
        assert_eq!(field(Timing { catch_up_max: Some(0), ..fire_all.clone() }), "catch_up_max");
        assert_eq!(field(Timing { catch_up_max: Some(1001), ..fire_all.clone() }), "catch_up_max");
        assert!(Timing { catch_up_max: Some(1000), ..fire_all.clone() }.validate().is_ok());
        assert_eq!(field(Timing { misfire_after: Some(Duration::ZERO), ..fire_all }), "misfire_after");
        assert_eq!(field(Timing { jitter: Some(Duration::ZERO), ..Timing::default() }), "jitter");
        assert_eq!(field(Timing { jitter: Some(Duration::from_secs(43_201)), ..Timing::default() }), "jitter");
    }
}
