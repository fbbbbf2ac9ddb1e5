//! Backup and restore of the embedded store (`punctual backup`, `punctual restore`).
//!
//! A backup is one SQLite file: a copy of the store's database made with SQLite's
//! online backup API in a single step, so under one read transaction. In WAL mode a
//! reader never blocks the writer, so the store may be in use by a running server
//! (another process) throughout: the copy is the store as of one commit, every task
//! written before it and none of a later one, never a mix.
//!
//! Invariants:
//! - **A backup is whole or absent.** It is written to `FILE.partial`, checked
//!   (`PRAGMA quick_check`), synced, then renamed to `FILE`; an existing `FILE` is never
//!   overwritten.
//! - **A restore never runs beside a server.** It holds the directory's `LOCK` (the one
//!   a running store holds) while it replaces the database, and it replaces a store
//!   that holds tasks only when asked to.
//! - **A restore is a store this punctual opens.** The file is checked before anything
//!   is replaced (a punctual store, of this layout or an older one), then opened as the
//!   server would open it, which migrates an older layout.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::Duration;

use punctual_core::{Error, Result};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::codes::ANY_TASK;
use crate::{DB_FILE, SqliteStore, map_err, schema};

/// What a backup or a restore holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSummary {
    /// Tasks in every state.
    pub tasks: u64,
    /// Queues that hold a task.
    pub queues: u64,
    /// The on-disk layout version (`meta.schema_version`).
    pub layout: i64,
    /// The database file's size.
    pub bytes: u64,
}

/// Copies the store in `dir` to the new file `to`, consistently, whether or not a
/// server has the store open. Refuses an existing `to`.
pub fn backup(dir: &Path, to: &Path) -> Result<StoreSummary> {
    let source_path = dir.join(DB_FILE);
    if !source_path.is_file() {
        return Err(invalid(
            "data",
            format!(
                "no punctual store in {}: {} is missing (--data names the directory `punctual serve --data` uses)",
                dir.display(),
                DB_FILE
            ),
        ));
    }
    if to.exists() {
        return Err(invalid(
            "to",
            format!("{} exists; a backup never overwrites a file: choose a new name or remove it", to.display()),
        ));
    }
    let source = Connection::open_with_flags(&source_path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(map_err)?;
    source.busy_timeout(Duration::from_secs(10)).map_err(map_err)?;
    summary_of(&source, &source_path, "data")?;

    let partial = partial_path(to);
    let _ = fs::remove_file(&partial);
    let copied = copy_into(&source, &partial).and_then(|()| {
        let copy = Connection::open(&partial).map_err(map_err)?;
        // One file, no WAL beside it: the copy is a file to keep, not a live store.
        copy.pragma_update(None, "journal_mode", "DELETE").map_err(map_err)?;
        check_integrity(&copy, &partial, "to")?;
        drop(copy);
        sync(&partial)?;
        let copy = Connection::open_with_flags(&partial, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(map_err)?;
        summary_of(&copy, &partial, "to")
    });
    let summary = match copied {
        Ok(summary) => summary,
        Err(e) => {
            let _ = fs::remove_file(&partial);
            return Err(e);
        }
    };
    fs::rename(&partial, to).map_err(|e| io_error("cannot name the backup", to, &e))?;
    sync_parent(to)?;
    Ok(summary)
}

/// Makes the store in `dir` the one in the backup `from`. Refuses while a server has
/// the store open, and over a store that holds tasks unless `replace`.
pub fn restore(from: &Path, dir: &Path, replace: bool) -> Result<StoreSummary> {
    let backup = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| invalid("from", format!("cannot open the backup {}: {e}", from.display())))?;
    let summary = summary_of(&backup, from, "from")?;
    check_integrity(&backup, from, "from")?;
    drop(backup);

    fs::create_dir_all(dir).map_err(|e| io_error("cannot create the data directory", dir, &e))?;
    {
        let lock = File::create(dir.join("LOCK")).map_err(|e| io_error("cannot create", &dir.join("LOCK"), &e))?;
        lock.try_lock().map_err(|_| {
            Error::Unavailable(format!(
                "{} is in use by a running punctual; stop it before restoring into it",
                dir.display()
            ))
        })?;
        let current = dir.join(DB_FILE);
        if current.is_file() && !replace {
            let tasks = Connection::open_with_flags(&current, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|conn| {
                    conn.query_row(&format!("SELECT count(*) FROM tasks WHERE {ANY_TASK}"), [], |row| {
                        row.get::<_, u64>(0)
                    })
                })
                .map_or_else(
                    |_| "a store".to_owned(),
                    |tasks| format!("a store of {tasks} task{}", if tasks == 1 { "" } else { "s" }),
                );
            return Err(invalid(
                "data",
                format!(
                    "{} already holds {tasks}; --replace restores over it (its tasks are lost), or restore into \
                 an empty directory",
                    dir.display()
                ),
            ));
        }
        let incoming = partial_path(&current);
        fs::copy(from, &incoming).map_err(|e| io_error("cannot copy the backup to", &incoming, &e))?;
        sync(&incoming)?;
        for stale in ["-wal", "-shm"] {
            let path = PathBuf::from(format!("{}{stale}", current.display()));
            match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_error("cannot remove", &path, &e));
                }
                _ => {}
            }
        }
        fs::rename(&incoming, &current).map_err(|e| io_error("cannot put the backup in place as", &current, &e))?;
        sync_parent(&current)?;
        // The lock is let go here, so that the open below takes it as a server would.
    }
    let store = SqliteStore::open(dir)?;
    drop(store);
    Ok(summary)
}

