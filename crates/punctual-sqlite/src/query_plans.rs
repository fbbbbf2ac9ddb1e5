//! The plans SQLite makes of the statements whose cost must not grow with the queue:
//! a purge batch, a page of a listing, a lease and its lane's next due time each read
//! index ranges only, never a scan of the queue's tasks or a sort of them; under a
//! group rate, never a scan of the slots either; a page of completion records, never a
//! scan of the records.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test with its line")]

use punctual_core::store::PurgeSelection;
use punctual_core::{Lane, TaskState};
use rusqlite::{Connection, params};

use crate::cancel::purge_sql;
use crate::codes::{GROUPED_HANDLER_LANE, LEASED, SCHEDULED_TARGET_LANE};
use crate::completions::{DROP_ENDED, PAGE as COMPLETIONS_PAGE};
use crate::group_rate::{DROP_ENDED as DROP_SLOTS, NEXT_DUE_HANDLER, NEXT_DUE_TARGET, TAKE};
use crate::groups::{GROUP_COUNTS, LEASED_IN_ROUND, fresh_contenders, urgent_contenders};
use crate::leasing::{HAS_URGENT, LEASE, LEASE_AT_PRIORITY, LEASE_HEADS, LEASE_HEADS_AT_PRIORITY, NEXT_DUE};
use crate::list::list_sql;
use crate::schema::in_memory;

