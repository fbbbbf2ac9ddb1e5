//! Lease ids as clients send them back. Any text either is refused as not found or is
//! a token this store signed; nothing panics. Inputs are tried two ways:
//! - as the text a client sent: without the store's secret no input can carry a valid
//!   tag, so every one must be refused (one that is accepted is a forgery);
//! - as the bytes of a token body signed with the store's secret, the way a token of
//!   another format or a buggy encoder would look: the decoder must refuse it or read
//!   a token that encodes back to exactly the same text (one token, one text).
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use libfuzzer_sys::fuzz_target;
use punctual_core::TokenCodec;
use sha2::Sha256;

const SECRET: [u8; 32] = [0x5a; 32];

fn signed(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(&SECRET).expect("any key length");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut raw = body.to_vec();
    raw.extend_from_slice(&tag[..16]);
    URL_SAFE_NO_PAD.encode(raw)
}

fuzz_target!(|data: &[u8]| {
    let codec = TokenCodec::new(SECRET);
    if let Ok(text) = std::str::from_utf8(data) {
        assert!(codec.decode(text).is_err(), "{text:?} was accepted without the secret");
    }
    let text = signed(data);
    if let Ok(token) = codec.decode(&text) {
        assert_eq!(codec.encode(&token), text, "{token:?} has two texts");
    }
});
