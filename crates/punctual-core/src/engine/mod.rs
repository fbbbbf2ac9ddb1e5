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
//! A store other processes write too (Redis) reports their writes as [`Peers`](crate::Peers)
//! wake-ups; the engine passes them on and, since a notification can be lost, also
//! looks at each queue it serves every `safety_poll`.
//!
//! Queues with a dead-task retention ([`EngineConfig::dead_retention`] at start, then
//! [`Engine::set_dead_retention`]) are swept by one more loop on the timer: it deletes
//! their dead tasks that died longer ago than the retention, in batches, then sleeps
//! until the earliest dead task left is due to go (a task that dies later goes later
//! still), at most [`MAX_SWEEP_WAIT`], so a queue with nothing to delete costs one
//! store call per wait. A queue whose retention is set anew is looked at again at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::events::{Bus, Event, EventStream, Observer};
use crate::model::QueueName;
use crate::policy::Rate;
use crate::store::Store;
use crate::target::Lane;
use crate::time::Timestamp;
use crate::timed::Timed;
use crate::timer::Timer;
use crate::wake::WakeAt;

mod business_time;
mod calendars;
mod config;
mod consumer;
mod firings;
mod outbox;
mod peers;
mod reaper;
mod records;
mod sweeper;
mod tasks;
mod watchdog;

