//! The day fields of Spring's and Quartz's cron: which dates a day-of-month and a
//! day-of-week field match, with Quartz's `L` (last), `W` (nearest weekday) and `#`
//! (n-th weekday). Pure date arithmetic; the parsers build these, the module doc of
//! `cron` states the rules.
//!
//! A date matches when it matches both fields; a field that is `*` or `?` is `None`
//! and matches every date. Within a field the items form a union (`1,L`).

use jiff::civil::{Date, Weekday};

/// What the weekday nearest a Sunday at the month's end is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum SundayAtMonthEnd {
    /// None: the Monday after is in the next month, which the rule does not reach
    /// (Spring's `nW`).
    Skipped,
    /// The Friday before (Quartz's `W`, and `LW` in both).
    FridayBefore,
}

/// The day `W` is nearest to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Target {
    /// The day of the month `n` (`15W`).
    Day(u8),
    /// The month's last day less `n` days (`LW` is 0; Quartz's `L-3W`).
    FromLast(u8),
}

/// One item of a day-of-month field.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum MonthDay {
    /// Bits 1–31.
    Days(u64),
    /// `L` (0) and `L-n`: the month's last day less `before` days, if the month has
    /// that day.
    Last { before: u8 },
    /// `15W`, `LW`: the weekday (Monday to Friday) nearest the target, within its month:
    /// a Saturday's is the Friday before (but the 1st's is Monday the 3rd), a Sunday's
    /// the Monday after (at the month's end: see [`SundayAtMonthEnd`]). None in a month
    /// without the target day.
    NearestWeekday { target: Target, sunday_at_end: SundayAtMonthEnd },
}

/// One item of a day-of-week field; weekdays are Sunday = 0 to Saturday = 6.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum WeekDay {
    /// Bits 0–6.
    Days(u8),
    /// `5L`: the month's last such weekday.
    Last(u8),
    /// `5#2`: the month's `n`-th such weekday (none in a month without one).
    Nth { weekday: u8, n: u8 },
}

/// Both day fields.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DayRules {
    /// `None`: `*` or `?`.
    pub(super) month_days: Option<Vec<MonthDay>>,
    /// `None`: `*` or `?`.
    pub(super) week_days: Option<Vec<WeekDay>>,
}

impl DayRules {
    pub(super) fn matches(&self, date: Date) -> bool {
        let month_day = self.month_days.as_ref().is_none_or(|items| items.iter().any(|item| item.matches(date)));
        month_day && self.week_days.as_ref().is_none_or(|items| items.iter().any(|item| item.matches(date)))
    }
}

impl MonthDay {
    fn matches(&self, date: Date) -> bool {
        let (day, length) = (date.day(), date.days_in_month());
        match *self {
            MonthDay::Days(bits) => bits & (1 << day) != 0,
            MonthDay::Last { before } => i16::from(day) == i16::from(length) - i16::from(before),
            MonthDay::NearestWeekday { target, sunday_at_end } => {
                let target_day = match target {
                    Target::Day(n) => i16::from(n),
                    Target::FromLast(before) => i16::from(length) - i16::from(before),
                };
                nearest_weekday(date, target_day, sunday_at_end) == Some(i16::from(day))
            }
        }
    }
}

/// The day of `date`'s month that is the weekday nearest `target`, if any.
fn nearest_weekday(date: Date, target: i16, sunday_at_end: SundayAtMonthEnd) -> Option<i16> {
    let length = i16::from(date.days_in_month());
    if !(1..=length).contains(&target) {
        return None;
    }
    // `target` is a day of this month, so the conversion and the date exist.
    let weekday = date.with().day(i8::try_from(target).ok()?).build().ok()?.weekday();
    match weekday {
        Weekday::Saturday if target == 1 => Some(3),
        Weekday::Saturday => Some(target - 1),
        Weekday::Sunday if target == length => match sunday_at_end {
            SundayAtMonthEnd::Skipped => None,
            SundayAtMonthEnd::FridayBefore => Some(target - 2),
        },
        Weekday::Sunday => Some(target + 1),
        _ => Some(target),
    }
}

