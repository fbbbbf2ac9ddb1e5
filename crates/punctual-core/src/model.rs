//! The task model: names that validate themselves, the task record, and what a caller
//! asks for when scheduling.
//!
//! Invariants: a [`QueueName`], [`TaskKey`] or [`Tag`] that exists is valid (the only
//! constructors check the rules of DESIGN.md), so stores never re-validate them. A
//! [`NewTask`] carries effective values only (queue defaults already applied).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::meta::TaskMeta;
use crate::policy::{Backoff, Repeat, Timing};
use crate::target::{Lane, Target};
use crate::time::Timestamp;
use crate::trace_context::TraceContext;
use crate::unique::Unique;

pub use crate::names::Actor;
use crate::names::string_newtype;
pub use crate::names::{CalendarName, QueueName};

/// A task's identity inside its queue, chosen by the caller: 1–512 bytes of UTF-8
/// without control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey(String);

impl TaskKey {
    /// The longest key, in bytes of UTF-8.
    pub const MAX_BYTES: usize = 512;

    /// Validates `key`.
    pub fn new(key: impl Into<String>) -> Result<TaskKey> {
        let key = key.into();
        check_text("key", &key, Self::MAX_BYTES)?;
        Ok(TaskKey(key))
    }
}
string_newtype!(TaskKey);

/// A label such as a workflow instance id; cancelling a tag cancels every task of the
/// queue carrying it. 1–256 bytes of UTF-8 without control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(String);

impl Tag {
    /// The longest tag, in bytes of UTF-8.
    pub const MAX_BYTES: usize = 256;
    /// The most tags one task may carry.
    pub const MAX_PER_TASK: usize = 32;

    /// Validates `tag`.
    pub fn new(tag: impl Into<String>) -> Result<Tag> {
        let tag = tag.into();
        check_text("tag", &tag, Self::MAX_BYTES)?;
        Ok(Tag(tag))
    }
}
string_newtype!(Tag);

/// A group of tasks in a queue — a customer, a tenant, a workflow instance — with the
/// rules of a [`Tag`]. A queue's `group_concurrency` bounds the live leases of each
/// group, and due tasks are handed out round robin between groups (see
/// [`Store::lease`](crate::Store::lease)): one group's backlog never starves another's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Group(String);

impl Group {
    /// The longest group name, in bytes of UTF-8.
    pub const MAX_BYTES: usize = 256;

    /// Validates `group`.
    pub fn new(group: impl Into<String>) -> Result<Group> {
        let group = group.into();
        check_text("group", &group, Self::MAX_BYTES)?;
        Ok(Group(group))
    }
}
string_newtype!(Group);

/// How urgent a task is among the tasks of its queue that are already due: 0 (the
/// default) to 9, higher first. It never makes a task fire before its due time: a lease
/// takes the due tasks of the highest priority first, each priority in due order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Priority(u8);

impl Priority {
    /// The default, and the lowest.
    pub const LOWEST: Priority = Priority(0);
    /// The highest.
    pub const HIGHEST: Priority = Priority(9);

    /// Validates `level` (0–9).
    pub fn new(level: u32) -> Result<Priority> {
        match u8::try_from(level) {
            Ok(level) if level <= Priority::HIGHEST.0 => Ok(Priority(level)),
            _ => Err(Error::invalid(
                "priority",
                format!("a priority is 0 (the default) to 9 (the most urgent), not {level}"),
            )),
        }
    }

    /// The level, 0–9.
    pub fn get(self) -> u8 {
        self.0
    }

    /// Every priority, the highest first: the order a lease takes due tasks in.
    pub fn highest_first() -> impl Iterator<Item = Priority> {
        (0..=Priority::HIGHEST.0).rev().map(Priority)
    }
}

impl TryFrom<u8> for Priority {
    type Error = Error;
    fn try_from(level: u8) -> Result<Priority> {
        Priority::new(level.into())
    }
}

impl From<Priority> for u8 {
    fn from(priority: Priority) -> u8 {
        priority.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

fn check_text(field: &str, text: &str, max_bytes: usize) -> Result<()> {
    if text.is_empty() || text.len() > max_bytes {
        return Err(Error::invalid(
            field,
            format!("a {field} is 1 to {max_bytes} bytes of UTF-8, this one has {} bytes", text.len()),
        ));
    }
    if let Some(bad) = text.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(
            field,
            format!("a {field} cannot contain control characters, found '{}'", bad.escape_default()),
        ));
    }
    Ok(())
}

