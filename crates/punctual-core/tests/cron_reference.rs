//! The engine's cron rules against a brute-force reference model written from the
//! documented semantics (punctual-testkit's `cron_model`, included here by path: the
//! core cannot depend on the testkit). Guards against issue 14's findings coming back:
//! `*`-prefixed day fields ORed instead of ANDed (`0 0 1 * */1` firing daily), a
//! repeated wall-clock time of a fixed expression firing twice (`0 1-3 * * *` at 01:00
//! EDT and 01:00 EST), a skipped one dropped instead of firing at the end of the gap
//! (`0 1,2 * * *` on the spring-forward day), and expressions the docs refuse being
//! accepted (7 fields, `1,,2`) or valid ones refused.
//!
//! - [`engine_agrees_with_the_model`]: thousands of generated expressions (ranges,
//!   steps, lists, month and weekday names in mixed case, both day fields, seconds,
//!   nicknames) in zones with and without daylight saving, from instants near the
//!   zones' transitions (1990–2100), anywhere in those years or anywhere up to the end
//!   of time, each followed for several occurrences; and at the epoch and the last
//!   days before `Timestamp::MAX` ([`engine_agrees_with_the_model_at_the_ends_of_time`]).
//! - [`validity_agrees_with_the_model`]: generated valid expressions accepted, broken
//!   ones refused with field `repeat.cron`, unknown zones with `repeat.tz`; the model's
//!   parser means what the generator built.
//! - [`model_agrees_with_walking_every_instant`]: the model's own check, against a
//!   slower one that visits every instant.
//! - The issue's cases as plain tests, for the model and for the engine.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

#[allow(dead_code, reason = "shared with crates/punctual/tests/cron_rearm.rs, which uses other parts")]
#[path = "../../punctual-testkit/src/cron_model.rs"]
mod cron_model;

#[allow(dead_code, reason = "shared with crates/punctual/tests/cron_rearm.rs, which uses other parts")]
#[path = "../../punctual-testkit/src/cron_gen.rs"]
mod cron_gen;

use cron_model::Cron;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use punctual_core::Repeat;
use punctual_core::policy::CronRule;

/// How far the model looks: past any expression's longest wait in the generated ones
/// (February 29 on a given weekday recurs within 40 years).
const HORIZON: SignedDuration = SignedDuration::from_hours(24 * 366 * 60);

/// Occurrences followed from each start.
const STEPS: usize = 6;

fn engine_next(rule: &CronRule, t: Timestamp) -> Option<Timestamp> {
    let t = punctual_core::Timestamp::from_millis(t.as_millisecond());
    rule.next_after(t).map(punctual_core::Timestamp::to_jiff)
}

fn model_next(cron: &Cron, tz: &TimeZone, t: Timestamp) -> Option<Timestamp> {
    let latest = punctual_core::Timestamp::MAX.to_jiff();
    cron.next_after(tz, t, t.checked_add(HORIZON).map_or(latest, |h| h.min(latest)))
}

fn show(t: Option<Timestamp>, tz: &TimeZone) -> String {
    match t {
        Some(t) => format!("{t} ({})", t.to_zoned(tz.clone()).datetime()),
        None => "none".to_string(),
    }
}

