//! The on-disk layout, in one place. Inspect a live store with
//! `sqlite3 punctual-data/punctual.db` (read-only while the server runs is safe: WAL).
//!
//! - `meta`: the layout version, the open counter (`epoch`) and the store's identity
//!   (`store_id`, its 64 bits as a signed integer; added without a layout change:
//!   a store without one gets one at its next open); `secrets`: the store's signing
//!   secret.
//! - `queues`: one row per queue name; tasks refer to it by `id` to keep rows small.
//! - `tasks`: one row per (queue, key); `state` 0 scheduled in the handler lane, 3
//!   scheduled in the target lane, 1 leased, 2 dead (named in `codes`, which the SQL
//!   uses). A scheduled task's code is 3 exactly when it has a target, so each lane's
//!   scheduled tasks are one range of `tasks_by_due` and a lease of one lane never reads
//!   the other's rows. Cancelled tasks are deleted, and done ones too unless their row is
//!   kept as their key's newest history events: code -1 (`codes::KEPT`, no task; its
//!   `due_at` the time of its last event, which the retention sweep reads). `id` is AUTOINCREMENT so it
//!   is never reused: it is the task's `meta.id`, unique per creation. `target` is the
//!   task's HTTP target as `Target::to_stored` writes it, NULL for none. `priority` is
//!   the task's priority, 0–9; `debounce_until` its debounce burst's bound
//!   (`TaskMeta::debounce_until`), NULL outside a burst; `unique_window_ms` its dedupe
//!   window (NULL: none) and `unique_dead` 1 when the window holds it dead too.
//!   `timing` is the task's timing policies as `Timing`'s JSON, NULL when every
//!   policy is the default (so the usual task writes and reads nothing more).
//!   `traceparent` is the W3C trace context the task was scheduled with (its last
//!   replace's), NULL for none. `pending_events` are the task's history events not
//!   yet moved to `history`, one per line, and `pending_count` how many (see `history`).
//!   `group_name` is the task's group, NULL for none; a scheduled task in a group has
//!   its own codes, 4 (handler lane) and 5 (target lane), so the ungrouped tasks of a
//!   lane are still one range that a lease without groups reads as before.
//! - `task_groups`: one row per (queue, group) holding tasks — made and deleted by the
//!   triggers on `tasks`, so a group's row (and its `turn`) lives exactly while the group
//!   has tasks — with its turn (0 until its first lease), its counts of tasks and of
//!   leased tasks and the earliest due time of its scheduled tasks in each lane (NULL for
//!   none), all kept exact by the triggers on every insert, update of state, due time or
//!   group, and delete. `queues.last_turn` is the last turn a lease gave in the queue and
//!   `queues.ungrouped_turn` that of its ungrouped tasks.
//! - `group_slots`: the slots of the queues' `group_rate`s (see `group_rate`), one per
//!   lease of a grouped task made under a rate: its queue and group, `at` (the lease's
//!   `now`), `until` (the end of the window of the rate it was taken under) and the
//!   queue's turn the lease took (unique in the queue, so two slots of one instant are
//!   two rows). Kept while the group's tasks come and go; a lease under a rate deletes
//!   the queue's rows with `until` at or before its `now`.
//! - `completions`: the completion records of dedupe windows, one per (queue, key)
//!   whose task completed for good with a window (see `completions`): its id, when it
//!   completed, its attempts and occurrence, and `unique_until`, when the record ends.
//! - `tags`: (queue, tag) → task ids, so cancelling a tag is an index range, not a scan.
//! - `queue_records`: one row per queue given settings or paused through the API, by
//!   name (a queue may have a record and no task, so not by `queues.id`); `settings`
//!   is the document's text as given (NULL once cleared), `paused` 0 or 1, `version`
//!   1 at creation and 1 more at every change. Rows are never deleted. Added without
//!   a layout change, like the indexes below: `TABLES` makes it at the next open of an
//!   older store, and an older punctual opening a newer store only ignores it (its
//!   queues run unpaused, with its config file's settings).
//! - `calendar_records`: one row per calendar created through the API, by name; `spec`
//!   is the calendar's document as given (NULL once removed: the row stays, so its
//!   `version` goes on rising if it is created again). Added without a layout change,
//!   as `queue_records` was; an older punctual ignores it.
//! - `outbox_marks`: one row per outbox row applied (`Store::apply_once`), by outbox
//!   name and row id, with when it was applied (see `outbox_marks`); the index
//!   `outbox_marks_by_time` serves the deletion of marks past the retention. Added
//!   without a layout change: an older punctual has no outbox drain, and ignores it.
//! - `history`: each (queue, key)'s task history (see `history`): its events, one per
//!   line, but those of its live task still in the task's row, their `count`, the time
//!   of the `latest` and when the retention sweep looks at the row next (`looked`,
//!   indexed by `history_looked`). Added without a layout
//!   change: an older punctual ignores it (and records nothing while it runs).
//! - `audit`: the audit's entries (see `audit`) by `seq`, with their time and stored
//!   form. Added without a layout change, as `history` was.
//! - Indexes: `(queue_id, key)` unique; `(queue_id, state, due_at, id)` serves leasing,
//!   next-due and listing in due order; a partial index on `lease_expires_at` of leased
//!   rows serves the reaper, and one on `(queue_id, updated_at)` of dead rows (a dead
//!   task's `updated_at` is when it died) the retention sweep; a partial index
//!   `tasks_urgent` on `(queue_id, state, priority, due_at, id)` of the rows of
//!   priority above 0 serves leasing by priority, so a queue that uses none pays one
//!   probe of an empty range per lease; `tasks_by_group` on `(queue_id, group_name,
//!   state, due_at, id)` of the scheduled rows in a group (codes 4 and 5, the codes from
//!   [`GROUPED_HANDLER_LANE`] on: `state >= 4`, a term each statement that reads it
//!   names) serves a group's earliest due task, so a lease only takes a row out of it
//!   and a completion never touches it; `completions_by_end` on `unique_until` serves
//!   the deletion of records that ended; `group_slots_by_end` on `(queue_id, until)` the
//!   deletion of slots whose window ended (a group's slots are read by the primary key,
//!   `(queue_id, group_name, until, turn)`). An index added here is created at the next open
//!   of an older store, with no layout change.
//!
//! Layout versions (`meta.schema_version`): an open migrates an older layout, in the
//! transaction that reads the version, and refuses a newer one.
//! - 1: the first.
//! - 2: `tasks.target` and state code 3. A change of layout, not an addition: a
//!   punctual of layout 1 knows neither, so it would fail on code 3 and put a target
//!   task that it retried, released or reaped back as code 0, where its pull workers
//!   lease it; it must refuse the store. Migrating from 1 adds the column; no task of
//!   a layout-1 store has a target, so its codes stand.
//! - 3: `tasks.priority` and `tasks.debounce_until`. A change of layout: a punctual of
//!   layout 2 would lease by due time alone, keep a task's old priority through a
//!   replace and leave a burst's bound behind a lease. Migrating adds the columns, every
//!   task at priority 0 and in no burst.
//! - 4: `tasks.group_name`, state codes 4 and 5, `task_groups` and the queues' turns;
//!   `tasks.unique_window_ms`, `tasks.unique_dead` and the table `completions`. A change
//!   of layout: a punctual of layout 3 knows neither code, would drop a task's window at
//!   a replace and would create a task that a completion record holds. Migrating adds
//!   the columns (the open makes the tables); no task of a layout-3 store has a group or
//!   a window, so its codes stand.
//! - 5: the table `group_slots`. A change of layout, not an addition like
//!   `queue_records`: a punctual of layout 4 would lease a queue's groups past the
//!   `group_rate` in its settings, taking no slot, and the rate would not hold after it
//!   either (its leases left no slot to count); it must refuse the store. Migrating
//!   from 4 changes nothing else (the open makes the table): a store of layout 4 has
//!   no slot, as no lease of it took one.
//! - 6: `tasks.timing`. A change of layout: a punctual of layout 5 would read every
//!   task without its calendar, misfire, overlap and jitter (a repeat would fire out of
//!   its working time and catch up by the defaults) and would keep a replaced task's
//!   old timing under the new task; it must refuse the store. Migrating adds the
//!   column, every task with the default timing (NULL).
//! - 7: `tasks.traceparent`; `tasks.pending_count` and `tasks.pending_events`, a live
//!   task's history events not yet in `history` (see `history`). A change of layout: a
//!   punctual of layout 6 would keep a replaced task's old trace context under a new
//!   task that came without one (its deliveries would join a trace that is not theirs),
//!   and would delete a task's row with its pending events, so its history would lose
//!   them; it must refuse the store. Migrating adds the columns, every task without a
//!   trace context (NULL) and with none pending (its events so far are in `history`,
//!   where layout 6 wrote each).
//! - 8: state code -1, a done task's row kept as its key's newest history events
//!   (`codes::KEPT`). A change of layout: a punctual of layout 7 would fail on the
//!   code when it reads the key, and would create a task under a key a kept row holds
//!   (a unique index error); it must refuse the store. Migrating changes nothing: a
//!   store of layout 7 deleted its done tasks' rows.