/// Where a task is in its life. Done and cancelled tasks are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Waiting for `due_at` (or due and waiting for a handler).
    Scheduled,
    /// Handed to a handler until `lease_expires_at`.
    Leased,
    /// Gave up after `max_attempts`, or a handler said `fail`; kept for inspection.
    Dead,
}

impl TaskState {
    /// The lowercase name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Scheduled => "scheduled",
            TaskState::Leased => "leased",
            TaskState::Dead => "dead",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(text: &str) -> Result<TaskState> {
        match text {
            "scheduled" => Ok(TaskState::Scheduled),
            "leased" => Ok(TaskState::Leased),
            "dead" => Ok(TaskState::Dead),
            other => Err(Error::invalid("state", format!("'{other}' is not a state: use scheduled, leased or dead"))),
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored task, as the store returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Task {
    pub queue: QueueName,
    pub key: TaskKey,
    pub state: TaskState,
    /// When the current occurrence (or its next try) is due.
    pub due_at: Timestamp,
    pub payload: Value,
    /// Tries of the current occurrence that failed or whose lease expired.
    pub attempts: u32,
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub repeat: Option<Repeat>,
    pub tags: Vec<Tag>,
    /// Among the queue's due tasks, the higher are leased first.
    pub priority: Priority,
    /// The task's group, if any: its queue's group limits and turns apply.
    pub group: Option<Group>,
    /// Bumped each time the task is written by a caller (created = 1, each replace +1).
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub lease_expires_at: Option<Timestamp>,
    pub last_error: Option<String>,
    /// Where the server delivers the task; `None`: the queue's handler runs it.
    pub target: Option<Target>,
    /// The task's dedupe window, see [`Unique`].
    pub unique_for: Option<Unique>,
    /// Calendar, misfire, overlap and jitter (see [`Timing`]): in the API's task
    /// object, each policy is a field of its own with its effective value.
    #[serde(flatten, serialize_with = "Timing::serialize_effective")]
    pub timing: Timing,
    /// The trace of the request that scheduled the task (the last replace's): each
    /// delivery continues it. Left out of the API's task object when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<TraceContext>,
    /// Store bookkeeping, not part of the API's task object.
    #[serde(skip)]
    pub meta: TaskMeta,
}

impl Task {
    /// A task as first stored from `new`: `scheduled`, version 1, no attempts, created
    /// and updated at `now`. Stores build tasks with this and then set fields.
    pub fn from_new(new: NewTask, meta: TaskMeta, now: Timestamp) -> Task {
        Task {
            queue: new.queue,
            key: new.key,
            state: TaskState::Scheduled,
            due_at: new.due_at,
            payload: new.payload,
            attempts: 0,
            max_attempts: new.max_attempts,
            backoff: new.backoff,
            repeat: new.repeat,
            tags: new.tags,
            priority: new.priority,
            group: new.group,
            version: 1,
            created_at: now,
            updated_at: now,
            lease_expires_at: None,
            last_error: None,
            target: new.target,
            unique_for: new.unique_for,
            timing: new.timing,
            traceparent: new.traceparent,
            meta,
        }
    }

    /// Which leases may take the task: a task with a target only the server's.
    pub fn lane(&self) -> Lane {
        if self.target.is_some() { Lane::Target } else { Lane::Handler }
    }

    /// The id handlers use for idempotency, `<store>-<id in hex>-<version>-<occurrence>`:
    /// the same for every try of one occurrence, different for every other occurrence,
    /// replace or re-creation, and for every task of another store or of this store
    /// before it was emptied (see [`StoreId`](crate::StoreId)).
    pub fn delivery_id(&self) -> String {
        format!("{}-{:x}-{}-{}", self.meta.store, self.meta.id, self.version, self.meta.occurrence)
    }
}

/// What `schedule` does when the (queue, key) already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum IfExists {
    /// New due time, payload and policies; version bumped. A live lease of the old
    /// version can no longer be acknowledged.
    #[default]
    Replace,
    /// Leave the existing task untouched (idempotent create).
    Keep,
    /// Refuse with [`Error::Conflict`].
    Error,
}

impl TryFrom<String> for IfExists {
    type Error = Error;
    /// Parses `replace`, `keep` or `error`, with a message naming the choices.
    fn try_from(text: String) -> Result<IfExists> {
        match text.as_str() {
            "replace" => Ok(IfExists::Replace),
            "keep" => Ok(IfExists::Keep),
            "error" => Ok(IfExists::Error),
            _ => Err(Error::invalid(
                "if_exists",
                format!("'{text}' is not an if_exists mode: use replace, keep or error"),
            )),
        }
    }
}

/// When a task is due, as a caller says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum When {
    /// Due at once.
    #[default]
    Now,
    /// Due this long after the schedule call.
    After(Duration),
    /// Due at this instant (in the past means now).
    At(Timestamp),
}

impl When {
    /// The instant this says, for a call made at `now`: never before `now`.
    pub fn resolve(self, now: Timestamp) -> Timestamp {
        match self {
            When::Now => now,
            When::After(delay) => now.saturating_add(delay),
            When::At(at) => at.max(now),
        }
    }
}

/// What a caller asks for when scheduling one task. Policies left unset take the
/// queue's defaults. Build with [`TaskSpec::after`], [`TaskSpec::at`] or
/// [`TaskSpec::now`] and the setters.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TaskSpec {
    pub when: When,
    pub payload: Value,
    pub max_attempts: Option<u32>,
    pub backoff: Option<Backoff>,
    pub repeat: Option<Repeat>,
    pub tags: Vec<String>,
    /// 0 (the default) to 9, see [`Priority`]; checked when scheduled.
    pub priority: u8,
    /// The task's group (see [`Group`]); checked when scheduled.
    pub group: Option<String>,
    pub if_exists: IfExists,
    /// Delivered by the server to this HTTP target instead of the queue's handler.
    pub target: Option<Target>,
    /// `max_wait` of a debounced schedule (see [`NewTask::debounce`]).
    pub debounce: Option<Duration>,
    /// The task's dedupe window (see [`Unique`]); checked when scheduled.
    pub unique_for: Option<Unique>,
    /// Calendar, misfire, overlap and jitter (see [`Timing`]); checked when scheduled.
    pub timing: Timing,
    /// With a calendar and a due time: a time outside working hours moves to the
    /// calendar's next opening (`"align": "next_open"`).
    pub align_next_open: bool,
    /// The trace the task's deliveries continue (see [`Task::traceparent`]).
    pub traceparent: Option<TraceContext>,
}

