//! The Redis and Redis Cluster store of punctual: many processes share one set of
//! queues, and Redis decides time.
//!
//! - Layout: every key of a queue (or of one shard of a busy queue) shares one hash
//!   tag, so each operation is one Lua script on one node (see `keys`, `lua/`).
//! - Atomicity: each script is atomic. A call touching several shards (a batch over a
//!   sharded queue, `cancel_tag`, `reap`) is atomic per shard and per script batch of at
//!   most [`SCRIPT_BATCH`] tasks, never one script holding Redis for long.
//! - Time: with [`TimeSource::Redis`] (the default) scripts read Redis `TIME` for every
//!   due and expiry decision, so nodes with skewed clocks agree; [`RedisStore::clock`]
//!   gives the engine the same time. [`TimeSource::Caller`] takes `now` from the
//!   caller, for tests that drive a manual clock.
//! - Wake-ups: scripts publish when they make a queue's next due time earlier; each
//!   store follows the channel and reports [`Peers`] to its engine.
//! - Durability: as durable as Redis is configured to be (see `docs/redis.md`; settings
//!   that can lose tasks are warned about at connect, see `durability`); optionally
//!   each write waits for replicas (`WAIT`) before answering.
//! - Rate limits: [`RedisRates`] keeps each queue's rate-limit slots in Redis (one
//!   script call per slot, Redis' clock), so a queue's rate holds across every process
//!   sharing the store.
//! - Identity: the store's identity lives in Redis; each process checks every few
//!   seconds that Redis still holds it, and reports a Redis that lost punctual's data
//!   as a [`StoreReset`](punctual_core::StoreReset) (see `identity`).

mod clock;
mod conn;
mod dead;
mod durability;
mod identity;
mod keys;
mod record;
mod scripts;
mod tag_list;
mod wake;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_core::store::{
    CompleteRequest, Completion, Lease, LeaseBatch, LeaseRequest, LeaseToken, ListRequest, Page, Peers, QueueStats,
    ReapResult, Reaped, RetriedDead, RetryDeadRequest, ScheduleOutcome, Scheduled, SweepRequest, Swept, corrupt,
};
use punctual_core::{
    Clock, Error, IfExists, NewTask, QueueName, Result, Store, StoreId, SystemClock, Tag, Task, TaskKey, TaskState,
    Timestamp, Wakeup,
};
use redis::{ConnectionInfo, IntoConnectionInfo, ScriptInvocation};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use clock::RedisClock;

use conn::Conn;
use identity::Identity;
use keys::ShardKeys;
use scripts::Scripts;

/// The most tasks one script call handles: bounds how long any script holds Redis.
pub const SCRIPT_BATCH: usize = 500;

/// Where "now" comes from in scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TimeSource {
    /// Redis `TIME`: every node agrees, whatever its own clock says.
    #[default]
    Redis,
    /// The `now` of each call (tests on a manual clock).
    Caller,
}

/// Which Redis. Its `Debug` hides passwords (see [`redacted`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// One Redis (`redis://host:port/db`).
    Single(String),
    /// A Redis Cluster, given any of its nodes.
    Cluster(Vec<String>),
}

impl Target {
    /// Reads `redis://…` or `rediss://…` (one Redis) or
    /// `redis-cluster://h1:p1,h2:p2,…` (a Cluster).
    pub fn parse(url: &str) -> Result<Target> {
        if let Some(nodes) = url.strip_prefix("redis-cluster://") {
            let nodes: Vec<String> =
                nodes.split(',').map(str::trim).filter(|n| !n.is_empty()).map(|n| format!("redis://{n}")).collect();
            if nodes.is_empty() {
                return Err(Error::invalid("store", "redis-cluster:// needs at least one host:port"));
            }
            for node in &nodes {
                info(node)?;
            }
            return Ok(Target::Cluster(nodes));
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            info(url)?;
            return Ok(Target::Single(url.to_owned()));
        }
        Err(Error::invalid(
            "store",
            format!("'{}' is not a Redis address: use redis://host:port or redis-cluster://h1:p1,h2:p2", redacted(url)),
        ))
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Single(url) => f.debug_tuple("Single").field(&redacted(url)).finish(),
            Target::Cluster(urls) => {
                f.debug_tuple("Cluster").field(&urls.iter().map(|u| redacted(u)).collect::<Vec<_>>()).finish()
            }
        }
    }
}

/// `url` with every password replaced by `***` (`redis://user:***@host:6379`), for
/// logs and error messages: a Redis URL may carry the password of the server.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let nodes: Vec<String> = rest
        .split(',')
        .map(|node| match node.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***@{host}"),
                None => node.to_owned(),
            },
            None => node.to_owned(),
        })
        .collect();
    format!("{scheme}://{}", nodes.join(","))
}

