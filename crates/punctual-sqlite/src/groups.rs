//! Groups: leasing in turns between a queue's groups (the rule of `Store::lease`), the
//! turns kept in `queues` and `task_groups`, and a queue's groups listed.
//!
//! How a lease with grouped tasks due runs: first each priority above 0 that has a due
//! task, the highest first — its contenders are the groups with a due task of that
//! priority (from `tasks_urgent`) and the ungrouped tasks if they have one — then
//! priority 0, whose contenders are read a page at a time from `task_groups` in turn
//! order (`task_groups_by_turn`), only groups with a due task and room under the limit.
//! At each level the contender of the lowest turn (the ungrouped tasks first among
//! equals, then by name) gets the next lease and the queue's next turn, which is above
//! every turn read, so it goes behind all the others: a level is served round robin.
//!
//! Invariants: every lease raises `queues.last_turn` by one and gives that turn to the
//! group leased from (or to `queues.ungrouped_turn`); a group whose row is gone has turn
//! 0 (the triggers in `schema` delete the row with the group's last task); a group with
//! `limit` leased tasks gets no lease.

use std::collections::{BTreeMap, VecDeque};

use punctual_core::store::{GroupCounts, GroupsPage, GroupsRequest, corrupt};
use punctual_core::{Group, Lane, Priority, QueueName, Result};
use rusqlite::{Connection, params};

use crate::codes::{counts_by_state, grouped_code, scheduled_code};
use crate::leasing::{LEASE, LEASE_AT_PRIORITY, LEASE_IN_GROUP, LEASE_IN_GROUP_AT_PRIORITY, Leasing, earliest, leased};
use crate::list::bad_cursor;
use crate::map_err;
use crate::queues::queue_id;
use crate::row::RawTask;

/// After a lease without grouped tasks due took `count` ungrouped tasks: each took a
/// turn, the last of them the ungrouped tasks'. While the queue has no group at all,
/// only whether the ungrouped tasks ever had a turn can change a later lease (a group
/// yet to come starts at 0, and every turn given later is above every turn before), so
/// the queue's row is written once, not at every lease.
pub(crate) fn ungrouped_leased(conn: &Connection, queue_id: i64, count: usize) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    conn.prepare_cached(
        "UPDATE queues SET last_turn = last_turn + ?2, ungrouped_turn = last_turn + ?2 WHERE id = ?1 \
         AND (ungrouped_turn = 0 OR EXISTS (SELECT 1 FROM task_groups WHERE queue_id = ?1))",
    )
    .and_then(|mut stmt| stmt.execute(params![queue_id, count as i64]))
    .map_err(map_err)?;
    Ok(())
}

