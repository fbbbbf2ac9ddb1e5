//! A statement is compiled once per connection and then only run again: SQLite never
//! compiles it anew because a parameter was bound (see `configure` in the crate root).
//! Compiling a write on `tasks` compiles the `task_groups` triggers with it, so a lease
//! that did so at every run cost far more than the rows it took. The same holds for the
//! statements of a lease under a group rate.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test with its line")]

use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Group, Lane, NewTask, Priority, QueueName, StoreId, TaskKey, Timestamp};
use rusqlite::StatementStatus;

use crate::group_rate::{DROP_ENDED, NEXT_DUE_HANDLER, TAKE};
use crate::groups::{LEASED_IN_ROUND, fresh_contenders, urgent_contenders};
use crate::leasing::{HAS_URGENT, LEASE, LEASE_AT_PRIORITY, LEASE_HEADS, LEASE_HEADS_AT_PRIORITY, NEXT_DUE};
use crate::schedule::schedule;
use crate::schema::in_memory;

/// 40 tasks in `queue`, due by `now`: three of four in one of 7 groups, at priorities
/// 0 to 2.
fn schedule_in_groups(conn: &rusqlite::Connection, store: StoreId, queue: &QueueName, now: Timestamp) {
    let tasks = (0..40)
        .map(|i| {
            let mut task =
                NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).unwrap(), Timestamp::from_millis(i));
            task.group = (i % 4 != 0).then(|| Group::new(format!("g{}", i % 7)).unwrap());
            task.priority = Priority::new(u32::try_from(i % 3).unwrap()).unwrap();
            task
        })
        .collect();
    for result in schedule(conn, store, tasks, now).unwrap() {
        result.unwrap();
    }
}

/// Each statement of `statements` ran, and none was compiled again.
fn assert_compiled_once(conn: &rusqlite::Connection, statements: &[&str]) {
    let counts: Vec<(i32, i32, &str)> = statements
        .iter()
        .map(|sql| {
            let statement = conn.prepare_cached(sql).unwrap();
            (statement.get_status(StatementStatus::Run), statement.get_status(StatementStatus::RePrepare), *sql)
        })
        .collect();
    for (runs, compiled_again, sql) in &counts {
        assert!(*runs > 0, "never ran: {sql}");
        assert_eq!(
            *compiled_again,
            0,
            "compiled again in {runs} runs: {sql}; all (runs, compiled again): {:?}",
            counts.iter().map(|(r, c, _)| (r, c)).collect::<Vec<_>>()
        );
    }
}

/// Leasing grouped and ungrouped tasks of several priorities one at a time, and
/// completing each, runs every lease statement many times and compiles none again.
#[test]
fn leasing_in_turns_compiles_no_statement_again() {
    let conn = in_memory();
    let store = StoreId::from_bits(7);
    let queue = QueueName::new("turns").unwrap();
    let now = Timestamp::from_millis(1_000);
    schedule_in_groups(&conn, store, &queue, now);
    let mut leased = 0;
    loop {
        let request = LeaseRequest::new(queue.clone(), 1, Duration::from_secs(30), now).group_limit(Some(2));
        let batch = crate::lease::lease(&conn, store, &request, 0).unwrap();
        let Some(lease) = batch.leases.into_iter().next() else { break };
        leased += 1;
        crate::complete::complete(&conn, store, &CompleteRequest::new(lease.token, Completion::Done, now))
            .unwrap()
            .unwrap();
    }
    assert_eq!(leased, 40);
    assert_compiled_once(
        &conn,
        &[
            &LEASE,
            &LEASE_AT_PRIORITY,
            &LEASE_HEADS,
            &LEASE_HEADS_AT_PRIORITY,
            NEXT_DUE,
            HAS_URGENT,
            &LEASED_IN_ROUND,
            urgent_contenders(false),
            fresh_contenders(Lane::Handler, false),
        ],
    );
}

/// The same under a group rate, the clock moving on so that windows end: the rate's
/// statements run many times too, and none is compiled again.
#[test]
fn leasing_under_a_rate_compiles_no_statement_again() {
    let conn = in_memory();
    let store = StoreId::from_bits(7);
    let queue = QueueName::new("rated").unwrap();
    schedule_in_groups(&conn, store, &queue, Timestamp::from_millis(1_000));
    let rate = Rate { count: 1, per: Duration::from_millis(20) };
    let mut leased = 0;
    for step in 0..2_000 {
        let now = Timestamp::from_millis(1_000 + step * 5);
        let request = LeaseRequest::new(queue.clone(), 2, Duration::from_secs(30), now).group_rate(Some(rate));
        let batch = crate::lease::lease(&conn, store, &request.group_limit(Some(2)), 0).unwrap();
        for lease in batch.leases {
            leased += 1;
            crate::complete::complete(&conn, store, &CompleteRequest::new(lease.token, Completion::Done, now))
                .unwrap()
                .unwrap();
        }
        if leased == 40 {
            break;
        }
    }
    assert_eq!(leased, 40);
    assert_compiled_once(
        &conn,
        &[
            &LEASE_HEADS,
            &LEASE_HEADS_AT_PRIORITY,
            &LEASED_IN_ROUND,
            urgent_contenders(true),
            fresh_contenders(Lane::Handler, true),
            &NEXT_DUE_HANDLER,
            DROP_ENDED,
            &TAKE,
        ],
    );
}
