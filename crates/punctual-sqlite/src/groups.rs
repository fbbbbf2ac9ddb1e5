//! Groups: leasing in turns between a queue's groups (the rule of `Store::lease`), the
//! turns kept in `queues` and `task_groups`, and a queue's groups listed.
//!
//! How a lease with grouped tasks due runs: first each priority above 0 that has a due
//! task, the highest first — its contenders are the groups with a due task of that
//! priority (from `tasks_urgent`) and the ungrouped tasks if they have one — then
//! priority 0, whose contenders are read a page at a time from `task_groups` in turn
//! order (`task_groups_by_turn`), only groups with a due task and room under the limit
//! and, with a `group_rate`, under the rate (fewer than `count` slots counting, read
//! beside each group; see `group_rate`).
//! At each level the contender of the lowest turn (the ungrouped tasks first among
//! equals, then by name) gets the next lease and the queue's next turn, which is above
//! every turn read, so it goes behind all the others: a level is served round robin.
//! A whole round is leased at once — the heads of its groups in one statement, then
//! each group's row written by one run of one compiled statement — so a lease call
//! costs a few statements and a seek or two per task, and compiles none.
//!
//! Invariants: every lease raises `queues.last_turn` by one and gives that turn to the
//! group leased from (or to `queues.ungrouped_turn`); a group whose row is gone has turn
//! 0 (the triggers in `schema` delete the row with the group's last task); a group with
//! `limit` leased tasks gets no lease, nor one with `count` slots counting under the
//! call's rate, each lease of this call counted at once (its slot is written with its
//! round's turns).

use std::collections::{BTreeMap, HashMap, VecDeque};

use punctual_core::store::{GroupCounts, GroupsPage, GroupsRequest, corrupt};
use punctual_core::{Group, Lane, Priority, QueueName, Result};
use rusqlite::{Connection, ToSql, params};

