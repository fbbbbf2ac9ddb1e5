//! Task histories (see `punctual_core::history`). A key's events are in two places:
//! those of its live task wait in the task's own row (`tasks.pending_events`, one per
//! line, oldest first, and `tasks.pending_count` of them), written by the statement
//! that changes the row anyway ([`appending`]); the others are in the key's row of
//! `history` (`events`, one per line, oldest first, `count` of them, `latest`, the time
//! of the newest, and `looked`, when the sweep looks at the row next). The stored form
//! of an event is JSON, which holds no raw line break. A read joins both, the
//! history's first.
//!
//! A live task's events move to its key's history ([`move_pending`]) in the
//! transaction that deletes its row (cancelled, purged, deleted, done with a
//! dedupe window; see `tasks::delete_told`) or ends its occurrence (a reschedule), and
//! once [`PENDING_LIMIT`] wait ([`settle`]), so a row keeps few events whatever happens
//! to it. A task done without a dedupe window keeps its row instead, as the key's
//! newest events (`codes::KEPT`, written by `complete`'s one `UPDATE`): its events
//! move only if a task is created under the key again (`tasks::retire_kept`), and the
//! sweep deletes the row once its last event (`due_at`) is past the retention. So the
//! usual task costs its history no write of its own in its life.
//!
//! Invariants: `pending_count` is the number of lines of `pending_events` (0 when
//! NULL), below [`PENDING_LIMIT`] after every write but the lease's (which appends one
//! with no look; the next write under the lease, or its reap, settles) and a kept
//! row's last (never written again). Every pending
//! event is newer than every event of the key's history. `count` is the number of
//! lines of `events`, at most [`HISTORY_LIMIT`]: a move drops the oldest past it.
//! `looked` is at or before `latest`: when the row was made, then the latest a sweep
//! found; only `history_looked` on `(queue_id, looked)` indexes it, so a move to a
//! row that exists changes no index entry. The sweep reads the rows whose `looked` is
//! before its cutoff, deletes those whose `latest` is too, and moves the others'
//! `looked` to their `latest`: a row something happens to is read about once per
//! retention. The sweep never touches a live task's pending events, which reads filter
//! by time like the others. Events imported from another store ([`import_histories`])
//! are older than every event of their key here and go to its `history` row only.

