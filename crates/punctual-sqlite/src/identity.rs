//! The store's identity (`meta`, `store_id`) and its lease-signing secret (`secrets`,
//! `lease`).
//!
//! Invariant: each is minted once, by the first call that finds none (`INSERT OR
//! IGNORE`), and read back from the row after: every later call gets the stored one.

use punctual_core::store::corrupt;
use punctual_core::{Result, StoreId};
use rusqlite::Connection;

use crate::map_err;

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
