//! Deleting scheduled, leased or dead tasks on request: one by key, every task holding
//! a tag, or a queue's tasks by state in bounded batches (purge).
//!
//! Invariants: a task is deleted with its rows in `tags` (`tasks::delete_task`); a
//! purge batch deletes at most its limit, in due order, and reads at most that many
//! rows of each state code it covers, however many the queue holds (each code is one
//! range of `tasks_by_due`; checked in `query_plans`).

use punctual_core::history::{Actor, EventKind, HistoryEvent};
use punctual_core::store::PurgeRequest;
use punctual_core::store::PurgeSelection;
use punctual_core::{QueueName, Result, StoreId, Tag, TaskKey, transitions};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, LEASED, SCHEDULED_CODES, Sql};
use crate::history::store_now;
use crate::map_err;
use crate::queues::queue_id;
use crate::tasks::{delete_ids, delete_told, load, load_by_id};

pub(crate) fn cancel(
    conn: &Connection,
    store: StoreId,
    queue: &QueueName,
    key: &TaskKey,
    by: Option<&Actor>,
) -> Result<bool> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(false) };
    match load(conn, store, queue_id, queue, key.as_str())? {
        Some(task) => {
            delete_told(conn, queue_id, &task, &HistoryEvent::cancelled(by, None, store_now())).map(|()| true)
        }
        None => Ok(false),
    }
}

pub(crate) fn cancel_tag(
    conn: &Connection,
    store: StoreId,
    queue: &QueueName,
    tag: &Tag,
    by: Option<&Actor>,
) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(0) };
    let ids: Vec<i64> = conn
        .prepare_cached("SELECT task_id FROM tags WHERE queue_id = ?1 AND tag = ?2")
        .and_then(|mut stmt| stmt.query_map(params![queue_id, tag.as_str()], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    let cancelled = HistoryEvent::cancelled(by, Some(tag.as_str()), store_now());
    delete_ids(conn, store, queue_id, queue, &ids, &cancelled)?;
    Ok(ids.len() as u64)
}

/// The first `?2` tasks of queue `?1` with state code `code`, in due order: a range of
/// `tasks_by_due`.
fn first_of(code: i64) -> String {
    format!(
        "SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = {code} ORDER BY due_at, id LIMIT ?2)"
    )
}

/// The first `?2` tasks of queue `?1` among those of `codes`, in due order: every task
/// is among the first of its code, so the ranges of the codes are merged, where a
/// plain `ORDER BY due_at` over several codes would sort them all.
fn first_among(codes: &[i64]) -> String {
    let ranges: Vec<String> = codes.iter().map(|&code| first_of(code)).collect();
    format!("SELECT id FROM ( {} ) ORDER BY due_at, id LIMIT ?2", ranges.join(" UNION ALL "))
}

static PURGE_SCHEDULED: Sql = Sql::new(|| first_among(&SCHEDULED_CODES));
static PURGE_DEAD: Sql =
    Sql::new(|| format!("SELECT id FROM tasks WHERE queue_id = ?1 AND state = {DEAD} ORDER BY due_at, id LIMIT ?2"));
static PURGE_ALL: Sql = Sql::new(|| first_among(&[SCHEDULED_CODES.as_slice(), &[LEASED, DEAD]].concat()));

/// A purge's batch: the first `?2` tasks of queue `?1` in the selection, in due order.
/// Scheduled is four codes, one per lane with and without a group.
pub(crate) fn purge_sql(selection: PurgeSelection) -> &'static str {
    match selection {
        PurgeSelection::Scheduled => &PURGE_SCHEDULED,
        PurgeSelection::Dead => &PURGE_DEAD,
        PurgeSelection::All => &PURGE_ALL,
    }
}

pub(crate) fn purge(conn: &Connection, store: StoreId, req: &PurgeRequest) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(0) };
    let ids: Vec<i64> = conn
        .prepare_cached(purge_sql(req.selection))
        .and_then(|mut stmt| stmt.query_map(params![queue_id, req.limit], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    let purged = HistoryEvent::new(store_now(), EventKind::Purged, req.by.as_ref(), None);
    for &id in &ids {
        let task = load_by_id(conn, store, id, &req.queue)?;
        debug_assert!(transitions::is_purged(&task, req.selection), "the query selects what the rule purges");
        delete_told(conn, queue_id, &task, &purged)?;
    }
    Ok(ids.len() as u64)
}