use punctual_core::history::{Actor, EventKind, HISTORY_LIMIT, HistoryEvent, decode, encode, older_than};
use punctual_core::store::{HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, KeyHistory, corrupt};
use punctual_core::{QueueName, Result, StoreId, TaskKey, TaskState, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codes::{KEPT, Sql};
use crate::map_err;
use crate::queues::{queue_id, queue_id_or_create};

/// How many events a live task's row keeps before they move to its key's history.
pub(crate) const PENDING_LIMIT: i64 = 16;

/// SQL assignments of an `UPDATE` of a task row: the event whose stored form is the
/// SQL expression `event` appended to the row's pending events.
pub(crate) fn appending(event: &str) -> String {
    format!(
        "pending_events = CASE WHEN pending_events IS NULL THEN {event} ELSE pending_events || '\n' || {event} END, \
         pending_count = pending_count + 1"
    )
}

/// SQL: the stored form of the `leased` event of a row that a lease statement leases,
/// from the parameter `head` (holding [`leased_head`]), the SQL `fence` of its new
/// fence and `until` of its lease's expiry: the head, the rest of the row's delivery
/// id, then the try (its attempts so far, plus one), the fence and the expiry.
pub(crate) fn leased_sql(head: &str, fence: &str, until: &str) -> String {
    format!(
        "{head} || printf('%x-%d-%d', id, version, occurrence) || '\",\"n\":' || (attempts + 1) \
         || ',\"l\":' || {fence} || ',\"u\":' || {until} || '}}'"
    )
}

/// The stored form of a `leased` event by `by` on `node` at `now`, of a task of the
/// store `store`, up to its delivery id's part after the store's, which [`leased_sql`]
/// goes on from: as `encode` writes it, so the two agree (tested).
pub(crate) fn leased_head(by: Option<&Actor>, node: Option<&str>, store: StoreId, now: Timestamp) -> String {
    let mut event = HistoryEvent::new(now, EventKind::Leased, by, Some(TaskState::Leased));
    let store = format!("{store}-");
    event.node = node.map(str::to_owned);
    event.delivery_id = Some(store.clone());
    let text = encode(&event);
    let opening = format!("\"di\":\"{store}");
    let cut = text.find(&opening).map_or(text.len(), |at| at + opening.len());
    text[..cut].to_owned()
}

/// Moves the pending events of the task row `row_id` (of the key `key` of the queue
/// `queue_id`), then `last`, to the key's history: for a write, in the same
/// transaction and after this, that deletes the row or empties its pending events.
/// `latest` is the time of the newest.
pub(crate) fn move_pending(
    conn: &Connection,
    queue_id: i64,
    key: &str,
    row_id: i64,
    last: Option<&HistoryEvent>,
) -> Result<()> {
    let pending: Option<String> = conn
        .prepare_cached("SELECT pending_events FROM tasks WHERE id = ?1")
        .and_then(|mut stmt| stmt.query_row([row_id], |row| row.get(0)))
        .map_err(map_err)?;
    let last_line = last.map(encode);
    let mut lines: Vec<&str> = pending.as_deref().map_or_else(Vec::new, |pending| pending.split('\n').collect());
    lines.extend(last_line.as_deref());
    let Some(newest) = lines.last() else { return Ok(()) };
    let latest = match last {
        Some(event) => event.at,
        None => decode(newest)?.at,
    };
    let stored: Option<(i64, String)> = conn
        .prepare_cached("SELECT count, events FROM history WHERE queue_id = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.query_row(params![queue_id, key], |row| Ok((row.get(0)?, row.get(1)?))).optional())
        .map_err(map_err)?;
    let Some((count, events)) = stored else {
        let kept = &lines[lines.len().saturating_sub(HISTORY_LIMIT)..];
        conn.prepare_cached(
            "INSERT OR FAIL INTO history (queue_id, key, latest, looked, count, events) VALUES (?1, ?2, ?3, ?3, ?4, ?5)",
        )
        .and_then(|mut stmt| stmt.execute(params![queue_id, key, latest.as_millis(), kept.len(), kept.join("\n")]))
        .map_err(map_err)?;
        return Ok(());
    };
    let count = usize::try_from(count).unwrap_or(0) + lines.len();
    let events = if count <= HISTORY_LIMIT {
        format!("{events}\n{}", lines.join("\n"))
    } else {
        let all: Vec<&str> = events.split('\n').chain(lines.iter().copied()).collect();
        all[all.len().saturating_sub(HISTORY_LIMIT)..].join("\n")
    };
    conn.prepare_cached("UPDATE history SET latest = ?3, count = ?4, events = ?5 WHERE queue_id = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.execute(params![queue_id, key, latest.as_millis(), count.min(HISTORY_LIMIT), events]))
        .map_err(map_err)?;
    Ok(())
}

/// After a write that left `count` pending events in the row `task_id` (of the key
/// `key` of the queue `queue_id`): moves them to the key's history once they reach
/// [`PENDING_LIMIT`].
pub(crate) fn settle(conn: &Connection, queue_id: i64, key: &str, task_id: i64, count: i64) -> Result<()> {
    if count < PENDING_LIMIT {
        return Ok(());
    }
    move_pending(conn, queue_id, key, task_id, None)?;
    conn.prepare_cached("UPDATE tasks SET pending_events = NULL, pending_count = 0 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute([task_id]))
        .map_err(map_err)?;
    Ok(())
}

/// What is stored of one key: its `history` row's events and latest time, and its live
/// task's pending events, each if any.
struct Stored {
    history: Option<(String, i64)>,
    pending: Option<String>,
}

impl Stored {
    /// Of the key `key` of the queue `queue_id`.
    fn read(conn: &Connection, queue_id: i64, key: &str) -> Result<Stored> {
        let history = conn
            .prepare_cached("SELECT events, latest FROM history WHERE queue_id = ?1 AND key = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![queue_id, key], |row| Ok((row.get(0)?, row.get(1)?))).optional()
            })
            .map_err(map_err)?;
        let pending: Option<Option<String>> = conn
            .prepare_cached("SELECT pending_events FROM tasks WHERE queue_id = ?1 AND key = ?2")
            .and_then(|mut stmt| stmt.query_row(params![queue_id, key], |row| row.get(0)).optional())
            .map_err(map_err)?;
        Ok(Stored { history, pending: pending.flatten() })
    }

    /// Its events' lines, oldest first: the history's, then the pending ones.
    fn lines(&self) -> impl Iterator<Item = &str> {
        let history = self.history.as_ref().map(|(events, _)| events.as_str());
        history.into_iter().chain(self.pending.as_deref()).flat_map(|events| events.split('\n'))
    }
}

/// The events of `req`'s key at or after `req.since`, oldest first: its history's,
/// then its live task's pending ones, the latest [`HISTORY_LIMIT`] of them.
pub(crate) fn read(conn: &Connection, req: &HistoryRequest) -> Result<Vec<HistoryEvent>> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Vec::new()) };
    events_since(conn, queue_id, req.key.as_str(), req.since)
}

