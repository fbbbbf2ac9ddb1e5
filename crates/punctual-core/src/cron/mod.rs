//! Cron rules in an IANA time zone, in one of three syntaxes ([`CronSyntax`]). Pure:
//! no clock. Our own code, not a crate's, because these semantics are the product's
//! promise (`docs/state-machine.md`, "Cron expressions").
//!
//! **Vixie** (`vixie`, the default; [`vixie`]): 5 fields, or 6 with seconds first, or
//! a nickname; a day matches both day fields when one starts with `*`, either
//! otherwise; Debian cron's daylight-saving rules: an expression with no time field
//! starting with `*` is *fixed*: a time that happens twice is due at its first
//! instant, a time the clocks skip is due once at the first instant after the gap;
//! other (*wildcard*) expressions are due at every instant whose wall clock matches.
//!
//! **Spring** (`spring`; [`spring`]), as Spring Framework's `CronExpression` 6.2:
//! - 6 fields `second minute hour day-of-month month day-of-week`, or a macro
//!   (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`).
//! - Lists of `*`, `N`, `N-M` (low to high; a backwards range is refused), each with
//!   an optional `/S` (S ≥ 1; `N/S` runs to the field's end).
//! - Months 1–12 or JAN–DEC; weekdays 0–7 (0 and 7 Sunday) or MON–SUN, names in any
//!   case; a range starting at 7 (`SUN-TUE`) starts at Sunday as 0. `*/S` in the
//!   day-of-week steps through 1–7 (Monday first): `*/2` is MON, WED, FRI, SUN.
//! - `?` (a whole day field) is `*`. A day must match **both** day fields:
//!   `0 0 0 13 * FRI` is every Friday the 13th.
//! - Day-of-month items: `L` (last day), `L-n` (n days before it, n 1–30), `LW` (the
//!   last weekday), `nW` (the weekday nearest day n: a Saturday's is the Friday before,
//!   a Saturday 1st's Monday the 3rd, a Sunday's the Monday after; a Sunday that is the
//!   month's last day has none, nor has a month without day n), in upper case.
//! - Day-of-week items: `dL` (the month's last weekday d), `d#n` (its n-th, n 1–5).
//! - Daylight saving: every instant whose wall clock matches is due, so a time that
//!   happens twice is due twice and a time the clocks skip is not due at all.
//!
//! **Quartz** (`quartz`; [`quartz`]), as Quartz Scheduler's `CronExpression` 2.5:
//! - 6 fields as Spring's, or 7 with the year (1970–2199) last; no macros; any case.
//! - Lists of `*`, `N`, `N-M`, `/S`; a range may wrap past the field's end (`22-2` is
//!   22, 23, 0, 1, 2; `FRI-MON`); the step of `*/S` and `N/S` is at most the field's
//!   largest value (59, 23, 31, 12, 7).
//! - Weekdays 1–7 with **Sunday = 1**, or SUN–SAT; months 1–12 or JAN–DEC. A step
//!   after a name (`JAN-JUN/2`), which Quartz ignores, is refused.
//! - Exactly one of the day fields is `?` and the other decides the day.
//! - Day-of-month items as Spring's, and `L-nW` (n 0–30); `W` takes one day, and the
//!   weekday nearest a Sunday that is the month's last day is the Friday before.
//! - Day-of-week: `L` alone is Saturday; `dL` and `d#n` (n 1–5) stand alone, not in a
//!   list.
//! - Daylight saving: the search runs on wall-clock time from the wall clock of the
//!   start; a time that happens twice is due at its later instant only (Quartz reads
//!   it as standard time: in the repeated hour no earlier instant fires at all), and a
//!   time the clocks skip is not due.
//!
//! Occurrences are whole seconds and run to the end of time (9999-12-30T22:00:00.999Z).
//! Expressions that match no date are refused. Where the libraries stray from their own
//! rules punctual keeps to the rules (`docs/state-machine.md`, "Where punctual and the
//! libraries part"): they stop searching (Spring after a few hundred steps, Quartz 100
//! years after the current one); around changes of the clock of less than an hour (Lord
//! Howe's) both step by whole real hours and skip or land on other times; Quartz's `W`
//! keeps the time of day its search had reached on an earlier day of the month, and
//! misses a Monday moved past a weekend when its search starts on that weekend.

mod days;
mod items;
mod java;
mod quartz;
mod search;
mod spring;
mod vixie;

use std::fmt;
use std::str::FromStr;

use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::time::Timestamp;

