//! Task history (`punctual_core::history`) in Redis: each script that changes a task
//! writes the change's events in the same step (`lua/common.lua`, `tell` and
//! `save_history`) to its shard's `history` Hash, one field per task key, and indexes
//! the key in `history:latest` (see `keys`). This module gives the scripts what only
//! the caller knows of an event, reads a key's history (or a queue's, page by page,
//! and adds another store's: `lua/import_history.lua`), and sweeps a queue's quiet
//! histories.
//!
//! - **Caller's fields**: who did it, an ack's fence, due time, outcome, error and
//!   delivery report, a cancel's tag go to a script already encoded as JSON members
//!   in core's stored names ([`by_members`], [`acked_members`], [`tagged_members`]),
//!   which it appends to the event it makes from what only it knows (the time, the
//!   state, the try, a lease's fence and expiry, a schedule's due time): no text is
//!   encoded in Lua, and no field of a `None` (no actor, no report) is written.
//! - **Stored form**: a key's field is its count in three digits (`"003"`), then
//!   `"\n<event>"` for each of its latest
//!   [`HISTORY_LIMIT`](punctual_core::history::HISTORY_LIMIT) events, oldest first,
//!   each as [`history::encode`](punctual_core::history::encode) writes one (a
//!   script's JSON has no raw `\n`: it escapes control characters, as serde does).
//! - **One Hash per shard, not a key per task**: the scripts that find their tasks in
//!   an index (a lease, a reap, a purge, a cancel by tag, a sweep of dead tasks) could
//!   not name a key per task in `KEYS`, and a Cluster needs every key named; the Hash
//!   also lets a script write all its events with one `HMGET` and one `HSET`, however
//!   many tasks it changes.
//! - **Index**: `history:latest` scores a key by its history's first event, at or
//!   before its latest: only a script that starts a history writes it (no `ZADD` for
//!   every event on the hot paths), and a sweep reads the latest event of each key it
//!   finds before its cutoff, deleting the quiet ones and scoring the others by their
//!   latest. So the index holds a key exactly while the Hash does.
//! - **Sweeps**: [`Shared::sweep_history`] deletes a shard's quiet histories with
//!   bounded scripts (`lua/sweep_history.lua`), the index and the Hash together, shard
//!   after shard until the request's limit.

use std::collections::BTreeMap;

use punctual_core::history::{self, Actor, EventKind, HistoryEvent};
use punctual_core::store::{
    CompleteRequest, HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, KeyHistory, LeaseRequest,
    corrupt,
};
use punctual_core::{Error, QueueName, Result, Tag, TaskKey, Timestamp};

use crate::keys::ShardKeys;
use crate::{SCRIPT_BATCH, Shared};

// The members of an event that the caller knows, as a script appends them to the
// event it makes (`,"by":"…",…`, or `""`): `history::encode_members` of an event
// holding only them, so their stored names are core's.

/// The members that say who did it.
pub(crate) fn by_members(by: Option<&Actor>) -> String {
    history::encode_members(&only_by(by))
}

/// The members of a lease's events that its request knows: who leases, on which node.
pub(crate) fn leased_members(req: &LeaseRequest) -> String {
    let mut leased = only_by(req.by.as_ref());
    leased.node = req.node.as_deref().map(str::to_owned);
    history::encode_members(&leased)
}

/// The members of a cancel by `tag`, by `by`.
pub(crate) fn tagged_members(by: Option<&Actor>, tag: &Tag) -> String {
    let mut cancelled = only_by(by);
    cancelled.tag = Some(tag.as_str().to_owned());
    history::encode_members(&cancelled)
}

/// The members of an ack: the lease's fence, when the task is due again, the
/// completion's outcome and error, who completes, what the delivery saw.
pub(crate) fn acked_members(req: &CompleteRequest) -> String {
    let mut acked = only_by(req.by.as_ref()).report(req.report.as_ref());
    acked.lease = Some(req.token.fence);
    acked.due_at = req.completion.next_due();
    acked.outcome = Some(req.completion.outcome());
    acked.error = req.completion.error().map(|error| history::clip(error).to_owned());
    history::encode_members(&acked)
}

