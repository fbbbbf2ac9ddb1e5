//! Layout versions on disk: a store of layout 1 (before targets), 2 (before
//! priorities), 3 (before groups and dedupe windows), 4 (before group rates), 5
//! (before timing policies) or 6 (before trace contexts and pending history events) is
//! migrated at its next open to the current layout, 8, and keeps its tasks; a store of
//! a newer layout is refused.
//!
//! Guards against an upgrade that cannot open a layout-1 store (it has no `target`
//! column, which every task read selects), loses or alters its tasks, puts them in the
//! wrong lane, or leaves the version at 1 so that an older punctual would go on opening
//! a store that holds target tasks; against a layout-2 store whose tasks come out of the
//! migration with a priority other than 0, or whose version stays 2 so that a punctual
//! without priorities would lease its urgent tasks in due order; against a layout-3
//! store whose tasks come out in a group or with their codes changed, that cannot keep a
//! window or a completion record after the migration, or whose version stays 3 so that
//! a punctual without windows would create a task a record holds; against a layout-4
//! store that cannot hold a group rate after the migration, whose slots do not survive
//! a reopen, or whose version stays 4 so that a punctual without rates would lease past
//! a queue's rate; against a layout-5 store whose tasks come out with a timing other
//! than the default, that cannot keep a timing written after the migration, or whose
//! version stays 5 so that a punctual without timing would fire its repeats out of
//! their calendars; against a layout-6 store whose tasks come out with a trace context,
//! that cannot keep one written after the migration, or whose version stays 6 so that
//! a punctual without trace contexts would keep a replaced task's old one, or whose
//! histories are not read whole after the migration or do not go on; and against
//! opening a layout this code cannot read.

use std::path::Path;
use std::time::Duration;

use punctual_core::history::{EventKind, HistoryEvent};
use punctual_core::policy::{Misfire, Overlap, Rate, Timing};
use punctual_core::store::{CompleteRequest, Completion, HistoryRequest, LeaseRequest};
use punctual_core::{
    Error, Group, Lane, NewTask, Priority, QueueName, Repeat, ScheduleOutcome, Store, Tag, Target, TaskKey, TaskState,
    Timestamp, TraceContext, Unique,
};
use punctual_sqlite::{DB_FILE, SqliteStore};
use serde_json::json;

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

/// The layout this punctual writes.
const CURRENT_LAYOUT: i64 = 8;

/// What turns a store of the current layout into one of layout 6, as punctual of
/// layout 6 wrote it: no trace contexts; every history event in `history`, none pending
/// in its task's row.
const BACK_TO_LAYOUT_6: &str = "
ALTER TABLE tasks DROP COLUMN traceparent;
INSERT INTO history (queue_id, key, latest, looked, count, events)
    SELECT queue_id, key, updated_at, updated_at, pending_count, pending_events FROM tasks
    WHERE pending_events IS NOT NULL;
ALTER TABLE tasks DROP COLUMN pending_count; ALTER TABLE tasks DROP COLUMN pending_events;
UPDATE meta SET value = 6 WHERE name = 'schema_version';
";

/// What turns a store of layout 6 into one of layout 5, as punctual of layout 5 wrote
/// it: no timing policies.
const BACK_TO_LAYOUT_5: &str = "
ALTER TABLE tasks DROP COLUMN timing;
UPDATE meta SET value = 5 WHERE name = 'schema_version';
";

/// What turns a store of layout 5 into one of layout 4, as punctual of layout 4 wrote
/// it: no group rates.
const BACK_TO_LAYOUT_4: &str = "
DROP INDEX group_slots_by_end; DROP TABLE group_slots;
UPDATE meta SET value = 4 WHERE name = 'schema_version';
";

/// What turns a store of layout 4 into one of layout 3, as punctual of layout 3 wrote
/// it: no groups, no dedupe windows.
const BACK_TO_LAYOUT_3: &str = "
DROP TRIGGER task_groups_on_insert; DROP TRIGGER task_groups_on_update; DROP TRIGGER task_groups_on_delete;
DROP TRIGGER task_groups_on_leave; DROP TRIGGER task_groups_on_join;
DROP INDEX tasks_by_group; DROP INDEX task_groups_by_turn; DROP TABLE task_groups;
ALTER TABLE tasks DROP COLUMN group_name;
ALTER TABLE queues DROP COLUMN last_turn; ALTER TABLE queues DROP COLUMN ungrouped_turn;
DROP INDEX completions_by_end; DROP TABLE completions;
ALTER TABLE tasks DROP COLUMN unique_window_ms; ALTER TABLE tasks DROP COLUMN unique_dead;
UPDATE meta SET value = 3 WHERE name = 'schema_version';
";

