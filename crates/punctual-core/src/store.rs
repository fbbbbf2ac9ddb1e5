//! The storage seam. Every backend implements [`Store`]; the conformance suite in
//! `punctual-testkit` checks each method's contract as written here.
//!
//! Rules for every backend:
//! - Each method is atomic: it happens entirely or not at all, and a method that
//!   returned `Ok` is durable (it survives a crash of the process).
//! - Stores never read a clock: `now` comes in the request. Policy decisions (how long
//!   to back off, when a repeat fires next, whether a failure is the last) are made by
//!   the engine and arrive as a [`Completion`]; the store applies them.
//! - A lease is live while the task is `leased`, its id, version and fence equal the
//!   token's, and `now < lease_expires_at`. Only a live lease may be completed, extended
//!   or released; anything else is [`Error::LeaseLost`] and changes nothing.
//! - Ordering "in due order" is by `due_at`, ties broken by a stable store-defined
//!   order.
//! - Every task a store returns carries the store's identity in `meta.store`
//!   ([`StoreId`]): minted when the store is created, kept in it, the same for every
//!   process using it. A store found emptied gets a new one ([`StoreReset`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::{AuditAction, AuditEntry, AuditRequest};
use crate::calendar::{CalendarChangeRequest, CalendarRecord};
use crate::error::{Error, Result};
use crate::history::{AckOutcome, Actor, DeliveryReport, HistoryEvent};
use crate::identity::StoreId;
use crate::model::{Group, NewTask, QueueName, Tag, Task, TaskKey, TaskState};
use crate::outbox::OutboxRow;
use crate::policy::Rate;
use crate::target::Lane;
use crate::time::Timestamp;

/// What a schedule call did to one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScheduleOutcome {
    Created,
    Replaced,
    Kept,
}

/// What a task with a dedupe window left when it completed for good: a schedule of
/// `(queue, key)` before `unique_until` is kept and answered with this.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completed {
    pub queue: QueueName,
    pub key: TaskKey,
    /// The task's id ([`TaskMeta::id`](crate::TaskMeta::id); its delivery ids carry it in hex).
    pub id: u64,
    pub completed_at: Timestamp,
    /// Tries of its last occurrence that failed or whose lease expired.
    pub attempts: u32,
    /// The occurrence that completed (a repeat's last).
    pub occurrence: u32,
    /// `completed_at` + the window: the record holds the key until then.
    pub unique_until: Timestamp,
}

impl Completed {
    /// For stores, reading a record back.
    pub fn new(queue: QueueName, key: TaskKey, id: u64, completed_at: Timestamp, unique_until: Timestamp) -> Completed {
        Completed { queue, key, id, completed_at, attempts: 0, occurrence: 1, unique_until }
    }

    /// Whether the record still holds its key at `now`: `now < unique_until`.
    pub fn holds_at(&self, now: Timestamp) -> bool {
        now < self.unique_until
    }
}

/// What a row asks for: one of the calls a row stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum OnceOp {
    /// As [`Store::schedule`] of one task.
    Schedule(Box<NewTask>),
    /// As [`Store::cancel`].
    Cancel { queue: QueueName, key: TaskKey },
    /// As [`Store::cancel_tag`].
    CancelTag { queue: QueueName, tag: Tag },
}

impl OnceOp {
    /// The queue it changes.
    pub fn queue(&self) -> &QueueName {
        match self {
            OnceOp::Schedule(task) => &task.queue,
            OnceOp::Cancel { queue, .. } | OnceOp::CancelTag { queue, .. } => queue,
        }
    }

    /// The one task it changes, by queue and key; `None` for a cancel by tag.
    pub fn key(&self) -> Option<(&QueueName, &TaskKey)> {
        match self {
            OnceOp::Schedule(task) => Some((&task.queue, &task.key)),
            OnceOp::Cancel { queue, key } => Some((queue, key)),
            OnceOp::CancelTag { .. } => None,
        }
    }
}

/// [`Store::apply_once`] of an outbox row and what it asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyOnceRequest {
    pub row: OutboxRow,
    pub op: OnceOp,
    pub now: Timestamp,
}

impl ApplyOnceRequest {
    pub fn new(row: OutboxRow, op: OnceOp, now: Timestamp) -> ApplyOnceRequest {
        ApplyOnceRequest { row, op, now }
    }
}

/// What applying a row did: what the call it stands for answers.
#[derive(Debug, Clone, PartialEq)]
pub enum OnceEffect {
    Scheduled(Box<Scheduled>),
    /// Whether the task was there.
    Cancelled(bool),
    /// How many tasks carried the tag.
    CancelledTag(u64),
}

/// What [`Store::schedule`] did with one task: written (created or replaced) or kept.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Scheduled {
    pub outcome: ScheduleOutcome,
    /// The task under the key afterwards: the one written, or the one kept. `None` only
    /// when no task is there because a task of the key completed within its dedupe
    /// window, which kept the schedule: then `completed` says which.
    pub task: Option<Task>,
    /// The completion that kept the schedule (outcome `kept`, no `task`), see
    /// [`Completed`]; `None` otherwise.
    pub completed: Option<Completed>,
}

impl Scheduled {
    /// For stores: `task` as written or kept.
    pub fn new(outcome: ScheduleOutcome, task: Task) -> Scheduled {
        Scheduled { outcome, task: Some(task), completed: None }
    }

    /// For stores: kept, no task written, by the dedupe window of `completed`.
    pub fn kept_by(completed: Completed) -> Scheduled {
        Scheduled { outcome: ScheduleOutcome::Kept, task: None, completed: Some(completed) }
    }
}

/// The right to run one try of one occurrence; [`Lease::token`] identifies it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LeaseToken {
    pub queue: QueueName,
    pub key: TaskKey,
    /// [`TaskMeta::id`](crate::TaskMeta) of the task when leased.
    pub task_id: u64,
    pub version: u64,
    pub fence: u64,
}

impl LeaseToken {
    /// For stores and for decoding tokens.
    pub fn new(queue: QueueName, key: TaskKey, task_id: u64, version: u64, fence: u64) -> LeaseToken {
        LeaseToken { queue, key, task_id, version, fence }
    }