use crate::codes::{GROUPED_HANDLER_LANE, GROUPED_TARGET_LANE, Sql, grouped_code, scheduled_code};
use crate::leasing::{
    HAS_URGENT, LEASE, LEASE_AT_PRIORITY, LEASE_HEADS, LEASE_HEADS_AT_PRIORITY, Leasing, earliest, leased,
};
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
    if let Some(rate) = leasing.group_rate {
        let Leasing { conn, queue_id, lane, group_limit, now, .. } = *leasing;
        return crate::group_rate::next_due(conn, queue_id, lane, group_limit, now, rate);
    }
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
    /// Its slots counting under the call's rate (0 without one).
    slots: i64,
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
    // A lane with no task above priority 0, grouped or not, has no level to look at.
    let has_urgent = |code: i64| -> Result<bool> {
        leasing
            .conn
            .prepare_cached(HAS_URGENT)
            .and_then(|mut stmt| stmt.query_row(params![leasing.queue_id, code], |row| row.get(0)))
            .map_err(map_err)
    };
    if has_urgent(grouped_code(leasing.lane))? || has_urgent(scheduled_code(leasing.lane))? {
        for priority in Priority::highest_first().filter(|p| *p > Priority::LOWEST) {
            if turns.room == 0 {
                break;
            }
            turns.serve_urgent(priority)?;
        }
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
        let Leasing { conn, queue_id, lane, now, group_limit, group_rate, .. } = *self.leasing;
        let level = priority.get();
        let due_at_level = |code: i64| -> Result<bool> {
            conn.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0 \
                 AND priority = ?3 AND due_at <= ?4)",
            )
            .and_then(|mut stmt| stmt.query_row(params![queue_id, code, level, now], |row| row.get(0)))
            .map_err(map_err)
        };
        let ungrouped_due = due_at_level(scheduled_code(lane))?;
        // The groups are read (a walk of the queue's groups) only when one has a task due
        // at this level: a queue that uses no priorities pays one seek per level.
        let groups: Vec<Contender> = if due_at_level(grouped_code(lane))? {
            conn.prepare_cached(urgent_contenders(group_rate.is_some()))
                .and_then(|mut stmt| {
                    let code = grouped_code(lane);
                    let mut args: Vec<&dyn ToSql> = vec![&queue_id, &code, &level, &now, &group_limit];
                    if let Some(rate) = &group_rate {
                        args.extend([&rate.since as &dyn ToSql, &rate.count]);
                    }
                    stmt.query_map(&*args, contender)?.collect()
                })
                .map_err(map_err)?
        } else {
            Vec::new()
        };
        if groups.is_empty() && !ungrouped_due {
            return Ok(());
        }
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
    ///
    /// A round at a time: the next contenders in rank order, each once and at most the
    /// room, are leased together (one statement for the groups' heads, one for the
    /// ungrouped tasks' next), then those that had a task take the next turns in that
    /// order (one compiled statement writes each group's row) and go behind the
    /// others, and those that had none drop out. This is the order one lease at a time
    /// would give: a contender leased in a round gets a turn above every other, so it
    /// comes up again only once the round is over.
    fn serve(
        &mut self,
        level: Option<Priority>,
        fresh: &mut Fresh,
        mut served: VecDeque<Contender>,
        mut ungrouped_due: bool,
    ) -> Result<()> {
        while self.room > 0 {
            let round = self.plan_round(fresh, &mut served, ungrouped_due)?;
            if round.is_empty() {
                break;
            }
            let names: Vec<&str> = round.iter().filter_map(|group| group.name.as_deref()).collect();
            let mut heads = self.lease_heads(&names, level)?;
            let mut turns_given: Vec<(String, i64)> = Vec::with_capacity(names.len());
            for mut contender in round {
                match contender.name.clone() {
                    None => match self.lease_ungrouped(level)? {
                        Some(raw) => {
                            self.taken.push(raw);
                            self.ungrouped_turn = self.next_turn();
                        }
                        None => ungrouped_due = false,
                    },
                    Some(name) => {
                        let Some(raw) = heads.remove(&name) else { continue };
                        self.taken.push(raw);
                        contender.turn = self.next_turn();
                        contender.leased += 1;
                        if self.leasing.group_rate.is_some_and(|rate| rate.counts_at_once(self.leasing.now)) {
                            contender.slots += 1;
                        }
                        turns_given.push((name.clone(), contender.turn));
                        self.served.insert(name, contender.clone());
                        served.push_back(contender);
                    }
                }
            }
            if !heads.is_empty() {
                return Err(corrupt("a round leased a task of a group it did not name"));
            }
            self.leased_in_round(&turns_given)?;
        }
        Ok(())
    }

    /// The next round: up to the room's contenders in rank order, each once (the
    /// ungrouped tasks as one without a name), leaving out groups at the limit.
    fn plan_round(
        &self,
        fresh: &mut Fresh,
        served: &mut VecDeque<Contender>,
        ungrouped_due: bool,
    ) -> Result<Vec<Contender>> {
        let mut round: Vec<Contender> = Vec::new();
        let mut ungrouped_planned = false;
        while round.len() < self.room as usize {
            let next_fresh = fresh.peek(self)?.map(Contender::rank);
            let ungrouped = (ungrouped_due && !ungrouped_planned).then_some((self.ungrouped_turn, false, None));
            let candidates = [ungrouped, next_fresh, served.front().map(Contender::rank)];
            let Some(best) = candidates.iter().enumerate().filter_map(|(i, rank)| rank.map(|r| (r, i))).min() else {
                break;
            };
            let contender = match best.1 {
                0 => {
                    ungrouped_planned = true;
                    Contender { turn: self.ungrouped_turn, name: None, leased: 0, slots: 0 }
                }
                1 => fresh.pop().ok_or_else(|| corrupt("a contender vanished"))?,
                _ => served.pop_front().ok_or_else(|| corrupt("a contender vanished"))?,
            };
            let rate_count = self.leasing.group_rate.map_or(i64::MAX, |rate| rate.count);
            if contender.name.is_some()
                && (contender.leased >= self.leasing.group_limit || contender.slots >= rate_count)
            {
                continue;
            }
            round.push(contender);
        }
        Ok(round)
    }

    /// The queue's next turn, taken.
    fn next_turn(&mut self) -> i64 {
        self.room -= 1;
        self.last_turn += 1;
        self.last_turn
    }

    /// Leases the head of each group of `names` of `level` (any when `None`): the
    /// leased tasks by group.
    fn lease_heads(&self, names: &[&str], level: Option<Priority>) -> Result<HashMap<String, RawTask>> {
        if names.is_empty() {
            return Ok(HashMap::new());
        }
        let Leasing { conn, queue_id, lane, now, expires, fence_floor, .. } = *self.leasing;
        let names = serde_json::to_string(names).map_err(|e| corrupt(format!("group names as JSON: {e}")))?;
        let code = grouped_code(lane);
        let raws = match level {
            None => {
                let args = params![queue_id, now, expires, fence_floor, code, names, self.leasing.leased_head];
                leased(conn, &LEASE_HEADS, args)?
            }
            Some(p) => {
                let args = params![queue_id, now, expires, fence_floor, code, names, self.leasing.leased_head, p.get()];
                leased(conn, &LEASE_HEADS_AT_PRIORITY, args)?
            }
        };
        let mut heads = HashMap::with_capacity(raws.len());
        for raw in raws {
            let name = raw.group().ok_or_else(|| corrupt("a group's head without a group"))?.to_owned();
            if heads.insert(name, raw).is_some() {
                return Err(corrupt("a round leased two tasks of one group"));
            }
        }
        Ok(heads)
    }

    /// Leases the earliest due ungrouped task of `level` (any when `None`).
    fn lease_ungrouped(&self, level: Option<Priority>) -> Result<Option<RawTask>> {
        let Leasing { conn, queue_id, lane, now, expires, fence_floor, .. } = *self.leasing;
        let mut taken = match level {
            None => {
                let args =
                    params![queue_id, now, expires, 1, fence_floor, scheduled_code(lane), self.leasing.leased_head];
                leased(conn, &LEASE, args)?
            }
            Some(p) => {
                let head = &self.leasing.leased_head;
                let args = params![queue_id, now, expires, 1, fence_floor, scheduled_code(lane), head, p.get()];
                leased(conn, &LEASE_AT_PRIORITY, args)?
            }
        };
        Ok(taken.pop())
    }

    /// Writes the rows of the groups a round leased from, `(group, turn)`: each took one
    /// lease and the turn ([`LEASED_IN_ROUND`], run once per group: one statement over
    /// the round's list read from JSON cost half as much again); under a rate, their
    /// slots, in one statement.
    fn leased_in_round(&self, given: &[(String, i64)]) -> Result<()> {
        if given.is_empty() {
            return Ok(());
        }
        let Leasing { conn, queue_id, lane, .. } = *self.leasing;
        let code = grouped_code(lane);
        let mut stmt = conn.prepare_cached(&LEASED_IN_ROUND).map_err(map_err)?;
        for (name, turn) in given {
            stmt.execute(params![queue_id, name, turn, code]).map_err(map_err)?;
        }
        if let Some(rate) = self.leasing.group_rate {
            let given: Vec<(i64, &str, i64)> =
                given.iter().map(|(name, turn)| (queue_id, name.as_str(), *turn)).collect();
            let given = serde_json::to_string(&given).map_err(|e| corrupt(format!("turns as JSON: {e}")))?;
            crate::group_rate::take(conn, &given, self.leasing.now, rate)?;
        }
        Ok(())
    }
}

