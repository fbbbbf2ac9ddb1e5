//! The embedded store: SQLite in WAL mode (rusqlite, bundled), one directory, one
//! process at a time.
//!
//! - **Durable when a call returns**: a write is answered only after its transaction
//!   committed. Writes whose loss would lose a task or revive a cancelled one
//!   (schedule, cancel, purge, dead retry and delete), and changes to queue records
//!   (a resumed pause must not come back), are fsynced first (`synchronous =
//!   FULL`); writes whose loss can only make a task fire again (lease, ack, extend,
//!   release, reap) survive any crash of the process and are fsynced with the next
//!   group that is, so power loss can at worst re-fire a task — never lose one.
//! - **Fences never repeat**: each open bumps a durable epoch and every lease's fence
//!   is at least `epoch << 32`, so a lease lost in a power failure cannot make a
//!   stale token look live after restart.
//! - **Group commit**: one writer thread commits every write that queued up meanwhile
//!   in one transaction and one fsync (see `writer`).
//! - **Reads never wait for writes**: they run on reader connections (WAL snapshots)
//!   in tokio's blocking pool.
//! - **Memory bounded**: nothing per task is held in memory; SQLite's page cache is
//!   capped per connection ([`CACHE_KIB`]), however many tasks wait on disk.
//! - **One owner**: the directory is locked (`LOCK`) while open, so two processes can
//!   never hand out the same task. Leases survive a restart and end like any other
//!   lease: when they expire, the engine's reaper makes their tasks due again.
//! - **An identity per store**: minted at the first open (of a new store, or of one
//!   written before stores had one) and kept in `meta`, so delivery ids of two stores
//!   never meet. The store is never emptied under its owner, so it never changes.
//!
//! Each operation is a plain function on a connection, in a module per concern
//! (`schedule`, `tasks`, `cancel`, `list`, `lease`, `complete`, `completions`, `reap`,
//! `dead`, `groups`, `group_rate`, `stats`, `queue_records`, `calendar_records`,
//! `identity`, `import`; rows in `row`, state codes in `codes`).
//! Writes run inside the writer's transaction, reads on a reader connection; none of
//! them commits or reads the clock. Functions that read tasks take the store's
//! identity, which every task read is stamped with.

mod audit;
pub mod backup;
mod calendar_records;
mod cancel;
mod codes;
mod complete;
mod completions;
mod dead;
mod group_rate;
#[cfg(test)]
mod group_rows;
mod groups;
mod history;
mod identity;
mod import;
mod lease;
mod leasing;
mod list;
mod outbox_marks;
#[cfg(test)]
mod prepares;
#[cfg(test)]
mod query_plans;
mod queue_records;
mod queues;
mod reap;
mod row;
mod schedule;
mod schema;
mod stats;
mod tasks;
mod wal;
mod writer;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use punctual_core::audit::{AuditEntry, AuditRequest};
use punctual_core::calendar::{CalendarChangeRequest, CalendarRecord};
use punctual_core::history::{Actor, HistoryEvent};
use punctual_core::store::{
    ApplyOnceRequest, CompleteRequest, CompletionsPage, CompletionsRequest, ExtendRequest, GroupsPage, GroupsRequest,
    HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, ImportRequest, Imported, KeyHistory,
    LeaseBatch, LeaseRequest, LeaseToken, ListRequest, OnceEffect, Page, PurgeRequest, QueueChangeRequest, QueueRecord,
    QueueStats, ReapResult, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, Scheduled, SweepRequest, Swept,
};
use punctual_core::{Error, NewTask, QueueName, Result, Store, StoreId, Tag, Task, TaskKey, Timestamp};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use writer::Durability;

/// SQLite page cache per connection, in KiB.
pub const CACHE_KIB: i64 = 8 * 1024;
/// The most reads running at once, each on a reader connection of its own; every
/// reader is kept open for the next read. More reads wait for one to come free, never
/// opening another: opening a connection reads the schema, and under a burst of acks
/// (each reading its task) opening and closing readers was the embedded store's
/// costliest work over HTTP.
const MAX_READERS: usize = 8;
/// Prepared statements kept per connection: more than the store has (rusqlite keeps
/// 16 by default, fewer than the store's statements, so a busy mix of calls would
/// parse its SQL again and again).
const STATEMENT_CACHE: usize = 64;
/// The database file inside the store's directory.
pub const DB_FILE: &str = "punctual.db";

/// The embedded store. Cheap to clone; clones share the database.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    writer: Mutex<Option<std::sync::mpsc::Sender<writer::Message>>>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    readers: Mutex<Vec<Connection>>,
    /// One permit per reader connection (at most [`MAX_READERS`]).
    reading: Arc<tokio::sync::Semaphore>,
    /// Fences handed out by this open are at least this (the epoch, shifted).
    fence_floor: i64,
    /// The store's identity, stamped on every task read.
    id: StoreId,
    /// Held for the store's life: the directory's single-owner lock.
    _lock: File,
}

