//! Completion records of dedupe windows (`Store::complete`, `Store::schedule`): one
//! row of `completions` per (queue, key) whose task completed for good with a window.
//!
//! Invariants: a record is written in the transaction that deletes its task (`complete`)
//! and replaces the key's earlier one, or by an import (`import`) where the key has no
//! record that holds; a record whose `unique_until` is not after `now` counts for
//! nothing, and goes: the read of a key deletes it, and each reap deletes up to a batch
//! of them, those that ended first first (the index `completions_by_end`), so none
//! outlives the next lease expiry by much. A page of a queue's records ([`page`]) is
//! one range of the primary key, already in key order (checked in `query_plans`): it
//! reads its limit and the ended records among them that no reap deleted yet, however
//! many the queue holds.

use punctual_core::store::{Completed, CompletionsPage, CompletionsRequest, corrupt};
use punctual_core::{QueueName, Result, TaskKey, Timestamp};
use rusqlite::{Connection, Row, params};

use crate::codes::Sql;
use crate::list::bad_cursor;
use crate::map_err;
use crate::queues::queue_id;

/// A record's columns after its key, in the order [`record_of`] reads them.
const RECORD_COLUMNS: &str = "task_id, completed_at, attempts, occurrence, unique_until";

/// The record of `queue`'s `key` whose [`RECORD_COLUMNS`] `row` holds from column
/// `first` on.
fn record_of(queue: &QueueName, key: TaskKey, row: &Row<'_>, first: usize) -> Result<Completed> {
    let column = |at: usize| -> Result<i64> { row.get(first + at).map_err(map_err) };
    let count = |n: i64| u32::try_from(n).map_err(corrupt);
    let mut record = Completed::new(
        queue.clone(),
        key,
        u64::try_from(column(0)?).map_err(corrupt)?,
        Timestamp::from_millis(column(1)?),
        Timestamp::from_millis(column(4)?),
    );
    record.attempts = count(column(2)?)?;
    record.occurrence = count(column(3)?)?;
    Ok(record)
}

static HOLDING: Sql = Sql::new(|| format!("SELECT {RECORD_COLUMNS} FROM completions WHERE queue_id = ?1 AND key = ?2"));

/// The record of (`queue_id`, `key`) if it holds the key at `now` (see
/// [`Completed::holds_at`]); one that no longer does is deleted.
pub(crate) fn holding(
    conn: &Connection,
    queue_id: i64,
    queue: &QueueName,
    key: &TaskKey,
    now: Timestamp,
) -> Result<Option<Completed>> {
    let record = {
        let mut stmt = conn.prepare_cached(&HOLDING).map_err(map_err)?;
        let mut rows = stmt.query(params![queue_id, key.as_str()]).map_err(map_err)?;
        let Some(row) = rows.next().map_err(map_err)? else { return Ok(None) };
        record_of(queue, key.clone(), row, 0)?
    };
    if record.holds_at(now) {
        return Ok(Some(record));
    }
    conn.prepare_cached("DELETE FROM completions WHERE queue_id = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.execute(params![queue_id, key.as_str()]))
        .map_err(map_err)?;
    Ok(None)
}

/// A page of the records of queue `?1` after key `?2` that hold at `?3`, by key, at
/// most `?4`: one range of the primary key from the cursor on, already in key order.
pub(crate) static PAGE: Sql = Sql::new(|| {
    format!(
        "SELECT key, {RECORD_COLUMNS} FROM completions WHERE queue_id = ?1 AND key > ?2 AND unique_until > ?3 \
         ORDER BY key LIMIT ?4"
    )
});

/// One page of the queue's records that hold at `req.now`, by key ([`PAGE`]); the
/// cursor is the page's last key. One row more is read to know whether more follow.
pub(crate) fn page(conn: &Connection, req: &CompletionsRequest) -> Result<CompletionsPage> {
    // Every key sorts after the empty string, which no key is.
    let after = match &req.cursor {
        Some(cursor) => TaskKey::new(cursor.as_str()).map_err(|_| bad_cursor())?.to_string(),
        None => String::new(),
    };
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(CompletionsPage::new(Vec::new(), None)) };
    let limit = req.limit.max(1) as usize;
    let mut stmt = conn.prepare_cached(&PAGE).map_err(map_err)?;
    let mut rows = stmt.query(params![queue_id, after, req.now.as_millis(), limit as i64 + 1]).map_err(map_err)?;
    let mut records = Vec::with_capacity(limit);
    let mut more = false;
    while let Some(row) = rows.next().map_err(map_err)? {
        if records.len() == limit {
            more = true;
            break;
        }
        let key = TaskKey::new(row.get::<_, String>(0).map_err(map_err)?).map_err(corrupt)?;
        records.push(record_of(&req.queue, key, row, 1)?);
    }
    let next_cursor = records.last().filter(|_| more).map(|last: &Completed| last.key.to_string());
    Ok(CompletionsPage::new(records, next_cursor))
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
