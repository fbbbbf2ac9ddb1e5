//! Spring's and Quartz's cron: one test per rule of the module doc. The expected
//! instants are what Spring's `CronExpression` 6.2.19 and Quartz's 2.5.2 answer (the
//! Java client's `CronComparisonTest` compares thousands more).

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use super::*;

fn at(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

/// The next `n` occurrences after `t`.
fn next_n(syntax: CronSyntax, expr: &str, tz: &str, t: &str, n: usize) -> Vec<Timestamp> {
    let rule = CronRule::with_syntax(expr, tz, syntax).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut from = at(t);
    let mut found = Vec::new();
    while found.len() < n
        && let Some(next) = rule.next_after(from)
    {
        found.push(next);
        from = next;
    }
    found
}

fn spring(expr: &str, tz: &str, t: &str, n: usize) -> Vec<Timestamp> {
    next_n(CronSyntax::Spring, expr, tz, t, n)
}

fn quartz(expr: &str, tz: &str, t: &str, n: usize) -> Vec<Timestamp> {
    next_n(CronSyntax::Quartz, expr, tz, t, n)
}

fn times(list: &[&str]) -> Vec<Timestamp> {
    list.iter().map(|s| at(s)).collect()
}

fn refusal(syntax: CronSyntax, expr: &str) -> String {
    let error = CronRule::with_syntax(expr, "UTC", syntax).unwrap_err();
    assert_eq!(error.field(), Some("repeat.cron"), "{error}");
    error.to_string()
}

#[test]
fn spring_weekdays_at_nine_and_the_last_day_of_the_month() {
    // Friday 2026-11-27 10:00 in Shanghai: next Monday and Tuesday at 09:00.
    let weekdays = spring("0 0 9 ? * MON-FRI", "Asia/Shanghai", "2026-11-27T02:00:00Z", 2);
    assert_eq!(weekdays, times(&["2026-11-30T01:00:00Z", "2026-12-01T01:00:00Z"]));
    let month_end = spring("0 0 18 L * ?", "Europe/Berlin", "2026-02-01T00:00:00Z", 3);
    assert_eq!(month_end, times(&["2026-02-28T17:00:00Z", "2026-03-31T16:00:00Z", "2026-04-30T16:00:00Z"]));
}

#[test]
fn spring_day_items_and_weekday_numbering() {
    let utc = |expr, t, n| spring(expr, "UTC", t, n);
    assert_eq!(
        utc("0 0 0 L-3 * ?", "2026-02-01T00:00:00Z", 2),
        times(&["2026-02-25T00:00:00Z", "2026-03-28T00:00:00Z"])
    );
    assert_eq!(
        utc("0 0 0 LW * ?", "2026-05-01T00:00:00Z", 2),
        times(&["2026-05-29T00:00:00Z", "2026-06-30T00:00:00Z"])
    );
    // 2026-08-01 is a Saturday: the first weekday is Monday the 3rd.
    assert_eq!(
        utc("0 0 0 1W * ?", "2026-07-15T00:00:00Z", 2),
        times(&["2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z"])
    );
    assert_eq!(utc("0 0 0 15W * ?", "2026-03-01T00:00:00Z", 1), times(&["2026-03-16T00:00:00Z"]));
    assert_eq!(utc("0 0 0 ? * 5L", "2026-11-01T00:00:00Z", 1), times(&["2026-11-27T00:00:00Z"]));
    assert_eq!(utc("0 0 0 ? * FRIL", "2026-11-01T00:00:00Z", 1), times(&["2026-11-27T00:00:00Z"]));
    assert_eq!(utc("0 0 0 ? * MON#1", "2026-11-03T00:00:00Z", 1), times(&["2026-12-07T00:00:00Z"]));
    // 7 at a range's start is Sunday as 0: Sunday to Tuesday.
    let sunday_to_tuesday = ["2026-12-06T00:00:00Z", "2026-12-07T00:00:00Z", "2026-12-08T00:00:00Z"];
    assert_eq!(utc("0 0 0 ? * 7-2", "2026-12-02T00:00:00Z", 3), times(&sunday_to_tuesday));
    assert_eq!(utc("0 0 0 ? * SUN-TUE", "2026-12-02T00:00:00Z", 3), times(&sunday_to_tuesday));
    // `*/2` steps from Monday: Wednesday the 2nd, Friday, Sunday, then Monday.
    let every_other = ["2026-12-02T00:00:00Z", "2026-12-04T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-07T00:00:00Z"];
    assert_eq!(utc("0 0 0 * * */2", "2026-12-01T00:00:00Z", 4), times(&every_other));
    // Both day fields restricted: a day matches both, Friday the 13th.
    assert_eq!(
        utc("0 0 0 13 * FRI", "2026-01-01T00:00:00Z", 2),
        times(&["2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z"])
    );
    // A Sunday 31st has no nearest weekday in Spring (Quartz takes the Friday before).
    assert_eq!(utc("0 0 0 31W * ?", "2026-05-01T00:00:00Z", 1), times(&["2026-07-31T00:00:00Z"]));
    assert_eq!(utc("@weekly", "2026-01-01T00:00:00Z", 1), times(&["2026-01-04T00:00:00Z"]));
    assert_eq!(utc("*/20 * * * * *", "2026-12-01T00:00:00.500Z", 1), times(&["2026-12-01T00:00:20Z"]));
}

#[test]
fn spring_is_due_at_every_instant_whose_wall_clock_matches() {
    let ny = "America/New_York";
    // 01:30 happens twice on 2026-11-01: due at both.
    let twice = spring("0 30 1 * * *", ny, "2026-11-01T04:00:00Z", 3);
    assert_eq!(twice, times(&["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"]));
    // 02:30 does not happen on 2026-03-08: not due that day.
    assert_eq!(spring("0 30 2 * * *", ny, "2026-03-08T04:00:00Z", 1), times(&["2026-03-09T06:30:00Z"]));
    // São Paulo's clocks skipped midnight on 2018-11-04 and repeated 23:00 on 2019-02-16.
    let sao_paulo = "America/Sao_Paulo";
    let midnights = spring("0 0 0 * * *", sao_paulo, "2018-11-02T12:00:00Z", 2);
    assert_eq!(midnights, times(&["2018-11-03T03:00:00Z", "2018-11-05T02:00:00Z"]));
    let late = spring("0 30 23 * * *", sao_paulo, "2019-02-16T12:00:00Z", 2);
    assert_eq!(late, times(&["2019-02-17T01:30:00Z", "2019-02-17T02:30:00Z"]));
}

#[test]
fn quartz_weekdays_count_from_sunday_and_ranges_wrap() {
    let weekdays = quartz("0 0 9 ? * MON-FRI", "Asia/Shanghai", "2026-11-27T02:00:00Z", 2);
    assert_eq!(weekdays, times(&["2026-11-30T01:00:00Z", "2026-12-01T01:00:00Z"]));
    assert_eq!(quartz("0 0 9 ? * 2-6", "Asia/Shanghai", "2026-11-27T02:00:00Z", 2), weekdays);
    let utc = |expr, t, n| quartz(expr, "UTC", t, n);
    let around_midnight =
        ["2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z", "2026-12-02T00:00:00Z", "2026-12-02T01:00:00Z"];
    assert_eq!(utc("0 0 22-2 * * ?", "2026-12-01T03:00:00Z", 4), times(&around_midnight));
    let friday_to_monday =
        ["2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-07T00:00:00Z"];
    assert_eq!(utc("0 0 0 ? * FRI-MON", "2026-12-01T03:00:00Z", 4), times(&friday_to_monday));
    let month_turn = ["2026-12-02T00:00:00Z", "2026-12-30T00:00:00Z", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z"];
    assert_eq!(utc("0 0 0 30-2 * ?", "2026-12-01T03:00:00Z", 4), times(&month_turn));
    let stepped = ["2026-12-01T01:00:00Z", "2026-12-01T01:05:00Z", "2026-12-01T01:10:00Z", "2026-12-01T01:50:00Z"];
    assert_eq!(utc("0 50-10/5 1 * * ?", "2026-12-01T00:00:00Z", 4), times(&stepped));
}

#[test]
fn quartz_years_and_day_items() {
    let utc = |expr, t, n| quartz(expr, "UTC", t, n);
    assert_eq!(utc("0 0 0 1 1 ? 2030", "2026-12-01T03:00:00Z", 2), times(&["2030-01-01T00:00:00Z"]));
    // `L` alone in the day-of-week is Saturday.
    assert_eq!(utc("0 0 0 ? * L", "2026-12-01T03:00:00Z", 1), times(&["2026-12-05T00:00:00Z"]));
    assert_eq!(utc("0 0 0 ? * 6L", "2026-11-01T03:00:00Z", 1), times(&["2026-11-27T00:00:00Z"]));
    assert_eq!(utc("0 0 0 ? * 6#3", "2026-11-01T03:00:00Z", 1), times(&["2026-11-20T00:00:00Z"]));
    assert_eq!(utc("0 0 0 L-3W * ?", "2026-05-01T03:00:00Z", 1), times(&["2026-05-28T00:00:00Z"]));
    // 2026-05-31 is a Sunday: Quartz's nearest weekday is Friday the 29th.
    assert_eq!(utc("0 0 0 31W * ?", "2026-05-01T00:00:00Z", 1), times(&["2026-05-29T00:00:00Z"]));
    assert_eq!(utc("0 0 18 l * ?", "2026-02-01T00:00:00Z", 1), times(&["2026-02-28T18:00:00Z"]));
}

#[test]
fn quartz_reads_a_repeated_wall_clock_time_as_its_later_instant() {
    let ny = "America/New_York";
    // 01:30 on 2026-11-01 is due once, at 01:30 EST.
    assert_eq!(
        quartz("0 30 1 * * ?", ny, "2026-11-01T04:00:00Z", 2),
        times(&["2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"])
    );
    // Nothing fires in the first pass of the repeated hour, even every 20 minutes.
    let every_20 = quartz("0 */20 * * * ?", ny, "2026-11-01T04:30:00Z", 3);
    assert_eq!(every_20, times(&["2026-11-01T04:40:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:20:00Z"]));
    // From inside the first pass, the search goes on from that wall-clock time.
    assert_eq!(quartz("*/20 * * * * ?", ny, "2026-11-01T05:59:00Z", 1), times(&["2026-11-01T06:59:20Z"]));
    // Skipped times are not due; São Paulo's 23:30 on 2019-02-16 once, at -03.
    assert_eq!(quartz("0 30 2 * * ?", ny, "2026-03-08T04:00:00Z", 1), times(&["2026-03-09T06:30:00Z"]));
    let sao_paulo = quartz("0 30 23 * * ?", "America/Sao_Paulo", "2019-02-16T12:00:00Z", 1);
    assert_eq!(sao_paulo, times(&["2019-02-17T02:30:00Z"]));
    let across_gap = quartz("0 */20 * * * ?", ny, "2026-03-08T06:30:00Z", 2);
    assert_eq!(across_gap, times(&["2026-03-08T06:40:00Z", "2026-03-08T07:00:00Z"]));
}

#[test]
fn refusals_name_the_field_and_say_what_to_write() {
    use CronSyntax::{Quartz, Spring};
    let cases: &[(CronSyntax, &str, &str)] = &[
        (Spring, "0 9 * * MON-FRI", "put the second first"),
        (Spring, "0 0 0 1 1 ? 2030", "Spring has no year field"),
        (Spring, "0 0 0 5-1 * *", "runs backwards"),
        (Spring, "0 0 0 * * L", "needs a weekday 0–7"),
        (Spring, "0 0 0 * * 1#6", "needs 1–5 after #"),
        (Spring, "0 0 0 L-0 * ?", "L-n with n from 1 to 30"),
        (Spring, "0 0 0 32W * ?", "nW with n from 1 to 31"),
        (Spring, "0 0 0 30 2 ?", "never matches"),
        (Spring, "0 0 0 ? * 8", "8 is outside 0–7"),
        (Spring, "0 0 0 */0 * ?", "not a step"),
        (Quartz, "0 0 9 * * MON-FRI", "'?' in exactly one"),
        (Quartz, "0 0 9 ? * ?", "'?' in exactly one"),
        (Quartz, "0 0 9 ? * 0", "0 is outside 1–7"),
        (Quartz, "0 0 9 ? JAN-JUN/2 *", "ignores a step after a name"),
        (Quartz, "0 0 9 ? * 2,6L", "not in a list"),
        (Quartz, "0 0 9 ? * 2#6", "1–5 after #"),
        (Quartz, "0 */60 9 ? * *", "the step 60 is over 59"),
        (Quartz, "0 0 9 1 1 ? 2200", "outside 1970–2199"),
        (Quartz, "0 0 9 1 1 ? 2030-2020", "runs backwards"),
        (Quartz, "0 0 9 * *", "put the second first"),
        (Quartz, "0 0 9 1-5W * ?", "nW with one day"),
    ];
    for (syntax, expr, part) in cases {
        let message = refusal(*syntax, expr);
        assert!(message.contains(part), "{syntax} '{expr}': {message}");
    }
}

#[test]
fn debug_and_equality_carry_the_syntax() {
    let spring = CronRule::with_syntax("0 0 9 * * *", "UTC", CronSyntax::Spring).unwrap();
    assert_eq!(format!("{spring:?}"), r#"CronRule(spring "0 0 9 * * *" in UTC)"#);
    assert_ne!(spring, CronRule::new("0 0 9 * * *", "UTC").unwrap());
    assert_eq!("quartz".parse::<CronSyntax>().unwrap(), CronSyntax::Quartz);
    assert_eq!("cron".parse::<CronSyntax>().unwrap_err().field(), Some("repeat.cron_syntax"));
}