impl TaskSpec {
    /// Due at once.
    pub fn now() -> TaskSpec {
        TaskSpec { payload: Value::Null, ..TaskSpec::default() }
    }
    /// Due `delay` from now.
    pub fn after(delay: Duration) -> TaskSpec {
        TaskSpec { when: When::After(delay), ..TaskSpec::now() }
    }
    /// Due at `at`.
    pub fn at(at: Timestamp) -> TaskSpec {
        TaskSpec { when: When::At(at), ..TaskSpec::now() }
    }
    /// The JSON the handler receives.
    pub fn payload(mut self, payload: Value) -> TaskSpec {
        self.payload = payload;
        self
    }
    /// Give up (dead) after this many failed tries of one occurrence.
    pub fn max_attempts(mut self, n: u32) -> TaskSpec {
        self.max_attempts = Some(n);
        self
    }
    /// How long to wait between tries.
    pub fn backoff(mut self, backoff: Backoff) -> TaskSpec {
        self.backoff = Some(backoff);
        self
    }
    /// Fire again after each successful occurrence.
    pub fn repeat(mut self, repeat: Repeat) -> TaskSpec {
        self.repeat = Some(repeat);
        self
    }
    /// Adds a tag (see [`Tag`]).
    pub fn tag(mut self, tag: impl Into<String>) -> TaskSpec {
        self.tags.push(tag.into());
        self
    }
    /// Leased before the queue's due tasks of lower priority (0–9, see [`Priority`]).
    pub fn priority(mut self, level: u8) -> TaskSpec {
        self.priority = level;
        self
    }
    /// Puts the task in `group` (see [`Group`]): at most the queue's
    /// `group_concurrency` tasks of one group are leased at once, and groups take turns.
    pub fn group(mut self, group: impl Into<String>) -> TaskSpec {
        self.group = Some(group.into());
        self
    }
    /// Debounces the schedule: a burst of schedules of this key ends in one firing,
    /// with the last payload, due at the last schedule's due time but never later than
    /// `max_wait` after the burst's first schedule. Replaces an existing task, so it
    /// goes with [`IfExists::Replace`] only.
    pub fn debounce(mut self, max_wait: Duration) -> TaskSpec {
        self.debounce = Some(max_wait);
        self
    }
    /// Holds the key for `unique.window` after the task completed (and died, with
    /// [`Unique::dead`]): a schedule of the key meanwhile is kept, creating nothing.
    pub fn unique_for(mut self, unique: Unique) -> TaskSpec {
        self.unique_for = Some(unique);
        self
    }
    /// Counts the task's time in `calendar` (see [`TaskSpec::timing`]): a delay is
    /// working time (whole days: working days), a due time needs
    /// [`TaskSpec::align_next_open`], neither is the next opening; a repeat runs in
    /// working time. The calendar is checked when scheduled.
    pub fn calendar(mut self, calendar: CalendarName) -> TaskSpec {
        self.timing.calendar = Some(calendar);
        self
    }
    /// A due time outside the calendar's working hours moves to its next opening.
    pub fn align_next_open(mut self) -> TaskSpec {
        self.align_next_open = true;
        self
    }
    /// Misfire, overlap and jitter policies (and the calendar), see [`Timing`].
    pub fn timing(mut self, timing: Timing) -> TaskSpec {
        self.timing = timing;
        self
    }
    /// What to do when the task already exists.
    pub fn if_exists(mut self, mode: IfExists) -> TaskSpec {
        self.if_exists = mode;
        self
    }
    /// Delivered by a server to `target` when due (see [`Target`]); pull workers and
    /// the queue's handler never see it.
    pub fn target(mut self, target: Target) -> TaskSpec {
        self.target = Some(target);
        self
    }
    /// Kept with the task so that its deliveries continue this trace.
    pub fn traceparent(mut self, context: TraceContext) -> TaskSpec {
        self.traceparent = Some(context);
        self
    }
}