/// An event with no member but who did it (its time, kind and state are the script's).
fn only_by(by: Option<&Actor>) -> HistoryEvent {
    HistoryEvent::new(Timestamp::EPOCH, EventKind::Created, by, None)
}

/// A cursor of [`Shared::histories`]: its shard and scan cursor.
fn parse_histories_cursor(cursor: &str) -> Result<(u32, u64)> {
    let parsed = cursor.split_once('.').and_then(|(shard, scan)| Some((shard.parse().ok()?, scan.parse().ok()?)));
    parsed.ok_or_else(|| Error::invalid("cursor", "this cursor was not issued by this store; start again without one"))
}

/// The events of a key's stored history (see the module docs), oldest first.
pub(crate) fn events(stored: &str) -> Result<Vec<HistoryEvent>> {
    let mut lines = stored.split('\n');
    let count = lines.next().unwrap_or_default();
    if count.parse::<usize>().is_err() {
        return Err(corrupt(format!("a history opening with '{}', not its count", count.escape_default())));
    }
    lines.map(history::decode).collect()
}

impl Shared {
    pub(crate) async fn history(&self, req: &HistoryRequest) -> Result<Vec<HistoryEvent>> {
        let shard = self.shard_of(&req.queue, &req.key, false).await?;
        let keys = ShardKeys::new(&self.config.prefix, &req.queue, shard);
        let stored: Option<String> =
            self.conn.query(redis::cmd("HGET").arg(&keys.history).arg(req.key.as_str())).await?;
        let Some(stored) = stored else { return Ok(Vec::new()) };
        let mut events = events(&stored)?;
        events.retain(|event| event.at >= req.since);
        Ok(events)
    }

    /// Shard by shard, one `HSCAN` (`COUNT` the limit) of a shard's history Hash per
    /// page, so a page holds what that scan gives, which may be more than the limit (a
    /// small Hash is given whole) or nothing while the shard holds more; pages go on
    /// until one holds a key or the last shard is done. The cursor is
    /// `<shard>.<scan cursor>`.
    pub(crate) async fn histories(&self, req: &HistoriesRequest) -> Result<HistoriesPage> {
        let (mut shard, mut scan) = match req.cursor.as_deref() {
            None => (0, 0),
            Some(cursor) => parse_histories_cursor(cursor)?,
        };
        let shards = self.shard_count(&req.queue, false).await?;
        let mut page = Vec::new();
        while shard < shards {
            let keys = ShardKeys::new(&self.config.prefix, &req.queue, shard);
            let scanned: (u64, Vec<(String, String)>) = self
                .conn
                .query(redis::cmd("HSCAN").arg(&keys.history).arg(scan).arg("COUNT").arg(req.limit.max(1)))
                .await?;
            let (next, fields) = scanned;
            for (key, stored) in fields {
                let mut events = events(&stored)?;
                events.retain(|event| event.at >= req.since);
                if !events.is_empty() {
                    let key = TaskKey::new(key).map_err(|e| corrupt(format!("a history's key: {e}")))?;
                    page.push(KeyHistory::new(key, events));
                }
            }
            (shard, scan) = if next == 0 { (shard + 1, 0) } else { (shard, next) };
            if !page.is_empty() {
                break;
            }
        }
        let next_cursor = (shard < shards).then(|| format!("{shard}.{scan}"));
        Ok(HistoriesPage::new(page, next_cursor))
    }