/// [`read`] of the key `key` of the queue `queue_id`.
fn events_since(conn: &Connection, queue_id: i64, key: &str, since: Timestamp) -> Result<Vec<HistoryEvent>> {
    let stored = Stored::read(conn, queue_id, key)?;
    let lines: Vec<&str> = stored.lines().collect();
    let mut read = Vec::new();
    for line in &lines[lines.len().saturating_sub(HISTORY_LIMIT)..] {
        let event = decode(line)?;
        if event.at >= since {
            read.push(event);
        }
    }
    Ok(read)
}

/// The keys of queue `?1` after `?2` with a history or pending events, in key order,
/// at most `?3`.
const KEYS_WITH_EVENTS: &str = "SELECT key FROM history WHERE queue_id = ?1 AND key > ?2 \
     UNION SELECT key FROM tasks WHERE queue_id = ?1 AND key > ?2 AND pending_count > 0 ORDER BY key LIMIT ?3";

/// A page of `req.queue`'s histories, in key order after the cursor (the last key
/// looked at), each as [`read`] reads it; a key without events since `req.since` is
/// left out.
pub(crate) fn histories(conn: &Connection, req: &HistoriesRequest) -> Result<HistoriesPage> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(HistoriesPage::new(Vec::new(), None)) };
    let limit = req.limit.max(1) as usize;
    let mut after = req.cursor.clone().unwrap_or_default();
    let mut page = Vec::new();
    loop {
        let keys: Vec<String> = conn
            .prepare_cached(KEYS_WITH_EVENTS)
            .and_then(|mut stmt| stmt.query_map(params![queue_id, after, limit + 1], |row| row.get(0))?.collect())
            .map_err(map_err)?;
        let last_batch = keys.len() <= limit;
        for key in keys {
            if page.len() == limit {
                return Ok(HistoriesPage::new(page, Some(after)));
            }
            let events = events_since(conn, queue_id, &key, req.since)?;
            if !events.is_empty() {
                let name = TaskKey::new(key.as_str()).map_err(|e| corrupt(format!("a history's key: {e}")))?;
                page.push(KeyHistory::new(name, events));
            }
            after = key;
        }
        if last_batch {
            return Ok(HistoriesPage::new(page, None));
        }
    }
}