    /// Whether this token names the live lease of `task` at `now`.
    pub fn is_live_for(&self, task: &Task, now: Timestamp) -> bool {
        task.state == TaskState::Leased
            && task.meta.id == self.task_id
            && task.version == self.version
            && task.meta.fence == self.fence
            && task.lease_expires_at.is_some_and(|expiry| now < expiry)
    }
}

/// A leased task, as handed to a handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Lease {
    pub token: LeaseToken,
    pub expires_at: Timestamp,
    /// This try's ordinal within the occurrence: `task.attempts + 1`.
    pub attempt: u32,
    /// Stable across tries of one occurrence ([`Task::delivery_id`]).
    pub delivery_id: String,
    /// The task as leased (state `leased`).
    pub task: Task,
    /// The time the occurrence this lease delivers was scheduled for (before jitter,
    /// retries and misfires): the task's anchor.
    pub scheduled_for: Timestamp,
    /// How many later occurrences of a repeat were already due when it was leased
    /// and will not fire of their own: this firing stands in for them (see
    /// [`Misfire`](crate::policy::Misfire)). Set by the engine; 0 from a store.
    pub missed: u32,
}

impl Lease {
    /// Builds the lease for a task the store has just leased.
    pub fn of(task: Task) -> Lease {
        let expires_at = task.lease_expires_at.unwrap_or(task.updated_at);
        Lease {
            token: LeaseToken::new(task.queue.clone(), task.key.clone(), task.meta.id, task.version, task.meta.fence),
            expires_at,
            attempt: task.attempts + 1,
            delivery_id: task.delivery_id(),
            scheduled_for: task.meta.anchor,
            missed: 0,
            task,
        }
    }
}

/// Ask for due tasks of one queue, of one [`Lane`]: tasks without a target
/// ([`Lane::Handler`], the default) or only those with one ([`Lane::Target`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseRequest {
    pub queue: QueueName,
    pub lane: Lane,
    /// At most this many leases (≥ 1).
    pub max: u32,
    /// Each lease expires this long after `now`.
    pub lease_for: Duration,
    pub now: Timestamp,
    /// The queue's `group_concurrency`: a group with this many leased tasks (in either
    /// lane) offers no task. `None`: no limit.
    pub group_limit: Option<u32>,
    /// The queue's `group_rate`: a group whose tasks were leased `count` times in the
    /// window of `per` before `now` offers no task. `None`: no rate, and the leases
    /// take no slot.
    pub group_rate: Option<Rate>,
    /// Who leases, for the history's `leased` events.
    pub by: Option<Actor>,
    /// The node that leases (its name among those sharing the store), for the
    /// history's `leased` events.
    pub node: Option<Arc<str>>,
}

impl LeaseRequest {
    pub fn new(queue: QueueName, max: u32, lease_for: Duration, now: Timestamp) -> LeaseRequest {
        LeaseRequest {
            queue,
            lane: Lane::Handler,
            max,
            lease_for,
            now,
            group_limit: None,
            group_rate: None,
            by: None,
            node: None,
        }
    }

    /// Leases on the node named `node`.
    pub fn on_node(mut self, node: Option<Arc<str>>) -> LeaseRequest {
        self.node = node;
        self
    }

    pub fn by(mut self, by: Option<Actor>) -> LeaseRequest {
        self.by = by;
        self
    }

    /// Hands out no task of a group leased `rate.count` times in the window of
    /// `rate.per` before `now`.
    pub fn group_rate(mut self, rate: Option<Rate>) -> LeaseRequest {
        self.group_rate = rate;
        self
    }

    /// Hands out no task of a group that has `limit` (≥ 1) live leases.
    pub fn group_limit(mut self, limit: Option<u32>) -> LeaseRequest {
        self.group_limit = limit;
        self
    }

    /// Leases from `lane` instead of [`Lane::Handler`].
    pub fn in_lane(mut self, lane: Lane) -> LeaseRequest {
        self.lane = lane;
        self
    }
}

/// What [`Store::lease`] handed out, and when the queue has work next.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeaseBatch {
    /// In the order taken.
    pub leases: Vec<Lease>,
    /// The earliest `due_at` among the queue's tasks of the request's lane still
    /// `scheduled` after this call, leaving out those of groups at the request's
    /// `group_limit`, and for a group at its `group_rate` the later of its earliest due
    /// time and the instant its window has room again (may be ≤ `now` when more were
    /// due than `max`); `None` when there are none. A group at its limit offers work
    /// again only when one of its leases ends, which the process ending it knows.
    pub next_due: Option<Timestamp>,
}

impl LeaseBatch {
    pub fn new(leases: Vec<Lease>, next_due: Option<Timestamp>) -> LeaseBatch {
        LeaseBatch { leases, next_due }
    }
}

/// How a leased try ended, as decided by the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The occurrence succeeded and nothing follows: delete the task.
    Done,
    /// The try failed: `attempts + 1`, `last_error = error`, scheduled again at `at`.
    Retry { at: Timestamp, error: String },
    /// Start a new occurrence at `at` (a repeat, or a handler's "again later"):
    /// occurrence + 1, `attempts = 0`, `last_error` cleared, scheduled at `at`, the
    /// anchor set to `anchor` (the time the occurrence is scheduled for, before
    /// jitter: at or before `at`; a handler's "again later" keeps the anchor).
    Reschedule { at: Timestamp, anchor: Timestamp },
    /// Give up: `attempts + 1`, `last_error = error`, state `dead`.
    Dead { error: String },
}

impl Completion {
    /// What the history's `acked` event calls this completion.
    pub fn outcome(&self) -> AckOutcome {
        match self {
            Completion::Done => AckOutcome::Done,
            Completion::Retry { .. } => AckOutcome::Retry,
            Completion::Reschedule { .. } => AckOutcome::Reschedule,
            Completion::Dead { .. } => AckOutcome::Dead,
        }
    }

    /// The handler's error a failed try or a death carries.
    pub fn error(&self) -> Option<&str> {
        match self {
            Completion::Retry { error, .. } | Completion::Dead { error } => Some(error),
            Completion::Done | Completion::Reschedule { .. } => None,
        }
    }

