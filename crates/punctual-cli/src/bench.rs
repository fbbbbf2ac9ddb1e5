//! `punctual bench ARGS…`: the benchmark is a binary of its own, `punctual-bench`, so
//! this one links none of its tools (the baselines' Redis, SQLite and broker clients,
//! the private redis-server launcher). Its arguments are handed over as typed, `--help`
//! included, and this process becomes the bench (`exec`): signals, output and the
//! exit status are the bench's own.
//!
//! The bench is looked for beside this binary first (`cargo build --release` puts both
//! in `target/release/`), then on `PATH`. When it is in neither, the command fails
//! (exit 1) saying how to get it.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, anyhow};

/// The benchmark's binary.
const BENCH: &str = "punctual-bench";

/// Runs `punctual-bench ARGS…` in place of this process; returns only when it could
/// not.
pub(crate) fn exec(args: Vec<OsString>) -> Result<()> {
    let Some(bench) = locate() else {
        let beside = beside_this_binary()
            .and_then(|path| path.parent().map(|dir| format!(" ({})", dir.display())))
            .unwrap_or_default();
        return Err(anyhow!(
            "punctual bench runs the {BENCH} binary, which is neither beside punctual{beside} nor on PATH: \
             build it with `cargo build --release -p {BENCH}` (it lands beside target/release/punctual), \
             or install it with `cargo install --path crates/{BENCH}`"
        ));
    };
    // argv[0] "punctual bench": the bench's usage lines and errors then name the command
    // as the user typed it.
    let error = Command::new(&bench).arg0("punctual bench").args(args).exec();
    Err(anyhow!("cannot run {}: {error}", bench.display()))
}

/// The bench beside this binary, else the first on `PATH`.
fn locate() -> Option<PathBuf> {
    beside_this_binary().filter(|path| is_executable(path)).or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join(BENCH)).find(|path| is_executable(path))
    })
}

/// Where the bench is when it was built or installed with this binary.
fn beside_this_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join(BENCH))
}

/// A file with an execute bit, as a shell looks for a command.
fn is_executable(path: &std::path::Path) -> bool {
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
