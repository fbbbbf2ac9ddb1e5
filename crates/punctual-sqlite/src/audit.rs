//! The audit (see `punctual_core::audit`): one row per entry in `audit`, by `seq`
//! (AUTOINCREMENT, so a number is never given twice, also after the newest entries
//! were swept), with its time `at` and its stored form. A queue or calendar change
//! appends its entry in the change's own savepoint.

use punctual_core::Result;
use punctual_core::Timestamp;
use punctual_core::audit::{AuditEntry, AuditRequest, decode, encode};
use rusqlite::{Connection, params};

use crate::map_err;

pub(crate) fn append(conn: &Connection, entry: &AuditEntry) -> Result<()> {
    conn.prepare_cached("INSERT INTO audit (at, entry) VALUES (?1, ?2)")
        .and_then(|mut stmt| stmt.execute(params![entry.at.as_millis(), encode(entry)]))
        .map_err(map_err)?;
    Ok(())
}

pub(crate) fn page(conn: &Connection, req: &AuditRequest) -> Result<Vec<AuditEntry>> {
    let before = req.before.map_or(i64::MAX, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
    let rows: Vec<(i64, String)> = conn
        .prepare_cached("SELECT seq, entry FROM audit WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2")
        .and_then(|mut stmt| {
            stmt.query_map(params![before, req.limit.max(1)], |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
        })
        .map_err(map_err)?;
    rows.into_iter().map(|(seq, text)| decode(u64::try_from(seq).unwrap_or_default(), &text)).collect()
}

pub(crate) fn sweep(conn: &Connection, before: Timestamp, limit: u32) -> Result<u64> {
    let deleted = conn
        .prepare_cached("DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < ?1 ORDER BY seq LIMIT ?2)")
        .and_then(|mut stmt| stmt.execute(params![before.as_millis(), limit.max(1)]))
        .map_err(map_err)?;
    Ok(deleted as u64)
}
