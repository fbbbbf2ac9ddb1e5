//! `punctual import redisson`: moves the elements a Redisson `RDelayedQueue` still
//! delays into punctual, each one task due when Redisson would have delivered it
//! (`docs/migrate-from-redisson.md` is the cut-over plan around it).
//!
//! Page after page ([`punctual_redis::redisson`] keeps the Redis-side invariants: it
//! never blocks Redis, and removes an element only while Redisson has not moved it):
//! read a page of elements, make each a batch item ([`Plan::item`]: its value read by
//! the codec, [`super::redisson_codec`]), store the batch with one
//! `POST /v1/queues/{queue}/tasks`, and remove the elements the server confirmed. The
//! promises of every import hold (see [`super`]): an element is removed only once its
//! task is stored, a re-run keeps what exists, a dry run reads Redis and writes nothing.
//!
//! - **A task's key is the same on every run**: `redisson-` and the element's random id
//!   in hex (Redisson gives each offer its own), or the value of `--key-field`.
//! - **Due at the element's score**, sent as epoch milliseconds: the offering client's
//!   clock set it, so no other clock is consulted; a time past fires at once.
//! - **Redisson wins a race.** An element Redisson moved to its destination between
//!   the read and the removal is delivered by Redisson: the import's task for it is
//!   cancelled, and it is counted as taken by Redisson. The import's task is the one
//!   this run created, or under a `redisson-<id>` key one an earlier run created (only
//!   an import makes such keys); with `--key-field` a task that existed may be the
//!   application's, and is left.

use anyhow::{Context, Result};
use punctual_core::{Stopwatch, TaskKey};
use punctual_redis::redisson::{DelayedQueue, Pending, Removed, Sizes, Walk, unpack};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::redisson_codec::Reading;
use super::{MAX_BATCH, Notes, Stored, Tally};
use crate::UsageError;
use crate::cli::RedissonArgs;
use crate::client::{Client, ClientError};

/// Delayed queues named when the one asked for is not there.
const MAX_NAMES: usize = 20;

/// Why an element that was read is not sent (it stays in Redis).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Skip {
    /// The member is not Redisson's packing of an id and a value.
    NotRedisson(String),
    /// The value does not decode with the codec.
    BadValue(String),
    /// `--key-field` is missing or not a valid task key.
    InvalidKey(String),
}

/// What to make of each element: the checked flags of one run.
#[derive(Debug, Clone)]
struct Plan {
    reading: Reading,
    key_field: Option<String>,
}

/// One element ready to send: the member to remove, its name in notes, the batch item.
#[derive(Debug)]
struct Ready {
    member: Vec<u8>,
    key: String,
    item: Value,
}

impl Plan {
    /// The element's key and batch item `{"key", "due_at", "payload"?, "if_exists": "keep"}`.
    fn item(&self, member: &[u8], due_at_ms: i64) -> Result<(String, Value), Skip> {
        let packed = unpack(member).map_err(Skip::NotRedisson)?;
        let read = self.reading.read(packed.value).map_err(Skip::BadValue)?;
        let key = match &self.key_field {
            None => id_key(packed.id),
            Some(field) => match read.json.as_ref().and_then(|json| json.get(field)) {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                Some(other) => {
                    return Err(Skip::InvalidKey(format!("its field {field} is {other}, not a string or an integer")));
                }
                None => return Err(Skip::InvalidKey(format!("its JSON has no top-level field {field}"))),
            },
        };
        let key = TaskKey::new(&key).map_err(|e| Skip::InvalidKey(crate::cli::reason(e)))?;
        let mut item = Map::new();
        item.insert("key".into(), json!(key.as_str()));
        item.insert("due_at".into(), json!(due_at_ms));
        if let Some(payload) = read.payload {
            item.insert("payload".into(), payload);
        }
        item.insert("if_exists".into(), json!("keep"));
        Ok((key.as_str().to_owned(), Value::Object(item)))
    }
}

/// `redisson-` and the id in lower-case hex: stable, and unique as Redisson's ids are.
fn id_key(id: &[u8]) -> String {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!("redisson-{hex}")
}

