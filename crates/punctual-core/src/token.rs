//! Lease tokens as clients see them: opaque, URL-safe strings that carry a
//! [`LeaseToken`] (queue, key, task id, version, fence) and an HMAC-SHA256 tag keyed
//! with the store's secret ([`Store::secret`](crate::Store::secret)), so any node of a
//! store can check any token and nobody can forge or alter one. A string that is not a
//! token of this store decodes to [`Error::NotFound`], never to a panic.
//!
//! Layout before base64url (no padding): `1` (format), id u64, version u64, fence u64,
//! queue length u8, queue, key length u16, key, then the first 16 bytes of the tag.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::model::{QueueName, TaskKey};
use crate::store::LeaseToken;

const FORMAT: u8 = 1;
const TAG_BYTES: usize = 16;
/// The longest encoded token: fixed fields, the longest queue and key, the tag.
const MAX_RAW: usize = 1 + 24 + 1 + QueueName::MAX_LEN + 2 + TaskKey::MAX_BYTES + TAG_BYTES;

/// Encodes and checks lease tokens with one store's secret.
#[derive(Clone)]
pub struct TokenCodec {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for TokenCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCodec(..)")
    }
}

impl TokenCodec {
    /// A codec keyed with `secret`.
    pub fn new(secret: [u8; 32]) -> TokenCodec {
        TokenCodec { mac: Hmac::<Sha256>::new_from_slice(&secret).expect("HMAC takes keys of any length") }
    }

    fn tag(&self, body: &[u8]) -> [u8; TAG_BYTES] {
        let mut mac = self.mac.clone();
        mac.update(body);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    /// The opaque text of `token`.
    pub fn encode(&self, token: &LeaseToken) -> String {
        let (queue, key) = (token.queue.as_str().as_bytes(), token.key.as_str().as_bytes());
        let mut raw = Vec::with_capacity(1 + 24 + 3 + queue.len() + key.len() + TAG_BYTES);
        raw.push(FORMAT);
        raw.extend_from_slice(&token.task_id.to_be_bytes());
        raw.extend_from_slice(&token.version.to_be_bytes());
        raw.extend_from_slice(&token.fence.to_be_bytes());
        raw.push(queue.len() as u8); // ≤ 128 by QueueName's rules
        raw.extend_from_slice(queue);
        raw.extend_from_slice(&(key.len() as u16).to_be_bytes()); // ≤ 512 by TaskKey's rules
        raw.extend_from_slice(key);
        let tag = self.tag(&raw);
        raw.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// The token in `text`, or [`Error::NotFound`] when it is malformed, was altered, or
    /// was signed by another store.
    pub fn decode(&self, text: &str) -> Result<LeaseToken> {
        let unknown = || Error::NotFound("lease".into());
        if text.len() > MAX_RAW.div_ceil(3) * 4 {
            return Err(unknown());
        }
        let raw = URL_SAFE_NO_PAD.decode(text).map_err(|_| unknown())?;
        if raw.len() < 1 + 24 + 1 + 2 + TAG_BYTES {
            return Err(unknown());
        }
        let (body, tag) = raw.split_at(raw.len() - TAG_BYTES);
        let mut mac = self.mac.clone();
        mac.update(body);
        mac.verify_truncated_left(tag).map_err(|_| unknown())?;
        let mut reader = Reader(body);
        if reader.take(1).ok_or_else(unknown)? != [FORMAT] {
            return Err(unknown());
        }
        let task_id = reader.u64().ok_or_else(unknown)?;
        let version = reader.u64().ok_or_else(unknown)?;
        let fence = reader.u64().ok_or_else(unknown)?;
        let queue_len = usize::from(reader.take(1).ok_or_else(unknown)?[0]);
        let queue = std::str::from_utf8(reader.take(queue_len).ok_or_else(unknown)?).map_err(|_| unknown())?;
        let key_len = reader.take(2).ok_or_else(unknown)?;
        let key_len = usize::from(u16::from_be_bytes([key_len[0], key_len[1]]));
        let key = std::str::from_utf8(reader.take(key_len).ok_or_else(unknown)?).map_err(|_| unknown())?;
        if !reader.0.is_empty() {
            return Err(unknown());
        }
        let queue = QueueName::new(queue).map_err(|_| unknown())?;
        let key = TaskKey::new(key).map_err(|_| unknown())?;
        Ok(LeaseToken::new(queue, key, task_id, version, fence))
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> LeaseToken {
        LeaseToken::new(QueueName::new("order.cancel").unwrap(), TaskKey::new("订单/1234").unwrap(), 7, 3, 1 << 33)
    }

    #[test]
    fn tokens_round_trip() {
        let codec = TokenCodec::new([7; 32]);
        let text = codec.encode(&token());
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{text}");
        assert_eq!(codec.decode(&text).unwrap(), token());
        let long =
            LeaseToken::new(QueueName::new("q".repeat(128)).unwrap(), TaskKey::new("k".repeat(512)).unwrap(), 1, 1, 1);
        assert_eq!(codec.decode(&codec.encode(&long)).unwrap(), long);
    }

    #[test]
    fn altered_foreign_and_malformed_tokens_are_not_found() {
        let codec = TokenCodec::new([7; 32]);
        let text = codec.encode(&token());
        let mut raw = URL_SAFE_NO_PAD.decode(&text).unwrap();
        raw[20] ^= 1; // flip a bit of the fence
        let altered = URL_SAFE_NO_PAD.encode(&raw);
        let foreign = TokenCodec::new([8; 32]).encode(&token());
        for bad in
            [altered.as_str(), foreign.as_str(), "", "x", "not a token!", &text[..text.len() - 1], &"A".repeat(5000)]
        {
            assert_eq!(codec.decode(bad), Err(Error::NotFound("lease".into())), "{bad:?}");
        }
    }
}