    /// When the task is due again after this completion, if it stays scheduled.
    pub fn next_due(&self) -> Option<Timestamp> {
        match self {
            Completion::Retry { at, .. } | Completion::Reschedule { at, .. } => Some(*at),
            Completion::Done | Completion::Dead { .. } => None,
        }
    }
}

/// Complete a live lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompleteRequest {
    pub token: LeaseToken,
    pub completion: Completion,
    pub now: Timestamp,
    /// Who completes, for the history's `acked` event.
    pub by: Option<Actor>,
    /// What a push delivery saw, kept with the `acked` event.
    pub report: Option<DeliveryReport>,
}

impl CompleteRequest {
    pub fn new(token: LeaseToken, completion: Completion, now: Timestamp) -> CompleteRequest {
        CompleteRequest { token, completion, now, by: None, report: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> CompleteRequest {
        self.by = by;
        self
    }

    pub fn report(mut self, report: Option<DeliveryReport>) -> CompleteRequest {
        self.report = report;
        self
    }
}

/// Extend a live lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtendRequest {
    pub token: LeaseToken,
    /// The lease then expires this long after `now`.
    pub lease_for: Duration,
    pub now: Timestamp,
    /// Who extends, for the history's `extended` event.
    pub by: Option<Actor>,
}

impl ExtendRequest {
    pub fn new(token: LeaseToken, lease_for: Duration, now: Timestamp) -> ExtendRequest {
        ExtendRequest { token, lease_for, now, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> ExtendRequest {
        self.by = by;
        self
    }
}

/// One page of tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListRequest {
    pub queue: QueueName,
    /// Only tasks in this state; all states when `None`.
    pub state: Option<TaskState>,
    /// Only tasks carrying this tag; tagged or not when `None`.
    pub tag: Option<Tag>,
    /// At most this many tasks (≥ 1).
    pub limit: u32,
    /// From a previous page's `next_cursor`; the first page when `None`.
    pub cursor: Option<String>,
}

impl ListRequest {
    /// Every task of `queue` (in `state`, when given); [`ListRequest::tagged`] narrows it.
    pub fn new(queue: QueueName, state: Option<TaskState>, limit: u32, cursor: Option<String>) -> ListRequest {
        ListRequest { queue, state, tag: None, limit, cursor }
    }

    /// Only the tasks carrying `tag`.
    pub fn tagged(mut self, tag: Tag) -> ListRequest {
        self.tag = Some(tag);
        self
    }
}

/// [`Store::groups`]'s arguments: one page of a queue's groups, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupsRequest {
    pub queue: QueueName,
    /// At most this many groups (≥ 1).
    pub limit: u32,
    /// From a previous page's `next_cursor`; the first page when `None`.
    pub cursor: Option<String>,
}

impl GroupsRequest {
    pub fn new(queue: QueueName, limit: u32, cursor: Option<String>) -> GroupsRequest {
        GroupsRequest { queue, limit, cursor }
    }
}

/// A group of a queue and its tasks by state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupCounts {
    pub group: Group,
    pub scheduled: u64,
    /// Its live leases and the expired ones not yet reaped.
    pub leased: u64,
    pub dead: u64,
}

impl GroupCounts {
    pub fn new(group: Group, scheduled: u64, leased: u64, dead: u64) -> GroupCounts {
        GroupCounts { group, scheduled, leased, dead }
    }
}

/// [`Store::completions`]' arguments: one page of a queue's completion records, by key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionsRequest {
    pub queue: QueueName,
    /// At most this many records (≥ 1).
    pub limit: u32,
    /// From a previous page's `next_cursor`; the first page when `None`.
    pub cursor: Option<String>,
    /// Records that no longer hold at `now` are left out.
    pub now: Timestamp,
}

impl CompletionsRequest {
    pub fn new(queue: QueueName, limit: u32, cursor: Option<String>, now: Timestamp) -> CompletionsRequest {
        CompletionsRequest { queue, limit, cursor, now }
    }
}

/// One page of completion records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionsPage {
    pub completions: Vec<Completed>,
    /// Where the next page starts; `None` on the last.
    pub next_cursor: Option<String>,
}

impl CompletionsPage {
    pub fn new(completions: Vec<Completed>, next_cursor: Option<String>) -> CompletionsPage {
        CompletionsPage { completions, next_cursor }
    }
}

/// [`Store::import`]'s arguments: tasks and completion records as another store holds
/// them (read there with [`Store::list`] and [`Store::completions`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ImportRequest {
    pub tasks: Vec<Task>,
    pub completions: Vec<Completed>,
    pub now: Timestamp,
}

impl ImportRequest {
    pub fn new(tasks: Vec<Task>, completions: Vec<Completed>, now: Timestamp) -> ImportRequest {
        ImportRequest { tasks, completions, now }
    }
}

/// What [`Store::import`] did with one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Imported {
    /// Stored as given.
    Written,
    /// A task of its key was already here: left as it is, the given one dropped.
    Present,
}

/// One page of groups.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupsPage {
    pub groups: Vec<GroupCounts>,
    /// Where the next page starts; `None` on the last.
    pub next_cursor: Option<String>,
}

impl GroupsPage {
    pub fn new(groups: Vec<GroupCounts>, next_cursor: Option<String>) -> GroupsPage {
        GroupsPage { groups, next_cursor }
    }
}

/// Which dead tasks of a queue [`Store::retry_dead_batch`] puts back to work. (Stores
/// match on it, so it is exhaustive: a new kind is a change of every store.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeadSelection {
    /// Every dead task.
    All,
    /// The dead tasks carrying this tag.
    Tagged(Tag),
    /// The dead tasks among these keys (a key naming no dead task is passed over; one
    /// given twice counts once).
    Keys(Vec<TaskKey>),
}

/// Put one dead task back to work.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryDeadRequest {
    pub queue: QueueName,
    pub key: TaskKey,
    pub now: Timestamp,
    /// Who retries, for the history's `retried` event.
    pub by: Option<Actor>,
}