/// Copies every page of `source` into a new database at `path`, in one step: one read
/// transaction, so one commit's view, which a writer elsewhere never has to wait for.
fn copy_into(source: &Connection, path: &Path) -> Result<()> {
    let mut copy = Connection::open(path).map_err(map_err)?;
    let backup = Backup::new(source, &mut copy).map_err(map_err)?;
    loop {
        match backup.step(-1).map_err(map_err)? {
            StepResult::Done => return Ok(()),
            // Busy or locked: a lock this read must wait for (a WAL restart); try again.
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Reads what `conn` holds, refusing a file that is not a punctual store or is of a
/// newer layout than this punctual reads; `field` names the file in a refusal.
fn summary_of(conn: &Connection, path: &Path, field: &str) -> Result<StoreSummary> {
    let not_a_store = |why: String| invalid(field, format!("{} is not a punctual store ({why})", path.display()));
    let layout: i64 = conn
        .query_row("SELECT value FROM meta WHERE name = 'schema_version'", [], |row| row.get(0))
        .map_err(|e| not_a_store(e.to_string()))?;
    if layout > schema::VERSION {
        return Err(invalid(
            field,
            format!(
                "{} was written by a newer punctual (layout {layout}, this one reads {}); upgrade punctual",
                path.display(),
                schema::VERSION
            ),
        ));
    }
    let (tasks, queues): (u64, u64) = conn
        .query_row(&format!("SELECT count(*), count(DISTINCT queue_id) FROM tasks WHERE {ANY_TASK}"), [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .map_err(|e| not_a_store(e.to_string()))?;
    let bytes = fs::metadata(path).map_or(0, |m| m.len());
    Ok(StoreSummary { tasks, queues, layout, bytes })
}

fn check_integrity(conn: &Connection, path: &Path, field: &str) -> Result<()> {
    let verdict: String = conn.query_row("PRAGMA quick_check", [], |row| row.get(0)).map_err(map_err)?;
    if verdict == "ok" {
        Ok(())
    } else {
        Err(invalid(field, format!("{} fails SQLite's integrity check: {verdict}", path.display())))
    }
}

fn partial_path(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.partial", path.display()))
}

fn sync(path: &Path) -> Result<()> {
    File::open(path).and_then(|file| file.sync_all()).map_err(|e| io_error("cannot sync", path, &e))
}

/// Makes a rename in `path`'s directory durable.
fn sync_parent(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    sync(parent)
}

fn invalid(field: &str, reason: String) -> Error {
    Error::Invalid { field: field.to_owned(), reason }
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::Unavailable(format!("{what} {}: {e}", path.display()))
}
