//! Each store operation as a plain function on a connection. Writes run inside the
//! writer's transaction (see `writer`), reads on a reader connection; none of them
//! commits or reads the clock. Functions that read tasks take the store's identity,
//! which every task read is stamped with (`meta.store`).

use std::time::Duration;

use punctual_core::store::{
    CompleteRequest, Completion, DeadSelection, ExtendRequest, Lease, LeaseBatch, LeaseRequest, LeaseToken,
    ListRequest, Page, PurgeRequest, PurgeSelection, QueueChangeRequest, QueueRecord, QueueStats, ReapResult, Reaped,
    RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, ScheduleOutcome, Scheduled, SweepRequest, Swept, corrupt,
};
use punctual_core::{
    Backoff, Error, IfExists, Lane, NewTask, QueueName, Repeat, Result, StoreId, Tag, Target, Task, TaskKey, TaskMeta,
    TaskState, Timestamp, transitions,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::schema::{
    DEAD, LEASED, SCHEDULED_HANDLER_LANE, SCHEDULED_TARGET_LANE, TASK_COLUMNS, scheduled_by_target, scheduled_code,
};
use crate::{map_err, writer};

fn state_of(code: i64) -> Result<TaskState> {
    match code {
        SCHEDULED_HANDLER_LANE | SCHEDULED_TARGET_LANE => Ok(TaskState::Scheduled),
        LEASED => Ok(TaskState::Leased),
        DEAD => Ok(TaskState::Dead),
        other => Err(corrupt(format!("unknown state {other}"))),
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The raw columns of one task row, decoded outside rusqlite's error type.
struct RawTask {
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
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawTask> {
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
    })
}

fn decode(store: StoreId, queue: &QueueName, raw: RawTask) -> Result<Task> {
    let count = |n: i64| u32::try_from(n).map_err(|_| corrupt(format!("count {n} out of range")));
    let backoff = Backoff::new(
        Duration::from_millis(u64::try_from(raw.backoff.0).unwrap_or(0)),
        raw.backoff.1,
        Duration::from_millis(u64::try_from(raw.backoff.2).unwrap_or(0)),
    )
    .map_err(corrupt)?;
    let repeat = raw.repeat.map(|json| serde_json::from_str::<Repeat>(&json)).transpose().map_err(corrupt)?;
    let tags = match raw.tags {
        Some(json) => serde_json::from_str::<Vec<Tag>>(&json).map_err(corrupt)?,
        None => Vec::new(),
    };
    let meta = TaskMeta::new(
        store,
        u64::try_from(raw.id).map_err(corrupt)?,
        u64::try_from(raw.fence).map_err(corrupt)?,
        count(raw.occurrence)?,
        Timestamp::from_millis(raw.anchor),
    );
    let mut task = blank_task(queue.clone(), TaskKey::new(raw.key).map_err(corrupt)?, meta);
    task.state = state_of(raw.state)?;
    task.due_at = Timestamp::from_millis(raw.due_at);
    task.payload = serde_json::from_str(&raw.payload).map_err(corrupt)?;
    task.attempts = count(raw.attempts)?;
    task.max_attempts = count(raw.max_attempts)?;
    task.backoff = backoff;
    task.repeat = repeat;
    task.tags = tags;
    task.version = u64::try_from(raw.version).map_err(corrupt)?;
    task.created_at = Timestamp::from_millis(raw.created_at);
    task.updated_at = Timestamp::from_millis(raw.updated_at);
    task.lease_expires_at = raw.lease_expires_at.map(Timestamp::from_millis);
    task.last_error = raw.last_error;
    task.target = raw.target.as_deref().map(Target::from_stored).transpose()?;
    debug_assert!(
        task.state != TaskState::Scheduled || raw.state == scheduled_code(task.lane()),
        "a scheduled task's state code names its lane"
    );
    Ok(task)
}

/// A task value to fill in field by field (the struct is non-exhaustive).
fn blank_task(queue: QueueName, key: TaskKey, meta: TaskMeta) -> Task {
    Task::from_new(NewTask::new(queue, key, Timestamp::EPOCH), meta, Timestamp::EPOCH)
}

/// The id of a queue, if it has ever held a task.
pub(crate) fn queue_id(conn: &Connection, queue: &QueueName) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM queues WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([queue.as_str()], |row| row.get(0)).optional())
        .map_err(map_err)
}

fn queue_id_or_create(conn: &Connection, queue: &QueueName) -> Result<i64> {
    if let Some(id) = queue_id(conn, queue)? {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO queues (name) VALUES (?1)")
        .and_then(|mut stmt| stmt.insert([queue.as_str()]))
        .map_err(map_err)
}

fn load(conn: &Connection, store: StoreId, queue_id: i64, queue: &QueueName, key: &str) -> Result<Option<Task>> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE queue_id = ?1 AND key = ?2");
    let raw = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, key], raw).optional())
        .map_err(map_err)?;
    raw.map(|raw| decode(store, queue, raw)).transpose()
}

fn load_by_id(conn: &Connection, store: StoreId, id: i64, queue: &QueueName) -> Result<Task> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1");
    let raw = conn.prepare_cached(&sql).and_then(|mut stmt| stmt.query_row([id], raw)).map_err(map_err)?;
    decode(store, queue, raw)
}

fn tags_json(tags: &[Tag]) -> Result<Option<String>> {
    if tags.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(tags).map(Some).map_err(|e| Error::Internal(e.to_string()))
}

