//! [`MemoryStore`], the reference store: the [`Store`] contract held in memory, every
//! change to a task made by a function of [`transitions`]. It is the executable form of
//! the contract: it runs the conformance suite like every backend, and the model test
//! compares each real store with it on random operation sequences.
//!
//! What it owns: the tasks of each queue in a `BTreeMap` by key, and indexes beside
//! them so that no call scans what it does not return — per queue, every task and the
//! tasks of each state by `(due_at, key)` (listing, the next due time), the scheduled
//! tasks of each [`Lane`] and [`Priority`] by `(due_at, key)` (leasing; a group's
//! apart, beside its turn and counts by state), the dead tasks by `(updated_at, key)`
//! (the sweep, the bulk retry), the keys carrying each tag; beside the queues, each
//! group's `group_rate` slots ([`GroupSlots`], kept while their windows last); across
//! queues, the leased tasks by `(lease_expires_at, queue, key)`
//! (reaping), and the completion records of dedupe windows by slot and by end (each
//! schedule and completion first drops those ended by its `now`); and each key's
//! history (see [`crate::history`]), written by the call that changes the task. All of
//! it sits behind one `Mutex`, so every method is atomic.
//!
//! Invariant: the indexes hold exactly the entries derived from the stored tasks. Every
//! write goes through `Inner::put` or `Inner::take`, which remove a task's old entries
//! before adding its new ones; nothing else touches the maps. A group's entry lives
//! while the group has tasks (so its turn is forgotten when it has none); the turns of
//! each queue's ungrouped tasks, and its last turn given, are kept for ever.
//!
//! Store-defined choices: ties among equal times (and, leasing, equal priorities) are
//! broken by key (listing, leasing,
//! the sweep; reaping, which spans queues, by queue and then key); a bulk retry by tag
//! walks the tag's keys in order, and one of every dead task walks the deaths up to the
//! first batch's `now` (a task dies after it was due, so these are the dead tasks due by
//! then, less any that died during the walk and so did not stay in place). Ids count up
//! from 1 and never repeat; fences count up from 0 per task (ids never repeat, so a
//! token of an earlier task of the same key never matches). Nothing survives the
//! process: the `Ok` of a call is durable only for as long as the store lives.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use crate::audit::{AuditEntry, AuditRequest};
use crate::calendar::{CalendarChangeRequest, CalendarName, CalendarRecord, change_calendar};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::group_slots::GroupSlots;
use crate::history::{Actor, EventKind, HISTORY_LIMIT, HistoryEvent};
use crate::identity::StoreId;
use crate::model::{Group, NewTask, Priority, QueueName, Tag, Task, TaskKey, TaskState};
use crate::outbox::Marks;
use crate::store::{
    ApplyOnceRequest, CompleteRequest, Completed, CompletionsPage, CompletionsRequest, DeadSelection, ExtendRequest,
    GroupCounts, GroupsPage, GroupsRequest, HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest,
    ImportRequest, Imported, KeyHistory, Lease, LeaseBatch, LeaseRequest, LeaseToken, ListRequest, OnceEffect, OnceOp,
    Page, PurgeRequest, QueueChangeRequest, QueueRecord, QueueStats, ReapResult, Reaped, RetriedDead,
    RetryDeadBatchRequest, RetryDeadRequest, ScheduleOutcome, Scheduled, Store, SweepRequest, Swept,
};
use crate::target::Lane;
use crate::time::Timestamp;
use crate::transitions;

/// (queue, key): where a task lives.
type Slot = (QueueName, TaskKey);

/// Tasks by `(due_at, key)`: an index of a queue's tasks in due order.
type DueOrder = BTreeSet<(Timestamp, TaskKey)>;

/// The reference [`Store`]: the contract, in memory, built on [`transitions`]. See the
/// module docs.
#[derive(Debug)]
pub struct MemoryStore {
    secret: [u8; 32],
    inner: Mutex<Inner>,
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store with a fresh identity and secret.
    pub fn new() -> MemoryStore {
        let inner = Inner {
            store: StoreId::random(),
            closed: false,
            last_id: 0,
            queues: BTreeMap::new(),
            expiries: BTreeSet::new(),
            prefer: Vec::new(),
            records: BTreeMap::new(),
            turns: BTreeMap::new(),
            group_slots: BTreeMap::new(),
            calendars: BTreeMap::new(),
            completed: BTreeMap::new(),
            completed_ends: BTreeSet::new(),
            marks: Marks::default(),
            histories: BTreeMap::new(),
            audit: BTreeMap::new(),
            last_audit: 0,
        };
        MemoryStore { secret: rand::random(), inner: Mutex::new(inner) }
    }

    /// Among tasks due, expiring or dead at the same instant, the next `lease`, `reap`
    /// or `sweep_dead` takes those named in `first` before the others, in that order.
    ///
    /// The contract leaves that choice to the store; the model test uses this to make
    /// the reference follow the choice a real store made, so that both hold the same
    /// tasks afterwards. It changes nothing the contract fixes: a task due later is
    /// never taken before one due earlier. (That call then also reads every task tied
    /// with the last one it takes.)
    pub fn prefer_among_ties(&self, first: Vec<(QueueName, TaskKey)>) {
        // A poisoned lock fails the next call anyway; a preference is not worth a panic.
        if let Ok(mut inner) = self.inner.lock() {
            inner.prefer = first;
        }
    }

    /// The state, unless the store is closed.
    fn open(&self) -> Result<MutexGuard<'_, Inner>> {
        let inner = self.inner.lock().map_err(|_| Error::Internal("a panic poisoned the memory store".into()))?;
        if inner.closed { Err(Error::Unavailable("the memory store is closed".into())) } else { Ok(inner) }
    }
}

