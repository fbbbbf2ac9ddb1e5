//! `punctual bench ARGS…` hands over to the `punctual-bench` binary: found beside
//! `punctual` (or on `PATH`), run with the arguments as typed (`--help` included), its
//! output and exit status passed on; where it is in neither place, exit 1 with a message
//! saying how to get it.
//!
//! Guards against `punctual` swallowing a flag of the bench (its own `--help`, a
//! hyphenated value), masking the bench's exit status, or failing without saying what
//! is missing. The bench itself is tested in `crates/punctual-bench/tests/`; here a
//! shell script stands in for it.

use crate::common;

use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::BIN;

/// A copy of `punctual`, alone in a fresh directory: nothing is beside it.
fn lone_punctual(dir: &Path) -> PathBuf {
    let copy = dir.join("punctual");
    std::fs::copy(BIN, &copy).unwrap_or_else(|e| panic!("cannot copy {BIN}: {e}"));
    copy
}

/// Runs `exe ARGS` with an empty `PATH`. The copy may still be open for writing in a
/// process another test thread is starting, which refuses it as "text file busy" until
/// that process runs its own program: that refusal is retried (a bounded number of times).
fn run_without_path(exe: &Path, args: &[&str]) -> Output {
    let mut busy = 0;
    loop {
        match Command::new(exe).args(args).env("PATH", "").env_remove("PUNCTUAL_TOKEN").output() {
            Err(e) if e.kind() == ErrorKind::ExecutableFileBusy && busy < 10_000 => {
                busy += 1;
                std::thread::yield_now();
            }
            other => return other.unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display())),
        }
    }
}

#[test]
fn without_punctual_bench_it_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let punctual = lone_punctual(dir.path());
    let output = run_without_path(&punctual, &["bench", "--help"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for says in
        ["punctual-bench", "cargo build --release -p punctual-bench", "cargo install --path crates/punctual-bench"]
    {
        assert!(stderr.contains(says), "the message should say '{says}': {stderr}");
    }
}

#[test]
fn the_bench_beside_punctual_gets_the_arguments_as_typed_and_its_exit_status_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let punctual = lone_punctual(dir.path());
    let bench = dir.path().join("punctual-bench");
    std::fs::write(&bench, "#!/bin/sh\nprintf '%s\\n' \"$@\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = run_without_path(&punctual, &["bench", "--tasks", "5", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout, "--tasks\n5\n--help\n");
}