/// How a [`RedisStore`] connects and behaves. Start from [`RedisConfig::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    pub target: Target,
    /// Prefix of every key (default `punctual`): several deployments can share a Redis.
    pub prefix: String,
    pub time: TimeSource,
    /// Shards of queues split for load. Fixed for a queue's life: the first process to
    /// write a queue records its count in Redis, and that count wins.
    pub shards: HashMap<QueueName, u32>,
    /// Shards of queues not in `shards` (default 1).
    pub default_shards: u32,
    /// No call waits longer than this for Redis (default 5 s); then `Unavailable`.
    pub op_timeout: Duration,
    /// The engine looks at its queues at least this often (default 1 s).
    pub safety_poll: Duration,
    /// After each write, wait until this many replicas have it (`WAIT`), up to
    /// `op_timeout`; fewer is `Unavailable` (the write may still have happened).
    pub wait_replicas: u32,
}

impl RedisConfig {
    pub fn new(target: Target) -> RedisConfig {
        RedisConfig {
            target,
            prefix: "punctual".into(),
            time: TimeSource::Redis,
            shards: HashMap::new(),
            default_shards: 1,
            op_timeout: Duration::from_secs(5),
            safety_poll: Duration::from_secs(1),
            wait_replicas: 0,
        }
    }
}

/// Task ids reserved from Redis in blocks, so creating tasks costs no extra round trip.
#[derive(Debug, Default)]
struct IdBlock {
    next: u64,
    end: u64,
}

const ID_BLOCK: u64 = 4096;

/// The Redis store. Cheap to share by reference; one per process.
#[derive(Debug)]
pub struct RedisStore {
    shared: Arc<Shared>,
    /// Completions waiting for the committer (see [`commit_completions`]).
    completions: mpsc::UnboundedSender<PendingCompletion>,
}

/// What the store and its background tasks share.
#[derive(Debug)]
struct Shared {
    conn: Conn,
    config: RedisConfig,
    scripts: Scripts,
    clock: RedisClock,
    /// Shard counts as recorded in Redis, learnt on first use of each queue.
    shards: Mutex<HashMap<QueueName, u32>>,
    ids: tokio::sync::Mutex<IdBlock>,
    identity: Identity,
    wakeups: broadcast::Sender<Wakeup>,
    stop: CancellationToken,
    closed: AtomicBool,
}

/// One caller's completion and where its answer goes.
type PendingCompletion = (CompleteRequest, oneshot::Sender<Result<()>>);

impl RedisStore {
    /// Connects (failing with `Unavailable` when Redis does not answer), measures the
    /// clock offset, reads (or mints) the store's identity, warns about Redis settings
    /// that can lose tasks, and starts following wake-ups and checking the identity.
    pub async fn connect(config: RedisConfig) -> Result<RedisStore> {
        let connect_timeout = config.op_timeout.min(Duration::from_secs(5));
        let (conn, nodes) = match &config.target {
            Target::Single(url) => {
                let client = redis::Client::open(url.as_str()).map_err(conn::map_err)?;
                let manager_config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(config.op_timeout))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_secs(1));
                let manager = tokio::time::timeout(
                    config.op_timeout,
                    redis::aio::ConnectionManager::new_with_config(client, manager_config),
                )
                .await
                .map_err(|_| {
                    Error::Unavailable(format!(
                        "Redis at {} did not answer within {:?}",
                        redacted(url),
                        config.op_timeout
                    ))
                })?
                .map_err(conn::map_err)?;
                (Conn::single(manager, config.op_timeout), vec![info(url)?])
            }
            Target::Cluster(urls) => {
                let client = redis::cluster::ClusterClientBuilder::new(urls.clone())
                    .connection_timeout(connect_timeout)
                    .response_timeout(config.op_timeout)
                    .retries(3)
                    .build()
                    .map_err(conn::map_err)?;
                let connection = tokio::time::timeout(config.op_timeout, client.get_async_connection())
                    .await
                    .map_err(|_| {
                        Error::Unavailable(format!("Redis Cluster did not answer within {:?}", config.op_timeout))
                    })?
                    .map_err(conn::map_err)?;
                let nodes = urls.iter().map(|u| info(u)).collect::<Result<Vec<_>>>()?;
                (Conn::cluster(connection, config.op_timeout), nodes)
            }
        };
        let clock = RedisClock::default();
        clock.measure(&conn).await?;
        let identity = Identity::connect(&conn, &config.prefix).await?;
        durability::warn_about_settings(&conn).await;
        let (wakeups, _) = broadcast::channel(4096);
        let stop = CancellationToken::new();
        tokio::spawn(wake::follow(nodes, keys::wake_channel(&config.prefix), wakeups.clone(), stop.clone()));
        tokio::spawn(refresh_clock(clock.clone(), conn.clone(), stop.clone()));
        let shared = Arc::new(Shared {
            conn,
            config,
            scripts: Scripts::new(),
            clock,
            shards: Mutex::new(HashMap::new()),
            ids: tokio::sync::Mutex::new(IdBlock::default()),
            identity,
            wakeups,
            stop,
            closed: AtomicBool::new(false),
        });
        let (completions, waiting) = mpsc::unbounded_channel();
        tokio::spawn(commit_completions(Arc::clone(&shared), waiting));
        tokio::spawn(identity::watch(Arc::clone(&shared)));
        Ok(RedisStore { shared, completions })
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
        self.shared.check_open()?;
        identity::check(&self.shared).await
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
}