/// One queue's tasks and their indexes.
#[derive(Debug, Default)]
struct Queue {
    tasks: BTreeMap<TaskKey, Task>,
    /// Every task, by `(due_at, key)`.
    by_due: BTreeSet<(Timestamp, TaskKey)>,
    scheduled: BTreeSet<(Timestamp, TaskKey)>,
    /// The ungrouped tasks of `scheduled`, by lane and priority.
    ready: Ready,
    /// Groups with tasks, by name.
    groups: BTreeMap<Group, GroupState>,
    leased: BTreeSet<(Timestamp, TaskKey)>,
    dead: BTreeSet<(Timestamp, TaskKey)>,
    /// Dead tasks by `(updated_at, key)`: when they died.
    deaths: BTreeSet<(Timestamp, TaskKey)>,
    tags: BTreeMap<Tag, BTreeSet<TaskKey>>,
}

/// Scheduled tasks split by lane and priority, each by `(due_at, key)`: a lane's
/// highest priority first. Sets are removed when they empty.
type Ready = BTreeMap<(Lane, Reverse<Priority>), DueOrder>;

/// One group of a queue: its scheduled tasks, its counts and its turn.
#[derive(Debug, Default)]
struct GroupState {
    ready: Ready,
    tasks: u64,
    leased: u64,
    dead: u64,
    /// 0 until the group's first lease, then the queue's turn of its latest.
    turn: u64,
}

/// Whether `group` has fewer leased tasks than `limit`.
fn has_room(group: &GroupState, limit: Option<u32>) -> bool {
    limit.is_none_or(|limit| group.leased < u64::from(limit))
}

/// When a group with `slots`, held by the request's `group_rate`, has room again; `None`
/// while it has room (or no rate applies).
fn held_until(slots: Option<&GroupSlots>, req: &LeaseRequest) -> Option<Timestamp> {
    let (slots, rate) = (slots?, req.group_rate?);
    Some(slots.room_at(rate, req.now)).filter(|room| *room > req.now)
}

/// Forgets `group` (and its turn) if it has no task left.
fn forget_if_empty(queue: &mut Queue, group: &Group) {
    if queue.groups.get(group).is_some_and(|state| state.tasks == 0) {
        queue.groups.remove(group);
    }
}

/// The turns of a queue's leases (see [`Store::lease`]).
#[derive(Debug, Default, Clone, Copy)]
struct Turns {
    /// The last turn given.
    last: u64,
    /// The ungrouped tasks' turn.
    ungrouped: u64,
}

/// The lane's scheduled tasks of each priority, the highest first, by `(due_at, key)`.
fn lane_ready(ready: &Ready, lane: Lane) -> impl Iterator<Item = (Priority, &DueOrder)> {
    let range = (lane, Reverse(Priority::HIGHEST))..=(lane, Reverse(Priority::LOWEST));
    ready.range(range).map(|((_, Reverse(priority)), tasks)| (*priority, tasks))
}

/// The earliest due time of the lane's tasks in `ready`.
fn next_due_in(ready: &Ready, lane: Lane) -> Option<Timestamp> {
    lane_ready(ready, lane).filter_map(|(_, tasks)| tasks.first().map(|(due, _)| *due)).min()
}

/// The head of the lane's tasks in `ready` at `now` (see [`Store::lease`]): of the
/// highest priority with a due task, the earliest; among tasks due at the same instant,
/// those in `prefer` first.
fn head_of(
    ready: &Ready,
    lane: Lane,
    now: Timestamp,
    queue: &QueueName,
    prefer: &[Slot],
) -> Option<(Priority, TaskKey)> {
    let (priority, tasks) =
        lane_ready(ready, lane).find(|(_, tasks)| tasks.first().is_some_and(|(due, _)| *due <= now))?;
    let (first_due, first_key) = tasks.first()?;
    if prefer.is_empty() {
        return Some((priority, first_key.clone()));
    }
    let rank = |key: &TaskKey| prefer.iter().position(|(q, k)| q == queue && k == key).unwrap_or(usize::MAX);
    let tied = tasks.iter().take_while(|(due, _)| due == first_due);
    // `min_by_key` keeps the first of equals: the store's order among those not preferred.
    let (_, key) = tied.min_by_key(|(_, key)| rank(key))?;
    Some((priority, key.clone()))
}

impl Queue {
    fn in_state(&self, state: TaskState) -> &BTreeSet<(Timestamp, TaskKey)> {
        match state {
            TaskState::Scheduled => &self.scheduled,
            TaskState::Leased => &self.leased,
            TaskState::Dead => &self.dead,
        }
    }

    fn in_state_mut(&mut self, state: TaskState) -> &mut BTreeSet<(Timestamp, TaskKey)> {
        match state {
            TaskState::Scheduled => &mut self.scheduled,
            TaskState::Leased => &mut self.leased,
            TaskState::Dead => &mut self.dead,
        }
    }

    /// The earliest time the lane's scheduled tasks may be leased (see
    /// [`LeaseBatch::next_due`]), leaving out the groups with `req.group_limit` leases.
    fn lane_next_due(&self, req: &LeaseRequest, slots: Option<&BTreeMap<Group, GroupSlots>>) -> Option<Timestamp> {
        let open = self.groups.iter().filter(|(_, group)| has_room(group, req.group_limit));
        let grouped = open.filter_map(|(name, group)| {
            let due = next_due_in(&group.ready, req.lane)?;
            // A group with room offers its earliest due time, even one before `now`.
            Some(held_until(slots.and_then(|slots| slots.get(name)), req).map_or(due, |room| due.max(room)))
        });
        grouped.chain(next_due_in(&self.ready, req.lane)).min()
    }

    /// The ready set a scheduled task belongs in.
    fn ready_of(&mut self, task: &Task) -> &mut Ready {
        match &task.group {
            Some(group) => &mut self.groups.entry(group.clone()).or_default().ready,
            None => &mut self.ready,
        }
    }

    fn task(&self, key: &TaskKey) -> &Task {
        self.tasks.get(key).expect("an index names only stored tasks")
    }

    fn stats(&self, name: QueueName) -> QueueStats {
        let count = |state| self.in_state(state).len() as u64;
        let next_due = self.scheduled.first().map(|(due, _)| *due);
        QueueStats::new(name, count(TaskState::Scheduled), count(TaskState::Leased), count(TaskState::Dead), next_due)
    }
}

