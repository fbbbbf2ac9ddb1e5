//! Calendar records: each calendar's document as given through the API, by name.
//!
//! Invariants: a change is read, decided (`calendar::change_calendar`) and written in
//! one write job, so no other change comes in between; rows are never deleted (a
//! removed calendar keeps its row with a NULL document, so versions never repeat);
//! records are listed in name order, as `CalendarName` orders (SQLite compares text
//! bytewise).

use punctual_core::calendar::{CalendarChangeRequest, CalendarName, CalendarRecord, change_calendar};
use punctual_core::store::corrupt;
use punctual_core::{Result, Timestamp};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::map_err;

type RawRecord = (String, Option<String>, i64, i64);

fn raw_record(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn decode((name, spec, version, updated_at): RawRecord) -> Result<CalendarRecord> {
    let name = CalendarName::new(name).map_err(corrupt)?;
    let version = u64::try_from(version).map_err(corrupt)?;
    Ok(CalendarRecord::new(name, spec, version, Timestamp::from_millis(updated_at)))
}

fn calendar_record(conn: &Connection, name: &CalendarName) -> Result<Option<CalendarRecord>> {
    let raw = conn
        .prepare_cached("SELECT name, spec, version, updated_at FROM calendar_records WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([name.as_str()], raw_record).optional())
        .map_err(map_err)?;
    raw.map(decode).transpose()
}

/// Sorted by name: SQLite compares text bytewise, as `CalendarName` orders.
pub(crate) fn calendar_records(conn: &Connection) -> Result<Vec<CalendarRecord>> {
    let raws: Vec<RawRecord> = conn
        .prepare_cached("SELECT name, spec, version, updated_at FROM calendar_records ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], raw_record)?.collect())
        .map_err(map_err)?;
    raws.into_iter().map(decode).collect()
}

/// Read and written in one write job, so no other change comes in between.
pub(crate) fn change(conn: &Connection, req: &CalendarChangeRequest) -> Result<CalendarRecord> {
    let changed = change_calendar(calendar_record(conn, &req.name)?.as_ref(), req)?;
    let version = i64::try_from(changed.version).map_err(corrupt)?;
    conn.prepare_cached(
        "INSERT INTO calendar_records (name, spec, version, updated_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, version = excluded.version, \
         updated_at = excluded.updated_at",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![changed.name.as_str(), changed.spec, version, changed.updated_at.as_millis()])
    })
    .map_err(map_err)?;
    Ok(changed)
}