/// The rate-limit slots of a store's queues, kept in Redis: at most `count` slots of a
/// queue start in any window of `per`, counted across every process using the store
/// (a sliding log per queue, `lua/rate.lua`). Cheap to clone; calls after the store
/// closed fail with `Unavailable`.
#[derive(Debug, Clone)]
pub struct RedisRates {
    shared: Arc<Shared>,
}

impl RedisRates {
    /// Atomically takes a slot of `queue`'s rate of `count` per `per` when fewer than
    /// `count` started in the window before now: `None`. Otherwise takes nothing and
    /// answers how long until the window's oldest slot frees. Now is Redis' `TIME`
    /// ([`TimeSource::Redis`]) or `now` ([`TimeSource::Caller`]).
    pub async fn take(&self, queue: &QueueName, count: u32, per: Duration, now: Timestamp) -> Result<Option<Duration>> {
        self.shared.check_open()?;
        let mut invocation = self.shared.scripts.rate.prepare_invoke();
        invocation
            .key(keys::rate(&self.shared.config.prefix, queue))
            .arg(self.shared.now_arg(now))
            .arg(count.max(1))
            .arg(u64::try_from(per.as_millis()).unwrap_or(u64::MAX).max(1));
        let wait: u64 = self.shared.conn.invoke(&invocation).await?;
        Ok((wait > 0).then(|| Duration::from_millis(wait)))
    }
}

