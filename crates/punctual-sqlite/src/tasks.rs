//! A task's row by key or by id: reading it whole (`get`, and `load` for the other
//! operations), and deleting it with its rows in `tags`.
//!
//! Invariant: a task's rows in `tags` are the tags of its `tags` column: written with
//! the row (`schedule`), deleted with it ([`delete_task`]), so cancelling a tag reads
//! exactly the tasks that hold it.

use punctual_core::history::HistoryEvent;
use punctual_core::store::corrupt;
use punctual_core::{QueueName, Result, StoreId, Tag, Task, TaskKey};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codes::Sql;
use crate::map_err;
use crate::queues::queue_id;
use crate::row::{RawTask, TASK_COLUMN_COUNT, TASK_COLUMNS};

static LOAD_COUNTING: Sql =
    Sql::new(|| format!("SELECT {TASK_COLUMNS}, pending_count FROM tasks WHERE queue_id = ?1 AND key = ?2"));
static LOAD_BY_ID: Sql = Sql::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"));

pub(crate) fn get(conn: &Connection, store: StoreId, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
    match queue_id(conn, queue)? {
        Some(queue_id) => load(conn, store, queue_id, queue, key.as_str()),
        None => Ok(None),
    }
}

/// The task `key` of the queue `queue_id`, named `queue`.
pub(crate) fn load(
    conn: &Connection,
    store: StoreId,
    queue_id: i64,
    queue: &QueueName,
    key: &str,
) -> Result<Option<Task>> {
    Ok(match load_counting(conn, store, queue_id, queue, key)? {
        Some(KeyRow::Task(task, _)) => Some(*task),
        Some(KeyRow::Kept(_)) | None => None,
    })
}

/// What a key's row in `tasks` is.
pub(crate) enum KeyRow {
    /// Its task, with how many history events it has pending (see `history`).
    Task(Box<Task>, i64),
    /// The row `id` of its task that completed done, kept as its newest history events
    /// (`codes::KEPT`): no task.
    Kept(i64),
}

/// The row of the key `key` of the queue `queue_id`, named `queue`.
pub(crate) fn load_counting(
    conn: &Connection,
    store: StoreId,
    queue_id: i64,
    queue: &QueueName,
    key: &str,
) -> Result<Option<KeyRow>> {
    let raw = conn
        .prepare_cached(&LOAD_COUNTING)
        .and_then(|mut stmt| {
            stmt.query_row(params![queue_id, key], |row| Ok((RawTask::from_row(row)?, row.get(TASK_COLUMN_COUNT)?)))
                .optional()
        })
        .map_err(map_err)?;
    raw.map(|(raw, pending)| match raw.kept() {
        Some(id) => Ok(KeyRow::Kept(id)),
        None => Ok(KeyRow::Task(Box::new(raw.decode(store, queue)?), pending)),
    })
    .transpose()
}

/// Moves the events of the kept row `id` of the key `key` of the queue `queue_id` to
/// the key's history and deletes the row, so that a task can be written under the key.
pub(crate) fn retire_kept(conn: &Connection, queue_id: i64, key: &str, id: i64) -> Result<()> {
    crate::history::move_pending(conn, queue_id, key, id, None)?;
    delete_row(conn, id)
}

/// The task `id`, of the queue named `queue`.
pub(crate) fn load_by_id(conn: &Connection, store: StoreId, id: i64, queue: &QueueName) -> Result<Task> {
    let raw = conn
        .prepare_cached(&LOAD_BY_ID)
        .and_then(|mut stmt| stmt.query_row([id], RawTask::from_row))
        .map_err(map_err)?;
    raw.decode(store, queue)
}

/// Adds the rows in `tags` of the task `task_id`.
pub(crate) fn write_tags(conn: &Connection, queue_id: i64, task_id: i64, tags: &[Tag]) -> Result<()> {
    let mut stmt = conn
        .prepare_cached("INSERT OR IGNORE INTO tags (queue_id, tag, task_id) VALUES (?1, ?2, ?3)")
        .map_err(map_err)?;
    for tag in tags {
        stmt.execute(params![queue_id, tag.as_str(), task_id]).map_err(map_err)?;
    }
    Ok(())
}

/// Removes the rows in `tags` of the task `task_id`.
pub(crate) fn delete_tags(conn: &Connection, queue_id: i64, task_id: i64, tags: &[Tag]) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("DELETE FROM tags WHERE queue_id = ?1 AND tag = ?2 AND task_id = ?3").map_err(map_err)?;
    for tag in tags {
        stmt.execute(params![queue_id, tag.as_str(), task_id]).map_err(map_err)?;
    }
    Ok(())
}

/// Deletes `task`'s row and its rows in `tags`.
pub(crate) fn delete_task(conn: &Connection, queue_id: i64, task: &Task) -> Result<()> {
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    delete_tags(conn, queue_id, id, &task.tags)?;
    delete_row(conn, id)
}

/// Deletes the row `id` of `tasks` (its group's row follows by the triggers).
fn delete_row(conn: &Connection, id: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM tasks WHERE id = ?1").and_then(|mut stmt| stmt.execute([id])).map_err(map_err)?;
    Ok(())
}

/// Deletes `task` (as [`delete_task`]), moving its pending history events and then
/// `event`, which tells why, to its key's history.
pub(crate) fn delete_told(conn: &Connection, queue_id: i64, task: &Task, event: &HistoryEvent) -> Result<()> {
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    crate::history::move_pending(conn, queue_id, task.key.as_str(), id, Some(event))?;
    delete_task(conn, queue_id, task)
}

/// Deletes the tasks `ids` of one queue as `cancel` deletes one: each row with its
/// tags, and `event` appended to its history.
pub(crate) fn delete_ids(
    conn: &Connection,
    store: StoreId,
    queue_id: i64,
    queue: &QueueName,
    ids: &[i64],
    event: &HistoryEvent,
) -> Result<()> {
    for &id in ids {
        delete_told(conn, queue_id, &load_by_id(conn, store, id, queue)?, event)?;
    }
    Ok(())
}