/// The tables of layout 1 that hold tasks, as punctual wrote them then (the others
/// are the same in both layouts and made by the next open).
const LAYOUT_1: &str = "
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE queues (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE tasks (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id           INTEGER NOT NULL,
    key                TEXT NOT NULL,
    state              INTEGER NOT NULL,
    due_at             INTEGER NOT NULL,
    lease_expires_at   INTEGER,
    fence              INTEGER NOT NULL,
    version            INTEGER NOT NULL,
    attempts           INTEGER NOT NULL,
    max_attempts       INTEGER NOT NULL,
    occurrence         INTEGER NOT NULL,
    anchor             INTEGER NOT NULL,
    backoff_initial_ms INTEGER NOT NULL,
    backoff_factor     REAL NOT NULL,
    backoff_max_ms     INTEGER NOT NULL,
    repeat             TEXT,
    tags               TEXT,
    payload            TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    last_error         TEXT
);
CREATE UNIQUE INDEX tasks_by_key ON tasks (queue_id, key);
CREATE INDEX tasks_by_due ON tasks (queue_id, state, due_at, id);
CREATE TABLE tags (
    queue_id INTEGER NOT NULL,
    tag      TEXT NOT NULL,
    task_id  INTEGER NOT NULL,
    PRIMARY KEY (queue_id, tag, task_id)
) WITHOUT ROWID;
INSERT INTO meta (name, value) VALUES ('schema_version', 1), ('epoch', 3);
INSERT INTO queues (id, name) VALUES (1, 'order.cancel');
";

fn queue() -> QueueName {
    QueueName::new("order.cancel").expect("a queue name")
}

fn key(name: &str) -> TaskKey {
    TaskKey::new(name).expect("a key")
}

fn at_secs(s: u64) -> Timestamp {
    NOW.saturating_add(Duration::from_secs(s))
}

fn target() -> Target {
    Target::new("https://shop.example.com/hooks/cancel").expect("a target")
}

/// A layout-1 store in `dir`: `scheduled` due at NOW (tagged `pi-9`, tried once), and
/// `dead`, dead after its last try.
fn write_layout_1_store(dir: &Path) {
    let db = rusqlite::Connection::open(dir.join(DB_FILE)).expect("create the database");
    db.execute_batch(LAYOUT_1).expect("the layout-1 tables");
    let insert = "INSERT INTO tasks (queue_id, key, state, due_at, lease_expires_at, fence, version, attempts, \
                  max_attempts, occurrence, anchor, backoff_initial_ms, backoff_factor, backoff_max_ms, repeat, tags, \
                  payload, created_at, updated_at, last_error) \
                  VALUES (1, ?1, ?2, ?3, NULL, ?4, 1, ?5, 3, 1, ?3, 1000, 2.0, 60000, NULL, ?6, ?7, ?8, ?8, ?9)";
    let (due, created) = (NOW.as_millis(), NOW.as_millis() - 60_000);
    let scheduled = rusqlite::params!["scheduled", 0, due, 1, 1, r#"["pi-9"]"#, r#"{"order":1}"#, created, "503"];
    db.execute(insert, scheduled).expect("the scheduled task");
    let dead = rusqlite::params!["dead", 2, due, 2, 3, None::<String>, r#"{"order":2}"#, created, "410"];
    db.execute(insert, dead).expect("the dead task");
    db.execute("INSERT INTO tags (queue_id, tag, task_id) VALUES (1, 'pi-9', 1)", []).expect("its tag");
}

fn layout_version(dir: &Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join(DB_FILE)).expect("open the database");
    db.query_row("SELECT value FROM meta WHERE name = 'schema_version'", [], |row| row.get(0)).expect("the version")
}

async fn lease_lane(store: &SqliteStore, lane: Lane, now: Timestamp) -> Vec<String> {
    let request = LeaseRequest::new(queue(), 10, Duration::from_secs(30), now).in_lane(lane);
    let batch = store.lease(request).await.expect("lease");
    batch.leases.iter().map(|lease| lease.task.key.to_string()).collect()
}

#[tokio::test]
async fn a_layout_1_store_is_migrated_and_keeps_its_tasks_in_the_handler_lane() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_layout_1_store(dir.path());

    let store = SqliteStore::open(dir.path()).expect("open the layout-1 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    let scheduled = store.get(&queue(), &key("scheduled")).await.expect("get").expect("the scheduled task is kept");
    assert_eq!(scheduled.state, TaskState::Scheduled);
    assert_eq!((scheduled.due_at, scheduled.attempts, scheduled.max_attempts), (NOW, 1, 3));
    assert_eq!(scheduled.payload, json!({"order": 1}));
    assert_eq!(scheduled.tags, [Tag::new("pi-9").expect("a tag")]);
    assert_eq!(scheduled.priority, Priority::LOWEST, "an old task has the default priority");
    assert_eq!((scheduled.last_error.as_deref(), scheduled.target.as_ref()), (Some("503"), None));
    let dead = store.get(&queue(), &key("dead")).await.expect("get").expect("the dead task is kept");
    assert_eq!((dead.state, dead.attempts, dead.last_error.as_deref()), (TaskState::Dead, 3, Some("410")));

    assert_eq!(lease_lane(&store, Lane::Target, NOW).await, Vec::<String>::new(), "no old task has a target");
    let leased = store.lease(LeaseRequest::new(queue(), 10, Duration::from_secs(30), NOW)).await.expect("lease");
    assert_eq!(leased.leases.len(), 1, "the old scheduled task is due in the handler lane");
    let lease = &leased.leases[0];
    assert_eq!((lease.task.key.as_str(), lease.attempt), ("scheduled", 2));
    assert!(lease.task.meta.fence > 1, "the lease's fence is above the old store's");
    let retry = Completion::Retry { at: at_secs(1), error: "503 again".into() };
    store.complete(CompleteRequest::new(lease.token.clone(), retry, NOW)).await.expect("the retry is taken");
    assert_eq!(lease_lane(&store, Lane::Handler, at_secs(1)).await, ["scheduled"], "a retry keeps it in its lane");

    // An old task given a target by a replace moves to the target lane.
    let mut replaced = NewTask::new(queue(), key("dead"), at_secs(2));
    replaced.target = Some(target());
    store.schedule(vec![replaced], at_secs(2)).await.expect("schedule").pop().expect("one").expect("replaced");
    assert_eq!(lease_lane(&store, Lane::Handler, at_secs(2)).await, Vec::<String>::new());
    let leased = store.lease(LeaseRequest::new(queue(), 10, Duration::from_secs(30), at_secs(2)).in_lane(Lane::Target));
    let leased = leased.await.expect("lease");
    assert_eq!(leased.leases.len(), 1, "the replaced task is due in the target lane");
    assert_eq!(leased.leases[0].task.target, Some(target()));
    store.close().await.expect("close");
    drop(store);

    // Migrated once: the next open finds the current layout and adds nothing.
    let again = SqliteStore::open(dir.path()).expect("reopen the migrated store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT);
    assert_eq!(again.get(&queue(), &key("dead")).await.expect("get").and_then(|task| task.target), Some(target()));
}

#[tokio::test]
async fn a_store_of_a_newer_layout_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    store.close().await.expect("close");
    drop(store);
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    let newer = CURRENT_LAYOUT + 1;
    db.execute("UPDATE meta SET value = ?1 WHERE name = 'schema_version'", [newer])
        .expect("as a newer punctual wrote it");
    drop(db);

    match SqliteStore::open(dir.path()) {
        Err(Error::Unavailable(message)) => {
            assert!(message.contains(&format!("newer punctual (layout {newer}")), "{message}");
        }
        other => panic!("a layout-{newer} store must be refused as unavailable, got {other:?}"),
    }
    assert_eq!(layout_version(dir.path()), newer, "a refused store is left as it was");
}

/// A layout-2 store (targets, no priorities): its tasks come out at priority 0 and in
/// no debounce burst, a
/// replace gives one a priority, and a lease then takes it before the older ones.
#[tokio::test]
async fn a_layout_2_store_is_migrated_with_every_task_at_priority_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let mut tasks: Vec<NewTask> =
        ["first", "second", "third"].iter().map(|name| NewTask::new(queue(), key(name), NOW)).collect();
    tasks[2].target = Some(target());
    for scheduled in store.schedule(tasks, NOW).await.expect("schedule") {
        scheduled.expect("created");
    }
    store.close().await.expect("close");
    drop(store);
    // What punctual of layout 2 left on disk: no priority column, nor its index.
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_5).expect("as punctual of layout 5 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_4).expect("as punctual of layout 4 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_3).expect("as punctual of layout 3 wrote it");
    db.execute_batch(
        "DROP INDEX tasks_urgent; ALTER TABLE tasks DROP COLUMN priority; \
         ALTER TABLE tasks DROP COLUMN debounce_until; UPDATE meta SET value = 2 WHERE name = 'schema_version';",
    )
    .expect("as punctual of layout 2 wrote it");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("open the layout-2 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    for name in ["first", "second", "third"] {
        let task = store.get(&queue(), &key(name)).await.expect("get").expect("the task is kept");
        assert_eq!((task.state, task.priority), (TaskState::Scheduled, Priority::LOWEST), "{name}");
        assert_eq!(task.meta.debounce_until, None, "{name}: in no debounce burst");
    }
    let third = store.get(&queue(), &key("third")).await.expect("get").expect("kept");
    assert_eq!(third.target, Some(target()), "the target survives the migration");
    let mut urgent = NewTask::new(queue(), key("second"), NOW);
    urgent.priority = Priority::HIGHEST;
    store.schedule(vec![urgent], NOW).await.expect("schedule").pop().expect("one").expect("replaced");
    assert_eq!(lease_lane(&store, Lane::Handler, NOW).await, ["second", "first"], "the urgent task first");
}

