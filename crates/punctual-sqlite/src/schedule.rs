//! Scheduling: a batch of tasks, each created, kept or replaced by its `if_exists`, or
//! kept by a dedupe window (a completion record of its key, or its dead task's window).
//!
//! Invariants: a created and a replaced task are written from one list of columns
//! ([`WRITTEN`]): a replaced task starts over as a created one does (first occurrence,
//! no attempts, no lease, no error, in the scheduled code of its lane), keeping only
//! its id, fence and creation time, its version one more. Both anchor the task at
//! `transitions::anchor` of the task once debounced (its `scheduled_for`, or the due
//! time a debounce brought before it) and write its timing as JSON, NULL when every
//! policy is the default. An imported task (`import`) is written from the same list
//! ([`IMPORT`]), but for the columns a schedule starts over ([`IMPORTED`]), which it
//! writes as the task gives them, as it does its state code, anchor, debounce bound,
//! version and times. Every parameter of those statements is bound by name (checked by
//! a `debug_assert!`).

use std::time::Duration;

use punctual_core::history::{HistoryEvent, encode};
use punctual_core::policy::Timing;
use punctual_core::store::{ScheduleOutcome, Scheduled, corrupt};
use punctual_core::{
    Error, IfExists, Lane, NewTask, Repeat, Result, StoreId, Tag, Target, Task, TaskMeta, Timestamp, transitions,
};
use rusqlite::{Connection, Statement, ToSql};

use crate::codes::{Sql, code_of, code_of_scheduled};
use crate::history;
use crate::queues::QueueIds;
use crate::tasks::{KeyRow, delete_tags, load_counting, retire_kept, write_tags};
use crate::{completions, map_err};

/// Every column a schedule writes, created or replaced alike, with its value: SQL, or a
/// parameter that [`Written::run`] binds.
const WRITTEN: [(&str, &str); 23] = [
    ("state", ":state"),
    ("due_at", ":due_at"),
    ("lease_expires_at", "NULL"),
    ("attempts", "0"),
    ("max_attempts", ":max_attempts"),
    ("occurrence", "1"),
    ("anchor", ":anchor"),
    ("backoff_initial_ms", ":backoff_initial_ms"),
    ("backoff_factor", ":backoff_factor"),
    ("backoff_max_ms", ":backoff_max_ms"),
    ("repeat", ":repeat"),
    ("tags", ":tags"),
    ("payload", ":payload"),
    ("updated_at", ":now"),
    ("last_error", "NULL"),
    ("target", ":target"),
    ("priority", ":priority"),
    ("debounce_until", ":debounce_until"),
    ("group_name", ":group_name"),
    ("unique_window_ms", ":unique_window_ms"),
    ("unique_dead", ":unique_dead"),
    ("timing", ":timing"),
    ("traceparent", ":traceparent"),
];

/// A new row: [`WRITTEN`], and the columns only a creation writes; its first history
/// event, `:told`, pending (see `history`).
static INSERT: Sql = Sql::new(|| {
    let (columns, values): (Vec<&str>, Vec<&str>) = WRITTEN.into_iter().unzip();
    format!(
        "INSERT OR FAIL INTO tasks (queue_id, key, fence, version, created_at, pending_count, pending_events, {}) \
         VALUES (:queue_id, :key, 0, 1, :now, 1, :told, {})",
        columns.join(", "),
        values.join(", ")
    )
});

/// The columns that an import writes as the task gives them where a schedule starts
/// over, with their parameters.
const IMPORTED: [(&str, &str); 4] = [
    ("lease_expires_at", ":lease_expires_at"),
    ("attempts", ":attempts"),
    ("occurrence", ":occurrence"),
    ("last_error", ":last_error"),
];

/// A new row holding a task as another store held it (`import`): [`WRITTEN`], but the
/// columns of [`IMPORTED`] as the task gives them, its version and creation time, and
/// a fence of 0; its id, as a creation's, the next of `tasks`' sequence; its first
/// history event here, `:told`, pending.
pub(crate) static IMPORT: Sql = Sql::new(|| {
    let (columns, values): (Vec<&str>, Vec<&str>) = WRITTEN
        .into_iter()
        .map(|(column, value)| {
            let imported = IMPORTED.iter().find(|(name, _)| *name == column);
            (column, imported.map_or(value, |(_, parameter)| *parameter))
        })
        .unzip();
    debug_assert!(
        IMPORTED.iter().all(|(column, _)| columns.contains(column)),
        "every imported column is one that a schedule writes"
    );
    format!(
        "INSERT OR FAIL INTO tasks (queue_id, key, fence, version, created_at, pending_count, pending_events, {}) \
         VALUES (:queue_id, :key, 0, :version, :created_at, 1, :told, {})",
        columns.join(", "),
        values.join(", ")
    )
});