/// Group `?2` of queue `?1` after a round leased its head in the lane of grouped code
/// `?4`: the turn `?3`, one more leased task, and the lane's earliest due time read
/// again (the head held it), as the `task_groups` triggers, which leave a lease to this,
/// would have written it. One seek of `task_groups` and one of `tasks_by_group`.
pub(crate) static LEASED_IN_ROUND: Sql = Sql::new(|| {
    let due = |column: &str, code: i64| {
        format!(
            "{column} = CASE WHEN ?4 = {code} THEN (SELECT MIN(due_at) FROM tasks WHERE queue_id = ?1 \
             AND group_name = ?2 AND state >= {GROUPED_HANDLER_LANE} AND state = {code}) ELSE {column} END"
        )
    };
    format!(
        "UPDATE OR FAIL task_groups SET turn = ?3, leased = leased + 1, {}, {} WHERE queue_id = ?1 AND name = ?2",
        due("due_handler", GROUPED_HANDLER_LANE),
        due("due_target", GROUPED_TARGET_LANE)
    )
});

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
            let Leasing { conn, queue_id, lane, now, group_limit, group_rate, .. } = *turns.leasing;
            let page_size = i64::from(turns.room.max(1));
            let page: Vec<Contender> = conn
                .prepare_cached(fresh_contenders(lane, group_rate.is_some()))
                .and_then(|mut stmt| {
                    let mut args: Vec<&dyn ToSql> =
                        vec![&queue_id, &now, &group_limit, &turns.before, &turn, &name, &page_size];
                    if let Some(rate) = &group_rate {
                        args.extend([&rate.since as &dyn ToSql, &rate.count]);
                    }
                    stmt.query_map(&*args, contender)?.collect()
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

/// [`urgent_contenders_sql`], formatted once each.
pub(crate) fn urgent_contenders(rated: bool) -> &'static str {
    static PLAIN: Sql = Sql::new(|| urgent_contenders_sql(false));
    static RATED: Sql = Sql::new(|| urgent_contenders_sql(true));
    if rated { &RATED } else { &PLAIN }
}

/// [`fresh_contenders_sql`], formatted once each.
pub(crate) fn fresh_contenders(lane: Lane, rated: bool) -> &'static str {
    static HANDLER: Sql = Sql::new(|| fresh_contenders_sql(Lane::Handler, false));
    static HANDLER_RATED: Sql = Sql::new(|| fresh_contenders_sql(Lane::Handler, true));
    static TARGET: Sql = Sql::new(|| fresh_contenders_sql(Lane::Target, false));
    static TARGET_RATED: Sql = Sql::new(|| fresh_contenders_sql(Lane::Target, true));
    match (lane, rated) {
        (Lane::Handler, false) => &HANDLER,
        (Lane::Handler, true) => &HANDLER_RATED,
        (Lane::Target, false) => &TARGET,
        (Lane::Target, true) => &TARGET_RATED,
    }
}

