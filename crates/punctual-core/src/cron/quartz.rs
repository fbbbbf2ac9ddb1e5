//! Quartz's cron (`cron_syntax` `quartz`): the syntax of Quartz Scheduler's
//! `CronExpression`, with its optional seventh field, the year. The rules are listed
//! in the module doc of `cron`; where Quartz's own parser accepts something it then
//! ignores (a step after a name, `W` after a range), punctual refuses it.

use super::days::{DayRules, MonthDay, SundayAtMonthEnd, Target, WeekDay};
use super::items::{self, Field, Rules, number, refusal};
use super::java::{FIRST_YEAR, JavaFields, LAST_YEAR, Years};
use super::search::Times;
use super::{MONTH_NAMES, WEEKDAY_NAMES};

const SECOND: Field = Field { name: "second", min: 0, max: 59, star: (0, 59), max_step: Some(59) };
const MINUTE: Field = Field { name: "minute", min: 0, max: 59, star: (0, 59), max_step: Some(59) };
const HOUR: Field = Field { name: "hour", min: 0, max: 23, star: (0, 23), max_step: Some(23) };
const DAY: Field = Field { name: "day-of-month", min: 1, max: 31, star: (1, 31), max_step: Some(31) };
const MONTH: Field = Field { name: "month", min: 1, max: 12, star: (1, 12), max_step: Some(12) };
/// 1–7, Sunday = 1.
const WEEKDAY: Field = Field { name: "day-of-week", min: 1, max: 7, star: (1, 7), max_step: Some(7) };
const YEAR: Field =
    Field { name: "year", min: FIRST_YEAR, max: LAST_YEAR, star: (FIRST_YEAR, LAST_YEAR), max_step: None };

const RULES: Rules = Rules { wrap: true, seven_starts_at_zero: false };
const YEAR_RULES: Rules = Rules { wrap: false, seven_starts_at_zero: false };

const NEEDS_ONE_QUESTION_MARK: &str = "Quartz's cron needs '?' in exactly one of day-of-month and day-of-week \
     (e.g. '0 0 9 ? * MON-FRI' or '0 0 18 L * ?')";

/// Parses a Quartz expression; the error completes "'<expr>' …".
pub(super) fn parse(expr: &str) -> Result<JavaFields, String> {
    let upper = expr.trim().to_ascii_uppercase();
    let parts: Vec<&str> = upper.split_whitespace().collect();
    let (second, minute, hour, day, month, weekday, year) = match parts[..] {
        [s, m, h, d, mo, w] => (s, m, h, d, mo, w, None),
        [s, m, h, d, mo, w, y] => (s, m, h, d, mo, w, Some(y)),
        _ => {
            let n = parts.len();
            return Err(format!(
                "has {n} field{}: Quartz's cron has 6 (second minute hour day-of-month month day-of-week) or 7 \
                 (the year last){}",
                if n == 1 { "" } else { "s" },
                if n == 5 { "; put the second first, e.g. '0 0 9 ? * MON-FRI' for 09:00 on weekdays" } else { "" }
            ));
        }
    };
    let bits = |text: &str, field: &Field, value: &dyn Fn(&str) -> Result<u32, String>| -> Result<u64, String> {
        let mut set = 0u64;
        items::parse_list(text, field, &RULES, value, &mut |v| set |= 1 << v)?;
        Ok(set)
    };
    let month_value = |text: &str| named(text, &MONTH_NAMES, 1);
    let fields = JavaFields {
        times: Times {
            seconds: bits(second, &SECOND, &number)?,
            minutes: bits(minute, &MINUTE, &number)?,
            hours: bits(hour, &HOUR, &number)?,
        },
        months: bits(no_step_after_name(month, &MONTH)?, &MONTH, &month_value)?,
        years: years(year)?,
        days: match (day == "?", weekday == "?") {
            (true, false) => DayRules { month_days: None, week_days: week_days(weekday)? },
            (false, true) => DayRules { month_days: month_days(day)?, week_days: None },
            _ => return Err(NEEDS_ONE_QUESTION_MARK.to_owned()),
        },
    };
    if !fields.some_day_exists() {
        return Err("never matches a date (no month it names has such a day)".to_owned());
    }
    Ok(fields)
}

/// A number, or one of `names` (three letters) counted from `first`.
fn named(text: &str, names: &[&str], first: u32) -> Result<u32, String> {
    match names.iter().position(|name| *name == text) {
        Some(index) => Ok(first + index as u32),
        None => number(text)
            .map_err(|_| format!("'{text}' is not a number or a name {}–{}", names[0], names[names.len() - 1])),
    }
}