/// Month names, January first.
const MONTH_NAMES: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
/// Weekday names, Sunday first.
const WEEKDAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Which cron dialect an expression is written in (`repeat.cron_syntax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CronSyntax {
    /// Vixie cron with Debian's daylight-saving rules: 5 or 6 fields.
    #[default]
    Vixie,
    /// Spring Framework's `CronExpression`: 6 fields, `?`, `L`, `W`, `#`.
    Spring,
    /// Quartz Scheduler's `CronExpression`: 6 or 7 fields (year), Sunday = 1.
    Quartz,
}

impl CronSyntax {
    /// Every syntax, the default first.
    pub const ALL: [CronSyntax; 3] = [CronSyntax::Vixie, CronSyntax::Spring, CronSyntax::Quartz];

    /// The name in the API (`vixie`, `spring`, `quartz`).
    pub fn as_str(self) -> &'static str {
        match self {
            CronSyntax::Vixie => "vixie",
            CronSyntax::Spring => "spring",
            CronSyntax::Quartz => "quartz",
        }
    }
}

impl fmt::Display for CronSyntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CronSyntax {
    type Err = Error;
    fn from_str(text: &str) -> Result<CronSyntax> {
        CronSyntax::ALL.into_iter().find(|syntax| syntax.as_str() == text).ok_or_else(|| {
            Error::invalid("repeat.cron_syntax", format!("'{text}' is not a cron syntax: use vixie, spring or quartz"))
        })
    }
}

/// A parsed cron expression with its syntax and zone.
#[derive(Clone)]
pub struct CronRule {
    expr: String,
    syntax: CronSyntax,
    tz_name: String,
    tz: TimeZone,
    schedule: Schedule,
}

/// The parsed fields, by syntax.
#[derive(Clone)]
enum Schedule {
    Vixie(vixie::Fields),
    Spring(java::JavaFields),
    Quartz(java::JavaFields),
}

impl fmt::Debug for CronRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.syntax {
            CronSyntax::Vixie => write!(f, "CronRule({:?} in {})", self.expr, self.tz_name),
            syntax => write!(f, "CronRule({syntax} {:?} in {})", self.expr, self.tz_name),
        }
    }
}

impl PartialEq for CronRule {
    fn eq(&self, other: &CronRule) -> bool {
        self.expr == other.expr && self.syntax == other.syntax && self.tz_name == other.tz_name
    }
}

impl CronRule {
    /// Parses a Vixie expression: 5 fields (`min hour day month weekday`), 6 (seconds
    /// first), or a nickname (`@daily`), in the IANA zone `tz` (e.g. `Asia/Shanghai`;
    /// `UTC`). Errors name `repeat.cron` or `repeat.tz`.
    pub fn new(expr: &str, tz: &str) -> Result<CronRule> {
        CronRule::with_syntax(expr, tz, CronSyntax::Vixie)
    }

    /// Parses an expression written in `syntax` (see the module doc for each one's
    /// rules), in the IANA zone `tz`. Errors name `repeat.cron` or `repeat.tz`.
    pub fn with_syntax(expr: &str, tz: &str, syntax: CronSyntax) -> Result<CronRule> {
        let parsed = match syntax {
            CronSyntax::Vixie => vixie::Fields::parse(expr).map(Schedule::Vixie),
            CronSyntax::Spring => spring::parse(expr).map(Schedule::Spring),
            CronSyntax::Quartz => quartz::parse(expr).map(Schedule::Quartz),
        };
        let schedule = parsed.map_err(|reason| Error::invalid("repeat.cron", format!("'{expr}' {reason}")))?;
        let zone = TimeZone::get(tz).map_err(|_| {
            Error::invalid("repeat.tz", format!("'{tz}' is not an IANA time zone such as Asia/Shanghai or UTC"))
        })?;
        Ok(CronRule { expr: expr.trim().to_owned(), syntax, tz_name: tz.to_owned(), tz: zone, schedule })
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }
    /// The syntax it is written in.
    pub fn syntax(&self) -> CronSyntax {
        self.syntax
    }
    /// The zone name as given.
    pub fn tz(&self) -> &str {
        &self.tz_name
    }

    /// The first due instant strictly after `t` (see the module doc for the
    /// daylight-saving rules of each syntax), `None` when there is none before the end
    /// of time.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        match &self.schedule {
            Schedule::Vixie(fields) => search::next_instant(fields, &self.tz, t, fields.fixed_time),
            Schedule::Spring(fields) => search::next_instant(fields, &self.tz, t, false),
            Schedule::Quartz(fields) => search::next_by_wall_clock(fields, &self.tz, t),
        }
    }
}

#[cfg(test)]
mod java_tests;
#[cfg(test)]
mod tests;
