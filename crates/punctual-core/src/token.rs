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
    use proptest::prelude::*;

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

    fn any_queue() -> impl Strategy<Value = QueueName> {
        prop_oneof!["[a-z.]{1,12}", "[A-Za-z0-9._:-]{1,128}"].prop_map(|name| QueueName::new(name).unwrap())
    }

    /// Keys of every kind the rules allow: ASCII, any non-control Unicode (format
    /// characters, emoji, CJK), up to the 512-byte limit.
    fn any_key() -> impl Strategy<Value = TaskKey> {
        let unicode = prop::collection::vec(any::<char>(), 1..300).prop_map(|chars| {
            let mut key = String::new();
            for c in chars.into_iter().filter(|c| !c.is_control()) {
                if key.len() + c.len_utf8() > TaskKey::MAX_BYTES {
                    break;
                }
                key.push(c);
            }
            if key.is_empty() {
                key.push('x'); // every character drawn was a control character
            }
            key
        });
        prop_oneof!["[a-z0-9/._-]{1,40}", unicode, Just("é".repeat(256)), Just("k".repeat(512))]
            .prop_map(|key| TaskKey::new(key).unwrap())
    }

    fn any_token() -> impl Strategy<Value = LeaseToken> {
        (any_queue(), any_key(), any::<u64>(), any::<u64>(), any::<u64>())
            .prop_map(|(queue, key, id, version, fence)| LeaseToken::new(queue, key, id, version, fence))
    }

    #[derive(Debug, Clone)]
    enum Damage {
        FlipBit(prop::sample::Index),
        Truncate(prop::sample::Index),
        Append(Vec<u8>),
    }

    fn any_damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            any::<prop::sample::Index>().prop_map(Damage::FlipBit),
            any::<prop::sample::Index>().prop_map(Damage::Truncate),
            prop::collection::vec(any::<u8>(), 1..40).prop_map(Damage::Append),
        ]
    }

    proptest! {
        #[test]
        fn any_token_round_trips_as_url_safe_text(token in any_token(), secret in any::<[u8; 32]>()) {
            let codec = TokenCodec::new(secret);
            let text = codec.encode(&token);
            prop_assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{}", text);
            prop_assert_eq!(codec.decode(&text), Ok(token));
        }

        /// One flipped bit anywhere, a cut anywhere, or bytes added: not found.
        #[test]
        fn damaged_tokens_are_not_found(token in any_token(), secret in any::<[u8; 32]>(), damage in any_damage()) {
            let codec = TokenCodec::new(secret);
            let mut raw = URL_SAFE_NO_PAD.decode(codec.encode(&token)).unwrap();
            match &damage {
                Damage::FlipBit(bit) => {
                    let bit = bit.index(raw.len() * 8);
                    raw[bit / 8] ^= 1 << (bit % 8);
                }
                Damage::Truncate(len) => raw.truncate(len.index(raw.len())),
                Damage::Append(extra) => raw.extend_from_slice(extra),
            }
            prop_assert_eq!(codec.decode(&URL_SAFE_NO_PAD.encode(&raw)), Err(Error::NotFound("lease".into())));
        }

        #[test]
        fn tokens_of_another_secret_are_not_found(
            token in any_token(),
            (ours, theirs) in (any::<[u8; 32]>(), any::<[u8; 32]>()).prop_filter("two secrets", |(a, b)| a != b),
        ) {
            let foreign = TokenCodec::new(theirs).encode(&token);
            prop_assert_eq!(TokenCodec::new(ours).decode(&foreign), Err(Error::NotFound("lease".into())));
        }

        #[test]
        fn any_text_is_not_found_not_a_panic(
            text in prop_oneof![".*", "[A-Za-z0-9_-]{0,300}", "[A-Za-z0-9_-]{600,1000}"],
        ) {
            prop_assert_eq!(TokenCodec::new([7; 32]).decode(&text), Err(Error::NotFound("lease".into())));
        }
    }
}
