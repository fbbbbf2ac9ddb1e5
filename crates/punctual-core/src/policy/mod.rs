//! Retry and repeat policies: pure arithmetic on times, no clock. This module owns the
//! public paths (`punctual_core::policy::*`) and the defaults shared by both.
//!
//! - [`Backoff`] (`backoff.rs`): the wait between tries of one occurrence, jittered
//!   downwards only, so `max` is a true upper bound.
//! - [`Repeat`] (`repeat.rs`): when a task fires again after a successful occurrence;
//!   missed occurrences are skipped unless the task's [`Timing`] (`timing.rs`) keeps
//!   them owed; [`Occurrences`] (`occurrences.rs`) walks a repeat's times in a
//!   working-time calendar. Cron rules themselves ([`CronRule`]) live in `crate::cron`.
//! - [`Rate`] (`rate.rs`): a queue's rate limit, `count` deliveries per window.

mod backoff;
mod occurrences;
mod rate;
mod repeat;
mod timing;

pub use self::backoff::Backoff;
pub use self::occurrences::{Backlog, MAX_STEPS, Occurrences, RepeatRule, working_step};
pub use self::rate::Rate;
pub use self::repeat::{Progress, Repeat};
pub use self::timing::{Misfire, Overlap, Timing};
pub use crate::cron::{CronRule, CronSyntax};

/// Built-in `max_attempts` when neither the task nor its queue sets one.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 20;