/// Adds to each key's history of `queue` the given events older than its oldest (its
/// history's first, or its live task's first pending one), before them, as
/// `Store::import_histories` says; the count added. Older events only ever go to the
/// `history` row, so every pending event stays newer than every event there.
pub(crate) fn import_histories(conn: &Connection, queue: &QueueName, histories: &[KeyHistory]) -> Result<u64> {
    let queue_id = queue_id_or_create(conn, queue)?;
    let mut added = 0;
    for KeyHistory { key, events, .. } in histories {
        let key = key.as_str();
        let stored = Stored::read(conn, queue_id, key)?;
        let oldest = stored.lines().next().map(decode).transpose()?.map(|event| event.at);
        let older = older_than(events, oldest);
        let Some(newest_older) = older.last() else { continue };
        added += older.len() as u64;
        let mut lines: Vec<String> = older.iter().map(encode).collect();
        let latest = match &stored.history {
            Some((events, latest)) => {
                lines.extend(events.split('\n').map(str::to_owned));
                *latest
            }
            None => newest_older.at.as_millis(),
        };
        let kept = &lines[lines.len().saturating_sub(HISTORY_LIMIT)..];
        conn.prepare_cached(
            "INSERT INTO history (queue_id, key, latest, looked, count, events) VALUES (?1, ?2, ?3, ?3, ?4, ?5) \
             ON CONFLICT (queue_id, key) DO UPDATE SET count = excluded.count, events = excluded.events",
        )
        .and_then(|mut stmt| stmt.execute(params![queue_id, key, latest, kept.len(), kept.join("\n")]))
        .map_err(map_err)?;
    }
    Ok(added)
}

/// Up to `?3` kept rows of queue `?1` whose last event (`due_at`) is before `?2`,
/// oldest first: one range of `tasks_by_due`, ordered by `due_at` then `id` to the
/// last tie, so the two statements below take the same rows whatever their plans.
fn kept_before(column: &str) -> String {
    format!(
        "SELECT {column} FROM tasks WHERE queue_id = ?1 AND state = {KEPT} AND due_at < ?2 ORDER BY due_at, id LIMIT ?3"
    )
}
/// Deletes the older events (in `history`) of the keys of those kept rows, then the
/// rows: a key's history goes whole, counted once.
static SWEEP_KEPT_OLDER: Sql =
    Sql::new(|| format!("DELETE FROM history WHERE queue_id = ?1 AND key IN ({})", kept_before("key")));
static SWEEP_KEPT: Sql = Sql::new(|| format!("DELETE FROM tasks WHERE id IN ({})", kept_before("id")));

/// Deletes the histories of up to `req.limit` keys of the queue whose latest event is
/// before `req.before`; how many. Done tasks' kept rows go first, each with its key's
/// older events; then it reads `req.limit` rows of `history` at a time whose `looked`
/// is before the cutoff, deleting those whose latest event is unless the key's row in
/// `tasks` (a live task or a kept row) changed since (every write that tells an event
/// sets its `updated_at`, but an import, which keeps the task's own: an imported key's
/// older events go by its task's time): something happened to the key, so its older
/// events stay. It moves the others' `looked` to their latest or, for those the key's
/// row holds, to the cutoff (looked at again by the next sweep), until it deleted some
/// or no row is left to look at: 0 means none is left to delete.
pub(crate) fn sweep(conn: &Connection, req: &HistorySweepRequest) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(0) };
    let (before, limit) = (req.before.as_millis(), req.limit.max(1));
    let run = |sql: &str| {
        conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params![queue_id, before, limit])).map_err(map_err)
    };
    run(&SWEEP_KEPT_OLDER)?;
    let kept = run(&SWEEP_KEPT)?;
    if kept > 0 {
        return Ok(kept as u64);
    }
    loop {
        let deleted = run("DELETE FROM history WHERE (queue_id, key) IN (SELECT queue_id, key FROM history \
             WHERE queue_id = ?1 AND looked < ?2 ORDER BY looked LIMIT ?3) AND latest < ?2 \
             AND NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.queue_id = ?1 AND tasks.key = history.key \
             AND tasks.updated_at >= ?2)")?;
        if deleted > 0 {
            return Ok(deleted as u64);
        }
        let moved = run("UPDATE history SET looked = MAX(latest, ?2) WHERE (queue_id, key) IN (SELECT queue_id, key \
             FROM history WHERE queue_id = ?1 AND looked < ?2 ORDER BY looked LIMIT ?3)")?;
        if moved == 0 {
            return Ok(0);
        }
    }
}

