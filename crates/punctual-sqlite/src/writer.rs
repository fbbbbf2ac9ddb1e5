//! Group commit: one thread owns the write connection; every write is a job sent to it.
//!
//! The thread takes the first waiting job, then every job that queued up behind it
//! (up to [`MAX_GROUP`]), runs them all in one `BEGIN IMMEDIATE` transaction — each in
//! its own savepoint, so a job that fails is undone alone — and commits once: one
//! fsync for the whole group. Only after the commit returns does any job's caller get
//! its answer, so an answer always means durable. If the commit fails, every job of the
//! group gets the error and nothing of the group was written.
//!
//! Checkpoints (folding the WAL back into the database file, with an fsync) never run
//! inside a commit: the writer turns SQLite's automatic checkpoints off and, each time
//! the WAL has grown by [`CHECKPOINT_BYTES`], asks a checkpointer thread with its own
//! connection to run a passive checkpoint, which does not block the writer. Under
//! writes that never pause a passive checkpoint cannot reset the WAL (new frames keep
//! arriving), so past [`WAL_LIMIT_BYTES`] the writer itself restarts it between two
//! groups — cheap, since the passive checkpoints already copied almost everything —
//! and SQLite writes it again from its start. The WAL's size is its frames after the
//! last commit, as SQLite's WAL hook reports them (`wal`): the file keeps its size
//! once written, so it says nothing of what the WAL holds. The WAL therefore stays
//! below about `WAL_LIMIT_BYTES` plus one group, on disk too; a close truncates it.
//! (The writer used to truncate it at the limit — 30 ms for 64 MiB here, its longest
//! stall under a burst, and every commit after paid for growing the file again — and
//! to read the WAL's size from the file, so that past the first 8 MiB it asked for a
//! checkpoint at every look: a page changed again and again, as a burst in groups
//! changes its groups' pages, was copied once every few groups.)
//!
//! A job's savepoint undoes a failed job whole (every error of a statement fails its
//! job), so a statement needs no undo of its own. The writes a burst repeats per task
//! — schedule's insert and replace, the leases, the completions, and the `task_groups`
//! triggers they fire — say `OR FAIL` and call no SQL function (`CASE`, not `MIN` or
//! `MAX` of values), so SQLite opens no statement journal for them. It would otherwise
//! copy each page the statement changes into an in-memory journal and, releasing it,
//! walk that journal from its start — and inside a job's savepoint the journal holds
//! every page the job changed so far: a schedule of 1,000 grouped tasks spent most of
//! its time walking it (quadratic in the job's size). A statement that still opens
//! one is only slower, never wrong.

use std::path::Path;
use std::sync::mpsc;
use std::thread;

use punctual_core::{Error, Result};
use rusqlite::Connection;

use crate::map_err;
use crate::wal::WalWatch;

/// The most jobs committed together.
const MAX_GROUP: usize = 4096;
/// WAL growth that triggers a background checkpoint.
const CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;
/// WAL size at which the writer restarts it itself.
const WAL_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// Groups between two looks at the WAL's size.
const CHECK_WAL_EVERY: u32 = 8;

/// Delivers a job's answer once its group is committed (or failed).
type Reply = Box<dyn FnOnce(Result<()>) + Send>;

/// A write: runs inside the group's transaction and returns how to answer its caller,
/// or is answered with an error without running.
pub(crate) trait WriteJob: Send {
    /// Whether losing this write in a power failure could lose a task or revive a
    /// cancelled one (then its group is fsynced before anyone is answered).
    fn needs_fsync(&self) -> bool;
    fn run(self: Box<Self>, conn: &Connection) -> Reply;
    fn fail(self: Box<Self>, error: Error);
}

pub(crate) type Job = Box<dyn WriteJob>;

pub(crate) enum Message {
    Job(Job),
    /// Commit what is pending, answer, and stop.
    Close(tokio::sync::oneshot::Sender<()>),
}

struct Work<W, T> {
    durability: Durability,
    work: W,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
}

impl<W, T> WriteJob for Work<W, T>
where
    W: FnOnce(&Connection) -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    fn needs_fsync(&self) -> bool {
        self.durability == Durability::Fsync
    }

    fn run(self: Box<Self>, conn: &Connection) -> Reply {
        let Work { work, reply, .. } = *self;
        let outcome = in_savepoint(conn, work);
        Box::new(move |commit: Result<()>| {
            let _ = reply.send(commit.and(outcome));
        })
    }

    fn fail(self: Box<Self>, error: Error) {
        let _ = self.reply.send(Err(error));
    }
}

/// How durable a write must be before its caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Survives power loss: the group's commit is fsynced (`synchronous = FULL`).
    /// For writes whose loss would lose a task or revive a cancelled one.
    Fsync,
    /// Survives any crash of the process (the WAL is written before answering), and
    /// power loss once the next fsynced group commits. For writes whose loss can only
    /// make a task fire again: leases, acks, extends, releases, reaping.
    Process,
}

/// Wraps `work` into a [`Job`] that answers on `reply` after the commit.
pub(crate) fn job<T: Send + 'static>(
    durability: Durability,
    work: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
) -> Job {
    Box::new(Work { durability, work, reply })
}