impl RetryDeadRequest {
    pub fn new(queue: QueueName, key: TaskKey, now: Timestamp) -> RetryDeadRequest {
        RetryDeadRequest { queue, key, now, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> RetryDeadRequest {
        self.by = by;
        self
    }
}

/// One batch of a bulk retry of dead tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryDeadBatchRequest {
    pub queue: QueueName,
    pub selection: DeadSelection,
    /// At most this many tasks are looked at (≥ 1); with [`DeadSelection::Keys`],
    /// callers pass at most this many keys.
    pub limit: u32,
    /// From the previous batch's `next_cursor`; the first batch when `None`.
    pub cursor: Option<String>,
    pub now: Timestamp,
    /// Who retries, for the history's `retried` events.
    pub by: Option<Actor>,
}

impl RetryDeadBatchRequest {
    /// The first batch.
    pub fn new(queue: QueueName, selection: DeadSelection, limit: u32, now: Timestamp) -> RetryDeadBatchRequest {
        RetryDeadBatchRequest { queue, selection, limit, cursor: None, now, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> RetryDeadBatchRequest {
        self.by = by;
        self
    }

    /// The batch after the one that answered `cursor`.
    pub fn after(mut self, cursor: String) -> RetryDeadBatchRequest {
        self.cursor = Some(cursor);
        self
    }
}

/// What one batch of a bulk retry did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetriedDead {
    /// How many dead tasks went back to `scheduled`, due `now`.
    pub retried: u64,
    /// Pass back for the next batch; `None` when the selection is done.
    pub next_cursor: Option<String>,
}

impl RetriedDead {
    pub fn new(retried: u64, next_cursor: Option<String>) -> RetriedDead {
        RetriedDead { retried, next_cursor }
    }
}

/// Delete a queue's dead tasks that died long enough ago (a retention period).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepRequest {
    pub queue: QueueName,
    /// Dead tasks that died at or before this instant go (`updated_at ≤ died_by`).
    pub died_by: Timestamp,
    /// At most this many (≥ 1).
    pub limit: u32,
}

impl SweepRequest {
    pub fn new(queue: QueueName, died_by: Timestamp, limit: u32) -> SweepRequest {
        SweepRequest { queue, died_by, limit }
    }
}

/// What [`Store::sweep_dead`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Swept {
    /// How many dead tasks were deleted.
    pub deleted: u64,
    /// When the earliest dead task still there died (its `updated_at`); `None` when the
    /// queue has no dead task left.
    pub oldest_death: Option<Timestamp>,
}

impl Swept {
    pub fn new(deleted: u64, oldest_death: Option<Timestamp>) -> Swept {
        Swept { deleted, oldest_death }
    }
}

/// A page of tasks in due order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page {
    pub tasks: Vec<Task>,
    /// Pass back for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}

impl Page {
    pub fn new(tasks: Vec<Task>, next_cursor: Option<String>) -> Page {
        Page { tasks, next_cursor }
    }
}

/// A task whose lease expired, as [`Store::reap`] left it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reaped {
    pub queue: QueueName,
    pub key: TaskKey,
    /// `scheduled` (due again at once) or `dead` (that was its last attempt).
    pub state: TaskState,
}

impl Reaped {
    pub fn new(queue: QueueName, key: TaskKey, state: TaskState) -> Reaped {
        Reaped { queue, key, state }
    }
}

/// What [`Store::reap`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReapResult {
    pub reaped: Vec<Reaped>,
    /// The earliest `lease_expires_at` among leases still live after this call.
    pub next_expiry: Option<Timestamp>,
}

impl ReapResult {
    pub fn new(reaped: Vec<Reaped>, next_expiry: Option<Timestamp>) -> ReapResult {
        ReapResult { reaped, next_expiry }
    }
}

/// Counts for one queue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct QueueStats {
    pub name: QueueName,
    pub scheduled: u64,
    pub leased: u64,
    pub dead: u64,
    /// Earliest `due_at` of a `scheduled` task.
    pub next_due_at: Option<Timestamp>,
}

impl QueueStats {
    pub fn new(name: QueueName, scheduled: u64, leased: u64, dead: u64, next_due_at: Option<Timestamp>) -> QueueStats {
        QueueStats { name, scheduled, leased, dead, next_due_at }
    }
}

/// What a store keeps of a queue besides its tasks, shared by every process on the
/// store: the settings the API gave it — a JSON document the server validates and
/// reads; the store keeps its text as given — and whether the queue is paused.
///
/// A record is never deleted (clearing its settings and resuming it leaves it with
/// neither), so its `version` never repeats and a conditional change made against an
/// old version can never match a newer record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueRecord {
    pub queue: QueueName,
    /// The settings document; `None` when only the pause state is kept (a queue of the
    /// server's config file paused through the API, or settings cleared).
    pub settings: Option<String>,
    pub paused: bool,
    /// 1 when the record was created, 1 more at every change.
    pub version: u64,
    pub updated_at: Timestamp,
}

impl QueueRecord {
    pub fn new(
        queue: QueueName,
        settings: Option<String>,
        paused: bool,
        version: u64,
        updated_at: Timestamp,
    ) -> QueueRecord {
        QueueRecord { queue, settings, paused, version, updated_at }
    }
}

/// A change to a queue's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueChange {
    /// Stores this settings document (creating the record when there is none); the
    /// pause state is kept.
    Settings(String),
    /// Removes the settings document; the pause state is kept.
    ClearSettings,
    /// Pauses (`true`) or resumes (`false`) the queue; the document is kept.
    Paused(bool),
}

/// [`Store::change_queue`]'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueChangeRequest {
    pub queue: QueueName,
    pub change: QueueChange,
    /// Apply only if the record's version is this one (`Some(0)`: only if there is no
    /// record yet); else [`Error::Conflict`] and nothing changes.
    pub if_version: Option<u64>,
    pub now: Timestamp,
    /// Who changes the queue, for the audit.
    pub by: Option<Actor>,
}

