//! Spring's cron (`cron_syntax` `spring`): the syntax of Spring Framework's
//! `CronExpression` (`@Scheduled(cron = …)`), as that class parses it. The rules are
//! listed in the module doc of `cron`.

use super::days::{DayRules, MonthDay, SundayAtMonthEnd, Target, WeekDay};
use super::items::{self, Field, Rules, number, refusal};
use super::java::JavaFields;
use super::search::Times;
use super::{MONTH_NAMES, WEEKDAY_NAMES};

const SECOND: Field = Field { name: "second", min: 0, max: 59, star: (0, 59), max_step: None };
const MINUTE: Field = Field { name: "minute", min: 0, max: 59, star: (0, 59), max_step: None };
const HOUR: Field = Field { name: "hour", min: 0, max: 23, star: (0, 23), max_step: None };
const DAY: Field = Field { name: "day-of-month", min: 1, max: 31, star: (1, 31), max_step: None };
const MONTH: Field = Field { name: "month", min: 1, max: 12, star: (1, 12), max_step: None };
/// 0–7, 0 and 7 Sunday; `*` spans Monday (1) to Sunday (7), as `java.time` counts.
const WEEKDAY: Field = Field { name: "day-of-week", min: 0, max: 7, star: (1, 7), max_step: None };

const RULES: Rules = Rules { wrap: false, seven_starts_at_zero: false };
const WEEKDAY_RULES: Rules = Rules { wrap: false, seven_starts_at_zero: true };

/// Spring's macros and the six fields they stand for.
const MACROS: [(&str, &str); 7] = [
    ("@yearly", "0 0 0 1 1 *"),
    ("@annually", "0 0 0 1 1 *"),
    ("@monthly", "0 0 0 1 * *"),
    ("@weekly", "0 0 0 * * 0"),
    ("@daily", "0 0 0 * * *"),
    ("@midnight", "0 0 0 * * *"),
    ("@hourly", "0 0 * * * *"),
];

/// Parses a Spring expression; the error completes "'<expr>' …".
pub(super) fn parse(expr: &str) -> Result<JavaFields, String> {
    let trimmed = expr.trim();
    let expanded =
        MACROS.iter().find(|(name, _)| name.eq_ignore_ascii_case(trimmed)).map_or(trimmed, |(_, fields)| *fields);
    let parts: Vec<&str> = expanded.split_whitespace().collect();
    let [second, minute, hour, day, month, weekday] = parts[..] else {
        let n = parts.len();
        let hint = match n {
            5 => "; put the second first, e.g. '0 0 9 * * MON-FRI' for 09:00 on weekdays",
            7 => "; Spring has no year field (Quartz has: \"cron_syntax\": \"quartz\")",
            _ => "",
        };
        return Err(format!(
            "has {n} field{}: Spring's cron has 6 (second minute hour day-of-month month day-of-week){hint}",
            if n == 1 { "" } else { "s" }
        ));
    };
    let bits = |text: &str, field: &Field, rules: &Rules| -> Result<u64, String> {
        let mut set = 0u64;
        items::parse_list(text, field, rules, &number, &mut |v| set |= 1 << v)?;
        Ok(set)
    };
    let fields = JavaFields {
        times: Times {
            seconds: bits(second, &SECOND, &RULES)?,
            minutes: bits(minute, &MINUTE, &RULES)?,
            hours: bits(hour, &HOUR, &RULES)?,
        },
        months: bits(&with_numbers(month, &MONTH_NAMES, 1), &MONTH, &RULES)?,
        years: None,
        days: DayRules { month_days: month_days(day)?, week_days: week_days(weekday)? },
    };
    if !fields.some_day_exists() {
        return Err("never matches a date (no month it names has such a day)".to_owned());
    }
    Ok(fields)
}

/// Spring reads names by replacing each, anywhere in the field and in any case, with
/// its number: months JAN = 1 … DEC = 12, weekdays MON = 1 … SUN = 7.
fn with_numbers(text: &str, names: &[&str], first: u32) -> String {
    let mut upper = text.to_ascii_uppercase();
    for (i, name) in names.iter().enumerate() {
        upper = upper.replace(name, &(first + i as u32).to_string());
    }
    upper
}

