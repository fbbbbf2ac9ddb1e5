//! `punctual import …`: moves delayed work kept elsewhere into punctual, each item one
//! task — [`keyspace`] for Redis keys whose expiry is the due time, [`redisson`] for
//! the elements of a Redisson `RDelayedQueue`. This file holds what every import
//! shares, so each keeps the same promises in the same words:
//!
//! - **The source loses an item only after the server stored its task.** An item is
//!   removed from the source only when the server answered `created` or `kept` for its
//!   task ([`store`]).
//! - **A re-run is harmless.** Every item is sent with `if_exists: "keep"` under a key
//!   that is the same on every run: a task that exists is left as it is and counted as
//!   already present.
//! - **A dry run writes nothing**: no server is called ([`server`] is `None`) and nothing
//!   in the source changes.
//! - **Progress goes to standard error** ([`import_pages`], [`Notes`]: items named with why
//!   they were skipped, refused or kept), **the counts to standard output**, as text
//!   ([`table`]) or with `--json` as the counts' JSON ([`finish`]).

mod keyspace;
mod redisson;
mod redisson_codec;

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use punctual_core::Stopwatch;
use punctual_redis::redacted;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::{ClientArgs, PayloadMode};
use crate::client::Client;
use crate::{UsageError, connect};

pub(crate) use keyspace::run as keyspace;
pub(crate) use redisson::run as redisson;

/// The API's batch limit (API.md, "Conventions").
const MAX_BATCH: usize = 10_000;
/// Items named one by one on standard error; the rest are only counted.
const MAX_NOTES: usize = 50;
/// Without a terminal, a progress line at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Why a value read from the source cannot be the payload `--payload` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NotPayload {
    /// `--payload value` and the value is not UTF-8 text.
    NotText,
    /// `--payload json` and the value does not parse (serde_json's reason).
    NotJson(String),
}

/// The payload `mode` makes of `value`: the text as a JSON string, the text parsed as
/// JSON, or none.
fn payload(mode: PayloadMode, value: &[u8]) -> Result<Option<Value>, NotPayload> {
    match mode {
        PayloadMode::Value => std::str::from_utf8(value).map(|text| Some(json!(text))).map_err(|_| NotPayload::NotText),
        PayloadMode::Json => serde_json::from_slice(value).map(Some).map_err(|e| NotPayload::NotJson(e.to_string())),
        PayloadMode::None => Ok(None),
    }
}

/// What the server answered for one item of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stored {
    /// A new task.
    Created,
    /// A task with its key existed and was left as it was (`kept`; `replaced` is read
    /// the same, though `if_exists: "keep"` never asks for it).
    Kept,
    /// Not stored: the server's message.
    Refused(String),
}

/// Stores `items` (at most [`MAX_BATCH`], each with `if_exists: "keep"`) with one
/// `POST /v1/queues/{queue}/tasks`; the answers are in the order of `items`.
async fn store(client: &Client, queue: &str, items: &[&Value]) -> Result<Vec<Stored>> {
    debug_assert!(items.len() <= MAX_BATCH, "a batch holds at most {MAX_BATCH} items");
    let answer = client.post_json(&["v1", "queues", queue, "tasks"], &json!({ "tasks": items })).await?.json()?;
    let results = answer.value["results"].as_array().filter(|r| r.len() == items.len()).ok_or_else(|| {
        anyhow!("the server's answer to a batch of {} has no result for each: {}", items.len(), answer.text)
    })?;
    Ok(results
        .iter()
        .map(|result| match result["outcome"].as_str() {
            Some("created") => Stored::Created,
            Some("kept" | "replaced") => Stored::Kept,
            _ => Stored::Refused(result["error"]["message"].as_str().unwrap_or("no reason given").to_owned()),
        })
        .collect())
}

/// The server to store tasks on, checked with `GET /healthz`; `None` for a dry run,
/// which calls no server.
async fn server(args: &ClientArgs, dry_run: bool) -> Result<Option<Client>> {
    if dry_run {
        return Ok(None);
    }
    let client = connect(args)?;
    client.request(crate::client::Request::new(crate::client::Method::GET, &["healthz"])).await?;
    Ok(Some(client))
}

/// What a Redis that cannot be opened means to the user: a bad `--redis` is a usage
/// error, an unreachable Redis an error that says what to check.
fn redis_error(url: &str, error: punctual_core::Error) -> anyhow::Error {
    match error {
        punctual_core::Error::Invalid { field, reason } if field == "url" => UsageError(format!(
            "--redis '{}' is not a Redis URL ({reason}); write e.g. redis://127.0.0.1:6379",
            redacted(url)
        ))
        .into(),
        punctual_core::Error::Unavailable(why) => {
            anyhow!("{why}. Is it running, and is --redis its address (with the password if it needs one)?")
        }
        other => other.into(),
    }
}

/// A source read page by page (a `SCAN`, a walk over a delayed queue).
trait Source {
    type Page;
    /// What is read, for the error when reading fails: "the keys".
    const WHAT: &'static str;
    async fn next_page(&mut self) -> punctual_core::Result<Option<Self::Page>>;
}

/// One run of an import, fed page after page by [`import_pages`].
trait Import {
    type Page;
    /// What leaving an item in the source is called: "deleted", "removed from Redis".
    const REMOVED: &'static str;
    /// Stores the page's items and removes from the source those stored.
    async fn page(&mut self, page: Self::Page) -> Result<()>;
    fn counts(&self) -> &dyn Tally;
    fn notes(&self) -> &Notes;
}