/// Follows `expr` in `zone` for [`STEPS`] occurrences from `start` with both the engine
/// and the model; the first disagreement, described.
fn compare(expr: &str, zone: &str, start: Timestamp) -> Result<(), String> {
    let cron = Cron::parse(expr).map_err(|e| format!("the model refuses {expr:?}: {e}"))?;
    let rule = CronRule::new(expr, zone).map_err(|e| format!("the engine refuses {expr:?} in {zone}: {e}"))?;
    let tz = TimeZone::get(zone).unwrap();
    let mut t = start;
    for step in 0..STEPS {
        let (engine, model) = (engine_next(&rule, t), model_next(&cron, &tz, t));
        let agree = match model {
            Some(_) => engine == model,
            // Nothing within the horizon: the engine may only answer beyond it.
            None => engine.is_none_or(|e| e > t.checked_add(HORIZON).unwrap_or(e)),
        };
        if !agree {
            return Err(format!(
                "{expr:?} in {zone} from {} (start {}, step {step}): engine {}, model {}",
                show(Some(t), &tz),
                show(Some(start), &tz),
                show(engine, &tz),
                show(model, &tz)
            ));
        }
        match model {
            Some(next) => t = next,
            None => break,
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn engine_agrees_with_the_model(
        expr in cron_gen::expression().prop_filter("matches some date", |e| e.meaning.is_some()),
        (zone, start) in cron_gen::zone_and_start(),
    ) {
        if let Err(disagreement) = compare(&expr.text, zone, start) {
            prop_assert!(false, "{}", disagreement);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn validity_agrees_with_the_model(
        valid in cron_gen::expression(),
        invalid in cron_gen::invalid_expression(),
        zone in proptest::sample::select(cron_gen::ZONES),
        bad_zone in cron_gen::invalid_zone(),
    ) {
        match &valid.meaning {
            Some(meaning) => {
                prop_assert_eq!(Cron::parse(&valid.text), Ok(*meaning), "the model parses {:?}", valid.text);
                let engine = CronRule::new(&valid.text, zone);
                prop_assert!(engine.is_ok(), "the engine refuses {:?} in {}: {:?}", valid.text, zone, engine.err());
                prop_assert!(Repeat::cron(&valid.text, zone).is_ok());
                let engine = CronRule::new(&valid.text, &bad_zone).map(|_| ()).map_err(|e| e.field().map(String::from));
                prop_assert_eq!(engine, Err(Some("repeat.tz".to_string())), "{:?} in {:?}", valid.text, bad_zone);
            }
            None => {
                prop_assert!(Cron::parse(&valid.text).is_err(), "the model accepts {:?}, which matches no date", valid.text);
                let engine = CronRule::new(&valid.text, zone).map(|_| ()).map_err(|e| e.field().map(String::from));
                prop_assert_eq!(engine, Err(Some("repeat.cron".to_string())), "{:?} matches no date", valid.text);
            }
        }
        prop_assert!(Cron::parse(&invalid).is_err(), "the model accepts {:?}", invalid);
        let engine = CronRule::new(&invalid, zone).map(|_| ()).map_err(|e| e.field().map(String::from));
        prop_assert_eq!(engine, Err(Some("repeat.cron".to_string())), "{:?}", invalid);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// The model's own check: its due instants in a window around a transition are
    /// exactly those a walk over every instant finds.
    #[test]
    fn model_agrees_with_walking_every_instant(
        expr in cron_gen::expression().prop_filter("matches some date", |e| e.meaning.is_some()),
        (zone, start) in cron_gen::zone_and_start(),
    ) {
        let cron = Cron::parse(&expr.text).unwrap();
        let tz = TimeZone::get(zone).unwrap();
        // Seconds cost sixty times more steps: a shorter window, on the transition.
        let half = SignedDuration::from_mins(if cron.second == 1 { 4 * 60 } else { 30 });
        let center = cron_gen::nearest_transition(zone, start, SignedDuration::from_hours(6)).unwrap_or(start);
        let (from, to) = (center - half, center + half);
        let walked = cron.due_by_walking(&tz, from, to);
        let mut modelled = Vec::new();
        let mut t = from - SignedDuration::from_millis(1);
        while let Some(next) = cron.next_after(&tz, t, to) {
            modelled.push(next);
            t = next;
        }
        if modelled != walked {
            let at = modelled.iter().zip(&walked).take_while(|(m, w)| m == w).count();
            prop_assert!(
                false,
                "{:?} in {} from {} to {}: first difference at #{}: model {:?}, walk {:?}",
                expr.text, zone, from, to, at, modelled.get(at), walked.get(at)
            );
        }
    }
}

/// One of the issue's cases: from `from`, `expr` in `zone` is next due at each of `due`.
struct Case {
    expr: &'static str,
    zone: &'static str,
    from: &'static str,
    due: &'static [&'static str],
}

const FALL_BACK_FIXED_HOURS: Case = Case {
    // 01:00 EST repeats 01:00 EDT: not due again.
    expr: "0 1-3 * * *",
    zone: "America/New_York",
    from: "2026-11-01T05:10:00Z",
    due: &["2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "2026-11-02T06:00:00Z"],
};
const SPRING_FORWARD_FIXED_HOURS: Case = Case {
    // 02:00 EST never happens: due at 03:00 EDT, the end of the gap.
    expr: "0 1,2 * * *",
    zone: "America/New_York",
    from: "2026-03-08T06:10:00Z",
    due: &["2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z", "2026-03-09T06:00:00Z"],
};
const SPRING_FORWARD_SWALLOWS_TWO: Case = Case {
    // 02:00 and 02:30 both fall in the gap: due once, at 03:00 EDT.
    expr: "0,30 1-2 * * *",
    zone: "America/New_York",
    from: "2026-03-08T06:10:00Z",
    due: &["2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z"],
};
const FALL_BACK_WILDCARD: Case = Case {
    // `*`-prefixed minute: both 01:30s are due.
    expr: "*/30 * * * *",
    zone: "America/New_York",
    from: "2026-11-01T05:10:00Z",
    due: &["2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"],
};
const STAR_STEP_WEEKDAY_ANDS: Case = Case {
    expr: "0 0 1 * */1",
    zone: "UTC",
    from: "2026-12-01T00:00:00Z",
    due: &["2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"],
};
const STAR_STEP_DAY_ANDS: Case = Case {
    // 2026-12-01 is a Tuesday: Mondays only.
    expr: "0 0 */1 * 1",
    zone: "UTC",
    from: "2026-12-01T00:00:00Z",
    due: &["2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z", "2026-12-21T00:00:00Z"],
};
const RESTRICTED_DAYS_OR: Case = Case {
    expr: "0 0 1,15 * MON",
    zone: "UTC",
    from: "2026-12-01T00:00:00Z",
    due: &["2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z", "2026-12-15T00:00:00Z", "2026-12-21T00:00:00Z"],
};
const LONDON_SPRING_FORWARD: Case = Case {
    // 01:00 GMT never happens: due at 02:00 BST (01:00Z), then 03:00 BST.
    expr: "0 1-23/2 * * *",
    zone: "Europe/London",
    from: "2026-03-29T00:10:00Z",
    due: &["2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"],
};
const LONDON_FALL_BACK: Case = Case {
    // 01:00 BST (00:00Z) is due, 01:00 GMT (01:00Z) repeats it.
    expr: "0 1-23/2 * * *",
    zone: "Europe/London",
    from: "2026-10-24T23:10:00Z",
    due: &["2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"],
};
const LORD_HOWE_SPRING_FORWARD: Case = Case {
    // +10:30 → +11 at 02:00: 02:00 is skipped, due at 02:30 (the end of the gap) once.
    expr: "0,30 1-2 * * *",
    zone: "Australia/Lord_Howe",
    from: "2026-10-03T14:00:00Z",
    due: &["2026-10-03T14:30:00Z", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "2026-10-04T14:00:00Z"],
};
const LORD_HOWE_FALL_BACK: Case = Case {
    // +11 → +10:30 at 02:00: 01:30 happens twice, due the first time only.
    expr: "0,30 1-2 * * *",
    zone: "Australia/Lord_Howe",
    from: "2026-04-04T13:50:00Z",
    due: &["2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z"],
};

const CASES: &[Case] = &[
    FALL_BACK_FIXED_HOURS,
    SPRING_FORWARD_FIXED_HOURS,
    SPRING_FORWARD_SWALLOWS_TWO,
    FALL_BACK_WILDCARD,
    STAR_STEP_WEEKDAY_ANDS,
    STAR_STEP_DAY_ANDS,
    RESTRICTED_DAYS_OR,
    LONDON_SPRING_FORWARD,
    LONDON_FALL_BACK,
    LORD_HOWE_SPRING_FORWARD,
    LORD_HOWE_FALL_BACK,
];

/// The due instants from `case.from` by `next`, as many as the case lists.
fn follow(case: &Case, mut next: impl FnMut(Timestamp) -> Option<Timestamp>) -> Vec<String> {
    let mut t: Timestamp = case.from.parse().unwrap();
    let mut due = Vec::new();
    for _ in case.due {
        match next(t) {
            Some(n) => {
                due.push(n.to_string());
                t = n;
            }
            None => break,
        }
    }
    due
}

fn check_engine(case: &Case) {
    let rule = CronRule::new(case.expr, case.zone).unwrap();
    let due = follow(case, |t| engine_next(&rule, t));
    assert_eq!(due, case.due, "{:?} in {} from {}", case.expr, case.zone, case.from);
}

#[test]
fn the_model_gives_the_issues_answers() {
    for case in CASES {
        let cron = Cron::parse(case.expr).unwrap();
        let tz = TimeZone::get(case.zone).unwrap();
        let due = follow(case, |t| model_next(&cron, &tz, t));
        assert_eq!(due, case.due, "{:?} in {} from {}", case.expr, case.zone, case.from);
    }
}

#[test]
fn fall_back_a_fixed_time_is_due_once() {
    check_engine(&FALL_BACK_FIXED_HOURS);
}

#[test]
fn spring_forward_a_skipped_fixed_time_is_due_at_the_end_of_the_gap() {
    check_engine(&SPRING_FORWARD_FIXED_HOURS);
}

#[test]
fn spring_forward_two_skipped_fixed_times_are_due_once() {
    check_engine(&SPRING_FORWARD_SWALLOWS_TWO);
}

#[test]
fn fall_back_a_wildcard_time_is_due_twice() {
    check_engine(&FALL_BACK_WILDCARD);
}

#[test]
fn a_star_step_weekday_is_anded_with_the_day() {
    check_engine(&STAR_STEP_WEEKDAY_ANDS);
}

#[test]
fn a_star_step_day_is_anded_with_the_weekday() {
    check_engine(&STAR_STEP_DAY_ANDS);
}

#[test]
fn restricted_day_and_weekday_are_ored() {
    check_engine(&RESTRICTED_DAYS_OR);
}

#[test]
fn london_spring_forward_every_other_hour() {
    check_engine(&LONDON_SPRING_FORWARD);
}

#[test]
fn london_fall_back_every_other_hour() {
    check_engine(&LONDON_FALL_BACK);
}

#[test]
fn lord_howe_half_hour_spring_forward() {
    check_engine(&LORD_HOWE_SPRING_FORWARD);
}

#[test]
fn lord_howe_half_hour_fall_back() {
    check_engine(&LORD_HOWE_FALL_BACK);
}

/// At the ends of time (the epoch, in zones behind and ahead of UTC, and the last days
/// before `Timestamp::MAX`, where the search runs out of instants) the engine and the
/// model agree too.
#[test]
fn engine_agrees_with_the_model_at_the_ends_of_time() {
    let latest = punctual_core::Timestamp::MAX.to_jiff();
    let starts = [
        Timestamp::UNIX_EPOCH,
        latest - SignedDuration::from_hours(24 * 40),
        latest - SignedDuration::from_hours(30),
        latest - SignedDuration::from_secs(61),
    ];
    let exprs = ["* * * * *", "*/7 * * * * *", "59 23 * * *", "0 0 1 * *", "0 0 29 2 *", "@yearly", "0 0 13 * FRI"];
    let mut disagreements = Vec::new();
    for zone in ["UTC", "America/New_York", "Pacific/Kiritimati", "Etc/GMT+12", "Australia/Lord_Howe"] {
        for expr in exprs {
            for start in starts {
                disagreements.extend(compare(expr, zone, start).err());
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The documented refusals, each with the field it names.
const REFUSED: &[&str] = &[
    "0 0 0 1 1 * 1999",
    "* * * * * * *",
    "1,,2 * * * *",
    "0 0 30 2 *",
    "0 0 31 4,6 *",
    "5-1 * * * *",
    "*/0 * * * *",
    "0 0 ? * MON",
    "0 0 L * *",
    "0 0 15W * *",
    "0 0 * * 5#3",
    "@reboot",
    "0 0 * * FUN",
    "60 * * * *",
    "0 24 * * *",
    "0 0 0 * *",
    "0 0 32 * *",
    "0 0 * 13 *",
    "0 0 * * 8",
    "* * * *",
];

#[test]
fn the_model_refuses_what_the_docs_refuse() {
    for expr in REFUSED {
        assert!(Cron::parse(expr).is_err(), "{expr:?}");
    }
    for expr in ["0 0 29 2 *", "0 0 31 4,6 MON", "0 0 * * 5-7", "@DAILY", "0 0 1 jan-Mar Mon-FRI", "*/15 1/3 * * *"] {
        assert!(Cron::parse(expr).is_ok(), "{expr:?}");
    }
}

#[test]
fn the_engine_refuses_what_the_docs_refuse() {
    for expr in REFUSED {
        let field = CronRule::new(expr, "UTC").map(|_| ()).map_err(|e| e.field().map(String::from));
        assert_eq!(field, Err(Some("repeat.cron".to_string())), "{expr:?}");
    }
    let field = CronRule::new("0 0 * * *", "Mars/Olympus_Mons").map(|_| ()).map_err(|e| e.field().map(String::from));
    assert_eq!(field, Err(Some("repeat.tz".to_string())));
}
