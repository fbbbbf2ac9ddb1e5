//! Versioned records kept as the fields of one Hash, their version first
//! (`<version>,…`): queue records (`queue_records`) and calendars (`calendar_records`).
//! A change is atomic across processes by compare-and-set: read the field, decide the
//! next record (by the core's one rule for it, so versions and `if_version` follow it),
//! and write it with `lua/change_record.lua` only if the stored version is still the one
//! read; a process that lost the race reads again. Records are never deleted and each
//! change raises the version, so a record still at the version read is the record read.

use std::fmt;

use punctual_core::audit::AuditEntry;
use punctual_core::{Error, Result};

use crate::Shared;

/// How many times one change reads again after losing a race before it gives up: each
/// loss is another process's change applied, so this many means a storm of changes.
const MAX_RACES: usize = 32;

/// A record as a field of its Hash.
pub(crate) trait Versioned: Sized {
    fn version(&self) -> u64;
    /// The field's text, its version first.
    fn encode(&self) -> String;
}

impl Shared {
    /// Changes the record `name` of the Hash `hash` to what `decide` makes of it (as
    /// `decode` reads it; `None`: no record yet), by compare-and-set, with `entry` in the
    /// audit beside the Hash in the same script; the record written. `what` names it in
    /// the error of a storm of changes.
    pub(crate) async fn change_versioned<R: Versioned>(
        &self,
        hash: &str,
        name: &str,
        entry: &AuditEntry,
        what: impl fmt::Display,
        decode: impl Fn(&str) -> Result<R>,
        decide: impl Fn(Option<&R>) -> Result<R>,
    ) -> Result<R> {
        for _ in 0..MAX_RACES {
            let stored: Option<String> = self.conn.query(redis::cmd("HGET").arg(hash).arg(name)).await?;
            let existing = stored.map(|record| decode(&record)).transpose()?;
            let read = existing.as_ref().map_or(0, Versioned::version);
            let changed = decide(existing.as_ref())?;
            if self.write_record(hash, name, read, &changed.encode(), entry).await? {
                self.replicate_key(hash).await?;
                return Ok(changed);
            }
        }
        Err(Error::Unavailable(format!(
            "{what} changed {MAX_RACES} times while this change was being applied; try again"
        )))
    }
}