fn write_tags(conn: &Connection, queue_id: i64, task_id: i64, tags: &[Tag]) -> Result<()> {
    let mut stmt = conn
        .prepare_cached("INSERT OR IGNORE INTO tags (queue_id, tag, task_id) VALUES (?1, ?2, ?3)")
        .map_err(map_err)?;
    for tag in tags {
        stmt.execute(params![queue_id, tag.as_str(), task_id]).map_err(map_err)?;
    }
    Ok(())
}

fn delete_tags(conn: &Connection, queue_id: i64, task_id: i64, tags: &[Tag]) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("DELETE FROM tags WHERE queue_id = ?1 AND tag = ?2 AND task_id = ?3").map_err(map_err)?;
    for tag in tags {
        stmt.execute(params![queue_id, tag.as_str(), task_id]).map_err(map_err)?;
    }
    Ok(())
}

fn delete_task(conn: &Connection, queue_id: i64, task: &Task) -> Result<()> {
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    delete_tags(conn, queue_id, id, &task.tags)?;
    conn.prepare_cached("DELETE FROM tasks WHERE id = ?1").and_then(|mut stmt| stmt.execute([id])).map_err(map_err)?;
    Ok(())
}

/// Deletes the tasks `ids` of one queue as `cancel` deletes one: each row with its
/// tags.
fn delete_ids(conn: &Connection, store: StoreId, queue_id: i64, queue: &QueueName, ids: &[i64]) -> Result<()> {
    for &id in ids {
        delete_task(conn, queue_id, &load_by_id(conn, store, id, queue)?)?;
    }
    Ok(())
}

pub(crate) fn schedule(
    conn: &Connection,
    store: StoreId,
    tasks: Vec<NewTask>,
    now: Timestamp,
) -> Result<Vec<Result<Scheduled>>> {
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(schedule_one(conn, store, task, now)?);
    }
    Ok(results)
}

/// The outer `Result` fails the whole batch (the store cannot write); the inner one is
/// this task's own answer.
fn schedule_one(conn: &Connection, store: StoreId, task: NewTask, now: Timestamp) -> Result<Result<Scheduled>> {
    let queue_id = queue_id_or_create(conn, &task.queue)?;
    let existing = load(conn, store, queue_id, &task.queue, task.key.as_str())?;
    let repeat =
        task.repeat.as_ref().map(serde_json::to_string).transpose().map_err(|e| Error::Internal(e.to_string()))?;
    let payload = serde_json::to_string(&task.payload).map_err(|e| Error::Internal(e.to_string()))?;
    let tags = tags_json(&task.tags)?;
    let (initial, factor, max) = (ms(task.backoff.initial()), task.backoff.factor(), ms(task.backoff.max()));
    let due = task.due_at.as_millis();
    let target = task.target.as_ref().map(Target::to_stored);
    // The lane of the task written, as `Task::lane` gives it.
    let state = scheduled_code(if task.target.is_some() { Lane::Target } else { Lane::Handler });
    match existing {
        None => {
            let sql = "INSERT INTO tasks (queue_id, key, state, due_at, lease_expires_at, fence, version, attempts, \
                       max_attempts, occurrence, anchor, backoff_initial_ms, backoff_factor, backoff_max_ms, repeat, tags, \
                       payload, created_at, updated_at, last_error, target) \
                       VALUES (?1, ?2, ?12, ?3, NULL, 0, 1, 0, ?4, 1, ?3, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, NULL, ?13)";
            let id = conn
                .prepare_cached(sql)
                .and_then(|mut stmt| {
                    stmt.insert(params![
                        queue_id,
                        task.key.as_str(),
                        due,
                        task.max_attempts,
                        initial,
                        factor,
                        max,
                        repeat,
                        tags,
                        payload,
                        now.as_millis(),
                        state,
                        target
                    ])
                })
                .map_err(map_err)?;
            write_tags(conn, queue_id, id, &task.tags)?;
            let meta = TaskMeta::new(store, u64::try_from(id).map_err(corrupt)?, 0, 1, task.due_at);
            Ok(Ok(Scheduled::new(ScheduleOutcome::Created, Task::from_new(task, meta, now))))
        }
        Some(old) => match task.if_exists {
            IfExists::Keep => Ok(Ok(Scheduled::new(ScheduleOutcome::Kept, old))),
            IfExists::Error => Ok(Err(Error::Conflict(format!(
                "task '{}' already exists in queue '{}' (if_exists is error)",
                task.key, task.queue
            )))),
            IfExists::Replace => {
                let id = i64::try_from(old.meta.id).map_err(corrupt)?;
                delete_tags(conn, queue_id, id, &old.tags)?;
                let sql = "UPDATE tasks SET state = ?11, due_at = ?2, lease_expires_at = NULL, version = version + 1, \
                           attempts = 0, max_attempts = ?3, occurrence = 1, anchor = ?2, backoff_initial_ms = ?4, \
                           backoff_factor = ?5, backoff_max_ms = ?6, repeat = ?7, tags = ?8, payload = ?9, \
                           updated_at = ?10, last_error = NULL, target = ?12 WHERE id = ?1";
                conn.prepare_cached(sql)
                    .and_then(|mut stmt| {
                        stmt.execute(params![
                            id,
                            due,
                            task.max_attempts,
                            initial,
                            factor,
                            max,
                            repeat,
                            tags,
                            payload,
                            now.as_millis(),
                            state,
                            target
                        ])
                    })
                    .map_err(map_err)?;
                write_tags(conn, queue_id, id, &task.tags)?;
                let meta = TaskMeta::new(store, old.meta.id, old.meta.fence, 1, task.due_at);
                let mut replaced = Task::from_new(task, meta, now);
                replaced.version = old.version + 1;
                replaced.created_at = old.created_at;
                Ok(Ok(Scheduled::new(ScheduleOutcome::Replaced, replaced)))
            }
        },
    }
}

