//! The engine: validation and policies in front of a [`Store`], wake-ups for
//! consumers, and the reaper of expired leases.
//!
//! The engine owns no task state; the store does. It keeps per queue a [`WakeAt`]
//! (the earliest instant a task of that queue may be due), lowered by every write it
//! makes, so a consumer sleeps until the next due time and is woken at once when an
//! earlier task arrives. The reaper sleeps until the earliest lease expiry the same
//! way. Both are lower bounds, never later than the truth (see `wake`).
//!
//! Every such sleep (consumers, the reaper, the safety poll of a shared store) is an
//! entry in the engine's one [`Timer`]: a timing wheel driven by a single task that
//! sleeps on the engine's clock until the earliest entry, so 10,000 waiting long
//! polls cost one clock sleep, and a sleep that loses its `select!` leaves the wheel
//! in O(1). The watchdog sleeps on the clock itself, so it still runs if the timer
//! ever stalls.
//!
//! A store other processes write too (Redis) reports their writes as [`Peers`]
//! wake-ups; the engine passes them on and, since a notification can be lost, also
//! looks at each queue it serves every `safety_poll`.
//!
//! Queues with a dead-task retention ([`EngineConfig::dead_retention`]) are swept by
//! one more loop on the timer: it deletes their dead tasks that died longer ago than
//! the retention, in batches, then sleeps until the earliest dead task left is due to
//! go (a task that dies later goes later still), at most [`MAX_SWEEP_WAIT`], so a queue
//! with nothing to delete costs one store call per wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::metrics::{Finished, Metered, MetricsSnapshot, QueueActivity, Recorder};
use crate::model::{NewTask, QueueName, Tag, Task, TaskKey, TaskSpec, TaskState, When};
use crate::policy::{Backoff, DEFAULT_MAX_ATTEMPTS, Repeat};
use crate::store::{
    CompleteRequest, Completion, DeadSelection, Lease, LeaseRequest, LeaseToken, ListRequest, Page, Peers, QueueStats,
    RetryDeadRequest, Scheduled, Store, SweepRequest,
};
use crate::time::Timestamp;
use crate::timer::Timer;
use crate::wake::WakeAt;
use crate::worker::Outcome;

mod watchdog;
pub use watchdog::WatchdogConfig;

/// Size limits on input, enforced before anything reaches the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// A task's payload, serialized as JSON, in bytes (default 64 KiB).
    pub max_payload_bytes: usize,
    /// Tasks in one batch (default 10,000).
    pub max_batch: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_payload_bytes: 64 * 1024, max_batch: 10_000 }
    }
}

/// Policies a queue's tasks get when the task does not set them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueDefaults {
    pub max_attempts: u32,
    pub backoff: Backoff,
    /// The repeat of tasks that set none (e.g. "remind again every 24 h").
    pub repeat: Option<Repeat>,
}

impl Default for QueueDefaults {
    /// 20 attempts; backoff 1 s doubling up to 1 h; no repeat.
    fn default() -> QueueDefaults {
        QueueDefaults { max_attempts: DEFAULT_MAX_ATTEMPTS, backoff: Backoff::default(), repeat: None }
    }
}

/// How an engine behaves. Start from `EngineConfig::default()` and set fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    pub limits: Limits,
    /// Defaults for queues not listed in `queues`.
    pub defaults: QueueDefaults,
    /// Per-queue defaults.
    pub queues: HashMap<QueueName, QueueDefaults>,
    /// Expired leases ended per reaper pass.
    pub reap_batch: u32,
    /// The clock; the system clock unless a test sets another.
    pub clock: Arc<dyn Clock>,
    /// The watchdog of stalled loops; `None` turns it off.
    pub watchdog: Option<WatchdogConfig>,
    /// Per queue, how long dead tasks are kept after they died; a queue not listed
    /// keeps them until they are retried or deleted.
    pub dead_retention: HashMap<QueueName, Duration>,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            limits: Limits::default(),
            defaults: QueueDefaults::default(),
            queues: HashMap::new(),
            reap_batch: 1_000,
            clock: Arc::new(SystemClock),
            watchdog: Some(WatchdogConfig::default()),
            dead_retention: HashMap::new(),
        }
    }
}

impl EngineConfig {
    /// Sets a queue's default policies.
    pub fn queue(mut self, queue: QueueName, defaults: QueueDefaults) -> EngineConfig {
        self.queues.insert(queue, defaults);
        self
    }
    /// Uses `clock` instead of the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> EngineConfig {
        self.clock = clock;
        self
    }
    /// Deletes the queue's dead tasks once they have been dead for `keep`.
    pub fn dead_retention(mut self, queue: QueueName, keep: Duration) -> EngineConfig {
        self.dead_retention.insert(queue, keep);
        self
    }
}

