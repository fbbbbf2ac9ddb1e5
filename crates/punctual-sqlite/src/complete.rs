//! Completing a lease: its task done (deleted), retried, rescheduled (its next
//! occurrence) or dead.
//!
//! Invariants: nothing is written unless the lease is live (`lease::live`); then each
//! completion is one statement, atomic by itself, but the deletion of a tagged task or
//! of one with a dedupe window (which writes its completion record, `completions`),
//! which runs in a savepoint: so a failed completion leaves its task as it was, and a
//! batch of completions needs no savepoint per completion. A task put back to scheduled
//! takes its lane's code. A reschedule anchors the task at the completion's anchor; no
//! completion writes the task's timing.

use punctual_core::store::{CompleteRequest, Completion, corrupt};
use punctual_core::{Result, StoreId, transitions};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, Sql, scheduled_by_target};
use crate::history;
use crate::lease::live;
use crate::tasks::delete_task;
use crate::{completions, map_err, writer};

static RETRY: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {}, due_at = ?2, lease_expires_at = NULL, attempts = attempts + 1, \
         last_error = ?3, updated_at = ?4 WHERE id = ?1",
        scheduled_by_target()
    )
});
static RESCHEDULE: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {}, due_at = ?2, lease_expires_at = NULL, attempts = 0, \
         occurrence = occurrence + 1, anchor = ?3, last_error = NULL, updated_at = ?4 WHERE id = ?1",
        scheduled_by_target()
    )
});
static DIE: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {DEAD}, lease_expires_at = NULL, attempts = attempts + 1, last_error = ?2, \
         updated_at = ?3 WHERE id = ?1"
    )
});

pub(crate) fn complete(conn: &Connection, store: StoreId, req: &CompleteRequest) -> Result<()> {
    let (queue_id, task) = live(conn, store, &req.token, req.now)?;
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    let now = req.now.as_millis();
    let update = |sql: &str, parameters: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql).and_then(|mut statement| statement.execute(parameters)).map(|_| ()).map_err(map_err)
    };
    let record = transitions::completion_record(&task, &req.completion, req.now);
    let acked = transitions::acked(&task, &req.completion, req.now).by(req.by.as_ref()).report(req.report.as_ref());
    history::record(conn, queue_id, req.token.key.as_str(), &acked)?;
    match &req.completion {
        Completion::Done if task.tags.is_empty() && record.is_none() => delete_task(conn, queue_id, &task),
        Completion::Done => writer::in_savepoint(conn, |conn| {
            delete_task(conn, queue_id, &task)?;
            record.as_ref().map_or(Ok(()), |record| completions::write(conn, queue_id, record))
        }),
        Completion::Retry { at, error } => update(&RETRY, params![id, at.as_millis(), error, now]),
        Completion::Reschedule { at, anchor } => {
            update(&RESCHEDULE, params![id, at.as_millis(), anchor.as_millis(), now])
        }
        Completion::Dead { error } => update(&DIE, params![id, error, now]),
    }
}