pub use crate::transitions::completion_for;
pub use calendars::{CalendarEntry, CalendarSet};
pub use config::{
    EngineConfig, LeaseOptions, Limits, ListOptions, MAX_LEASE, MAX_LEASE_BATCH, MAX_LIST_LIMIT, MAX_SWEEP_WAIT,
    MAX_WAIT, MIN_LEASE, QueueDefaults,
};
pub(crate) use consumer::{LeaseWait, QueueState};
pub use outbox::OutboxCall;
pub use records::RECORDS_POLL;
pub use watchdog::WatchdogConfig;

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
    store: Timed<S>,
    /// Who hears the engine's events.
    bus: Arc<Bus>,
    config: EngineConfig,
    queues: Mutex<HashMap<QueueName, Arc<QueueState>>>,
    /// The config's per-queue task defaults ([`EngineConfig::queues`] at start, then
    /// as [`Engine::set_config_queues`] last set them).
    config_queues: RwLock<HashMap<QueueName, QueueDefaults>>,
    /// How long each queue's histories are kept ([`EngineConfig::history_retention`] at
    /// start, then as [`Engine::set_history_retention`] last set them).
    history_retention: RwLock<HashMap<QueueName, std::time::Duration>>,
    /// How long each queue's dead tasks are kept ([`EngineConfig::dead_retention`] at
    /// start, then as [`Engine::set_dead_retention`] last set them); the sweeper
    /// watches it.
    dead_retention: tokio::sync::watch::Sender<HashMap<QueueName, std::time::Duration>>,
    /// Task defaults set at run time, over the config's (see `queues`).
    run_time_defaults: RwLock<HashMap<QueueName, QueueDefaults>>,
    /// The store's queue records as last read, and whether they were read yet.
    records: records::Records,
    /// The store's live calendars as last read.
    calendars: calendars::Calendars,
    reaper_wake: WakeAt,
    /// The queues known to hold tasks with a target: written here, or woken by another
    /// process for their target lane (see [`Engine::watch_target_queues`]).
    target_queues: tokio::sync::watch::Sender<std::collections::BTreeSet<QueueName>>,
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
        let bus = Arc::new(Bus::default());
        let calendars = calendars::Calendars::new(&config.calendars);
        for observer in &config.observers.0 {
            bus.observe(Arc::clone(observer));
        }
        let engine = Engine {
            inner: Arc::new(Inner {
                store: Timed::new(store, Arc::clone(&bus)),
                bus,
                config_queues: RwLock::new(config.queues.clone()),
                history_retention: RwLock::new(config.history_retention.clone()),
                dead_retention: tokio::sync::watch::Sender::new(config.dead_retention.clone()),
                config,
                queues: Mutex::new(HashMap::new()),
                run_time_defaults: RwLock::new(HashMap::new()),
                records: records::Records::default(),
                calendars,
                reaper_wake: WakeAt::default(),
                target_queues: tokio::sync::watch::channel(std::collections::BTreeSet::new()).0,
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
        let follower = tokio::spawn(engine.clone().follow_queue_records());
        engine.inner.background.lock().expect("background lock poisoned").push(follower);
        if let Some(config) = engine.inner.config.watchdog {
            tokio::spawn(engine.clone().run_watchdog(config));
        }
        let sweeper = tokio::spawn(engine.clone().run_history_sweeper());
        engine.inner.background.lock().expect("background lock poisoned").push(sweeper);
        let sweeper = tokio::spawn(engine.clone().run_sweeper());
        engine.inner.background.lock().expect("background lock poisoned").push(sweeper);
        engine
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        self.inner.store.inner()
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

    /// The queues this engine knows to hold tasks with a target, growing: those it
    /// scheduled such a task into, and those another process sharing the store woke
    /// for their target lane. A server delivers targets for each (add the queues that
    /// held tasks when it started: their targets are not known until leased).
    pub fn watch_target_queues(&self) -> tokio::sync::watch::Receiver<std::collections::BTreeSet<QueueName>> {
        self.inner.target_queues.subscribe()
    }

    /// Notes that `queue` holds tasks with a target.
    pub(crate) fn note_target_queue(&self, queue: &QueueName) {
        self.inner.target_queues.send_if_modified(|queues| queues.insert(queue.clone()));
    }

    /// Stops handing out the queue's tasks in this process (`true`), or starts again:
    /// leases and workers' deliveries wait (long polls until their deadline), while
    /// schedules, cancels and reads go on; on resume, waiting consumers look at once and
    /// take what fell due meanwhile, in due order. Running deliveries are not touched.
    pub fn set_paused(&self, queue: &QueueName, paused: bool) {
        self.queue_state(queue).set_paused(paused);
    }

    /// Whether the queue is paused in this process.
    pub fn is_paused(&self, queue: &QueueName) -> bool {
        self.inner.queues.lock().expect("queues lock poisoned").get(queue).is_some_and(|q| q.is_paused())
    }

    /// Calls `observer` inline for every event from now on (see [`crate::events`]).
    pub fn observe(&self, observer: impl Observer) {
        self.inner.bus.observe(Arc::new(observer));
    }

    /// A stream of the events from now on (see [`crate::events`]).
    pub fn subscribe(&self) -> EventStream {
        self.inner.bus.subscribe()
    }

    /// Sleeps `d` on the engine's clock itself, not its timer: the worker's lease
    /// heartbeat waits here, and must keep renewing leases even if the timer's driver
    /// stalled (as the watchdog does), or a healthy handler's task would fire twice.
    pub(crate) async fn sleep(&self, d: std::time::Duration) {
        self.clock().sleep_until(self.now().saturating_add(d)).await;
    }

    pub(crate) fn publish(&self, event: Event) {
        self.inner.bus.publish(event);
    }

    /// The queues with consumers waiting for (or leasing from) them now, and how many:
    /// workers' dispatchers with free slots and long polls, for the queue's tasks
    /// without a target (a server's deliveries to targets are not counted).
    pub fn waiting_consumers(&self) -> Vec<(QueueName, usize)> {
        let queues = self.inner.queues.lock().expect("queues lock poisoned");
        let mut waiting: Vec<(QueueName, usize)> = queues
            .iter()
            .map(|(queue, state)| (queue.clone(), state.waiting_in(Lane::Handler)))
            .filter(|(_, n)| *n > 0)
            .collect();
        waiting.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        waiting
    }

    /// The defaults of the queue's tasks: those set at run time
    /// ([`Engine::set_queue_defaults`]), else the config's, else the engine's.
    fn defaults(&self, queue: &QueueName) -> QueueDefaults {
        self.with_defaults(queue, QueueDefaults::clone)
    }

    /// The queue's `group_concurrency` and `group_rate`, as [`Engine::defaults`] finds
    /// them.
    fn group_limits(&self, queue: &QueueName) -> (Option<u32>, Option<Rate>) {
        self.with_defaults(queue, |defaults| (defaults.group_concurrency, defaults.group_rate))
    }

    /// `read` of the queue's defaults, as [`Engine::defaults`] finds them.
    fn with_defaults<T>(&self, queue: &QueueName, read: impl FnOnce(&QueueDefaults) -> T) -> T {
        if let Some(defaults) = self.inner.run_time_defaults.read().expect("defaults lock poisoned").get(queue) {
            return read(defaults);
        }
        let config = self.inner.config_queues.read().expect("config queues lock poisoned");
        read(config.get(queue).unwrap_or(&self.inner.config.defaults))
    }

    /// Replaces the config's per-queue defaults ([`EngineConfig::queues`]) with
    /// `queues`, as a server does when it reads its config file again: the next
    /// schedule and lease of each queue take them; those set at run time
    /// ([`Engine::set_queue_defaults`]) still win. The consumers of a queue whose
    /// defaults changed look at once, since a group limit loosened leaves room that no
    /// due time announces.
    pub fn set_config_queues(&self, queues: HashMap<QueueName, QueueDefaults>) {
        let changed: std::collections::BTreeSet<QueueName> = {
            let mut config = self.inner.config_queues.write().expect("config queues lock poisoned");
            let changed = config.keys().chain(queues.keys()).filter(|q| config.get(*q) != queues.get(*q));
            let changed = changed.cloned().collect();
            *config = queues;
            changed
        };
        let states = self.inner.queues.lock().expect("queues lock poisoned");
        for state in changed.iter().filter_map(|queue| states.get(queue)) {
            state.look_now();
        }
    }

    /// A lease of the queue ended (acked, released, cancelled): where groups are
    /// limited, a group may have room again, which no due time announces, so the
    /// queue's consumers look.
    fn lease_ended(&self, queue: &QueueName, grouped: bool) {
        if grouped && self.group_limits(queue).0.is_some() {
            self.waker(queue).offer_both(Some(Timestamp::EPOCH));
        }
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