#[derive(Debug)]
struct Inner {
    store: StoreId,
    closed: bool,
    /// The id of the latest creation.
    last_id: u64,
    queues: BTreeMap<QueueName, Queue>,
    /// Leased tasks of every queue, by `(lease_expires_at, queue, key)`.
    expiries: BTreeSet<(Timestamp, QueueName, TaskKey)>,
    /// See [`MemoryStore::prefer_among_ties`]; emptied by the call that uses it.
    prefer: Vec<Slot>,
    /// Queue records by name.
    records: BTreeMap<QueueName, QueueRecord>,
    /// Each queue's turns, kept when its tasks go.
    turns: BTreeMap<QueueName, Turns>,
    /// Each queue's groups' `group_rate` slots, kept when their tasks go.
    group_slots: BTreeMap<QueueName, BTreeMap<Group, GroupSlots>>,
    /// Calendar records by name, removed ones kept.
    calendars: BTreeMap<CalendarName, CalendarRecord>,
    /// Completion records of dedupe windows, by slot; and by `(unique_until, slot)`.
    completed: BTreeMap<Slot, Completed>,
    completed_ends: BTreeSet<(Timestamp, Slot)>,
    /// Outbox rows applied.
    marks: Marks,
    /// Each queue's histories.
    histories: BTreeMap<QueueName, Histories>,
    /// The audit's entries by sequence number, and the last number given.
    audit: BTreeMap<u64, AuditEntry>,
    last_audit: u64,
}

/// A queue's histories: each key's, oldest first, at most [`HISTORY_LIMIT`] events;
/// and the keys by the time of their latest event (the sweep).
#[derive(Debug, Default)]
struct Histories {
    by_key: BTreeMap<TaskKey, VecDeque<HistoryEvent>>,
    by_latest: BTreeSet<(Timestamp, TaskKey)>,
}

impl Inner {
    fn get(&self, queue: &QueueName, key: &TaskKey) -> Option<&Task> {
        self.queues.get(queue)?.tasks.get(key)
    }

    /// Appends `event` to the history of (queue, key).
    fn record(&mut self, queue: &QueueName, key: &TaskKey, event: HistoryEvent) {
        let histories = self.histories.entry(queue.clone()).or_default();
        let history = histories.by_key.entry(key.clone()).or_default();
        if let Some(latest) = history.back() {
            histories.by_latest.remove(&(latest.at, key.clone()));
        }
        if history.len() == HISTORY_LIMIT {
            history.pop_front();
        }
        histories.by_latest.insert((event.at, key.clone()));
        history.push_back(event);
    }

    /// Keeps `entry` in the audit with the next sequence number.
    fn append_audit(&mut self, mut entry: AuditEntry) {
        self.last_audit += 1;
        entry.seq = self.last_audit;
        self.audit.insert(entry.seq, entry);
    }

    /// Deletes the task in (queue, key), recording `event`; whether there was one.
    fn remove(&mut self, queue: &QueueName, key: &TaskKey, event: &HistoryEvent) -> bool {
        let removed = self.take(queue, key).is_some();
        if removed {
            self.record(queue, key, event.clone());
        }
        removed
    }

    /// Stores `task` in place of whatever its (queue, key) held.
    fn put(&mut self, task: Task) {
        let old_group = self.unindex(&task.queue, &task.key).and_then(|old| old.group);
        let entry = (task.due_at, task.key.clone());
        if let Some(expiry) = task.lease_expires_at {
            self.expiries.insert((expiry, task.queue.clone(), task.key.clone()));
        }
        let queue = self.queues.entry(task.queue.clone()).or_default();
        queue.by_due.insert(entry.clone());
        if task.state == TaskState::Scheduled {
            queue.ready_of(&task).entry((task.lane(), Reverse(task.priority))).or_default().insert(entry.clone());
        }
        if let Some(group) = &task.group {
            let group = queue.groups.entry(group.clone()).or_default();
            group.tasks += 1;
            group.leased += u64::from(task.state == TaskState::Leased);
            group.dead += u64::from(task.state == TaskState::Dead);
        }
        queue.in_state_mut(task.state).insert(entry);
        if task.state == TaskState::Dead {
            queue.deaths.insert((task.updated_at, task.key.clone()));
        }
        for tag in &task.tags {
            queue.tags.entry(tag.clone()).or_default().insert(task.key.clone());
        }
        debug_assert_eq!(task.lease_expires_at.is_some(), task.state == TaskState::Leased, "{task:?}");
        queue.tasks.insert(task.key.clone(), task);
        // A replace may have moved the group's last task out of it.
        if let Some(old) = old_group {
            forget_if_empty(queue, &old);
        }
    }

    /// Deletes the task in (queue, key) with its index entries; the task, if any. A
    /// group left without tasks is forgotten, and so is a queue.
    fn take(&mut self, queue_name: &QueueName, key: &TaskKey) -> Option<Task> {
        let task = self.unindex(queue_name, key)?;
        let queue = self.queues.get_mut(queue_name)?;
        if let Some(group) = &task.group {
            forget_if_empty(queue, group);
        }
        if queue.tasks.is_empty() {
            self.queues.remove(queue_name);
        }
        Some(task)
    }

    /// Removes the task in (queue, key) and its index entries, leaving its queue and
    /// group in place (counts lowered); the task, if any.
    fn unindex(&mut self, queue_name: &QueueName, key: &TaskKey) -> Option<Task> {
        let queue = self.queues.get_mut(queue_name)?;
        let task = queue.tasks.remove(key)?;
        let entry = (task.due_at, task.key.clone());
        queue.by_due.remove(&entry);
        let ready = (task.lane(), Reverse(task.priority));
        if task.state == TaskState::Scheduled {
            let sets = queue.ready_of(&task);
            if let Some(tasks) = sets.get_mut(&ready) {
                tasks.remove(&entry);
                if tasks.is_empty() {
                    sets.remove(&ready);
                }
            }
        }
        if let Some(group) = task.group.as_ref().and_then(|group| queue.groups.get_mut(group)) {
            group.tasks -= 1;
            group.leased -= u64::from(task.state == TaskState::Leased);
            group.dead -= u64::from(task.state == TaskState::Dead);
        }
        queue.in_state_mut(task.state).remove(&entry);
        queue.deaths.remove(&(task.updated_at, task.key.clone()));
        for tag in &task.tags {
            if let Some(keys) = queue.tags.get_mut(tag) {
                keys.remove(key);
                if keys.is_empty() {
                    queue.tags.remove(tag);
                }
            }
        }
        if let Some(expiry) = task.lease_expires_at {
            self.expiries.remove(&(expiry, task.queue.clone(), task.key.clone()));
        }
        Some(task)
    }