/// A validated task to write, with effective policies, as the engine hands it to the
/// store.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewTask {
    pub queue: QueueName,
    pub key: TaskKey,
    pub due_at: Timestamp,
    pub payload: Value,
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub repeat: Option<Repeat>,
    pub tags: Vec<Tag>,
    pub priority: Priority,
    pub group: Option<Group>,
    pub if_exists: IfExists,
    pub target: Option<Target>,
    /// `max_wait` of a debounced schedule: over a scheduled task that a debounced
    /// schedule wrote and no lease took since, the task is replaced as usual but never
    /// due later than that first schedule's time plus `max_wait`; otherwise the write
    /// starts such a burst (due no later than now + `max_wait`).
    pub debounce: Option<Duration>,
    /// The task's dedupe window: when it completes for good (and, with
    /// [`Unique::dead`], when it dies), its key is held for the window.
    pub unique_for: Option<Unique>,
    /// Calendar, misfire, overlap and jitter (see [`Timing`]), kept with the task.
    pub timing: Timing,
    /// The time the first occurrence is scheduled for, before jitter: at or before
    /// `due_at`. Stores keep the earlier of it and the due time they write as the
    /// task's anchor ([`TaskMeta::anchor`](crate::TaskMeta)).
    pub scheduled_for: Timestamp,
    /// Who writes the task, for the history's `created` or `replaced` event.
    pub by: Option<Actor>,
    /// The trace the task's deliveries continue; a replace writes its own (none: the
    /// task keeps none).
    pub traceparent: Option<TraceContext>,
}

