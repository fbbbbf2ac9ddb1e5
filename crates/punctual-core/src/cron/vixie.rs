//! Vixie cron's syntax and day rule (`cron_syntax` `vixie`, the default); Debian
//! cron's daylight-saving rules apply to it (see the module doc of `cron`).
//!
//! - **Syntax**: 5 fields (`minute hour day month weekday`) or 6 (`second` first), or
//!   a nickname (`@daily` …). Each field is a list of `*`, `N` or `N-M`, each with an
//!   optional `/step`; `N/step` is `N-max/step`. Months and weekdays take names.
//! - **Days**: when the day-of-month or the day-of-week field starts with `*`, a day
//!   must match both; when both are restricted otherwise, either.
//! - **Fixed or wildcard**: an expression is *wildcard* when one of its time fields
//!   (second, minute, hour) starts with `*`, *fixed* otherwise.

use jiff::civil::Date;

use super::search::{Calendar, Times};

/// The matching values of each field, as bit sets (bit `n` set: value `n` matches).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fields {
    times: Times,
    /// Bits 1–31.
    days: u64,
    /// Bits 1–12.
    months: u64,
    /// Bits 0–6, Sunday = 0.
    weekdays: u64,
    /// Vixie's rule: a day must match both day fields (one of them starts with `*`),
    /// rather than either.
    days_and_weekdays: bool,
    /// Debian cron's rule: no time field starts with `*`, so the expression names
    /// particular times of day, which daylight-saving changes must neither repeat nor
    /// drop.
    pub(super) fixed_time: bool,
}

/// How one field is written and what it may hold.
struct FieldKind {
    name: &'static str,
    min: u32,
    max: u32,
    /// Three-letter names for `min`, `min + 1`, … (months, weekdays).
    names: &'static [&'static str],
}

const SECOND: FieldKind = FieldKind { name: "second", min: 0, max: 59, names: &[] };
const MINUTE: FieldKind = FieldKind { name: "minute", min: 0, max: 59, names: &[] };
const HOUR: FieldKind = FieldKind { name: "hour", min: 0, max: 23, names: &[] };
const DAY: FieldKind = FieldKind { name: "day-of-month", min: 1, max: 31, names: &[] };
const MONTH: FieldKind = FieldKind { name: "month", min: 1, max: 12, names: &super::MONTH_NAMES };
/// 0–7: both 0 and 7 are Sunday.
const WEEKDAY: FieldKind = FieldKind { name: "day-of-week", min: 0, max: 7, names: &super::WEEKDAY_NAMES };

/// The nicknames Vixie cron accepts (but `@reboot`), and what they stand for.
const NICKNAMES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

impl Calendar for Fields {
    fn times(&self) -> &Times {
        &self.times
    }

    fn month_matches(&self, _year: i16, month: i8) -> bool {
        self.months & (1 << month) != 0
    }

    fn day_matches(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.days_and_weekdays { day && weekday } else { day || weekday }
    }
}