/// Dead tasks a store looks at per call of a bulk retry or a retention sweep.
const DEAD_BATCH: u32 = 500;

/// The longest the retention sweeper sleeps between two looks at a queue, whatever the
/// store said: a dead task that died earlier than any this process could know of (on a
/// store shared with processes whose clocks differ) waits at most this much longer.
pub const MAX_SWEEP_WAIT: Duration = Duration::from_secs(3600);

/// The shortest the retention sweeper waits between two looks at a queue: a store that
/// keeps reporting a dead task due to go that it does not delete is asked once a second,
/// not in a loop.
const MIN_SWEEP_WAIT: Duration = Duration::from_secs(1);

/// Options of [`Engine::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListOptions {
    /// Only tasks in this state (default: any).
    pub state: Option<TaskState>,
    /// Only tasks carrying this tag (default: tagged or not).
    pub tag: Option<String>,
    /// At most this many tasks, 1–1,000 (default 100).
    pub limit: u32,
    /// A previous page's `next_cursor` (default: the first page).
    pub cursor: Option<String>,
}

impl Default for ListOptions {
    fn default() -> ListOptions {
        ListOptions { state: None, tag: None, limit: 100, cursor: None }
    }
}

impl ListOptions {
    /// Only tasks in `state`.
    pub fn state(mut self, state: Option<TaskState>) -> ListOptions {
        self.state = state;
        self
    }
    /// Only tasks carrying `tag`.
    pub fn tag(mut self, tag: Option<String>) -> ListOptions {
        self.tag = tag;
        self
    }
    /// Pages of `limit` tasks.
    pub fn limit(mut self, limit: u32) -> ListOptions {
        self.limit = limit;
        self
    }
    /// The page after the one that answered `cursor`.
    pub fn cursor(mut self, cursor: Option<String>) -> ListOptions {
        self.cursor = cursor;
        self
    }
}

/// Options of [`Engine::lease`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseOptions {
    /// At most this many tasks, 1–1,000 (default 1).
    pub max: u32,
    /// Each lease lasts this long, 1 s–12 h (default 30 s).
    pub lease_for: Duration,
    /// Wait up to this long (0–60 s, default 0) for a task to fall due.
    pub wait: Duration,
}

impl Default for LeaseOptions {
    fn default() -> LeaseOptions {
        LeaseOptions { max: 1, lease_for: Duration::from_secs(30), wait: Duration::ZERO }
    }
}

impl LeaseOptions {
    /// Up to `max` tasks.
    pub fn max(mut self, max: u32) -> LeaseOptions {
        self.max = max;
        self
    }
    /// Leases of this length.
    pub fn lease_for(mut self, d: Duration) -> LeaseOptions {
        self.lease_for = d;
        self
    }
    /// Long-poll up to `d`.
    pub fn wait(mut self, d: Duration) -> LeaseOptions {
        self.wait = d;
        self
    }

    fn validate(&self) -> Result<()> {
        if !(1..=1000).contains(&self.max) {
            return Err(Error::invalid("max", format!("{} is outside 1 to 1000", self.max)));
        }
        if self.lease_for < Duration::from_secs(1) || self.lease_for > Duration::from_secs(12 * 3600) {
            return Err(Error::invalid("lease", "a lease lasts from 1s to 12h"));
        }
        if self.wait > Duration::from_secs(60) {
            return Err(Error::invalid("wait", "wait is at most 60s"));
        }
        Ok(())
    }
}

/// Schedules, cancels and hands out tasks of one store. Cheap to clone; clones share
/// everything. Create with [`Engine::start`] inside a tokio runtime; end with
/// [`Engine::shutdown`].
#[derive(Debug)]
pub struct Engine<S: Store> {
    inner: Arc<Inner<S>>,
}

impl<S: Store> Clone for Engine<S> {
    fn clone(&self) -> Self {
        Engine { inner: Arc::clone(&self.inner) }
    }
}