/// The groups of queue `?1` with a task of priority `?3` (above 0) scheduled in the lane
/// of grouped code `?2` and due by `?4`, and fewer than `?5` leased tasks, in turn order,
/// as contenders; when `rated`, only those with fewer than `?7` slots counting at `?4`
/// (`?6` is `now - per`).
fn urgent_contenders_sql(rated: bool) -> String {
    let (slots, room) = crate::group_rate::contender_terms(rated.then_some(("?4", "?6", "?7")));
    format!(
        "SELECT turn, name, leased, {slots} FROM task_groups WHERE queue_id = ?1 AND leased < ?5 {room} \
         AND name IN (SELECT group_name FROM tasks WHERE queue_id = ?1 AND state = ?2 AND priority > 0 \
         AND priority = ?3 AND due_at <= ?4) ORDER BY turn, name"
    )
}

/// A page of `?7` groups of queue `?1` with a task of `lane` due by `?2`, fewer than
/// `?3` leased tasks and a turn of at most `?4`, after `(?5, ?6)` in turn order, as
/// contenders; when `rated`, only those with fewer than `?9` slots counting at `?2`
/// (`?8` is `now - per`).
fn fresh_contenders_sql(lane: Lane, rated: bool) -> String {
    let column = due_column(lane);
    let (slots, room) = crate::group_rate::contender_terms(rated.then_some(("?2", "?8", "?9")));
    format!(
        "SELECT turn, name, leased, {slots} FROM task_groups WHERE queue_id = ?1 AND {column} <= ?2 \
         AND leased < ?3 {room} AND turn <= ?4 AND (turn, name) > (?5, ?6) ORDER BY turn, name LIMIT ?7"
    )
}

/// A contender read as `turn, name, leased, slots`.
fn contender(row: &rusqlite::Row<'_>) -> rusqlite::Result<Contender> {
    Ok(Contender { turn: row.get(0)?, name: Some(row.get(1)?), leased: row.get(2)?, slots: row.get(3)? })
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

/// A group's tasks by state: its counts of tasks and leased tasks from its row, its
/// scheduled tasks from `tasks_by_group` (which holds only those), the rest dead.
fn counts(conn: &Connection, queue_id: i64, queue: &QueueName, name: String) -> Result<GroupCounts> {
    let (tasks, leased, scheduled): (i64, i64, i64) = conn
        .prepare_cached(&GROUP_COUNTS)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, name], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))))
        .map_err(map_err)?;
    let count =
        |n: i64| u64::try_from(n).map_err(|_| corrupt(format!("group {name} of queue {queue}: a count below 0")));
    let (tasks, leased, scheduled) = (count(tasks)?, count(leased)?, count(scheduled)?);
    let dead = tasks
        .checked_sub(leased + scheduled)
        .ok_or_else(|| corrupt(format!("group {name} of queue {queue}: fewer tasks than leased and scheduled")))?;
    let group = Group::new(name).map_err(|e| corrupt(format!("a group of queue {queue}: {e}")))?;
    Ok(GroupCounts::new(group, scheduled, leased, dead))
}

/// Group `?2` of queue `?1`: its tasks, its leased tasks and its scheduled tasks.
pub(crate) static GROUP_COUNTS: Sql = Sql::new(|| {
    format!(
        "SELECT tasks, leased, (SELECT COUNT(*) FROM tasks WHERE queue_id = ?1 AND group_name = ?2 \
         AND state >= {GROUPED_HANDLER_LANE}) FROM task_groups WHERE queue_id = ?1 AND name = ?2"
    )
});