impl Shared {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) { Err(Error::Unavailable("the store is closed".into())) } else { Ok(()) }
    }

    /// ARGV[1] of every script.
    fn now_arg(&self, now: Timestamp) -> String {
        match self.config.time {
            TimeSource::Redis => String::new(),
            TimeSource::Caller => now.as_millis().to_string(),
        }
    }

    /// A script invocation on one shard with the common KEYS and ARGV[1..3].
    fn invocation<'a>(
        &self,
        script: &'a redis::Script,
        queue: &QueueName,
        shard: u32,
        now: Timestamp,
    ) -> ScriptInvocation<'a> {
        let mut invocation = script.prepare_invoke();
        for key in ShardKeys::new(&self.config.prefix, queue, shard).keys {
            invocation.key(key);
        }
        invocation.arg(self.now_arg(now)).arg(keys::wake_channel(&self.config.prefix)).arg(queue.as_str());
        invocation
    }

    /// The shard count of `queue`; `register` records it in Redis if no process has.
    async fn shard_count(&self, queue: &QueueName, register: bool) -> Result<u32> {
        if let Some(&n) = self.shards.lock().expect("shards lock poisoned").get(queue) {
            return Ok(n);
        }
        let wanted = self.config.shards.get(queue).copied().unwrap_or(self.config.default_shards).max(1);
        let registry = keys::registry(&self.config.prefix);
        if register {
            self.conn.query::<()>(redis::cmd("HSETNX").arg(&registry).arg(queue.as_str()).arg(wanted)).await?;
        }
        let stored: Option<u32> = self.conn.query(redis::cmd("HGET").arg(&registry).arg(queue.as_str())).await?;
        let Some(stored) = stored else { return Ok(wanted) };
        if stored != wanted {
            tracing::warn!(
                queue = %queue, configured = wanted, recorded = stored,
                "the queue was first written with another shard count; using the recorded one (resharding is not supported)"
            );
        }
        self.shards.lock().expect("shards lock poisoned").insert(queue.clone(), stored);
        Ok(stored)
    }

    /// Records again in Redis every queue whose shard count this process knows (after
    /// Redis lost the registry, tasks this process writes must stay visible to every
    /// node's reaper and stats).
    async fn register_known_queues(&self) -> Result<()> {
        let known: Vec<(QueueName, u32)> =
            self.shards.lock().expect("shards lock poisoned").iter().map(|(q, n)| (q.clone(), *n)).collect();
        let registry = keys::registry(&self.config.prefix);
        for (queue, shards) in known {
            self.conn.query::<()>(redis::cmd("HSETNX").arg(&registry).arg(queue.as_str()).arg(shards)).await?;
        }
        Ok(())
    }

    async fn shard_of(&self, queue: &QueueName, key: &TaskKey, register: bool) -> Result<u32> {
        Ok(keys::shard_of(key, self.shard_count(queue, register).await?))
    }

    /// `n` fresh task ids, within the operation timeout. Waiting for the block's lock
    /// counts against it: callers queued behind a refill that Redis does not answer
    /// each fail within the timeout, instead of each waiting out the timeouts of the
    /// callers before them (with Redis frozen, the k-th of a burst of schedules waited
    /// k timeouts, past the request timeout). Giving up mid-refill only skips ids.
    async fn reserve_ids(&self, n: usize) -> Result<Vec<u64>> {
        let timeout = self.config.op_timeout;
        tokio::time::timeout(timeout, self.reserve_ids_waiting(n)).await.unwrap_or_else(|_| {
            Err(Error::Unavailable(format!("Redis did not answer within {timeout:?} (reserving task ids)")))
        })
    }

    /// [`Shared::reserve_ids`] without the overall time limit.
    async fn reserve_ids_waiting(&self, n: usize) -> Result<Vec<u64>> {
        let mut block = self.ids.lock().await;
        let mut ids = Vec::with_capacity(n);
        while ids.len() < n {
            if block.next >= block.end {
                let want = ID_BLOCK.max((n - ids.len()) as u64);
                let mut reserve = self.scripts.ids.prepare_invoke();
                reserve.key(keys::ids(&self.config.prefix)).arg(want).arg(keys::ids_start());
                let end: u64 = self.conn.invoke(&reserve).await?;
                block.next = end - want + 1;
                block.end = end + 1;
            }
            ids.push(block.next);
            block.next += 1;
        }
        Ok(ids)
    }

    /// Waits for replicas when so configured.
    async fn replicate(&self, queue: &QueueName, shard: u32) -> Result<()> {
        if self.config.wait_replicas == 0 {
            return Ok(());
        }
        let timeout_ms = u64::try_from(self.config.op_timeout.as_millis()).unwrap_or(u64::MAX) / 2;
        // WAIT goes to the node of the shard: the command names no key, so route it
        // by a key of the shard where that matters (a Cluster).
        let tasks_key = ShardKeys::new(&self.config.prefix, queue, shard).tasks().to_owned();
        let acked: u32 = self.conn.wait(&tasks_key, self.config.wait_replicas, timeout_ms).await?;
        if acked < self.config.wait_replicas {
            return Err(Error::Unavailable(format!(
                "only {acked} of {} replicas confirmed the write in time",
                self.config.wait_replicas
            )));
        }
        Ok(())
    }

    /// The `now` of a read outside a script: the caller's, or Redis' own.
    async fn read_now(&self, now: Timestamp) -> Result<Timestamp> {
        match self.config.time {
            TimeSource::Caller => Ok(now),
            TimeSource::Redis => clock::redis_time(&self.conn).await,
        }
    }

    /// Up to `limit` members of `zset` scored at or before `until`, earliest first.
    async fn scored_until(&self, zset: &str, until: Timestamp, limit: usize) -> Result<Vec<(Timestamp, String)>> {
        let found: Vec<(String, f64)> = self
            .conn
            .query(
                redis::cmd("ZRANGEBYSCORE")
                    .arg(zset)
                    .arg("-inf")
                    .arg(until.as_millis())
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(limit),
            )
            .await?;
        Ok(found.into_iter().map(|(member, score)| (Timestamp::from_millis(score as i64), member)).collect())
    }

    /// How many of the `max` earliest due tasks of a sharded queue each shard holds.
    async fn lease_shares(&self, req: &LeaseRequest, shards: u32, max: usize) -> Result<Vec<usize>> {
        let now = self.read_now(req.now).await?;
        let mut due: Vec<(Timestamp, String, usize)> = Vec::new();
        for shard in 0..shards {
            let keys = ShardKeys::new(&self.config.prefix, &req.queue, shard);
            let heads = self.scored_until(&keys.keys[0], now, max).await?;
            due.extend(heads.into_iter().map(|(at, key)| (at, key, shard as usize)));
        }
        due.sort();
        due.truncate(max);
        let mut share = vec![0; shards as usize];
        for (_, _, shard) in due {
            share[shard] += 1;
        }
        Ok(share)
    }

    /// The queues recorded in Redis, by name.
    async fn queues(&self) -> Result<BTreeMap<QueueName, u32>> {
        let all: HashMap<String, u32> =
            self.conn.query(redis::cmd("HGETALL").arg(keys::registry(&self.config.prefix))).await?;
        Ok(all.into_iter().filter_map(|(name, n)| Some((QueueName::new(name).ok()?, n.max(1)))).collect())
    }

    async fn stats_of(&self, queue: &QueueName, shards: u32) -> Result<QueueStats> {
        let (mut scheduled, mut leased, mut dead, mut next) = (0, 0, 0, None::<Timestamp>);
        for shard in 0..shards {
            let (s, l, d, head): (u64, u64, u64, String) =
                self.conn.invoke(&self.invocation(&self.scripts.stats, queue, shard, Timestamp::EPOCH)).await?;
            scheduled += s;
            leased += l;
            dead += d;
            next = earliest(next, parse_score(&head)?);
        }
        Ok(QueueStats::new(queue.clone(), scheduled, leased, dead, next))
    }

    /// Applies completions, one script per shard and [`SCRIPT_BATCH`]: each one's result.
    /// A shard Redis did not answer for fails its own completions only, so callers
    /// whose completions share a group (see [`commit_completions`]) but not a shard
    /// are told the truth. Completions judged at different times (only with
    /// [`TimeSource::Caller`]) never share a script, so each is judged at its own `now`.
    async fn complete_each(&self, reqs: &[CompleteRequest]) -> Vec<Result<()>> {
        let mut results: Vec<Result<()>> = (0..reqs.len()).map(|_| Err(Error::LeaseLost)).collect();
        let mut groups: BTreeMap<(QueueName, u32, String), Vec<usize>> = BTreeMap::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.shard_of(&req.token.queue, &req.token.key, false).await {
                Ok(shard) => groups.entry((req.token.queue.clone(), shard, self.now_arg(req.now))).or_default().push(i),
                Err(e) => results[i] = Err(e),
            }
        }
        // Shards concurrently: with Redis frozen, a group spanning k shards fails after
        // one timeout, not k of them in a row.
        let outcomes =
            futures_util::future::join_all(groups.into_iter().map(|((queue, shard, _), indices)| async move {
                let group: Vec<&CompleteRequest> = indices.iter().map(|&i| &reqs[i]).collect();
                let outcome = self.complete_shard(&queue, shard, &group).await;
                (indices, outcome)
            }))
            .await;
        for (indices, outcome) in outcomes {
            match outcome {
                Ok(applied) => {
                    for (&i, ok) in indices.iter().zip(applied) {
                        results[i] = if ok { Ok(()) } else { Err(Error::LeaseLost) };
                    }
                }
                Err(e) => {
                    for &i in &indices {
                        results[i] = Err(e.clone());
                    }
                }
            }
        }
        results
    }

    /// Applies completions of one shard, at most [`SCRIPT_BATCH`] per script.
    async fn complete_shard(&self, queue: &QueueName, shard: u32, reqs: &[&CompleteRequest]) -> Result<Vec<bool>> {
        let mut applied = Vec::with_capacity(reqs.len());
        for chunk in reqs.chunks(SCRIPT_BATCH) {
            // Callers group by `now` (see `complete_each`): one `now` per script.
            let now = chunk.first().map_or(Timestamp::EPOCH, |r| r.now);
            let mut invocation = self.invocation(&self.scripts.complete, queue, shard, now);
            invocation.arg(chunk.len());
            for req in chunk {
                let (kind, at, error) = match &req.completion {
                    Completion::Done => ("d", 0, ""),
                    Completion::Retry { at, error } => ("r", at.as_millis(), error.as_str()),
                    Completion::Reschedule { at } => ("s", at.as_millis(), ""),
                    Completion::Dead { error } => ("x", 0, error.as_str()),
                    other => {
                        return Err(Error::Internal(format!("completion {other:?} is not supported by this store")));
                    }
                };
                let t = &req.token;
                invocation.arg(t.key.as_str()).arg(t.task_id).arg(t.version).arg(t.fence).arg(kind).arg(at).arg(error);
            }
            let results: Vec<i64> = self.conn.invoke(&invocation).await?;
            applied.extend(results.into_iter().map(|r| r == 1));
        }
        self.replicate(queue, shard).await?;
        Ok(applied)
    }
}