/// What a run did, or with `--dry-run` would do. `--json` prints it as is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct Counts {
    dry_run: bool,
    /// Elements the timeout set held when the import began.
    delayed_before: u64,
    /// Elements read (each once).
    read: u64,
    /// Tasks created (dry run: that would be sent).
    imported: u64,
    /// Tasks that existed already and were left as they were (`kept`).
    already_present: u64,
    /// Elements removed from Redis (dry run: that would be, if still delayed then).
    removed: u64,
    /// Moved by Redisson between the read and the removal: Redisson delivers them.
    taken_by_redisson: u64,
    skipped_not_redisson: u64,
    skipped_bad_value: u64,
    skipped_invalid_key: u64,
    /// In the list but not the timeout set: Redisson never delivers them; left.
    left_not_delayed: u64,
    /// Elements the server refused (the message is on standard error).
    refused: u64,
    /// Values Redisson had moved to the destination queue before the import: no longer
    /// delayed, left to its consumers.
    in_destination: u64,
    /// Elements the timeout set held when the import ended.
    delayed_after: u64,
}

impl Counts {
    fn skip(&mut self, skip: &Skip) {
        match skip {
            Skip::NotRedisson(_) => self.skipped_not_redisson += 1,
            Skip::BadValue(_) => self.skipped_bad_value += 1,
            Skip::InvalidKey(_) => self.skipped_invalid_key += 1,
        }
    }

    /// The summary printed at the end: every count that applies, with what it means.
    fn summary(&self, what: &str, destination: &str, elapsed: std::time::Duration) -> String {
        let would = if self.dry_run { "would be " } else { "" };
        let mut rows: Vec<(u64, String)> = vec![
            (self.delayed_before, "elements delayed when the import began".into()),
            (self.imported, format!("{would}imported as new tasks")),
            (self.already_present, "already present in punctual (left untouched)".into()),
            (self.removed, format!("{would}removed from Redis")),
        ];
        let optional: [(u64, &str); 6] = [
            (
                self.taken_by_redisson,
                "taken by Redisson before the removal (delivered by Redisson; the task cancelled)",
            ),
            (self.skipped_bad_value, "left in Redis: the value does not decode with the codec"),
            (self.skipped_invalid_key, "left in Redis: no valid task key"),
            (self.skipped_not_redisson, "left in Redis: not Redisson's packing of an element"),
            (self.left_not_delayed, "left in Redis: in the list but not the timeout set (Redisson never delivers it)"),
            (self.refused, "refused by the server (left in Redis)"),
        ];
        rows.extend(optional.iter().filter(|(n, _)| *n > 0).map(|(n, text)| (*n, (*text).to_owned())));
        rows.push((self.in_destination, format!("already moved to {destination} by Redisson (left to its consumers)")));
        if !self.dry_run {
            rows.push((self.delayed_after, "still delayed in Redis".into()));
        }
        let header = super::header(self.dry_run, what, self.read, "elements", elapsed);
        let mut text = super::table(&header, &rows);
        if self.dry_run {
            text.push_str("Elements Redisson moves before the real run are left to it, not imported.\n");
        }
        text.trim_end().to_owned()
    }
}

impl super::Tally for Counts {
    fn imported(&self) -> u64 {
        self.imported
    }

    fn progress_line(&self) -> String {
        let verb = if self.dry_run { "to import" } else { "imported" };
        format!(
            "read {} of {} elements: {} {verb}, {} already present, {} removed",
            self.read, self.delayed_before, self.imported, self.already_present, self.removed
        )
    }
}

