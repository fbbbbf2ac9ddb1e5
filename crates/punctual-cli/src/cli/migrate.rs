//! `punctual migrate`'s flags and help.

use clap::Args;

/// Tasks read and written per step, unless `--batch` says otherwise.
pub(crate) const BATCH: u32 = 500;

/// `punctual migrate --from SOURCE --to DESTINATION`.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// The store to copy from: a directory (the embedded store), a Redis URL, or a server's config file (*.toml) whose store it opens as punctual serve --config would
    #[arg(long, value_name = "DIR|URL|FILE")]
    pub(crate) from: String,
    /// The store to copy into, given the same ways; tasks already there stay as they are
    #[arg(long, value_name = "DIR|URL|FILE")]
    pub(crate) to: String,
    /// Only compare the two stores (every task of the source against the destination); copy nothing
    #[arg(long)]
    pub(crate) check: bool,
    /// Tasks read and written per step
    #[arg(long, value_name = "N", default_value_t = BATCH, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) batch: u32,
    /// Print JSON: {"queues": [{"queue", "written", "present", "records", "history_events"}], "calendars", "settings", "check": {"same", "missing", "differ", "examples"}, "seconds"}
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) const MIGRATE: &str = "\
Examples:
  punctual migrate --from ./punctual-data --to redis://10.0.0.5:6379        # one node to Redis
  punctual migrate --from /etc/punctual/punctual.toml --to /etc/punctual/redis.toml
                                                        # each side as its server opens it ([redis] prefix, shards)
  punctual migrate --from redis://10.0.0.5:6379 --to ./punctual-data        # and back
  punctual migrate --from ./punctual-data --to redis://10.0.0.5:6379 --check

Stop the servers on the source first: what they change during the copy may be missed.
Copies every task as it stands (state, due time, attempts, version, repeats, tags, groups,
priorities, targets, timing), each key's history, the dedupe windows still running, queue
settings, pauses and calendars; then compares every task of the source with the destination and exits 1 if one
is missing or differs. A task already in the destination is never overwritten, so an
interrupted run is resumed by running it again. A task leased when the servers stopped
runs again once its lease expires, as after any crash. Guide: docs/operations.md.";
