//! The arguments of `punctual calendar ls|get|set|rm` and their help; `calendar` (the
//! crate's module) runs them.

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, Subcommand};
use serde_json::Value;

use super::{ClientArgs, parse_json_file};

/// `punctual calendar …`.
#[derive(Debug, Args)]
pub(crate) struct CalendarArgs {
    #[command(subcommand)]
    pub(crate) command: CalendarCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CalendarCommand {
    /// List the calendars: zone, the years their holidays are entered for, notices
    #[command(after_help = LS_HELP)]
    Ls(CalendarLsArgs),
    /// Show a calendar: hours per weekday, holidays, extra working days
    #[command(after_help = GET_HELP)]
    Get(CalendarNameArgs),
    /// Create or replace a calendar from a JSON file (and an .ics file of holidays)
    #[command(after_help = SET_HELP)]
    Set(CalendarSetArgs),
    /// Remove a calendar
    #[command(after_help = RM_HELP)]
    Rm(CalendarRmArgs),
}

/// `punctual calendar --help`.
pub(crate) const HELP: &str = "\
A calendar says when a business counts time: a zone, working hours per weekday, holidays
and extra working days. Tasks given \"calendar\" count their delay in its working time.

Examples:
  punctual calendar set cn-office --file cn-office.json --holidays-ics cn-holidays.ics
  punctual calendar ls
  punctual calendar get cn-office
  punctual calendar rm cn-office";

const LS_HELP: &str = "\
Examples:
  punctual calendar ls
  punctual calendar ls --json";

const GET_HELP: &str = "\
Examples:
  punctual calendar get cn-office
  punctual calendar get cn-office --json";

const RM_HELP: &str = "\
Tasks already scheduled keep their due times.

Examples:
  punctual calendar rm cn-office
  punctual calendar rm cn-office --if-version 3";

const SET_HELP: &str = "\
The file holds the calendar as PUT /v1/calendars/NAME takes it:

  {\"tz\": \"Asia/Shanghai\",
   \"hours\": {\"mon\": [\"09:00-12:00\", \"13:30-18:00\"], \"tue\": [\"09:00-12:00\", \"13:30-18:00\"]},
   \"holidays\": [\"2026-10-01/2026-10-07\", \"2026-06-19\"],
   \"workdays\": [\"2026-09-27\", {\"date\": \"2026-10-10\", \"as\": \"fri\"}]}

Weekdays left out of hours are closed; holidays are dates or inclusive ranges; workdays
are extra working dates (调休), on the hours of the weekday they stand in for.

Examples:
  punctual calendar set cn-office --file cn-office.json
  punctual calendar set cn-office --file cn-office.json --holidays-ics cn-holidays-2027.ics
  punctual calendar set cn-office --file cn-office.json --if-version 3";

/// `punctual calendar ls`.
#[derive(Debug, Args)]
pub(crate) struct CalendarLsArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// One calendar.
#[derive(Debug, Args)]
pub(crate) struct CalendarNameArgs {
    /// The calendar (e.g. cn-office)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual calendar set NAME --file FILE`.
#[derive(Debug, Args)]
pub(crate) struct CalendarSetArgs {
    /// The calendar (e.g. cn-office)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) name: String,
    /// The calendar as a JSON file, or - to read it from standard input
    #[arg(long, value_name = "FILE", value_parser = parse_calendar_file)]
    pub(crate) file: Value,
    /// An iCalendar file whose all-day events are added to the holidays
    #[arg(long, value_name = "FILE")]
    pub(crate) holidays_ics: Option<std::path::PathBuf>,
    /// Only if the calendar is still at this version (0: only if it does not exist)
    #[arg(long, value_name = "N")]
    pub(crate) if_version: Option<u64>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual calendar rm NAME`.
#[derive(Debug, Args)]
pub(crate) struct CalendarRmArgs {
    /// The calendar (e.g. cn-office)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) name: String,
    /// Only if the calendar is still at this version
    #[arg(long, value_name = "N")]
    pub(crate) if_version: Option<u64>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

fn parse_calendar_file(path: &str) -> Result<Value, String> {
    parse_json_file(path, "calendar")
}
