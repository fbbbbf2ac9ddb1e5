//! A repeat's occurrences in a calendar, and what a completion makes of them by the
//! task's misfire and overlap policies: worked examples over a week in Shanghai with a
//! holiday and a 调休 Saturday, and a property test of the counts against stepping.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::meta::TaskMeta;
use crate::policy::{Misfire, Overlap, Progress, Repeat, Timing};

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Monday to Friday 09:00-12:00 and 13:30-18:00 in Shanghai; Friday 2 October 2026 is
/// a holiday and Saturday 10 October is worked.
fn office() -> Calendar {
    let day = json!(["09:00-12:00", "13:30-18:00"]);
    serde_json::from_value(json!({
        "tz": "Asia/Shanghai",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day},
        "holidays": ["2026-10-02"],
        "workdays": ["2026-10-10"],
    }))
    .unwrap()
}

fn cron(expr: &str) -> Repeat {
    Repeat::cron(expr, "Asia/Shanghai").unwrap()
}

fn meta(anchor: Timestamp) -> TaskMeta {
    TaskMeta { occurrence: 1, anchor, ..TaskMeta::default() }
}

#[test]
fn every_in_working_time_counts_open_hours_and_whole_days_count_working_days() {
    let calendar = office();
    let hours = Repeat::every(8 * HOUR).unwrap();
    let occurrences = Occurrences::new(hours.rule(), Some(&calendar));
    // A day holds 7h30 of working time. Thursday 1 October 09:00 + 8 working hours
    // skips the Friday holiday and the weekend: Monday 09:30; 8 more is Tuesday 10:00.
    let thursday = at("2026-10-01T09:00:00+08:00");
    assert_eq!(occurrences.step(thursday).unwrap(), Some(at("2026-10-05T09:30:00+08:00")));
    assert_eq!(occurrences.step(at("2026-10-05T09:30:00+08:00")).unwrap(), Some(at("2026-10-06T10:00:00+08:00")));

    let daily = Repeat::every(24 * HOUR).unwrap();
    let occurrences = Occurrences::new(daily.rule(), Some(&calendar));
    // Every working day at 09:30: Thursday, then Monday (holiday and weekend skipped),
    // and the 调休 Saturday 10 October after Friday 9.
    let first = at("2026-10-01T09:30:00+08:00");
    assert_eq!(occurrences.step(first).unwrap(), Some(at("2026-10-05T09:30:00+08:00")));
    assert_eq!(occurrences.step(at("2026-10-09T09:30:00+08:00")).unwrap(), Some(at("2026-10-10T09:30:00+08:00")));
    // The first occurrence of a task scheduled on Saturday 3 October is the next opening.
    assert_eq!(occurrences.first(at("2026-10-03T12:00:00+08:00")).unwrap(), Some(at("2026-10-05T09:00:00+08:00")));
}

#[test]
fn cron_in_a_calendar_keeps_only_its_open_times() {
    let calendar = office();
    // 09:30 every day of the week: in the calendar, working days only.
    let every_day = cron("30 9 * * *");
    let occurrences = Occurrences::new(every_day.rule(), Some(&calendar));
    let thursday = at("2026-10-01T09:30:00+08:00");
    assert_eq!(occurrences.next_after(thursday, thursday).unwrap(), Some(at("2026-10-05T09:30:00+08:00")));
    assert_eq!(
        occurrences.next_after(thursday, at("2026-10-09T10:00:00+08:00")).unwrap(),
        Some(at("2026-10-10T09:30:00+08:00")),
        "the 调休 Saturday works"
    );
    // 18:00 is the closing edge, so a reminder at 18:00 never falls in working time.
    let closing = cron("0 18 * * *");
    let error = Occurrences::new(closing.rule(), Some(&calendar)).first(thursday).unwrap_err();
    assert_eq!(error.field(), Some("calendar"), "{error}");
    // Without a calendar, cron is the rule's own times.
    assert_eq!(
        Occurrences::new(every_day.rule(), None).next_after(thursday, thursday).unwrap(),
        Some(at("2026-10-02T09:30:00+08:00"))
    );
}

#[test]
fn a_backlog_counts_the_occurrences_due_and_names_the_oldest_kept() {
    let every = Repeat::every(10 * MINUTE).unwrap();
    let plain = Occurrences::new(every.rule(), None);
    let start = at("2026-10-05T09:00:00Z");
    let now = at("2026-10-05T09:45:00Z");
    // 09:10, 09:20, 09:30, 09:40 are due.
    assert_eq!(plain.due_after(start, now, 0).unwrap(), Backlog { count: 4, first_kept: None });
    assert_eq!(plain.due_after(start, now, 2).unwrap().first_kept, Some(at("2026-10-05T09:30:00Z")));
    assert_eq!(plain.due_after(start, now, 9).unwrap().first_kept, Some(at("2026-10-05T09:10:00Z")));
    assert_eq!(plain.due_after(start, at("2026-10-05T09:05:00Z"), 3).unwrap(), Backlog { count: 0, first_kept: None });
}

