//! A store's identity: 64 random bits minted when a store is created and kept in it,
//! so that delivery ids ([`Task::delivery_id`](crate::Task::delivery_id)) of one store
//! never meet those of another, nor those of the same store before it was emptied
//! (a Redis restarted without persistence begins again at task id 1: a new identity
//! keeps its delivery ids apart from the old ones).
//!
//! Invariants: the text form is exactly [`StoreId::TEXT_LEN`] characters of
//! lowercase Crockford base32 (`0-9a-z` without `i l o u`), most significant first,
//! so it is the same length for every id and [`StoreId::parse`] gives back the same
//! bits; every 64-bit value is an id (there is no "unset" value a store could hand
//! out by mistake: a store stamps its own on every task it returns).

use std::fmt;

use crate::error::{Error, Result};

/// Crockford's base32 alphabet, lowercase: no `i`, `l`, `o` or `u` to misread.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The identity of one store (one embedded database, one Redis prefix), minted when
/// the store is created and kept in it. Shown as 13 characters, e.g. `3kq7d1w0m9z5e`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StoreId(u64);

impl StoreId {
    /// The length of the text form.
    pub const TEXT_LEN: usize = 13;

    /// A fresh identity, for a store being created.
    pub fn random() -> StoreId {
        StoreId(rand::random())
    }

    /// The identity with these bits (as a store keeps it).
    pub const fn from_bits(bits: u64) -> StoreId {
        StoreId(bits)
    }

    /// The 64 bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Reads the text form written by `Display`.
    pub fn parse(text: &str) -> Result<StoreId> {
        let bad = || Error::Internal(format!("'{}' is not a store id", text.escape_default()));
        if text.len() != Self::TEXT_LEN {
            return Err(bad());
        }
        let mut bits: u64 = 0;
        for (i, byte) in text.bytes().enumerate() {
            let digit = ALPHABET.iter().position(|&c| c == byte).ok_or_else(bad)? as u64;
            // 13 digits hold 65 bits: the first carries only the top 4.
            if i == 0 && digit > 0xf {
                return Err(bad());
            }
            bits = (bits << 5) | digit;
        }
        Ok(StoreId(bits))
    }
}

impl fmt::Display for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; StoreId::TEXT_LEN];
        for (i, slot) in text.iter_mut().enumerate() {
            let shift = 5 * (StoreId::TEXT_LEN - 1 - i);
            *slot = ALPHABET[((self.0 >> shift) & 0x1f) as usize];
        }
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreId({self})")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_text_form_is_fixed_length_and_reads_back() {
        assert_eq!(StoreId::from_bits(0).to_string(), "0000000000000");
        assert_eq!(StoreId::from_bits(u64::MAX).to_string(), "fzzzzzzzzzzzz");
        assert_eq!(StoreId::from_bits(31).to_string(), "000000000000z");
        for text in ["", "000000000000", "00000000000000", "g000000000000", "000000000000i", "00000000000 0"] {
            assert!(StoreId::parse(text).is_err(), "{text:?}");
        }
        assert_ne!(StoreId::random(), StoreId::random(), "64 random bits do not repeat");
    }

    proptest! {
        #[test]
        fn every_id_reads_back_from_its_text(bits: u64) {
            let id = StoreId::from_bits(bits);
            let text = id.to_string();
            prop_assert_eq!(text.len(), StoreId::TEXT_LEN);
            prop_assert_eq!(StoreId::parse(&text).unwrap(), id);
        }
    }
}