pub(crate) fn get(conn: &Connection, store: StoreId, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
    match queue_id(conn, queue)? {
        Some(queue_id) => load(conn, store, queue_id, queue, key.as_str()),
        None => Ok(None),
    }
}

pub(crate) fn cancel(conn: &Connection, store: StoreId, queue: &QueueName, key: &TaskKey) -> Result<bool> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(false) };
    match load(conn, store, queue_id, queue, key.as_str())? {
        Some(task) => delete_task(conn, queue_id, &task).map(|()| true),
        None => Ok(false),
    }
}

pub(crate) fn cancel_tag(conn: &Connection, store: StoreId, queue: &QueueName, tag: &Tag) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(0) };
    let ids: Vec<i64> = conn
        .prepare_cached("SELECT task_id FROM tags WHERE queue_id = ?1 AND tag = ?2")
        .and_then(|mut stmt| stmt.query_map(params![queue_id, tag.as_str()], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    delete_ids(conn, store, queue_id, queue, &ids)?;
    Ok(ids.len() as u64)
}

/// A purge's batch: the first `?2` tasks of queue `?1` in the selection, in due order.
/// Each state code's first `?2` are a range of `tasks_by_due` and every task is among
/// the first of its code, so a batch reads at most `?2` rows per code it covers, however
/// many the queue holds (a plain `ORDER BY due_at` over several codes would sort them
/// all). Scheduled is two codes, one per lane.
fn purge_sql(selection: PurgeSelection) -> &'static str {
    match selection {
        PurgeSelection::Scheduled => {
            "SELECT id FROM ( \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 0 ORDER BY due_at, id LIMIT ?2) \
               UNION ALL \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 3 ORDER BY due_at, id LIMIT ?2) \
             ) ORDER BY due_at, id LIMIT ?2"
        }
        PurgeSelection::Dead => "SELECT id FROM tasks WHERE queue_id = ?1 AND state = 2 ORDER BY due_at, id LIMIT ?2",
        PurgeSelection::All => {
            "SELECT id FROM ( \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 0 ORDER BY due_at, id LIMIT ?2) \
               UNION ALL \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 3 ORDER BY due_at, id LIMIT ?2) \
               UNION ALL \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 1 ORDER BY due_at, id LIMIT ?2) \
               UNION ALL \
               SELECT * FROM (SELECT id, due_at FROM tasks WHERE queue_id = ?1 AND state = 2 ORDER BY due_at, id LIMIT ?2) \
             ) ORDER BY due_at, id LIMIT ?2"
        }
    }
}

pub(crate) fn purge(conn: &Connection, store: StoreId, req: &PurgeRequest) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(0) };
    let ids: Vec<i64> = conn
        .prepare_cached(purge_sql(req.selection))
        .and_then(|mut stmt| stmt.query_map(params![queue_id, req.limit], |row| row.get(0))?.collect())
        .map_err(map_err)?;
    for &id in &ids {
        let task = load_by_id(conn, store, id, &req.queue)?;
        debug_assert!(transitions::is_purged(&task, req.selection), "the query selects what the rule purges");
        delete_task(conn, queue_id, &task)?;
    }
    Ok(ids.len() as u64)
}

fn bad_cursor() -> Error {
    Error::invalid("cursor", "this cursor was not issued by this store; start again without one")
}

/// Cursors are `<due_at>.<id>` of the last task of the page.
fn parse_cursor(cursor: &str) -> Result<(i64, i64)> {
    let (due, id) = cursor.split_once('.').ok_or_else(bad_cursor)?;
    Ok((due.parse().map_err(|_| bad_cursor())?, id.parse().map_err(|_| bad_cursor())?))
}

/// A page of a listing: the tasks of queue `?1` after the cursor `(?2, ?3)` in due
/// order, at most `?4`; `?5` the state code and `?6` the tag, each used only when
/// listing by it (the others are compared with themselves, so every statement takes
/// the same parameters).
///
/// One state code is a range of `tasks_by_due` already in due order. Scheduled is two
/// codes, one per lane: the two ranges are merged (a compound `ORDER BY` that SQLite
/// runs as a merge of two ordered searches), so a page reads at most `?4` rows of each,
/// where `state IN (0, 3)` would need a sort (a temporary B-tree in the plan). With a
/// tag, the tag's index rows drive the query (CROSS JOIN keeps them outer): a page
/// costs the tag's tasks in the queue, however many others it holds.
fn list_sql(state: Option<TaskState>, tagged: bool) -> String {
    let (from, tag_filter) = if tagged {
        ("tags g CROSS JOIN tasks ON tasks.id = g.task_id", "AND g.queue_id = ?1 AND g.tag = ?6")
    } else {
        ("tasks", "AND ?6 = ?6")
    };
    let select = |state_filter: &str| {
        format!(
            "SELECT {TASK_COLUMNS} FROM {from} WHERE tasks.queue_id = ?1 {tag_filter} {state_filter} \
             AND (due_at, tasks.id) > (?2, ?3)"
        )
    };
    match (state, tagged) {
        (Some(TaskState::Scheduled), false) => format!(
            "{} UNION ALL {} ORDER BY due_at, id LIMIT ?4",
            select("AND state = 0 AND ?5 = ?5"),
            select("AND state = 3")
        ),
        (Some(TaskState::Scheduled), true) => {
            format!("{} ORDER BY due_at, tasks.id LIMIT ?4", select("AND state IN (0, 3) AND ?5 = ?5"))
        }
        (Some(TaskState::Leased | TaskState::Dead), _) => {
            format!("{} ORDER BY due_at, tasks.id LIMIT ?4", select("AND state = ?5"))
        }
        (None, _) => format!("{} ORDER BY due_at, tasks.id LIMIT ?4", select("AND ?5 = ?5")),
    }
}

