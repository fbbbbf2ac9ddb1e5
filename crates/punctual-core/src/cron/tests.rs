//! Vixie cron: its day rule, Debian's daylight-saving rules, refusals.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use super::*;

fn at(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn next(expr: &str, tz: &str, t: &str) -> Option<Timestamp> {
    CronRule::new(expr, tz).unwrap().next_after(at(t))
}

fn refusal(expr: &str) -> String {
    CronRule::new(expr, "UTC").unwrap_err().to_string()
}

#[test]
fn a_star_prefixed_day_field_ands_the_day_fields() {
    // Was daily from 2026-12-01: Vixie ANDs when a day field starts with `*`.
    assert_eq!(next("0 0 1 * */1", "UTC", "2026-12-01T00:00:00Z"), Some(at("2027-01-01T00:00:00Z")));
    // Mondays only; 2026-12-07 is a Monday.
    assert_eq!(next("0 0 */1 * 1", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
    // Odd days that are Mondays: the 7th is odd.
    assert_eq!(next("0 0 */2 * MON", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
    // Both restricted without `*`: either. Tuesday 2026-12-01 is neither the 15th
    // nor a Monday; Monday the 7th comes first.
    assert_eq!(next("0 0 15 * MON", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-07T00:00:00Z")));
    assert_eq!(next("0 0 15 * MON", "UTC", "2026-12-14T00:00:00Z"), Some(at("2026-12-15T00:00:00Z")));
}

#[test]
fn fixed_times_fire_once_across_a_fall_back() {
    // 01:10 EDT on the day New York falls back; 01:00–02:00 happens twice.
    // Was 01:00 EST (06:00Z): a second run of 01:00.
    assert_eq!(next("0 1-3 * * *", "America/New_York", "2026-11-01T05:10:00Z"), Some(at("2026-11-01T07:00:00Z")));
    // From inside the second pass too.
    assert_eq!(next("30 1 * * *", "America/New_York", "2026-11-01T06:10:00Z"), Some(at("2026-11-02T06:30:00Z")));
    // A wildcard expression runs at both 01:30s (Debian cron).
    assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T05:10:00Z"), Some(at("2026-11-01T05:30:00Z")));
    assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T05:30:00Z"), Some(at("2026-11-01T06:00:00Z")));
    assert_eq!(next("*/30 * * * *", "America/New_York", "2026-11-01T06:00:00Z"), Some(at("2026-11-01T06:30:00Z")));
}

#[test]
fn fixed_times_in_a_spring_forward_gap_fire_after_it() {
    // 01:10 EST; 02:00–03:00 does not happen. Was March 9 at 01:00.
    let ny = "America/New_York";
    assert_eq!(next("0 1,2 * * *", ny, "2026-03-08T06:10:00Z"), Some(at("2026-03-08T07:00:00Z")));
    assert_eq!(next("0 1,2 * * *", ny, "2026-03-08T07:00:00Z"), Some(at("2026-03-09T05:00:00Z")));
    // Two skipped times fire once; a match at the gap's end is the same firing.
    assert_eq!(next("0,30 2-3 * * *", ny, "2026-03-08T06:10:00Z"), Some(at("2026-03-08T07:00:00Z")));
    assert_eq!(next("0,30 2-3 * * *", ny, "2026-03-08T07:00:00Z"), Some(at("2026-03-08T07:30:00Z")));
    // Wildcard expressions skip the gap.
    assert_eq!(next("30 * * * *", ny, "2026-03-08T06:40:00Z"), Some(at("2026-03-08T07:30:00Z")));
    // Lord Howe moves 30 minutes: 02:00–02:30 is skipped on 2026-10-04.
    let lh = "Australia/Lord_Howe";
    assert_eq!(next("0,30 1-2 * * *", lh, "2026-10-03T15:10:00Z"), Some(at("2026-10-03T15:30:00Z")));
    // London: 01:00–02:00 skipped on 2026-03-29; `1-23/2` names 01:00.
    assert_eq!(next("0 1-23/2 * * *", "Europe/London", "2026-03-29T00:30:00Z"), Some(at("2026-03-29T01:00:00Z")));
}

#[test]
fn seconds_nicknames_names_and_steps() {
    assert_eq!(next("*/20 * * * * *", "UTC", "2026-12-01T00:00:00.500Z"), Some(at("2026-12-01T00:00:20Z")));
    assert_eq!(next("@daily", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-02T00:00:00Z")));
    assert_eq!(next("@HOURLY", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-01T01:00:00Z")));
    assert_eq!(next("0 9 * jan-mar mon-fri", "UTC", "2026-12-01T00:00:00Z"), Some(at("2027-01-01T09:00:00Z")));
    // `N/step` runs to the field's end; Sunday is 0 and 7.
    assert_eq!(next("50/5 * * * *", "UTC", "2026-12-01T00:56:00Z"), Some(at("2026-12-01T01:50:00Z")));
    assert_eq!(next("0 0 * * 7", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-06T00:00:00Z")));
    assert_eq!(next("0 0 * * 5-7", "UTC", "2026-12-01T00:00:00Z"), Some(at("2026-12-04T00:00:00Z")));
    // Leap days, years apart.
    assert_eq!(next("0 0 29 2 *", "UTC", "2026-12-01T00:00:00Z"), Some(at("2028-02-29T00:00:00Z")));
}

#[test]
fn refusals_say_what_is_wrong() {
    assert!(refusal("0 0 0 1 1 * 1999").contains("7 fields"), "{}", refusal("0 0 0 1 1 * 1999"));
    assert!(refusal("* * * * * * *").contains("no year field"));
    assert!(refusal("* * * *").contains("4 fields"));
    assert!(refusal("1,,2 * * * *").contains("empty item"));
    assert!(refusal("61 * * * *").contains("outside 0–59"));
    assert!(refusal("0 0 * * 5-1").contains("backwards"));
    assert!(refusal("*/0 * * * *").contains("step"));
    assert!(refusal("0 0 L * *").contains("'L' is not Vixie"));
    assert!(refusal("0 0 ? * *").contains("'?' is not Vixie"));
    assert!(refusal("0 0 * * MON#2").contains("'#' is not Vixie"));
    assert!(refusal("0 0 * * FUN").contains("not a number 0–7 or a name SUN–SAT"));
    assert!(refusal("0 0 30 2 *").contains("never matches"));
    assert!(refusal("0 0 31 4,6,9,11 *").contains("never matches"));
    assert!(refusal("@reboot").contains("nickname"));
    // Restricted weekdays in OR mode make February 30 reachable: its Mondays.
    assert!(CronRule::new("0 0 30 2 1", "UTC").is_ok());
    assert_eq!(CronRule::new("0 9 * * *", "Mars/Olympus").unwrap_err().field(), Some("repeat.tz"));
}

#[test]
fn the_end_of_time_has_no_next_occurrence() {
    assert_eq!(next("* * * * *", "UTC", "9999-12-30T21:59:00Z"), Some(at("9999-12-30T22:00:00Z")));
    assert_eq!(next("* * * * *", "UTC", "9999-12-30T22:00:00Z"), None);
    assert_eq!(next("0 0 1 1 *", "Asia/Shanghai", "9999-06-01T00:00:00Z"), None);
    assert_eq!(CronRule::new("* * * * *", "UTC").unwrap().next_after(Timestamp::from_millis(i64::MAX)), None);
}
