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
//!   the other's rows. Done and cancelled tasks are deleted. `id` is AUTOINCREMENT so it
//!   is never reused: it is the task's `meta.id`, unique per creation. `target` is the
//!   task's HTTP target as `Target::to_stored` writes it, NULL for none. `priority` is
//!   the task's priority, 0–9; `debounce_until` its debounce burst's bound
//!   (`TaskMeta::debounce_until`), NULL outside a burst; `unique_window_ms` its dedupe
//!   window (NULL: none) and `unique_dead` 1 when the window holds it dead too.
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
//! - Indexes: `(queue_id, key)` unique; `(queue_id, state, due_at, id)` serves leasing,
//!   next-due and listing in due order; a partial index on `lease_expires_at` of leased
//!   rows serves the reaper, and one on `(queue_id, updated_at)` of dead rows (a dead
//!   task's `updated_at` is when it died) the retention sweep; a partial index
//!   `tasks_urgent` on `(queue_id, state, priority, due_at, id)` of the rows of
//!   priority above 0 serves leasing by priority, so a queue that uses none pays one
//!   probe of an empty range per lease; `completions_by_end` on `unique_until` serves
//!   the deletion of records that ended. An index added here is created at the next open
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
//! - 4: `tasks.unique_window_ms`, `tasks.unique_dead` and the table `completions`. A
//!   change of layout: a punctual of layout 3 would drop a task's window at a replace
//!   and create a task that a completion record holds. Migrating adds the columns, no
//!   task with a window (the open makes the table).

use crate::codes::{DEAD, LEASED, Sql};

/// Bumped when the layout changes; a store refuses to open a newer layout.
pub(crate) const VERSION: i64 = 4;

/// What turns a store of each older layout into one of the next: `(from, statements)`,
/// applied in order from the store's layout on.
pub(crate) const MIGRATIONS: [(i64, &str); 3] = [
    (1, "ALTER TABLE tasks ADD COLUMN target TEXT;"),
    (
        2,
        "ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0; \
         ALTER TABLE tasks ADD COLUMN debounce_until INTEGER;",
    ),
    (
        3,
        "ALTER TABLE tasks ADD COLUMN unique_window_ms INTEGER; \
         ALTER TABLE tasks ADD COLUMN unique_dead INTEGER NOT NULL DEFAULT 0;",
    ),
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
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
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
    unique_window_ms   INTEGER,
    unique_dead        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tags (
    queue_id INTEGER NOT NULL,
    tag      TEXT NOT NULL,
    task_id  INTEGER NOT NULL,
    PRIMARY KEY (queue_id, tag, task_id)
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
"
    .to_owned()
});

/// Every index, each made at an open that finds it missing (after the migration).
pub(crate) static INDEXES: Sql = Sql::new(|| {
    format!(
        "
CREATE UNIQUE INDEX IF NOT EXISTS tasks_by_key ON tasks (queue_id, key);
CREATE INDEX IF NOT EXISTS tasks_by_due ON tasks (queue_id, state, due_at, id);
CREATE INDEX IF NOT EXISTS tasks_urgent ON tasks (queue_id, state, priority, due_at, id) WHERE priority > 0;
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (lease_expires_at) WHERE state = {LEASED};
CREATE INDEX IF NOT EXISTS tasks_dead_by_death ON tasks (queue_id, updated_at) WHERE state = {DEAD};
CREATE INDEX IF NOT EXISTS completions_by_end ON completions (unique_until);
"
    )
});

/// A connection to an empty store of this layout, in memory.
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
pub(crate) fn in_memory() -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(&TABLES).unwrap();
    conn.execute_batch(&INDEXES).unwrap();
    conn
}
