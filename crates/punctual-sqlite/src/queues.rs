//! A queue's id: tasks and tag rows refer to their queue by its row in `queues`, to
//! keep rows small.
//!
//! Invariant: a queue gets its id with its first task and keeps it (rows of `queues`
//! are never deleted), so a queue without an id holds no task, and an operation on it
//! has nothing to read or change.

use punctual_core::{QueueName, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::map_err;

/// The id of a queue, if it has ever held a task.
pub(crate) fn queue_id(conn: &Connection, queue: &QueueName) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM queues WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([queue.as_str()], |row| row.get(0)).optional())
        .map_err(map_err)
}

/// The id of a queue, given one now if it has none.
pub(crate) fn queue_id_or_create(conn: &Connection, queue: &QueueName) -> Result<i64> {
    if let Some(id) = queue_id(conn, queue)? {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO queues (name) VALUES (?1)")
        .and_then(|mut stmt| stmt.insert([queue.as_str()]))
        .map_err(map_err)
}
