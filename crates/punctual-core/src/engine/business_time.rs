//! Business time at intake: when a task given a calendar is first scheduled for.
//!
//! - `delay`: working time from now; a whole number of days (`"2d"`, `"48h"`) counts
//!   working days at the same working-time offset.
//! - `due_at`: only with `align: next_open`, which moves a closed time to the next
//!   opening (a due time must say what it means outside working hours).
//! - neither: the first occurrence of a repeat in the calendar (`every`: the next
//!   opening; cron: its first open time), else the next opening.
//!
//! Jitter is added after this arithmetic, so a jittered time may fall a little past a
//! closing; the occurrence it stands for (the anchor) is always working time.

use crate::calendar::Calendar;
use crate::error::{Error, Result};
use crate::model::When;
use crate::policy::{Occurrences, Repeat, working_step};
use crate::time::Timestamp;

/// The time a task asked for with `when` at `now` is scheduled for in `calendar`.
pub(super) fn scheduled_for(
    calendar: &Calendar,
    when: When,
    align_next_open: bool,
    repeat: Option<&Repeat>,
    now: Timestamp,
) -> Result<Timestamp> {
    match (when, align_next_open) {
        (When::After(_), true) => {
            Err(Error::invalid("align", "align applies to due_at: a delay already counts working time"))
        }
        (When::After(delay), false) => working_step(calendar, now, delay),
        (When::At(_), false) => Err(Error::invalid(
            "align",
            "a due_at with a calendar needs \"align\": \"next_open\" (or leave the calendar out)",
        )),
        (When::At(at), true) => calendar.next_open(at.max(now)),
        (When::Now, _) => match repeat {
            Some(repeat) => first_occurrence(repeat, Some(calendar), now),
            None => calendar.next_open(now),
        },
    }
}

/// The first occurrence of a repeat scheduled "now", in `calendar` when it has one
/// ([`Occurrences::first`]), or a refusal when there is none before the end of time.
pub(super) fn first_occurrence(repeat: &Repeat, calendar: Option<&Calendar>, now: Timestamp) -> Result<Timestamp> {
    Occurrences::new(repeat.rule(), calendar)
        .first(now)?
        .ok_or_else(|| Error::invalid("repeat.cron", "has no occurrence left before the end of time (9999-12-30)"))
}
