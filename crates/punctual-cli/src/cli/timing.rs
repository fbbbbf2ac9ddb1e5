//! `punctual schedule`'s timing flags: what becomes of missed and overlapping
//! occurrences, and jitter (the task fields `misfire`, `misfire_after`,
//! `catch_up_max`, `overlap` and `jitter` of the API), sent only when given.

use clap::{Args, ValueEnum};

use super::duration_arg;

/// The timing flags of `punctual schedule`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Timing")]
pub(crate) struct TimingArgs {
    /// Occurrences missed while no server ran or the queue was paused: fire-once (the
    /// default: one firing for all of them), fire-all (each, oldest first, up to
    /// --catch-up-max) or skip (a task leased later than --misfire-after past its due
    /// time does not fire)
    #[arg(long, value_enum, value_name = "POLICY")]
    pub(crate) misfire: Option<MisfireArg>,
    /// With --misfire skip: later than this past its due time is a misfire (default 1m)
    #[arg(long, value_name = "D", value_parser = duration_arg)]
    pub(crate) misfire_after: Option<String>,
    /// With --misfire fire-all: at most this many missed occurrences fire (default 10)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) catch_up_max: Option<u32>,
    /// Occurrences of a repeat that fall due while its firing runs: skip them (the
    /// default), queue the latest, to fire as soon as the firing ends, or allow them to
    /// fire meanwhile (each as a task of its own, keyed KEY@TIME)
    #[arg(long, value_enum, value_name = "POLICY")]
    pub(crate) overlap: Option<OverlapArg>,
    /// Spread the due time (each occurrence's, for a repeat) uniformly over this much
    /// later, for many tasks due at the same instant (e.g. 30s)
    #[arg(long, value_name = "D", value_parser = duration_arg)]
    pub(crate) jitter: Option<String>,
}

/// `misfire` as a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MisfireArg {
    FireOnce,
    FireAll,
    Skip,
}

impl MisfireArg {
    /// The API's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MisfireArg::FireOnce => "fire_once",
            MisfireArg::FireAll => "fire_all",
            MisfireArg::Skip => "skip",
        }
    }
}

/// `overlap` as a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OverlapArg {
    Skip,
    Queue,
    Allow,
}

impl OverlapArg {
    /// The API's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OverlapArg::Skip => "skip",
            OverlapArg::Queue => "queue",
            OverlapArg::Allow => "allow",
        }
    }
}