fn info(url: &str) -> Result<ConnectionInfo> {
    url.into_connection_info().map_err(|e| Error::invalid("store", format!("{}: {e}", redacted(url))))
}

/// Group commit of completions. Takes the first waiting completion and every one
/// queued behind it (up to [`SCRIPT_BATCH`]), applies them together (one script per
/// shard) and answers each caller. One group is in flight at a time, so completions
/// that arrive meanwhile form the next group: under load one script applies hundreds,
/// and a lone completion waits for nothing. Ends when the store is dropped.
async fn commit_completions(shared: Arc<Shared>, mut waiting: mpsc::UnboundedReceiver<PendingCompletion>) {
    let mut group = Vec::with_capacity(SCRIPT_BATCH);
    while waiting.recv_many(&mut group, SCRIPT_BATCH).await > 0 {
        let (requests, answers): (Vec<_>, Vec<_>) = group.drain(..).unzip();
        for (answer, result) in answers.into_iter().zip(shared.complete_each(&requests).await) {
            // A caller that stopped waiting needs no answer.
            let _ = answer.send(result);
        }
    }
}

async fn refresh_clock(clock: RedisClock, conn: Conn, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(clock::REFRESH) => {}
            _ = stop.cancelled() => return,
        }
        // A failure keeps the last offset; the connection logs unreachability.
        let _ = clock.measure(&conn).await;
    }
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A ZSet score as scripts return it ('' for none).
fn parse_score(score: &str) -> Result<Option<Timestamp>> {
    if score.is_empty() {
        return Ok(None);
    }
    // Scores are doubles; ours are whole milliseconds, printed without a fraction.
    let ms: f64 = score.parse().map_err(|_| corrupt(format!("score '{score}'")))?;
    Ok(Some(Timestamp::from_millis(ms as i64)))
}

fn bad_cursor() -> Error {
    Error::invalid("cursor", "this cursor was not issued by this store; start again without one")
}

/// Cursors are `<due ms>.<key in hex>` of the last task of a page.
fn parse_cursor(cursor: &str) -> Result<(i64, String)> {
    let (due, hex) = cursor.split_once('.').ok_or_else(bad_cursor)?;
    let due = due.parse().map_err(|_| bad_cursor())?;
    if hex.len() % 2 != 0 {
        return Err(bad_cursor());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<std::result::Result<Vec<u8>, _>>()
        .map_err(|_| bad_cursor())?;
    Ok((due, String::from_utf8(bytes).map_err(|_| bad_cursor())?))
}

fn cursor_of(task: &Task) -> String {
    cursor_at(task.due_at.as_millis(), task.key.as_str())
}

fn cursor_at(due: i64, key: &str) -> String {
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{due}.{hex}")
}

fn state_arg(state: Option<TaskState>) -> &'static str {
    match state {
        None => "",
        Some(TaskState::Scheduled) => "0",
        Some(TaskState::Leased) => "1",
        Some(_) => "2",
    }
}

