//! Completing a lease: its task done (its row kept as its history, or deleted),
//! retried, rescheduled (its next occurrence) or dead.
//!
//! Invariants: nothing is written unless the lease is live (`lease::live`); then each
//! completion is one statement, atomic by itself, then its history (the ack appended
//! to the task's pending events, or those and the ack moved to the key's history; see
//! `history`). A task done without a dedupe window is the hot path: one `UPDATE` turns
//! its row into the key's kept events (`codes::KEPT`, `KEEP`), after the deletion of
//! its rows in `tags` if it has tags, with no write to `history`. The deletion of a
//! task with a dedupe window (which writes its completion record, `completions`) runs
//! in a savepoint. A write that fails after another of its completion fails the whole
//! job ([`complete`]'s outer `Result`), which the job's savepoint undoes: so no
//! completion is left half written, its change without its history event, and a batch
//! of completions needs no savepoint per completion. A task put back to scheduled
//! takes its lane's code. A reschedule anchors the task at the completion's anchor; no
//! completion writes the task's timing.

use punctual_core::history::encode;
use punctual_core::store::{CompleteRequest, Completion, corrupt};
use punctual_core::{Result, StoreId, transitions};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, KEPT, Sql, scheduled_by_target};
use crate::history;
use crate::lease::{Live, live};
use crate::queues::QueueIds;
use crate::tasks::{delete_tags, delete_told};
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
/// A done task's row kept as its key's newest history events (`codes::KEPT`): no longer
/// a task (its lease, payload, policies, tags and group let go; its group's row counts
/// it out through the triggers, and its rows in `tags` go first), the ack appended,
/// `due_at` the ack's time, which the retention sweep reads.
static KEEP: Sql = Sql::new(|| {
    format!(
        "UPDATE OR FAIL tasks SET state = {KEPT}, due_at = ?2, lease_expires_at = NULL, updated_at = ?2, payload = '', \
         repeat = NULL, tags = NULL, last_error = NULL, target = NULL, priority = 0, debounce_until = NULL, \
         group_name = NULL, timing = NULL, traceparent = NULL, {} WHERE id = ?1",
        history::appending("?3")
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
    complete_in(conn, &mut QueueIds::default(), store, req)
}

/// [`complete`] of each of `reqs`, in order, looking each queue's id up once: one job's
/// acks.
pub(crate) fn complete_each(conn: &Connection, store: StoreId, reqs: &[CompleteRequest]) -> Result<Vec<Result<()>>> {
    let mut queue_ids = QueueIds::default();
    reqs.iter().map(|req| complete_in(conn, &mut queue_ids, store, req)).collect()
}

/// [`complete`], with the queue ids its job read so far.
fn complete_in(
    conn: &Connection,
    queue_ids: &mut QueueIds,
    store: StoreId,
    req: &CompleteRequest,
) -> Result<Result<()>> {
    match live(conn, queue_ids, store, &req.token, req.now) {
        Ok(live) => write(conn, live, req).map(Ok),
        Err(refused) => Ok(Err(refused)),
    }
}

/// The writes of `req`, whose lease `live` holds: the completion, then its history.
fn write(conn: &Connection, live: Live, req: &CompleteRequest) -> Result<()> {
    let Live { queue_id, task, pending_count } = live;
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    let (key, now) = (req.token.key.as_str(), req.now.as_millis());
    let update = |sql: &str, parameters: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql).and_then(|mut statement| statement.execute(parameters)).map(|_| ()).map_err(map_err)
    };
    let record = transitions::completion_record(&task, &req.completion, req.now);
    let acked = transitions::acked(&task, &req.completion, req.now).by(req.by.as_ref()).report(req.report.as_ref());
    // The task's pending history events and its ack move to its key's history when
    // its row goes (`delete_told`) or its occurrence ends; else the ack joins them.
    match &req.completion {
        Completion::Done if record.is_none() => {
            if !task.tags.is_empty() {
                delete_tags(conn, queue_id, id, &task.tags)?;
            }
            update(&KEEP, params![id, now, encode(&acked)])
        }
        Completion::Done => writer::in_savepoint(conn, |conn| {
            delete_told(conn, queue_id, &task, &acked)?;
            record.as_ref().map_or(Ok(()), |record| completions::write(conn, queue_id, record))
        }),
        Completion::Retry { at, error } => {
            update(&RETRY, params![id, at.as_millis(), error, now, encode(&acked)])?;
            history::settle(conn, queue_id, key, id, pending_count + 1)
        }
        Completion::Reschedule { at, anchor } => {
            history::move_pending(conn, queue_id, key, id, Some(&acked))?;
            update(&RESCHEDULE, params![id, at.as_millis(), anchor.as_millis(), now])
        }
        Completion::Dead { error } => {
            update(&DIE, params![id, error, now, encode(&acked)])?;
            history::settle(conn, queue_id, key, id, pending_count + 1)
        }
    }
}