    fn schedule_one(&mut self, new: NewTask, now: Timestamp) -> Result<Scheduled> {
        let (scheduled, event) = match self.get(&new.queue, &new.key) {
            Some(existing) => {
                let old = existing.clone();
                let scheduled = transitions::upsert(existing, new.clone(), now)?;
                let event =
                    scheduled.task.as_ref().map(|task| HistoryEvent::replaced(&old, task, new.by.as_ref(), now));
                (scheduled, event)
            }
            None => match self.completed.get(&(new.queue.clone(), new.key.clone())).filter(|r| r.holds_at(now)) {
                Some(record) => return Ok(Scheduled::kept_by(record.clone())),
                None => {
                    self.last_id += 1;
                    let by = new.by.clone();
                    let task = transitions::create(new, self.store, self.last_id, now);
                    let event = HistoryEvent::created(&task, by.as_ref(), now);
                    (Scheduled::new(ScheduleOutcome::Created, task), Some(event))
                }
            },
        };
        if let (ScheduleOutcome::Created | ScheduleOutcome::Replaced, Some(task), Some(event)) =
            (scheduled.outcome, &scheduled.task, event)
        {
            self.record(&task.queue, &task.key, event);
            self.put(task.clone());
        }
        Ok(scheduled)
    }

    /// Drops the completion records that no longer hold at `now`.
    fn drop_ended_records(&mut self, now: Timestamp) {
        while let Some((end, _)) = self.completed_ends.first()
            && *end <= now
        {
            if let Some((_, slot)) = self.completed_ends.pop_first() {
                self.completed.remove(&slot);
            }
        }
    }

    /// Keeps `record`, in place of its slot's earlier one.
    fn remember(&mut self, record: Completed) {
        let slot = (record.queue.clone(), record.key.clone());
        if let Some(earlier) = self.completed.remove(&slot) {
            self.completed_ends.remove(&(earlier.unique_until, slot.clone()));
        }
        self.completed_ends.insert((record.unique_until, slot.clone()));
        self.completed.insert(slot, record);
    }

    /// Cancels the first `limit` tasks of the selection in due order.
    fn purge(&mut self, req: &PurgeRequest) -> u64 {
        let Some(queue) = self.queues.get(&req.queue) else { return 0 };
        let keys: Vec<TaskKey> = queue
            .by_due
            .iter()
            .filter(|(_, key)| transitions::is_purged(queue.task(key), req.selection))
            .take(req.limit as usize)
            .map(|(_, key)| key.clone())
            .collect();
        let purged = HistoryEvent::new(SystemClock.now(), EventKind::Purged, req.by.as_ref(), None);
        keys.iter().filter(|key| self.remove(&req.queue, key, &purged)).count() as u64
    }

