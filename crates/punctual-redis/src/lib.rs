//! The Redis and Redis Cluster store of punctual: many processes share one set of
//! queues, and Redis decides time.
//!
//! - Layout: every key of a queue (or of one shard of a busy queue) shares one hash
//!   tag, so each operation is one Lua script on one node (see `keys`, `lua/`).
//! - Atomicity: each script is atomic. A call touching several shards (a batch over a
//!   sharded queue, `cancel_tag`, `purge`, `reap`) is atomic per shard and per script
//!   batch of at most [`SCRIPT_BATCH`] tasks, never one script holding Redis for long.
//!   An outbox row's effect and its mark are one script (`outbox`; a cancel by tag:
//!   one part per shard, each marked by the part's last script).
//!   A queue record changes atomically by compare-and-set on its version.
//! - Time: with [`TimeSource::Redis`] (the default) scripts read Redis `TIME` for every
//!   due and expiry decision, so nodes with skewed clocks agree; [`RedisStore::clock`]
//!   gives the engine the same time. [`TimeSource::Caller`] takes `now` from the
//!   caller, for tests that drive a manual clock.
//! - Wake-ups: scripts publish when they make a queue's next due time earlier, naming
//!   the shard; each store follows the channel, keeps which shards of a sharded queue
//!   hold due work (`heads`, so a lease visits only those) and reports [`Peers`] to its
//!   engine.
//! - Durability: as durable as Redis is configured to be (see `docs/redis.md`; settings
//!   that can lose tasks are warned about at connect, see `durability`); optionally
//!   each write waits for replicas (`WAIT`) before answering.
//! - Rate limits: [`RedisRates`] keeps each queue's rate-limit slots in Redis (one
//!   script call per slot, Redis' clock), so a queue's rate holds across every process
//!   sharing the store.
//! - Nodes: [`RedisNodes`] keeps what each live server announces (its delivery
//!   policy) where every other can read it (see `nodes`).
//! - Identity: the store's identity lives in Redis; each process checks every few
//!   seconds that Redis still holds it, and reports a Redis that lost punctual's data
//!   as a [`StoreReset`](punctual_core::StoreReset) (see `identity`).
//! - Layout version: the keys' layout is recorded in Redis; a punctual refuses a store
//!   of a newer layout, naming both (see `layout`).
//!
//! Where each concern lives: `target` and `config` (what to connect to, and how),
//! `conn` (connecting, time limits, errors), `keys` (every key, in one table), `codes`
//! (what the scripts call our enums), `scripts` (one typed call per Lua script),
//! `record` (the stored task record), `shards` (the registry and fan-out over shards),
//! `ids` (task id blocks), `tasks`, `outbox` (rows applied once), `lease`, `heads` and
//! `bands` (priorities across shards), `group_commit` (acks), `reap`, `list` and
//! `tag_list`, `groups` (a queue's groups), `completions` (a queue's completion
//! records), `import` (what another store holds), `history` (each task's events: the
//! caller's part of them, reading, sweeping), `cursor`, `dead`, `stats`, `rates`,
//! `queue_records` (settings and pause state shared by every process),
//! `calendar_records` (calendars, likewise), `versioned` (their compare-and-set),
//! `nodes` (what each live process announces); `clock`, `wake`, `identity` and
//! `durability` run beside the store. This file holds the store and its `Store` impl,
//! one line per method. Apart from the store, [`keyspace`] reads and deletes the keys
//! `punctual import keyspace` moves out of a legacy Redis, [`redisson`] the elements
//! `punctual import redisson` moves out of a Redisson delayed queue, both connected
//! through [`source`].

mod audit;
mod bands;
mod calendar_records;
mod clock;
mod conn;
mod dead;
mod durability;
mod heads;
mod identity;
mod keys;
mod layout;
mod queue_records;
mod record;
mod scripts;
mod tag_list;
mod versioned;
mod wake;

// Not the store: the Redis half of `punctual import keyspace` and `import redisson`.
pub mod keyspace;
pub mod redisson;
pub mod source;

