//! Instants as clients write them (RFC 3339 with any offset, or epoch milliseconds):
//! parsing any text never panics, every accepted instant lies in 1970..=9999, and its
//! RFC 3339 form parses back to the same instant, as text and as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use punctual_core::Timestamp;

fn check(t: Timestamp, input: &str) {
    assert!(t <= Timestamp::MAX, "{input:?} gave {} ms", t.as_millis());
    let written = t.to_string();
    assert_eq!(Timestamp::parse(&written), Ok(t), "{input:?} was written back as {written:?}");
    let json = serde_json::to_string(&t).expect("a timestamp serializes");
    assert_eq!(serde_json::from_str::<Timestamp>(&json).ok(), Some(t), "{input:?} as JSON {json}");
}

fuzz_target!(|text: &str| {
    if let Ok(t) = Timestamp::parse(text) {
        check(t, text);
    }
    // The JSON form: a string or an integer (anything else is refused, never a panic).
    if let Ok(t) = serde_json::from_str::<Timestamp>(text) {
        check(t, text);
    }
});
