//! The `punctual` binary: `punctual serve` runs the server; the other subcommands are a
//! client of a running server (see `../shared/API.md`, "Command line client"),
//! `punctual cron next` computes a cron expression's occurrences here ([`cron`]),
//! `punctual backup` and `punctual restore` work on the embedded store's directory
//! ([`backup`]), and
//! `punctual bench` hands over to the `punctual-bench` binary ([`bench`]). A thin binary:
//! the server and the HTTP client are library crates (`punctual-server`,
//! `punctual-client`); this crate parses the command line, renders answers and maps
//! errors to exit statuses.
//!
//! Exit status: 0 on success; 1 when a command fails (the server refused, the task was
//! not found, the server could not be reached, `punctual-bench` is not installed); 2 on
//! a usage error (clap's own, or a [`UsageError`] found after parsing, such as
//! a purge without `--yes` and without a terminal to confirm on). `punctual bench` exits
//! as the bench does.

mod backup;
mod bench;
mod calendar;
mod cli;
mod commands;
mod cron;
#[cfg(test)]
mod fake_server;
mod import;
mod json;
mod migrate;
mod outbox;
mod render;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use cli::{Cli, ClientArgs, Command};
// The HTTP client is a crate of its own, shared with `punctual-bench`; the modules
// here keep calling it `crate::client`.
use client::Client;
use client::output::emit;
use punctual_client as client;

/// mimalloc instead of the system's allocator: under a burst of leases and acks over
/// HTTP on the embedded store, glibc's `malloc`, `free` and their consolidation were
/// 12% of the server's samples (`perf record`; see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Serve(args) => punctual_server::serve(args).await,
        // This process becomes the bench (its runtime's threads end with the exec).
        Command::Bench(args) => bench::exec(args.args),
        Command::CheckConfig(args) => check_config(&args.file).and_then(|text| emit(&text)),
        Command::Cron(args) => cron::run(args).and_then(|text| emit(&text)),
        Command::Outbox(args) => outbox::run(args).await.and_then(|text| emit(&text)),
        Command::Backup(args) => backup::backup(&args).await.and_then(|text| emit(&text)),
        Command::Restore(args) => backup::restore(&args).and_then(|text| emit(&text)),
        Command::Migrate(args) => migrate::run(&args).await.and_then(|text| emit(&text)),
        Command::Client(command) => commands::run(command).await.and_then(|text| emit(&text)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the whole chain on one line: "error: context: cause".
            eprintln!("error: {error:#}");
            if error.downcast_ref::<UsageError>().is_some() { ExitCode::from(2) } else { ExitCode::FAILURE }
        }
    }
}

/// A usage error found after parsing: `main` exits 2 for it, with the message.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A client of the server; the token is `--token` (or `PUNCTUAL_TOKEN`), else the first
/// of `PUNCTUAL_TOKENS`, the server's variable, so one environment serves both.
pub(crate) fn connect(args: &ClientArgs) -> Result<Client> {
    let token = args.token.clone().filter(|token| !token.is_empty()).or_else(|| {
        let list = std::env::var("PUNCTUAL_TOKENS").ok()?;
        list.split(',').map(str::trim).find(|token| !token.is_empty()).map(str::to_owned)
    });
    Client::new(&args.server, token)
}

/// The headers of `--if-version N`: `If-Match: N`, the bare number.
pub(crate) fn if_match(version: Option<&str>) -> Vec<(&'static str, &str)> {
    version.map(|v| ("if-match", v)).into_iter().collect()
}

/// `punctual check-config FILE`: a one-line summary, or the error with its line.
fn check_config(file: &std::path::Path) -> Result<String> {
    let summary = punctual_server::check_config(file)?;
    let actions = if summary.actions.is_empty() {
        "no push actions (every queue is drained by pull workers)".to_owned()
    } else {
        let list: Vec<String> = summary.actions.iter().map(|(queue, kind)| format!("{queue} ({kind})")).collect();
        format!("push actions: {}", list.join(", "))
    };
    Ok(format!("{}: OK; {} queue(s) configured; {actions}", file.display(), summary.queues))
}

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