// Configuration, and the store's operations by concern (see above).
mod codes;
mod completions;
mod config;
mod cursor;
mod group_commit;
mod groups;
mod history;
mod ids;
mod import;
mod lease;
mod list;
mod nodes;
mod outbox;
mod rates;
mod reap;
mod shards;
mod stats;
mod target;
mod tasks;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use punctual_core::audit::{AuditEntry, AuditRequest};
use punctual_core::calendar::{CalendarChangeRequest, CalendarRecord};
use punctual_core::history::HistoryEvent;
use punctual_core::store::{
    ApplyOnceRequest, CompleteRequest, CompletionsPage, CompletionsRequest, ExtendRequest, GroupsPage, GroupsRequest,
    HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, ImportRequest, Imported, KeyHistory,
    LeaseBatch, LeaseRequest, LeaseToken, ListRequest, OnceEffect, Page, Peers, PurgeRequest, QueueChangeRequest,
    QueueRecord, QueueStats, ReapResult, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, Scheduled, SweepRequest,
    Swept,
};
use punctual_core::{
    Actor, Clock, Error, NewTask, QueueName, Result, Store, StoreId, SystemClock, Tag, Task, TaskKey, Timestamp, Wakeup,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use clock::RedisClock;
pub use config::{RedisConfig, TimeSource};
pub use layout::LAYOUT;
pub use nodes::{Announcement, RedisNodes};
pub use rates::RedisRates;
pub use target::{Target, redacted};

use conn::Conn;
use group_commit::Committer;
use identity::Identity;
use scripts::Scripts;

/// The most tasks one script call handles: bounds how long any script holds Redis.
pub const SCRIPT_BATCH: usize = 500;

/// The Redis store. Cheap to share by reference; one per process.
#[derive(Debug)]
pub struct RedisStore {
    shared: Arc<Shared>,
    /// Completions waiting to be applied in a group (see `group_commit`).
    committer: Committer,
}

/// What the store and its background tasks share.
#[derive(Debug)]
struct Shared {
    conn: Conn,
    config: RedisConfig,
    scripts: Scripts,
    clock: RedisClock,
    shards: shards::Shards,
    heads: heads::Heads,
    /// This process's name in the wake-ups of sharded queues (random).
    publisher: String,
    ids: ids::Ids,
    identity: Identity,
    wakeups: broadcast::Sender<Wakeup>,
    stop: CancellationToken,
    closed: AtomicBool,
}

impl RedisStore {
    /// Connects (failing with `Unavailable` when Redis does not answer), measures the
    /// clock offset, checks the keys' layout version (refusing a newer one), reads (or
    /// mints) the store's identity, warns about Redis settings that can lose tasks, and
    /// starts following wake-ups (waiting, up to the call timeout, for the first
    /// subscription) and checking the identity.
    pub async fn connect(config: RedisConfig) -> Result<RedisStore> {
        let (conn, nodes) = Conn::open(&config.target, config.op_timeout).await?;
        let clock = RedisClock::default();
        clock.measure(&conn).await?;
        layout::check(&conn, &config.prefix).await?;
        let identity = Identity::connect(&conn, &config.prefix).await?;
        durability::warn_about_settings(&conn).await;
        let (wakeups, _) = broadcast::channel(4096);
        let stop = CancellationToken::new();
        tokio::spawn(clock::refresh(clock.clone(), conn.clone(), stop.clone()));
        let shared = Arc::new(Shared {
            conn,
            heads: heads::Heads::new(config.safety_poll, config.shard_order_slack),
            publisher: format!("{:016x}", rand::random::<u64>()),
            config,
            scripts: Scripts::new(),
            clock,
            shards: shards::Shards::default(),
            ids: ids::Ids::default(),
            identity,
            wakeups,
            stop,
            closed: AtomicBool::new(false),
        });
        // A store follows wake-ups once it is returned: the first subscription forgets
        // the heads learnt before it, so no lease answers from heads of before.
        let (subscribed, first_subscription) = tokio::sync::oneshot::channel();
        tokio::spawn(wake::follow(Arc::clone(&shared), nodes, subscribed));
        if tokio::time::timeout(shared.config.op_timeout, first_subscription).await.is_err() {
            tracing::debug!("not yet following wake-ups; the safety poll covers them until then");
        }
        let committer = Committer::start(Arc::clone(&shared));
        tokio::spawn(identity::watch(Arc::clone(&shared)));
        Ok(RedisStore { shared, committer })
    }

    /// The store's identity as this process knows it (the first part of every
    /// delivery id); it changes when Redis is found emptied
    /// ([`StoreReset`](punctual_core::StoreReset)).
    pub fn id(&self) -> StoreId {
        self.shared.identity.current()
    }

    /// Checks now, rather than at the next periodic check, that Redis still holds this
    /// store; a reset found is handled and reported as usual.
    pub async fn check_identity(&self) -> Result<()> {
        identity::check(self.open()?).await
    }

    /// The clock the engine should use: Redis' time with [`TimeSource::Redis`], the
    /// system clock with [`TimeSource::Caller`].
    pub fn clock(&self) -> Arc<dyn Clock> {
        match self.shared.config.time {
            TimeSource::Redis => Arc::new(self.shared.clock.clone()),
            TimeSource::Caller => Arc::new(SystemClock),
        }
    }

    /// The rate-limit slots of this store's queues, which every process on the same
    /// Redis shares.
    pub fn rates(&self) -> RedisRates {
        RedisRates { shared: Arc::clone(&self.shared) }
    }

    /// The nodes using this store and what each announces, which every process on the
    /// same Redis sees.
    pub fn nodes(&self) -> RedisNodes {
        RedisNodes { shared: Arc::clone(&self.shared) }
    }

    /// The shared state, unless the store is closed (`Unavailable`).
    fn open(&self) -> Result<&Shared> {
        self.shared.check_open()?;
        Ok(&self.shared)
    }
}

impl Shared {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) { Err(Error::Unavailable("the store is closed".into())) } else { Ok(()) }
    }
}

