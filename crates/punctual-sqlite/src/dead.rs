//! Dead tasks: retrying one or many (every dead task, by tag, or by keys, in bounded
//! batches), deleting one, and deleting those dead past a retention (sweep).
//!
//! Invariants: only dead tasks are retried or deleted here, whatever a request names;
//! a retried task is scheduled again in its lane's code, due now, its attempts 0, and a
//! task named twice in one batch is retried once. A sweep deletes the earliest deaths
//! first (`updated_at` of a dead row is when it died), from the partial index of dead
//! rows, at most its limit.

use std::collections::BTreeSet;

use punctual_core::history::{Actor, EventKind, HistoryEvent, encode};
use punctual_core::store::{
    DeadSelection, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, SweepRequest, Swept, corrupt,
};
use punctual_core::{QueueName, Result, StoreId, Task, TaskKey, TaskState, Timestamp};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, Sql, scheduled_by_target};
use crate::history::{self, store_now};
use crate::list::bad_cursor;
use crate::map_err;
use crate::queues::queue_id;
use crate::tasks::{delete_ids, delete_told, load, load_by_id};

/// The dead row `?1` scheduled again, due `?2`, with the history event `?3`: its key
/// and how many events it has pending.
static REVIVE: Sql = Sql::new(|| {
    format!(
        "UPDATE tasks SET state = {}, due_at = ?2, attempts = 0, updated_at = ?2, {} WHERE id = ?1 \
         RETURNING key, pending_count",
        scheduled_by_target(),
        history::appending("?3")
    )
});

/// The dead tasks of queue `?1` due by `?2`, at most `?3`, in due order; each with
/// whether it is dead (always), in the shape of [`TAGGED_AFTER`]'s rows.
static DEAD_DUE_BY: Sql = Sql::new(|| {
    format!(
        "SELECT id, state = {DEAD} FROM tasks WHERE queue_id = ?1 AND state = {DEAD} AND due_at <= ?2 \
         ORDER BY due_at, id LIMIT ?3"
    )
});

/// The tasks of queue `?1` tagged `?2` after the task id `?3`, at most `?4`, in task id
/// order; each with whether it is dead.
static TAGGED_AFTER: Sql = Sql::new(|| {
    format!(
        "SELECT g.task_id, t.state = {DEAD} FROM tags g CROSS JOIN tasks t ON t.id = g.task_id \
         WHERE g.queue_id = ?1 AND g.tag = ?2 AND g.task_id > ?3 ORDER BY g.task_id LIMIT ?4"
    )
});

/// The tasks of queue `?1` dead by `?2`, at most `?3`, earliest death first.
static DIED_BY: Sql = Sql::new(|| {
    format!(
        "SELECT id FROM tasks WHERE queue_id = ?1 AND state = {DEAD} AND updated_at <= ?2 \
         ORDER BY updated_at, id LIMIT ?3"
    )
});

static OLDEST_DEATH: Sql =
    Sql::new(|| format!("SELECT MIN(updated_at) FROM tasks WHERE queue_id = ?1 AND state = {DEAD}"));

/// Moves the dead task `id` of the queue `queue_id` back to scheduled in its lane, due
/// `now`, attempts 0, as `by` asked.
fn revive(conn: &Connection, queue_id: i64, id: i64, now: Timestamp, by: Option<&Actor>) -> Result<()> {
    let retried = encode(&HistoryEvent::retried(by, now));
    let (key, pending): (String, i64) = conn
        .prepare_cached(&REVIVE)
        .and_then(|mut stmt| {
            stmt.query_row(params![id, now.as_millis(), retried], |row| Ok((row.get(0)?, row.get(1)?)))
        })
        .map_err(map_err)?;
    history::settle(conn, queue_id, &key, id, pending)
}