/// Runs `punctual import redisson` and returns the summary to print.
pub(crate) async fn run(args: RedissonArgs) -> Result<String> {
    let clock = Stopwatch::start();
    let reading =
        Reading::new(args.codec, args.payload, args.keep_type_hints, args.key_field.is_some()).map_err(UsageError)?;
    let plan = Plan { reading, key_field: args.key_field.clone() };
    let queue =
        DelayedQueue::open(&args.redis, &args.delayed_queue).await.map_err(|e| super::redis_error(&args.redis, e))?;
    let before = queue.sizes().await.context("reading the delayed queue's size failed")?;
    let absent = before == Sizes::default();
    let client = super::server(&args.client, args.dry_run).await?;
    let remover = match &client {
        Some(_) => Some(queue.remover().await.context("cannot load the removal script into Redis")?),
        None => None,
    };
    let mut run = Run {
        plan,
        queue: args.queue.clone(),
        client,
        remover,
        counts: Counts {
            dry_run: args.dry_run,
            delayed_before: before.delayed,
            in_destination: before.in_destination,
            ..Counts::default()
        },
        notes: Notes::new("elements"),
    };
    let mut walk = queue.walk(!args.dry_run).await.context("cannot load the read script into Redis")?;
    super::import_pages(&mut walk, &mut run).await?;
    run.counts.delayed_after = queue.sizes().await.context("reading the delayed queue's size failed")?.delayed;
    let keys = queue.keys();
    let what = format!("Redisson delayed queue {} into queue {}", args.delayed_queue, args.queue);
    let mut text = run.counts.summary(&what, &keys.destination, clock.elapsed());
    if absent {
        let names = queue.names(MAX_NAMES).await.context("listing the delayed queues failed")?;
        text.push_str(&format!(
            "\nThis Redis holds neither {} nor {}: is --delayed-queue the name given to Redisson? {}",
            keys.timeout_set,
            keys.list,
            if names.is_empty() {
                "It holds no delayed queue.".to_owned()
            } else {
                format!("It holds: {}.", names.join(", "))
            }
        ));
    }
    super::finish(args.client.json, &run.counts, text, run.counts.refused, "elements")
}

/// The state of one run, page after page.
#[derive(Debug)]
struct Run {
    plan: Plan,
    queue: String,
    /// `None` for a dry run.
    client: Option<Client>,
    /// `None` for a dry run.
    remover: Option<punctual_redis::redisson::Remover>,
    counts: Counts,
    notes: Notes,
}

impl super::Source for Walk {
    type Page = Vec<Pending>;
    const WHAT: &'static str = "the delayed queue";

    async fn next_page(&mut self) -> punctual_core::Result<Option<Vec<Pending>>> {
        Walk::next_page(self).await
    }
}

impl super::Import for Run {
    type Page = Vec<Pending>;
    const REMOVED: &'static str = "removed from Redis";

