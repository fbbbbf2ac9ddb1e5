//! The cursor of a listing: `<due ms>.<key in hex>` of the last task of a page, the
//! place in (due, key) order after which the next page starts. Every listing of this
//! store (plain or by tag, one shard or many) orders by (due, key bytes), so one
//! cursor works for all of them.
//!
//! Invariant: a cursor this store did not issue (damaged, or another store's) is
//! refused with [`bad_cursor`], never read as some other place.

use punctual_core::{Error, Result, Task};

/// A place in (due, key) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) due: i64,
    pub(crate) key: String,
}

impl Cursor {
    /// Reads a cursor this store issued.
    pub(crate) fn parse(cursor: &str) -> Result<Cursor> {
        let (due, hex) = cursor.split_once('.').ok_or_else(bad_cursor)?;
        let due = due.parse().map_err(|_| bad_cursor())?;
        Ok(Cursor { due, key: key_of_hex(hex)? })
    }

    /// The cursor after `task`.
    pub(crate) fn of(task: &Task) -> String {
        Cursor::at(task.due_at.as_millis(), task.key.as_str())
    }

    /// The cursor after the task `key` due at `due` ms.
    pub(crate) fn at(due: i64, key: &str) -> String {
        format!("{due}.{}", hex_of(key))
    }
}

/// `key`'s bytes in hex, as cursors carry a key (any text, safe in a URL).
pub(crate) fn hex_of(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The key [`hex_of`] wrote as `hex`; [`bad_cursor`] for other text.
pub(crate) fn key_of_hex(hex: &str) -> Result<String> {
    if !hex.len().is_multiple_of(2) {
        return Err(bad_cursor());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<std::result::Result<Vec<u8>, _>>()
        .map_err(|_| bad_cursor())?;
    String::from_utf8(bytes).map_err(|_| bad_cursor())
}

/// The answer to a cursor this store did not issue (also a bulk retry's, see `dead`).
pub(crate) fn bad_cursor() -> Error {
    Error::invalid("cursor", "this cursor was not issued by this store; start again without one")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_a_foreign_one_is_refused() {
        let issued = Cursor::at(1_700, "订单|1");
        assert_eq!(Cursor::parse(&issued), Ok(Cursor { due: 1_700, key: "订单|1".into() }));
        for foreign in ["", "17", "x.61", "17.6", "17.zz", "17.ff"] {
            assert_eq!(Cursor::parse(foreign), Err(bad_cursor()), "{foreign:?}");
        }
    }
}