/// Decodes `[key, record, key, record…]` answers.
fn decode_pairs(store: StoreId, queue: &QueueName, items: &[Vec<u8>]) -> Result<Vec<Task>> {
    items
        .chunks(2)
        .map(|pair| match pair {
            [key, record] => record::decode(store, queue, std::str::from_utf8(key).map_err(corrupt)?, record),
            _ => Err(corrupt("an odd answer from a script")),
        })
        .collect()
}

impl Store for RedisStore {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.shared.check_open()?;
        let mut ids = self.shared.reserve_ids(tasks.len()).await?.into_iter();
        // Group by shard, keeping each group's order (one key is always one shard).
        let mut groups: BTreeMap<(QueueName, u32), Vec<usize>> = BTreeMap::new();
        for (i, task) in tasks.iter().enumerate() {
            let shard = self.shared.shard_of(&task.queue, &task.key, true).await?;
            groups.entry((task.queue.clone(), shard)).or_default().push(i);
        }
        let mut results: Vec<Option<Result<Scheduled>>> = (0..tasks.len()).map(|_| None).collect();
        for ((queue, shard), indices) in groups {
            for chunk in indices.chunks(SCRIPT_BATCH) {
                let mut invocation = self.shared.invocation(&self.shared.scripts.schedule, &queue, shard, now);
                invocation.arg(chunk.len());
                for &i in chunk {
                    let task = &tasks[i];
                    let mode = match task.if_exists {
                        IfExists::Keep => "k",
                        IfExists::Error => "e",
                        _ => "r",
                    };
                    invocation
                        .arg(task.key.as_str())
                        .arg(mode)
                        .arg(task.due_at.as_millis())
                        .arg(task.max_attempts)
                        .arg(ids.next().unwrap_or_default())
                        .arg(record::tags_of(&task.tags))
                        .arg(record::body_of(task)?);
                }
                let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
                if answer.len() != chunk.len() * 2 {
                    return Err(corrupt("schedule answered the wrong number of results"));
                }
                for (&i, pair) in chunk.iter().zip(answer.chunks(2)) {
                    let task = &tasks[i];
                    let outcome = match pair[0].as_slice() {
                        b"c" => ScheduleOutcome::Created,
                        b"r" => ScheduleOutcome::Replaced,
                        b"k" => ScheduleOutcome::Kept,
                        _ => {
                            results[i] = Some(Err(Error::Conflict(format!(
                                "task '{}' already exists in queue '{}' (if_exists is error)",
                                task.key, task.queue
                            ))));
                            continue;
                        }
                    };
                    let stored = record::decode(self.id(), &queue, task.key.as_str(), &pair[1])?;
                    results[i] = Some(Ok(Scheduled::new(outcome, stored)));
                }
            }
            self.shared.replicate(&queue, shard).await?;
        }
        results.into_iter().map(|r| r.ok_or_else(|| Error::Internal("a task got no answer".into()))).collect()
    }

    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(queue, key, false).await?;
        let keys = ShardKeys::new(&self.shared.config.prefix, queue, shard);
        let record: Option<Vec<u8>> =
            self.shared.conn.query(redis::cmd("HGET").arg(keys.tasks()).arg(key.as_str())).await?;
        record.map(|r| record::decode(self.id(), queue, key.as_str(), &r)).transpose()
    }

    async fn cancel(&self, queue: &QueueName, key: &TaskKey) -> Result<bool> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(queue, key, false).await?;
        let mut invocation = self.shared.invocation(&self.shared.scripts.delete, queue, shard, Timestamp::EPOCH);
        invocation.arg(key.as_str()).arg("any");
        let deleted: i64 = self.shared.conn.invoke(&invocation).await?;
        self.shared.replicate(queue, shard).await?;
        Ok(deleted == 1)
    }

    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag) -> Result<u64> {
        self.shared.check_open()?;
        let mut total = 0;
        for shard in 0..self.shared.shard_count(queue, false).await? {
            loop {
                let mut invocation =
                    self.shared.invocation(&self.shared.scripts.cancel_tag, queue, shard, Timestamp::EPOCH);
                invocation.arg(tag.as_str()).arg(SCRIPT_BATCH);
                let deleted: u64 = self.shared.conn.invoke(&invocation).await?;
                total += deleted;
                if deleted < SCRIPT_BATCH as u64 {
                    break;
                }
            }
            self.shared.replicate(queue, shard).await?;
        }
        Ok(total)
    }

    async fn list(&self, req: ListRequest) -> Result<Page> {
        self.shared.check_open()?;
        if let Some(tag) = &req.tag {
            return self.shared.list_tagged(self.id(), &req, tag).await;
        }
        let cursor = req.cursor.as_deref().map(parse_cursor).transpose()?;
        let limit = req.limit.max(1) as usize;
        let mut found = Vec::new();
        for shard in 0..self.shared.shard_count(&req.queue, false).await? {
            let mut invocation = self.shared.invocation(&self.shared.scripts.list, &req.queue, shard, Timestamp::EPOCH);
            invocation.arg(state_arg(req.state));
            match &cursor {
                Some((due, key)) => invocation.arg(due).arg(key.as_str()),
                None => invocation.arg("").arg(""),
            };
            invocation.arg(limit);
            let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
            found.extend(decode_pairs(self.id(), &req.queue, &answer)?);
        }
        found.sort_by(|a, b| (a.due_at, a.key.as_str().as_bytes()).cmp(&(b.due_at, b.key.as_str().as_bytes())));
        let more = found.len() > limit;
        found.truncate(limit);
        let next_cursor = if more { found.last().map(cursor_of) } else { None };
        Ok(Page::new(found, next_cursor))
    }

    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        self.shared.check_open()?;
        let shards = self.shared.shard_count(&req.queue, false).await?;
        let max = (req.max.max(1) as usize).min(SCRIPT_BATCH);
        // One shard: one script. Several: the earliest due tasks across all shards,
        // so a sharded queue fires in due order like any other; read each shard's
        // due heads, then have each shard's script lease its share.
        let share = if shards == 1 { vec![max] } else { self.shared.lease_shares(&req, shards, max).await? };
        let lease_ms = u64::try_from(req.lease_for.as_millis()).unwrap_or(u64::MAX);
        let mut leases = Vec::new();
        let mut next_due = None;
        for (shard, take) in (0..shards).zip(share) {
            let mut invocation = self.shared.invocation(&self.shared.scripts.lease, &req.queue, shard, req.now);
            invocation.arg(take).arg(lease_ms);
            let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
            let (head, pairs) = answer.split_first().ok_or_else(|| corrupt("lease answered nothing"))?;
            next_due = earliest(next_due, parse_score(std::str::from_utf8(head).map_err(corrupt)?)?);
            leases.extend(decode_pairs(self.id(), &req.queue, pairs)?.into_iter().map(Lease::of));
        }
        leases.sort_by(|a, b| (a.task.due_at, a.task.key.as_str()).cmp(&(b.task.due_at, b.task.key.as_str())));
        Ok(LeaseBatch::new(leases, next_due))
    }

    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.shared.check_open()?;
        let (answer, answered) = oneshot::channel();
        self.completions.send((req, answer)).map_err(|_| Error::Unavailable("the store is closed".into()))?;
        answered.await.map_err(|_| Error::Unavailable("the store closed before the completion was applied".into()))?
    }

    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        self.shared.check_open()?;
        let results = self.shared.complete_each(&reqs).await;
        // A call Redis failed for any shard answers that error (each shard's script is
        // atomic, the call is not: see the crate docs), as it always has.
        if let Some(Err(e)) = results.iter().find(|r| matches!(r, Err(e) if *e != Error::LeaseLost)) {
            return Err(e.clone());
        }
        Ok(results)
    }

    async fn extend(&self, token: &LeaseToken, lease_for: Duration, now: Timestamp) -> Result<Timestamp> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(&token.queue, &token.key, false).await?;
        let mut invocation = self.shared.invocation(&self.shared.scripts.extend, &token.queue, shard, now);
        invocation
            .arg(token.key.as_str())
            .arg(token.task_id)
            .arg(token.version)
            .arg(token.fence)
            .arg(u64::try_from(lease_for.as_millis()).unwrap_or(u64::MAX));
        let expiry: i64 = self.shared.conn.invoke(&invocation).await?;
        if expiry < 0 { Err(Error::LeaseLost) } else { Ok(Timestamp::from_millis(expiry)) }
    }

    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(&token.queue, &token.key, false).await?;
        let mut invocation = self.shared.invocation(&self.shared.scripts.release, &token.queue, shard, now);
        invocation.arg(token.key.as_str()).arg(token.task_id).arg(token.version).arg(token.fence);
        let released: i64 = self.shared.conn.invoke(&invocation).await?;
        if released == 1 { Ok(()) } else { Err(Error::LeaseLost) }
    }

    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        self.shared.check_open()?;
        // Earliest expiry first across every queue: first read each shard's expired
        // leases, then have each shard's script end its share of the earliest `limit`.
        let look_at = self.shared.read_now(now).await?;
        let mut shards = Vec::new();
        let mut expired: Vec<(Timestamp, usize, String)> = Vec::new();
        for (queue, count) in self.shared.queues().await? {
            for shard in 0..count {
                let keys = ShardKeys::new(&self.shared.config.prefix, &queue, shard);
                let found = self.shared.scored_until(&keys.keys[1], look_at, limit.max(1) as usize).await?;
                expired.extend(found.into_iter().map(|(at, key)| (at, shards.len(), key)));
                shards.push((queue.clone(), shard));
            }
        }
        expired.sort();
        expired.truncate(limit.max(1) as usize);
        let mut share = vec![0usize; shards.len()];
        for (_, index, _) in &expired {
            share[*index] += 1;
        }
        let expiry: HashMap<(usize, &str), Timestamp> =
            expired.iter().map(|(at, index, key)| ((*index, key.as_str()), *at)).collect();
        let mut reaped: Vec<(Timestamp, Reaped)> = Vec::new();
        let mut next_expiry = None;
        for (index, ((queue, shard), take)) in shards.iter().zip(share).enumerate() {
            let mut invocation = self.shared.invocation(&self.shared.scripts.reap, queue, *shard, now);
            invocation.arg(take.min(SCRIPT_BATCH));
            let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
            let (head, pairs) = answer.split_first().ok_or_else(|| corrupt("reap answered nothing"))?;
            next_expiry = earliest(next_expiry, parse_score(std::str::from_utf8(head).map_err(corrupt)?)?);
            for pair in pairs.chunks(2) {
                let [key, state] = pair else { return Err(corrupt("an odd answer from reap")) };
                let key = TaskKey::new(String::from_utf8(key.clone()).map_err(corrupt)?).map_err(corrupt)?;
                let state = if state.as_slice() == b"2" { TaskState::Dead } else { TaskState::Scheduled };
                let at = expiry.get(&(index, key.as_str())).copied().unwrap_or(now);
                reaped.push((at, Reaped::new(queue.clone(), key, state)));
            }
        }
        // Earliest expiry first across queues, as the contract says.
        reaped.sort_by_key(|(at, _)| *at);
        Ok(ReapResult::new(reaped.into_iter().map(|(_, r)| r).collect(), next_expiry))
    }

    async fn retry_dead(&self, queue: &QueueName, key: &TaskKey, now: Timestamp) -> Result<Option<Task>> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(queue, key, false).await?;
        let mut invocation = self.shared.invocation(&self.shared.scripts.retry_dead, queue, shard, now);
        invocation.arg(key.as_str());
        let record: Vec<u8> = self.shared.conn.invoke(&invocation).await?;
        if record.is_empty() {
            return Ok(None);
        }
        self.shared.replicate(queue, shard).await?;
        record::decode(self.id(), queue, key.as_str(), &record).map(Some)
    }

    async fn retry_dead_batch(&self, req: RetryDeadRequest) -> Result<RetriedDead> {
        self.shared.check_open()?;
        self.shared.retry_dead_batch(&req).await
    }

    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        self.shared.check_open()?;
        self.shared.sweep_dead(&req).await
    }

    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey) -> Result<bool> {
        self.shared.check_open()?;
        let shard = self.shared.shard_of(queue, key, false).await?;
        let mut invocation = self.shared.invocation(&self.shared.scripts.delete, queue, shard, Timestamp::EPOCH);
        invocation.arg(key.as_str()).arg("dead");
        let deleted: i64 = self.shared.conn.invoke(&invocation).await?;
        self.shared.replicate(queue, shard).await?;
        Ok(deleted == 1)
    }

    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        self.shared.check_open()?;
        if let Some(queue) = queue {
            let shards = self.shared.shard_count(queue, false).await?;
            return Ok(vec![self.shared.stats_of(queue, shards).await?]);
        }
        let mut all = Vec::new();
        for (queue, shards) in self.shared.queues().await? {
            let stats = self.shared.stats_of(&queue, shards).await?;
            if stats.scheduled + stats.leased + stats.dead > 0 {
                all.push(stats);
            }
        }
        Ok(all)
    }

    async fn secret(&self) -> Result<[u8; 32]> {
        self.shared.check_open()?;
        let key = keys::secret(&self.shared.config.prefix);
        let fresh: [u8; 32] = rand::random();
        self.shared.conn.query::<()>(redis::cmd("SET").arg(&key).arg(&fresh[..]).arg("NX")).await?;
        let stored: Vec<u8> = self.shared.conn.query(redis::cmd("GET").arg(&key)).await?;
        let secret: [u8; 32] = stored.try_into().map_err(|_| corrupt("the lease secret is not 32 bytes"))?;
        self.shared.identity.remember_secret(secret);
        Ok(secret)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_redis_urls_are_never_shown() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            ("redis://:s3cret@127.0.0.1:6379", "redis://:***@127.0.0.1:6379"),
            ("rediss://app:s3cret@cache.internal:6380/2", "rediss://app:***@cache.internal:6380/2"),
            ("redis://app@h:1", "redis://app@h:1"),
            ("redis://:p@ss:word@h:1", "redis://:***@h:1"),
            ("redis-cluster://:s3cret@h1:1,:s3cret@h2:2", "redis-cluster://:***@h1:1,:***@h2:2"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redacted(url), shown);
        }
        let target = Target::parse("redis://:s3cret@127.0.0.1:6379").unwrap();
        assert!(!format!("{target:?}").contains("s3cret"), "{target:?}");
        let config = RedisConfig::new(Target::parse("redis-cluster://:s3cret@h1:1,:s3cret@h2:2").unwrap());
        assert!(!format!("{config:?}").contains("s3cret"));
        let e = Target::parse("redis://:s3cret@[bad").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