/// A layout-3 store (priorities, no groups): its tasks come out ungrouped, leased as
/// before, and a replace puts one in a group, which the group limit then holds back.
#[tokio::test]
async fn a_layout_3_store_is_migrated_with_every_task_ungrouped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let mut tasks: Vec<NewTask> =
        ["first", "second", "third"].iter().map(|name| NewTask::new(queue(), key(name), NOW)).collect();
    tasks[2].target = Some(target());
    for scheduled in store.schedule(tasks, NOW).await.expect("schedule") {
        scheduled.expect("created");
    }
    store.close().await.expect("close");
    drop(store);
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_5).expect("as punctual of layout 5 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_4).expect("as punctual of layout 4 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_3).expect("as punctual of layout 3 wrote it");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("open the layout-3 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    for name in ["first", "second", "third"] {
        let task = store.get(&queue(), &key(name)).await.expect("get").expect("the task is kept");
        assert_eq!((task.state, task.group.as_ref()), (TaskState::Scheduled, None), "{name}");
    }
    let grouped = ["first", "second"].map(|name| {
        let mut task = NewTask::new(queue(), key(name), NOW);
        task.group = Some(Group::new("customer-42").expect("a group"));
        task
    });
    for scheduled in store.schedule(grouped.to_vec(), NOW).await.expect("schedule") {
        scheduled.expect("replaced");
    }
    let request = LeaseRequest::new(queue(), 10, Duration::from_secs(30), NOW).group_limit(Some(1));
    let leased = store.lease(request).await.expect("lease");
    let keys: Vec<&str> = leased.leases.iter().map(|lease| lease.task.key.as_str()).collect();
    assert_eq!(keys, ["first"], "one task of customer-42 at a time");
    assert_eq!(lease_lane(&store, Lane::Target, NOW).await, ["third"], "the target task keeps its lane");
}

