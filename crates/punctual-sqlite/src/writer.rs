//! Group commit: one thread owns the write connection; every write is a job sent to it.
//!
//! The thread takes the first waiting job, then every job that queued up behind it
//! (up to [`MAX_GROUP`]), runs them all in one `BEGIN IMMEDIATE` transaction — each in
//! its own savepoint, so a job that fails is undone alone — and commits once: one
//! fsync for the whole group. Only after the commit returns does any job's caller get
//! its answer, so an answer always means durable. If the commit fails, every job of the
//! group gets the error and nothing of the group was written.

use std::sync::mpsc;
use std::thread;

use punctual_core::{Error, Result};
use rusqlite::Connection;

use crate::map_err;

/// The most jobs committed together.
const MAX_GROUP: usize = 4096;

/// Delivers a job's answer once its group is committed (or failed).
type Reply = Box<dyn FnOnce(Result<()>) + Send>;

/// A write: runs inside the group's transaction and returns how to answer its caller,
/// or is answered with an error without running.
pub(crate) trait WriteJob: Send {
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
    work: W,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
}

impl<W, T> WriteJob for Work<W, T>
where
    W: FnOnce(&Connection) -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Reply {
        let Work { work, reply } = *self;
        let outcome = in_savepoint(conn, work);
        Box::new(move |commit: Result<()>| {
            let _ = reply.send(commit.and(outcome));
        })
    }

    fn fail(self: Box<Self>, error: Error) {
        let _ = self.reply.send(Err(error));
    }
}

/// Wraps `work` into a [`Job`] that answers on `reply` after the commit.
pub(crate) fn job<T: Send + 'static>(
    work: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
) -> Job {
    Box::new(Work { work, reply })
}

fn in_savepoint<T>(conn: &Connection, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    conn.execute_batch("SAVEPOINT job").map_err(map_err)?;
    match work(conn) {
        Ok(value) => {
            conn.execute_batch("RELEASE job").map_err(map_err)?;
            Ok(value)
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO job; RELEASE job").map_err(map_err)?;
            Err(e)
        }
    }
}

/// Starts the writer thread on `conn`.
pub(crate) fn spawn(conn: Connection) -> std::io::Result<(mpsc::Sender<Message>, thread::JoinHandle<()>)> {
    let (sender, receiver) = mpsc::channel::<Message>();
    let handle = thread::Builder::new().name("punctual-sqlite-writer".into()).spawn(move || run(conn, receiver))?;
    Ok((sender, handle))
}

fn run(conn: Connection, receiver: mpsc::Receiver<Message>) {
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
            commit_group(&conn, group);
        }
    }
    // Answer anything that raced with close, then checkpoint so the WAL is folded in.
    while let Ok(message) = receiver.try_recv() {
        match message {
            Message::Job(job) => commit_group(&conn, vec![job]),
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

fn commit_group(conn: &Connection, group: Vec<Job>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let error = map_err(e);
        tracing::error!(error = %error, "cannot begin a write transaction");
        for job in group {
            job.fail(error.clone());
        }
        return;
    }
    let replies: Vec<Reply> = group.into_iter().map(|job| job.run(conn)).collect();
    let commit = conn.execute_batch("COMMIT").map_err(map_err);
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