/// The day-of-month field: `?`, `*`, numbers, or items with `L` (`L`, `L-3`, `LW`) or
/// `W` (`15W`), upper case only.
fn month_days(text: &str) -> Result<Option<Vec<MonthDay>>, String> {
    if text == "?" || text == "*" {
        return Ok(None);
    }
    if !text.contains(['L', 'W']) {
        let mut set = 0u64;
        items::parse_list(text, &DAY, &RULES, &number, &mut |v| set |= 1 << v)?;
        return Ok(Some(vec![MonthDay::Days(set)]));
    }
    let refuse = |why: &str| refusal(text, &DAY, why);
    let mut list = Vec::new();
    for item in text.split(',') {
        let parsed = if item == "L" {
            MonthDay::Last { before: 0 }
        } else if item == "LW" {
            MonthDay::NearestWeekday { target: Target::FromLast(0), sunday_at_end: SundayAtMonthEnd::FridayBefore }
        } else if let Some(before) = item.strip_prefix("L-") {
            let before = number(before).ok().filter(|n| (1..=30).contains(n)).ok_or_else(|| {
                refuse(&format!("'{item}' is not L-n with n from 1 to 30 (the n-th day before the last)"))
            })?;
            MonthDay::Last { before: before as u8 }
        } else if let Some(day) = item.strip_suffix('W') {
            let day = number(day).ok().filter(|n| (1..=31).contains(n)).ok_or_else(|| {
                refuse(&format!("'{item}' is not nW with n from 1 to 31 (the weekday nearest the n-th)"))
            })?;
            MonthDay::NearestWeekday { target: Target::Day(day as u8), sunday_at_end: SundayAtMonthEnd::Skipped }
        } else if item.contains(['L', 'W']) {
            return Err(refuse(&format!("'{item}' is not L, L-n, LW or nW")));
        } else {
            let mut set = 0u64;
            items::parse_list(item, &DAY, &RULES, &number, &mut |v| set |= 1 << v)
                .map_err(|_| refuse(&format!("'{item}' is not a day 1–31, a range, a step, L, L-n, LW or nW")))?;
            MonthDay::Days(set)
        };
        list.push(parsed);
    }
    Ok(Some(list))
}

/// The day-of-week field: `?`, `*`, numbers 0–7 (0 and 7 Sunday) or names, or items
/// with `L` (`5L`, `FRIL`: the month's last Friday) or `#` (`MON#1`).
fn week_days(text: &str) -> Result<Option<Vec<WeekDay>>, String> {
    let numbered = with_numbers(text, &WEEKDAY_NAMES_FROM_MONDAY, 1);
    if numbered == "?" || numbered == "*" {
        return Ok(None);
    }
    let weekday_bits = |item: &str| -> Result<u8, String> {
        let mut set = 0u8;
        items::parse_list(item, &WEEKDAY, &WEEKDAY_RULES, &number, &mut |v| set |= 1 << (v % 7))?;
        Ok(set)
    };
    if !numbered.contains(['L', '#']) {
        return weekday_bits(&numbered)
            .map(|set| Some(vec![WeekDay::Days(set)]))
            .map_err(|e| with_text(e, &numbered, text));
    }
    let refuse = |why: &str| refusal(text, &WEEKDAY, why);
    let one_weekday = |day: &str, item: &str| {
        number(day)
            .ok()
            .filter(|n| *n <= 7)
            .map(|n| (n % 7) as u8)
            .ok_or_else(|| refuse(&format!("'{item}' needs a weekday 0–7 or SUN–SAT before its L or #")))
    };
    let mut list = Vec::new();
    for item in numbered.split(',') {
        let parsed = if let Some(day) = item.strip_suffix('L') {
            WeekDay::Last(one_weekday(day, item)?)
        } else if let Some((day, n)) = item.split_once('#') {
            let n = number(n)
                .ok()
                .filter(|n| (1..=5).contains(n))
                .ok_or_else(|| refuse(&format!("'{item}' needs 1–5 after # (the n-th such weekday of the month)")))?;
            WeekDay::Nth { weekday: one_weekday(day, item)?, n: n as u8 }
        } else if item.contains(['L', '#']) {
            return Err(refuse(&format!("'{item}' is not dL or d#n (e.g. 5L, FRI#2)")));
        } else {
            WeekDay::Days(weekday_bits(item).map_err(|e| with_text(e, &numbered, text))?)
        };
        list.push(parsed);
    }
    Ok(Some(list))
}

/// Weekday names in Spring's numbering, Monday first.
const WEEKDAY_NAMES_FROM_MONDAY: [&str; 7] = {
    let [sun, mon, tue, wed, thu, fri, sat] = WEEKDAY_NAMES;
    [mon, tue, wed, thu, fri, sat, sun]
};

/// An error about the field as numbered, shown as the user wrote it.
fn with_text(error: String, numbered: &str, text: &str) -> String {
    error.replacen(&format!("'{numbered}'"), &format!("'{text}'"), 1)
}