impl SqliteStore {
    /// Opens the store in directory `dir`, creating it if missing, and recovers every
    /// task written before (a crash loses nothing that was answered).
    pub fn open(dir: impl AsRef<Path>) -> Result<SqliteStore> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Unavailable(format!("cannot create the data directory {}: {e}", dir.display())))?;
        let lock = File::create(dir.join("LOCK"))
            .map_err(|e| Error::Unavailable(format!("cannot create {}: {e}", dir.join("LOCK").display())))?;
        lock.try_lock().map_err(|_| {
            Error::Unavailable(format!(
                "{} is in use by another punctual process; stop it or choose another --data directory",
                dir.display()
            ))
        })?;
        let path = dir.join(DB_FILE);
        let mut conn = Connection::open(&path).map_err(map_err)?;
        configure(&conn)?;
        conn.execute_batch(&schema::TABLES).map_err(map_err)?;
        check_version(&mut conn)?;
        conn.execute_batch(&schema::INDEXES).map_err(map_err)?;
        let epoch = next_epoch(&conn)?;
        let fence_floor = epoch << 32;
        let (id, minted) = identity::identity(&conn, StoreId::random())?;
        if minted {
            let what = if epoch == 1 { "a new store" } else { "a store written by an earlier punctual" };
            tracing::info!(store = %id, path = %path.display(), "store identity {id} minted for {what}");
        }
        let (sender, handle) = writer::spawn(conn, &path)
            .map_err(|e| Error::Unavailable(format!("cannot start the writer thread: {e}")))?;
        Ok(SqliteStore {
            shared: Arc::new(Shared {
                path,
                writer: Mutex::new(Some(sender)),
                writer_thread: Mutex::new(Some(handle)),
                readers: Mutex::new(Vec::new()),
                reading: Arc::new(tokio::sync::Semaphore::new(MAX_READERS)),
                fence_floor,
                id,
                _lock: lock,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The store's identity (the first part of every delivery id).
    pub fn id(&self) -> StoreId {
        self.shared.id
    }

    /// Runs `work` in the next group commit, fsynced.
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.write_with(Durability::Fsync, work).await
    }

    /// Runs `work` in the next group commit, durable against process crashes.
    async fn write_soft<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.write_with(Durability::Process, work).await
    }

    async fn write_with<T: Send + 'static>(
        &self,
        durability: Durability,
        work: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        {
            let writer = self.shared.writer.lock().expect("writer lock poisoned");
            let sender = writer.as_ref().ok_or_else(writer::closed)?;
            sender.send(writer::Message::Job(writer::job(durability, work, reply))).map_err(|_| writer::closed())?;
        }
        answer.await.map_err(|_| writer::closed())?
    }

    /// Runs `work` on a reader connection in the blocking pool.
    async fn read<T: Send + 'static>(&self, work: impl FnOnce(&Connection) -> Result<T> + Send + 'static) -> Result<T> {
        if self.shared.writer.lock().expect("writer lock poisoned").is_none() {
            return Err(writer::closed());
        }
        // The permit moves into the blocking task: it is held for as long as the
        // connection is in use, even if the caller stops waiting.
        let permit = Arc::clone(&self.shared.reading).acquire_owned().await.map_err(|_| writer::closed())?;
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            // With a permit, a reader is pooled unless fewer than MAX_READERS were opened.
            let pooled = shared.readers.lock().expect("readers lock poisoned").pop();
            let conn = match pooled {
                Some(conn) => conn,
                None => open_reader(&shared.path)?,
            };
            let result = work(&conn);
            shared.readers.lock().expect("readers lock poisoned").push(conn);
            result
        })
        .await
        .map_err(|e| Error::Internal(format!("reader task failed: {e}")))?
    }
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(Duration::from_secs(5)).map_err(map_err)?;
    configure_statements(conn)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -{CACHE_KIB}; \
         PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0;"
    ))
    .map_err(map_err)
}

/// How `conn` keeps its statements: cached, and compiled once. With the query planner
/// stability guarantee, SQLite plans a statement without looking at its bound values;
/// without it, every statement that binds a state code (`state = ?`, as the leases and
/// next-due reads do) was compiled anew at each run, because SQLite compares the
/// parameter with the `state = 1` and `state = 2` of the partial indexes and then
/// marks the statement stale at every new binding. Compiling a write on `tasks`
/// compiles the `task_groups` triggers with it: a lease of one group's task cost
/// 0.2–0.7 ms. No plan here needs a bound value; `query_plans` checks the plans made
/// this way (`schema::in_memory` configures its connection here).
fn configure_statements(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(map_err)?;
    Ok(())
}

fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(map_err)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(map_err)?;
    configure_statements(&conn)?;
    conn.execute_batch(&format!("PRAGMA cache_size = -{CACHE_KIB};")).map_err(map_err)?;
    Ok(conn)
}

/// Bumps and returns the durable open counter.
fn next_epoch(conn: &Connection) -> Result<i64> {
    conn.execute(
        "INSERT INTO meta (name, value) VALUES ('epoch', 1) ON CONFLICT (name) DO UPDATE SET value = value + 1",
        [],
    )
    .map_err(map_err)?;
    conn.query_row("SELECT value FROM meta WHERE name = 'epoch'", [], |row| row.get(0)).map_err(map_err)
}

/// Refuses a newer layout and migrates an older one, in one transaction: a store is
/// never left half migrated.
fn check_version(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(map_err)?;
    tx.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?1)", [schema::VERSION])
        .map_err(map_err)?;
    let found: i64 =
        tx.query_row("SELECT value FROM meta WHERE name = 'schema_version'", [], |row| row.get(0)).map_err(map_err)?;
    if found > schema::VERSION {
        return Err(Error::Unavailable(format!(
            "the store was written by a newer punctual (layout {found}, this one reads {}); upgrade punctual",
            schema::VERSION
        )));
    }
    if found < schema::VERSION {
        for (_, statements) in schema::MIGRATIONS.iter().filter(|(from, _)| *from >= found) {
            tx.execute_batch(statements).map_err(map_err)?;
        }
        tx.execute("UPDATE meta SET value = ?1 WHERE name = 'schema_version'", [schema::VERSION]).map_err(map_err)?;
        tracing::info!("store layout migrated from {found} to {}", schema::VERSION);
    }
    tx.commit().map_err(map_err)
}

/// Maps SQLite errors: the disk or file failing is `Unavailable` (retry later, nothing
/// was written); anything else is `Internal`.
pub(crate) fn map_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(DiskFull) => Error::Unavailable("the disk is full; free space and retry (nothing was written)".into()),
        Some(SystemIoFailure | CannotOpen | ReadOnly | DatabaseBusy | DatabaseLocked | PermissionDenied) => {
            Error::Unavailable(format!("the database cannot be written: {e}"))
        }
        _ => Error::Internal(format!("sqlite: {e}")),
    }
}

