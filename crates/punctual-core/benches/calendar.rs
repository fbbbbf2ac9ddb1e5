//! Working-time calendars: each query walks open time date by date, so its cost grows
//! with the dates it crosses, never with the minutes.
//!
//! - `is_open`, `next_open` over a weekend: a handful of dates.
//! - `add_working_time_2y`: two years of working time (3,750 hours of a 7h30 day),
//!   across the National Day week, in Shanghai; and in Berlin, across four
//!   daylight-saving changes.
//! - `add_working_days_500`: 500 working days.
//! - `never_open_5y`: a calendar whose every date for years is a holiday, searched for
//!   5 years before the error.
//! - `repeat_*`: what a completion and a late lease of a repeat in a calendar compute:
//!   the next working-day 09:30 of a daily cron after a firing, the next of an `every
//!   1d` in working days, and the occurrences missed over a week (`missed`), which
//!   walks each of them.
//!
//! `cargo bench -p punctual-core --bench calendar`; figures in BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use punctual_core::policy::{Misfire, Progress, Timing};
use punctual_core::{Calendar, Repeat, TaskMeta, Timestamp};

fn calendar(tz: &str, holidays: &[&str], workdays: serde_json::Value) -> Calendar {
    let body = serde_json::json!({
        "tz": tz,
        "hours": {
            "mon": ["09:00-12:00", "13:30-18:00"], "tue": ["09:00-12:00", "13:30-18:00"],
            "wed": ["09:00-12:00", "13:30-18:00"], "thu": ["09:00-12:00", "13:30-18:00"],
            "fri": ["09:00-12:00", "13:30-18:00"],
        },
        "holidays": holidays,
        "workdays": workdays,
    });
    serde_json::from_value(body).expect("a valid calendar")
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("a valid time")
}

fn queries(c: &mut Criterion) {
    let adjusted = serde_json::json!(["2026-09-27", {"date": "2026-10-10", "as": "fri"}]);
    let shanghai =
        calendar("Asia/Shanghai", &["2026-10-01/2026-10-07", "2026-06-19", "2027-02-06/2027-02-14"], adjusted);
    let berlin = calendar("Europe/Berlin", &["2026-12-24/2026-12-26"], serde_json::json!([]));
    let closed = calendar("Asia/Shanghai", &["2026-01-01/2040-12-31"], serde_json::json!([]));
    let two_years = Duration::from_secs(3_750 * 3_600);
    let monday = at("2026-01-05T10:00:00+08:00");

    c.bench_function("is_open", |b| b.iter(|| shanghai.is_open(black_box(monday))));
    c.bench_function("next_open_weekend", |b| {
        b.iter(|| shanghai.next_open(black_box(at("2026-01-09T19:00:00+08:00"))))
    });
    c.bench_function("add_working_time_2y_shanghai", |b| {
        b.iter(|| shanghai.add_working_time(black_box(monday), black_box(two_years)))
    });
    c.bench_function("add_working_time_2y_berlin", |b| {
        b.iter(|| berlin.add_working_time(black_box(at("2026-01-05T10:00:00+01:00")), black_box(two_years)))
    });
    c.bench_function("add_working_days_500", |b| b.iter(|| shanghai.add_working_days(black_box(monday), 500)));
    let meta = |anchor| {
        let mut meta = TaskMeta::default();
        meta.occurrence = 1;
        meta.anchor = anchor;
        meta
    };
    let daily_cron = Repeat::cron("30 9 * * *", "Asia/Shanghai").expect("a valid rule");
    let daily_every = Repeat::every(Duration::from_secs(24 * 3600)).expect("a valid interval");
    let friday = at("2026-09-25T09:30:00+08:00");
    let after_firing = at("2026-09-25T09:31:00+08:00");
    let default = Timing::default();
    let fire_all = {
        let mut timing = Timing::default();
        timing.misfire = Misfire::FireAll;
        timing
    };
    let on_time = Progress { now: after_firing, leased_at: friday, calendar: Some(&shanghai), timing: &default };
    c.bench_function("repeat_next_cron_in_calendar", |b| {
        b.iter(|| daily_cron.next_occurrence(black_box(&meta(friday)), black_box(&on_time)))
    });
    c.bench_function("repeat_next_every_1d_in_calendar", |b| {
        b.iter(|| daily_every.next_occurrence(black_box(&meta(friday)), black_box(&on_time)))
    });
    let week_later = at("2026-10-12T10:00:00+08:00");
    let late = Progress { now: week_later, leased_at: week_later, calendar: Some(&shanghai), timing: &fire_all };
    c.bench_function("repeat_missed_over_national_day_week", |b| {
        b.iter(|| daily_cron.missed(black_box(&meta(friday)), black_box(&late)))
    });
    c.bench_function("never_open_5y", |b| {
        b.iter(|| closed.next_open(black_box(at("2026-03-01T00:00:00Z"))).expect_err("never opens"))
    });
}

criterion_group!(benches, queries);
criterion_main!(benches);
