//! Group rates: the slots of `Store::lease`'s `group_rate` rule, kept in `group_slots`,
//! and what a lease under a rate reads of them.
//!
//! A row of `group_slots` is one slot: its queue and group, `at` (the `now` of the lease
//! that took it), `until` (`at` plus the window of the rate it was taken under, at most
//! `Timestamp::MAX`) and the queue's turn that the lease took, which no other lease of
//! the queue takes, so it tells apart two slots a group took at one instant. Under
//! `count/per`, a slot counts at `now` while `at <= now`, `until > now` and
//! `at + per > now` (it ends at the earlier of `until` and `at + per`); a group with
//! `count` slots counting offers nothing, and has room again when all but `count - 1`
//! of them have ended (`core::group_slots::GroupSlots` is the same rule in memory).
//!
//! Invariants:
//! - every lease of a grouped task under a rate writes its slot in the lease's own
//!   transaction, a round's slots in one statement ([`TAKE`]); a lease without a rate
//!   neither reads nor writes a slot, so it costs what it did before rates;
//! - slots are read by group only, a range of the primary key from `until > now`, so a
//!   lease costs what the groups it looks at hold, never the queue's other slots;
//! - a slot outlives its group's tasks; a lease under a rate first deletes the queue's
//!   slots whose own window ended (`until <= now`, a range of `group_slots_by_end`),
//!   which never count again. Queues are never deleted (their ids are never given to
//!   another), so a queue's slots are never read as another's.

use punctual_core::policy::Rate;
use punctual_core::{Lane, Result, Timestamp};
use rusqlite::{Connection, params};

use crate::codes::Sql;
use crate::map_err;

/// A lease's `group_rate`, as SQL values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateTerms {
    /// A group with this many slots counting offers nothing.
    pub(crate) count: i64,
    /// The window in milliseconds, at most `Timestamp::MAX` since the epoch: `at + per`
    /// stays an integer in SQL (SQLite turns an overflowing sum into a float), and no
    /// slot ends later than that anyway.
    pub(crate) per: i64,
    /// Slots counting began after this: `now - per`.
    pub(crate) since: i64,
    /// The end of the window of a slot taken now.
    pub(crate) until: i64,
}

impl RateTerms {
    pub(crate) fn new(rate: Rate, now: Timestamp) -> RateTerms {
        let per = i64::try_from(rate.per.as_millis()).unwrap_or(i64::MAX).min(Timestamp::MAX.as_millis());
        let until = now.saturating_add(rate.per).as_millis();
        RateTerms { count: i64::from(rate.count), per, since: now.as_millis() - per, until }
    }

    /// Whether a slot taken now counts at once (its window is at least a millisecond).
    pub(crate) fn counts_at_once(self, now: i64) -> bool {
        self.until > now
    }
}

/// The count of the slots counting, for a read of `task_groups` (one row per group),
/// with `now`, `since` and `count` the parameters of [`RateTerms`]: the column to select
/// (named `slots`) and the term that keeps the groups with room under the rate. The
/// count stops at `count` (all a lease needs to know), so a group is read for at most
/// that many slots. Without a rate (`None`), 0 and no term, and no read of `group_slots`.
pub(crate) fn contender_terms(rated: Option<(&str, &str, &str)>) -> (String, String) {
    match rated {
        None => ("0".to_owned(), String::new()),
        Some((now, since, count)) => (
            format!(
                "(SELECT COUNT(*) FROM (SELECT 1 FROM group_slots WHERE queue_id = task_groups.queue_id \
                 AND group_name = task_groups.name AND until > {now} AND at <= {now} AND at > {since} \
                 LIMIT {count})) AS slots"
            ),
            format!("AND slots < {count}"),
        ),
    }
}

/// Deletes queue `?1`'s slots whose own window ended by `?2`.
pub(crate) const DROP_ENDED: &str = "DELETE FROM group_slots WHERE queue_id = ?1 AND until <= ?2";

/// Deletes the queue's slots whose own window ended by `now`: they never count again.
pub(crate) fn drop_ended(conn: &Connection, queue_id: i64, now: i64) -> Result<()> {
    conn.prepare_cached(DROP_ENDED).and_then(|mut stmt| stmt.execute(params![queue_id, now])).map_err(map_err)?;
    Ok(())
}

/// The slots of a round's leases, one per element `[queue id, group, turn]` of the JSON
/// array `?3`, each taken at `?1` with a window ending at `?2`.
pub(crate) static TAKE: Sql = Sql::new(|| {
    "INSERT OR FAIL INTO group_slots (queue_id, group_name, until, turn, at) \
     SELECT given.value ->> 0, given.value ->> 1, ?2, given.value ->> 2, ?1 FROM json_each(?3) AS given"
        .to_owned()
});

/// Writes the slots of a round's leases, `given` as [`TAKE`] reads it.
pub(crate) fn take(conn: &Connection, given: &str, now: i64, rate: RateTerms) -> Result<()> {
    conn.prepare_cached(&TAKE).and_then(|mut stmt| stmt.execute(params![now, rate.until, given])).map_err(map_err)?;
    Ok(())
}