use crate::codes::{DEAD, GROUPED_HANDLER_LANE, GROUPED_TARGET_LANE, LEASED, Sql};

/// Bumped when the layout changes; a store refuses to open a newer layout. Before
/// bumping it, keep a store of the layout it leaves: `cargo run -p punctual-sqlite
/// --example write_layout_fixture -- crates/punctual-sqlite/tests/fixtures/layout-N.db`
/// (`tests/layout_fixtures.rs` opens every one kept).
pub(crate) const VERSION: i64 = 8;

/// What turns a store of each older layout into one of the next: `(from, statements)`,
/// applied in order from the store's layout on.
pub(crate) const MIGRATIONS: [(i64, &str); 7] = [
    (1, "ALTER TABLE tasks ADD COLUMN target TEXT;"),
    (
        2,
        "ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0; \
         ALTER TABLE tasks ADD COLUMN debounce_until INTEGER;",
    ),
    (
        3,
        "ALTER TABLE tasks ADD COLUMN group_name TEXT; \
         ALTER TABLE queues ADD COLUMN last_turn INTEGER NOT NULL DEFAULT 0; \
         ALTER TABLE queues ADD COLUMN ungrouped_turn INTEGER NOT NULL DEFAULT 0; \
         ALTER TABLE tasks ADD COLUMN unique_window_ms INTEGER; \
         ALTER TABLE tasks ADD COLUMN unique_dead INTEGER NOT NULL DEFAULT 0;",
    ),
    // `TABLES` made `group_slots`.
    (4, ""),
    (5, "ALTER TABLE tasks ADD COLUMN timing TEXT;"),
    (
        6,
        "ALTER TABLE tasks ADD COLUMN traceparent TEXT; \
         ALTER TABLE tasks ADD COLUMN pending_count INTEGER NOT NULL DEFAULT 0; \
         ALTER TABLE tasks ADD COLUMN pending_events TEXT;",
    ),
    // No task of a layout-7 store is kept: its done tasks' rows were deleted.
    (7, ""),
];