impl Fields {
    /// Parses the expression; the error completes "'<expr>' …".
    pub(super) fn parse(expr: &str) -> Result<Fields, String> {
        let trimmed = expr.trim();
        let expanded = if trimmed.starts_with('@') {
            let nickname = NICKNAMES.iter().find(|(name, _)| name.eq_ignore_ascii_case(trimmed));
            nickname.map(|(_, fields)| *fields).ok_or(
                "is not a cron nickname: use @yearly, @monthly, @weekly, @daily or @hourly (@reboot has no time)",
            )?
        } else {
            trimmed
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match parts.len() {
            5 => ("0", &parts[..]),
            6 => (parts[0], &parts[1..]),
            n => {
                return Err(format!(
                    "has {n} field{}: a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 \
                     (second first); there is no year field (Quartz's has one: \"cron_syntax\": \"quartz\")",
                    if n == 1 { "" } else { "s" }
                ));
            }
        };
        let [minute, hour, day, month, weekday] = [rest[0], rest[1], rest[2], rest[3], rest[4]];
        let mut weekdays = parse_field(weekday, &WEEKDAY)?;
        // 7 is Sunday too.
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        let fields = Fields {
            times: Times {
                seconds: parse_field(second, &SECOND)?,
                minutes: parse_field(minute, &MINUTE)?,
                hours: parse_field(hour, &HOUR)?,
            },
            days: parse_field(day, &DAY)?,
            months: parse_field(month, &MONTH)?,
            weekdays,
            days_and_weekdays: day.starts_with('*') || weekday.starts_with('*'),
            fixed_time: ![second, minute, hour].iter().any(|field| field.starts_with('*')),
        };
        if !fields.some_day_exists() {
            return Err("never matches a date (no month it names has such a day)".to_owned());
        }
        Ok(fields)
    }

    /// Whether some date matches. Every date falls on every weekday within 400 years,
    /// so only the day-of-month and month fields can rule every date out.
    fn some_day_exists(&self) -> bool {
        let weekdays_alone = !self.days_and_weekdays && self.weekdays != 0;
        // The longest each month can be (February: leap years).
        const LONGEST: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        (1..=12u32).any(|month| {
            self.months & (1 << month) != 0
                && (weekdays_alone || (1..=LONGEST[month as usize - 1]).any(|day| self.days & (1 << day) != 0))
        })
    }
}

/// Parses one field into a bit set of its values; the error completes "'<expr>' …".
fn parse_field(text: &str, kind: &FieldKind) -> Result<u64, String> {
    let mut set = 0u64;
    for item in text.split(',') {
        let refuse = |why: &str| format!("has '{text}' in the {} field: {why}", kind.name);
        if item.is_empty() {
            return Err(refuse("an empty item in the list"));
        }
        if let Some(symbol) = item.chars().find(|c| matches!(c, '?' | '#')) {
            return Err(refuse(&quartz(symbol)));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|step| *step >= 1)
                    .ok_or_else(|| refuse(&format!("'{step}' is not a step: use a whole number of at least 1")))?;
                (range, Some(step))
            }
            None => (item, None),
        };
        let (low, high) = if range == "*" {
            (kind.min, kind.max)
        } else if let Some((low, high)) = range.split_once('-') {
            let (low, high) = (value(low, kind).map_err(|e| refuse(&e))?, value(high, kind).map_err(|e| refuse(&e))?);
            if low > high {
                return Err(refuse(&format!(
                    "the range {range} runs backwards: write it from low to high{}",
                    if kind.max == 7 { " (Friday to Sunday is 5-7)" } else { "" }
                )));
            }
            (low, high)
        } else {
            let single = value(range, kind).map_err(|e| refuse(&e))?;
            // `N/step` runs from N to the field's end, as `*/step` from its start.
            (single, if step.is_some() { kind.max } else { single })
        };
        for v in (low..=high).step_by(step.unwrap_or(1) as usize) {
            set |= 1 << v;
        }
    }
    Ok(set)
}

fn quartz(symbol: char) -> String {
    format!(
        "'{symbol}' is not Vixie cron syntax (use *, numbers, names, ranges N-M, lists and steps /N; for Spring's \
         or Quartz's cron give \"cron_syntax\": \"spring\" or \"quartz\")"
    )
}

/// One value of a field: a number in range, or a name where the field has them.
fn value(text: &str, kind: &FieldKind) -> Result<u32, String> {
    let named = kind.names.iter().position(|name| name.eq_ignore_ascii_case(text));
    let n = match (named, text.parse::<u32>()) {
        (Some(index), _) => kind.min + index as u32,
        (None, Ok(n)) => n,
        (None, Err(_)) => {
            // Quartz's last day (`L`, `5L`) and nearest weekday (`15W`).
            if let Some(symbol) = text.chars().find(|c| matches!(c, 'L' | 'l' | 'W' | 'w'))
                && text.chars().all(|c| c.is_ascii_digit() || matches!(c, 'L' | 'l' | 'W' | 'w'))
            {
                return Err(quartz(symbol.to_ascii_uppercase()));
            }
            let names = match kind.names {
                [] => String::new(),
                names => format!(" or a name {}–{}", names[0], names[names.len() - 1]),
            };
            return Err(format!("'{text}' is not a number {}–{}{names}", kind.min, kind.max));
        }
    };
    if !(kind.min..=kind.max).contains(&n) {
        return Err(format!("{n} is outside {}–{}", kind.min, kind.max));
    }
    Ok(n)
}
