//! Reaping expired leases: each task back to scheduled in its lane, due now, or dead
//! when that was its last attempt; and dropping as many completion records of dedupe
//! windows that ended (see `completions`).
//!
//! Invariants: a reap reads only leased rows whose lease expired, earliest expiry
//! first, at most its limit (from the partial index `tasks_by_expiry`); every reaped task
//! counts the expired lease as an attempt, and keeps its due time when it dies.

use punctual_core::store::{ReapResult, Reaped, corrupt};
use punctual_core::{QueueName, Result, TaskKey, TaskState, Timestamp};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, LEASED, Sql, scheduled_by_target};
use crate::{completions, map_err};

static EXPIRED: Sql = Sql::new(|| {
    format!(
        "SELECT t.id, q.name, t.key, t.attempts, t.max_attempts, t.lease_expires_at FROM tasks t \
         JOIN queues q ON q.id = t.queue_id \
         WHERE t.state = {LEASED} AND t.lease_expires_at <= ?1 ORDER BY t.lease_expires_at LIMIT ?2"
    )
});

/// The row `?1` back to scheduled, due `?3`, in its lane; or dead when `?2`, its due
/// time kept; `?4` its last error.
static REAPED: Sql = Sql::new(|| {
    format!(
        "UPDATE tasks SET state = CASE WHEN ?2 THEN {DEAD} ELSE {} END, \
         due_at = CASE WHEN ?2 THEN due_at ELSE ?3 END, lease_expires_at = NULL, \
         attempts = attempts + 1, last_error = ?4, updated_at = ?3 WHERE id = ?1",
        scheduled_by_target()
    )
});

static NEXT_EXPIRY: Sql =
    Sql::new(|| format!("SELECT MIN(lease_expires_at) FROM tasks WHERE state = {LEASED} AND lease_expires_at > ?1"));

pub(crate) fn reap(conn: &Connection, now: Timestamp, limit: u32) -> Result<ReapResult> {
    let expired: Vec<(i64, String, String, i64, i64, i64)> = conn
        .prepare_cached(&EXPIRED)
        .and_then(|mut stmt| {
            stmt.query_map(params![now.as_millis(), limit.max(1)], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
            })?
            .collect()
        })
        .map_err(map_err)?;
    let mut reaped = Vec::with_capacity(expired.len());
    for (id, queue, key, attempts, max_attempts, expired_at) in expired {
        let error = format!("lease expired at {} before the handler finished", Timestamp::from_millis(expired_at));
        let dies = attempts + 1 >= max_attempts;
        let state = if dies { TaskState::Dead } else { TaskState::Scheduled };
        conn.prepare_cached(&REAPED)
            .and_then(|mut stmt| stmt.execute(params![id, dies, now.as_millis(), error]))
            .map_err(map_err)?;
        reaped.push(Reaped::new(QueueName::new(queue).map_err(corrupt)?, TaskKey::new(key).map_err(corrupt)?, state));
    }
    completions::drop_ended(conn, now, limit)?;
    let next_expiry: Option<i64> = conn
        .prepare_cached(&NEXT_EXPIRY)
        .and_then(|mut stmt| stmt.query_row([now.as_millis()], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(ReapResult::new(reaped, next_expiry.map(Timestamp::from_millis)))
}
