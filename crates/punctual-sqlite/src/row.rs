//! A task's row as every read of whole tasks selects it, and its decoding into a
//! [`Task`] stamped with the store's identity.
//!
//! Invariants: [`TASK_COLUMNS`] names the columns in the order [`RawTask::from_row`]
//! reads them, and every statement that returns whole tasks selects exactly them. A
//! row whose state code, counts, key or JSON cannot be read is corrupt data (an error),
//! never a task; a scheduled row's code names its lane (checked by a `debug_assert!`).

use std::time::Duration;

use punctual_core::policy::Timing;
use punctual_core::store::corrupt;
use punctual_core::{
    Backoff, Group, NewTask, Priority, QueueName, Repeat, Result, StoreId, Tag, Target, Task, TaskKey, TaskMeta,
    TaskState, Timestamp, TraceContext, Unique,
};
use rusqlite::Row;

use crate::codes::{KEPT, code_of_scheduled, state_of};

/// The task columns every read of whole tasks selects, in the order
/// [`RawTask::from_row`] reads them.
pub(crate) const TASK_COLUMNS: &str = "id, key, state, due_at, lease_expires_at, fence, version, attempts, \
    max_attempts, occurrence, anchor, backoff_initial_ms, backoff_factor, backoff_max_ms, repeat, tags, payload, \
    created_at, updated_at, last_error, target, priority, debounce_until, group_name, unique_window_ms, unique_dead, timing, \
    traceparent";

/// How many columns [`TASK_COLUMNS`] names: a statement may select more after them.
pub(crate) const TASK_COLUMN_COUNT: usize = 28;

/// The raw columns of one task row, decoded outside rusqlite's error type.
pub(crate) struct RawTask {
    id: i64,
    key: String,
    state: i64,
    due_at: i64,
    lease_expires_at: Option<i64>,
    fence: i64,
    version: i64,
    attempts: i64,
    max_attempts: i64,
    occurrence: i64,
    anchor: i64,
    backoff: (i64, f64, i64),
    repeat: Option<String>,
    tags: Option<String>,
    payload: String,
    created_at: i64,
    updated_at: i64,
    last_error: Option<String>,
    target: Option<String>,
    priority: i64,
    debounce_until: Option<i64>,
    group: Option<String>,
    unique: (Option<i64>, bool),
    timing: Option<String>,
    traceparent: Option<String>,
}

impl RawTask {
    /// Reads a row selected as [`TASK_COLUMNS`].
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<RawTask> {
        Ok(RawTask {
            id: row.get(0)?,
            key: row.get(1)?,
            state: row.get(2)?,
            due_at: row.get(3)?,
            lease_expires_at: row.get(4)?,
            fence: row.get(5)?,
            version: row.get(6)?,
            attempts: row.get(7)?,
            max_attempts: row.get(8)?,
            occurrence: row.get(9)?,
            anchor: row.get(10)?,
            backoff: (row.get(11)?, row.get(12)?, row.get(13)?),
            repeat: row.get(14)?,
            tags: row.get(15)?,
            payload: row.get(16)?,
            created_at: row.get(17)?,
            updated_at: row.get(18)?,
            last_error: row.get(19)?,
            target: row.get(20)?,
            priority: row.get(21)?,
            debounce_until: row.get(22)?,
            group: row.get(23)?,
            unique: (row.get(24)?, row.get(25)?),
            timing: row.get(26)?,
            traceparent: row.get(27)?,
        })
    }

    /// The task's group, as stored.
    pub(crate) fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// The row's id when it holds no task but a done task's kept events
    /// (`codes::KEPT`).
    pub(crate) fn kept(&self) -> Option<i64> {
        (self.state == KEPT).then_some(self.id)
    }

