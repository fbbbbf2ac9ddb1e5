//! `task_groups` stays what a count of `tasks` gives — one row per group with tasks,
//! its counts of tasks and leased tasks and its earliest due time in each lane —
//! through schedules, replaces, rounds of leases (which write their groups' rows
//! themselves), completions of every kind, releases, reaps and imports of tasks in
//! every state, in both lanes, at several priorities and with a group limit.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test with its line")]

use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, ImportRequest, LeaseRequest};
use punctual_core::{
    Group, Lane, NewTask, Priority, QueueName, StoreId, Target, TaskKey, TaskMeta, TaskState, Timestamp,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rusqlite::Connection;

use crate::codes::{GROUPED_HANDLER_LANE, GROUPED_TARGET_LANE, LEASED};
use crate::row::blank_task;
use crate::schema::in_memory;

/// `(queue_id, name, turn, tasks, leased, due_handler, due_target)`, by queue and name.
type Rows = Vec<(i64, String, i64, i64, i64, Option<i64>, Option<i64>)>;

/// The rows as stored, and as a count of `tasks` gives them (with the stored turns).
fn stored_and_counted(conn: &Connection) -> (Rows, Rows) {
    let read = |sql: &str| -> Rows {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let stored = read(
        "SELECT queue_id, name, turn, tasks, leased, due_handler, due_target FROM task_groups ORDER BY queue_id, name",
    );
    let counted = read(&format!(
        "SELECT t.queue_id, t.group_name, COALESCE(g.turn, -1), COUNT(*), SUM(t.state = {LEASED}), \
         MIN(CASE WHEN t.state = {GROUPED_HANDLER_LANE} THEN t.due_at END), \
         MIN(CASE WHEN t.state = {GROUPED_TARGET_LANE} THEN t.due_at END) \
         FROM tasks t LEFT JOIN task_groups g ON g.queue_id = t.queue_id AND g.name = t.group_name \
         WHERE t.group_name IS NOT NULL GROUP BY t.queue_id, t.group_name ORDER BY t.queue_id, t.group_name"
    ));
    (stored, counted)
}

#[test]
fn group_rows_match_a_count_of_their_tasks() {
    let conn = in_memory();
    let store = StoreId::from_bits(7);
    let queue = QueueName::new("rows").unwrap();
    let target = Target::new("https://hooks.example.com/x").unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let mut held = Vec::new();
    for step in 0..400_i64 {
        let now = Timestamp::from_millis(1_000 + step * 10);
        match rng.random_range(0..10) {
            0..=3 => {
                let tasks = (0..rng.random_range(1..6))
                    .map(|_| {
                        let key = TaskKey::new(format!("k{}", rng.random_range(0..60))).unwrap();
                        let due = Timestamp::from_millis(now.as_millis() + rng.random_range(-50..50));
                        let mut task = NewTask::new(queue.clone(), key, due);
                        task.group = (rng.random_range(0..5) > 0)
                            .then(|| Group::new(format!("g{}", rng.random_range(0..6))).unwrap());
                        task.priority = Priority::new(rng.random_range(0..3)).unwrap();
                        task.target = rng.random_bool(0.3).then(|| target.clone());
                        task
                    })
                    .collect();
                for result in crate::schedule::schedule(&conn, store, tasks, now).unwrap() {
                    result.unwrap();
                }
            }
            4..=6 => {
                let lane = if rng.random_bool(0.3) { Lane::Target } else { Lane::Handler };
                let limit = rng.random_bool(0.5).then_some(2);
                let request = LeaseRequest::new(queue.clone(), rng.random_range(1..8), Duration::from_millis(300), now)
                    .group_limit(limit)
                    .in_lane(lane);
                held.extend(crate::lease::lease(&conn, store, &request, 0).unwrap().leases);
            }
            7..=8 if !held.is_empty() => {
                let lease = held.swap_remove(rng.random_range(0..held.len()));
                let later = Timestamp::from_millis(now.as_millis() + 20);
                let completion = match rng.random_range(0..4) {
                    0 => Completion::Done,
                    1 => Completion::Retry { at: later, error: "again".into() },
                    2 => Completion::Reschedule { at: later, anchor: later },
                    _ => Completion::Dead { error: "gone".into() },
                };
                let _ = crate::complete::complete(&conn, store, &CompleteRequest::new(lease.token, completion, now));
            }
            7..=8 => {}
            _ => {
                if rng.random_bool(0.5)
                    && let Some(lease) = held.pop()
                {
                    let _ = crate::lease::release(&conn, store, &lease.token, now);
                } else {
                    crate::reap::reap(&conn, now, 100).unwrap();
                }
            }
        }
        if step % 40 == 39 {
            // Tasks of another store, in every state; a key already here stays.
            let tasks = (0..rng.random_range(1..6))
                .map(|_| {
                    let key = TaskKey::new(format!("k{}", rng.random_range(0..80))).unwrap();
                    let meta = TaskMeta::new(StoreId::from_bits(9), 1, 3, 1, now);
                    let mut task = blank_task(queue.clone(), key, meta);
                    task.due_at = Timestamp::from_millis(now.as_millis() + rng.random_range(-50..50));
                    task.group =
                        rng.random_bool(0.8).then(|| Group::new(format!("g{}", rng.random_range(0..8))).unwrap());
                    task.target = rng.random_bool(0.3).then(|| target.clone());
                    task.state = [TaskState::Scheduled, TaskState::Leased, TaskState::Dead][rng.random_range(0..3)];
                    task.lease_expires_at = (task.state == TaskState::Leased)
                        .then(|| Timestamp::from_millis(now.as_millis() + rng.random_range(0..300)));
                    task
                })
                .collect();
            crate::import::import(&conn, &ImportRequest::new(tasks, Vec::new(), now)).unwrap();
        }
        let (stored, counted) = stored_and_counted(&conn);
        assert_eq!(stored, counted, "after step {step}");
    }
}