pub(crate) fn list(conn: &Connection, store: StoreId, req: &ListRequest) -> Result<Page> {
    let (after_due, after_id) = match &req.cursor {
        Some(cursor) => parse_cursor(cursor)?,
        None => (i64::MIN, i64::MIN),
    };
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Page::new(Vec::new(), None)) };
    let limit = i64::from(req.limit.max(1));
    let state = match req.state {
        Some(TaskState::Leased) => LEASED,
        Some(TaskState::Dead) => DEAD,
        // Unused: scheduled is both lanes' codes, written in the SQL.
        Some(TaskState::Scheduled) | None => SCHEDULED_HANDLER_LANE,
    };
    let tag = req.tag.as_ref().map_or("", Tag::as_str);
    let raws: Vec<RawTask> = conn
        .prepare_cached(&list_sql(req.state, req.tag.is_some()))
        .and_then(|mut stmt| {
            stmt.query_map(params![queue_id, after_due, after_id, limit + 1, state, tag], raw)?.collect()
        })
        .map_err(map_err)?;
    let more = raws.len() as i64 > limit;
    let tasks =
        raws.into_iter().take(limit as usize).map(|raw| decode(store, &req.queue, raw)).collect::<Result<Vec<_>>>()?;
    let next_cursor = match tasks.last() {
        Some(last) if more => Some(format!("{}.{}", last.due_at.as_millis(), last.meta.id)),
        _ => None,
    };
    Ok(Page::new(tasks, next_cursor))
}

/// The earliest due time among the queue's scheduled tasks of `lane`.
fn next_due(conn: &Connection, queue_id: i64, lane: Lane) -> Result<Option<Timestamp>> {
    let due: Option<i64> = conn
        .prepare_cached("SELECT MIN(due_at) FROM tasks WHERE queue_id = ?1 AND state = ?2")
        .and_then(|mut stmt| stmt.query_row(params![queue_id, scheduled_code(lane)], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(due.map(Timestamp::from_millis))
}

/// A lease's batch: up to `?4` tasks of queue `?1` scheduled in the lane of state code
/// `?6` and due by `?2`, leased until `?3` with fences of at least `?5`. One statement
/// leases the whole batch: the due tasks are picked first (SQLite computes the `IN`
/// list before changing any row), a range of `tasks_by_due` that holds only the lane's
/// tasks; then each is updated and returned, in no particular order.
fn lease_sql() -> String {
    format!(
        "UPDATE tasks SET state = 1, lease_expires_at = ?3, fence = MAX(fence + 1, ?5), updated_at = ?2 \
         WHERE id IN (SELECT id FROM tasks WHERE queue_id = ?1 AND state = ?6 AND due_at <= ?2 \
                      ORDER BY due_at, id LIMIT ?4) \
         RETURNING {TASK_COLUMNS}"
    )
}

/// `fence_floor`: every fence handed out is at least this (see the crate docs).
pub(crate) fn lease(conn: &Connection, store: StoreId, req: &LeaseRequest, fence_floor: i64) -> Result<LeaseBatch> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(LeaseBatch::new(Vec::new(), None)) };
    let now = req.now.as_millis();
    let expires = req.now.saturating_add(req.lease_for).as_millis();
    let lane_code = scheduled_code(req.lane);
    let raws: Vec<RawTask> = conn
        .prepare_cached(&lease_sql())
        .and_then(|mut stmt| {
            stmt.query_map(params![queue_id, now, expires, req.max.max(1), fence_floor, lane_code], raw)?.collect()
        })
        .map_err(map_err)?;
    let mut leases =
        raws.into_iter().map(|raw| decode(store, &req.queue, raw).map(Lease::of)).collect::<Result<Vec<Lease>>>()?;
    leases.sort_by_key(|lease| (lease.task.due_at, lease.task.meta.id));
    Ok(LeaseBatch::new(leases, next_due(conn, queue_id, req.lane)?))
}