#[test]
fn a_completion_skips_catches_up_or_queues_by_the_tasks_timing() {
    let every = Repeat::every(10 * MINUTE).unwrap();
    let scheduled_for = at("2026-10-05T09:00:00Z");
    // The firing of 09:00 was leased at 09:41 (the node was down) and ends at 09:45.
    let (leased_at, now) = (at("2026-10-05T09:41:00Z"), at("2026-10-05T09:45:00Z"));
    let next = |timing: Timing| {
        every.next_occurrence(&meta(scheduled_for), &Progress { now, leased_at, calendar: None, timing: &timing })
    };
    let missed = |timing: Timing| {
        every.missed(&meta(scheduled_for), &Progress { now, leased_at, calendar: None, timing: &timing }).unwrap()
    };
    let fire_once = Timing::default();
    assert_eq!(next(fire_once.clone()).unwrap(), Some(at("2026-10-05T09:50:00Z")), "fire_once: on from now");
    assert_eq!(missed(fire_once), 4, "09:10 to 09:40 are stood in for");

    let fire_all = Timing { misfire: Misfire::FireAll, ..Timing::default() };
    assert_eq!(next(fire_all.clone()).unwrap(), Some(at("2026-10-05T09:10:00Z")), "fire_all: the oldest owed");
    assert_eq!(missed(fire_all.clone()), 0);
    let two = Timing { catch_up_max: Some(2), ..fire_all };
    assert_eq!(next(two.clone()).unwrap(), Some(at("2026-10-05T09:30:00Z")), "only the latest two are owed");
    assert_eq!(missed(two), 2, "09:10 and 09:20 are dropped");

    // Under overlap queue only an occurrence that fell due while the firing was leased
    // (09:41 to 09:45) is owed: none here, so on from now; leased at 09:35, 09:40 is.
    let queue = Timing { overlap: Overlap::Queue, ..Timing::default() };
    assert_eq!(next(queue.clone()).unwrap(), Some(at("2026-10-05T09:50:00Z")));
    let progress = Progress { now, leased_at: at("2026-10-05T09:35:00Z"), calendar: None, timing: &queue };
    assert_eq!(every.next_occurrence(&meta(scheduled_for), &progress).unwrap(), Some(at("2026-10-05T09:40:00Z")));
}

#[test]
fn a_catch_up_in_working_time_walks_the_open_occurrences() {
    let calendar = office();
    let daily = cron("30 9 * * *");
    let fire_all = Timing { misfire: Misfire::FireAll, catch_up_max: Some(3), ..Timing::default() };
    // Down from Wednesday 30 September to Tuesday 13 October 10:00: the working days
    // in between are 1, 5, 6, 7, 8, 9, 10 (调休), 12 and 13 October.
    let (scheduled_for, now) = (at("2026-09-30T09:30:00+08:00"), at("2026-10-13T10:00:00+08:00"));
    let progress = Progress { now, leased_at: now, calendar: Some(&calendar), timing: &fire_all };
    assert_eq!(daily.missed(&meta(scheduled_for), &progress).unwrap(), 9 - 3);
    assert_eq!(daily.next_occurrence(&meta(scheduled_for), &progress).unwrap(), Some(at("2026-10-10T09:30:00+08:00")));
}

proptest! {
    /// The arithmetic backlog of a plain `every` is the one stepping finds.
    #[test]
    fn the_plain_backlog_is_the_stepped_one(interval_s in 1u64..5_000, behind_s in 0i64..200_000, keep in 0u32..20) {
        let every = Repeat::every(Duration::from_secs(interval_s)).unwrap();
        let start = at("2026-10-05T09:00:00Z");
        let now = Timestamp::from_millis(start.as_millis() + behind_s * 1000);
        let arithmetic = Occurrences::new(every.rule(), None).due_after(start, now, keep).unwrap();
        let mut stepped = Vec::new();
        let mut slot = start;
        loop {
            slot = Timestamp::from_millis(slot.as_millis() + i64::try_from(interval_s).unwrap() * 1000);
            if slot > now { break; }
            stepped.push(slot);
        }
        prop_assert_eq!(arithmetic.count as usize, stepped.len());
        let kept = stepped.len().saturating_sub(keep as usize);
        let expected = if keep == 0 { None } else { stepped.get(kept).copied() };
        prop_assert_eq!(arithmetic.first_kept, expected);
    }
}
