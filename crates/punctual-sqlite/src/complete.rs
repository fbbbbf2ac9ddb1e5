//! Completing a lease: its task done (deleted), retried, rescheduled (its next
//! occurrence) or dead.
//!
//! Invariants: nothing is written unless the lease is live (`lease::live`); then each
//! completion is one statement, atomic by itself, then its history (the ack appended
//! to the task's pending events, or those and the ack moved to the key's history; see
//! `history`); the deletion of a tagged task or of one with a dedupe window (which
//! writes its completion record, `completions`) runs in a savepoint. A write that fails
//! after another of its completion fails the whole job ([`complete`]'s outer
//! `Result`), which the job's savepoint undoes: so no completion is left half written,
//! its change without its history event, and a batch of completions needs no
//! savepoint per completion. A task put back to scheduled
//! takes its lane's code. A reschedule anchors the task at the completion's anchor; no
//! completion writes the task's timing.

use punctual_core::history::encode;
use punctual_core::store::{CompleteRequest, Completion, corrupt};
use punctual_core::{Result, StoreId, transitions};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, Sql, scheduled_by_target};
use crate::history;
use crate::lease::{Live, live};
use crate::tasks::delete_task;
use crate::{completions, map_err, writer};

static RETRY: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {}, due_at = ?2, lease_expires_at = NULL, attempts = attempts + 1, \
         last_error = ?3, updated_at = ?4, {} WHERE id = ?1",
        scheduled_by_target(),
        history::appending("?5")
    )
});
/// Ends the occurrence: its pending history events move to the key's history.
static RESCHEDULE: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {}, due_at = ?2, lease_expires_at = NULL, attempts = 0, \
         occurrence = occurrence + 1, anchor = ?3, last_error = NULL, updated_at = ?4, pending_count = 0, \
         pending_events = NULL WHERE id = ?1",
        scheduled_by_target()
    )
});
static DIE: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {DEAD}, lease_expires_at = NULL, attempts = attempts + 1, last_error = ?2, \
         updated_at = ?3, {} WHERE id = ?1",
        history::appending("?4")
    )
});

/// The outer `Result` fails the whole job (a write failed after others of this
/// completion, which the job's savepoint undoes); the inner one is this completion's
/// own answer (its lease is not live: nothing was written).
pub(crate) fn complete(conn: &Connection, store: StoreId, req: &CompleteRequest) -> Result<Result<()>> {
    match live(conn, store, &req.token, req.now) {
        Ok(live) => write(conn, live, req).map(Ok),
        Err(refused) => Ok(Err(refused)),
    }
}

/// The writes of `req`, whose lease `live` holds: the completion, then its history.
fn write(conn: &Connection, live: Live, req: &CompleteRequest) -> Result<()> {
    let Live { queue_id, task, pending } = live;
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    let (key, now) = (req.token.key.as_str(), req.now.as_millis());
    let update = |sql: &str, parameters: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql).and_then(|mut statement| statement.execute(parameters)).map(|_| ()).map_err(map_err)
    };
    let record = transitions::completion_record(&task, &req.completion, req.now);
    let acked = transitions::acked(&task, &req.completion, req.now).by(req.by.as_ref()).report(req.report.as_ref());
    // The task's pending history events and its ack move to its key's history when
    // its row goes or its occurrence ends; else the ack joins them.
    let moved = || history::move_pending(conn, queue_id, key, pending.events.as_deref(), Some(&acked));
    match &req.completion {
        Completion::Done if task.tags.is_empty() && record.is_none() => {
            delete_task(conn, queue_id, &task)?;
            moved()
        }
        Completion::Done => writer::in_savepoint(conn, |conn| {
            delete_task(conn, queue_id, &task)?;
            record.as_ref().map_or(Ok(()), |record| completions::write(conn, queue_id, record))?;
            moved()
        }),
        Completion::Retry { at, error } => {
            update(&RETRY, params![id, at.as_millis(), error, now, encode(&acked)])?;
            history::settle(conn, queue_id, key, id, pending.count + 1)
        }
        Completion::Reschedule { at, anchor } => {
            update(&RESCHEDULE, params![id, at.as_millis(), anchor.as_millis(), now])?;
            moved()
        }
        Completion::Dead { error } => {
            update(&DIE, params![id, error, now, encode(&acked)])?;
            history::settle(conn, queue_id, key, id, pending.count + 1)
        }
    }
}
