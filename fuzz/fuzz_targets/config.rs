//! Configuration files (`punctual serve --config`, `punctual check-config`): any text
//! is accepted or refused with an error, never a panic, and an error that points at a
//! line points at a line of the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(e) = punctual_server::check_config_text(Path::new("punctual.toml"), text) {
        let lines = text.split('\n').count();
        if let Some(line) = e.line() {
            assert!((1..=lines).contains(&line), "{e} (the file has {lines} lines)");
        }
        assert!(!e.to_string().trim().is_empty());
    }
});