/// The counts of a run, as progress shows them.
trait Tally {
    /// Tasks created so far.
    fn imported(&self) -> u64;
    /// One line for the progress display.
    fn progress_line(&self) -> String;
}

/// Feeds `run` every page of `source`, with progress. An error stops it, saying what
/// was done and that a re-run is safe.
async fn import_pages<S: Source, I: Import<Page = S::Page>>(source: &mut S, run: &mut I) -> Result<()> {
    let mut progress = Progress::new();
    loop {
        let step = match source.next_page().await.with_context(|| format!("reading {} failed", S::WHAT)) {
            Ok(Some(page)) => run.page(page).await,
            Ok(None) => break,
            Err(e) => Err(e),
        };
        if let Err(e) = step {
            progress.finish(|| run.counts().progress_line());
            return Err(e.context(format!(
                "the import stopped after {} new tasks (nothing unconfirmed was {}); \
                 run it again once this is fixed: a re-run keeps what was imported",
                run.counts().imported(),
                I::REMOVED
            )));
        }
        progress.show(|| run.counts().progress_line());
    }
    progress.finish(|| run.counts().progress_line());
    run.notes().finish();
    Ok(())
}

/// The counts as text: `header`, then a row per count, right-aligned.
fn table(header: &str, rows: &[(u64, String)]) -> String {
    let width = rows.iter().map(|(n, _)| n.to_string().len()).max().unwrap_or(1);
    let mut text = format!("{header}\n");
    for (n, label) in rows {
        text.push_str(&format!("  {n:>width$}  {label}\n"));
    }
    text
}

/// The header of a run's summary: a dry run's, or the time taken and the rate.
fn header(dry_run: bool, what: &str, count: u64, noun: &str, elapsed: Duration) -> String {
    if dry_run {
        return format!("Dry run of {what}: nothing was written.");
    }
    let seconds = elapsed.as_secs_f64();
    let rate = if seconds > 0.0 { (count as f64 / seconds).round() } else { 0.0 };
    format!("Imported {what} in {seconds:.1}s ({rate} {noun}/s).")
}

/// What a run prints: `counts` as JSON with `--json`, else `text`. With items refused,
/// it prints that and fails, so the exit status says the import is not complete.
fn finish(json: bool, counts: &impl Serialize, text: String, refused: u64, noun: &str) -> Result<String> {
    let summary =
        if json { serde_json::to_string_pretty(counts).context("cannot write the counts as JSON")? } else { text };
    if refused > 0 {
        println!("{summary}");
        bail!("the server refused {refused} of the {noun} (see the notes above); the others were imported");
    }
    Ok(summary)
}

/// Items named on standard error with why they were skipped, refused or kept.
#[derive(Debug)]
struct Notes {
    /// What an item is: "keys", "elements".
    noun: &'static str,
    shown: usize,
    left_out: usize,
}

impl Notes {
    fn new(noun: &'static str) -> Notes {
        Notes { noun, shown: 0, left_out: 0 }
    }

    fn add(&mut self, name: &str, why: &str) {
        if self.shown >= MAX_NOTES {
            self.left_out += 1;
            return;
        }
        self.shown += 1;
        eprintln!("{}note: '{}': {why}", clear_line(), name.escape_debug());
    }

    fn finish(&self) {
        if self.left_out > 0 {
            eprintln!("note: {} more {} like these are counted below but not named", self.left_out, self.noun);
        }
    }
}

/// `\r` and clear-to-end on a terminal, where the progress line is to be overwritten.
fn clear_line() -> &'static str {
    if std::io::stderr().is_terminal() { "\r\x1b[K" } else { "" }
}

/// The progress display on standard error: one line rewritten in place on a terminal,
/// a line every [`PROGRESS_EVERY`] otherwise.
#[derive(Debug)]
struct Progress {
    terminal: bool,
    since_last: Stopwatch,
}

impl Progress {
    fn new() -> Progress {
        Progress { terminal: std::io::stderr().is_terminal(), since_last: Stopwatch::start() }
    }

    fn show(&mut self, line: impl FnOnce() -> String) {
        if self.terminal {
            eprint!("\r\x1b[K{}", line());
            let _ = std::io::stderr().flush();
        } else if self.since_last.elapsed() >= PROGRESS_EVERY {
            eprintln!("{}", line());
            self.since_last = Stopwatch::start();
        }
    }

    fn finish(&self, line: impl FnOnce() -> String) {
        if self.terminal {
            eprintln!("\r\x1b[K{}", line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_the_text_the_json_or_nothing() {
        assert_eq!(payload(PayloadMode::Value, br#"{"n": 1}"#), Ok(Some(json!(r#"{"n": 1}"#))));
        assert_eq!(payload(PayloadMode::Json, br#"{"n": 1}"#), Ok(Some(json!({"n": 1}))));
        assert_eq!(payload(PayloadMode::None, b"\xff"), Ok(None));
        assert_eq!(payload(PayloadMode::Value, b"\xff"), Err(NotPayload::NotText));
        assert!(matches!(payload(PayloadMode::Json, b"1 2"), Err(NotPayload::NotJson(_))));
    }

    #[test]
    fn tables_align_the_counts() {
        let rows = [(7, "a".to_owned()), (1234, "b".to_owned())];
        assert_eq!(table("Head.", &rows), "Head.\n     7  a\n  1234  b\n");
    }
}
