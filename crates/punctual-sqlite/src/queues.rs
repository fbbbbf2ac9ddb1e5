//! A queue's id: tasks and tag rows refer to their queue by its row in `queues`, to
//! keep rows small.
//!
//! Invariant: a queue gets its id with its first task and keeps it (rows of `queues`
//! are never deleted), so a queue without an id holds no task, and an operation on it
//! has nothing to read or change. A [`QueueIds`] remembers the ids one job read, and
//! lives no longer than the job: an id it was given by a row the job made and then
//! undid is forgotten with it.

use punctual_core::{QueueName, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::map_err;

/// The id of a queue, if it has ever held a task.
pub(crate) fn queue_id(conn: &Connection, queue: &QueueName) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM queues WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([queue.as_str()], |row| row.get(0)).optional())
        .map_err(map_err)
}

/// The ids of the queues one job of the writer read, so a batch of calls on one queue
/// (a batch of schedules or of acks) looks its id up once, not once per call.
#[derive(Default)]
pub(crate) struct QueueIds(Vec<(QueueName, i64)>);

impl QueueIds {
    fn known(&self, queue: &QueueName) -> Option<i64> {
        self.0.iter().find(|(name, _)| name == queue).map(|&(_, id)| id)
    }

    /// [`queue_id`], once per queue.
    pub(crate) fn get(&mut self, conn: &Connection, queue: &QueueName) -> Result<Option<i64>> {
        if let Some(id) = self.known(queue) {
            return Ok(Some(id));
        }
        let id = queue_id(conn, queue)?;
        self.0.extend(id.map(|id| (queue.clone(), id)));
        Ok(id)
    }

    /// [`queue_id_or_create`], once per queue.
    pub(crate) fn get_or_create(&mut self, conn: &Connection, queue: &QueueName) -> Result<i64> {
        if let Some(id) = self.known(queue) {
            return Ok(id);
        }
        let id = queue_id_or_create(conn, queue)?;
        self.0.push((queue.clone(), id));
        Ok(id)
    }
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
