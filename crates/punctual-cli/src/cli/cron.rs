//! `punctual cron next EXPR`: the flags of the teaching command that prints an
//! expression's next occurrences without a server, and `--cron-syntax`'s values.

use clap::{Args, Subcommand, ValueEnum};
use punctual_core::CronSyntax;

/// `punctual cron …`.
#[derive(Debug, Args)]
pub(crate) struct CronArgs {
    #[command(subcommand)]
    pub(crate) command: CronCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CronCommand {
    /// Print the next occurrences of a cron expression, as the server computes them
    #[command(after_help = NEXT)]
    Next(CronNextArgs),
}

/// `punctual cron next EXPR [--syntax S] [--tz ZONE] [--from T] [--count N] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct CronNextArgs {
    /// The expression, quoted (e.g. '0 9 * * MON-FRI', or '0 0 9 ? * MON-FRI' with --syntax spring)
    pub(crate) expr: String,
    /// How it is written: vixie (5 or 6 fields), spring (6, seconds first) or quartz (6 or 7, Sunday = 1)
    #[arg(long, value_enum, value_name = "SYNTAX", default_value = "vixie")]
    pub(crate) syntax: CronSyntaxArg,
    /// The IANA time zone the expression's wall-clock times are in
    #[arg(long, value_name = "ZONE", default_value = "UTC")]
    pub(crate) tz: String,
    /// Occurrences strictly after this instant (RFC 3339 or epoch milliseconds; default now)
    #[arg(long, value_name = "T")]
    pub(crate) from: Option<String>,
    /// How many occurrences to print, 1 to 1000
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) count: u32,
    /// Print JSON: {"cron", "cron_syntax", "tz", "from", "next": [...]}
    #[arg(long)]
    pub(crate) json: bool,
}

/// `repeat.cron_syntax` as a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CronSyntaxArg {
    Vixie,
    Spring,
    Quartz,
}

impl CronSyntaxArg {
    pub(crate) fn core(self) -> CronSyntax {
        match self {
            CronSyntaxArg::Vixie => CronSyntax::Vixie,
            CronSyntaxArg::Spring => CronSyntax::Spring,
            CronSyntaxArg::Quartz => CronSyntax::Quartz,
        }
    }
}

pub(crate) const NEXT: &str = "\
Examples:
  # Weekdays at 09:00 Shanghai time, in Vixie cron (the default syntax)
  punctual cron next '0 9 * * MON-FRI' --tz Asia/Shanghai

  # The same as Spring's @Scheduled writes it: six fields, seconds first, ?
  punctual cron next '0 0 9 ? * MON-FRI' --syntax spring --tz Asia/Shanghai

  # 18:00 on the last day of each month, in Quartz (Sunday is 1 there; a year may follow)
  punctual cron next '0 0 18 L * ?' --syntax quartz --tz Europe/Berlin --count 3

  # Across a daylight-saving change: New York repeats 01:30 on 2026-11-01
  punctual cron next '0 30 1 * * *' --syntax spring --tz America/New_York \\
      --from 2026-10-31T12:00:00Z --count 3 --json

Each occurrence is printed in RFC 3339 with the zone's offset, one per line, as the
server would schedule it with \"repeat\": {\"cron\": EXPR, \"tz\": ZONE, \"cron_syntax\": SYNTAX}.
Fewer lines than --count: the expression has no more occurrences (a year field that
ran out, or the end of time). A refused expression exits 2 with what to write instead.
Spring: 6 fields, 0 or 7 is Sunday, ? L LW L-n nW dL d#n, both day fields must match.
Quartz: 6 fields or 7 with the year, 1 is Sunday, ? in exactly one day field, ranges
may wrap (FRI-MON, 22-2). The rules of each syntax: docs/state-machine.md, \"Cron
expressions\".";
