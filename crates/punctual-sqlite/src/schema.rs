//! The on-disk layout, in one place. Inspect a live store with
//! `sqlite3 punctual-data/punctual.db` (read-only while the server runs is safe: WAL).
//!
//! - `meta`: the layout version, the open counter (`epoch`) and the store's identity
//!   (`store_id`, its 64 bits as a signed integer; added without a layout change:
//!   a store without one gets one at its next open); `secrets`: the store's signing
//!   secret.
//! - `queues`: one row per queue name; tasks refer to it by `id` to keep rows small.
//! - `tasks`: one row per (queue, key); `state` 0 scheduled, 1 leased, 2 dead. Done
//!   and cancelled tasks are deleted. `id` is AUTOINCREMENT so it is never reused: it
//!   is the task's `meta.id`, unique per creation.
//! - `tags`: (queue, tag) → task ids, so cancelling a tag is an index range, not a scan.
//! - `queue_records`: one row per queue given settings or paused through the API, by
//!   name (a queue may have a record and no task, so not by `queues.id`); `settings`
//!   is the document's text as given (NULL once cleared), `paused` 0 or 1, `version`
//!   1 at creation and 1 more at every change. Rows are never deleted. Added without
//!   a layout change, like the indexes below: `CREATE` makes it at the next open of an
//!   older store, and an older punctual opening a newer store only ignores it (its
//!   queues run unpaused, with its config file's settings).
//! - Indexes: `(queue_id, key)` unique; `(queue_id, state, due_at, id)` serves leasing,
//!   next-due and listing in due order; a partial index on `lease_expires_at` of leased
//!   rows serves the reaper, and one on `(queue_id, updated_at)` of dead rows (a dead
//!   task's `updated_at` is when it died) the retention sweep. An index added here is
//!   created at the next open of an older store, with no layout change.

/// Bumped when the layout changes; a store refuses to open a newer layout.
pub(crate) const VERSION: i64 = 1;

pub(crate) const CREATE: &str = "
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
    last_error         TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_by_key ON tasks (queue_id, key);
CREATE INDEX IF NOT EXISTS tasks_by_due ON tasks (queue_id, state, due_at, id);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (lease_expires_at) WHERE state = 1;
CREATE INDEX IF NOT EXISTS tasks_dead_by_death ON tasks (queue_id, updated_at) WHERE state = 2;
CREATE TABLE IF NOT EXISTS tags (
    queue_id INTEGER NOT NULL,
    tag      TEXT NOT NULL,
    task_id  INTEGER NOT NULL,
    PRIMARY KEY (queue_id, tag, task_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue_records (
    name       TEXT PRIMARY KEY,
    settings   TEXT,
    paused     INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
";

/// The task columns every query selects, in the order `row_to_task` reads them.
pub(crate) const TASK_COLUMNS: &str = "id, key, state, due_at, lease_expires_at, fence, version, attempts, \
    max_attempts, occurrence, anchor, backoff_initial_ms, backoff_factor, backoff_max_ms, repeat, tags, payload, \
    created_at, updated_at, last_error";

pub(crate) const SCHEDULED: i64 = 0;
pub(crate) const LEASED: i64 = 1;
pub(crate) const DEAD: i64 = 2;