/// The task of a live lease, or `LeaseLost`: only what the writes under a lease use
/// (its id and tags) and what liveness is decided on (state, id, version, fence and
/// expiry). The payload and policies are not read, let alone parsed: every ack, extend
/// and release comes here, on the writer's thread.
fn live(conn: &Connection, store: StoreId, token: &LeaseToken, now: Timestamp) -> Result<(i64, Task)> {
    let queue_id = queue_id(conn, &token.queue)?.ok_or(Error::LeaseLost)?;
    let row = conn
        .prepare_cached(
            "SELECT id, state, version, fence, lease_expires_at, tags FROM tasks WHERE queue_id = ?1 AND key = ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![queue_id, token.key.as_str()], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, Option<i64>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                ))
            })
            .optional()
        })
        .map_err(map_err)?;
    let (id, state, version, fence, lease_expires_at, tags) = row.ok_or(Error::LeaseLost)?;
    let meta = TaskMeta::new(
        store,
        u64::try_from(id).map_err(corrupt)?,
        u64::try_from(fence).map_err(corrupt)?,
        1,
        Timestamp::EPOCH,
    );
    let mut task = blank_task(token.queue.clone(), token.key.clone(), meta);
    task.state = state_of(state)?;
    task.version = u64::try_from(version).map_err(corrupt)?;
    task.lease_expires_at = lease_expires_at.map(Timestamp::from_millis);
    if !token.is_live_for(&task, now) {
        return Err(Error::LeaseLost);
    }
    if let Some(json) = tags {
        task.tags = serde_json::from_str::<Vec<Tag>>(&json).map_err(corrupt)?;
    }
    Ok((queue_id, task))
}

pub(crate) fn complete(conn: &Connection, store: StoreId, req: &CompleteRequest) -> Result<()> {
    let (queue_id, task) = live(conn, store, &req.token, req.now)?;
    let id = i64::try_from(task.meta.id).map_err(corrupt)?;
    let now = req.now.as_millis();
    let update = |sql: &str, parameters: &[&dyn rusqlite::ToSql]| {
        conn.prepare_cached(sql).and_then(|mut statement| statement.execute(parameters)).map(|_| ()).map_err(map_err)
    };
    // Nothing was written yet, and each arm is one statement (atomic by itself) but the
    // deletion of a tagged task: so a failure leaves the task as it was, and a batch of
    // completions needs no savepoint per completion.
    match &req.completion {
        Completion::Done if task.tags.is_empty() => delete_task(conn, queue_id, &task),
        Completion::Done => writer::in_savepoint(conn, |conn| delete_task(conn, queue_id, &task)),
        Completion::Retry { at, error } => update(
            concat!(
                "UPDATE tasks SET state = ",
                scheduled_by_target!(),
                ", due_at = ?2, lease_expires_at = NULL, attempts = attempts + 1, \
                 last_error = ?3, updated_at = ?4 WHERE id = ?1"
            ),
            params![id, at.as_millis(), error, now],
        ),
        Completion::Reschedule { at } => update(
            concat!(
                "UPDATE tasks SET state = ",
                scheduled_by_target!(),
                ", due_at = ?2, lease_expires_at = NULL, attempts = 0, \
                 occurrence = occurrence + 1, last_error = NULL, updated_at = ?3 WHERE id = ?1"
            ),
            params![id, at.as_millis(), now],
        ),
        Completion::Dead { error } => update(
            "UPDATE tasks SET state = 2, lease_expires_at = NULL, attempts = attempts + 1, last_error = ?2, \
             updated_at = ?3 WHERE id = ?1",
            params![id, error, now],
        ),
    }
}

pub(crate) fn extend(conn: &Connection, store: StoreId, req: &ExtendRequest) -> Result<Timestamp> {
    let now = req.now;
    let (_, task) = live(conn, store, &req.token, now)?;
    let expires = now.saturating_add(req.lease_for);
    conn.prepare_cached("UPDATE tasks SET lease_expires_at = ?2, updated_at = ?3 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![task.meta.id as i64, expires.as_millis(), now.as_millis()]))
        .map_err(map_err)?;
    Ok(expires)
}

pub(crate) fn release(conn: &Connection, store: StoreId, token: &LeaseToken, now: Timestamp) -> Result<()> {
    let (_, task) = live(conn, store, token, now)?;
    let sql = concat!(
        "UPDATE tasks SET state = ",
        scheduled_by_target!(),
        ", lease_expires_at = NULL, updated_at = ?2 WHERE id = ?1"
    );
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params![task.meta.id as i64, now.as_millis()]))
        .map_err(map_err)?;
    Ok(())
}

