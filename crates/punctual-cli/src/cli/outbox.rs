//! `punctual outbox init|status`: the outbox's tables in the application's database,
//! and how far behind their drain is (docs/outbox.md). They talk to the database, not
//! to a server.

use clap::{Args, Subcommand};

/// `punctual outbox …`.
#[derive(Debug, Args)]
pub(crate) struct OutboxArgs {
    #[command(subcommand)]
    pub(crate) command: OutboxCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum OutboxCommand {
    /// Create the outbox table, its failed rows' table and (PostgreSQL) its trigger, unless they exist
    #[command(after_help = INIT)]
    Init(OutboxTarget),
    /// Rows waiting, the oldest one's age, and rows failed
    #[command(after_help = STATUS)]
    Status(OutboxStatusArgs),
}

/// The outbox's database and table.
#[derive(Debug, Args)]
pub(crate) struct OutboxTarget {
    /// The database: postgres://user[:password]@host[:port]/db or mysql://user:password@host[:port]/db
    #[arg(long, env = "PUNCTUAL_OUTBOX_URL", value_name = "URL", hide_env_values = true)]
    pub(crate) url: String,
    /// The table's name (letters, digits and _, optionally schema.table); failed rows go to NAME_failed
    #[arg(long, value_name = "NAME", default_value = punctual_outbox::DEFAULT_TABLE)]
    pub(crate) table: String,
}

/// `punctual outbox status`.
#[derive(Debug, Args)]
pub(crate) struct OutboxStatusArgs {
    #[command(flatten)]
    pub(crate) target: OutboxTarget,
    /// Print JSON: {"table", "rows_waiting", "oldest_age_ms", "failed"}
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) const OUTBOX: &str = "\
Examples:
  punctual outbox init --url postgres://app@db.internal/shop      # the tables, once
  punctual outbox status --url postgres://app@db.internal/shop    # how far behind the drain is

The application inserts its schedules and cancels into the table in its own transactions;
servers with an [[outbox]] table in their config file apply them (docs/outbox.md).";

const INIT: &str = "\
Examples:
  # The table punctual_outbox, its failed rows' table and the trigger that wakes the drains
  punctual outbox init --url postgres://app@db.internal/shop

  # MySQL or MariaDB, another table (the URL from the environment keeps the password off the command line)
  PUNCTUAL_OUTBOX_URL=mysql://app:secret@db.internal/shop punctual outbox init --table shop_outbox

Then drain it: an [[outbox]] table in the server's config file, with the same URL (url or url_env) and
table. The DDL it runs is in docs/outbox.md; running it again changes nothing.";

const STATUS: &str = "\
Examples:
  punctual outbox status --url postgres://app@db.internal/shop
  punctual outbox status --url mysql://app:secret@db.internal/shop --json

A growing oldest age means no server drains the table (or the store refuses its rows):
check /readyz and punctual_outbox_up in /metrics. Rows in NAME_failed hold the error of each.";
