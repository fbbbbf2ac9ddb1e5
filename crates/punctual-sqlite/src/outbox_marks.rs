//! Outbox rows applied once (`Store::apply_once`): the row's mark is a row of
//! `outbox_marks`, written by the job that applies the row's effect, so both commit or
//! neither (the job's savepoint undoes a refused schedule whole, its mark with it).
//!
//! Invariants: a row whose mark is there changes nothing; each call that writes marks
//! (one row, or a batch of them) first deletes up to [`PRUNED`] marks older than the
//! retention, the oldest first, so the table holds about a retention's worth of rows.

use punctual_core::outbox::{MARK_RETENTION, OutboxRow};
use punctual_core::store::{ApplyOnceRequest, OnceEffect, OnceOp};
use punctual_core::{Result, StoreId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::writer::in_savepoint;
use crate::{cancel, map_err, schedule};

/// The most marks past the retention one mark's write deletes.
const PRUNED: i64 = 100;

/// Applies `req`'s row unless its mark is there (then `None`).
pub(crate) fn apply_once(conn: &Connection, store: StoreId, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
    prune(conn, req.now)?;
    apply_row(conn, store, req)
}

/// Applies `reqs`' rows, each in a savepoint of its own (undone alone when refused).
pub(crate) fn apply_once_many(
    conn: &Connection,
    store: StoreId,
    reqs: Vec<ApplyOnceRequest>,
) -> Result<Vec<Result<Option<OnceEffect>>>> {
    if let Some(now) = reqs.iter().map(|req| req.now).max() {
        prune(conn, now)?;
    }
    Ok(reqs.into_iter().map(|req| in_savepoint(conn, |conn| apply_row(conn, store, req))).collect())
}

fn apply_row(conn: &Connection, store: StoreId, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
    if marked(conn, &req.row)? {
        return Ok(None);
    }
    let effect = match req.op {
        OnceOp::Schedule(task) => {
            OnceEffect::Scheduled(Box::new(schedule::schedule_one(conn, store, *task, req.now)??))
        }
        OnceOp::Cancel { queue, key } => OnceEffect::Cancelled(cancel::cancel(conn, store, &queue, &key, None)?),
        OnceOp::CancelTag { queue, tag } => {
            OnceEffect::CancelledTag(cancel::cancel_tag(conn, store, &queue, &tag, None)?)
        }
    };
    mark(conn, &req.row, req.now)?;
    Ok(Some(effect))
}

fn marked(conn: &Connection, row: &OutboxRow) -> Result<bool> {
    conn.prepare_cached("SELECT 1 FROM outbox_marks WHERE outbox = ?1 AND row_id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![row.outbox.as_str(), row.id], |_| Ok(())).optional())
        .map(|found| found.is_some())
        .map_err(map_err)
}

/// Deletes up to [`PRUNED`] marks older than the retention at `now`.
fn prune(conn: &Connection, now: Timestamp) -> Result<()> {
    let cutoff = now.as_millis().saturating_sub(i64::try_from(MARK_RETENTION.as_millis()).unwrap_or(i64::MAX));
    conn.prepare_cached(
        "DELETE FROM outbox_marks WHERE (outbox, row_id) IN \
         (SELECT outbox, row_id FROM outbox_marks WHERE applied_at < ?1 ORDER BY applied_at LIMIT ?2)",
    )
    .and_then(|mut stmt| stmt.execute(params![cutoff, PRUNED]))
    .map(|_| ())
    .map_err(map_err)
}

fn mark(conn: &Connection, row: &OutboxRow, now: Timestamp) -> Result<()> {
    conn.prepare_cached("INSERT INTO outbox_marks (outbox, row_id, applied_at) VALUES (?1, ?2, ?3)")
        .and_then(|mut stmt| stmt.execute(params![row.outbox.as_str(), row.id, now.as_millis()]))
        .map_err(map_err)?;
    Ok(())
}