/// Every table, each made at an open that finds it missing; then the open migrates an
/// older layout, then makes the missing [`INDEXES`] (which may name migrated columns).
pub(crate) static TABLES: Sql = Sql::new(|| {
    "
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queues (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    last_turn      INTEGER NOT NULL DEFAULT 0,
    ungrouped_turn INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tasks (
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
    last_error         TEXT,
    target             TEXT,
    priority           INTEGER NOT NULL DEFAULT 0,
    debounce_until     INTEGER,
    group_name         TEXT,
    unique_window_ms   INTEGER,
    unique_dead        INTEGER NOT NULL DEFAULT 0,
    timing             TEXT,
    traceparent        TEXT,
    pending_count      INTEGER NOT NULL DEFAULT 0,
    pending_events     TEXT
);
CREATE TABLE IF NOT EXISTS task_groups (
    queue_id    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    turn        INTEGER NOT NULL DEFAULT 0,
    tasks       INTEGER NOT NULL DEFAULT 0,
    leased      INTEGER NOT NULL DEFAULT 0,
    due_handler INTEGER,
    due_target  INTEGER,
    PRIMARY KEY (queue_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tags (
    queue_id INTEGER NOT NULL,
    tag      TEXT NOT NULL,
    task_id  INTEGER NOT NULL,
    PRIMARY KEY (queue_id, tag, task_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_slots (
    queue_id   INTEGER NOT NULL,
    group_name TEXT NOT NULL,
    until      INTEGER NOT NULL,
    turn       INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (queue_id, group_name, until, turn)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS completions (
    queue_id     INTEGER NOT NULL,
    key          TEXT NOT NULL,
    task_id      INTEGER NOT NULL,
    completed_at INTEGER NOT NULL,
    attempts     INTEGER NOT NULL,
    occurrence   INTEGER NOT NULL,
    unique_until INTEGER NOT NULL,
    PRIMARY KEY (queue_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue_records (
    name       TEXT PRIMARY KEY,
    settings   TEXT,
    paused     INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS calendar_records (
    name       TEXT PRIMARY KEY,
    spec       TEXT,
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    at    INTEGER NOT NULL,
    entry TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    queue_id INTEGER NOT NULL,
    key      TEXT NOT NULL,
    latest   INTEGER NOT NULL,
    looked   INTEGER NOT NULL,
    count    INTEGER NOT NULL,
    events   TEXT NOT NULL,
    PRIMARY KEY (queue_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox_marks (
    outbox     TEXT NOT NULL,
    row_id     INTEGER NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (outbox, row_id)
) WITHOUT ROWID;
"
    .to_owned()
});

/// Every index, made at an open that finds it missing, and the triggers, made anew at
/// every open (after the migration).
pub(crate) static INDEXES: Sql = Sql::new(|| {
    format!(
        "{}{}",
        format_args!(
            "
CREATE UNIQUE INDEX IF NOT EXISTS tasks_by_key ON tasks (queue_id, key);
CREATE INDEX IF NOT EXISTS tasks_by_due ON tasks (queue_id, state, due_at, id);
CREATE INDEX IF NOT EXISTS tasks_urgent ON tasks (queue_id, state, priority, due_at, id) WHERE priority > 0;
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (lease_expires_at) WHERE state = {LEASED};
CREATE INDEX IF NOT EXISTS tasks_dead_by_death ON tasks (queue_id, updated_at) WHERE state = {DEAD};
CREATE INDEX IF NOT EXISTS tasks_by_group ON tasks (queue_id, group_name, state, due_at, id) \
    WHERE state >= {GROUPED_HANDLER_LANE};
CREATE INDEX IF NOT EXISTS task_groups_by_turn ON task_groups (queue_id, turn, name);
CREATE INDEX IF NOT EXISTS completions_by_end ON completions (unique_until);
CREATE INDEX IF NOT EXISTS group_slots_by_end ON group_slots (queue_id, until);
CREATE INDEX IF NOT EXISTS outbox_marks_by_time ON outbox_marks (applied_at);
CREATE INDEX IF NOT EXISTS history_looked ON history (queue_id, looked);
"
        ),
        GROUP_TRIGGERS.as_str()
    )
});

/// What keeps `task_groups` exact: every insert, update (of state, due time or group)
/// and delete of a grouped task adjusts its group's row by what the task took or gave
/// — one task, one lease, its due time — with no scan: a group's earliest due time of a
/// lane is read again (one seek of `tasks_by_group`) only when the task that held it
/// leaves. A group's row is made with its first task and deleted with its last. One
/// write is left out: a lease of a grouped task (its scheduled code to leased), which
/// only a round of `groups` does, and which writes the row itself with the group's new
/// turn (`groups::LEASED_IN_ROUND`): one write of the row per lease, not two. The steps
/// say `OR FAIL` and use `CASE`, not `MIN` of values, so the writes that fire them need
/// no statement journal (see `writer`). The triggers are made anew at every open, so a
/// store always has this build's.
static GROUP_TRIGGERS: Sql = Sql::new(|| {
    // The row of the OLD task's group after the task left it: one task and (if it was
    // leased) one lease less; a due time read again if the task held the earliest.
    let left = |due: &str, code: i64| {
        format!(
            "{due} = CASE WHEN OLD.state = {code} AND OLD.due_at <= {due} THEN (SELECT MIN(due_at) FROM tasks \
             WHERE queue_id = OLD.queue_id AND group_name = OLD.group_name AND state >= {GROUPED_HANDLER_LANE} AND state = {code}) ELSE {due} END"
        )
    };
    // The same for the NEW task joining: its due time lowers the lane's earliest.
    let joined = |due: &str, code: i64| {
        format!(
            "{due} = CASE WHEN NEW.state = {code} THEN \
             CASE WHEN {due} IS NULL OR NEW.due_at < {due} THEN NEW.due_at ELSE {due} END ELSE {due} END"
        )
    };
    let (left_handler, left_target) =
        (left("due_handler", GROUPED_HANDLER_LANE), left("due_target", GROUPED_TARGET_LANE));
    let (joined_handler, joined_target) =
        (joined("due_handler", GROUPED_HANDLER_LANE), joined("due_target", GROUPED_TARGET_LANE));
    let leave = format!(
        "UPDATE OR FAIL task_groups SET tasks = tasks - 1, leased = leased - (OLD.state = {LEASED}), {left_handler}, \
         {left_target} WHERE queue_id = OLD.queue_id AND name = OLD.group_name; \
         DELETE FROM task_groups WHERE queue_id = OLD.queue_id AND name = OLD.group_name AND tasks = 0"
    );
    let join = format!(
        "INSERT OR FAIL INTO task_groups (queue_id, name) VALUES (NEW.queue_id, NEW.group_name) \
         ON CONFLICT DO NOTHING; \
         UPDATE OR FAIL task_groups SET tasks = tasks + 1, leased = leased + (NEW.state = {LEASED}), {joined_handler}, \
         {joined_target} WHERE queue_id = NEW.queue_id AND name = NEW.group_name"
    );
    // A task that stays in its group: its lease and due time change in one write. When
    // it held its lane's earliest due time and left that state or time, the earliest is
    // read again (the read sees the task as it is now); else a scheduled task can only
    // lower it.
    let stay = |due: &str, code: i64| {
        format!(
            "{due} = CASE WHEN OLD.state = {code} AND OLD.due_at <= {due} THEN (SELECT MIN(due_at) FROM tasks \
             WHERE queue_id = NEW.queue_id AND group_name = NEW.group_name AND state >= {GROUPED_HANDLER_LANE} AND state = {code}) \
             WHEN NEW.state = {code} THEN CASE WHEN {due} IS NULL OR NEW.due_at < {due} THEN NEW.due_at ELSE {due} END \
             ELSE {due} END"
        )
    };
    let (stay_handler, stay_target) =
        (stay("due_handler", GROUPED_HANDLER_LANE), stay("due_target", GROUPED_TARGET_LANE));
    format!(
        "
DROP TRIGGER IF EXISTS task_groups_on_insert;
DROP TRIGGER IF EXISTS task_groups_on_update;
DROP TRIGGER IF EXISTS task_groups_on_leave;
DROP TRIGGER IF EXISTS task_groups_on_join;
DROP TRIGGER IF EXISTS task_groups_on_delete;
CREATE TRIGGER task_groups_on_insert AFTER INSERT ON tasks WHEN NEW.group_name IS NOT NULL BEGIN
    {join};
END;
CREATE TRIGGER task_groups_on_update AFTER UPDATE OF state, due_at, group_name ON tasks
WHEN NEW.group_name IS NOT NULL AND OLD.group_name IS NEW.group_name
    AND NOT (NEW.state = {LEASED} AND OLD.state IN ({GROUPED_HANDLER_LANE}, {GROUPED_TARGET_LANE})) BEGIN
    UPDATE OR FAIL task_groups SET leased = leased - (OLD.state = {LEASED}) + (NEW.state = {LEASED}), {stay_handler}, \
        {stay_target} WHERE queue_id = NEW.queue_id AND name = NEW.group_name;
END;
CREATE TRIGGER task_groups_on_leave AFTER UPDATE OF group_name ON tasks
WHEN OLD.group_name IS NOT NULL AND OLD.group_name IS NOT NEW.group_name BEGIN
    {leave};
END;
CREATE TRIGGER task_groups_on_join AFTER UPDATE OF group_name ON tasks
WHEN NEW.group_name IS NOT NULL AND OLD.group_name IS NOT NEW.group_name BEGIN
    {join};
END;
CREATE TRIGGER task_groups_on_delete AFTER DELETE ON tasks WHEN OLD.group_name IS NOT NULL BEGIN
    {leave};
END;
"
    )
});

/// A connection to an empty store of this layout, in memory, its statements planned
/// and kept as the store's are.
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
pub(crate) fn in_memory() -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    crate::configure_statements(&conn).unwrap();
    conn.execute_batch(&TABLES).unwrap();
    conn.execute_batch(&INDEXES).unwrap();
    conn
}
