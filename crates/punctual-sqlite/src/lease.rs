//! Leasing a lane's due tasks, and what a lease's holder does with it short of
//! completing it: extend it, release it. `live` decides for every write under a lease
//! (`complete` too) whether the lease still holds.
//!
//! Invariants: a lease reads only its lane's scheduled code, one range of
//! `tasks_by_due` (checked in `query_plans`), so it costs what it takes whatever the
//! other lane holds; it takes the highest priority first, each priority earliest due
//! first (the rows of priority above 0 from `tasks_urgent`, one range per priority,
//! looked at only when the lane has such rows), and gives every task a fence
//! greater than its last and at least the open's floor, so fences never repeat. A write
//! under a lease changes nothing unless the token is live for the row.

use punctual_core::store::{ExtendRequest, Lease, LeaseBatch, LeaseRequest, LeaseToken, corrupt};
use std::cmp::Reverse;

use punctual_core::{Error, Lane, Priority, Result, StoreId, Task, TaskMeta, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codes::{LEASED, Sql, scheduled_by_target, scheduled_code, state_of};
use crate::map_err;
use crate::queues::queue_id;
use crate::row::{RawTask, TASK_COLUMNS, blank_task, tags_of, unique_of};

/// The earliest due time among the scheduled tasks of queue `?1` with state code `?2`.
pub(crate) const NEXT_DUE: &str = "SELECT MIN(due_at) FROM tasks WHERE queue_id = ?1 AND state = ?2";

/// The earliest due time among the queue's scheduled tasks of `lane`.
pub(crate) fn next_due(conn: &Connection, queue_id: i64, lane: Lane) -> Result<Option<Timestamp>> {
    let due: Option<i64> = conn
        .prepare_cached(NEXT_DUE)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, scheduled_code(lane)], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(due.map(Timestamp::from_millis))
}

/// A lease's batch: up to `?4` tasks of queue `?1` scheduled in the lane of state code
/// `?6` and due by `?2`, leased until `?3` with fences of at least `?5`. One statement
/// leases the whole batch: the due tasks are picked first (SQLite computes the `IN`
/// list before changing any row), a range of `tasks_by_due` that holds only the lane's
/// tasks; then each is updated and returned, in no particular order.
pub(crate) static LEASE: Sql = Sql::new(|| lease_sql(""));

/// [`LEASE`] of the tasks of priority `?7` (above 0) only, from `tasks_urgent`.
pub(crate) static LEASE_AT_PRIORITY: Sql = Sql::new(|| lease_sql("AND priority > 0 AND priority = ?7"));

/// A lease's statement whose pick has the terms `only` besides the queue, lane and due time.
fn lease_sql(only: &str) -> String {
    format!(
        "UPDATE tasks SET state = {LEASED}, lease_expires_at = ?3, fence = MAX(fence + 1, ?5), updated_at = ?2, \
         debounce_until = NULL \
         WHERE id IN (SELECT id FROM tasks WHERE queue_id = ?1 AND state = ?6 {only} AND due_at <= ?2 \
                      ORDER BY due_at, id LIMIT ?4) \
         RETURNING {TASK_COLUMNS}"
    )
}

/// The rows `sql` (one of the lease statements) leases with `args`.
fn leased(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<Vec<RawTask>> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.query_map(args, RawTask::from_row)?.collect()).map_err(map_err)
}

/// Whether queue `?1` has scheduled tasks of priority above 0 in the lane of code `?2`.
pub(crate) const HAS_URGENT: &str =
    "SELECT EXISTS (SELECT 1 FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0)";

/// `fence_floor`: every fence handed out is at least this (see the crate docs).
pub(crate) fn lease(conn: &Connection, store: StoreId, req: &LeaseRequest, fence_floor: i64) -> Result<LeaseBatch> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(LeaseBatch::new(Vec::new(), None)) };
    let now = req.now.as_millis();
    let expires = req.now.saturating_add(req.lease_for).as_millis();
    let lane_code = scheduled_code(req.lane);
    let mut room = req.max.max(1);
    let mut raws: Vec<RawTask> = Vec::new();
    let has_urgent: bool = conn
        .prepare_cached(HAS_URGENT)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, lane_code], |row| row.get(0)))
        .map_err(map_err)?;
    if has_urgent {
        for priority in Priority::highest_first().filter(|p| *p > Priority::LOWEST) {
            if room == 0 {
                break;
            }
            let args = params![queue_id, now, expires, room, fence_floor, lane_code, priority.get()];
            let taken = leased(conn, &LEASE_AT_PRIORITY, args)?;
            room -= u32::try_from(taken.len()).unwrap_or(room);
            raws.extend(taken);
        }
    }
    // With room left, every due task of a priority above 0 was taken: the rest are 0.
    if room > 0 {
        raws.extend(leased(conn, &LEASE, params![queue_id, now, expires, room, fence_floor, lane_code])?);
    }
    let mut leases =
        raws.into_iter().map(|raw| raw.decode(store, &req.queue).map(Lease::of)).collect::<Result<Vec<Lease>>>()?;
    leases.sort_by_key(|lease| (Reverse(lease.task.priority), lease.task.due_at, lease.task.meta.id));
    Ok(LeaseBatch::new(leases, next_due(conn, queue_id, req.lane)?))
}