pub(crate) fn reap(conn: &Connection, now: Timestamp, limit: u32) -> Result<ReapResult> {
    let expired: Vec<(i64, String, String, i64, i64, i64)> = conn
        .prepare_cached(
            "SELECT t.id, q.name, t.key, t.attempts, t.max_attempts, t.lease_expires_at FROM tasks t \
             JOIN queues q ON q.id = t.queue_id \
             WHERE t.state = 1 AND t.lease_expires_at <= ?1 ORDER BY t.lease_expires_at LIMIT ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![now.as_millis(), limit.max(1)], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
            })?
            .collect()
        })
        .map_err(map_err)?;
    let mut reaped = Vec::with_capacity(expired.len());
    for (id, queue, key, attempts, max_attempts, expired_at) in expired {
        let error = format!("lease expired at {} before the handler finished", Timestamp::from_millis(expired_at));
        let dies = attempts + 1 >= max_attempts;
        let state = if dies { TaskState::Dead } else { TaskState::Scheduled };
        // Back to scheduled, due now, in its lane; or dead, its due time kept.
        conn.prepare_cached(concat!(
            "UPDATE tasks SET state = CASE WHEN ?2 THEN 2 ELSE ",
            scheduled_by_target!(),
            " END, due_at = CASE WHEN ?2 THEN due_at ELSE ?3 END, lease_expires_at = NULL, \
             attempts = attempts + 1, last_error = ?4, updated_at = ?3 WHERE id = ?1"
        ))
        .and_then(|mut stmt| stmt.execute(params![id, dies, now.as_millis(), error]))
        .map_err(map_err)?;
        reaped.push(Reaped::new(QueueName::new(queue).map_err(corrupt)?, TaskKey::new(key).map_err(corrupt)?, state));
    }
    let next_expiry: Option<i64> = conn
        .prepare_cached("SELECT MIN(lease_expires_at) FROM tasks WHERE state = 1 AND lease_expires_at > ?1")
        .and_then(|mut stmt| stmt.query_row([now.as_millis()], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(ReapResult::new(reaped, next_expiry.map(Timestamp::from_millis)))
}

/// Moves the dead task `id` back to scheduled in its lane, due `now`, attempts 0.
fn revive(conn: &Connection, id: i64, now: Timestamp) -> Result<()> {
    let sql = concat!(
        "UPDATE tasks SET state = ",
        scheduled_by_target!(),
        ", due_at = ?2, attempts = 0, updated_at = ?2 WHERE id = ?1"
    );
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params![id, now.as_millis()])).map_err(map_err)?;
    Ok(())
}

pub(crate) fn retry_dead(conn: &Connection, store: StoreId, req: &RetryDeadRequest) -> Result<Option<Task>> {
    let queue = &req.queue;
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(None) };
    match load(conn, store, queue_id, queue, req.key.as_str())? {
        Some(task) if task.state == TaskState::Dead => {
            let id = i64::try_from(task.meta.id).map_err(corrupt)?;
            revive(conn, id, req.now)?;
            load_by_id(conn, store, id, queue).map(Some)
        }
        _ => Ok(None),
    }
}

/// Cursors: with every dead task, `<bound>`, the first batch's now (dead tasks due
/// after it died during the walk); with a tag, `<id>`, the last task id looked at (the
/// tag's rows are walked in task id order).
pub(crate) fn retry_dead_batch(conn: &Connection, store: StoreId, req: &RetryDeadBatchRequest) -> Result<RetriedDead> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(RetriedDead::new(0, None)) };
    let now = req.now;
    let limit = i64::from(req.limit.max(1));
    let cursor = req.cursor.as_deref().map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;
    // (task id, whether it is dead) of each task looked at.
    let ids = |sql: &str, args: &[&dyn rusqlite::ToSql]| -> Result<Vec<(i64, bool)>> {
        conn.prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_map(args, |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
            .map_err(map_err)
    };
    let (looked_at, next) = match &req.selection {
        DeadSelection::All => {
            let bound = cursor.unwrap_or(now.as_millis());
            let found = ids(
                "SELECT id, state = 2 FROM tasks WHERE queue_id = ?1 AND state = 2 AND due_at <= ?2 \
                 ORDER BY due_at, id LIMIT ?3",
                &[&queue_id, &bound, &limit],
            )?;
            (found, bound.to_string())
        }
        DeadSelection::Tagged(tag) => {
            let found = ids(
                "SELECT g.task_id, t.state = 2 FROM tags g CROSS JOIN tasks t ON t.id = g.task_id \
                 WHERE g.queue_id = ?1 AND g.tag = ?2 AND g.task_id > ?3 ORDER BY g.task_id LIMIT ?4",
                &[&queue_id, &tag.as_str(), &cursor.unwrap_or(i64::MIN), &limit],
            )?;
            let last = found.last().map_or(0, |(id, _)| *id);
            (found, last.to_string())
        }
        DeadSelection::Keys(keys) => {
            let mut found = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(task) = load(conn, store, queue_id, &req.queue, key.as_str())? {
                    found.push((i64::try_from(task.meta.id).map_err(corrupt)?, task.state == TaskState::Dead));
                }
            }
            // Every key in one batch: nothing follows.
            (found, String::new())
        }
    };
    let more = looked_at.len() as i64 >= limit && !matches!(req.selection, DeadSelection::Keys(_));
    // A key given twice was read twice, dead both times: it is retried once.
    let mut revived = std::collections::BTreeSet::new();
    for &(id, dead) in &looked_at {
        if dead && revived.insert(id) {
            revive(conn, id, now)?;
        }
    }
    let retried = revived.len() as u64;
    Ok(RetriedDead::new(retried, more.then_some(next)))
}

pub(crate) fn delete_dead(conn: &Connection, store: StoreId, queue: &QueueName, key: &TaskKey) -> Result<bool> {
    let Some(queue_id) = queue_id(conn, queue)? else { return Ok(false) };
    match load(conn, store, queue_id, queue, key.as_str())? {
        Some(task) if task.state == TaskState::Dead => delete_task(conn, queue_id, &task).map(|()| true),
        _ => Ok(false),
    }
}

