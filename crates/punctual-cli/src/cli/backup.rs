//! `punctual backup` and `punctual restore`: the embedded store copied to one file while
//! a server may run on it, and made the store of a directory again. They work on the
//! data directory, not through a server.

use std::path::PathBuf;

use clap::Args;

/// `punctual backup --to FILE`.
#[derive(Debug, Args)]
pub(crate) struct BackupArgs {
    /// The file to write (refused if it exists): one SQLite file, the store as of one commit
    #[arg(long, value_name = "FILE")]
    pub(crate) to: PathBuf,
    /// The embedded store's directory, as given to punctual serve --data
    #[arg(long, value_name = "DIR", default_value = "./punctual-data")]
    pub(crate) data: PathBuf,
    /// Export a Redis store instead (a URL, or a server's config file naming one): its tasks, settings and calendars, into one file punctual restore reads
    #[arg(long, value_name = "URL|FILE", conflicts_with = "data")]
    pub(crate) store: Option<String>,
    /// Print JSON: {"file", "tasks", "queues", "layout", "bytes", "seconds"}
    #[arg(long)]
    pub(crate) json: bool,
}

/// `punctual restore --from FILE`.
#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    /// A file punctual backup wrote
    #[arg(long, value_name = "FILE")]
    pub(crate) from: PathBuf,
    /// The directory to restore into, as punctual serve --data will be given it; no server may run on it
    #[arg(long, value_name = "DIR", default_value = "./punctual-data")]
    pub(crate) data: PathBuf,
    /// Restore over a store that holds tasks (they are lost); without it that is refused
    #[arg(long)]
    pub(crate) replace: bool,
    /// Print JSON: {"file", "tasks", "queues", "layout", "bytes", "seconds"}
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) const BACKUP: &str = "\
Examples:
  punctual backup --to /backups/punctual-$(date +%F).db                  # ./punctual-data, server running or not
  punctual backup --data /var/lib/punctual --to /backups/punctual.db      # the Debian package's store
  punctual backup --store redis://10.0.0.5:6379 --to /backups/punctual-redis.db   # export a Redis store

The copy is consistent: the store as of one commit, taken with SQLite's online backup API
while the server goes on writing (it never waits for the backup). The file is checked
(PRAGMA quick_check) before it is named FILE; a failed backup leaves no FILE.
With --store, the tasks of a Redis store are exported page by page into a new embedded
store, which is then written as FILE: each task as it was when its page was read, not
one instant of a running deployment (stop the servers for that). Redis' own persistence
(RDB snapshots or AOF, docs/redis.md) is the backup that follows every write; the export
is the copy that punctual restore, or punctual migrate back to Redis, reads.";

pub(crate) const RESTORE: &str = "\
Examples:
  punctual restore --from /backups/punctual.db --data ./punctual-data     # into an empty directory
  punctual restore --from /backups/punctual.db --data /var/lib/punctual --replace   # over the current store

Stop the server first: a directory in use is refused. The backup is checked, then put in
place whole; the next punctual serve --data DIR opens it (migrating an older layout).
Tasks due while the store was away fire when the server starts, as after any outage.";
