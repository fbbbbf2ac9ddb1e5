//! `punctual import keyspace`: moves what the legacy approach left in Redis — string
//! keys whose expiry is the reminder's due time, watched by a keyspace-notification
//! listener — into punctual, each key one task due when the key would have expired
//! (`docs/migrate-from-keyspace-notifications.md` is the cut-over plan around it).
//!
//! One page at a time: read a page of keys ([`punctual_redis::keyspace`], which keeps
//! the Redis-side invariants: it never blocks Redis, and deletes a key only if it is
//! unchanged since it was read, atomically), turn each read into a batch item
//! ([`Plan::item`]), store the batch with one `POST /v1/queues/{queue}/tasks`, and with
//! `--delete-source` delete the keys the server confirmed. Invariants:
//!
//! - **It deletes only after the task is stored.** A key is deleted only when the server
//!   answered `created` or `kept` for its task. Deleting needs `PEXPIRETIME` (Redis 7),
//!   so on an older Redis `--delete-source` is refused.
//! - **A re-run is harmless.** Every item is sent with `if_exists: "keep"`: a task that
//!   exists (from an earlier run, or scheduled by a writer already switched to
//!   punctual) is left untouched and counted as already present.
//! - **A dry run writes nothing**: it reads Redis and never calls the server or a script.
//!
//! A task's `delay` is the key's remaining time as Redis computed it when the page was
//! read, so neither this machine's clock nor Redis' has to agree with the server's; the
//! task is late by the time from the read to the server storing the batch, never early.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use punctual_core::{Stopwatch, TaskKey};
use punctual_redis::keyspace::{Deleted, Deleter, LegacyEntry, LegacyKeyspace, Read};
use punctual_redis::redacted;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cli::{KeyspaceArgs, PayloadMode};
use crate::client::Client;
use crate::{UsageError, connect};

/// The API's batch limit (API.md, "Conventions").
const MAX_BATCH: usize = 10_000;
/// Keys named one by one on standard error; the rest are only counted.
const MAX_NOTES: usize = 50;
/// Without a terminal, a progress line at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Why a key that was read is not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Skip {
    /// It does not start with `--strip-prefix`.
    NoPrefix,
    /// What is left is not a valid task key (the reason from the key rules).
    InvalidKey(String),
    /// `--payload value` and the value is not UTF-8 text.
    NotText,
    /// `--payload json` and the value does not parse (serde_json's reason).
    NotJson(String),
    /// `--delete-source` and it expires within `--min-ttl`: left to the listener.
    ExpiresSoon,
}

/// What to make of each key read: the checked flags of one run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    strip_prefix: Vec<u8>,
    payload: PayloadMode,
    /// Keys expiring sooner are left to the listener (with `--delete-source` only).
    min_ttl_ms: Option<i64>,
}

impl Plan {
    /// Checks `--match` and `--strip-prefix` together: a pattern that is not a glob
    /// Redis reads the way it was meant, or one whose keys cannot start with the prefix,
    /// is a usage error.
    pub(crate) fn new(
        pattern: &str,
        strip_prefix: Option<&str>,
        payload: PayloadMode,
        min_ttl: Option<Duration>,
    ) -> Result<Plan, UsageError> {
        let literal = literal_prefix(pattern)?;
        let strip = strip_prefix.unwrap_or_default();
        if !literal.starts_with(strip) && !strip.starts_with(&literal) {
            return Err(UsageError(format!(
                "--match '{pattern}' selects only keys starting with '{literal}', so none starts with \
                 --strip-prefix '{strip}'; give the prefix the keys carry, e.g. --match '{strip}*' --strip-prefix '{strip}'"
            )));
        }
        let min_ttl_ms = min_ttl.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Ok(Plan { strip_prefix: strip.as_bytes().to_vec(), payload, min_ttl_ms })
    }

    /// The batch item for one key: `{"key", "delay", "payload"?, "if_exists": "keep"}`.
    pub(crate) fn item(&self, found: &LegacyEntry) -> Result<Value, Skip> {
        let rest = found.key.strip_prefix(self.strip_prefix.as_slice()).ok_or(Skip::NoPrefix)?;
        let key = std::str::from_utf8(rest).map_err(|_| Skip::InvalidKey("a key is UTF-8 text".into()))?;
        let key = TaskKey::new(key).map_err(|e| Skip::InvalidKey(crate::cli::reason(e)))?;
        if self.min_ttl_ms.is_some_and(|min| found.remaining_ms < min) {
            return Err(Skip::ExpiresSoon);
        }
        let mut item = Map::new();
        item.insert("key".into(), json!(key.as_str()));
        item.insert("delay".into(), json!(found.remaining_ms));
        match self.payload {
            PayloadMode::Value => {
                let text = std::str::from_utf8(&found.value).map_err(|_| Skip::NotText)?;
                item.insert("payload".into(), json!(text));
            }
            PayloadMode::Json => {
                let value: Value = serde_json::from_slice(&found.value).map_err(|e| Skip::NotJson(e.to_string()))?;
                item.insert("payload".into(), value);
            }
            PayloadMode::None => {}
        }
        item.insert("if_exists".into(), json!("keep"));
        Ok(Value::Object(item))
    }
}