impl WeekDay {
    fn matches(&self, date: Date) -> bool {
        let weekday = date.weekday().to_sunday_zero_offset() as u8;
        match *self {
            WeekDay::Days(bits) => bits & (1 << weekday) != 0,
            WeekDay::Last(wanted) => weekday == wanted && date.day() + 7 > date.days_in_month(),
            WeekDay::Nth { weekday: wanted, n } => weekday == wanted && (date.day() - 1) / 7 + 1 == n as i8,
        }
    }
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;

    use super::*;

    fn month_day(item: MonthDay) -> DayRules {
        DayRules { month_days: Some(vec![item]), week_days: None }
    }

    /// The days of 2026-`month` the rules match.
    fn days_in(rules: &DayRules, month: i8) -> Vec<i8> {
        let first = date(2026, month, 1);
        (1..=first.days_in_month()).filter(|d| rules.matches(date(2026, month, *d))).collect()
    }

    #[test]
    fn last_days_count_back_from_the_months_end() {
        assert_eq!(days_in(&month_day(MonthDay::Last { before: 0 }), 2), [28]);
        assert_eq!(days_in(&month_day(MonthDay::Last { before: 3 }), 4), [27]);
        // A month shorter than the offset has no such day.
        assert_eq!(days_in(&month_day(MonthDay::Last { before: 28 }), 2), Vec::<i8>::new());
    }

    #[test]
    fn nearest_weekdays_stay_in_their_month() {
        let nearest = |n, sunday_at_end| month_day(MonthDay::NearestWeekday { target: Target::Day(n), sunday_at_end });
        // 2026-08-01 is a Saturday: the 1st's nearest weekday is Monday the 3rd.
        assert_eq!(days_in(&nearest(1, SundayAtMonthEnd::Skipped), 8), [3]);
        // 2026-08-15 is a Saturday (Friday the 14th), 2026-03-15 a Sunday (Monday the 16th).
        assert_eq!(days_in(&nearest(15, SundayAtMonthEnd::Skipped), 8), [14]);
        assert_eq!(days_in(&nearest(15, SundayAtMonthEnd::Skipped), 3), [16]);
        // 2026-05-31 is a Sunday: Spring fires nowhere that month, Quartz on Friday the 29th.
        assert_eq!(days_in(&nearest(31, SundayAtMonthEnd::Skipped), 5), Vec::<i8>::new());
        assert_eq!(days_in(&nearest(31, SundayAtMonthEnd::FridayBefore), 5), [29]);
        // A month without the 31st has no nearest weekday to it.
        assert_eq!(days_in(&nearest(31, SundayAtMonthEnd::FridayBefore), 4), Vec::<i8>::new());
        // LW: 2026-05-31 is a Sunday, 2026-10-31 a Saturday.
        let last_weekday = month_day(MonthDay::NearestWeekday {
            target: Target::FromLast(0),
            sunday_at_end: SundayAtMonthEnd::FridayBefore,
        });
        assert_eq!(days_in(&last_weekday, 5), [29]);
        assert_eq!(days_in(&last_weekday, 10), [30]);
    }

    #[test]
    fn weekday_items_and_both_fields_together() {
        let week_day = |item| DayRules { month_days: None, week_days: Some(vec![item]) };
        // Fridays of 2026-11: 6, 13, 20, 27.
        assert_eq!(days_in(&week_day(WeekDay::Last(5)), 11), [27]);
        assert_eq!(days_in(&week_day(WeekDay::Nth { weekday: 5, n: 2 }), 11), [13]);
        assert_eq!(days_in(&week_day(WeekDay::Nth { weekday: 5, n: 5 }), 11), Vec::<i8>::new());
        // Both fields: Friday the 13th (2026-02-13, 2026-03-13, 2026-11-13).
        let both =
            DayRules { month_days: Some(vec![MonthDay::Days(1 << 13)]), week_days: Some(vec![WeekDay::Days(1 << 5)]) };
        assert_eq!(days_in(&both, 11), [13]);
        assert_eq!(days_in(&both, 12), Vec::<i8>::new());
    }
}
