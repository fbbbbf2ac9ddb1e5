//! Queue records: a queue's settings and pause as given through the API, by name.
//!
//! Invariants: a change is read, decided (`transitions::change_queue`) and written in
//! one write job, so no other change comes in between; rows are never deleted; records
//! are listed in name order, as `QueueName` orders (SQLite compares text bytewise).

use punctual_core::store::{QueueChangeRequest, QueueRecord, corrupt};
use punctual_core::{QueueName, Result, Timestamp, transitions};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::map_err;

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