#[derive(Debug)]
struct Inner<S> {
    store: Metered<S>,
    metrics: Recorder,
    config: EngineConfig,
    queues: Mutex<HashMap<QueueName, Arc<QueueState>>>,
    reaper_wake: WakeAt,
    /// Every wait of the engine but the watchdog's.
    timer: Timer,
    stopping: CancellationToken,
    /// The reaper (replaced by the watchdog if it stalls).
    reaper: Mutex<Option<JoinHandle<()>>>,
    /// The timer's driver and, for a shared store, the follower of other processes'
    /// writes.
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl<S: Store> Engine<S> {
    /// Starts an engine on `store`, with its timer, its reaper (and, for a store other
    /// processes share, the follower of their writes) running on the current tokio
    /// runtime.
    pub fn start(store: S, config: EngineConfig) -> Engine<S> {
        let peers = store.peers();
        let stopping = CancellationToken::new();
        let (timer, driver) = Timer::start(Arc::clone(&config.clock), stopping.clone());
        let engine = Engine {
            inner: Arc::new(Inner {
                store: Metered::new(store),
                metrics: Recorder::default(),
                config,
                queues: Mutex::new(HashMap::new()),
                reaper_wake: WakeAt::default(),
                timer,
                stopping,
                reaper: Mutex::new(None),
                background: Mutex::new(vec![driver]),
            }),
        };
        let reaper = tokio::spawn(engine.clone().run_reaper());
        *engine.inner.reaper.lock().expect("reaper lock poisoned") = Some(reaper);
        if let Some(peers) = peers {
            let follower = tokio::spawn(engine.clone().follow_peers(peers));
            engine.inner.background.lock().expect("background lock poisoned").push(follower);
        }
        if let Some(config) = engine.inner.config.watchdog {
            tokio::spawn(engine.clone().run_watchdog(config));
        }
        if !engine.inner.config.dead_retention.is_empty() {
            let sweeper = tokio::spawn(engine.clone().run_sweeper());
            engine.inner.background.lock().expect("background lock poisoned").push(sweeper);
        }
        engine
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.inner.store
    }

    /// The engine's clock.
    pub fn clock(&self) -> &dyn Clock {
        self.inner.config.clock.as_ref()
    }

    /// The engine's limits.
    pub fn limits(&self) -> Limits {
        self.inner.config.limits
    }

    fn now(&self) -> Timestamp {
        self.inner.config.clock.now()
    }

    fn check_running(&self) -> Result<()> {
        if self.inner.stopping.is_cancelled() { Err(Error::ShuttingDown) } else { Ok(()) }
    }

    /// What the engine keeps per queue, created on first use.
    fn queue_state(&self, queue: &QueueName) -> Arc<QueueState> {
        let mut queues = self.inner.queues.lock().expect("queues lock poisoned");
        Arc::clone(queues.entry(queue.clone()).or_default())
    }

    /// The wake-up of a queue.
    pub(crate) fn waker(&self, queue: &QueueName) -> Arc<QueueState> {
        self.queue_state(queue)
    }

    /// Everything the engine counted so far (see [`crate::metrics`]).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot(&self.inner.store.latency)
    }

    /// The queue's recent outcomes and throughput, for dashboards.
    pub fn activity(&self, queue: &str) -> Result<QueueActivity> {
        let queue = QueueName::new(queue)?;
        Ok(self.inner.metrics.activity(&queue, self.now()))
    }

    /// Fire lag (lease time − due time) of the queue's most recent leases, or `None`
    /// when this engine has leased none yet.
    pub fn recent_lag(&self, queue: &str) -> Result<Option<LagSummary>> {
        let queue = QueueName::new(queue)?;
        Ok(self.queue_state(&queue).lags.lock().expect("lag lock poisoned").summary())
    }

    fn defaults(&self, queue: &QueueName) -> &QueueDefaults {
        self.inner.config.queues.get(queue).unwrap_or(&self.inner.config.defaults)
    }

    /// Creates or updates one task. See [`Store::schedule`] for `if_exists`.
    pub async fn schedule(&self, queue: &str, key: &str, spec: TaskSpec) -> Result<Scheduled> {
        let queue = QueueName::new(queue)?;
        let now = self.now();
        let task = self.prepare(&queue, key, spec, now)?;
        let mut results = self.write(vec![task], now).await?;
        results.pop().ok_or_else(|| Error::Internal("store answered an empty batch".into()))?
    }

    /// Creates or updates many tasks of one queue. Each item succeeds or fails on its
    /// own (invalid items are refused, valid ones stored); more than
    /// [`Limits::max_batch`] items is an error of the whole call, field `tasks`.
    pub async fn schedule_many(&self, queue: &str, items: Vec<(String, TaskSpec)>) -> Result<Vec<Result<Scheduled>>> {
        let queue = QueueName::new(queue)?;
        let limit = self.inner.config.limits.max_batch;
        if items.len() > limit {
            return Err(Error::invalid("tasks", format!("{} tasks is over the batch limit of {limit}", items.len())));
        }
        let now = self.now();
        let mut results: Vec<Option<Result<Scheduled>>> = Vec::with_capacity(items.len());
        let mut valid = Vec::with_capacity(items.len());
        for (key, spec) in items {
            match self.prepare(&queue, &key, spec, now) {
                Ok(task) => {
                    valid.push(task);
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut written = self.write(valid, now).await?.into_iter();
        Ok(results
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| {
                    written.next().unwrap_or_else(|| Err(Error::Internal("store answered too few results".into())))
                })
            })
            .collect())
    }