impl Store for SqliteStore {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        let id = self.shared.id;
        self.write(move |conn| schedule::schedule(conn, id, tasks, now)).await
    }

    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        let (queue, key) = (queue.clone(), key.clone());
        let id = self.shared.id;
        self.read(move |conn| tasks::get(conn, id, &queue, &key)).await
    }

    async fn get_many(&self, keys: Vec<(QueueName, TaskKey)>) -> Result<Vec<Option<Task>>> {
        let id = self.shared.id;
        self.read(move |conn| keys.iter().map(|(queue, key)| tasks::get(conn, id, queue, key)).collect()).await
    }

    async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        let by = by.cloned();
        let (queue, key) = (queue.clone(), key.clone());
        let id = self.shared.id;
        self.write(move |conn| cancel::cancel(conn, id, &queue, &key, by.as_ref())).await
    }

    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        let by = by.cloned();
        let (queue, tag) = (queue.clone(), tag.clone());
        let id = self.shared.id;
        self.write(move |conn| cancel::cancel_tag(conn, id, &queue, &tag, by.as_ref())).await
    }

    async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        let id = self.shared.id;
        self.write(move |conn| outbox_marks::apply_once(conn, id, req)).await
    }

    async fn apply_once_many(&self, reqs: Vec<ApplyOnceRequest>) -> Result<Vec<Result<Option<OnceEffect>>>> {
        let id = self.shared.id;
        self.write(move |conn| outbox_marks::apply_once_many(conn, id, reqs)).await
    }

    async fn list(&self, req: ListRequest) -> Result<Page> {
        let id = self.shared.id;
        self.read(move |conn| list::list(conn, id, &req)).await
    }

    async fn groups(&self, req: GroupsRequest) -> Result<GroupsPage> {
        self.read(move |conn| groups::groups(conn, &req)).await
    }

    async fn completions(&self, req: CompletionsRequest) -> Result<CompletionsPage> {
        self.read(move |conn| completions::page(conn, &req)).await
    }

    async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        self.write(move |conn| import::import(conn, &req)).await
    }

    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        let (id, fence_floor) = (self.shared.id, self.shared.fence_floor);
        self.write_soft(move |conn| lease::lease(conn, id, &req, fence_floor)).await
    }

    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        let id = self.shared.id;
        self.write_soft(move |conn| complete::complete(conn, id, &req)?).await
    }

    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        let id = self.shared.id;
        self.write_soft(move |conn| {
            // Each ack applies alone without a savepoint of its own: `complete::complete`
            // writes nothing until the lease is found live (a refusal is the ack's own
            // answer), and a write that fails after another fails the job, undone whole.
            complete::complete_each(conn, id, &reqs)
        })
        .await
    }

    async fn extend(&self, req: ExtendRequest) -> Result<Timestamp> {
        let id = self.shared.id;
        self.write_soft(move |conn| lease::extend(conn, id, &req)).await
    }

    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        let token = token.clone();
        let id = self.shared.id;
        self.write_soft(move |conn| lease::release(conn, id, &token, now)).await
    }

    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        self.write_soft(move |conn| reap::reap(conn, now, limit)).await
    }

    async fn retry_dead(&self, req: RetryDeadRequest) -> Result<Option<Task>> {
        let id = self.shared.id;
        self.write(move |conn| dead::retry_dead(conn, id, &req)).await
    }

    async fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> Result<RetriedDead> {
        let id = self.shared.id;
        self.write(move |conn| dead::retry_dead_batch(conn, id, &req)).await
    }

    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        let (queue, key, by) = (queue.clone(), key.clone(), by.cloned());
        let id = self.shared.id;
        self.write(move |conn| dead::delete_dead(conn, id, &queue, &key, by.as_ref())).await
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<()> {
        self.write(move |conn| audit::append(conn, &entry)).await
    }

    async fn audit(&self, req: AuditRequest) -> Result<Vec<AuditEntry>> {
        self.read(move |conn| audit::page(conn, &req)).await
    }

    async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.write(move |conn| audit::sweep(conn, before, limit)).await
    }

    async fn history(&self, req: HistoryRequest) -> Result<Vec<HistoryEvent>> {
        self.read(move |conn| history::read(conn, &req)).await
    }

    async fn histories(&self, req: HistoriesRequest) -> Result<HistoriesPage> {
        self.read(move |conn| history::histories(conn, &req)).await
    }

    async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        let queue = queue.clone();
        self.write(move |conn| history::import_histories(conn, &queue, &histories)).await
    }

    async fn sweep_history(&self, req: HistorySweepRequest) -> Result<u64> {
        self.write(move |conn| history::sweep(conn, &req)).await
    }

    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        let id = self.shared.id;
        self.write(move |conn| dead::sweep_dead(conn, id, &req)).await
    }

    async fn queue_names(&self) -> Result<Vec<QueueName>> {
        self.read(stats::queue_names).await
    }

    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        let queue = queue.cloned();
        self.read(move |conn| stats::stats(conn, queue.as_ref())).await
    }

    async fn purge(&self, req: PurgeRequest) -> Result<u64> {
        let id = self.shared.id;
        self.write(move |conn| cancel::purge(conn, id, &req)).await
    }

    async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        let queue = queue.clone();
        self.read(move |conn| queue_records::queue_record(conn, &queue)).await
    }

    async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        self.read(queue_records::queue_records).await
    }

    async fn change_queue(&self, req: QueueChangeRequest) -> Result<QueueRecord> {
        self.write(move |conn| {
            writer::in_savepoint(conn, |conn| {
                let record = queue_records::change_queue(conn, &req)?;
                audit::append(conn, &req.audit_entry()).map(|()| record)
            })
        })
        .await
    }

    async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        self.read(calendar_records::calendar_records).await
    }

    async fn change_calendar(&self, req: CalendarChangeRequest) -> Result<CalendarRecord> {
        self.write(move |conn| {
            writer::in_savepoint(conn, |conn| {
                let record = calendar_records::change(conn, &req)?;
                audit::append(conn, &req.audit_entry()).map(|()| record)
            })
        })
        .await
    }

    async fn secret(&self) -> Result<[u8; 32]> {
        let fresh: [u8; 32] = rand::random();
        self.write(move |conn| identity::secret(conn, fresh)).await
    }

    async fn close(&self) -> Result<()> {
        let sender = self.shared.writer.lock().expect("writer lock poisoned").take();
        let Some(sender) = sender else { return Ok(()) };
        let (done, closed) = tokio::sync::oneshot::channel();
        if sender.send(writer::Message::Close(done)).is_ok() {
            let _ = closed.await;
        }
        let handle = self.shared.writer_thread.lock().expect("writer thread lock poisoned").take();
        if let Some(handle) = handle {
            tokio::task::spawn_blocking(move || handle.join())
                .await
                .map_err(|e| Error::Internal(e.to_string()))?
                .map_err(|_| Error::Internal("the writer thread panicked".into()))?;
        }
        self.shared.readers.lock().expect("readers lock poisoned").clear();
        Ok(())
    }
}

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