    fn cancel_tag(&mut self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> u64 {
        let keys: Vec<TaskKey> = self
            .queues
            .get(queue)
            .and_then(|q| q.tags.get(tag))
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default();
        let cancelled = HistoryEvent::cancelled(by, Some(tag.as_str()), SystemClock.now());
        keys.iter().filter(|key| self.remove(queue, key, &cancelled)).count() as u64
    }

    fn cancel(&mut self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> bool {
        self.remove(queue, key, &HistoryEvent::cancelled(by, None, SystemClock.now()))
    }

    fn history(&self, req: &HistoryRequest) -> Vec<HistoryEvent> {
        let history = self.histories.get(&req.queue).and_then(|histories| histories.by_key.get(&req.key));
        history.into_iter().flatten().filter(|event| event.at >= req.since).cloned().collect()
    }

    /// Keys after the cursor (the last key of the previous page), in key order.
    fn histories(&self, req: &HistoriesRequest) -> Result<HistoriesPage> {
        let after = req.cursor.as_deref().map(|key| TaskKey::new(key).map_err(|_| foreign_cursor())).transpose()?;
        let Some(histories) = self.histories.get(&req.queue) else { return Ok(HistoriesPage::new(Vec::new(), None)) };
        let from = match &after {
            Some(key) => Bound::Excluded(key),
            None => Bound::Unbounded,
        };
        let limit = req.limit.max(1) as usize;
        let mut page = Vec::new();
        let mut keys = histories.by_key.range::<TaskKey, _>((from, Bound::Unbounded));
        for (key, events) in keys.by_ref() {
            let events: Vec<HistoryEvent> = events.iter().filter(|event| event.at >= req.since).cloned().collect();
            if !events.is_empty() {
                page.push(KeyHistory::new(key.clone(), events));
                if page.len() == limit {
                    break;
                }
            }
        }
        let more = page.len() == limit && keys.next().is_some();
        let next_cursor = page.last().filter(|_| more).map(|last| last.key.to_string());
        Ok(HistoriesPage::new(page, next_cursor))
    }

    fn import_histories(&mut self, queue: &QueueName, histories: Vec<KeyHistory>) -> u64 {
        let mut added = 0;
        for KeyHistory { key, events } in histories {
            let own: Vec<HistoryEvent> = self
                .histories
                .get_mut(queue)
                .and_then(|histories| histories.by_key.remove(&key))
                .map(Vec::from)
                .unwrap_or_default();
            if let Some(latest) = own.last() {
                let by_latest = &mut self.histories.get_mut(queue).expect("the key's queue").by_latest;
                by_latest.remove(&(latest.at, key.clone()));
            }
            let older = crate::history::older_than(&events, own.first().map(|event| event.at));
            added += older.len() as u64;
            for event in older.iter().cloned().chain(own) {
                self.record(queue, &key, event);
            }
        }
        added
    }

    fn sweep_history(&mut self, req: &HistorySweepRequest) -> u64 {
        let Some(histories) = self.histories.get_mut(&req.queue) else { return 0 };
        let mut deleted = 0;
        while deleted < u64::from(req.limit.max(1))
            && let Some((latest, _)) = histories.by_latest.first()
            && *latest < req.before
        {
            if let Some((_, key)) = histories.by_latest.pop_first() {
                histories.by_key.remove(&key);
                deleted += 1;
            }
        }
        if histories.by_key.is_empty() {
            self.histories.remove(&req.queue);
        }
        deleted
    }

    fn list(&self, req: &ListRequest) -> Result<Page> {
        let after = req.cursor.as_deref().map(parse_list_cursor).transpose()?;
        let Some(queue) = self.queues.get(&req.queue) else { return Ok(Page::new(Vec::new(), None)) };
        let limit = req.limit.max(1) as usize;
        let is_after = |task: &Task| after.as_ref().is_none_or(|(due, key)| (task.due_at, &task.key) > (*due, key));
        let mut tasks: Vec<&Task> = match &req.tag {
            // A pass over the tag's tasks, whatever else the queue holds.
            Some(tag) => {
                let mut tagged: Vec<&Task> = queue
                    .tags
                    .get(tag)
                    .into_iter()
                    .flatten()
                    .map(|key| queue.task(key))
                    .filter(|task| req.state.is_none_or(|state| task.state == state) && is_after(task))
                    .collect();
                tagged.sort_by(|a, b| (a.due_at, &a.key).cmp(&(b.due_at, &b.key)));
                tagged.truncate(limit + 1);
                tagged
            }
            None => {
                let index = req.state.map_or(&queue.by_due, |state| queue.in_state(state));
                let from = after.map_or(Bound::Unbounded, Bound::Excluded);
                index.range((from, Bound::Unbounded)).take(limit + 1).map(|(_, key)| queue.task(key)).collect()
            }
        };
        let more = tasks.len() > limit;
        tasks.truncate(limit);
        let next_cursor = tasks.last().filter(|_| more).map(|last| format!("{}.{}", last.due_at.as_millis(), last.key));
        Ok(Page::new(tasks.into_iter().cloned().collect(), next_cursor))
    }

    /// Cursors are the last group's name.
    fn groups(&self, req: &GroupsRequest) -> Result<GroupsPage> {
        let after = req.cursor.as_deref().map(|cursor| Group::new(cursor).map_err(|_| foreign_cursor())).transpose()?;
        let Some(queue) = self.queues.get(&req.queue) else { return Ok(GroupsPage::new(Vec::new(), None)) };
        let limit = req.limit.max(1) as usize;
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut groups: Vec<GroupCounts> = queue
            .groups
            .range((from, Bound::Unbounded))
            .take(limit + 1)
            .map(|(name, g)| GroupCounts::new(name.clone(), g.tasks - g.leased - g.dead, g.leased, g.dead))
            .collect();
        let more = groups.len() > limit;
        groups.truncate(limit);
        let next_cursor = groups.last().filter(|_| more).map(|last| last.group.to_string());
        Ok(GroupsPage::new(groups, next_cursor))
    }

    fn completions(&mut self, req: &CompletionsRequest) -> Result<CompletionsPage> {
        self.drop_ended_records(req.now);
        let after =
            req.cursor.as_deref().map(|cursor| TaskKey::new(cursor).map_err(|_| foreign_cursor())).transpose()?;
        let limit = req.limit.max(1) as usize;
        // Slots sort by queue, then key: the queue's records are one run of them.
        let mut records: Vec<Completed> = self
            .completed
            .iter()
            .skip_while(|((queue, key), _)| {
                *queue < req.queue || (*queue == req.queue && after.as_ref().is_some_and(|after| key <= after))
            })
            .take_while(|((queue, _), _)| *queue == req.queue)
            .take(limit + 1)
            .map(|(_, record)| record.clone())
            .collect();
        let more = records.len() > limit;
        records.truncate(limit);
        let next_cursor = records.last().filter(|_| more).map(|last| last.key.to_string());
        Ok(CompletionsPage::new(records, next_cursor))
    }

    fn import(&mut self, req: ImportRequest) -> Vec<Imported> {
        self.drop_ended_records(req.now);
        let answers = req
            .tasks
            .into_iter()
            .map(|task| {
                if self.get(&task.queue, &task.key).is_some() {
                    return Imported::Present;
                }
                self.last_id += 1;
                let task = transitions::imported(task, self.store, self.last_id);
                self.record(&task.queue, &task.key, HistoryEvent::imported(&task, req.now));
                self.put(task);
                Imported::Written
            })
            .collect();
        for record in req.completions.into_iter().filter(|record| record.holds_at(req.now)) {
            if !self.completed.contains_key(&(record.queue.clone(), record.key.clone())) {
                self.remember(record);
            }
        }
        answers
    }

    fn lease(&mut self, req: &LeaseRequest) -> LeaseBatch {
        let prefer = std::mem::take(&mut self.prefer);
        if let Some(slots) = self.group_slots.get_mut(&req.queue) {
            slots.retain(|_, group| group.forget_ended(req.now));
        }
        let mut leases = Vec::new();
        while leases.len() < req.max.max(1) as usize {
            let Some((group, key)) = self.next_head(req, &prefer) else { break };
            let Some(task) = self.get(&req.queue, &key) else { break };
            let leased = transitions::lease(task, req.lease_for, req.now);
            let event = HistoryEvent::leased(&leased, req.by.as_ref(), req.node.as_deref(), req.now);
            self.record(&req.queue, &key, event);
            self.put(leased.clone());
            leases.push(Lease::of(leased));
            let turns = self.turns.entry(req.queue.clone()).or_default();
            turns.last += 1;
            let turn = turns.last;
            match group {
                None => turns.ungrouped = turn,
                Some(group) => {
                    if let Some(state) = self.queues.get_mut(&req.queue).and_then(|q| q.groups.get_mut(&group)) {
                        state.turn = turn;
                    }
                    if let Some(rate) = req.group_rate {
                        let slots = self.group_slots.entry(req.queue.clone()).or_default();
                        slots.entry(group).or_default().take(rate, req.now);
                    }
                }
            }
        }
        let slots = self.group_slots.get(&req.queue);
        let next_due = self.queues.get(&req.queue).and_then(|q| q.lane_next_due(req, slots));
        LeaseBatch::new(leases, next_due)
    }

    /// The task the next lease of `req` takes, with its group (see [`Store::lease`]).
    fn next_head(&self, req: &LeaseRequest, prefer: &[Slot]) -> Option<(Option<Group>, TaskKey)> {
        let queue = self.queues.get(&req.queue)?;
        let turns = self.turns.get(&req.queue).copied().unwrap_or_default();
        let head = |ready: &Ready| head_of(ready, req.lane, req.now, &req.queue, prefer);
        let ungrouped = head(&queue.ready).map(|(priority, key)| ((Reverse(priority), turns.ungrouped, None), key));
        let slots = self.group_slots.get(&req.queue);
        let open = queue.groups.iter().filter(|(name, group)| {
            has_room(group, req.group_limit) && held_until(slots.and_then(|slots| slots.get(*name)), req).is_none()
        });
        let grouped = open.filter_map(|(name, group)| {
            head(&group.ready).map(|(priority, key)| ((Reverse(priority), group.turn, Some(name)), key))
        });
        let (rank, key) = ungrouped.into_iter().chain(grouped).min_by(|a, b| a.0.cmp(&b.0))?;
        Some((rank.2.cloned(), key))
    }

    fn complete(&mut self, req: &CompleteRequest) -> Result<()> {
        self.drop_ended_records(req.now);
        let task = self.live(&req.token, req.now)?;
        let record = transitions::completion_record(task, &req.completion, req.now);
        let next = transitions::complete(task, &req.completion, req.now);
        let event = transitions::acked(task, &req.completion, req.now).by(req.by.as_ref()).report(req.report.as_ref());
        self.record(&req.token.queue, &req.token.key, event);
        match next {
            Some(next) => self.put(next),
            None => {
                self.take(&req.token.queue, &req.token.key);
            }
        }
        if let Some(record) = record {
            self.remember(record);
        }
        Ok(())
    }

    /// The task of the lease `token` if that lease is live at `now`, else `LeaseLost`.
    fn live(&self, token: &LeaseToken, now: Timestamp) -> Result<&Task> {
        transitions::live(self.get(&token.queue, &token.key), token, now)
    }

    fn reap(&mut self, now: Timestamp, limit: u32) -> ReapResult {
        let prefer = std::mem::take(&mut self.prefer);
        let expired = self.expiries.iter().take_while(|(expiry, ..)| *expiry <= now);
        let chosen =
            choose(expired.map(|(expiry, queue, key)| (*expiry, (queue.clone(), key.clone()))), limit, &prefer);
        let mut reaped = Vec::with_capacity(chosen.len());
        for (queue, key) in chosen {
            let Some(task) = self.get(&queue, &key) else { continue };
            let next = transitions::expire(task, now);
            let error = next.last_error.as_deref().unwrap_or_default();
            let event = HistoryEvent::expired(task.attempts + 1, task.meta.fence, next.state, error, now);
            self.record(&queue, &key, event);
            reaped.push(Reaped::new(queue, key, next.state));
            self.put(next);
        }
        // Expired leases left over (more than `limit`) are not live: skip them.
        let next_expiry = self.expiries.iter().map(|(expiry, ..)| *expiry).find(|expiry| *expiry > now);
        ReapResult::new(reaped, next_expiry)
    }

    /// Moves the dead task `req` names back to work; it, or `None` if not dead.
    fn revive(&mut self, req: &RetryDeadRequest) -> Option<Task> {
        let revived = transitions::retry_dead(self.get(&req.queue, &req.key)?, req.now)?;
        self.record(&req.queue, &req.key, HistoryEvent::retried(req.by.as_ref(), req.now));
        self.put(revived.clone());
        Some(revived)
    }

    /// Cursors: with every dead task, the first batch's now in epoch ms (each batch
    /// takes the earliest deaths up to it, and revives all it looked at, so the next
    /// starts again from the earliest); with a tag, the last key looked at.
    fn retry_dead_batch(&mut self, req: &RetryDeadBatchRequest) -> Result<RetriedDead> {
        let limit = req.limit.max(1) as usize;
        let bad_cursor = foreign_cursor;
        let Some(queue) = self.queues.get(&req.queue) else { return Ok(RetriedDead::new(0, None)) };
        let (looked_at, next_cursor): (Vec<TaskKey>, Option<String>) = match &req.selection {
            DeadSelection::All => {
                let bound = match req.cursor.as_deref() {
                    Some(cursor) => Timestamp::from_millis(cursor.parse().map_err(|_| bad_cursor())?),
                    None => req.now,
                };
                let keys: Vec<TaskKey> = queue
                    .deaths
                    .iter()
                    .take_while(|(died, _)| *died <= bound)
                    .take(limit)
                    .map(|(_, key)| key.clone())
                    .collect();
                let more = keys.len() == limit;
                (keys, more.then(|| bound.as_millis().to_string()))
            }
            DeadSelection::Tagged(tag) => {
                let after =
                    req.cursor.as_deref().map(|cursor| TaskKey::new(cursor).map_err(|_| bad_cursor())).transpose()?;
                let from = after.map_or(Bound::Unbounded, Bound::Excluded);
                let keys: Vec<TaskKey> = queue
                    .tags
                    .get(tag)
                    .map(|keys| keys.range((from, Bound::Unbounded)).take(limit).cloned().collect())
                    .unwrap_or_default();
                let next = keys.last().filter(|_| keys.len() == limit).map(|last| last.to_string());
                (keys, next)
            }
            // A key given twice counts once.
            DeadSelection::Keys(keys) => (keys.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect(), None),
        };
        let retried = looked_at
            .into_iter()
            .filter_map(|key| self.revive(&RetryDeadRequest::new(req.queue.clone(), key, req.now).by(req.by.clone())))
            .count();
        Ok(RetriedDead::new(retried as u64, next_cursor))
    }

    fn sweep_dead(&mut self, req: &SweepRequest) -> Swept {
        let prefer = std::mem::take(&mut self.prefer);
        let Some(queue) = self.queues.get(&req.queue) else { return Swept::new(0, None) };
        let due = queue.deaths.iter().take_while(|(died, _)| *died <= req.died_by);
        let chosen = choose(due.map(|(died, key)| (*died, (req.queue.clone(), key.clone()))), req.limit, &prefer);
        let deleted = HistoryEvent::new(SystemClock.now(), EventKind::Deleted, None, None);
        let deleted = chosen.iter().filter(|(queue, key)| self.remove(queue, key, &deleted)).count();
        let oldest = self.queues.get(&req.queue).and_then(|q| q.deaths.first()).map(|(died, _)| *died);
        Swept::new(deleted as u64, oldest)
    }

    fn stats(&self, queue: Option<&QueueName>) -> Vec<QueueStats> {
        match queue {
            Some(name) => vec![match self.queues.get(name) {
                Some(queue) => queue.stats(name.clone()),
                None => QueueStats::new(name.clone(), 0, 0, 0, None),
            }],
            // Empty queues are removed, so every queue listed holds a task.
            None => self.queues.iter().map(|(name, queue)| queue.stats(name.clone())).collect(),
        }
    }
}

/// The first `limit` (at least 1) of `candidates`, which come sorted by their order
/// (a time, or a priority and a time) and then by the store's order; except that among
/// candidates of equal order, those in `prefer` go first, in its order.
fn choose<O: Ord + Copy>(candidates: impl Iterator<Item = (O, Slot)>, limit: u32, prefer: &[Slot]) -> Vec<Slot> {
    let limit = limit.max(1) as usize;
    let mut picked: Vec<(O, Slot)> = Vec::new();
    for (at, slot) in candidates {
        // Past `limit`, only the ties of the last one taken can still be preferred.
        let full = picked.len() >= limit;
        if full && (prefer.is_empty() || picked.last().is_some_and(|(last, _)| at > *last)) {
            break;
        }
        picked.push((at, slot));
    }
    let rank = |slot: &Slot| prefer.iter().position(|first| first == slot).unwrap_or(usize::MAX);
    // Stable: the store's own order stays among the tasks not preferred.
    picked.sort_by_key(|(at, slot)| (*at, rank(slot)));
    picked.truncate(limit);
    picked.into_iter().map(|(_, slot)| slot).collect()
}

/// The refusal of a cursor this store did not issue.
fn foreign_cursor() -> Error {
    Error::invalid("cursor", "this cursor was not issued by this store; start again without one")
}

/// List cursors are `<due_at ms>.<key>` of the last task of the page.
fn parse_list_cursor(cursor: &str) -> Result<(Timestamp, TaskKey)> {
    let bad = foreign_cursor;
    let (due, key) = cursor.split_once('.').ok_or_else(bad)?;
    let due = Timestamp::from_millis(due.parse().map_err(|_| bad())?);
    Ok((due, TaskKey::new(key).map_err(|_| bad())?))
}

impl Store for MemoryStore {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        let mut inner = self.open()?;
        inner.drop_ended_records(now);
        Ok(tasks.into_iter().map(|new| inner.schedule_one(new, now)).collect())
    }

    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        Ok(self.open()?.get(queue, key).cloned())
    }