impl QueueChangeRequest {
    pub fn new(queue: QueueName, change: QueueChange, now: Timestamp) -> QueueChangeRequest {
        QueueChangeRequest { queue, change, if_version: None, now, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> QueueChangeRequest {
        self.by = by;
        self
    }

    /// The audit's entry of this change.
    pub fn audit_entry(&self) -> AuditEntry {
        let (action, document) = match &self.change {
            QueueChange::Settings(document) => (AuditAction::QueueSettingsSet, Some(document)),
            QueueChange::ClearSettings => (AuditAction::QueueSettingsClear, None),
            QueueChange::Paused(true) => (AuditAction::QueuePause, None),
            QueueChange::Paused(false) => (AuditAction::QueueResume, None),
        };
        let entry = AuditEntry::new(self.now, self.by.as_ref(), action).on_queue(self.queue.as_str());
        match document {
            Some(document) => entry.document(document),
            None => entry,
        }
    }

    /// Makes the change conditional on the record's version (0: no record yet).
    pub fn if_version(mut self, version: u64) -> QueueChangeRequest {
        self.if_version = Some(version);
        self
    }
}

/// Which tasks a purge cancels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeSelection {
    /// `scheduled` tasks only (not leased ones).
    Scheduled,
    /// `dead` tasks only.
    Dead,
    /// Every task, leased ones included (their leases can then no longer complete).
    All,
}

/// One batch of [`Store::purge`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeRequest {
    pub queue: QueueName,
    pub selection: PurgeSelection,
    pub limit: u32,
    /// Who purges, for the history's `purged` events.
    pub by: Option<Actor>,
}

impl PurgeRequest {
    pub fn new(queue: QueueName, selection: PurgeSelection, limit: u32) -> PurgeRequest {
        PurgeRequest { queue, selection, limit, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> PurgeRequest {
        self.by = by;
        self
    }
}

/// Read a task's history.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryRequest {
    pub queue: QueueName,
    pub key: TaskKey,
    /// Only events at or after this instant (the queue's retention before now).
    pub since: Timestamp,
}

impl HistoryRequest {
    pub fn new(queue: QueueName, key: TaskKey, since: Timestamp) -> HistoryRequest {
        HistoryRequest { queue, key, since }
    }
}

/// Read a page of a queue's histories, key by key ([`Store::histories`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoriesRequest {
    pub queue: QueueName,
    /// About this many keys (≥ 1; see [`Store::histories`]).
    pub limit: u32,
    /// From a previous page's `next_cursor`; `None` for the first page.
    pub cursor: Option<String>,
    /// Only events at or after this instant; a key without any is left out.
    pub since: Timestamp,
}

impl HistoriesRequest {
    pub fn new(queue: QueueName, limit: u32, cursor: Option<String>, since: Timestamp) -> HistoriesRequest {
        HistoriesRequest { queue, limit, cursor, since }
    }
}

/// One key's history, oldest event first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyHistory {
    pub key: TaskKey,
    pub events: Vec<HistoryEvent>,
}

impl KeyHistory {
    pub fn new(key: TaskKey, events: Vec<HistoryEvent>) -> KeyHistory {
        KeyHistory { key, events }
    }
}

/// A page of a queue's histories.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoriesPage {
    pub histories: Vec<KeyHistory>,
    /// Pass back for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}

impl HistoriesPage {
    pub fn new(histories: Vec<KeyHistory>, next_cursor: Option<String>) -> HistoriesPage {
        HistoriesPage { histories, next_cursor }
    }
}

/// Forget the histories of a queue's keys that nothing happened to since `before`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistorySweepRequest {
    pub queue: QueueName,
    pub before: Timestamp,
    /// At most this many keys' histories (≥ 1).
    pub limit: u32,
}

impl HistorySweepRequest {
    pub fn new(queue: QueueName, before: Timestamp, limit: u32) -> HistorySweepRequest {
        HistorySweepRequest { queue, before, limit }
    }
}

/// Another process's write that may have made a task of `queue`, in `lane`, due at
/// `due_at`, earlier than this process knew.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Wakeup {
    pub queue: QueueName,
    pub lane: Lane,
    pub due_at: Timestamp,
}

impl Wakeup {
    /// A wake-up of the [`Lane::Handler`] lane.
    pub fn new(queue: QueueName, due_at: Timestamp) -> Wakeup {
        Wakeup { queue, lane: Lane::Handler, due_at }
    }

    /// The same wake-up for `lane`.
    pub fn in_lane(mut self, lane: Lane) -> Wakeup {
        self.lane = lane;
        self
    }
}

/// A shared store found emptied while this process ran: the identity this process
/// started with (or last adopted) vanished or changed, so every task stored before is
/// gone (a Redis restarted without persistence, `FLUSHALL`, a failover to an empty
/// replica). The store has a new identity by then, and goes on serving.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreReset {
    /// The identity this process knew.
    pub previous: StoreId,
    /// The identity the store has now (minted by this process or by another).
    pub current: StoreId,
    /// When this process noticed.
    pub noticed_at: Timestamp,
    /// What happened, in a sentence for the log and `/readyz`.
    pub what: String,
}

impl StoreReset {
    pub fn new(previous: StoreId, current: StoreId, noticed_at: Timestamp, what: String) -> StoreReset {
        StoreReset { previous, current, noticed_at, what }
    }
}

/// How a store shared by many processes tells this one about the others' writes.
#[derive(Debug)]
#[non_exhaustive]
pub struct Peers {
    /// Wake-ups from other processes' schedules, retries and expired leases. Best
    /// effort: a notification may be lost (a dropped connection), hence `safety_poll`.
    pub wakeups: tokio::sync::broadcast::Receiver<Wakeup>,
    /// The engine looks at every queue it serves, and for expired leases, at least
    /// this often, whatever it was told: a lost wake-up costs at most this long.
    pub safety_poll: Duration,
    /// Each time the store is found emptied (see [`StoreReset`]); `None` for a store
    /// that cannot be.
    pub resets: Option<tokio::sync::broadcast::Receiver<StoreReset>>,
}

impl Peers {
    pub fn new(wakeups: tokio::sync::broadcast::Receiver<Wakeup>, safety_poll: Duration) -> Peers {
        Peers { wakeups, safety_poll, resets: None }
    }

    /// Reports the store's resets too.
    pub fn with_resets(mut self, resets: tokio::sync::broadcast::Receiver<StoreReset>) -> Peers {
        self.resets = Some(resets);
        self
    }
}

