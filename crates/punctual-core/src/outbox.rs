//! Outbox rows, applied once: an application writes a schedule or cancel as a row of
//! a table in its own database, in its own transaction, and punctual applies each
//! committed row (the server's drain, docs/outbox.md). A row may be read again after
//! it was applied (the process that applied it died before the row's deletion
//! committed): so a store applies a row's effect in one atomic step with a *mark* of
//! the row, and a row whose mark is there changes nothing ([`Store::apply_once`]).
//!
//! Invariants: a mark names its outbox and the row's id; it is written only with its
//! row's effect, and kept at least [`MARK_RETENTION`] after. (What a row asks of a
//! store, and answers, is the store's: [`crate::store::OnceOp`].) A row replayed within
//! that time is never applied twice, whatever was written to its key since (a cancel
//! replayed after a newer schedule, a schedule replayed after its task fired).
//!
//! [`Store::apply_once`]: crate::Store::apply_once

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::names::string_newtype;
use crate::time::Timestamp;

/// How long a store keeps a row's mark at least: a row read again later than this
/// after it was applied (its deletion never committed, and no drain ran for a week)
/// would be applied again.
pub const MARK_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// An outbox's name, which its rows' marks carry (two outboxes must not share one):
/// 1–128 characters from `A-Z a-z 0-9 . _ : -`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxName(String);

impl OutboxName {
    /// The longest name, in characters.
    pub const MAX_LEN: usize = 128;

    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<OutboxName> {
        let name = name.into();
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
        if name.is_empty() || name.len() > Self::MAX_LEN || !name.chars().all(valid) {
            return Err(Error::invalid(
                "outbox",
                format!("'{name}' is not an outbox name: 1 to 128 of letters, digits and . _ : -"),
            ));
        }
        Ok(OutboxName(name))
    }
}
string_newtype!(OutboxName);

/// One row of an outbox: which outbox, and the row's id there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxRow {
    pub outbox: OutboxName,
    pub id: i64,
}

impl OutboxRow {
    pub fn new(outbox: OutboxName, id: i64) -> OutboxRow {
        OutboxRow { outbox, id }
    }

    /// The mark's text, as stores keep it: `<outbox>\n<id>` (a name holds no newline).
    pub fn mark(&self) -> String {
        format!("{}\n{}", self.outbox, self.id)
    }
}

impl fmt::Display for OutboxRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {} of outbox {}", self.id, self.outbox)
    }
}

/// Marks kept in memory, with when each was written: the reference store's.
#[derive(Debug, Default, Clone)]
pub struct Marks {
    written: std::collections::BTreeMap<String, Timestamp>,
}

impl Marks {
    /// Whether `row` is marked.
    pub fn holds(&self, row: &OutboxRow) -> bool {
        self.written.contains_key(&row.mark())
    }

    /// Marks `row` at `now`, dropping the marks older than [`MARK_RETENTION`].
    pub fn mark(&mut self, row: &OutboxRow, now: Timestamp) {
        let oldest = Timestamp::from_millis(now.as_millis().saturating_sub(MARK_RETENTION.as_millis() as i64));
        self.written.retain(|_, at| *at >= oldest);
        self.written.insert(row.mark(), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_names_its_outbox_and_row_and_goes_after_the_retention() {
        let row = OutboxRow::new(OutboxName::new("orders-db").unwrap(), 42);
        assert_eq!(row.mark(), "orders-db\n42");
        assert!(OutboxName::new("orders db").is_err() && OutboxName::new("").is_err());
        let mut marks = Marks::default();
        let t0 = Timestamp::from_millis(1_000_000_000_000);
        marks.mark(&row, t0);
        assert!(marks.holds(&row));
        let other = OutboxRow::new(OutboxName::new("orders-db").unwrap(), 43);
        marks.mark(&other, t0.saturating_add(MARK_RETENTION));
        assert!(marks.holds(&row), "kept for the whole retention");
        marks.mark(&other, t0.saturating_add(MARK_RETENTION + Duration::from_millis(1)));
        assert!(!marks.holds(&row), "dropped after it");
    }
}