    /// Each key's events to its shard, in scripts of at most [`SCRIPT_BATCH`] keys.
    pub(crate) async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        let mut by_shard: BTreeMap<u32, Vec<KeyHistory>> = BTreeMap::new();
        for history in histories.into_iter().filter(|history| !history.events.is_empty()) {
            let shard = self.shard_of(queue, &history.key, true).await?;
            by_shard.entry(shard).or_default().push(history);
        }
        let mut added = 0;
        for (shard, histories) in by_shard {
            for batch in histories.chunks(SCRIPT_BATCH) {
                added += self.on(queue, shard).import_history(batch).await?;
            }
        }
        Ok(added)
    }

    /// Shard by shard, in scripts that each look at up to [`SCRIPT_BATCH`] keys, until
    /// `req.limit` histories are deleted or no shard holds more quiet ones (a script
    /// may delete none while it moves keys that were not quiet out of the cutoff's
    /// reach: the walk goes on, so a call that deletes none means none is left).
    pub(crate) async fn sweep_history(&self, req: &HistorySweepRequest) -> Result<u64> {
        let mut left = u64::from(req.limit.max(1));
        let mut deleted = 0;
        for shard in 0..self.shard_count(&req.queue, false).await? {
            while left > 0 {
                let batch = left.min(SCRIPT_BATCH as u64);
                let swept = self.on(&req.queue, shard).sweep_history(req.before, batch, SCRIPT_BATCH as u64).await?;
                deleted += swept.deleted;
                left -= swept.deleted;
                if !swept.more {
                    break;
                }
            }
            if left == 0 {
                break;
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_core::history::{AckOutcome, DeliveryReport, EventKind, TEXT_LIMIT};
    use punctual_core::store::{Completion, LeaseToken};
    use punctual_core::{QueueName, TaskKey, TaskState};

    fn token() -> LeaseToken {
        LeaseToken::new(QueueName::new("q").unwrap(), TaskKey::new("k").unwrap(), 1, 1, 3)
    }

    #[test]
    fn no_field_of_a_none_is_written() {
        assert_eq!(by_members(None), "");
        assert_eq!(by_members(Some(&Actor::new("ops"))), r#","by":"ops""#);
        let tag = Tag::new("t").unwrap();
        assert_eq!(tagged_members(None, &tag), r#","g":"t""#);
        let done = CompleteRequest::new(token(), Completion::Done, Timestamp::EPOCH);
        assert_eq!(acked_members(&done), r#","l":3,"o":"done""#);
    }

    /// What a script makes of the caller's fields reads back as the event they tell,
    /// text escaped and clipped.
    #[test]
    fn an_event_made_with_the_callers_fields_reads_back() {
        let error = format!("\"quoted\"\nand long: {}", "x".repeat(TEXT_LIMIT));
        let retry = Completion::Retry { at: Timestamp::from_millis(9), error };
        let report = DeliveryReport::new(Some(41), Some(503), Some("busy".into()));
        let req = CompleteRequest::new(token(), retry, Timestamp::EPOCH)
            .by(Some(Actor::new("worker \"1\"")))
            .report(Some(report.clone()));
        let members = acked_members(&req);
        assert!(!members.contains('\n'), "one line: {members}");
        // As lua/lease.lua and lua/complete.lua make them.
        let leased = r#"{"t":5,"e":"leased","s":"leased","n":1,"l":3,"u":35}"#;
        let acked = format!(r#"{{"t":7,"e":"acked","s":"scheduled","n":1{members}}}"#);
        let events = events(&format!("2\n{leased}\n{acked}")).unwrap();
        let [leased, acked] = &events[..] else { panic!("{events:?}") };
        assert_eq!((leased.kind, leased.state), (EventKind::Leased, Some(TaskState::Leased)));
        assert_eq!(
            (acked.kind, acked.outcome, acked.by.as_deref()),
            (EventKind::Acked, Some(AckOutcome::Retry), Some("worker \"1\""))
        );
        let error = acked.error.as_deref().unwrap();
        assert!(error.starts_with("\"quoted\"\nand long") && error.len() == TEXT_LIMIT, "{error:?}");
        assert_eq!((acked.lease, acked.attempt, acked.due_at), (Some(3), Some(1), Some(Timestamp::from_millis(9))));
        assert_eq!(acked.report.as_ref(), Some(&report));
    }

    #[test]
    fn a_history_without_its_count_is_corrupt() {
        assert!(events(r#"{"t":5,"e":"leased"}"#).is_err());
        assert_eq!(events("0").unwrap(), []);
    }
}