/// The task of a live lease, or `LeaseLost`: only what the writes under a lease use
/// (its id and tags; its attempts, occurrence and dedupe window for a completion
/// record) and what liveness is decided on (state, id, version, fence and expiry). The
/// payload and policies are not read, let alone parsed: every ack, extend and release
/// comes here, on the writer's thread.
pub(crate) fn live(conn: &Connection, store: StoreId, token: &LeaseToken, now: Timestamp) -> Result<(i64, Task)> {
    let queue_id = queue_id(conn, &token.queue)?.ok_or(Error::LeaseLost)?;
    let row = conn
        .prepare_cached(
            "SELECT id, state, version, fence, lease_expires_at, tags, attempts, occurrence, unique_window_ms, \
             unique_dead FROM tasks WHERE queue_id = ?1 AND key = ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![queue_id, token.key.as_str()], |row| {
                Ok(LiveRow {
                    id: row.get(0)?,
                    state: row.get(1)?,
                    version: row.get(2)?,
                    fence: row.get(3)?,
                    lease_expires_at: row.get(4)?,
                    tags: row.get(5)?,
                    attempts: row.get(6)?,
                    occurrence: row.get(7)?,
                    unique: (row.get(8)?, row.get(9)?),
                })
            })
            .optional()
        })
        .map_err(map_err)?;
    let row = row.ok_or(Error::LeaseLost)?;
    let count = |n: i64| u32::try_from(n).map_err(corrupt);
    let meta = TaskMeta::new(
        store,
        u64::try_from(row.id).map_err(corrupt)?,
        u64::try_from(row.fence).map_err(corrupt)?,
        count(row.occurrence)?,
        Timestamp::EPOCH,
    );
    let mut task = blank_task(token.queue.clone(), token.key.clone(), meta);
    task.state = state_of(row.state)?;
    task.version = u64::try_from(row.version).map_err(corrupt)?;
    task.lease_expires_at = row.lease_expires_at.map(Timestamp::from_millis);
    if !token.is_live_for(&task, now) {
        return Err(Error::LeaseLost);
    }
    if let Some(json) = row.tags {
        task.tags = tags_of(&json)?;
    }
    task.attempts = count(row.attempts)?;
    task.unique_for = unique_of(row.unique)?;
    Ok((queue_id, task))
}

/// The columns [`live`] reads.
struct LiveRow {
    id: i64,
    state: i64,
    version: i64,
    fence: i64,
    lease_expires_at: Option<i64>,
    tags: Option<String>,
    attempts: i64,
    occurrence: i64,
    unique: (Option<i64>, bool),
}

pub(crate) fn extend(conn: &Connection, store: StoreId, req: &ExtendRequest) -> Result<Timestamp> {
    let now = req.now;
    let (_, task) = live(conn, store, &req.token, now)?;
    let expires = now.saturating_add(req.lease_for);
    conn.prepare_cached("UPDATE tasks SET lease_expires_at = ?2, updated_at = ?3 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![task.meta.id as i64, expires.as_millis(), now.as_millis()]))
        .map_err(map_err)?;
    Ok(expires)
}

static RELEASE: Sql = Sql::new(|| {
    format!(
        "UPDATE tasks SET state = {}, lease_expires_at = NULL, updated_at = ?2 WHERE id = ?1",
        scheduled_by_target()
    )
});

pub(crate) fn release(conn: &Connection, store: StoreId, token: &LeaseToken, now: Timestamp) -> Result<()> {
    let (_, task) = live(conn, store, token, now)?;
    conn.prepare_cached(&RELEASE)
        .and_then(|mut stmt| stmt.execute(params![task.meta.id as i64, now.as_millis()]))
        .map_err(map_err)?;
    Ok(())
}
