//! Completion records of dedupe windows (`Store::complete`, `Store::schedule`): one
//! row of `completions` per (queue, key) whose task completed for good with a window.
//!
//! Invariants: a record is written in the transaction that deletes its task (`complete`)
//! and replaces the key's earlier one; a record whose `unique_until` is not after `now`
//! counts for nothing, and goes: the read of a key deletes it, and each reap deletes up
//! to a batch of them, those that ended first first (the index `completions_by_end`),
//! so none outlives the next lease expiry by much.

use punctual_core::store::{Completed, corrupt};
use punctual_core::{QueueName, Result, TaskKey, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::map_err;

/// The record of (`queue_id`, `key`) if it holds the key at `now` (see
/// [`Completed::holds_at`]); one that no longer does is deleted.
pub(crate) fn holding(
    conn: &Connection,
    queue_id: i64,
    queue: &QueueName,
    key: &TaskKey,
    now: Timestamp,
) -> Result<Option<Completed>> {
    let row: Option<(i64, i64, i64, i64, i64)> = conn
        .prepare_cached(
            "SELECT task_id, completed_at, attempts, occurrence, unique_until FROM completions \
             WHERE queue_id = ?1 AND key = ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![queue_id, key.as_str()], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
            })
            .optional()
        })
        .map_err(map_err)?;
    let Some((task_id, completed_at, attempts, occurrence, until)) = row else { return Ok(None) };
    let count = |n: i64| u32::try_from(n).map_err(corrupt);
    let id = u64::try_from(task_id).map_err(corrupt)?;
    let mut record = Completed::new(
        queue.clone(),
        key.clone(),
        id,
        Timestamp::from_millis(completed_at),
        Timestamp::from_millis(until),
    );
    record.attempts = count(attempts)?;
    record.occurrence = count(occurrence)?;
    if record.holds_at(now) {
        return Ok(Some(record));
    }
    conn.prepare_cached("DELETE FROM completions WHERE queue_id = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.execute(params![queue_id, key.as_str()]))
        .map_err(map_err)?;
    Ok(None)
}

/// Writes `record` for `queue_id`, in place of the key's earlier one.
pub(crate) fn write(conn: &Connection, queue_id: i64, record: &Completed) -> Result<()> {
    let task_id = i64::try_from(record.id).map_err(corrupt)?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO completions (queue_id, key, task_id, completed_at, attempts, occurrence, \
         unique_until) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            queue_id,
            record.key.as_str(),
            task_id,
            record.completed_at.as_millis(),
            record.attempts,
            record.occurrence,
            record.unique_until.as_millis(),
        ])
    })
    .map(|_| ())
    .map_err(map_err)
}

/// Up to `?2` records that no longer hold at `?1`, those that ended first first, deleted.
pub(crate) const DROP_ENDED: &str = "DELETE FROM completions WHERE (queue_id, key) IN \
    (SELECT queue_id, key FROM completions WHERE unique_until <= ?1 ORDER BY unique_until LIMIT ?2)";

/// Deletes up to `limit` records that no longer hold at `now`, those that ended first
/// first ([`DROP_ENDED`]); how many.
pub(crate) fn drop_ended(conn: &Connection, now: Timestamp, limit: u32) -> Result<usize> {
    conn.prepare_cached(DROP_ENDED)
        .and_then(|mut stmt| stmt.execute(params![now.as_millis(), limit.max(1)]))
        .map_err(map_err)
}