pub(crate) fn retry_dead(conn: &Connection, store: StoreId, req: &RetryDeadRequest) -> Result<Option<Task>> {
    let queue = &req.queue;
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(None) };
    match load(conn, store, queue_id, queue, req.key.as_str())? {
        Some(task) if task.state == TaskState::Dead => {
            let id = i64::try_from(task.meta.id).map_err(corrupt)?;
            revive(conn, queue_id, id, req.now, req.by.as_ref())?;
            load_by_id(conn, store, id, queue).map(Some)
        }
        _ => Ok(None),
    }
}

/// Cursors: with every dead task, `<bound>`, the first batch's now (dead tasks due
/// after it died during the walk); with a tag, `<id>`, the last task id looked at (the
/// tag's rows are walked in task id order).
pub(crate) fn retry_dead_batch(conn: &Connection, store: StoreId, req: &RetryDeadBatchRequest) -> Result<RetriedDead> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(RetriedDead::new(0, None)) };
    let now = req.now;
    let limit = i64::from(req.limit.max(1));
    let cursor = req.cursor.as_deref().map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;
    // (task id, whether it is dead) of each task looked at.
    let ids = |sql: &str, args: &[&dyn rusqlite::ToSql]| -> Result<Vec<(i64, bool)>> {
        conn.prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_map(args, |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
            .map_err(map_err)
    };
    let (looked_at, next) = match &req.selection {
        DeadSelection::All => {
            let bound = cursor.unwrap_or(now.as_millis());
            let found = ids(&DEAD_DUE_BY, &[&queue_id, &bound, &limit])?;
            (found, bound.to_string())
        }
        DeadSelection::Tagged(tag) => {
            let found = ids(&TAGGED_AFTER, &[&queue_id, &tag.as_str(), &cursor.unwrap_or(i64::MIN), &limit])?;
            let last = found.last().map_or(0, |(id, _)| *id);
            (found, last.to_string())
        }
        DeadSelection::Keys(keys) => {
            let mut found = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(task) = load(conn, store, queue_id, &req.queue, key.as_str())? {
                    found.push((i64::try_from(task.meta.id).map_err(corrupt)?, task.state == TaskState::Dead));
                }
            }
            // Every key in one batch: nothing follows.
            (found, String::new())
        }
    };
    let more = looked_at.len() as i64 >= limit && !matches!(req.selection, DeadSelection::Keys(_));
    // A key given twice was read twice, dead both times: it is retried once.
    let mut revived = BTreeSet::new();
    for &(id, dead) in &looked_at {
        if dead && revived.insert(id) {
            revive(conn, queue_id, id, now, req.by.as_ref())?;
        }
    }
    let retried = revived.len() as u64;
    Ok(RetriedDead::new(retried, more.then_some(next)))
}

pub(crate) fn delete_dead(
    conn: &Connection,
    store: StoreId,
    queue: &QueueName,
    key: &TaskKey,
    by: Option<&Actor>,
) -> Result<bool> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(false) };
    match load(conn, store, queue_id, queue, key.as_str())? {
        Some(task) if task.state == TaskState::Dead => {
            let deleted = HistoryEvent::new(store_now(), EventKind::Deleted, by, None);
            delete_told(conn, queue_id, &task, &deleted).map(|()| true)
        }
        _ => Ok(false),
    }
}

pub(crate) fn sweep_dead(conn: &Connection, store: StoreId, req: &SweepRequest) -> Result<Swept> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Swept::new(0, None)) };
    // Both queries read the partial index of dead rows by time of death.
    let ids: Vec<i64> = conn
        .prepare_cached(&DIED_BY)
        .and_then(|mut stmt| {
            stmt.query_map(params![queue_id, req.died_by.as_millis(), req.limit.max(1)], |row| row.get(0))?.collect()
        })
        .map_err(map_err)?;
    let deleted = HistoryEvent::new(store_now(), EventKind::Deleted, None, None);
    delete_ids(conn, store, queue_id, &req.queue, &ids, &deleted)?;
    let oldest: Option<i64> = conn
        .prepare_cached(&OLDEST_DEATH)
        .and_then(|mut stmt| stmt.query_row([queue_id], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(Swept::new(ids.len() as u64, oldest.map(Timestamp::from_millis)))
}