impl NewTask {
    /// A task with the built-in default policies (for stores' tests and tools).
    pub fn new(queue: QueueName, key: TaskKey, due_at: Timestamp) -> NewTask {
        NewTask {
            queue,
            key,
            due_at,
            payload: Value::Null,
            max_attempts: crate::policy::DEFAULT_MAX_ATTEMPTS,
            backoff: Backoff::default(),
            repeat: None,
            tags: Vec::new(),
            priority: Priority::LOWEST,
            group: None,
            if_exists: IfExists::Replace,
            debounce: None,
            target: None,
            unique_for: None,
            timing: Timing::default(),
            scheduled_for: due_at,
            by: None,
            traceparent: None,
        }
    }

    /// Kept with the task so that its deliveries continue this trace.
    pub fn traceparent(mut self, context: TraceContext) -> NewTask {
        self.traceparent = Some(context);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::StoreId;

    #[test]
    fn queue_names_follow_the_rules() {
        for ok in ["order.cancel", "flow.express-return.chief-reminder", "a:b_c", "x"] {
            assert!(QueueName::new(ok).is_ok(), "{ok}");
        }
        assert!(QueueName::new("a".repeat(128)).is_ok());
        let too_long = QueueName::new("a".repeat(129)).unwrap_err();
        assert_eq!(too_long.field(), Some("queue"));
        assert!(QueueName::new("").is_err());
        let slash = QueueName::new("a/b").unwrap_err().to_string();
        assert!(slash.contains("'/'"), "{slash}");
        assert!(QueueName::new("ä").is_err());
    }

    #[test]
    fn keys_are_utf8_without_control_characters() {
        assert!(TaskKey::new("task-77@pi-9@zhang.wei").is_ok());
        assert!(TaskKey::new("订单/1234 with spaces").is_ok());
        assert!(TaskKey::new("é".repeat(256)).is_ok()); // 512 bytes
        assert!(TaskKey::new("é".repeat(257)).is_err());
        assert!(TaskKey::new("").is_err());
        let e = TaskKey::new("a\nb").unwrap_err();
        assert_eq!(e.field(), Some("key"));
        assert!(e.to_string().contains("\\n"), "{e}");
    }

    #[test]
    fn priorities_are_zero_to_nine_and_a_lease_looks_at_the_highest_first() {
        assert_eq!(Priority::default(), Priority::LOWEST);
        assert_eq!(Priority::new(9).unwrap(), Priority::HIGHEST);
        let refused = Priority::new(10).unwrap_err();
        assert!(matches!(&refused, Error::Invalid { field, .. } if field == "priority"), "{refused:?}");
        assert_eq!(Priority::highest_first().map(Priority::get).collect::<Vec<_>>(), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
        assert_eq!(serde_json::to_value(Priority::new(4).unwrap()).unwrap(), serde_json::json!(4));
        assert!(serde_json::from_value::<Priority>(serde_json::json!(12)).is_err());
    }

    #[test]
    fn delivery_ids_change_with_occurrence_version_and_store_but_not_attempts() {
        let q = QueueName::new("q").unwrap();
        let k = TaskKey::new("k").unwrap();
        let mut task = Task {
            queue: q,
            key: k,
            state: TaskState::Scheduled,
            due_at: Timestamp::EPOCH,
            payload: Value::Null,
            attempts: 0,
            max_attempts: 3,
            backoff: Backoff::default(),
            repeat: None,
            tags: vec![],
            priority: Priority::LOWEST,
            group: None,
            version: 1,
            created_at: Timestamp::EPOCH,
            updated_at: Timestamp::EPOCH,
            lease_expires_at: None,
            last_error: None,
            target: None,
            unique_for: None,
            timing: Timing::default(),
            traceparent: None,
            meta: TaskMeta::new(StoreId::from_bits(1), 0x7f, 0, 1, Timestamp::EPOCH),
        };
        let first = task.delivery_id();
        assert_eq!(first, "0000000000001-7f-1-1");
        task.attempts = 2;
        task.meta.fence = 9;
        assert_eq!(task.delivery_id(), first);
        task.meta.occurrence = 2;
        assert_ne!(task.delivery_id(), first);
        task.meta.occurrence = 1;
        task.version = 2;
        assert_ne!(task.delivery_id(), first);
        task.version = 1;
        task.meta.store = StoreId::from_bits(2);
        assert_ne!(task.delivery_id(), first, "the same task in another store is another delivery");
    }
}