/// [`next_due`]'s statement for the handler lane.
pub(crate) static NEXT_DUE_HANDLER: Sql = Sql::new(|| next_due_sql("due_handler"));
/// [`next_due`]'s statement for the target lane.
pub(crate) static NEXT_DUE_TARGET: Sql = Sql::new(|| next_due_sql("due_target"));

/// The earliest time a lease of queue `?1` under the rate (`?3` the window, `?4` now,
/// `?5` the count) could take a grouped task whose lane's earliest due time is in
/// `column`, leaving out the groups with `?2` leased tasks: of each group, its earliest
/// due time, or for a group held by the rate the later of that and the instant it has
/// room (its `count`-th latest end among its slots counting). One read of the queue's
/// groups and, for each, a range of its slots: up to `count` of them to learn whether
/// it is held, and only for a held group all those counting, sorted by end (sorting
/// every group's made a lease with 1,000 groups about a third slower; ranking the
/// queue's slots in one pass, a window function, and joining them to the groups, 10 to
/// 30 times slower).
fn next_due_sql(column: &str) -> String {
    let counting = "FROM group_slots WHERE queue_id = ?1 AND group_name = task_groups.name AND until > ?4 \
                    AND at <= ?4 AND at > ?4 - ?3";
    format!(
        "SELECT MIN(CASE WHEN room > due THEN room ELSE due END) FROM \
         (SELECT {column} AS due, \
                 CASE WHEN (SELECT 1 {counting} LIMIT 1 OFFSET ?5 - 1) THEN \
                 (SELECT CASE WHEN until < at + ?3 THEN until ELSE at + ?3 END AS ends {counting} \
                  ORDER BY ends DESC LIMIT 1 OFFSET ?5 - 1) END AS room \
          FROM task_groups WHERE queue_id = ?1 AND leased < ?2 AND {column} IS NOT NULL)"
    )
}

/// The earliest time a lease of the queue's `lane` at `now` under `rate` could take one
/// of its grouped tasks (see `LeaseBatch::next_due`), leaving out groups with
/// `group_limit` leased tasks.
pub(crate) fn next_due(
    conn: &Connection,
    queue_id: i64,
    lane: Lane,
    group_limit: i64,
    now: i64,
    rate: RateTerms,
) -> Result<Option<Timestamp>> {
    let sql = match lane {
        Lane::Handler => &NEXT_DUE_HANDLER,
        Lane::Target => &NEXT_DUE_TARGET,
    };
    let due: Option<i64> = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_row(params![queue_id, group_limit, rate.per, now, rate.count], |row| row.get(0))
        })
        .map_err(map_err)?;
    Ok(due.map(Timestamp::from_millis))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test with its line")]
mod tests {
    use std::time::Duration;

    use punctual_core::store::LeaseRequest;
    use punctual_core::{Group, NewTask, QueueName, StoreId, TaskKey};

    use super::*;

    /// `(queue_id, until)` of every slot.
    fn slots(conn: &Connection) -> Vec<(i64, i64)> {
        let mut stmt = conn.prepare("SELECT queue_id, until FROM group_slots ORDER BY queue_id, until").unwrap();
        stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().collect::<rusqlite::Result<_>>().unwrap()
    }

    /// Guards against slots kept for ever (the table growing with every lease ever made
    /// under a rate) and against dropping a slot that still counts or another queue's:
    /// a lease under a rate deletes its queue's slots whose window ended, and only those;
    /// a lease without a rate touches no slot.
    #[test]
    fn a_lease_under_a_rate_drops_its_queues_ended_slots_only() {
        let conn = crate::schema::in_memory();
        let store = StoreId::from_bits(7);
        let at = Timestamp::from_millis;
        let queues = [QueueName::new("a").unwrap(), QueueName::new("b").unwrap()];
        let tasks = queues
            .iter()
            .flat_map(|queue| {
                (0..4).map(|i| {
                    let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).unwrap(), at(0));
                    task.group = Some(Group::new(format!("g{}", i % 2)).unwrap());
                    task
                })
            })
            .collect();
        for result in crate::schedule::schedule(&conn, store, tasks, at(0)).unwrap() {
            result.unwrap();
        }
        let lease = |queue: &QueueName, now: i64, per_ms: u64, rated: bool| {
            let rate = Rate { count: 5, per: Duration::from_millis(per_ms) };
            let request = LeaseRequest::new(queue.clone(), 1, Duration::from_secs(30), at(now));
            crate::lease::lease(&conn, store, &request.group_rate(rated.then_some(rate)), 0).unwrap()
        };
        lease(&queues[0], 1_000, 1_000, true);
        lease(&queues[0], 1_500, 5_000, true);
        lease(&queues[1], 1_000, 1_000, true);
        assert_eq!(slots(&conn), [(1, 2_000), (1, 6_500), (2, 2_000)]);
        lease(&queues[0], 2_000, 1_000, false);
        assert_eq!(slots(&conn).len(), 3, "a lease without a rate touches no slot");
        lease(&queues[0], 2_000, 1_000, true);
        assert_eq!(slots(&conn), [(1, 3_000), (1, 6_500), (2, 2_000)], "a's slot ended at 2 s went, b's stays");
    }
}
