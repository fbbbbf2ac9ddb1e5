//! Leasing a lane's due tasks, and what a lease's holder does with it short of
//! completing it: extend it, release it. `live` decides for every write under a lease
//! (`complete` too) whether the lease still holds.
//!
//! Invariants: a lease whose lane has no grouped task due runs `Leasing::ungrouped`
//! (the lane's ungrouped code only: it costs what it takes whatever the other lane
//! holds) and moves the ungrouped tasks' turn as `Store::lease` says; with grouped
//! tasks due, `groups` leases in turns. A lease under a `group_rate` first drops the
//! queue's ended slots (see `group_rate`); one without reads no slot. A write under a lease changes nothing unless
//! the token is live for the row.

use punctual_core::store::{ExtendRequest, Lease, LeaseBatch, LeaseRequest, LeaseToken, corrupt};
use std::cmp::Reverse;

use punctual_core::history::{HistoryEvent, encode};
use punctual_core::{Error, Result, StoreId, Task, TaskMeta, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codes::{KEPT, Sql, grouped_code, scheduled_by_target, scheduled_code, state_of};
use crate::group_rate::RateTerms;
use crate::history;
use crate::leasing::{Leasing, earliest};
use crate::map_err;
use crate::queues::{QueueIds, queue_id};
use crate::row::{blank_task, tags_of, unique_of};

/// `fence_floor`: every fence handed out is at least this (see the crate docs).
pub(crate) fn lease(conn: &Connection, store: StoreId, req: &LeaseRequest, fence_floor: i64) -> Result<LeaseBatch> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(LeaseBatch::new(Vec::new(), None)) };
    let leasing = Leasing {
        conn,
        queue_id,
        lane: req.lane,
        now: req.now.as_millis(),
        expires: req.now.saturating_add(req.lease_for).as_millis(),
        fence_floor,
        group_limit: req.group_limit.map_or(i64::MAX, i64::from),
        group_rate: req.group_rate.map(|rate| RateTerms::new(rate, req.now)),
        leased_head: history::leased_head(req.by.as_ref(), req.node.as_deref(), store, req.now),
    };
    if leasing.group_rate.is_some() {
        crate::group_rate::drop_ended(conn, queue_id, leasing.now)?;
    }
    let grouped_due = earliest(conn, queue_id, grouped_code(req.lane))?.is_some_and(|due| due <= req.now);
    let leases = if grouped_due {
        let raws = crate::groups::lease_in_turns(&leasing, req.max.max(1))?;
        raws.into_iter().map(|raw| raw.decode(store, &req.queue).map(Lease::of)).collect::<Result<Vec<Lease>>>()?
    } else {
        let raws = leasing.ungrouped(req.max.max(1))?;
        crate::groups::ungrouped_leased(conn, queue_id, raws.len())?;
        let mut leases =
            raws.into_iter().map(|raw| raw.decode(store, &req.queue).map(Lease::of)).collect::<Result<Vec<Lease>>>()?;
        leases.sort_by_key(|lease| (Reverse(lease.task.priority), lease.task.due_at, lease.task.meta.id));
        leases
    };
    let ungrouped = earliest(conn, queue_id, scheduled_code(req.lane))?;
    let grouped = crate::groups::next_due(&leasing)?;
    Ok(LeaseBatch::new(leases, ungrouped.into_iter().chain(grouped).min()))
}

/// The task of a live lease, or `LeaseLost`: only what the writes under a lease use
/// (its id and tags; its attempts, occurrence and dedupe window for a completion
/// record; how many history events its row holds) and what liveness is decided on
/// (state, id, version, fence and expiry), with its queue's id. The payload, policies
/// and pending events are not read, let alone parsed: every ack, extend and release
/// comes here, on the writer's thread.
pub(crate) fn live(
    conn: &Connection,
    queue_ids: &mut QueueIds,
    store: StoreId,
    token: &LeaseToken,
    now: Timestamp,
) -> Result<Live> {
    let queue_id = queue_ids.get(conn, &token.queue)?.ok_or(Error::LeaseLost)?;
    let row = conn
        .prepare_cached(
            "SELECT id, state, version, fence, lease_expires_at, tags, attempts, occurrence, unique_window_ms, \
             unique_dead, pending_count FROM tasks WHERE queue_id = ?1 AND key = ?2",
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
                    pending_count: row.get(10)?,
                })
            })
            .optional()
        })
        .map_err(map_err)?;
    let row = row.filter(|row| row.state != KEPT).ok_or(Error::LeaseLost)?;
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
    Ok(Live { queue_id, task, pending_count: row.pending_count })
}

/// A live lease's task, as [`live`] reads it.
pub(crate) struct Live {
    pub(crate) queue_id: i64,
    pub(crate) task: Task,
    /// How many history events wait in its row (see `history`).
    pub(crate) pending_count: i64,
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
    pending_count: i64,
}

/// A lease's expiry moved, the row's `?1`, to `?2`, at `?3`; `?4` the event that tells it.
static EXTEND: Sql = Sql::new(|| {
    format!("UPDATE tasks SET lease_expires_at = ?2, updated_at = ?3, {} WHERE id = ?1", history::appending("?4"))
});

pub(crate) fn extend(conn: &Connection, store: StoreId, req: &ExtendRequest) -> Result<Timestamp> {
    let now = req.now;
    let Live { queue_id, task, pending_count } = live(conn, &mut QueueIds::default(), store, &req.token, now)?;
    let expires = now.saturating_add(req.lease_for);
    let extended = encode(&HistoryEvent::extended(req.token.fence, expires, req.by.as_ref(), now));
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    conn.prepare_cached(&EXTEND)
        .and_then(|mut stmt| stmt.execute(params![id, expires.as_millis(), now.as_millis(), extended]))
        .map_err(map_err)?;
    history::settle(conn, queue_id, req.token.key.as_str(), id, pending_count + 1)?;
    Ok(expires)
}

static RELEASE: Sql = Sql::new(|| {
    format!(
        "UPDATE tasks SET state = {}, lease_expires_at = NULL, updated_at = ?2, {} WHERE id = ?1",
        scheduled_by_target(),
        history::appending("?3")
    )
});

pub(crate) fn release(conn: &Connection, store: StoreId, token: &LeaseToken, now: Timestamp) -> Result<()> {
    let Live { queue_id, task, pending_count } = live(conn, &mut QueueIds::default(), store, token, now)?;
    let released = encode(&HistoryEvent::released(token.fence, now));
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    conn.prepare_cached(&RELEASE)
        .and_then(|mut stmt| stmt.execute(params![id, now.as_millis(), released]))
        .map_err(map_err)?;
    history::settle(conn, queue_id, token.key.as_str(), id, pending_count + 1)
}