/// The row `:id` written again: [`WRITTEN`], its version one more, and the history
/// event `:told` appended to its pending ones.
static REPLACE: Sql = Sql::new(|| {
    let assignments: Vec<String> = WRITTEN.iter().map(|(column, value)| format!("{column} = {value}")).collect();
    format!(
        "UPDATE OR FAIL tasks SET version = version + 1, {}, {} WHERE id = :id",
        assignments.join(", "),
        history::appending(":told")
    )
});

/// The parameters of [`WRITTEN`], as a task to schedule gives them.
pub(crate) struct Written {
    state: i64,
    due_at: i64,
    anchor: i64,
    max_attempts: u32,
    backoff_initial_ms: i64,
    backoff_factor: f64,
    backoff_max_ms: i64,
    repeat: Option<String>,
    tags: Option<String>,
    payload: String,
    now: i64,
    target: Option<String>,
    priority: u8,
    debounce_until: Option<i64>,
    group_name: Option<String>,
    unique_window_ms: Option<i64>,
    unique_dead: bool,
    timing: Option<String>,
    traceparent: Option<String>,
}

impl Written {
    /// The parameters of `task`, once debounced (its due time no later than
    /// `debounce_until`), so that its anchor is [`transitions::anchor`]'s.
    fn of(task: &NewTask, debounce_until: Option<Timestamp>, now: Timestamp) -> Result<Written> {
        Ok(Written {
            // The lane of the task written, as `Task::lane` gives it.
            state: code_of_scheduled(
                if task.target.is_some() { Lane::Target } else { Lane::Handler },
                task.group.is_some(),
            ),
            due_at: task.due_at.as_millis(),
            anchor: transitions::anchor(task).as_millis(),
            max_attempts: task.max_attempts,
            backoff_initial_ms: ms(task.backoff.initial()),
            backoff_factor: task.backoff.factor(),
            backoff_max_ms: ms(task.backoff.max()),
            repeat: repeat_json(task.repeat.as_ref())?,
            tags: tags_json(&task.tags)?,
            payload: payload_json(&task.payload)?,
            now: now.as_millis(),
            target: task.target.as_ref().map(Target::to_stored),
            priority: task.priority.get(),
            debounce_until: debounce_until.map(Timestamp::as_millis),
            group_name: task.group.as_ref().map(|group| group.as_str().to_owned()),
            unique_window_ms: task.unique_for.map(|unique| ms(unique.window)),
            unique_dead: task.unique_for.is_some_and(|unique| unique.dead),
            timing: timing_json(&task.timing)?,
            traceparent: task.traceparent.as_ref().map(|trace| trace.as_str().to_owned()),
        })
    }

    /// The parameters of `task` as it stands, for [`IMPORT`]: its state code, its anchor
    /// and debounce bound, and its `updated_at` as `:now`.
    pub(crate) fn of_task(task: &Task) -> Result<Written> {
        Ok(Written {
            state: code_of(task),
            due_at: task.due_at.as_millis(),
            anchor: task.meta.anchor.as_millis(),
            max_attempts: task.max_attempts,
            backoff_initial_ms: ms(task.backoff.initial()),
            backoff_factor: task.backoff.factor(),
            backoff_max_ms: ms(task.backoff.max()),
            repeat: repeat_json(task.repeat.as_ref())?,
            tags: tags_json(&task.tags)?,
            payload: payload_json(&task.payload)?,
            now: task.updated_at.as_millis(),
            target: task.target.as_ref().map(Target::to_stored),
            priority: task.priority.get(),
            debounce_until: task.meta.debounce_until.map(Timestamp::as_millis),
            group_name: task.group.as_ref().map(|group| group.as_str().to_owned()),
            unique_window_ms: task.unique_for.map(|unique| ms(unique.window)),
            unique_dead: task.unique_for.is_some_and(|unique| unique.dead),
            timing: timing_json(&task.timing)?,
            traceparent: task.traceparent.as_ref().map(|trace| trace.as_str().to_owned()),
        })
    }