pub(crate) fn sweep_dead(conn: &Connection, store: StoreId, req: &SweepRequest) -> Result<Swept> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Swept::new(0, None)) };
    // Both queries read the partial index of dead rows by time of death.
    let ids: Vec<i64> = conn
        .prepare_cached(
            "SELECT id FROM tasks WHERE queue_id = ?1 AND state = 2 AND updated_at <= ?2 \
             ORDER BY updated_at, id LIMIT ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![queue_id, req.died_by.as_millis(), req.limit.max(1)], |row| row.get(0))?.collect()
        })
        .map_err(map_err)?;
    delete_ids(conn, store, queue_id, &req.queue, &ids)?;
    let oldest: Option<i64> = conn
        .prepare_cached("SELECT MIN(updated_at) FROM tasks WHERE queue_id = ?1 AND state = 2")
        .and_then(|mut stmt| stmt.query_row([queue_id], |row| row.get(0)))
        .map_err(map_err)?;
    Ok(Swept::new(ids.len() as u64, oldest.map(Timestamp::from_millis)))
}

fn stats_of(conn: &Connection, queue_id: i64, name: QueueName) -> Result<QueueStats> {
    let (mut scheduled, mut leased, mut dead) = (0, 0, 0);
    let rows: Vec<(i64, i64)> = conn
        .prepare_cached("SELECT state, COUNT(*) FROM tasks WHERE queue_id = ?1 GROUP BY state")
        .and_then(|mut stmt| stmt.query_map([queue_id], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .map_err(map_err)?;
    for (code, count) in rows {
        let count = u64::try_from(count).unwrap_or(0);
        match state_of(code)? {
            TaskState::Scheduled => scheduled += count,
            TaskState::Leased => leased += count,
            TaskState::Dead => dead += count,
        }
    }
    let handler_lane = next_due(conn, queue_id, Lane::Handler)?;
    let target_lane = next_due(conn, queue_id, Lane::Target)?;
    let next_due_at = handler_lane.into_iter().chain(target_lane).min();
    Ok(QueueStats::new(name, scheduled, leased, dead, next_due_at))
}

pub(crate) fn stats(conn: &Connection, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
    if let Some(queue) = queue {
        return match queue_id(conn, queue)? {
            Some(id) => Ok(vec![stats_of(conn, id, queue.clone())?]),
            None => Ok(vec![QueueStats::new(queue.clone(), 0, 0, 0, None)]),
        };
    }
    let queues: Vec<(i64, String)> = conn
        .prepare_cached("SELECT id, name FROM queues ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .map_err(map_err)?;
    let mut all = Vec::with_capacity(queues.len());
    for (id, name) in queues {
        let stats = stats_of(conn, id, QueueName::new(name).map_err(corrupt)?)?;
        if stats.scheduled + stats.leased + stats.dead > 0 {
            all.push(stats);
        }
    }
    Ok(all)
}

fn record_of(row: &Row<'_>) -> rusqlite::Result<(String, Option<String>, bool, i64, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
}

fn decode_record(
    (name, settings, paused, version, updated_at): (String, Option<String>, bool, i64, i64),
) -> Result<QueueRecord> {
    let queue = QueueName::new(name).map_err(corrupt)?;
    let version = u64::try_from(version).map_err(corrupt)?;
    Ok(QueueRecord::new(queue, settings, paused, version, Timestamp::from_millis(updated_at)))
}

pub(crate) fn queue_record(conn: &Connection, queue: &QueueName) -> Result<Option<QueueRecord>> {
    let raw = conn
        .prepare_cached("SELECT name, settings, paused, version, updated_at FROM queue_records WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([queue.as_str()], record_of).optional())
        .map_err(map_err)?;
    raw.map(decode_record).transpose()
}

/// Sorted by name: SQLite compares text bytewise, as `QueueName` orders.
pub(crate) fn queue_records(conn: &Connection) -> Result<Vec<QueueRecord>> {
    let raws: Vec<_> = conn
        .prepare_cached("SELECT name, settings, paused, version, updated_at FROM queue_records ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], record_of)?.collect::<rusqlite::Result<_>>())
        .map_err(map_err)?;
    raws.into_iter().map(decode_record).collect()
}

/// Read and written in one write job, so no other change comes in between.
pub(crate) fn change_queue(conn: &Connection, req: &QueueChangeRequest) -> Result<QueueRecord> {
    let changed = transitions::change_queue(queue_record(conn, &req.queue)?.as_ref(), req)?;
    let version = i64::try_from(changed.version).map_err(corrupt)?;
    conn.prepare_cached(
        "INSERT INTO queue_records (name, settings, paused, version, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, paused = excluded.paused, \
         version = excluded.version, updated_at = excluded.updated_at",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            changed.queue.as_str(),
            changed.settings,
            changed.paused,
            version,
            changed.updated_at.as_millis()
        ])
    })
    .map_err(map_err)?;
    Ok(changed)
}

/// The store's identity: `fresh` if none was stored yet (a new store, or one written
/// before stores had one), else the stored one; and whether `fresh` was taken.
pub(crate) fn identity(conn: &Connection, fresh: StoreId) -> Result<(StoreId, bool)> {
    // `meta.value` is a signed 64-bit integer: the id's bits are kept as one.
    let minted = conn
        .execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('store_id', ?1)", [fresh.bits() as i64])
        .map_err(map_err)?
        == 1;
    let bits: i64 =
        conn.query_row("SELECT value FROM meta WHERE name = 'store_id'", [], |row| row.get(0)).map_err(map_err)?;
    Ok((StoreId::from_bits(bits as u64), minted))
}

/// The store's secret: `fresh` if none was stored yet, else the stored one.
pub(crate) fn secret(conn: &Connection, fresh: [u8; 32]) -> Result<[u8; 32]> {
    conn.execute("INSERT OR IGNORE INTO secrets (name, value) VALUES ('lease', ?1)", [&fresh[..]]).map_err(map_err)?;
    let stored: Vec<u8> =
        conn.query_row("SELECT value FROM secrets WHERE name = 'lease'", [], |row| row.get(0)).map_err(map_err)?;
    stored.try_into().map_err(|_| corrupt("the lease secret is not 32 bytes"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use super::*;

    fn store_with_layout() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::schema::CREATE).unwrap();
        conn
    }

    /// The steps of `sql`'s query plan, its parameters bound to `args`.
    fn plan(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Vec<String> {
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(args, |row| row.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Neither a scan of the table nor a sort: rows come from index searches in order.
    fn assert_no_scan_or_sort(plan: &[String], what: &str) {
        assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{what}: {plan:?}");
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{what}: {plan:?}");
    }

    /// The plan of a purge's batch never scans the queue's tasks: each state code is a
    /// search of `tasks_by_due`, so a batch costs what it deletes.
    #[test]
    fn a_purge_batch_reads_index_ranges_only() {
        let conn = store_with_layout();
        for selection in [PurgeSelection::Scheduled, PurgeSelection::Dead, PurgeSelection::All] {
            let plan = plan(&conn, purge_sql(selection), params![1, 10]);
            let searches = plan.iter().filter(|step| step.contains("USING COVERING INDEX tasks_by_due")).count();
            let expected = match selection {
                PurgeSelection::Scheduled => 2,
                PurgeSelection::Dead => 1,
                PurgeSelection::All => 4,
            };
            assert_eq!(searches, expected, "{selection:?}: {plan:?}");
            assert!(!plan.iter().any(|step| step.starts_with("SCAN tasks")), "{selection:?}: {plan:?}");
        }
    }

    /// A page of the tasks in one state, scheduled (both lanes) included, reads index
    /// ranges already in due order: its cost is its limit, however many tasks follow.
    #[test]
    fn a_page_by_state_merges_index_ranges_without_sorting() {
        let conn = store_with_layout();
        for (state, ranges) in [(TaskState::Scheduled, 2), (TaskState::Leased, 1), (TaskState::Dead, 1)] {
            let plan = plan(&conn, &list_sql(Some(state), false), params![1, 0, 0, 11, LEASED, ""]);
            let searches = plan
                .iter()
                .filter(|step| step.contains("INDEX tasks_by_due (queue_id=? AND state=? AND due_at>?)"))
                .count();
            assert_eq!(searches, ranges, "{state:?}: {plan:?}");
            assert_no_scan_or_sort(&plan, &format!("{state:?}"));
        }
    }

    /// A lease and its lane's next due time each read one range of `tasks_by_due`, the
    /// lane's: never a task of the other lane.
    #[test]
    fn a_lease_reads_its_lanes_range_only() {
        let conn = store_with_layout();
        let lease = plan(&conn, &lease_sql(), params![1, 0, 0, 10, 0, SCHEDULED_TARGET_LANE]);
        let search = "USING COVERING INDEX tasks_by_due (queue_id=? AND state=? AND due_at<?)";
        assert_eq!(lease.iter().filter(|step| step.contains(search)).count(), 1, "{lease:?}");
        assert_no_scan_or_sort(&lease, "lease");
        let next_due = plan(&conn, "SELECT MIN(due_at) FROM tasks WHERE queue_id = ?1 AND state = ?2", params![1, 3]);
        let search = "USING COVERING INDEX tasks_by_due (queue_id=? AND state=?)";
        assert_eq!(next_due.iter().filter(|step| step.contains(search)).count(), 1, "{next_due:?}");
    }

    /// Listing the scheduled tasks merges the lanes in due order, ties by id, and pages
    /// through them visiting each once, ties across lanes and page ends included.
    #[test]
    fn listing_scheduled_tasks_pages_through_both_lanes_in_due_order() {
        let conn = store_with_layout();
        let store = StoreId::from_bits(7);
        let queue = QueueName::new("mixed").unwrap();
        let at = |s: i64| Timestamp::from_millis(s * 1000);
        let target = Target::new("https://hooks.example.com/x").unwrap();
        // Keys in creation (id) order; targets on every other, due times colliding.
        let dues = [3, 1, 1, 2, 3, 1, 5, 2];
        let tasks = dues
            .iter()
            .enumerate()
            .map(|(i, due)| {
                let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).unwrap(), at(*due));
                task.target = (i % 2 == 1).then(|| target.clone());
                task
            })
            .collect();
        for result in schedule(&conn, store, tasks, at(0)).unwrap() {
            result.unwrap();
        }
        let mut expected: Vec<(i64, String)> =
            dues.iter().enumerate().map(|(i, due)| (*due, format!("k{i}"))).collect();
        expected.sort();
        let expected: Vec<String> = expected.into_iter().map(|(_, key)| key).collect();
        for limit in 1..=9 {
            let (mut seen, mut cursor) = (Vec::new(), None);
            loop {
                let request = ListRequest::new(queue.clone(), Some(TaskState::Scheduled), limit, cursor);
                let page = list(&conn, store, &request).unwrap();
                seen.extend(page.tasks.iter().map(|task| task.key.to_string()));
                let Some(next) = page.next_cursor else { break };
                cursor = Some(next);
            }
            assert_eq!(seen, expected, "pages of {limit}");
        }
    }
}