/// The earliest due time among the lane's grouped tasks that a lease could take,
/// leaving out groups at the limit.
pub(crate) fn next_due(leasing: &Leasing<'_>) -> Result<Option<punctual_core::Timestamp>> {
    if leasing.group_limit == i64::MAX {
        return earliest(leasing.conn, leasing.queue_id, grouped_code(leasing.lane));
    }
    let column = due_column(leasing.lane);
    let due: Option<i64> = leasing
        .conn
        .prepare_cached(&format!("SELECT MIN({column}) FROM task_groups WHERE queue_id = ?1 AND leased < ?2"))
        .and_then(|mut stmt| stmt.query_row(params![leasing.queue_id, leasing.group_limit], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(due.map(punctual_core::Timestamp::from_millis))
}

/// The `task_groups` column of the earliest due time in `lane`.
fn due_column(lane: Lane) -> &'static str {
    match lane {
        Lane::Handler => "due_handler",
        Lane::Target => "due_target",
    }
}

/// A contender for the next lease: a group, or the ungrouped tasks (`name: None`).
#[derive(Debug, Clone)]
struct Contender {
    turn: i64,
    name: Option<String>,
    leased: i64,
}

impl Contender {
    /// Lower goes first: the turn, then the ungrouped tasks, then the name.
    fn rank(&self) -> (i64, bool, Option<&str>) {
        (self.turn, self.name.is_some(), self.name.as_deref())
    }
}

/// One lease call in turns: what it took and the turns as they stand.
struct Turns<'a, 'c> {
    leasing: &'a Leasing<'c>,
    room: u32,
    taken: Vec<RawTask>,
    last_turn: i64,
    ungrouped_turn: i64,
    /// The last turn given before this call: every turn read from the store is at most
    /// this, every turn this call gives above it.
    before: i64,
    /// The groups this call leased from, as they stand (turn and leased count).
    served: BTreeMap<String, Contender>,
}

/// Leases up to `room` due tasks of the lane in turns (see the module docs).
pub(crate) fn lease_in_turns(leasing: &Leasing<'_>, room: u32) -> Result<Vec<RawTask>> {
    let (last_turn, ungrouped_turn): (i64, i64) = leasing
        .conn
        .prepare_cached("SELECT last_turn, ungrouped_turn FROM queues WHERE id = ?1")
        .and_then(|mut stmt| stmt.query_row([leasing.queue_id], |row| Ok((row.get(0)?, row.get(1)?))))
        .map_err(map_err)?;
    let mut turns = Turns {
        leasing,
        room,
        taken: Vec::new(),
        last_turn,
        ungrouped_turn,
        before: last_turn,
        served: BTreeMap::new(),
    };
    for priority in Priority::highest_first().filter(|p| *p > Priority::LOWEST) {
        if turns.room == 0 {
            break;
        }
        turns.serve_urgent(priority)?;
    }
    turns.serve_rest()?;
    leasing
        .conn
        .prepare_cached("UPDATE queues SET last_turn = ?2, ungrouped_turn = ?3 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![leasing.queue_id, turns.last_turn, turns.ungrouped_turn]))
        .map_err(map_err)?;
    Ok(turns.taken)
}

impl Turns<'_, '_> {
    /// Serves the contenders with a due task of `priority` (above 0).
    fn serve_urgent(&mut self, priority: Priority) -> Result<()> {
        let Leasing { conn, queue_id, lane, now, group_limit, .. } = *self.leasing;
        let level = priority.get();
        let ungrouped_due: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0 \
                 AND priority = ?3 AND due_at <= ?4)",
            )
            .and_then(|mut stmt| stmt.query_row(params![queue_id, scheduled_code(lane), level, now], |row| row.get(0)))
            .map_err(map_err)?;
        let groups: Vec<Contender> = conn
            .prepare_cached(
                "SELECT turn, name, leased FROM task_groups WHERE queue_id = ?1 AND leased < ?5 AND name IN \
                 (SELECT group_name FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0 AND priority = ?3 \
                  AND due_at <= ?4) ORDER BY turn, name",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![queue_id, grouped_code(lane), level, now, group_limit], contender)?.collect()
            })
            .map_err(map_err)?;
        let mut fresh = Fresh { page: groups.into(), pager: None };
        self.serve(Some(priority), &mut fresh, VecDeque::new(), ungrouped_due)
    }

    /// Serves every contender with a due task left (all of priority 0 but those of
    /// groups that reached the limit at a higher one).
    fn serve_rest(&mut self) -> Result<()> {
        let Leasing { conn, queue_id, lane, now, .. } = *self.leasing;
        let ungrouped_due = earliest(conn, queue_id, scheduled_code(lane))?.is_some_and(|due| due.as_millis() <= now);
        // The pages hold the groups not yet leased from in this call; those leased
        // from at a higher priority follow them, in the order of their new turns.
        let mut fresh = Fresh { page: VecDeque::new(), pager: Some((-1, String::new())) };
        let mut earlier: Vec<Contender> = self.served.values().cloned().collect();
        earlier.sort_by_key(|group| group.turn);
        self.serve(None, &mut fresh, earlier.into(), ungrouped_due)
    }

    /// Leases round robin among `fresh` (in turn order), the ungrouped tasks when
    /// `ungrouped_due`, and `served` (groups with turns above every fresh one, in turn
    /// order) with the groups served here behind them, until the room is used or none
    /// has a task of `level` (every priority when `None`) due.
    fn serve(
        &mut self,
        level: Option<Priority>,
        fresh: &mut Fresh,
        mut served: VecDeque<Contender>,
        mut ungrouped_due: bool,
    ) -> Result<()> {
        while self.room > 0 {
            let next_fresh = fresh.peek(self)?.map(Contender::rank);
            let ungrouped = ungrouped_due.then_some((self.ungrouped_turn, false, None));
            let candidates = [ungrouped, next_fresh, served.front().map(Contender::rank)];
            let Some(best) = candidates.iter().enumerate().filter_map(|(i, rank)| rank.map(|r| (r, i))).min() else {
                break;
            };
            match best.1 {
                0 => match self.lease_one(None, level)? {
                    Some(raw) => {
                        self.taken.push(raw);
                        self.ungrouped_turn = self.next_turn();
                    }
                    None => ungrouped_due = false,
                },
                source => {
                    let mut group = if source == 1 { fresh.pop() } else { served.pop_front() }
                        .ok_or_else(|| corrupt("a contender vanished"))?;
                    let name = group.name.clone().ok_or_else(|| corrupt("a group without a name"))?;
                    if group.leased >= self.leasing.group_limit {
                        continue;
                    }
                    let Some(raw) = self.lease_one(Some(&name), level)? else { continue };
                    self.taken.push(raw);
                    group.turn = self.next_turn();
                    group.leased += 1;
                    self.leasing
                        .conn
                        .prepare_cached("UPDATE task_groups SET turn = ?3 WHERE queue_id = ?1 AND name = ?2")
                        .and_then(|mut stmt| stmt.execute(params![self.leasing.queue_id, name, group.turn]))
                        .map_err(map_err)?;
                    self.served.insert(name, group.clone());
                    served.push_back(group);
                }
            }
        }
        Ok(())
    }

    /// The queue's next turn, taken.
    fn next_turn(&mut self) -> i64 {
        self.room -= 1;
        self.last_turn += 1;
        self.last_turn
    }

    /// Leases the earliest due task of `group` (the ungrouped tasks when `None`) of
    /// `level` (any when `None`).
    fn lease_one(&self, group: Option<&str>, level: Option<Priority>) -> Result<Option<RawTask>> {
        let Leasing { conn, queue_id, lane, now, expires, fence_floor, .. } = *self.leasing;
        let mut taken = match (group, level) {
            (None, None) => {
                leased(conn, &LEASE, params![queue_id, now, expires, 1, fence_floor, scheduled_code(lane)])?
            }
            (None, Some(p)) => {
                let args = params![queue_id, now, expires, 1, fence_floor, scheduled_code(lane), p.get()];
                leased(conn, &LEASE_AT_PRIORITY, args)?
            }
            (Some(group), None) => {
                let args = params![queue_id, now, expires, 1, fence_floor, grouped_code(lane), group];
                leased(conn, &LEASE_IN_GROUP, args)?
            }
            (Some(group), Some(p)) => {
                let args = params![queue_id, now, expires, 1, fence_floor, grouped_code(lane), group, p.get()];
                leased(conn, &LEASE_IN_GROUP_AT_PRIORITY, args)?
            }
        };
        Ok(taken.pop())
    }
}