    /// Runs `sql` by `call` with these parameters and `more`, each bound by its name.
    pub(crate) fn run<'a, T>(
        &'a self,
        conn: &Connection,
        sql: &str,
        more: &[(&'static str, &'a dyn ToSql)],
        call: impl FnOnce(&mut Statement<'_>, &[(&'static str, &'a dyn ToSql)]) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut bound: Vec<(&'static str, &dyn ToSql)> = vec![
            (":state", &self.state),
            (":due_at", &self.due_at),
            (":anchor", &self.anchor),
            (":max_attempts", &self.max_attempts),
            (":backoff_initial_ms", &self.backoff_initial_ms),
            (":backoff_factor", &self.backoff_factor),
            (":backoff_max_ms", &self.backoff_max_ms),
            (":repeat", &self.repeat),
            (":tags", &self.tags),
            (":payload", &self.payload),
            (":now", &self.now),
            (":target", &self.target),
            (":priority", &self.priority),
            (":debounce_until", &self.debounce_until),
            (":group_name", &self.group_name),
            (":unique_window_ms", &self.unique_window_ms),
            (":unique_dead", &self.unique_dead),
            (":timing", &self.timing),
            (":traceparent", &self.traceparent),
        ];
        bound.extend_from_slice(more);
        let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
        debug_assert_eq!(stmt.parameter_count(), bound.len(), "every parameter of {sql} is bound");
        call(&mut stmt, &bound).map_err(map_err)
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn json_error(e: serde_json::Error) -> Error {
    Error::Internal(e.to_string())
}

fn payload_json(payload: &serde_json::Value) -> Result<String> {
    serde_json::to_string(payload).map_err(json_error)
}

fn tags_json(tags: &[Tag]) -> Result<Option<String>> {
    (!tags.is_empty()).then(|| serde_json::to_string(tags)).transpose().map_err(json_error)
}

fn repeat_json(repeat: Option<&Repeat>) -> Result<Option<String>> {
    repeat.map(serde_json::to_string).transpose().map_err(json_error)
}

/// NULL for the defaults: the usual task stores no more than before timing.
fn timing_json(timing: &Timing) -> Result<Option<String>> {
    (!timing.is_default()).then(|| serde_json::to_string(timing)).transpose().map_err(json_error)
}

pub(crate) fn schedule(
    conn: &Connection,
    store: StoreId,
    tasks: Vec<NewTask>,
    now: Timestamp,
) -> Result<Vec<Result<Scheduled>>> {
    let mut queue_ids = QueueIds::default();
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(schedule_in(conn, &mut queue_ids, store, task, now)?);
    }
    Ok(results)
}

/// The outer `Result` fails the whole batch (the store cannot write); the inner one is
/// this task's own answer.
pub(crate) fn schedule_one(
    conn: &Connection,
    store: StoreId,
    task: NewTask,
    now: Timestamp,
) -> Result<Result<Scheduled>> {
    schedule_in(conn, &mut QueueIds::default(), store, task, now)
}

