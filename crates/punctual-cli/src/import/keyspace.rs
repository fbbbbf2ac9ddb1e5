//! `punctual import keyspace`: moves what the legacy approach left in Redis — string
//! keys whose expiry is the reminder's due time, watched by a keyspace-notification
//! listener — into punctual, each key one task due when the key would have expired
//! (`docs/migrate-from-keyspace-notifications.md` is the cut-over plan around it).
//!
//! One page at a time: read a page of keys ([`punctual_redis::keyspace`], which keeps
//! the Redis-side invariants: it never blocks Redis, and deletes a key only if it is
//! unchanged since it was read, atomically), turn each read into a batch item
//! ([`Plan::item`]), store the batch with one `POST /v1/queues/{queue}/tasks`, and with
//! `--delete-source` delete the keys the server confirmed. The promises of every
//! import hold (see [`super`]): a key is deleted only once its task is stored, a re-run
//! keeps what exists (an earlier run's task, or one a writer already switched to
//! punctual scheduled), a dry run reads Redis and never calls the server or a script.
//! Deleting needs `PEXPIRETIME` (Redis 7), so on an older Redis `--delete-source` is
//! refused.
//!
//! A task's `delay` is the key's remaining time as Redis computed it when the page was
//! read, so neither this machine's clock nor Redis' has to agree with the server's; the
//! task is late by the time from the read to the server storing the batch, never early.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use punctual_core::{Stopwatch, TaskKey};
use punctual_redis::keyspace::{Deleted, Deleter, LegacyEntry, LegacyKeyspace, Read, Scan};
use punctual_redis::redacted;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{MAX_BATCH, NotPayload, Notes, Stored, Tally};
use crate::UsageError;
use crate::cli::{KeyspaceArgs, PayloadMode};
use crate::client::Client;

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
        let payload = super::payload(self.payload, &found.value).map_err(|e| match e {
            NotPayload::NotText => Skip::NotText,
            NotPayload::NotJson(why) => Skip::NotJson(why),
        })?;
        if let Some(payload) = payload {
            item.insert("payload".into(), payload);
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
        let header = super::header(self.dry_run, what, self.scanned, "keys", elapsed);
        let mut text = super::table(&header, &rows);
        if self.dry_run && delete_source {
            text.push_str("Keys that change before the real run are kept in Redis, not deleted.\n");
        }
        text.trim_end().to_owned()
    }
}

/// Connects to the legacy Redis (see [`super::redis_error`]).
async fn open(url: &str) -> Result<LegacyKeyspace> {
    LegacyKeyspace::connect(url).await.map_err(|e| super::redis_error(url, e))
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
    let client = super::server(&args.client, args.dry_run).await?;
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
        notes: Notes::new("keys"),
    };
    super::import_pages(&mut keyspace.scan(&args.pattern), &mut run).await?;
    let what = format!("keys matching '{}' into queue {}", args.pattern, args.queue);
    let text = run.counts.summary(&what, args.delete_source, clock.elapsed());
    super::finish(args.client.json, &run.counts, text, run.counts.refused, "keys")
}

impl super::Tally for Counts {
    fn imported(&self) -> u64 {
        self.imported
    }

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

impl super::Source for Scan {
    type Page = Vec<Read>;
    const WHAT: &'static str = "the keys";

    async fn next_page(&mut self) -> punctual_core::Result<Option<Vec<Read>>> {
        Scan::next_page(self).await
    }
}

impl super::Import for Run {
    type Page = Vec<Read>;
    const REMOVED: &'static str = "deleted";

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
                            Skip::NoPrefix => {
                                self.notes.add(&name(&found.key), "does not start with --strip-prefix: skipped")
                            }
                            Skip::InvalidKey(why) => {
                                self.notes.add(&name(&found.key), &format!("not a task key ({why}): skipped"))
                            }
                            Skip::NotText => self.notes.add(&name(&found.key), "its value is not UTF-8 text: skipped"),
                            Skip::NotJson(why) => {
                                self.notes.add(&name(&found.key), &format!("its value is not JSON ({why}): skipped"))
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
            let answers = super::store(client, &self.queue, &items).await?;
            let mut stored: Vec<&LegacyEntry> = Vec::with_capacity(chunk.len());
            for ((found, _), answer) in chunk.iter().zip(answers) {
                match answer {
                    Stored::Created => {
                        self.counts.imported += 1;
                        stored.push(found);
                    }
                    Stored::Kept => {
                        self.counts.already_present += 1;
                        stored.push(found);
                    }
                    Stored::Refused(message) => {
                        self.counts.refused += 1;
                        self.notes.add(&name(&found.key), &format!("refused by the server: {message}"));
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
                                &name(&found.key),
                                "changed after it was read: kept in Redis, and its task holds the value and time \
                                 read first (a writer still writes this key to Redis?)",
                            );
                        }
                        Deleted::Gone => {
                            self.counts.gone_before_delete += 1;
                            self.notes.add(
                                &name(&found.key),
                                "expired in Redis before the delete: the listener may fire it too",
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn counts(&self) -> &dyn Tally {
        &self.counts
    }

    fn notes(&self) -> &Notes {
        &self.notes
    }
}

/// A key as the notes name it.
fn name(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
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