/// The store's clock, for the events of the calls that take no `now` (a cancel, a
/// purge, a delete of a dead task, a sweep of dead tasks).
pub(crate) fn store_now() -> Timestamp {
    use punctual_core::Clock;
    punctual_core::SystemClock.now()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use std::time::Duration;

    use punctual_core::store::{ExtendRequest, LeaseRequest};
    use punctual_core::{NewTask, QueueName, StoreId, TaskKey};

    use super::*;

    fn pending_of(conn: &Connection, key: &str) -> (i64, Option<String>) {
        conn.query_row("SELECT pending_count, pending_events FROM tasks WHERE key = ?1", [key], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap()
    }

    /// The `leased` event a lease statement writes in SQL is the one `encode` writes,
    /// byte for byte (its delivery id the lease's), with and without names.
    #[test]
    fn a_lease_tells_its_event_as_encode_writes_it() {
        let conn = crate::schema::in_memory();
        let (store, now) = (StoreId::from_bits(7), Timestamp::from_millis(1_000));
        let queue = QueueName::new("reminders").unwrap();
        let named = (Some(Actor::new("worker \"7\"")), Some(std::sync::Arc::from("web-1:7575 (pid 42)")));
        for (name, (by, node)) in [("named", named), ("anonymous", (None, None))] {
            let task = NewTask::new(queue.clone(), TaskKey::new(name).unwrap(), now);
            crate::schedule::schedule(&conn, store, vec![task], now).unwrap().pop().unwrap().unwrap();
            let request =
                LeaseRequest::new(queue.clone(), 1, Duration::from_secs(30), now).by(by.clone()).on_node(node.clone());
            let batch = crate::lease::lease(&conn, store, &request, 0).unwrap();
            let leased = &batch.leases[0].task;
            let (count, events) = pending_of(&conn, name);
            let events = events.unwrap();
            assert_eq!(count, 2, "created and leased");
            let told = events.split('\n').nth(1).unwrap();
            assert_eq!(told, encode(&HistoryEvent::leased(leased, by.as_ref(), node.as_deref(), now)), "{name}");
        }
    }

    /// A lease extended again and again keeps few events in its row: at
    /// [`PENDING_LIMIT`] they move to the key's history, and a read still tells every
    /// one of the latest [`HISTORY_LIMIT`], in order.
    #[test]
    fn pending_events_move_to_the_history_at_their_limit() {
        let conn = crate::schema::in_memory();
        let (store, now) = (StoreId::from_bits(7), Timestamp::from_millis(1_000));
        let queue = QueueName::new("reminders").unwrap();
        let key = TaskKey::new("long").unwrap();
        let task = NewTask::new(queue.clone(), key.clone(), now);
        crate::schedule::schedule(&conn, store, vec![task], now).unwrap().pop().unwrap().unwrap();
        let request = LeaseRequest::new(queue.clone(), 1, Duration::from_secs(30), now);
        let token = crate::lease::lease(&conn, store, &request, 0).unwrap().leases[0].token.clone();
        let extensions = 150;
        for n in 1..=extensions {
            let at = Timestamp::from_millis(1_000 + n);
            crate::lease::extend(&conn, store, &ExtendRequest::new(token.clone(), Duration::from_secs(30), at))
                .unwrap();
            assert!(pending_of(&conn, "long").0 < PENDING_LIMIT, "after extension {n}");
        }
        let read = read(&conn, &HistoryRequest::new(queue, key, Timestamp::EPOCH)).unwrap();
        assert_eq!(read.len(), HISTORY_LIMIT);
        let times: Vec<i64> = read.iter().map(|event| event.at.as_millis()).collect();
        let expected: Vec<i64> = (1_000 + extensions - 99..=1_000 + extensions).collect();
        assert_eq!(times, expected, "the latest events, oldest first");
        assert!(read.iter().all(|event| event.kind == EventKind::Extended));
        let stored: i64 = conn.query_row("SELECT count FROM history", [], |row| row.get(0)).unwrap();
        assert!(stored <= HISTORY_LIMIT as i64, "the history keeps at most its limit: {stored}");
    }
}