impl Store for RedisStore {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.open()?.schedule(tasks, now).await
    }

    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        self.open()?.get(queue, key).await
    }

    async fn get_many(&self, keys: Vec<(QueueName, TaskKey)>) -> Result<Vec<Option<Task>>> {
        self.open()?.get_many(keys).await
    }

    async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.open()?.cancel(queue, key, by).await
    }

    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        self.open()?.cancel_tag(queue, tag, by).await
    }

    async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        self.open()?.apply_once(req).await
    }

    async fn list(&self, req: ListRequest) -> Result<Page> {
        self.open()?.list(&req).await
    }

    async fn groups(&self, req: GroupsRequest) -> Result<GroupsPage> {
        self.open()?.groups(&req).await
    }

    async fn completions(&self, req: CompletionsRequest) -> Result<CompletionsPage> {
        self.open()?.completions(&req).await
    }

    async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        self.open()?.import(req).await
    }

    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        self.open()?.lease(&req).await
    }

    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.open()?;
        self.committer.complete(req).await
    }

    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        self.open()?.complete_many(reqs).await
    }

    async fn extend(&self, req: ExtendRequest) -> Result<Timestamp> {
        self.open()?.extend(&req).await
    }

    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        self.open()?.release(token, now).await
    }

    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        self.open()?.reap(now, limit).await
    }

    async fn retry_dead(&self, req: RetryDeadRequest) -> Result<Option<Task>> {
        self.open()?.retry_dead(&req).await
    }

    async fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> Result<RetriedDead> {
        self.open()?.retry_dead_batch(&req).await
    }

    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        self.open()?.sweep_dead(&req).await
    }

    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.open()?.delete_dead(queue, key, by).await
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<()> {
        self.open()?.append_audit(&entry).await
    }

    async fn audit(&self, req: AuditRequest) -> Result<Vec<AuditEntry>> {
        self.open()?.audit(&req).await
    }

    async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.open()?.sweep_audit(before, limit).await
    }

    async fn queue_names(&self) -> Result<Vec<QueueName>> {
        // The registry: every queue a process wrote to, by name (a queue with only
        // histories left among them: it was written to).
        Ok(self.open()?.queues().await?.into_keys().collect())
    }

    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        self.open()?.stats(queue).await
    }

    async fn purge(&self, req: PurgeRequest) -> Result<u64> {
        self.open()?.purge(&req).await
    }

    async fn history(&self, req: HistoryRequest) -> Result<Vec<HistoryEvent>> {
        self.open()?.history(&req).await
    }

    async fn histories(&self, req: HistoriesRequest) -> Result<HistoriesPage> {
        self.open()?.histories(&req).await
    }

    async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        self.open()?.import_histories(queue, histories).await
    }

    async fn sweep_history(&self, req: HistorySweepRequest) -> Result<u64> {
        self.open()?.sweep_history(&req).await
    }

    async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        self.open()?.queue_record(queue).await
    }

    async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        self.open()?.queue_records().await
    }

    async fn change_queue(&self, req: QueueChangeRequest) -> Result<QueueRecord> {
        self.open()?.change_queue(&req).await
    }

    async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        self.open()?.calendar_records().await
    }

    async fn change_calendar(&self, req: CalendarChangeRequest) -> Result<CalendarRecord> {
        self.open()?.change_calendar(&req).await
    }

    async fn secret(&self) -> Result<[u8; 32]> {
        identity::secret(self.open()?).await
    }

    fn peers(&self) -> Option<Peers> {
        let peers = Peers::new(self.shared.wakeups.subscribe(), self.shared.config.safety_poll);
        Some(peers.with_resets(self.shared.identity.resets()))
    }

    async fn close(&self) -> Result<()> {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stop.cancel();
        Ok(())
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
