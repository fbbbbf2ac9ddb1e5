//! A parsed Spring or Quartz expression: its times of day, months, Quartz's years and
//! the two day fields, and the check that some date matches at all.

use jiff::civil::Date;

use super::days::DayRules;
use super::search::{Calendar, Times};

/// The first year Quartz's year field takes, and the last.
pub(super) const FIRST_YEAR: u32 = 1970;
pub(super) const LAST_YEAR: u32 = 2199;

/// Years `FIRST_YEAR..=LAST_YEAR` as a bit set.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Years([u64; 4]);

impl Years {
    pub(super) fn none() -> Years {
        Years([0; 4])
    }

    pub(super) fn insert(&mut self, year: u32) {
        debug_assert!((FIRST_YEAR..=LAST_YEAR).contains(&year), "{year} is outside Quartz's years");
        let bit = (year - FIRST_YEAR) as usize;
        self.0[bit / 64] |= 1 << (bit % 64);
    }

    fn contains(&self, year: i16) -> bool {
        let Some(bit) = u32::try_from(year).ok().and_then(|year| year.checked_sub(FIRST_YEAR)) else { return false };
        let bit = bit as usize;
        bit / 64 < self.0.len() && self.0[bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// A parsed Spring or Quartz expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct JavaFields {
    pub(super) times: Times,
    /// Bits 1–12.
    pub(super) months: u64,
    /// Quartz's year field; `None`: any year.
    pub(super) years: Option<Years>,
    pub(super) days: DayRules,
}

impl Calendar for JavaFields {
    fn times(&self) -> &Times {
        &self.times
    }

    fn month_matches(&self, year: i16, month: i8) -> bool {
        self.months & (1 << month) != 0 && self.years.as_ref().is_none_or(|years| years.contains(year))
    }

    fn day_matches(&self, date: Date) -> bool {
        self.days.matches(date)
    }
}

impl JavaFields {
    /// Whether some date matches, the year field aside. A month's days match by their
    /// number, their weekday and the month's length; 2001–2028 holds every month of
    /// every length starting on every weekday, so if no date of theirs matches, none
    /// ever does.
    pub(super) fn some_day_exists(&self) -> bool {
        (2001..=2028i16).any(|year| {
            (1..=12i8).any(|month| {
                self.months & (1 << month) != 0
                    && Date::new(year, month, 1).is_ok_and(|first| {
                        (1..=first.days_in_month())
                            .any(|day| first.with().day(day).build().is_ok_and(|d| self.days.matches(d)))
                    })
            })
        })
    }
}