    async fn write(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.check_running()?;
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        let results = self.inner.store.schedule(tasks, now).await?;
        self.inner.metrics.scheduled(&results);
        for scheduled in results.iter().flatten() {
            if scheduled.task.state == TaskState::Scheduled {
                self.waker(&scheduled.task.queue).offer(Some(scheduled.task.due_at));
            }
        }
        Ok(results)
    }

    /// Validates one task and applies the queue's defaults.
    fn prepare(&self, queue: &QueueName, key: &str, spec: TaskSpec, now: Timestamp) -> Result<NewTask> {
        let key = TaskKey::new(key)?;
        let limit = self.inner.config.limits.max_payload_bytes;
        let size = payload_size(&spec.payload);
        if size > limit {
            return Err(Error::PayloadTooLarge { size, limit });
        }
        let defaults = self.defaults(queue);
        let max_attempts = spec.max_attempts.unwrap_or(defaults.max_attempts);
        if max_attempts == 0 {
            return Err(Error::invalid("max_attempts", "max_attempts must be at least 1"));
        }
        if spec.tags.len() > Tag::MAX_PER_TASK {
            return Err(Error::invalid(
                "tags",
                format!("{} tags is over the limit of {}", spec.tags.len(), Tag::MAX_PER_TASK),
            ));
        }
        let mut tags = spec.tags.into_iter().map(Tag::new).collect::<Result<Vec<_>>>()?;
        tags.sort();
        tags.dedup();
        let repeat = spec.repeat.or_else(|| defaults.repeat.clone());
        let due_at = match spec.when {
            When::Now => match &repeat {
                Some(repeat) => repeat.first_at(now).ok_or_else(|| {
                    Error::invalid("repeat.cron", "has no occurrence left before the end of time (9999-12-30)")
                })?,
                None => now,
            },
            When::After(delay) => now.saturating_add(delay),
            When::At(at) => at.max(now),
        };
        // An `until` before the first occurrence would leave a task that never fires.
        if let Some(until) = repeat.as_ref().and_then(Repeat::until_limit)
            && due_at > until
        {
            return Err(Error::invalid(
                "repeat.until",
                format!("{until} is before the first occurrence, due at {due_at}: the task would never fire"),
            ));
        }
        let mut task = NewTask::new(queue.clone(), key, due_at);
        task.payload = spec.payload;
        task.max_attempts = max_attempts;
        task.backoff = spec.backoff.unwrap_or(defaults.backoff);
        task.repeat = repeat;
        task.tags = tags;
        task.if_exists = spec.if_exists;
        Ok(task)
    }

    /// The task, in any state.
    pub async fn get(&self, queue: &str, key: &str) -> Result<Option<Task>> {
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        self.inner.store.get(&queue, &key).await
    }