/// The steps of `sql`'s query plan, its parameters bound to `args`.
fn plan(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Vec<String> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(args, |row| row.get(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Neither a scan of the table nor a sort: rows come from index searches in order.
fn assert_no_scan_or_sort(plan: &[String], what: &str) {
    assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{what}: {plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{what}: {plan:?}");
}

/// The plan of a purge's batch never scans the queue's tasks: each state code is a
/// search of `tasks_by_due`, so a batch costs what it deletes.
#[test]
fn a_purge_batch_reads_index_ranges_only() {
    let conn = in_memory();
    for selection in [PurgeSelection::Scheduled, PurgeSelection::Dead, PurgeSelection::All] {
        let plan = plan(&conn, purge_sql(selection), params![1, 10]);
        let searches = plan.iter().filter(|step| step.contains("USING COVERING INDEX tasks_by_due")).count();
        let expected = match selection {
            PurgeSelection::Scheduled => 4,
            PurgeSelection::Dead => 1,
            PurgeSelection::All => 6,
        };
        assert_eq!(searches, expected, "{selection:?}: {plan:?}");
        assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{selection:?}: {plan:?}");
    }
}

/// A page of the tasks in one state, scheduled (both lanes) included, reads index
/// ranges already in due order: its cost is its limit, however many tasks follow.
#[test]
fn a_page_by_state_merges_index_ranges_without_sorting() {
    let conn = in_memory();
    for (state, ranges) in [(TaskState::Scheduled, 4), (TaskState::Leased, 1), (TaskState::Dead, 1)] {
        let plan = plan(&conn, list_sql(Some(state), false), params![1, 0, 0, 11, LEASED, ""]);
        let searches = plan
            .iter()
            .filter(|step| step.contains("INDEX tasks_by_due (queue_id=? AND state=? AND due_at>?)"))
            .count();
        assert_eq!(searches, ranges, "{state:?}: {plan:?}");
        assert_no_scan_or_sort(&plan, &format!("{state:?}"));
    }
}

/// A lease and its lane's next due time each read one range of `tasks_by_due`, the
/// lane's: never a task of the other lane.
#[test]
fn a_lease_reads_its_lanes_range_only() {
    let conn = in_memory();
    let lease = plan(&conn, &LEASE, params![1, 0, 0, 10, 0, SCHEDULED_TARGET_LANE, ""]);
    let search = "USING COVERING INDEX tasks_by_due (queue_id=? AND state=? AND due_at<?)";
    assert_eq!(lease.iter().filter(|step| step.contains(search)).count(), 1, "{lease:?}");
    assert_no_scan_or_sort(&lease, "lease");
    let urgent = plan(&conn, &LEASE_AT_PRIORITY, params![1, 0, 0, 10, 0, SCHEDULED_TARGET_LANE, "", 9]);
    let search = "USING COVERING INDEX tasks_urgent (queue_id=? AND state=? AND priority=? AND due_at<?)";
    assert_eq!(urgent.iter().filter(|step| step.contains(search)).count(), 1, "{urgent:?}");
    assert_no_scan_or_sort(&urgent, "lease at a priority");
    let has_urgent = plan(&conn, HAS_URGENT, params![1, SCHEDULED_TARGET_LANE]);
    let search = "USING COVERING INDEX tasks_urgent (queue_id=? AND state=? AND priority>?)";
    assert_eq!(has_urgent.iter().filter(|step| step.contains(search)).count(), 1, "{has_urgent:?}");
    let next_due = plan(&conn, NEXT_DUE, params![1, SCHEDULED_TARGET_LANE]);
    let search = "USING COVERING INDEX tasks_by_due (queue_id=? AND state=?)";
    assert_eq!(next_due.iter().filter(|step| step.contains(search)).count(), 1, "{next_due:?}");
}

/// A round of leases in groups reads one range of `tasks_by_group` per group named:
/// its cost is the round's, whatever the queue's other groups hold; the turns it gives
/// are one seek of `task_groups` each.
#[test]
fn a_lease_in_a_group_reads_the_groups_range_only() {
    let conn = in_memory();
    let search = "tasks_by_group (queue_id=? AND group_name=? AND state=? AND due_at<?)";
    let names = r#"["customer-42","customer-7"]"#;
    let in_group = plan(&conn, &LEASE_HEADS, params![1, 0, 0, 0, GROUPED_HANDLER_LANE, names, ""]);
    assert_eq!(in_group.iter().filter(|step| step.contains(search)).count(), 1, "{in_group:?}");
    assert_no_scan_or_sort(&in_group, "lease in a group");
    let args = params![1, 0, 0, 0, GROUPED_HANDLER_LANE, names, "", 9];
    let urgent = plan(&conn, &LEASE_HEADS_AT_PRIORITY, args);
    assert!(urgent.iter().any(|step| step.contains("tasks_by_group") || step.contains("tasks_urgent")), "{urgent:?}");
    assert_no_scan_or_sort(&urgent, "lease in a group at a priority");
    let turns = plan(&conn, &LEASED_IN_ROUND, params![1, "customer-42", 7, GROUPED_HANDLER_LANE]);
    let search = "SEARCH task_groups USING PRIMARY KEY (queue_id=? AND name=?)";
    assert_eq!(turns.iter().filter(|step| step.contains(search)).count(), 1, "{turns:?}");
    assert!(!turns.iter().any(|step| step.starts_with("SCAN task_groups")), "{turns:?}");
    let search = "tasks_by_group (queue_id=? AND group_name=? AND state=?)";
    assert_eq!(turns.iter().filter(|step| step.contains(search)).count(), 2, "{turns:?}");
    assert_no_scan_or_sort(&turns, "the rows of a round's groups");
    let counts = plan(&conn, &GROUP_COUNTS, params![1, "customer-42"]);
    let search = "USING COVERING INDEX tasks_by_group (queue_id=? AND group_name=? AND state>?)";
    assert_eq!(counts.iter().filter(|step| step.contains(search)).count(), 1, "{counts:?}");
    assert_no_scan_or_sort(&counts, "a group's counts");
}

/// Dropping ended completion records reads the range of `completions_by_end` up to now:
/// it costs what it deletes, however many records still hold.
#[test]
fn dropping_ended_completion_records_reads_their_range_only() {
    let conn = in_memory();
    let drop = plan(&conn, DROP_ENDED, params![1, 10]);
    let search = "USING COVERING INDEX completions_by_end (unique_until<?)";
    assert_eq!(drop.iter().filter(|step| step.contains(search)).count(), 1, "{drop:?}");
    assert!(!drop.iter().any(|step| step.starts_with("SCAN completions")), "{drop:?}");
    assert!(!drop.iter().any(|step| step.contains("TEMP B-TREE")), "{drop:?}");
}

/// A page of a queue's completion records reads one range of the primary key from the
/// cursor on, already in key order: its cost is its limit (and the ended records in it
/// that no reap deleted yet), however many records the queue and the others hold.
#[test]
fn a_page_of_completion_records_reads_the_queues_range_only() {
    let conn = in_memory();
    let page = plan(&conn, &COMPLETIONS_PAGE, params![1, "k", 0, 11]);
    let search = "SEARCH completions USING PRIMARY KEY (queue_id=? AND key>?)";
    assert_eq!(page.iter().filter(|step| step.contains(search)).count(), 1, "{page:?}");
    assert!(!page.iter().any(|step| step.starts_with("SCAN completions")), "{page:?}");
    assert!(!page.iter().any(|step| step.contains("TEMP B-TREE")), "{page:?}");
}

/// Under a group rate, each group looked at reads its own slots only, a range of the
/// primary key from `until > now`, whatever the queue's other groups hold: when a lease
/// picks its contenders and when it names the next due time; the deletion of ended
/// slots reads their range of `group_slots_by_end`, and a round's slots are written
/// from its list alone.
#[test]
fn a_lease_under_a_rate_reads_each_groups_slots_only() {
    let conn = in_memory();
    let search = "SEARCH group_slots USING PRIMARY KEY (queue_id=? AND group_name=? AND until>?)";
    // Each read of `group_slots` is that search (the contenders' count is read twice per
    // group: SQLite copies the alias `slots` into the term that filters on it).
    let no_scan = |plan: &[String], what: &str| {
        let reads: Vec<&String> = plan.iter().filter(|step| step.contains("group_slots")).collect();
        assert!(!reads.is_empty() && reads.iter().all(|step| step.contains(search)), "{what}: {plan:?}");
        assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{what}: {plan:?}");
    };
    let urgent = plan(&conn, urgent_contenders(true), params![1, GROUPED_HANDLER_LANE, 9, 0, 2, -10, 2]);
    no_scan(&urgent, "the contenders at a priority");
    for lane in [Lane::Handler, Lane::Target] {
        let fresh = plan(&conn, fresh_contenders(lane, true), params![1, 0, 2, 5, -1, "", 10, -10, 2]);
        no_scan(&fresh, &format!("a page of contenders in {lane:?}"));
        assert!(fresh.iter().any(|step| step.contains("task_groups_by_turn")), "{lane:?}: {fresh:?}");
        assert!(!fresh.iter().any(|step| step.contains("TEMP B-TREE")), "{lane:?}: {fresh:?}");
    }
    for next_due in [&*NEXT_DUE_HANDLER, &*NEXT_DUE_TARGET] {
        // The one sort is of a group's slots counting, to find its `count`-th latest end.
        no_scan(&plan(&conn, next_due, params![1, 2, 10, 0, 2]), "the next due time");
    }
    let drop = plan(&conn, DROP_SLOTS, params![1, 10]);
    let search = "SEARCH group_slots USING INDEX group_slots_by_end (queue_id=? AND until<?)";
    assert_eq!(drop.iter().filter(|step| step.contains(search)).count(), 1, "{drop:?}");
    let take = plan(&conn, &TAKE, params![0, 10, r#"[[1,"customer-42",7]]"#]);
    assert!(!take.iter().any(|step| step.contains("group_slots") || step.contains("tasks")), "{take:?}");
}