    /// The task of `queue` this row holds, stamped with the identity of `store`.
    pub(crate) fn decode(self, store: StoreId, queue: &QueueName) -> Result<Task> {
        let count = |n: i64| u32::try_from(n).map_err(|_| corrupt(format!("count {n} out of range")));
        let backoff = Backoff::new(
            Duration::from_millis(u64::try_from(self.backoff.0).unwrap_or(0)),
            self.backoff.1,
            Duration::from_millis(u64::try_from(self.backoff.2).unwrap_or(0)),
        )
        .map_err(corrupt)?;
        let repeat = self.repeat.map(|json| serde_json::from_str::<Repeat>(&json)).transpose().map_err(corrupt)?;
        let tags = match self.tags {
            Some(json) => tags_of(&json)?,
            None => Vec::new(),
        };
        let meta = TaskMeta::new(
            store,
            u64::try_from(self.id).map_err(corrupt)?,
            u64::try_from(self.fence).map_err(corrupt)?,
            count(self.occurrence)?,
            Timestamp::from_millis(self.anchor),
        );
        let mut meta = meta;
        meta.debounce_until = self.debounce_until.map(Timestamp::from_millis);
        let mut task = blank_task(queue.clone(), TaskKey::new(self.key).map_err(corrupt)?, meta);
        task.state = state_of(self.state)?;
        task.due_at = Timestamp::from_millis(self.due_at);
        task.payload = serde_json::from_str(&self.payload).map_err(corrupt)?;
        task.attempts = count(self.attempts)?;
        task.max_attempts = count(self.max_attempts)?;
        task.backoff = backoff;
        task.repeat = repeat;
        task.tags = tags;
        task.version = u64::try_from(self.version).map_err(corrupt)?;
        task.created_at = Timestamp::from_millis(self.created_at);
        task.updated_at = Timestamp::from_millis(self.updated_at);
        task.lease_expires_at = self.lease_expires_at.map(Timestamp::from_millis);
        task.last_error = self.last_error;
        task.target = self.target.as_deref().map(Target::from_stored).transpose()?;
        task.priority =
            u32::try_from(self.priority).map_err(corrupt).and_then(|level| Priority::new(level).map_err(corrupt))?;
        task.group = self.group.map(Group::new).transpose().map_err(corrupt)?;
        task.unique_for = unique_of(self.unique)?;
        task.timing = timing_of(self.timing.as_deref())?;
        task.traceparent = self.traceparent.map(TraceContext::new).transpose().map_err(corrupt)?;
        debug_assert!(
            task.state != TaskState::Scheduled || self.state == code_of_scheduled(task.lane(), task.group.is_some()),
            "a scheduled task's state code names its lane and whether it has a group"
        );
        Ok(task)
    }
}

/// The dedupe window that a row's `unique_window_ms` (NULL: none) and `unique_dead`
/// columns hold.
pub(crate) fn unique_of((window_ms, dead): (Option<i64>, bool)) -> Result<Option<Unique>> {
    let Some(ms) = window_ms else { return Ok(None) };
    let window = Unique::new(Duration::from_millis(u64::try_from(ms).map_err(corrupt)?));
    Ok(Some(if dead { window.counting_dead() } else { window }))
}

/// The timing policies a row's `timing` column holds (NULL: the defaults).
pub(crate) fn timing_of(json: Option<&str>) -> Result<Timing> {
    json.map_or(Ok(Timing::default()), |json| serde_json::from_str(json).map_err(corrupt))
}

/// The tags a row's `tags` column holds when not NULL (NULL: none).
pub(crate) fn tags_of(json: &str) -> Result<Vec<Tag>> {
    serde_json::from_str(json).map_err(corrupt)
}

/// A task value to fill in field by field (the struct is non-exhaustive).
pub(crate) fn blank_task(queue: QueueName, key: TaskKey, meta: TaskMeta) -> Task {
    Task::from_new(NewTask::new(queue, key, Timestamp::EPOCH), meta, Timestamp::EPOCH)
}

/// [`TASK_COLUMN_COUNT`] counts [`TASK_COLUMNS`], which [`RawTask::from_row`] reads.
#[test]
fn the_column_count_is_the_columns() {
    assert_eq!(TASK_COLUMNS.split(',').count(), TASK_COLUMN_COUNT);
}