    /// Cancels the task in any state; a leased task neither retries nor repeats.
    /// `false` when there was no such task.
    pub async fn cancel(&self, queue: &str, key: &str) -> Result<bool> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        let cancelled = self.inner.store.cancel(&queue, &key).await?;
        self.inner.metrics.cancelled(&queue, Some(&key), u64::from(cancelled));
        Ok(cancelled)
    }

    /// Cancels every task of the queue carrying `tag`; how many.
    pub async fn cancel_tag(&self, queue: &str, tag: &str) -> Result<u64> {
        self.check_running()?;
        let (queue, tag) = (QueueName::new(queue)?, Tag::new(tag)?);
        let cancelled = self.inner.store.cancel_tag(&queue, &tag).await?;
        self.inner.metrics.cancelled(&queue, None, cancelled);
        Ok(cancelled)
    }

    /// A page of the queue's tasks in due order, filtered by `options`.
    pub async fn list(&self, queue: &str, options: ListOptions) -> Result<Page> {
        let queue = QueueName::new(queue)?;
        let ListOptions { state, tag, limit, cursor } = options;
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit", format!("{limit} is outside 1 to 1000")));
        }
        let mut request = ListRequest::new(queue, state, limit, cursor);
        if let Some(tag) = tag {
            request = request.tagged(Tag::new(tag)?);
        }
        self.inner.store.list(request).await
    }

    /// Counts for one queue (zero counts when unknown), or for every queue.
    pub async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        let queue = queue.map(QueueName::new).transpose()?;
        self.inner.store.stats(queue.as_ref()).await
    }

    /// Puts a dead task back to work, due now with attempts reset.
    pub async fn retry_dead(&self, queue: &str, key: &str) -> Result<Task> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        let task = self.inner.store.retry_dead(&queue, &key, self.now()).await?;
        let task = task.ok_or_else(|| Error::NotFound(format!("dead task '{key}' in queue '{queue}'")))?;
        self.waker(&queue).offer(Some(task.due_at));
        Ok(task)
    }

    /// Puts the queue's dead tasks back to work, due now with attempts reset: all of
    /// them, those carrying a tag, or those among some keys (at most
    /// [`Limits::max_batch`], field `keys`). In batches, each atomic; how many.
    pub async fn retry_dead_many(&self, queue: &str, selection: DeadSelection) -> Result<u64> {
        self.check_running()?;
        let queue = QueueName::new(queue)?;
        let walks = match selection {
            DeadSelection::Keys(mut keys) => {
                let limit = self.inner.config.limits.max_batch;
                if keys.len() > limit {
                    return Err(Error::invalid(
                        "keys",
                        format!("{} keys is over the batch limit of {limit}", keys.len()),
                    ));
                }
                keys.sort();
                keys.dedup();
                keys.chunks(DEAD_BATCH as usize).map(|chunk| DeadSelection::Keys(chunk.to_vec())).collect()
            }
            other => vec![other],
        };
        let now = self.now();
        let mut retried = 0;
        for selection in walks {
            let mut request = RetryDeadRequest::new(queue.clone(), selection, DEAD_BATCH, now);
            loop {
                let batch = self.inner.store.retry_dead_batch(request.clone()).await?;
                retried += batch.retried;
                if batch.retried > 0 {
                    self.waker(&queue).offer(Some(now));
                }
                match batch.next_cursor {
                    Some(cursor) => request = request.after(cursor),
                    None => break,
                }
            }
        }
        Ok(retried)
    }

    /// Deletes a dead task.
    pub async fn delete_dead(&self, queue: &str, key: &str) -> Result<()> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        if self.inner.store.delete_dead(&queue, &key).await? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("dead task '{key}' in queue '{queue}'")))
        }
    }

    /// Leases due tasks of `queue`. With `wait`, holds on until a task falls due or
    /// `wait` passes (then answers an empty list); woken by the engine, never polling.
    pub async fn lease(&self, queue: &str, options: LeaseOptions) -> Result<Vec<Lease>> {
        self.lease_cancellable(queue, options, &CancellationToken::new()).await
    }

    /// [`Engine::lease`] that also stops waiting when `cancel` fires, answering an
    /// empty list. Cancelling never loses leases: a store call already under way
    /// completes and its leases are returned, whereas dropping the future of
    /// [`Engine::lease`] mid-call would leave them to expire. For servers whose client
    /// may go away during a long poll.
    pub async fn lease_cancellable(
        &self,
        queue: &str,
        options: LeaseOptions,
        cancel: &CancellationToken,
    ) -> Result<Vec<Lease>> {
        let queue = QueueName::new(queue)?;
        options.validate()?;
        let deadline = self.now().saturating_add(options.wait);
        self.lease_until(&queue, options.max, options.lease_for, deadline, Some(cancel)).await
    }

    /// The heart of every consumer: lease when the queue's wake time has come, else
    /// sleep until it, an earlier offer, `deadline`, or `cancel`.
    pub(crate) async fn lease_until(
        &self,
        queue: &QueueName,
        max: u32,
        lease_for: Duration,
        deadline: Timestamp,
        cancel: Option<&CancellationToken>,
    ) -> Result<Vec<Lease>> {
        let waker = self.waker(queue);
        let _waiting = self.inner.metrics.waiting(queue);
        loop {
            self.check_running()?;
            let changed = waker.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.now();
            let wake_at = waker.get();
            if wake_at.is_some_and(|at| at <= now) {
                waker.take();
                match self.inner.store.lease(LeaseRequest::new(queue.clone(), max, lease_for, now)).await {
                    Ok(batch) => {
                        waker.offer(batch.next_due);
                        waker.record_lags(now, &batch.leases);
                        self.inner.metrics.leased(queue, now, &batch.leases);
                        if let Some(first) = batch.leases.first() {
                            self.inner.reaper_wake.offer(Some(first.expires_at));
                            return Ok(batch.leases);
                        }
                        // Nothing leased yet the store says work is due (another
                        // consumer took it meanwhile, or a store lagging behind): let
                        // other tasks run before asking again, never spin.
                        tokio::task::yield_now().await;
                    }
                    Err(e) => {
                        waker.offer(Some(now.saturating_add(Duration::from_secs(1))));
                        return Err(e);
                    }
                }
                continue;
            }
            if now >= deadline {
                return Ok(Vec::new());
            }
            let until = wake_at.map_or(deadline, |at| at.min(deadline));
            let stopping = self.inner.stopping.cancelled();
            let cancelled = async {
                match cancel {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.inner.timer.sleep_until(until) => {}
                _ = &mut changed => {}
                _ = stopping => return Err(Error::ShuttingDown),
                _ = cancelled => return Ok(Vec::new()),
            }
        }
    }

    /// Acknowledges a lease by token (pull workers): reads the task, turns `outcome`
    /// into a completion by its policies, and applies it if the lease is still live.
    pub async fn ack(&self, token: &LeaseToken, outcome: Outcome) -> Result<()> {
        let task = self.inner.store.get(&token.queue, &token.key).await?;
        let now = self.now();
        match task {
            Some(task) if token.is_live_for(&task, now) => self.complete(token, &task, outcome).await,
            _ => Err(Error::LeaseLost),
        }
    }

    /// Completes `lease` with `outcome` using the task as it was leased: repeats are
    /// re-armed, failures retried with backoff or sent to `dead`, atomically with the
    /// ack. [`Error::LeaseLost`] if the lease is no longer live.
    pub async fn complete(&self, token: &LeaseToken, task: &Task, outcome: Outcome) -> Result<()> {
        let now = self.now();
        let handler_done = matches!(outcome, Outcome::Done);
        let completion = completion_for(task, outcome, now, rand::random::<f64>());
        let finished = Finished::of(&completion, handler_done);
        let next_due = match &completion {
            Completion::Retry { at, .. } | Completion::Reschedule { at } => Some(*at),
            _ => None,
        };
        self.inner.store.complete(CompleteRequest::new(token.clone(), completion, now)).await?;
        self.inner.metrics.completed(token, task, finished, now);
        self.waker(&token.queue).offer(next_due);
        Ok(())
    }

    /// Many acks by token, each applied or refused on its own.
    pub async fn ack_many(&self, acks: Vec<(LeaseToken, Outcome)>) -> Result<Vec<Result<()>>> {
        let mut results: Vec<Option<Result<()>>> = Vec::with_capacity(acks.len());
        let mut requests = Vec::with_capacity(acks.len());
        let mut offers = Vec::with_capacity(acks.len());
        let mut finished = Vec::with_capacity(acks.len());
        // Every task is read at once (one pipelined round trip on a remote store), since
        // the completion of each depends on its policies as stored.
        let tasks = futures_util::future::try_join_all(
            acks.iter().map(|(token, _)| self.inner.store.get(&token.queue, &token.key)),
        )
        .await?;
        let now = self.now();
        for ((token, outcome), task) in acks.into_iter().zip(tasks) {
            match task {
                Some(task) if token.is_live_for(&task, now) => {
                    let handler_done = matches!(outcome, Outcome::Done);
                    let completion = completion_for(&task, outcome, now, rand::random::<f64>());
                    finished.push((token.clone(), Finished::of(&completion, handler_done), task, now));
                    if let Completion::Retry { at, .. } | Completion::Reschedule { at } = &completion {
                        offers.push((token.queue.clone(), *at));
                    }
                    requests.push(CompleteRequest::new(token, completion, now));
                    results.push(None);
                }
                _ => results.push(Some(Err(Error::LeaseLost))),
            }
        }
        let applied = self.inner.store.complete_many(requests).await?;
        for (result, (token, finished, task, now)) in applied.iter().zip(finished) {
            if result.is_ok() {
                self.inner.metrics.completed(&token, &task, finished, now);
            }
        }
        let mut applied = applied.into_iter();
        for (queue, at) in offers {
            self.waker(&queue).offer(Some(at));
        }
        Ok(results
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|| applied.next().unwrap_or(Err(Error::LeaseLost))))
            .collect())
    }

    /// Extends a live lease to `lease_for` from now; the new expiry.
    pub async fn extend(&self, token: &LeaseToken, lease_for: Duration) -> Result<Timestamp> {
        if lease_for < Duration::from_secs(1) || lease_for > Duration::from_secs(12 * 3600) {
            return Err(Error::invalid("lease", "a lease lasts from 1s to 12h"));
        }
        self.inner.store.extend(token, lease_for, self.now()).await
    }

    /// Gives a live lease back untried; the task is due again at once.
    pub async fn release(&self, token: &LeaseToken) -> Result<()> {
        self.inner.store.release(token, self.now()).await?;
        self.inner.metrics.released(token);
        self.waker(&token.queue).offer(Some(Timestamp::EPOCH));
        Ok(())
    }

    /// Ends expired leases whenever the earliest one expires.
    async fn run_reaper(self) {
        let mut failures = 0u32;
        loop {
            let wake = &self.inner.reaper_wake;
            let changed = wake.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.now();
            if wake.get().is_some_and(|at| at <= now) {
                wake.take();
                match self.inner.store.reap(now, self.inner.config.reap_batch).await {
                    Ok(result) => {
                        failures = 0;
                        self.inner.metrics.reaped(&result, now);
                        for reaped in &result.reaped {
                            tracing::info!(queue = %reaped.queue, key = %reaped.key, state = %reaped.state, "lease expired");
                            if reaped.state == TaskState::Scheduled {
                                self.waker(&reaped.queue).offer(Some(now));
                            }
                        }
                        let more = result.reaped.len() >= self.inner.config.reap_batch as usize;
                        wake.offer(if more { Some(now) } else { result.next_expiry });
                    }
                    Err(e) => {
                        failures += 1;
                        if failures == 1 {
                            tracing::warn!(error = %e, "reaper cannot reach the store; retrying");
                        }
                        let backoff = Duration::from_millis(100u64 << failures.min(6));
                        wake.offer(Some(now.saturating_add(backoff)));
                    }
                }
                continue;
            }
            let sleep = async {
                match wake.get() {
                    Some(at) => self.inner.timer.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = &mut changed => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Deletes the dead tasks of each queue with a retention once they are due to go,
    /// sleeping between looks (see the module docs).
    async fn run_sweeper(self) {
        let now = self.now();
        let mut queues: Vec<(QueueName, Duration, Timestamp)> =
            self.inner.config.dead_retention.iter().map(|(queue, keep)| (queue.clone(), *keep, now)).collect();
        let mut failures = 0u32;
        loop {
            let now = self.now();
            for (queue, keep, next) in queues.iter_mut().filter(|(_, _, next)| *next <= now) {
                match self.sweep(queue, *keep, now).await {
                    Ok(at) => {
                        failures = 0;
                        *next = at;
                    }
                    Err(e) => {
                        failures += 1;
                        if failures == 1 {
                            tracing::warn!(queue = %queue, error = %e, "dead-task retention cannot reach the store; retrying");
                        }
                        *next = now.saturating_add(Duration::from_millis(100u64 << failures.min(6)));
                    }
                }
                if self.inner.stopping.is_cancelled() {
                    return;
                }
            }
            let Some(wake) = queues.iter().map(|(_, _, next)| *next).min() else { return };
            tokio::select! {
                _ = self.inner.timer.sleep_until(wake) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Deletes `queue`'s dead tasks that died `keep` or longer before `now`; when to
    /// look again: once the earliest dead task left is due to go, within
    /// [`MAX_SWEEP_WAIT`].
    async fn sweep(&self, queue: &QueueName, keep: Duration, now: Timestamp) -> Result<Timestamp> {
        let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        let died_by = Timestamp::from_millis(now.as_millis().saturating_sub(keep_ms));
        loop {
            let swept = self.inner.store.sweep_dead(SweepRequest::new(queue.clone(), died_by, DEAD_BATCH)).await?;
            if swept.deleted > 0 {
                tracing::info!(queue = %queue, deleted = swept.deleted, "deleted dead tasks past their retention");
            }
            let more_due = swept.oldest_death.is_some_and(|died| died <= died_by);
            if !more_due || swept.deleted == 0 || self.inner.stopping.is_cancelled() {
                // A task dying from now on dies after `now`: it is due to go after this.
                let due = swept.oldest_death.unwrap_or(now).saturating_add(keep);
                let soonest = now.saturating_add(MIN_SWEEP_WAIT);
                return Ok(due.clamp(soonest, now.saturating_add(MAX_SWEEP_WAIT)));
            }
            // More are due: let other tasks run between batches.
            tokio::task::yield_now().await;
        }
    }

    /// Passes other processes' wake-ups to the queues this engine serves, and looks at
    /// every such queue and for expired leases each `safety_poll` in case a wake-up
    /// was lost.
    async fn follow_peers(self, peers: Peers) {
        use tokio::sync::broadcast::error::RecvError;
        let Peers { mut wakeups, safety_poll, mut resets, .. } = peers;
        let mut next_poll = self.now().saturating_add(safety_poll);
        let mut notifications = true;
        loop {
            let wakeup = async { if notifications { wakeups.recv().await } else { std::future::pending().await } };
            let reset = async {
                match resets.as_mut() {
                    Some(resets) => resets.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                received = wakeup => match received {
                    Ok(wakeup) => self.offer_known(&wakeup.queue, wakeup.due_at),
                    Err(RecvError::Lagged(_)) => self.look_everywhere(),
                    Err(RecvError::Closed) => notifications = false,
                },
                received = reset => match received {
                    Ok(reset) => {
                        self.inner.metrics.store_reset(reset);
                        // What this engine believed due next belonged to the old data.
                        self.look_everywhere();
                    }
                    Err(RecvError::Lagged(missed)) => self.inner.metrics.store_resets_missed(missed),
                    Err(RecvError::Closed) => resets = None,
                },
                _ = self.inner.timer.sleep_until(next_poll) => {
                    self.look_everywhere();
                    next_poll = self.now().saturating_add(safety_poll);
                }
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Lowers the wake time of `queue` if this engine serves it (has a consumer or
    /// wrote to it); other queues are none of its business.
    fn offer_known(&self, queue: &QueueName, at: Timestamp) {
        let state = self.inner.queues.lock().expect("queues lock poisoned").get(queue).cloned();
        if let Some(state) = state {
            state.offer(Some(at));
        }
    }

    /// Wakes every consumer and the reaper to ask the store afresh.
    fn look_everywhere(&self) {
        let now = self.now();
        let states: Vec<Arc<QueueState>> =
            self.inner.queues.lock().expect("queues lock poisoned").values().cloned().collect();
        for state in states {
            state.offer(Some(now));
        }
        self.inner.reaper_wake.offer(Some(now));
    }

    /// Wakes the reaper: a lease may expire at `at`.
    pub(crate) fn lease_expires(&self, at: Timestamp) {
        self.inner.reaper_wake.offer(Some(at));
    }

    /// Whether [`Engine::shutdown`] has begun.
    pub fn is_stopping(&self) -> bool {
        self.inner.stopping.is_cancelled()
    }

    /// Stops the reaper, the timer and consumers waiting in [`Engine::lease`], then closes the
    /// store, making every write durable. Stop workers first
    /// ([`RunningWorker::shutdown`](crate::RunningWorker::shutdown)).
    pub async fn shutdown(&self) -> Result<()> {
        self.inner.stopping.cancel();
        let reaper = self.inner.reaper.lock().expect("reaper lock poisoned").take();
        let mut background = std::mem::take(&mut *self.inner.background.lock().expect("background lock poisoned"));
        background.extend(reaper);
        for task in background {
            let _ = task.await;
        }
        self.inner.store.close().await
    }
}

/// Per-queue state: its wake-up and a window of recent fire lags.
#[derive(Debug, Default)]
pub(crate) struct QueueState {
    wake: WakeAt,
    lags: Mutex<LagWindow>,
}

impl std::ops::Deref for QueueState {
    type Target = WakeAt;
    fn deref(&self) -> &WakeAt {
        &self.wake
    }
}

impl QueueState {
    fn record_lags(&self, now: Timestamp, leases: &[Lease]) {
        if leases.is_empty() {
            return;
        }
        let mut lags = self.lags.lock().expect("lag lock poisoned");
        for lease in leases {
            lags.push(now.saturating_since(lease.task.due_at));
        }
    }
}

/// The last [`LagWindow::SIZE`] fire lags, in milliseconds.
#[derive(Debug, Default)]
struct LagWindow {
    samples: std::collections::VecDeque<u64>,
}

impl LagWindow {
    const SIZE: usize = 1024;

    fn push(&mut self, lag: Duration) {
        if self.samples.len() == Self::SIZE {
            self.samples.pop_front();
        }
        self.samples.push_back(u64::try_from(lag.as_millis()).unwrap_or(u64::MAX));
    }

    fn summary(&self) -> Option<LagSummary> {
        if self.samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = self.samples.iter().copied().collect();
        sorted.sort_unstable();
        let at = |p: usize| sorted[(sorted.len() - 1) * p / 100];
        Some(LagSummary { p50_ms: at(50), p99_ms: at(99), samples: sorted.len() })
    }
}

/// Percentiles of recent fire lag (lease time − due time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LagSummary {
    pub p50_ms: u64,
    pub p99_ms: u64,
    /// How many leases the figures cover (at most 1,024, the most recent).
    pub samples: usize,
}

/// The size of a payload as JSON text.
fn payload_size(payload: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, payload);
    counter.0
}

pub use crate::transitions::completion_for;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_window_keeps_the_most_recent_samples_and_reports_percentiles() {
        let mut window = LagWindow::default();
        assert_eq!(window.summary(), None);
        for ms in 0..2000u64 {
            window.push(Duration::from_millis(ms));
        }
        let summary = window.summary().unwrap();
        assert_eq!(summary.samples, LagWindow::SIZE);
        // The window holds 976..=1999: the oldest samples were dropped.
        assert_eq!(summary.p50_ms, 976 + 1023 / 2);
        assert_eq!(summary.p99_ms, 976 + 1023 * 99 / 100);
    }
}