/// The literal start of a Redis glob (up to its first `*`, `?` or `[`), checking the
/// whole pattern's syntax: a `[` without its `]` or a trailing `\` is a usage error.
fn literal_prefix(pattern: &str) -> Result<String, UsageError> {
    let bad = |why: &str| {
        UsageError(format!(
            "--match '{pattern}' is not a valid pattern: {why}. Redis globs use * ? [abc] and \\ to escape, \
             e.g. --match 'flow:reminder:*'"
        ))
    };
    let mut literal = String::new();
    let mut literal_done = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = chars.next().ok_or_else(|| bad("it ends with a lone \\"))?;
                if !literal_done {
                    literal.push(escaped);
                }
            }
            '*' | '?' => literal_done = true,
            '[' => {
                literal_done = true;
                let mut closed = false;
                let mut first = true;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        ']' if !first => {
                            closed = true;
                            break;
                        }
                        _ => {}
                    }
                    first = false;
                }
                if !closed {
                    return Err(bad("a [ has no closing ]"));
                }
            }
            c if !literal_done => literal.push(c),
            _ => {}
        }
    }
    Ok(literal)
}

/// What a run did, or with `--dry-run` would do. `--json` prints it as is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) dry_run: bool,
    /// Keys `SCAN` returned.
    pub(crate) scanned: u64,
    /// Tasks created (dry run: that would be sent).
    pub(crate) imported: u64,
    /// Tasks that existed already and were left as they were (`kept`).
    pub(crate) already_present: u64,
    pub(crate) skipped_no_ttl: u64,
    pub(crate) skipped_not_string: u64,
    pub(crate) expired_while_reading: u64,
    pub(crate) skipped_no_prefix: u64,
    pub(crate) skipped_invalid_key: u64,
    pub(crate) skipped_not_text: u64,
    pub(crate) skipped_not_json: u64,
    /// `--delete-source`: expiring within `--min-ttl`, left to the listener.
    pub(crate) left_expiring_soon: u64,
    /// Items the server refused (the message is on standard error).
    pub(crate) refused: u64,
    /// Keys deleted from Redis (dry run: that would be, if unchanged then).
    pub(crate) deleted: u64,
    /// Not deleted: the key's value or expiry changed after it was read.
    pub(crate) kept_changed: u64,
    /// Not deleted: the key expired or was deleted before the delete step.
    pub(crate) gone_before_delete: u64,
}

impl Counts {
    fn skip(&mut self, skip: &Skip) {
        match skip {
            Skip::NoPrefix => self.skipped_no_prefix += 1,
            Skip::InvalidKey(_) => self.skipped_invalid_key += 1,
            Skip::NotText => self.skipped_not_text += 1,
            Skip::NotJson(_) => self.skipped_not_json += 1,
            Skip::ExpiresSoon => self.left_expiring_soon += 1,
        }
    }

    /// One line for the progress display.
    fn progress_line(&self) -> String {
        let verb = if self.dry_run { "to import" } else { "imported" };
        let mut line = format!(
            "scanned {} keys: {} {verb}, {} already present, {} skipped",
            self.scanned,
            self.imported,
            self.already_present,
            self.scanned - self.imported - self.already_present - self.refused
        );
        if self.deleted > 0 {
            line.push_str(&format!(", {} deleted", self.deleted));
        }
        line
    }

