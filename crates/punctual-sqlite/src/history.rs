//! Task histories (see `punctual_core::history`): one row per (queue, key) in
//! `history`, its events in their stored form, oldest first, one per line (the stored
//! form is JSON, which holds no raw line break), `count` of them, `latest`, the time of
//! the newest, and `looked`, when the sweep looks at the row next. Every write path
//! appends its events with [`record`] on the connection of its own transaction, so an
//! event is committed exactly with its change.
//!
//! Invariants: `count` is the number of lines of `events`, at most [`HISTORY_LIMIT`]:
//! an append to a full history drops its first line in the same statement. `looked`
//! is at or before `latest`: the first event's time, then the latest a sweep found;
//! only `history_looked` on `(queue_id, looked)` indexes it, so an append, which moves
//! `latest` alone, changes no index entry. The sweep reads the rows whose `looked` is
//! before its cutoff, deletes those whose `latest` is too, and moves the others'
//! `looked` to their `latest`: a row something happens to is read about once per
//! retention.

use punctual_core::history::{HISTORY_LIMIT, HistoryEvent, decode, encode};
use punctual_core::store::{HistoryRequest, HistorySweepRequest};
use punctual_core::{Result, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codes::Sql;
use crate::map_err;
use crate::queues::queue_id;

static APPEND: Sql = Sql::new(|| {
    format!(
        "INSERT INTO history (queue_id, key, latest, looked, count, events) VALUES (?1, ?2, ?3, ?3, 1, ?4) \
         ON CONFLICT (queue_id, key) DO UPDATE SET latest = excluded.latest, count = min(count + 1, {HISTORY_LIMIT}), \
         events = CASE WHEN count >= {HISTORY_LIMIT} THEN substr(events, instr(events, char(10)) + 1) ELSE events END \
         || char(10) || excluded.events"
    )
});

/// Appends `event` to the history of the key `key` of the queue `queue_id`.
pub(crate) fn record(conn: &Connection, queue_id: i64, key: &str, event: &HistoryEvent) -> Result<()> {
    conn.prepare_cached(&APPEND)
        .and_then(|mut stmt| stmt.execute(params![queue_id, key, event.at.as_millis(), encode(event)]))
        .map_err(map_err)?;
    Ok(())
}

/// The events of `req`'s key at or after `req.since`, oldest first.
pub(crate) fn read(conn: &Connection, req: &HistoryRequest) -> Result<Vec<HistoryEvent>> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Vec::new()) };
    let events: Option<String> = conn
        .prepare_cached("SELECT events FROM history WHERE queue_id = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.query_row(params![queue_id, req.key.as_str()], |row| row.get(0)).optional())
        .map_err(map_err)?;
    let mut read = Vec::new();
    for line in events.iter().flat_map(|events| events.split('\n')) {
        let event = decode(line)?;
        if event.at >= req.since {
            read.push(event);
        }
    }
    Ok(read)
}

/// Deletes the histories of up to `req.limit` keys of the queue whose latest event is
/// before `req.before`; how many. It reads `req.limit` rows at a time whose `looked` is
/// before the cutoff, deleting those whose latest event is and moving the others'
/// `looked` to their latest, until it deleted some or no row is left to look at: 0
/// means none is left to delete.
pub(crate) fn sweep(conn: &Connection, req: &HistorySweepRequest) -> Result<u64> {
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(0) };
    let (before, limit) = (req.before.as_millis(), req.limit.max(1));
    let run = |sql: &str| {
        conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params![queue_id, before, limit])).map_err(map_err)
    };
    loop {
        let deleted = run("DELETE FROM history WHERE (queue_id, key) IN (SELECT queue_id, key FROM history \
             WHERE queue_id = ?1 AND looked < ?2 ORDER BY looked LIMIT ?3) AND latest < ?2")?;
        if deleted > 0 {
            return Ok(deleted as u64);
        }
        let moved = run("UPDATE history SET looked = latest WHERE (queue_id, key) IN (SELECT queue_id, key \
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