/// A layout-3 store (priorities and debounce, no dedupe windows): its tasks come out
/// with no window; a replace gives one a window, whose completion then holds the key;
/// the record survives a reopen.
#[tokio::test]
async fn a_layout_3_store_is_migrated_with_no_window_and_keeps_completion_records_after() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let mut old = NewTask::new(queue(), key("receipt-1"), NOW);
    old.priority = Priority::HIGHEST;
    store.schedule(vec![old], NOW).await.expect("schedule").pop().expect("one").expect("created");
    store.close().await.expect("close");
    drop(store);
    // What punctual of layout 3 left on disk: no window columns, no completions.
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_5).expect("as punctual of layout 5 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_4).expect("as punctual of layout 4 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_3).expect("as punctual of layout 3 wrote it");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("open the layout-3 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    let kept = store.get(&queue(), &key("receipt-1")).await.expect("get").expect("the task is kept");
    assert_eq!((kept.unique_for, kept.priority), (None, Priority::HIGHEST), "no window; the priority stays");
    let mut windowed = NewTask::new(queue(), key("receipt-1"), NOW);
    windowed.unique_for = Some(Unique::new(Duration::from_secs(3600)));
    store.schedule(vec![windowed], NOW).await.expect("schedule").pop().expect("one").expect("replaced");
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(30), NOW)).await.expect("lease");
    let token = batch.leases[0].token.clone();
    store.complete(CompleteRequest::new(token, Completion::Done, at_secs(1))).await.expect("done");
    store.close().await.expect("close");
    drop(store);

    let store = SqliteStore::open(dir.path()).expect("reopen");
    let again = store.schedule(vec![NewTask::new(queue(), key("receipt-1"), NOW)], at_secs(2)).await;
    let again = again.expect("schedule").pop().expect("one").expect("kept");
    assert_eq!((again.outcome, again.task), (ScheduleOutcome::Kept, None), "the completion record holds the key");
    assert_eq!(again.completed.map(|record| record.completed_at), Some(at_secs(1)));
}