    /// The summary printed at the end: every count that applies, with what it means.
    fn summary(&self, what: &str, delete_source: bool, elapsed: Duration) -> String {
        let would = if self.dry_run { "would be " } else { "" };
        let mut rows: Vec<(u64, String)> = vec![
            (self.scanned, "keys scanned".into()),
            (self.imported, format!("{would}imported as new tasks")),
            (self.already_present, "already present in punctual (left untouched)".into()),
            (self.skipped_no_ttl, "skipped: no TTL".into()),
            (self.expired_while_reading, "expired while being read (left to the listener)".into()),
        ];
        let optional: [(u64, &str); 7] = [
            (self.skipped_not_string, "skipped: not a string key"),
            (self.skipped_no_prefix, "skipped: does not start with --strip-prefix"),
            (self.skipped_invalid_key, "skipped: not a valid task key"),
            (self.skipped_not_text, "skipped: value is not UTF-8 text (try --payload none)"),
            (self.skipped_not_json, "skipped: value is not JSON (--payload json)"),
            (self.left_expiring_soon, "left to the listener: expires within --min-ttl"),
            (self.refused, "refused by the server"),
        ];
        rows.extend(optional.iter().filter(|(n, _)| *n > 0).map(|(n, text)| (*n, (*text).to_owned())));
        if delete_source {
            rows.push((self.deleted, format!("{would}deleted from Redis")));
            if !self.dry_run {
                rows.push((self.kept_changed, "kept in Redis: changed after it was read".into()));
                rows.push((self.gone_before_delete, "gone from Redis before the delete".into()));
            }
        }
        let width = rows.iter().map(|(n, _)| n.to_string().len()).max().unwrap_or(1);
        let mut text = if self.dry_run {
            format!("Dry run of {what}: nothing was written.\n")
        } else {
            let seconds = elapsed.as_secs_f64();
            let rate = if seconds > 0.0 { (self.scanned as f64 / seconds).round() } else { 0.0 };
            format!("Imported {what} in {seconds:.1}s ({rate} keys/s).\n")
        };
        for (n, label) in rows {
            text.push_str(&format!("  {n:>width$}  {label}\n"));
        }
        if self.dry_run && delete_source {
            text.push_str("Keys that change before the real run are kept in Redis, not deleted.\n");
        }
        text.trim_end().to_owned()
    }
}

/// Keys named on standard error with why they were skipped, refused or kept.
#[derive(Debug, Default)]
struct Notes {
    shown: usize,
    left_out: usize,
}

impl Notes {
    fn add(&mut self, key: &[u8], why: &str) {
        if self.shown >= MAX_NOTES {
            self.left_out += 1;
            return;
        }
        self.shown += 1;
        eprintln!("{}note: '{}': {why}", clear_line(), String::from_utf8_lossy(key).escape_debug());
    }