    async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        Ok(self.open()?.cancel(queue, key, by))
    }

    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        Ok(self.open()?.cancel_tag(queue, tag, by))
    }

    async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        let mut inner = self.open()?;
        if inner.marks.holds(&req.row) {
            return Ok(None);
        }
        let effect = match req.op {
            OnceOp::Schedule(task) => {
                inner.drop_ended_records(req.now);
                OnceEffect::Scheduled(Box::new(inner.schedule_one(*task, req.now)?))
            }
            OnceOp::Cancel { queue, key } => OnceEffect::Cancelled(inner.cancel(&queue, &key, None)),
            OnceOp::CancelTag { queue, tag } => OnceEffect::CancelledTag(inner.cancel_tag(&queue, &tag, None)),
        };
        inner.marks.mark(&req.row, req.now);
        Ok(Some(effect))
    }

    async fn list(&self, req: ListRequest) -> Result<Page> {
        self.open()?.list(&req)
    }

    async fn groups(&self, req: GroupsRequest) -> Result<GroupsPage> {
        self.open()?.groups(&req)
    }

    async fn completions(&self, req: CompletionsRequest) -> Result<CompletionsPage> {
        self.open()?.completions(&req)
    }

    async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        Ok(self.open()?.import(req))
    }

    async fn queue_names(&self) -> Result<Vec<QueueName>> {
        let inner = self.open()?;
        let names: BTreeSet<&QueueName> = inner
            .queues
            .keys()
            .chain(inner.completed.keys().map(|(queue, _)| queue))
            .chain(inner.histories.keys())
            .collect();
        Ok(names.into_iter().cloned().collect())
    }

    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        Ok(self.open()?.lease(&req))
    }

    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.open()?.complete(&req)
    }

    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        let mut inner = self.open()?;
        Ok(reqs.iter().map(|req| inner.complete(req)).collect())
    }

    async fn extend(&self, req: ExtendRequest) -> Result<Timestamp> {
        let mut inner = self.open()?;
        let extended = transitions::extend(inner.live(&req.token, req.now)?, req.lease_for, req.now);
        let until =
            extended.lease_expires_at.ok_or_else(|| Error::Internal("an extended lease has an expiry".into()))?;
        let event = HistoryEvent::extended(req.token.fence, until, req.by.as_ref(), req.now);
        inner.record(&req.token.queue, &req.token.key, event);
        inner.put(extended);
        Ok(until)
    }

    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        let mut inner = self.open()?;
        let released = transitions::release(inner.live(token, now)?, now);
        let event = HistoryEvent::released(token.fence, now);
        inner.record(&token.queue, &token.key, event);
        inner.put(released);
        Ok(())
    }

    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        Ok(self.open()?.reap(now, limit))
    }

    async fn retry_dead(&self, req: RetryDeadRequest) -> Result<Option<Task>> {
        Ok(self.open()?.revive(&req))
    }

    async fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> Result<RetriedDead> {
        self.open()?.retry_dead_batch(&req)
    }

    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        let mut inner = self.open()?;
        let dead = inner.get(queue, key).is_some_and(transitions::is_dead);
        Ok(dead && inner.remove(queue, key, &HistoryEvent::new(SystemClock.now(), EventKind::Deleted, by, None)))
    }

    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        Ok(self.open()?.sweep_dead(&req))
    }

    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        Ok(self.open()?.stats(queue))
    }

    async fn purge(&self, req: PurgeRequest) -> Result<u64> {
        Ok(self.open()?.purge(&req))
    }

    async fn history(&self, req: HistoryRequest) -> Result<Vec<HistoryEvent>> {
        Ok(self.open()?.history(&req))
    }

    async fn histories(&self, req: HistoriesRequest) -> Result<HistoriesPage> {
        self.open()?.histories(&req)
    }

    async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        Ok(self.open()?.import_histories(queue, histories))
    }

    async fn sweep_history(&self, req: HistorySweepRequest) -> Result<u64> {
        Ok(self.open()?.sweep_history(&req))
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<()> {
        self.open()?.append_audit(entry);
        Ok(())
    }

    async fn audit(&self, req: AuditRequest) -> Result<Vec<AuditEntry>> {
        let inner = self.open()?;
        let below = req.before.map_or(Bound::Unbounded, Bound::Excluded);
        let newest = inner.audit.range((Bound::Unbounded, below)).rev();
        Ok(newest.take(req.limit.max(1) as usize).map(|(_, entry)| entry.clone()).collect())
    }

    async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        let mut inner = self.open()?;
        let old: Vec<u64> = inner
            .audit
            .iter()
            .take_while(|(_, entry)| entry.at < before)
            .take(limit.max(1) as usize)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in &old {
            inner.audit.remove(seq);
        }
        Ok(old.len() as u64)
    }

    async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        Ok(self.open()?.records.get(queue).cloned())
    }

    async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        Ok(self.open()?.records.values().cloned().collect())
    }

    async fn change_queue(&self, req: QueueChangeRequest) -> Result<QueueRecord> {
        let mut inner = self.open()?;
        let changed = transitions::change_queue(inner.records.get(&req.queue), &req)?;
        inner.append_audit(req.audit_entry());
        inner.records.insert(req.queue, changed.clone());
        Ok(changed)
    }

    async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        Ok(self.open()?.calendars.values().cloned().collect())
    }

    async fn change_calendar(&self, req: CalendarChangeRequest) -> Result<CalendarRecord> {
        let mut inner = self.open()?;
        let changed = change_calendar(inner.calendars.get(&req.name), &req)?;
        inner.append_audit(req.audit_entry());
        inner.calendars.insert(req.name, changed.clone());
        Ok(changed)
    }

    async fn secret(&self) -> Result<[u8; 32]> {
        self.open().map(|_| self.secret)
    }

    async fn close(&self) -> Result<()> {
        let mut inner = self.inner.lock().map_err(|_| Error::Internal("a panic poisoned the memory store".into()))?;
        inner.closed = true;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use std::time::Duration;

    use super::*;

    const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    fn slot(key: &str) -> Slot {
        (QueueName::new("q").unwrap(), TaskKey::new(key).unwrap())
    }

    fn due_at(key: &str, at: Timestamp) -> NewTask {
        let (queue, key) = slot(key);
        NewTask::new(queue, key, at)
    }

    /// Guards against a lease that scans the pending tasks: with 100,000 waiting, a
    /// lease that cost a pass over them would make these 10,000 one-task leases visit
    /// a billion entries (minutes in a debug build; a few seconds here) instead of a
    /// few hundred thousand; the reap of their leases likewise reads only what it ends.
    #[tokio::test]
    async fn leasing_from_many_pending_tasks_costs_what_it_hands_out() {
        let store = MemoryStore::new();
        let tasks: Vec<NewTask> = (0..100_000).map(|i| due_at(&format!("k{i:06}"), T0)).collect();
        store.schedule(tasks, T0).await.unwrap();
        let queue = slot("k").0;
        for i in 0..10_000 {
            let batch = store.lease(LeaseRequest::new(queue.clone(), 1, Duration::from_secs(30), T0)).await.unwrap();
            assert_eq!(batch.leases[0].token.key.as_str(), format!("k{i:06}"), "earliest first, ties by key");
            assert_eq!(batch.next_due, Some(T0));
        }
        let reaped = store.reap(T0.saturating_add(Duration::from_secs(30)), 10_000).await.unwrap();
        assert_eq!((reaped.reaped.len(), reaped.next_expiry), (10_000, None));
    }

    #[tokio::test]
    async fn a_preference_reorders_only_ties_and_is_used_once() {
        let store = MemoryStore::new();
        let later = T0.saturating_add(Duration::from_secs(1));
        store.schedule(vec![due_at("a", T0), due_at("b", T0), due_at("c", later)], later).await.unwrap();
        store.prefer_among_ties(vec![slot("c"), slot("b")]);
        let batch = store.lease(LeaseRequest::new(slot("a").0, 2, Duration::from_secs(5), later)).await.unwrap();
        let keys: Vec<&str> = batch.leases.iter().map(|lease| lease.token.key.as_str()).collect();
        assert_eq!(keys, ["b", "a"], "c is due later, so it waits; b goes before a, its tie");
        let batch = store.lease(LeaseRequest::new(slot("a").0, 1, Duration::from_secs(5), later)).await.unwrap();
        assert_eq!(batch.leases[0].token.key.as_str(), "c");
    }

    #[tokio::test]
    async fn a_cursor_from_elsewhere_is_refused() {
        let store = MemoryStore::new();
        store.schedule(vec![due_at("a", T0)], T0).await.unwrap();
        for cursor in ["", "12", "x.a", "12.\n"] {
            let request = ListRequest::new(slot("a").0, None, 1, Some(cursor.to_string()));
            assert_eq!(store.list(request).await.unwrap_err().field(), Some("cursor"), "{cursor:?}");
        }
    }
}
