//! Each queue's task counts by state, and its next due time over both lanes.
//!
//! Invariants: each state code's count is added to the state it decodes to
//! (`codes::state_of`), so both lanes' scheduled tasks count as scheduled and an
//! unknown code is an error; a done task's kept row (`codes::KEPT`) is no task and is
//! not counted; the stats of every queue leave out a queue that holds no task.

use punctual_core::store::{QueueStats, corrupt};
use punctual_core::{Lane, QueueName, Result};
use rusqlite::Connection;

use crate::codes::{ANY_TASK, Sql, counts_by_state};
use crate::leasing::next_due;
use crate::map_err;
use crate::queues::queue_id;

/// A queue's task counts by state code.
static COUNTS: Sql =
    Sql::new(|| format!("SELECT state, COUNT(*) FROM tasks WHERE queue_id = ?1 AND {ANY_TASK} GROUP BY state"));

fn stats_of(conn: &Connection, queue_id: i64, name: QueueName) -> Result<QueueStats> {
    let rows: Vec<(i64, i64)> = conn
        .prepare_cached(&COUNTS)
        .and_then(|mut stmt| stmt.query_map([queue_id], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .map_err(map_err)?;
    let (scheduled, leased, dead) = counts_by_state(rows)?;
    let handler_lane = next_due(conn, queue_id, Lane::Handler)?;
    let target_lane = next_due(conn, queue_id, Lane::Target)?;
    let next_due_at = handler_lane.into_iter().chain(target_lane).min();
    Ok(QueueStats::new(name, scheduled, leased, dead, next_due_at))
}

/// Every queue of the `queues` table, by name: a row is made for a queue's first task
/// or record and kept.
pub(crate) fn queue_names(conn: &Connection) -> Result<Vec<QueueName>> {
    let names: Vec<String> = conn
        .prepare_cached("SELECT name FROM queues ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    names.into_iter().map(|name| QueueName::new(name).map_err(corrupt)).collect()
}

pub(crate) fn stats(conn: &Connection, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
    if let Some(queue) = queue {
        return match queue_id(conn, queue)? {
            Some(id) => Ok(vec![stats_of(conn, id, queue.clone())?]),
            None => Ok(vec![QueueStats::new(queue.clone(), 0, 0, 0, None)]),
        };
    }
    let queues: Vec<(i64, String)> = conn
        .prepare_cached("SELECT id, name FROM queues ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .map_err(map_err)?;
    let mut all = Vec::with_capacity(queues.len());
    for (id, name) in queues {
        let stats = stats_of(conn, id, QueueName::new(name).map_err(corrupt)?)?;
        if stats.scheduled + stats.leased + stats.dead > 0 {
            all.push(stats);
        }
    }
    Ok(all)
}
