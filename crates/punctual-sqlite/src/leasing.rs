//! The statements that lease due tasks — the ungrouped tasks of a lane, by priority,
//! or the heads of a round of groups — and one lease call's terms ([`Leasing`]),
//! shared by `lease` (no grouped task due) and `groups` (leasing in turns).
//!
//! Invariants: each statement picks from one range of an index (`tasks_by_due`,
//! `tasks_urgent`, or `tasks_by_group` per group; checked in `query_plans`) and gives
//! every task it leases a fence greater than its last and at least the open's floor.
//! They say `OR FAIL` and compute the fence with `CASE`, not `MAX`, so that they need
//! no statement journal (see `writer`).

use punctual_core::{Lane, Priority, Result, Timestamp};
use rusqlite::{Connection, params};

use crate::codes::{GROUPED_HANDLER_LANE, LEASED, Sql, grouped_code, scheduled_code};
use crate::group_rate::RateTerms;
use crate::row::{RawTask, TASK_COLUMNS};
use crate::{history, map_err};

/// The earliest due time among the scheduled tasks of queue `?1` with state code `?2`.
pub(crate) const NEXT_DUE: &str = "SELECT MIN(due_at) FROM tasks WHERE queue_id = ?1 AND state = ?2";

/// The earliest due time among the queue's scheduled tasks of state code `code`.
pub(crate) fn earliest(conn: &Connection, queue_id: i64, code: i64) -> Result<Option<Timestamp>> {
    let due: Option<i64> = conn
        .prepare_cached(NEXT_DUE)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, code], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(due.map(Timestamp::from_millis))
}

/// The earliest due time among the queue's scheduled tasks of `lane`, in a group or not.
pub(crate) fn next_due(conn: &Connection, queue_id: i64, lane: Lane) -> Result<Option<Timestamp>> {
    let ungrouped = earliest(conn, queue_id, scheduled_code(lane))?;
    Ok(ungrouped.into_iter().chain(earliest(conn, queue_id, grouped_code(lane))?).min())
}

/// A lease's batch: up to `?4` tasks of queue `?1` scheduled in the lane of state code
/// `?6` and due by `?2`, leased until `?3` with fences of at least `?5`, each with its
/// `leased` history event pending, from the head `?7` (`history::leased_head`). One statement
/// leases the whole batch: the due tasks are picked first (SQLite computes the `IN`
/// list before changing any row), a range of `tasks_by_due` that holds only the lane's
/// tasks; then each is updated and returned, in no particular order.
pub(crate) static LEASE: Sql = Sql::new(|| lease_sql(""));

/// [`LEASE`] of the tasks of priority `?8` (above 0) only, from `tasks_urgent`.
pub(crate) static LEASE_AT_PRIORITY: Sql = Sql::new(|| lease_sql("AND priority > 0 AND priority = ?8"));

/// A round of leases in turns: the head of each group named in the JSON array `?6` —
/// its earliest task of queue `?1` scheduled in the lane of grouped code `?5` and due by
/// `?2` — leased until `?3` with a fence of at least `?4`, all in one statement. Each
/// head is one seek of `tasks_by_group`; a group without one adds nothing.
pub(crate) static LEASE_HEADS: Sql = Sql::new(|| heads_sql(""));

/// [`LEASE_HEADS`] of the tasks of priority `?8` (above 0) only.
pub(crate) static LEASE_HEADS_AT_PRIORITY: Sql = Sql::new(|| heads_sql("AND priority > 0 AND priority = ?8"));

/// A round's statement whose heads have the terms `only` besides the group, lane and due time.
fn heads_sql(only: &str) -> String {
    let fence = "CASE WHEN fence + 1 > ?4 THEN fence + 1 ELSE ?4 END";
    let told = history::appending(&history::leased_sql("?7", fence, "?3"));
    format!(
        "UPDATE OR FAIL tasks SET state = {LEASED}, lease_expires_at = ?3, \
         fence = {fence}, updated_at = ?2, debounce_until = NULL, {told} \
         WHERE id IN (SELECT (SELECT id FROM tasks WHERE queue_id = ?1 AND group_name = heads.value \
                              AND state >= {GROUPED_HANDLER_LANE} AND state = ?5 \
                              {only} AND due_at <= ?2 ORDER BY due_at, id LIMIT 1) \
                      FROM json_each(?6) AS heads) \
         RETURNING {TASK_COLUMNS}"
    )
}

/// A lease's statement whose pick has the terms `only` besides the queue, lane and due time.
fn lease_sql(only: &str) -> String {
    let fence = "CASE WHEN fence + 1 > ?5 THEN fence + 1 ELSE ?5 END";
    let told = history::appending(&history::leased_sql("?7", fence, "?3"));
    format!(
        "UPDATE OR FAIL tasks SET state = {LEASED}, lease_expires_at = ?3, \
         fence = {fence}, updated_at = ?2, debounce_until = NULL, {told} \
         WHERE id IN (SELECT id FROM tasks WHERE queue_id = ?1 AND state = ?6 {only} AND due_at <= ?2 \
                      ORDER BY due_at, id LIMIT ?4) \
         RETURNING {TASK_COLUMNS}"
    )
}

/// The rows `sql` (one of the lease statements) leases with `args`.
pub(crate) fn leased(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<Vec<RawTask>> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.query_map(args, RawTask::from_row)?.collect()).map_err(map_err)
}

/// Whether queue `?1` has scheduled tasks of priority above 0 in the lane of code `?2`.
pub(crate) const HAS_URGENT: &str =
    "SELECT EXISTS (SELECT 1 FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0)";

/// One lease call's terms, as SQL values.
pub(crate) struct Leasing<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) queue_id: i64,
    pub(crate) lane: Lane,
    pub(crate) now: i64,
    pub(crate) expires: i64,
    pub(crate) fence_floor: i64,
    /// The group limit; `i64::MAX` for none.
    pub(crate) group_limit: i64,
    /// The group rate, if any (see `group_rate`).
    pub(crate) group_rate: Option<RateTerms>,
    /// The head of the `leased` history event of each task leased.
    pub(crate) leased_head: String,
}

impl Leasing<'_> {
    /// Up to `room` ungrouped due tasks of the lane, the highest priority first, each
    /// priority in due order.
    pub(crate) fn ungrouped(&self, mut room: u32) -> Result<Vec<RawTask>> {
        let Leasing { conn, queue_id, now, expires, fence_floor, .. } = *self;
        let lane_code = scheduled_code(self.lane);
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
                let args =
                    params![queue_id, now, expires, room, fence_floor, lane_code, self.leased_head, priority.get()];
                let taken = leased(conn, &LEASE_AT_PRIORITY, args)?;
                room -= u32::try_from(taken.len()).unwrap_or(room);
                raws.extend(taken);
            }
        }
        // With room left, every due task of a priority above 0 was taken: the rest are 0.
        if room > 0 {
            let args = params![queue_id, now, expires, room, fence_floor, lane_code, self.leased_head];
            raws.extend(leased(conn, &LEASE, args)?);
        }
        Ok(raws)
    }
}