    fn finish(&self) {
        if self.left_out > 0 {
            eprintln!("note: {} more keys like these are counted below but not named", self.left_out);
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

    fn show(&mut self, counts: &Counts) {
        if self.terminal {
            eprint!("\r\x1b[K{}", counts.progress_line());
            let _ = std::io::stderr().flush();
        } else if self.since_last.elapsed() >= PROGRESS_EVERY {
            eprintln!("{}", counts.progress_line());
            self.since_last = Stopwatch::start();
        }
    }

    fn finish(&self, counts: &Counts) {
        if self.terminal {
            eprintln!("\r\x1b[K{}", counts.progress_line());
        }
    }
}

/// Connects to the legacy Redis: a bad `--redis` is a usage error, an unreachable Redis
/// an error that says what to check.
async fn open(url: &str) -> Result<LegacyKeyspace> {
    LegacyKeyspace::connect(url).await.map_err(|e| match e {
        punctual_core::Error::Invalid { reason, .. } => UsageError(format!(
            "--redis '{}' is not a Redis URL ({reason}); write e.g. redis://127.0.0.1:6379",
            redacted(url)
        ))
        .into(),
        punctual_core::Error::Unavailable(why) => {
            anyhow!("{why}. Is it running, and is --redis its address (with the password if it needs one)?")
        }
        other => other.into(),
    })
}

/// Runs `punctual import keyspace` and returns the summary to print.
pub(crate) async fn run(args: KeyspaceArgs) -> Result<String> {
    let clock = Stopwatch::start();
    let min_ttl = args.delete_source.then_some(args.min_ttl);
    let plan = Plan::new(&args.pattern, args.strip_prefix.as_deref(), args.payload, min_ttl)?;
    let keyspace = open(&args.redis).await?;
    if args.delete_source && !keyspace.reads_expire_times() {
        bail!(
            "--delete-source needs Redis 7 or newer (it compares each key's PEXPIRETIME before deleting it), and \
             {} runs Redis {}. Upgrade Redis, or import without --delete-source and turn the expiry \
             listener off first, or every imported key fires twice",
            redacted(&args.redis),
            keyspace.major_version()
        );
    }
    let client = if args.dry_run {
        None
    } else {
        let client = connect(&args.client)?;
        client.request(crate::client::Request::new(crate::client::Method::GET, &["healthz"])).await?;
        Some(client)
    };
    let deleter = match (&client, args.delete_source) {
        (Some(_), true) => Some(keyspace.deleter().await.context("cannot load the delete script into Redis")?),
        _ => None,
    };
    let mut run = Run {
        plan,
        queue: args.queue.clone(),
        client,
        delete_source: args.delete_source,
        deleter,
        counts: Counts { dry_run: args.dry_run, ..Counts::default() },
        notes: Notes::default(),
    };
    let mut progress = Progress::new();
    let mut scan = keyspace.scan(&args.pattern);
    loop {
        let step = match scan.next_page().await.context("reading the keys failed") {
            Ok(Some(reads)) => run.page(reads).await,
            Ok(None) => break,
            Err(e) => Err(e),
        };
        if let Err(e) = step {
            progress.finish(&run.counts);
            return Err(e.context(format!(
                "the import stopped after {} new tasks (nothing unconfirmed was deleted); \
                 run it again once this is fixed: a re-run keeps what was imported",
                run.counts.imported
            )));
        }
        progress.show(&run.counts);
    }
    progress.finish(&run.counts);
    run.notes.finish();
    let what = format!("keys matching '{}' into queue {}", args.pattern, args.queue);
    let summary = if args.client.json {
        serde_json::to_string_pretty(&run.counts).context("cannot write the counts as JSON")?
    } else {
        run.counts.summary(&what, args.delete_source, clock.elapsed())
    };
    if run.counts.refused > 0 {
        println!("{summary}");
        bail!("the server refused {} of the keys (see the notes above); the others were imported", run.counts.refused);
    }
    Ok(summary)
}

/// The state of one run, page after page.
#[derive(Debug)]
struct Run {
    plan: Plan,
    queue: String,
    /// `None` for a dry run.
    client: Option<Client>,
    delete_source: bool,
    /// `Some` with `--delete-source`, except in a dry run.
    deleter: Option<Deleter>,
    counts: Counts,
    notes: Notes,
}

impl Run {
    /// Reads, stores and (with `--delete-source`) deletes one page of keys.
    async fn page(&mut self, reads: Vec<Read>) -> Result<()> {
        self.counts.scanned += reads.len() as u64;
        let mut batch: Vec<(LegacyEntry, Value)> = Vec::with_capacity(reads.len());
        for read in reads {
            match read {
                Read::NoTtl => self.counts.skipped_no_ttl += 1,
                Read::Gone => self.counts.expired_while_reading += 1,
                Read::NotString => self.counts.skipped_not_string += 1,
                Read::Found(found) => match self.plan.item(&found) {
                    Ok(item) => batch.push((found, item)),
                    Err(skip) => {
                        self.counts.skip(&skip);
                        match &skip {
                            Skip::NoPrefix => self.notes.add(&found.key, "does not start with --strip-prefix: skipped"),
                            Skip::InvalidKey(why) => {
                                self.notes.add(&found.key, &format!("not a task key ({why}): skipped"))
                            }
                            Skip::NotText => self.notes.add(&found.key, "its value is not UTF-8 text: skipped"),
                            Skip::NotJson(why) => {
                                self.notes.add(&found.key, &format!("its value is not JSON ({why}): skipped"))
                            }
                            // Expected near the end of a key's life; only counted.
                            Skip::ExpiresSoon => {}
                        }
                    }
                },
            }
        }
        let Some(client) = &self.client else {
            self.counts.imported += batch.len() as u64;
            if self.delete_source {
                self.counts.deleted += batch.len() as u64;
            }
            return Ok(());
        };
        for chunk in batch.chunks(MAX_BATCH) {
            let items: Vec<&Value> = chunk.iter().map(|(_, item)| item).collect();
            let answer =
                client.post_json(&["v1", "queues", &self.queue, "tasks"], &json!({ "tasks": items })).await?.json()?;
            let results = answer.value["results"].as_array().filter(|r| r.len() == chunk.len()).ok_or_else(|| {
                anyhow!("the server's answer to a batch of {} has no result for each: {}", chunk.len(), answer.text)
            })?;
            let mut stored: Vec<&LegacyEntry> = Vec::with_capacity(chunk.len());
            for ((found, _), result) in chunk.iter().zip(results) {
                match result["outcome"].as_str() {
                    Some("created") => {
                        self.counts.imported += 1;
                        stored.push(found);
                    }
                    Some("kept" | "replaced") => {
                        self.counts.already_present += 1;
                        stored.push(found);
                    }
                    _ => {
                        self.counts.refused += 1;
                        let message = result["error"]["message"].as_str().unwrap_or("no reason given");
                        self.notes.add(&found.key, &format!("refused by the server: {message}"));
                    }
                }
            }
            if let Some(deleter) = &self.deleter {
                let outcomes = deleter
                    .delete_if_unchanged(&stored)
                    .await
                    .context("deleting the imported keys failed (their tasks are stored)")?;
                for (found, outcome) in stored.iter().zip(outcomes) {
                    match outcome {
                        Deleted::Yes => self.counts.deleted += 1,
                        Deleted::Changed => {
                            self.counts.kept_changed += 1;
                            self.notes.add(
                                &found.key,
                                "changed after it was read: kept in Redis, and its task holds the value and time \
                                 read first (a writer still writes this key to Redis?)",
                            );
                        }
                        Deleted::Gone => {
                            self.counts.gone_before_delete += 1;
                            self.notes
                                .add(&found.key, "expired in Redis before the delete: the listener may fire it too");
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn found(key: &str, value: &str, remaining_ms: i64) -> LegacyEntry {
        LegacyEntry { key: key.into(), value: value.into(), remaining_ms, expire_at_ms: None }
    }

    #[test]
    fn items_strip_the_prefix_keep_existing_tasks_and_carry_the_payload_asked_for() {
        let plan = |payload| Plan::new("legacy:*", Some("legacy:"), payload, None).unwrap();
        let read = found("legacy:task-7@pi-9@zhang.wei", r#"{"n": 1}"#, 86_400_000);
        assert_eq!(
            plan(PayloadMode::Value).item(&read),
            Ok(
                json!({"key": "task-7@pi-9@zhang.wei", "delay": 86_400_000, "payload": "{\"n\": 1}", "if_exists": "keep"})
            )
        );
        assert_eq!(plan(PayloadMode::Json).item(&read).unwrap()["payload"], json!({"n": 1}));
        assert!(plan(PayloadMode::None).item(&read).unwrap().get("payload").is_none());
        assert!(matches!(plan(PayloadMode::Json).item(&found("legacy:a", "1 2", 5)), Err(Skip::NotJson(_))));
        let binary = LegacyEntry { value: vec![0xff, 0xfe], ..found("legacy:a", "", 5) };
        assert_eq!(plan(PayloadMode::Value).item(&binary), Err(Skip::NotText));
        assert!(plan(PayloadMode::None).item(&binary).is_ok(), "the value is not used");
    }

    #[test]
    fn keys_that_cannot_be_task_keys_are_skipped_with_the_reason() {
        let plan = Plan::new("legacy:*", Some("legacy:"), PayloadMode::None, None).unwrap();
        assert_eq!(plan.item(&found("other:a", "", 5)), Err(Skip::NoPrefix));
        assert!(matches!(plan.item(&found("legacy:", "", 5)), Err(Skip::InvalidKey(_))), "empty after the prefix");
        assert!(matches!(plan.item(&found("legacy:a\u{1}b", "", 5)), Err(Skip::InvalidKey(_))));
        assert!(matches!(plan.item(&found(&format!("legacy:{}", "k".repeat(513)), "", 5)), Err(Skip::InvalidKey(_))));
        let not_utf8 = LegacyEntry { key: b"legacy:\xff".to_vec(), ..found("", "", 5) };
        assert!(matches!(plan.item(&not_utf8), Err(Skip::InvalidKey(_))));
    }

    #[test]
    fn with_a_minimum_ttl_keys_about_to_expire_are_left_to_the_listener() {
        let plan = Plan::new("*", None, PayloadMode::None, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(plan.item(&found("a", "", 4_999)), Err(Skip::ExpiresSoon));
        assert!(plan.item(&found("a", "", 5_000)).is_ok());
    }

    #[test]
    fn patterns_are_checked_and_must_be_able_to_match_the_prefix() {
        assert_eq!(literal_prefix("flow:reminder:*").unwrap(), "flow:reminder:");
        assert_eq!(literal_prefix("a\\*b?c").unwrap(), "a*b");
        assert_eq!(literal_prefix("x[]a]y*").unwrap(), "x");
        assert!(literal_prefix("x[ab").unwrap_err().0.contains("no closing ]"));
        assert!(literal_prefix("x\\").unwrap_err().0.contains("lone"));
        assert!(Plan::new("flow:*", Some("flow:reminder:"), PayloadMode::Value, None).is_ok(), "narrower prefix");
        assert!(Plan::new("flow:reminder:*", Some("flow:"), PayloadMode::Value, None).is_ok(), "wider prefix");
        let e = Plan::new("order:*", Some("flow:"), PayloadMode::Value, None).unwrap_err();
        assert!(e.0.contains("none starts with --strip-prefix 'flow:'"), "{e}");
    }
}
