//! Servers whose wall clock is libfaketime's (Debian's `faketime` package, which
//! `.ci/run` installs): preloaded into the server process only, so the test's own clock
//! stays the machine's. The monotonic clock is left alone, so timers still count real
//! time from the faked start.

use std::path::Path;

use punctual_testkit::server::ServerBuilder;

/// The preloaded library.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Panics with how to install libfaketime when it is missing: a test without it
/// would prove nothing.
#[track_caller]
pub fn require() {
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} is missing: install Debian's faketime package (apt-get install faketime)"
    );
}

/// `builder` with its wall clock read from `clock`, a file holding libfaketime's
/// timestamp (`@2026-03-01 12:00:00`: start there, in UTC, and run). The file is read
/// once per process, so writing it between a kill and a restart moves the restarted
/// server's clock.
#[track_caller]
pub fn clock_from_file(builder: ServerBuilder, clock: &Path) -> ServerBuilder {
    require();
    builder
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME_TIMESTAMP_FILE", clock)
        // Read once per process: the file changes only between runs.
        .env("FAKETIME_CACHE_DURATION", "86400")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("TZ", "UTC")
}
