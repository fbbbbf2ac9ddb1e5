//! Reaping expired leases: each task back to scheduled in its lane, due now, or dead
//! when that was its last attempt; and dropping as many completion records of dedupe
//! windows that ended (see `completions`).
//!
//! Invariants: a reap reads only leased rows whose lease expired, earliest expiry
//! first, at most its limit (from the partial index `tasks_by_expiry`); every reaped task
//! counts the expired lease as an attempt, and keeps its due time when it dies.

use punctual_core::history::{HistoryEvent, encode};
use punctual_core::store::{ReapResult, Reaped, corrupt};
use punctual_core::{QueueName, Result, TaskKey, TaskState, Timestamp, transitions};
use rusqlite::{Connection, params};

use crate::codes::{DEAD, LEASED, Sql, scheduled_by_target};
use crate::{completions, history, map_err};

static EXPIRED: Sql = Sql::new(|| {
    format!(
        "SELECT t.id, q.name, t.key, t.attempts, t.max_attempts, t.lease_expires_at, t.queue_id, t.fence, \
         t.pending_count FROM tasks t \
         JOIN queues q ON q.id = t.queue_id \
         WHERE t.state = {LEASED} AND t.lease_expires_at <= ?1 ORDER BY t.lease_expires_at LIMIT ?2"
    )
});

/// The row `?1` back to scheduled, due `?3`, in its lane; or dead when `?2`, its due
/// time kept; `?4` its last error, `?5` the history event that tells it.
static REAPED: Sql = Sql::new(|| {
    format!(
        "UPDATE tasks SET state = CASE WHEN ?2 THEN {DEAD} ELSE {} END, \
         due_at = CASE WHEN ?2 THEN due_at ELSE ?3 END, lease_expires_at = NULL, \
         attempts = attempts + 1, last_error = ?4, updated_at = ?3, {} WHERE id = ?1",
        scheduled_by_target(),
        history::appending("?5")
    )
});

static NEXT_EXPIRY: Sql =
    Sql::new(|| format!("SELECT MIN(lease_expires_at) FROM tasks WHERE state = {LEASED} AND lease_expires_at > ?1"));

/// A leased row whose lease expired.
struct Expired {
    id: i64,
    queue: String,
    key: String,
    attempts: i64,
    max_attempts: i64,
    expired_at: i64,
    queue_id: i64,
    fence: i64,
    pending_count: i64,
}

pub(crate) fn reap(conn: &Connection, now: Timestamp, limit: u32) -> Result<ReapResult> {
    let expired: Vec<Expired> = conn
        .prepare_cached(&EXPIRED)
        .and_then(|mut stmt| {
            stmt.query_map(params![now.as_millis(), limit.max(1)], |row| {
                Ok(Expired {
                    id: row.get(0)?,
                    queue: row.get(1)?,
                    key: row.get(2)?,
                    attempts: row.get(3)?,
                    max_attempts: row.get(4)?,
                    expired_at: row.get(5)?,
                    queue_id: row.get(6)?,
                    fence: row.get(7)?,
                    pending_count: row.get(8)?,
                })
            })?
            .collect()
        })
        .map_err(map_err)?;
    let mut reaped = Vec::with_capacity(expired.len());
    for Expired { id, queue, key, attempts, max_attempts, expired_at, queue_id, fence, pending_count } in expired {
        let error = transitions::expiry_error(Timestamp::from_millis(expired_at));
        let dies = attempts + 1 >= max_attempts;
        let state = if dies { TaskState::Dead } else { TaskState::Scheduled };
        let attempt = u32::try_from(attempts + 1).map_err(corrupt)?;
        let event = HistoryEvent::expired(attempt, u64::try_from(fence).map_err(corrupt)?, state, &error, now);
        conn.prepare_cached(&REAPED)
            .and_then(|mut stmt| stmt.execute(params![id, dies, now.as_millis(), error, encode(&event)]))
            .map_err(map_err)?;
        history::settle(conn, queue_id, &key, id, pending_count + 1)?;
        reaped.push(Reaped::new(QueueName::new(queue).map_err(corrupt)?, TaskKey::new(key).map_err(corrupt)?, state));
    }
    completions::drop_ended(conn, now, limit)?;
    let next_expiry: Option<i64> = conn
        .prepare_cached(&NEXT_EXPIRY)
        .and_then(|mut stmt| stmt.query_row([now.as_millis()], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(ReapResult::new(reaped, next_expiry.map(Timestamp::from_millis)))
}
