//! Durations as clients write them (`"1h 30m"`, `"1500"`): parsing any text never
//! panics, and every duration it accepts is written back by `format_duration` in a
//! form that parses to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use punctual_core::time::{format_duration, parse_duration};

fuzz_target!(|text: &str| {
    if let Ok(duration) = parse_duration(text) {
        let written = format_duration(duration);
        assert_eq!(parse_duration(&written), Ok(duration), "{text:?} was written back as {written:?}");
    }
    // The JSON form goes through the same parser (a string) or is whole milliseconds.
    let _ = serde_json::from_str::<punctual_core::policy::Backoff>(text);
});