/// A layout-4 store (groups, no rates): its grouped tasks are kept, a lease under a
/// group rate then holds each group to its rate, and the slots it took survive a
/// reopen, so the rate holds across a restart.
#[tokio::test]
async fn a_layout_4_store_is_migrated_and_then_holds_a_group_rate_across_a_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let grouped = ["first", "second", "third"].map(|name| {
        let mut task = NewTask::new(queue(), key(name), NOW);
        task.group = Some(Group::new("customer-42").expect("a group"));
        task
    });
    for scheduled in store.schedule(grouped.to_vec(), NOW).await.expect("schedule") {
        scheduled.expect("created");
    }
    store.close().await.expect("close");
    drop(store);
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_5).expect("as punctual of layout 5 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_4).expect("as punctual of layout 4 wrote it");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("open the layout-4 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    let rate = Some(Rate::parse("2/1m").expect("a rate"));
    let rated = |now| LeaseRequest::new(queue(), 10, Duration::from_secs(30), now).group_rate(rate);
    let leased = store.lease(rated(NOW)).await.expect("lease");
    let keys: Vec<&str> = leased.leases.iter().map(|lease| lease.task.key.as_str()).collect();
    assert_eq!(keys, ["first", "second"], "two of customer-42 a minute");
    assert_eq!(leased.next_due, Some(at_secs(60)));
    store.close().await.expect("close");
    drop(store);

    let store = SqliteStore::open(dir.path()).expect("reopen");
    let held = store.lease(rated(at_secs(59))).await.expect("lease");
    assert!(held.leases.is_empty(), "the slots taken before the restart still count");
    assert_eq!(held.next_due, Some(at_secs(60)));
    let after = store.lease(rated(at_secs(60))).await.expect("lease");
    assert_eq!(after.leases.iter().map(|lease| lease.task.key.as_str()).collect::<Vec<_>>(), ["third"]);
}

/// A layout-5 store (group rates, no timing policies): its tasks come out with the
/// default timing and their anchors, a lease and a reschedule go on as before, and a
/// replace then gives one a timing that survives a reopen.
#[tokio::test]
async fn a_layout_5_store_is_migrated_with_every_task_at_the_default_timing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let mut hourly = NewTask::new(queue(), key("hourly"), NOW);
    hourly.repeat = Some(Repeat::every(Duration::from_secs(3600)).expect("a repeat"));
    let tasks = vec![hourly, NewTask::new(queue(), key("once"), at_secs(5))];
    for scheduled in store.schedule(tasks, NOW).await.expect("schedule") {
        scheduled.expect("created");
    }
    store.close().await.expect("close");
    drop(store);
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    db.execute_batch(BACK_TO_LAYOUT_5).expect("as punctual of layout 5 wrote it");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("open the layout-5 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    for (name, anchor) in [("hourly", NOW), ("once", at_secs(5))] {
        let task = store.get(&queue(), &key(name)).await.expect("get").expect("the task is kept");
        assert_eq!((task.state, task.timing, task.meta.anchor), (TaskState::Scheduled, Timing::default(), anchor));
    }
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(30), NOW)).await.expect("lease");
    let rearm = Completion::Reschedule { at: at_secs(3_607), anchor: at_secs(3_600) };
    store.complete(CompleteRequest::new(batch.leases[0].token.clone(), rearm, at_secs(1))).await.expect("rearmed");
    let hourly = store.get(&queue(), &key("hourly")).await.expect("get").expect("kept");
    assert_eq!((hourly.due_at, hourly.meta.anchor, hourly.timing), (at_secs(3_607), at_secs(3_600), Timing::default()));

    let mut timing = Timing::default();
    timing.misfire = Misfire::FireAll;
    timing.overlap = Overlap::Queue;
    let mut replaced = NewTask::new(queue(), key("once"), at_secs(12));
    replaced.scheduled_for = at_secs(10);
    replaced.timing = timing.clone();
    store.schedule(vec![replaced], at_secs(2)).await.expect("schedule").pop().expect("one").expect("replaced");
    store.close().await.expect("close");
    drop(store);

    let store = SqliteStore::open(dir.path()).expect("reopen");
    let once = store.get(&queue(), &key("once")).await.expect("get").expect("kept");
    assert_eq!((once.timing, once.meta.anchor, once.due_at), (timing, at_secs(10), at_secs(12)));
}