/// The groups not yet served at a level, in turn order: a list, or pages of
/// `task_groups` read after the `pager` position `(turn, name)` as they are needed.
struct Fresh {
    page: VecDeque<Contender>,
    pager: Option<(i64, String)>,
}

impl Fresh {
    fn peek(&mut self, turns: &Turns<'_, '_>) -> Result<Option<&Contender>> {
        if self.page.is_empty()
            && let Some((turn, name)) = self.pager.take()
        {
            let Leasing { conn, queue_id, lane, now, group_limit, .. } = *turns.leasing;
            let page_size = i64::from(turns.room.max(1));
            let column = due_column(lane);
            let page: Vec<Contender> = conn
                .prepare_cached(&format!(
                    "SELECT turn, name, leased FROM task_groups WHERE queue_id = ?1 AND {column} <= ?2 \
                     AND leased < ?3 AND turn <= ?4 AND (turn, name) > (?5, ?6) ORDER BY turn, name LIMIT ?7"
                ))
                .and_then(|mut stmt| {
                    let args = params![queue_id, now, group_limit, turns.before, turn, name, page_size];
                    stmt.query_map(args, contender)?.collect()
                })
                .map_err(map_err)?;
            if page.len() as i64 == page_size
                && let Some(last) = page.last()
            {
                self.pager = Some((last.turn, last.name.clone().unwrap_or_default()));
            }
            self.page = page.into();
        }
        Ok(self.page.front())
    }

    fn pop(&mut self) -> Option<Contender> {
        self.page.pop_front()
    }
}

/// A contender read as `turn, name, leased`.
fn contender(row: &rusqlite::Row<'_>) -> rusqlite::Result<Contender> {
    Ok(Contender { turn: row.get(0)?, name: Some(row.get(1)?), leased: row.get(2)? })
}

/// Cursors are the last group's name.
pub(crate) fn groups(conn: &Connection, req: &GroupsRequest) -> Result<GroupsPage> {
    let after = match &req.cursor {
        Some(cursor) => Group::new(cursor.as_str()).map_err(|_| bad_cursor())?.to_string(),
        None => String::new(),
    };
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(GroupsPage::new(Vec::new(), None)) };
    let limit = req.limit.max(1) as usize;
    let names: Vec<String> = conn
        .prepare_cached("SELECT name FROM task_groups WHERE queue_id = ?1 AND name > ?2 ORDER BY name LIMIT ?3")
        .and_then(|mut stmt| stmt.query_map(params![queue_id, after, limit as i64 + 1], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    let more = names.len() > limit;
    let mut groups = Vec::with_capacity(limit);
    for name in names.into_iter().take(limit) {
        groups.push(counts(conn, queue_id, &req.queue, name)?);
    }
    let next_cursor = groups.last().filter(|_| more).map(|last: &GroupCounts| last.group.to_string());
    Ok(GroupsPage::new(groups, next_cursor))
}

/// A group's tasks by state.
fn counts(conn: &Connection, queue_id: i64, queue: &QueueName, name: String) -> Result<GroupCounts> {
    let rows: Vec<(i64, i64)> = conn
        .prepare_cached("SELECT state, COUNT(*) FROM tasks WHERE queue_id = ?1 AND group_name = ?2 GROUP BY state")
        .and_then(|mut stmt| stmt.query_map(params![queue_id, name], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .map_err(map_err)?;
    let (scheduled, leased, dead) = counts_by_state(rows)?;
    let group = Group::new(name).map_err(|e| corrupt(format!("a group of queue {queue}: {e}")))?;
    Ok(GroupCounts::new(group, scheduled, leased, dead))
}