/// Quartz ignores a step after a name (`JAN-MAR/2` is `JAN-MAR`, `MON/2` is `MON`):
/// refused here, with the numbers to write instead.
fn no_step_after_name<'t>(text: &'t str, field: &Field) -> Result<&'t str, String> {
    let step_after_name = text
        .split(',')
        .any(|item| item.split_once('/').is_some_and(|(range, _)| range.contains(|c: char| c.is_ascii_alphabetic())));
    if step_after_name {
        Err(refusal(
            text,
            field,
            "Quartz ignores a step after a name: write the range with numbers (JAN-JUN/2 as 1-6/2)",
        ))
    } else {
        Ok(text)
    }
}

/// The year field, 1970–2199 (Quartz's documented span); `*`: any year.
fn years(text: Option<&str>) -> Result<Option<Years>, String> {
    let Some(text) = text.filter(|text| *text != "*") else { return Ok(None) };
    let mut set = Years::none();
    items::parse_list(text, &YEAR, &YEAR_RULES, &number, &mut |v| set.insert(v))?;
    Ok(Some(set))
}

/// The day-of-month field (not `?`): `*`, numbers, ranges that may wrap, steps, and
/// items `L`, `L-n` (n up to 30), `LW`, `L-nW`, `nW`.
fn month_days(text: &str) -> Result<Option<Vec<MonthDay>>, String> {
    if text == "*" {
        return Ok(None);
    }
    let refuse = |why: &str| refusal(text, &DAY, why);
    let nearest = |target| MonthDay::NearestWeekday { target, sunday_at_end: SundayAtMonthEnd::FridayBefore };
    let mut list = Vec::new();
    let mut numbers = 0u64;
    for item in text.split(',') {
        if let Some(rest) = item.strip_prefix('L') {
            let (offset, weekday) = match rest.strip_suffix('W') {
                Some(offset) => (offset, true),
                None => (rest, false),
            };
            let before = match offset.strip_prefix('-') {
                None if offset.is_empty() => 0,
                Some(n) => number(n).ok().filter(|n| *n <= 30).ok_or_else(|| {
                    refuse(&format!("'{item}' is not L-n with n from 0 to 30 (the n-th day before the last)"))
                })? as u8,
                _ => return Err(refuse(&format!("'{item}' is not L, L-n, LW or L-nW"))),
            };
            list.push(if weekday { nearest(Target::FromLast(before)) } else { MonthDay::Last { before } });
        } else if let Some(day) = item.strip_suffix('W') {
            let day = number(day).ok().filter(|n| (1..=31).contains(n)).ok_or_else(|| {
                refuse(&format!("'{item}' is not nW with one day n from 1 to 31 (the weekday nearest the n-th)"))
            })?;
            list.push(nearest(Target::Day(day as u8)));
        } else {
            items::parse_list(item, &DAY, &RULES, &number, &mut |v| numbers |= 1 << v)
                .map_err(|_| refuse(&format!("'{item}' is not a day 1–31, a range, a step, L, L-n, LW or nW")))?;
        }
    }
    if numbers != 0 {
        list.push(MonthDay::Days(numbers));
    }
    Ok(Some(list))
}

/// The day-of-week field (not `?`): 1–7 (Sunday = 1) or SUN–SAT, ranges that may wrap
/// (FRI-MON), steps; or alone: `L` (Saturday), `dL` (the month's last such weekday),
/// `d#n` (its n-th, n 1–5).
fn week_days(text: &str) -> Result<Option<Vec<WeekDay>>, String> {
    if text == "*" {
        return Ok(None);
    }
    let refuse = |why: &str| refusal(text, &WEEKDAY, why);
    let weekday = |day: &str| named(day, &WEEKDAY_NAMES, 1).ok().filter(|n| (1..=7).contains(n)).map(|n| (n - 1) as u8);
    if text.contains(['L', '#']) && text != "L" {
        if text.contains(',') {
            return Err(refuse("Quartz takes L or # in a day-of-week alone, not in a list"));
        }
        let item = if let Some(day) = text.strip_suffix('L') {
            weekday(day).map(WeekDay::Last)
        } else if let Some((day, n)) = text.split_once('#') {
            let n = number(n)
                .ok()
                .filter(|n| (1..=5).contains(n))
                .ok_or_else(|| refuse("needs 1–5 after # (the n-th such weekday of the month)"))?;
            weekday(day).map(|weekday| WeekDay::Nth { weekday, n: n as u8 })
        } else {
            None
        };
        return item
            .map(|item| Some(vec![item]))
            .ok_or_else(|| refuse("write dL or d#n with a weekday 1–7 (Sunday = 1) or SUN–SAT, e.g. 6L, FRI#3"));
    }
    // `L` alone is the last day of the week: Saturday.
    let list = if text == "L" { "7" } else { text };
    let mut set = 0u8;
    let list = no_step_after_name(list, &WEEKDAY)?;
    items::parse_list(list, &WEEKDAY, &RULES, &|day| named(day, &WEEKDAY_NAMES, 1), &mut |v| set |= 1 << (v - 1))?;
    Ok(Some(vec![WeekDay::Days(set)]))
}