/// [`schedule_one`], with the queue ids its job read so far.
fn schedule_in(
    conn: &Connection,
    queue_ids: &mut QueueIds,
    store: StoreId,
    mut task: NewTask,
    now: Timestamp,
) -> Result<Result<Scheduled>> {
    let queue_id = queue_ids.get_or_create(conn, &task.queue)?;
    // The task under the key, with how many history events it has pending; or the row
    // a done task left, which a task created under the key takes the place of.
    let (existing, kept) = match load_counting(conn, store, queue_id, &task.queue, task.key.as_str())? {
        Some(KeyRow::Task(old, pending)) => (Some((*old, pending)), None),
        Some(KeyRow::Kept(id)) => (None, Some(id)),
        None => (None, None),
    };
    // Dedupe windows first, whatever the task's own if_exists.
    match &existing {
        Some((old, _)) if transitions::held_dead(old, now) => {
            return Ok(Ok(Scheduled::new(ScheduleOutcome::Kept, old.clone())));
        }
        Some(_) => {}
        None => {
            if let Some(record) = completions::holding(conn, queue_id, &task.queue, &task.key, now)? {
                return Ok(Ok(Scheduled::kept_by(record)));
            }
        }
    }
    // As `transitions::create` and `replace` write it.
    let debounce_until = transitions::debounce(existing.as_ref().map(|(old, _)| old), &mut task, now);
    let written = Written::of(&task, debounce_until, now)?;
    match existing {
        None => {
            if let Some(id) = kept {
                retire_kept(conn, queue_id, task.key.as_str(), id)?;
            }
            let anchor = transitions::anchor(&task);
            let mut meta = TaskMeta::new(store, 0, 0, 1, anchor);
            meta.debounce_until = debounce_until;
            let by = task.by.take();
            let mut created = Task::from_new(task, meta, now);
            let told = encode(&HistoryEvent::created(&created, by.as_ref(), now));
            let key = created.key.as_str();
            let more: [(&str, &dyn ToSql); 3] = [(":queue_id", &queue_id), (":key", &key), (":told", &told)];
            let id = written.run(conn, &INSERT, &more, |stmt, bound| stmt.insert(bound))?;
            write_tags(conn, queue_id, id, &created.tags)?;
            created.meta.id = u64::try_from(id).map_err(corrupt)?;
            Ok(Ok(Scheduled::new(ScheduleOutcome::Created, created)))
        }
        Some((old, pending)) => match task.if_exists {
            IfExists::Keep => Ok(Ok(Scheduled::new(ScheduleOutcome::Kept, old))),
            IfExists::Error => Ok(Err(Error::Conflict(format!(
                "task '{}' already exists in queue '{}' (if_exists is error)",
                task.key, task.queue
            )))),
            IfExists::Replace => {
                let id = i64::try_from(old.meta.id).map_err(corrupt)?;
                delete_tags(conn, queue_id, id, &old.tags)?;
                let anchor = transitions::anchor(&task);
                let mut meta = TaskMeta::new(store, old.meta.id, old.meta.fence, 1, anchor);
                meta.debounce_until = debounce_until;
                let by = task.by.take();
                let mut replaced = Task::from_new(task, meta, now);
                replaced.version = old.version + 1;
                replaced.created_at = old.created_at;
                let told = encode(&HistoryEvent::replaced(&old, &replaced, by.as_ref(), now));
                written.run(conn, &REPLACE, &[(":id", &id), (":told", &told)], |stmt, bound| stmt.execute(bound))?;
                write_tags(conn, queue_id, id, &replaced.tags)?;
                history::settle(conn, queue_id, replaced.key.as_str(), id, pending + 1)?;
                Ok(Ok(Scheduled::new(ScheduleOutcome::Replaced, replaced)))
            }
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use punctual_core::policy::{Overlap, Timing};
    use punctual_core::{QueueName, TaskKey};

    use super::*;

    /// A task with the default timing stores NULL, as every task did before timing
    /// existed; one with a policy stores its JSON, and a replace by a task without one
    /// clears it.
    #[test]
    fn only_a_task_with_a_policy_stores_its_timing() {
        let conn = crate::schema::in_memory();
        let (store, now) = (StoreId::from_bits(7), Timestamp::from_millis(1_000));
        let queue = QueueName::new("reminders").unwrap();
        let task = |name: &str, overlap| {
            let mut task = NewTask::new(queue.clone(), TaskKey::new(name).unwrap(), now);
            task.timing.overlap = overlap;
            task
        };
        let stored = |name: &str| -> Option<String> {
            conn.query_row("SELECT timing FROM tasks WHERE key = ?1", [name], |row| row.get(0)).unwrap()
        };
        let tasks = vec![task("plain", Overlap::Skip), task("queued", Overlap::Queue)];
        for result in schedule(&conn, store, tasks, now).unwrap() {
            result.unwrap();
        }
        assert_eq!(stored("plain"), None, "the default timing is NULL");
        let json = stored("queued").unwrap();
        assert_eq!(serde_json::from_str::<Timing>(&json).unwrap().overlap, Overlap::Queue);

        schedule(&conn, store, vec![task("queued", Overlap::Skip)], now).unwrap().pop().unwrap().unwrap();
        assert_eq!(stored("queued"), None, "a replace writes the new task's timing");
    }
}