/// Runs `work` in a savepoint of its own, undone alone if it fails. Savepoints nest
/// (the innermost of a name is the one released or rolled back), so work that runs
/// several parts each on its own calls this again inside.
pub(crate) fn in_savepoint<T>(conn: &Connection, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    run_cached(conn, "SAVEPOINT job")?;
    match work(conn) {
        Ok(value) => {
            run_cached(conn, "RELEASE job")?;
            Ok(value)
        }
        Err(e) => {
            run_cached(conn, "ROLLBACK TO job")?;
            run_cached(conn, "RELEASE job")?;
            Err(e)
        }
    }
}

/// Runs a statement without parameters or rows from the connection's statement cache
/// (transactions, savepoints and the durability pragma are begun and ended per group,
/// per job and per ack: parsing each again was work every write paid).
fn run_cached(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql).and_then(|mut statement| statement.execute([])).map(|_| ()).map_err(map_err)
}

/// Starts the writer thread on `conn` (the database at `path`), with its checkpointer.
pub(crate) fn spawn(conn: Connection, path: &Path) -> std::io::Result<(mpsc::Sender<Message>, thread::JoinHandle<()>)> {
    let (sender, receiver) = mpsc::channel::<Message>();
    let (checkpoint, wanted) = mpsc::sync_channel::<()>(1);
    let checkpointer_path = path.to_owned();
    let checkpointer = thread::Builder::new()
        .name("punctual-sqlite-checkpoint".into())
        .spawn(move || checkpoint_when_asked(&checkpointer_path, wanted))?;
    let handle = thread::Builder::new().name("punctual-sqlite-writer".into()).spawn(move || {
        run(conn, receiver, checkpoint);
        let _ = checkpointer.join();
    })?;
    Ok((sender, handle))
}

/// Runs a passive checkpoint each time it is asked, until the asking side is dropped.
fn checkpoint_when_asked(path: &Path, wanted: mpsc::Receiver<()>) {
    let conn = match Connection::open(path) {
        Ok(conn) => conn,
        Err(e) => {
            tracing::error!(error = %e, "cannot open the checkpoint connection; the WAL will grow until close");
            return;
        }
    };
    while wanted.recv().is_ok() {
        if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)") {
            tracing::warn!(error = %e, "background checkpoint failed; will retry when the WAL grows");
        }
    }
}

fn run(conn: Connection, receiver: mpsc::Receiver<Message>, checkpoint: mpsc::SyncSender<()>) {
    let mut synchronous = Synchronous { full: true };
    let mut wal = WalWatch::new(&conn, CHECKPOINT_BYTES, WAL_LIMIT_BYTES);
    let mut groups_since_look = 0u32;
    let mut closing = None;
    while closing.is_none() {
        let Ok(first) = receiver.recv() else { break };
        let mut group = Vec::new();
        match first {
            Message::Job(job) => group.push(job),
            Message::Close(done) => closing = Some(done),
        }
        while closing.is_none() && group.len() < MAX_GROUP {
            match receiver.try_recv() {
                Ok(Message::Job(job)) => group.push(job),
                Ok(Message::Close(done)) => closing = Some(done),
                Err(_) => break,
            }
        }
        if !group.is_empty() {
            commit_group(&conn, &mut synchronous, group);
            groups_since_look += 1;
            if groups_since_look >= CHECK_WAL_EVERY {
                groups_since_look = 0;
                wal.look(&conn, &checkpoint);
            }
        }
    }
    drop(checkpoint);
    // Answer anything that raced with close, then checkpoint so the WAL is folded in.
    while let Ok(message) = receiver.try_recv() {
        match message {
            Message::Job(job) => commit_group(&conn, &mut synchronous, vec![job]),
            Message::Close(done) => {
                let _ = done.send(());
            }
        }
    }
    if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
        tracing::warn!(error = %e, "checkpoint at close failed; the WAL will be replayed at next open");
    }
    drop(conn);
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

/// The connection's current `synchronous` setting, changed only between transactions.
struct Synchronous {
    full: bool,
}

fn commit_group(conn: &Connection, synchronous: &mut Synchronous, group: Vec<Job>) {
    let full = group.iter().any(|job| job.needs_fsync());
    if full != synchronous.full {
        let pragma = if full { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
        if let Err(error) = run_cached(conn, pragma) {
            tracing::error!(error = %error, "cannot set the durability of a write");
            for job in group {
                job.fail(error.clone());
            }
            return;
        }
        synchronous.full = full;
    }
    if let Err(error) = run_cached(conn, "BEGIN IMMEDIATE") {
        tracing::error!(error = %error, "cannot begin a write transaction");
        for job in group {
            job.fail(error.clone());
        }
        return;
    }
    let replies: Vec<Reply> = group.into_iter().map(|job| job.run(conn)).collect();
    let commit = run_cached(conn, "COMMIT");
    if commit.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for reply in replies {
        reply(commit.clone());
    }
}

/// The error callers get once the writer has stopped.
pub(crate) fn closed() -> Error {
    Error::Unavailable("the store is closed".into())
}