/// Durable storage of tasks. See the module docs for the rules every method keeps.
pub trait Store: Send + Sync + 'static {
    /// Creates or updates each task, independently, in order, in one atomic write.
    ///
    /// For each task:
    /// - absent: created with `version` 1, `attempts` 0, occurrence 1, a new id,
    ///   anchor = `due_at`, state `scheduled`, outcome `created`;
    /// - present (any state) and `if_exists = replace`: due time, payload, policies and
    ///   tags replaced, `version` incremented, `attempts` 0, occurrence 1, anchor =
    ///   `due_at`, `last_error` cleared, state `scheduled` (a live lease of the old
    ///   version is thereby lost); the id and `created_at` stay; outcome `replaced`;
    /// - present and `keep`: untouched, outcome `kept`;
    /// - present and `error`: `Err(Error::Conflict)` for that task only;
    /// - a debounced task ([`NewTask::debounce`]) is created or replaced so, its
    ///   `due_at` no later than the bound of [`transitions::debounce`], which
    ///   it keeps in `meta.debounce_until` until a lease clears it;
    /// - dedupe windows come first, whatever the new task's `if_exists` and
    ///   `unique_for`: absent, with a completion record of the key that holds at `now`
    ///   (see [`Store::complete`]): nothing written, [`Scheduled::kept_by`] that record;
    ///   present and dead within its window ([`transitions::held_dead`]): untouched,
    ///   outcome `kept`. A record that no longer holds counts for nothing.
    ///
    /// [`transitions::debounce`]: crate::transitions::debounce
    /// [`transitions::held_dead`]: crate::transitions::held_dead
    ///
    /// The same key twice in one call is applied in order. `Err` of the whole call
    /// means nothing was written.
    fn schedule(
        &self,
        tasks: Vec<NewTask>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<Result<Scheduled>>>> + Send;

    /// The task in any state, or `None`.
    fn get(&self, queue: &QueueName, key: &TaskKey) -> impl Future<Output = Result<Option<Task>>> + Send;

    /// The task of each `(queue, key)`, in order, each in any state or `None`, as
    /// [`Store::get`] would read it. A store whose reads cost a hand-off each reads
    /// them all in one; the default reads them concurrently.
    fn get_many(&self, keys: Vec<(QueueName, TaskKey)>) -> impl Future<Output = Result<Vec<Option<Task>>>> + Send {
        async move { futures_util::future::try_join_all(keys.iter().map(|(queue, key)| self.get(queue, key))).await }
    }

    /// Deletes the task in any state. A leased task is thereby cancelled for good: its
    /// lease can no longer complete, so it neither retries nor repeats. `false` when
    /// there was no such task.
    /// `by`: who cancels, for the history's `cancelled` event.
    fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>)
    -> impl Future<Output = Result<bool>> + Send;

    /// Deletes every task of the queue carrying `tag`, in any state; the count deleted.
    fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> impl Future<Output = Result<u64>> + Send;

    /// Applies an outbox row's call (`req.op`) as [`Store::schedule`] of one task,
    /// [`Store::cancel`] or [`Store::cancel_tag`] would, in one atomic step with a mark
    /// of `req.row`, and answers what the call answers; or, when a mark of the row is
    /// there, changes nothing and answers `None` (see [`crate::outbox`]). A schedule
    /// the store refuses answers that error and leaves no mark. Marks are kept at least
    /// [`MARK_RETENTION`](crate::outbox::MARK_RETENTION) after they were written
    /// (`req.now`). A store that splits a queue (Redis shards) may apply a
    /// `cancel_tag` in parts, each atomic with a mark of its own part: a row read again
    /// after a part applied applies the rest, so every part applies once.
    fn apply_once(&self, req: ApplyOnceRequest) -> impl Future<Output = Result<Option<OnceEffect>>> + Send;

    /// [`Store::apply_once`] of many rows, each on its own: each answers as
    /// `apply_once` would, a row refused changes nothing of the others, and rows of one
    /// key (and any row after a cancel by tag) apply in the order given. `Err` of the
    /// whole call means nothing was written. A store that writes in batches applies
    /// them together; the default sends rows of distinct keys at once.
    fn apply_once_many(
        &self,
        reqs: Vec<ApplyOnceRequest>,
    ) -> impl Future<Output = Result<Vec<Result<Option<OnceEffect>>>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(reqs.len());
            for wave in reqs.into_iter().fold(Vec::<Vec<ApplyOnceRequest>>::new(), |mut waves, req| {
                let joins = waves.last().is_some_and(|wave| {
                    req.op.key().is_some_and(|key| wave.iter().all(|other| other.op.key().is_some_and(|k| k != key)))
                });
                match waves.last_mut() {
                    Some(wave) if joins => wave.push(req),
                    _ => waves.push(vec![req]),
                }
                waves
            }) {
                answers.extend(futures_util::future::join_all(wave.into_iter().map(|req| self.apply_once(req))).await);
            }
            Ok(answers)
        }
    }

    /// One page of the queue's tasks in due order: those in `state` and carrying `tag`
    /// when given. Paging through with `next_cursor` (and the same filters) visits every
    /// task that matches and stays in place exactly once. A page costs at most a pass
    /// over the tasks carrying `tag` when one is given, and `limit` tasks otherwise.
    fn list(&self, req: ListRequest) -> impl Future<Output = Result<Page>> + Send;

    /// One page of the queue's completion records ([`Completed`]) that hold at
    /// `req.now`, by key. Paging through with `next_cursor` visits every record that
    /// holds and is not replaced throughout exactly once.
    fn completions(&self, req: CompletionsRequest) -> impl Future<Output = Result<CompletionsPage>> + Send;

    /// Stores tasks and completion records read from another store (moving a
    /// deployment between stores), in one atomic write (on a sharded store, per shard):
    /// - a task whose `(queue, key)` holds a task here, in any state: left as it is,
    ///   [`Imported::Present`];
    /// - else the task as [`transitions::imported`] makes it: every field as given
    ///   (state, due time, attempts, version, times, lease expiry, policies, tags,
    ///   priority, group, target, timing, occurrence, anchor, debounce bound), with an id
    ///   of this store, so that no lease token of the other store is live here; a
    ///   `leased` task counts toward its group's limit and is reaped at its expiry like
    ///   any lease; [`Imported::Written`]. Group turns and rate slots are not carried;
    /// - each completion record that holds at `now` kept as [`Store::complete`] keeps
    ///   one, unless a record of its key is here already.
    ///
    /// One answer per task, in order. `Err` of the whole call means nothing was
    /// written; a store refuses a task it could not have stored through
    /// [`Store::schedule`] (a group on a store refusing groups) that way.
    ///
    /// [`transitions::imported`]: crate::transitions::imported
    fn import(&self, req: ImportRequest) -> impl Future<Output = Result<Vec<Imported>>> + Send;

    /// One page of the queue's groups that have tasks, by name, each with its tasks
    /// counted by state. Paging through with `next_cursor` visits every group that keeps
    /// tasks throughout exactly once.
    fn groups(&self, req: GroupsRequest) -> impl Future<Output = Result<GroupsPage>> + Send;

    /// Atomically leases up to `max` `scheduled` tasks of the queue's `lane` with
    /// `due_at ≤ now`, one after the other by this rule, so that groups take turns:
    /// - each [`Group`] of the queue offers its *head*, its due task of the lane of the
    ///   highest [`Priority`](crate::Priority), the earliest of those; the tasks without
    ///   a group offer theirs as one more group. A group with `group_limit` leased
    ///   tasks or more (in either lane, counting those this call made; an expired
    ///   lease counts until it is reaped) offers nothing; nor does a group with
    ///   `group_rate = count/per` whose tasks were leased `count` times in the window
    ///   `(now - per, now]` (in either lane, counting those this call made);
    /// - the next lease takes the head of the highest priority; among equal priorities,
    ///   that of the group whose *turn* is lowest; then the ungrouped tasks' head; then
    ///   by group name;
    /// - the group leased from takes the queue's next turn, above every turn given
    ///   before. A group's turn is 0 until its first lease, and again once it has no
    ///   task left in the queue; the ungrouped tasks' turn is kept for ever;
    /// - with `group_rate`, each lease of a group's task takes a *slot*, the lease's
    ///   `now`, whatever becomes of the lease (a release gives no slot back). A store
    ///   keeps a group's slots for the window after they were taken, also once the
    ///   group has no task left, so the rate holds while its tasks come and go; a lease
    ///   without `group_rate` takes no slot.
    ///
    /// Without groups this is the highest priority first, each priority in due order.
    /// Each leased task becomes `leased` with `lease_expires_at = now + lease_for` and
    /// its fence raised above every fence it had before. No task is ever in two live
    /// leases, and no lease takes a task of the other lane (a task's lane is
    /// [`Task::lane`]: a replace may move it, a retry keeps it). Without groups the
    /// cost is that of the leases taken, whatever the other lane holds, plus a look at
    /// each priority in use; with groups, a look at each group with due tasks.
    fn lease(&self, req: LeaseRequest) -> impl Future<Output = Result<LeaseBatch>> + Send;

    /// Applies `completion` to the task of a live lease; [`Error::LeaseLost`] when the
    /// lease is not live (and nothing changes). `Done` of a task with a dedupe window
    /// ([`Task::unique_for`]) writes, in the same atomic step as the deletion, the
    /// completion record of [`transitions::completion_record`] for its (queue, key), in
    /// place of any earlier one; the store drops a record once it no longer holds.
    ///
    /// [`transitions::completion_record`]: crate::transitions::completion_record
    fn complete(&self, req: CompleteRequest) -> impl Future<Output = Result<()>> + Send;

    /// Many completions, each applied or refused on its own exactly as
    /// [`Store::complete`] would, in one atomic write.
    fn complete_many(&self, reqs: Vec<CompleteRequest>) -> impl Future<Output = Result<Vec<Result<()>>>> + Send;

    /// Moves a live lease's expiry to `now + lease_for`; the new expiry.
    fn extend(&self, req: ExtendRequest) -> impl Future<Output = Result<Timestamp>> + Send;

    /// Gives a live lease back unused: the task is `scheduled` again with its `due_at`
    /// and `attempts` unchanged (the try did not happen).
    fn release(&self, token: &LeaseToken, now: Timestamp) -> impl Future<Output = Result<()>> + Send;

    /// Ends up to `limit` leases with `lease_expires_at ≤ now`, earliest first. Each
    /// counts as a failed try: `attempts + 1`, `last_error` says the lease expired;
    /// then `dead` if `attempts` reached `max_attempts`, else `scheduled` with
    /// `due_at = now` (due again at once, no backoff).
    fn reap(&self, now: Timestamp, limit: u32) -> impl Future<Output = Result<ReapResult>> + Send;

    /// Moves a `dead` task back to `scheduled`, due `now`, `attempts` 0, `last_error`
    /// kept for reference; the task, or `None` when there is no such dead task.
    fn retry_dead(&self, req: RetryDeadRequest) -> impl Future<Output = Result<Option<Task>>> + Send;

    /// One batch of a bulk [`Store::retry_dead`]: each selected task that is `dead` is
    /// moved back as `retry_dead` moves it (due `now`, `attempts` 0, `last_error`
    /// kept); tasks in other states, and keys naming none, are passed over. Each batch
    /// is atomic (on a sharded store, per shard) and looks at no more than `limit`
    /// tasks; the batches are not atomic together.
    ///
    /// Following `next_cursor` until it is `None` visits every selected task that is
    /// dead when its batch runs and stays in place, at most once: with
    /// [`DeadSelection::All`], the dead tasks due at or before the first batch's `now`
    /// (every dead task then, since a task dies after it was due), so a task the walk
    /// retried (now due later) that dies again meanwhile is left alone, unless all of
    /// it happened within that millisecond; with a tag, the tag's tasks
    /// in a store-defined order; with keys, those keys in one batch (no cursor).
    fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> impl Future<Output = Result<RetriedDead>> + Send;

    /// Deletes a `dead` task; `false` when there is no such dead task (a task in
    /// another state is left alone).
    fn delete_dead(
        &self,
        queue: &QueueName,
        key: &TaskKey,
        by: Option<&Actor>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes up to `limit` `dead` tasks of the queue that died at or before `died_by`
    /// (a dead task's `updated_at` is when it died), those that died first first, in one
    /// atomic write (on a sharded store, per shard); and tells when the earliest dead
    /// task left died. A store may delete fewer than `limit` in one call: while more
    /// are due, `oldest_death` is at or before `died_by`. Costs in proportion to what
    /// it deletes, not to the dead tasks kept.
    fn sweep_dead(&self, req: SweepRequest) -> impl Future<Output = Result<Swept>> + Send;

    /// Cancels up to `limit` tasks of the queue in the selection, each as
    /// [`Store::cancel`] would (a leased one for good), in one atomic write (on a
    /// sharded store, per shard and script batch); the count cancelled. A store may
    /// cancel fewer than `limit` while more remain (a sharded one works shard by
    /// shard), so callers repeat until a batch cancels none; a batch cancelling none
    /// means none was left when it ran. The queue's record is not touched.
    fn purge(&self, req: PurgeRequest) -> impl Future<Output = Result<u64>> + Send;

    /// The events of the `(queue, key)`'s history at or after `req.since`, oldest
    /// first, also once no task is there (see [`crate::history`], whose rules every
    /// store's writes keep: each change's events written in the change's atomic step).
    fn history(&self, req: HistoryRequest) -> impl Future<Output = Result<Vec<HistoryEvent>>> + Send;

    /// One page of the queue's histories (each as [`Store::history`] reads it): a walk
    /// of the pages from `cursor` `None` to a page without `next_cursor` meets every key
    /// that had events since `req.since` for the whole walk at least once, a key's
    /// events whole in one page. A page holds about `limit` keys (a store that reads
    /// in steps of its own, such as Redis' `HSCAN`, may give more or fewer), none only
    /// at the end. For moving histories to another store ([`Store::import_histories`]).
    fn histories(&self, req: HistoriesRequest) -> impl Future<Output = Result<HistoriesPage>> + Send;

    /// Adds to each key's history of `queue` the given events (oldest first, as
    /// [`Store::histories`] read them in another store) that are older than its oldest
    /// event here, all of them when it has none, before its own, keeping its latest
    /// [`HISTORY_LIMIT`](crate::history::HISTORY_LIMIT) (see
    /// [`history::older_than`](crate::history::older_than)): a history moved again, or
    /// moved after the key's task was imported, is whole and told once. Each key's in
    /// one atomic write; the count of events added.
    fn import_histories(
        &self,
        queue: &QueueName,
        histories: Vec<KeyHistory>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Deletes the histories of up to `limit` keys of the queue whose latest event is
    /// before `req.before`, in one atomic write (on a sharded store, per shard); how
    /// many. A store may delete fewer while more remain: callers repeat until a call
    /// deletes none. A history with later events may keep its events before `before`
    /// (at most [`HISTORY_LIMIT`](crate::history::HISTORY_LIMIT) of them), and so may a
    /// live task's own events where the store keeps them with the task (the embedded
    /// store keeps its newest in its row): a read from a later `since` shows none.
    fn sweep_history(&self, req: HistorySweepRequest) -> impl Future<Output = Result<u64>> + Send;

    /// Keeps `entry` in the audit (see [`crate::audit`]) with the next sequence number.
    fn append_audit(&self, entry: AuditEntry) -> impl Future<Output = Result<()>> + Send;

    /// One page of the audit, newest first: up to `req.limit` entries with a sequence
    /// number below `req.before`.
    fn audit(&self, req: AuditRequest) -> impl Future<Output = Result<Vec<AuditEntry>>> + Send;

    /// Deletes up to `limit` audit entries made before `before`, oldest first; how many.
    fn sweep_audit(&self, before: Timestamp, limit: u32) -> impl Future<Output = Result<u64>> + Send;

    /// The queue's record, or `None` when it has none.
    fn queue_record(&self, queue: &QueueName) -> impl Future<Output = Result<Option<QueueRecord>>> + Send;

    /// Every queue's record, sorted by name (few: one per queue given settings or
    /// paused; read every second by each process to follow the others' changes).
    fn queue_records(&self) -> impl Future<Output = Result<Vec<QueueRecord>>> + Send;

    /// Applies the change atomically (creating the record, version 1, when there is
    /// none; else version + 1 and `updated_at = now`), with its audit entry
    /// ([`QueueChangeRequest::audit_entry`]), and returns the record as it is after;
    /// [`Error::Conflict`] when `if_version` does not match, and nothing changes.
    /// A change that leaves the record as it was (pausing a paused queue) still counts
    /// as a change.
    fn change_queue(&self, req: QueueChangeRequest) -> impl Future<Output = Result<QueueRecord>> + Send;

    /// Every calendar's record, removed ones included, sorted by name (few; read
    /// every second by each process, with the queue records).
    fn calendar_records(&self) -> impl Future<Output = Result<Vec<CalendarRecord>>> + Send;

    /// Applies the change atomically, as [`change_calendar`](crate::calendar::change_calendar)
    /// decides it from the stored record, with its audit entry
    /// ([`CalendarChangeRequest::audit_entry`]), and returns the record as it is after;
    /// [`Error::Conflict`] or [`Error::NotFound`] as that decides, and nothing changes.
    fn change_calendar(&self, req: CalendarChangeRequest) -> impl Future<Output = Result<CalendarRecord>> + Send;

    /// Counts per queue, sorted by name: one queue, or every queue holding a task when
    /// `queue` is `None`. An unknown queue has zero counts.
    fn stats(&self, queue: Option<&QueueName>) -> impl Future<Output = Result<Vec<QueueStats>>> + Send;

    /// The names of every queue holding a task, a completion record or a history, and of any other
    /// the store keeps a trace of, sorted: where a walk over the whole store
    /// (`punctual migrate`) looks. Unlike [`Store::stats`], a queue whose tasks are all
    /// gone but whose dedupe windows still run is among them.
    fn queue_names(&self) -> impl Future<Output = Result<Vec<QueueName>>> + Send;

    /// 32 random bytes created on first use and the same for every process using this
    /// store ever after (it signs lease tokens, so any node can check any token).
    fn secret(&self) -> impl Future<Output = Result<[u8; 32]>> + Send;

    /// For a store that other processes write too: how their writes reach this one.
    /// `None` (the default) for a store with one owning process, whose every write
    /// goes through this process's engine.
    fn peers(&self) -> Option<Peers> {
        None
    }

    /// Makes every write durable and stops background work. Later calls fail with
    /// [`Error::Unavailable`].
    fn close(&self) -> impl Future<Output = Result<()>> + Send;
}

/// Builds the `Internal` error for a stored row that cannot be decoded.
pub fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::Internal(format!("stored data cannot be read: {what}"))
}