    /// Stores one page of elements and removes those the server confirmed.
    async fn page(&mut self, page: Vec<Pending>) -> Result<()> {
        self.counts.read += page.len() as u64;
        let mut ready = Vec::with_capacity(page.len());
        for pending in page {
            let name = unpack(&pending.member).map_or_else(|_| lossy(&pending.member), |p| id_key(p.id));
            let Some(due_at_ms) = pending.due_at_ms else {
                self.counts.left_not_delayed += 1;
                self.notes.add(&name, "in the list but not the timeout set, so Redisson never delivers it: left");
                continue;
            };
            match self.plan.item(&pending.member, due_at_ms) {
                Ok((key, item)) => ready.push(Ready { member: pending.member, key, item }),
                Err(skip) => {
                    self.counts.skip(&skip);
                    let why = match &skip {
                        Skip::NotRedisson(why) => format!("not an element as Redisson packs one ({why}): left"),
                        Skip::BadValue(why) => format!("its value does not decode ({why}): left in Redis"),
                        Skip::InvalidKey(why) => format!("no task key ({why}): left in Redis"),
                    };
                    self.notes.add(&name, &why);
                }
            }
        }
        let (Some(client), Some(remover)) = (&self.client, &self.remover) else {
            self.counts.imported += ready.len() as u64;
            self.counts.removed += ready.len() as u64;
            return Ok(());
        };
        for chunk in ready.chunks(MAX_BATCH) {
            let items: Vec<&Value> = chunk.iter().map(|r| &r.item).collect();
            let answers = super::store(client, &self.queue, &items).await?;
            // Each stored element, and whether its task is the import's own (see the module doc).
            let mut stored: Vec<(&Ready, bool)> = Vec::with_capacity(chunk.len());
            for (element, answer) in chunk.iter().zip(answers) {
                match answer {
                    Stored::Created => {
                        self.counts.imported += 1;
                        stored.push((element, true));
                    }
                    Stored::Kept => {
                        self.counts.already_present += 1;
                        stored.push((element, self.plan.key_field.is_none()));
                    }
                    Stored::Refused(message) => {
                        self.counts.refused += 1;
                        self.notes.add(&element.key, &format!("refused by the server: {message}"));
                    }
                }
            }
            let members: Vec<&[u8]> = stored.iter().map(|(e, _)| e.member.as_slice()).collect();
            let outcomes = remover
                .remove_if_delayed(&members)
                .await
                .context("removing the imported elements failed (their tasks are stored)")?;
            for ((element, ours), outcome) in stored.into_iter().zip(outcomes) {
                match outcome {
                    Removed::Yes => self.counts.removed += 1,
                    Removed::Taken => {
                        self.counts.taken_by_redisson += 1;
                        let cancelled = if ours { self.cancel(client, &element.key).await? } else { "" };
                        self.notes.add(
                            &element.key,
                            &format!(
                                "Redisson moved it to its queue before the removal: Redisson delivers it{cancelled}"
                            ),
                        );
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

impl Run {
    /// Cancels the import's task for an element Redisson took; says so for the note. A
    /// task already gone is fine.
    async fn cancel(&self, client: &Client, key: &str) -> Result<&'static str> {
        match client.delete(&["v1", "queues", &self.queue, "tasks", key]).await {
            Ok(_) => Ok(", and its task was cancelled"),
            Err(ClientError::Api(e)) if e.status == 404 => Ok(""),
            Err(e) => {
                Err(anyhow::Error::new(e).context(format!("cancelling the task {key} of an element Redisson took")))
            }
        }
    }
}

/// A member that is not Redisson's packing, as the notes name it.
fn lossy(member: &[u8]) -> String {
    String::from_utf8_lossy(&member[..member.len().min(40)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{PayloadMode, RedissonCodec};
    use punctual_redis::redisson::pack;

    fn plan(codec: RedissonCodec, payload: Option<PayloadMode>, key_field: Option<&str>) -> Plan {
        Plan {
            reading: Reading::new(codec, payload, false, key_field.is_some()).unwrap(),
            key_field: key_field.map(str::to_owned),
        }
    }

    #[test]
    fn items_are_keyed_by_the_id_due_at_the_score_and_kept_if_present() {
        let member = pack(&[0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 0xff], b"task-7@pi-9");
        let (key, item) = plan(RedissonCodec::String, None, None).item(&member, 1_767_225_600_000).unwrap();
        assert_eq!(key, "redisson-deadbeef000102ff");
        assert_eq!(
            item,
            json!({"key": key, "due_at": 1_767_225_600_000_i64, "payload": "task-7@pi-9", "if_exists": "keep"})
        );
        let none = plan(RedissonCodec::String, Some(PayloadMode::None), None).item(&member, 5).unwrap().1;
        assert!(none.get("payload").is_none());
    }

    #[test]
    fn a_key_field_names_the_task_and_its_absence_is_a_skip() {
        let json_plan = plan(RedissonCodec::JsonJackson, None, Some("orderId"));
        let member = |value: &str| pack(b"12345678", value.as_bytes());
        let (key, item) =
            json_plan.item(&member(r#"{"@class":"x.Order","orderId":["java.lang.Long",1234]}"#), 5).unwrap();
        assert_eq!((key.as_str(), &item["payload"]), ("1234", &json!({"orderId": 1234})));
        assert_eq!(json_plan.item(&member(r#"{"orderId":"o-1"}"#), 5).unwrap().0, "o-1");
        for (value, why) in [
            (r#"{"id":1}"#, "no top-level field orderId"),
            (r#"{"orderId":1.5}"#, "not a string or an integer"),
            (r#"{"orderId":""}"#, ""),
        ] {
            let Err(Skip::InvalidKey(reason)) = json_plan.item(&member(value), 5) else { panic!("{value}") };
            assert!(reason.contains(why), "{value}: {reason}");
        }
        let text_plan = plan(RedissonCodec::String, Some(PayloadMode::Json), Some("orderId"));
        assert_eq!(text_plan.item(&member(r#"{"orderId":7}"#), 5).unwrap().0, "7");
    }

    #[test]
    fn members_that_are_not_redissons_or_do_not_decode_are_skipped_with_the_reason() {
        let json_plan = plan(RedissonCodec::JsonJackson, None, None);
        assert!(matches!(json_plan.item(b"plain", 5), Err(Skip::NotRedisson(_))));
        let Err(Skip::BadValue(why)) = json_plan.item(&pack(b"12345678", b"\x01kryo"), 5) else { panic!() };
        assert!(why.contains("not JSON"), "{why}");
    }
}