/// A store holding `tasks`, scheduled at `NOW`, as punctual of layout 6 left it on disk.
async fn layout_6_store_of(tasks: Vec<NewTask>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    for scheduled in store.schedule(tasks, NOW).await.expect("schedule") {
        scheduled.expect("created");
    }
    store.close().await.expect("close");
    drop(store);
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch(BACK_TO_LAYOUT_6).expect("as punctual of layout 6 wrote it");
    dir
}

/// A layout-6 store (every history event in `history`): a task's history reads whole
/// after the migration, and goes on through a lease and its ack, in order.
#[tokio::test]
async fn a_layout_6_store_is_migrated_and_its_histories_go_on() {
    let dir = layout_6_store_of(vec![NewTask::new(queue(), key("kept"), NOW)]).await;

    let store = SqliteStore::open(dir.path()).expect("open the layout-6 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    let kinds = |events: Vec<HistoryEvent>| events.into_iter().map(|event| event.kind).collect::<Vec<_>>();
    let read = || store.history(HistoryRequest::new(queue(), key("kept"), Timestamp::EPOCH));
    assert_eq!(kinds(read().await.expect("history")), [EventKind::Created]);
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(30), NOW)).await.expect("lease");
    assert_eq!(kinds(read().await.expect("history")), [EventKind::Created, EventKind::Leased]);
    store
        .complete(CompleteRequest::new(batch.leases[0].token.clone(), Completion::Done, at_secs(1)))
        .await
        .expect("ack");
    assert_eq!(kinds(read().await.expect("history")), [EventKind::Created, EventKind::Leased, EventKind::Acked]);
}

/// A layout-6 store (timing policies, no trace contexts): its tasks come out without a
/// trace context, a lease and a retry go on as before, and a replace then gives one a
/// trace context that survives a reopen.
#[tokio::test]
async fn a_layout_6_store_is_migrated_with_no_task_in_a_trace() {
    let tasks = vec![NewTask::new(queue(), key("first"), NOW), NewTask::new(queue(), key("second"), at_secs(5))];
    let dir = layout_6_store_of(tasks).await;

    let store = SqliteStore::open(dir.path()).expect("open the layout-6 store");
    assert_eq!(layout_version(dir.path()), CURRENT_LAYOUT, "the open migrates the layout");
    for name in ["first", "second"] {
        let task = store.get(&queue(), &key(name)).await.expect("get").expect("the task is kept");
        assert_eq!((task.state, task.traceparent), (TaskState::Scheduled, None), "{name}");
    }
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(30), NOW)).await.expect("lease");
    let retry = Completion::Retry { at: at_secs(3), error: "503".into() };
    store.complete(CompleteRequest::new(batch.leases[0].token.clone(), retry, at_secs(1))).await.expect("retried");
    let first = store.get(&queue(), &key("first")).await.expect("get").expect("kept");
    assert_eq!((first.attempts, first.traceparent), (1, None));

    let trace = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").expect("a traceparent");
    let replaced = NewTask::new(queue(), key("second"), at_secs(12)).traceparent(trace.clone());
    store.schedule(vec![replaced], at_secs(2)).await.expect("schedule").pop().expect("one").expect("replaced");
    store.close().await.expect("close");
    drop(store);

    let store = SqliteStore::open(dir.path()).expect("reopen");
    let second = store.get(&queue(), &key("second")).await.expect("get").expect("kept");
    assert_eq!((second.traceparent, second.due_at), (Some(trace), at_secs(12)));
}
