//! How an engine is configured: limits on input, per-queue defaults, the options of
//! a list and of a lease, and the constants of the dead-task sweeps.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::WatchdogConfig;
use crate::calendar::{Calendar, CalendarName};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::events::{Observer, Observers};
use crate::model::{QueueName, TaskState};
use crate::policy::{Backoff, DEFAULT_MAX_ATTEMPTS, Rate, Repeat};

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
    /// At most this many live leases per group of the queue (`group_concurrency`);
    /// `None`: no limit. Not a task default but the queue's rule, kept here because it
    /// travels with them (config file, settings at run time).
    pub group_concurrency: Option<u32>,
    /// At most `count` leases of each group's tasks in any window of `per`
    /// (`group_rate`), across every node sharing the store; `None`: no rate. The
    /// queue's rule, like `group_concurrency`.
    pub group_rate: Option<Rate>,
}

impl Default for QueueDefaults {
    /// 20 attempts; backoff 1 s doubling up to 1 h; no repeat; no group limit or rate.
    fn default() -> QueueDefaults {
        QueueDefaults {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff: Backoff::default(),
            repeat: None,
            group_concurrency: None,
            group_rate: None,
        }
    }
}

/// How an engine behaves. Start from `EngineConfig::default()` and set fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    pub limits: Limits,
    /// Defaults for queues not listed in `queues`.
    pub defaults: QueueDefaults,
    /// Per-queue defaults, from the start ([`Engine::set_config_queues`](crate::Engine::set_config_queues)
    /// replaces them).
    pub queues: HashMap<QueueName, QueueDefaults>,
    /// Expired leases ended per reaper pass.
    pub reap_batch: u32,
    /// The clock; the system clock unless a test sets another.
    pub clock: Arc<dyn Clock>,
    /// The watchdog of stalled loops; `None` turns it off.
    pub watchdog: Option<WatchdogConfig>,
    /// Per queue, how long dead tasks are kept after they died; a queue not listed
    /// keeps them until they are retried or deleted. At start:
    /// [`Engine::set_dead_retention`](crate::Engine::set_dead_retention) replaces them.
    pub dead_retention: HashMap<QueueName, Duration>,
    /// Per queue, how long its tasks' histories are kept (see [`crate::history`]); a
    /// queue not listed keeps them [`DEFAULT_HISTORY_RETENTION`](crate::history::DEFAULT_HISTORY_RETENTION).
    /// At start: [`Engine::set_history_retention`](crate::Engine::set_history_retention)
    /// replaces them.
    pub history_retention: HashMap<QueueName, Duration>,
    /// Observers that hear every event from the start ([`EngineConfig::observe`]).
    pub observers: Observers,
    /// Calendars of the server's config file, from the start: served beside the
    /// store's, which cannot change them ([`Engine::change_calendar`](crate::Engine::change_calendar)
    /// refuses their names); [`Engine::set_config_calendars`](crate::Engine::set_config_calendars)
    /// replaces them.
    pub calendars: BTreeMap<CalendarName, Arc<Calendar>>,
    /// This node's name among those sharing the store, told with each lease it takes
    /// (the history's `leased` events); `None`: none told.
    pub node: Option<Arc<str>>,
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
            history_retention: HashMap::new(),
            observers: Observers::default(),
            calendars: BTreeMap::new(),
            node: None,
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
    /// Calls `observer` inline for every event, from the engine's start on (see
    /// [`crate::events`]; [`Engine::observe`](crate::Engine::observe) adds one later).
    pub fn observe(mut self, observer: impl Observer) -> EngineConfig {
        self.observers.0.push(Arc::new(observer));
        self
    }
    /// Deletes the queue's dead tasks once they have been dead for `keep`.
    pub fn dead_retention(mut self, queue: QueueName, keep: Duration) -> EngineConfig {
        self.dead_retention.insert(queue, keep);
        self
    }
    /// Keeps the queue's tasks' histories for `keep` after their latest event.
    pub fn history_retention(mut self, queue: QueueName, keep: Duration) -> EngineConfig {
        self.history_retention.insert(queue, keep);
        self
    }
    /// Names this node `node` in the history of the leases it takes.
    pub fn node(mut self, node: impl Into<Arc<str>>) -> EngineConfig {
        self.node = Some(node.into());
        self
    }
    /// Serves `calendar` as `name`, from the config file.
    pub fn calendar(mut self, name: CalendarName, calendar: Calendar) -> EngineConfig {
        self.calendars.insert(name, Arc::new(calendar));
        self
    }
}

/// Dead tasks a store looks at per call of a bulk retry or a retention sweep.
pub(super) const DEAD_BATCH: u32 = 500;

/// How often the history sweeper looks at every queue's histories.
pub(super) const HISTORY_SWEEP_EVERY: Duration = Duration::from_secs(600);

/// The longest the retention sweeper sleeps between two looks at a queue, whatever the
/// store said: a dead task that died earlier than any this process could know of (on a
/// store shared with processes whose clocks differ) waits at most this much longer.
pub const MAX_SWEEP_WAIT: Duration = Duration::from_secs(3600);

/// The shortest the retention sweeper waits between two looks at a queue: a store that
/// keeps reporting a dead task due to go that it does not delete is asked once a second,
/// not in a loop.
pub(super) const MIN_SWEEP_WAIT: Duration = Duration::from_secs(1);

/// Options of [`Engine::list`](crate::Engine::list).
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

/// Options of [`Engine::lease`](crate::Engine::lease).
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

    pub(super) fn validate(&self) -> Result<()> {
        if !(1..=MAX_LEASE_BATCH).contains(&self.max) {
            return Err(Error::invalid("max", format!("{} is outside 1 to {MAX_LEASE_BATCH}", self.max)));
        }
        check_lease_for(self.lease_for)?;
        if self.wait > MAX_WAIT {
            return Err(Error::invalid("wait", "wait is at most 60s"));
        }
        Ok(())
    }
}

/// The most tasks one lease call hands out.
pub const MAX_LEASE_BATCH: u32 = 1000;
/// The most tasks one page of a listing holds.
pub const MAX_LIST_LIMIT: u32 = 1000;
/// The longest a lease call waits for a task to fall due.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// The shortest lease.
pub const MIN_LEASE: Duration = Duration::from_secs(1);
/// The longest lease.
pub const MAX_LEASE: Duration = Duration::from_secs(12 * 3600);

/// Refuses a lease length outside [`MIN_LEASE`]–[`MAX_LEASE`] (field `lease`).
pub(super) fn check_lease_for(lease_for: Duration) -> Result<()> {
    if (MIN_LEASE..=MAX_LEASE).contains(&lease_for) {
        Ok(())
    } else {
        Err(Error::invalid("lease", "a lease lasts from 1s to 12h"))
    }
}
