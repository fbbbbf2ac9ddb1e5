//! Paging a queue's completion records by key (`Store::completions`).
//!
//! A record is a key of its own, `…:completed:<key>` in its task's shard, which Redis
//! expires at the record's end (`lua/complete.lua`); nothing lists a shard's records,
//! let alone by key. So a paging makes the index it pages, each shard's
//! `…:completions` (see `keys`), in two parts:
//!
//! 1. The walk: each shard's record keys, read with `SCAN … MATCH` on the shard's node
//!    ([`SCAN_COUNT`] a step), and those that hold added to the shard's index
//!    (`lua/completions_index.lua`), shard after shard. A call takes at most
//!    [`WALK_STEPS`] steps; one that ends mid-walk answers no records and a cursor
//!    that goes on with the walk.
//! 2. The pages: each shard's next `limit + 1` index entries after the cursor's key
//!    (`ZRANGEBYLEX`) and their records (`MGET`), merged by key; an entry whose record
//!    is gone is dropped from the index.
//!
//! So every record is found, those written before the index existed or by an earlier
//! punctual included, and the scripts that write records (complete) do no more than
//! before: the layout is unchanged, and a store that never pages records keeps no index.
//!
//! Invariants: a record that holds throughout a paging is in its shard's index from the
//! walk on (`SCAN` returns every key present throughout a scan; the index script drops
//! an entry only when its record is gone, and keeps the index alive until the latest
//! record it added ends), so the pages, in key order, give it exactly once. Every call
//! does bounded work: at most [`WALK_STEPS`] `SCAN` steps, each with one script call per
//! [`SCRIPT_BATCH`] keys found, then per shard one `ZRANGEBYLEX` and one `MGET` of at
//! most [`SCRIPT_BATCH`] + 1 keys, and one script for the entries found gone.

use std::collections::BTreeMap;

use punctual_core::store::{Completed, CompletionsPage, CompletionsRequest, corrupt};
use punctual_core::{QueueName, Result, TaskKey, Timestamp};

use crate::cursor::{bad_cursor, hex_of, key_of_hex};
use crate::keys::ShardKeys;
use crate::scripts::IndexChange;
use crate::{SCRIPT_BATCH, Shared, record};

/// The `COUNT` hint of each `SCAN` step of the walk.
const SCAN_COUNT: usize = 1_000;

/// The most `SCAN` steps one call takes.
const WALK_STEPS: usize = 16;

/// Where a paging through a queue's records stands, as its cursor says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Walking the record keys of `shard` (and then of the shards after it) from the
    /// `SCAN` cursor `scan`: `w<shard>.<scan>`.
    Walk { shard: u32, scan: u64 },
    /// Paging the indexes after this task key (`""`: from the first): `k<key in hex>`.
    After(String),
}

impl Place {
    /// Reads a cursor this store issued; a paging without one starts with the walk.
    fn parse(cursor: Option<&str>) -> Result<Place> {
        let Some(cursor) = cursor else { return Ok(Place::Walk { shard: 0, scan: 0 }) };
        if let Some(walk) = cursor.strip_prefix('w') {
            let (shard, scan) = walk.split_once('.').ok_or_else(bad_cursor)?;
            let shard = shard.parse().map_err(|_| bad_cursor())?;
            return Ok(Place::Walk { shard, scan: scan.parse().map_err(|_| bad_cursor())? });
        }
        let hex = cursor.strip_prefix('k').ok_or_else(bad_cursor)?;
        Ok(Place::After(key_of_hex(hex)?))
    }

    fn cursor(&self) -> String {
        match self {
            Place::Walk { shard, scan } => format!("w{shard}.{scan}"),
            Place::After(key) => format!("k{}", hex_of(key)),
        }
    }
}

impl Shared {
    pub(crate) async fn completions(&self, req: &CompletionsRequest) -> Result<CompletionsPage> {
        let place = Place::parse(req.cursor.as_deref())?;
        let shards = self.shard_count(&req.queue, false).await?;
        let now = self.read_now(req.now).await?;
        let after = match place {
            Place::Walk { shard, scan } => match self.walk(&req.queue, shards, shard, scan, now).await? {
                Some(walking) => return Ok(CompletionsPage::new(Vec::new(), Some(walking.cursor()))),
                None => String::new(),
            },
            Place::After(after) => after,
        };
        let limit = (req.limit.max(1) as usize).min(SCRIPT_BATCH);
        self.page_after(&req.queue, shards, &after, limit, now).await
    }

    /// Walks the record keys of `queue`'s shards from `shard`'s `SCAN` cursor `scan`,
    /// indexing those that hold at `now`: where the walk stands after [`WALK_STEPS`]
    /// steps, or `None` once it went through every shard.
    async fn walk(
        &self,
        queue: &QueueName,
        shards: u32,
        mut shard: u32,
        mut scan: u64,
        now: Timestamp,
    ) -> Result<Option<Place>> {
        for _ in 0..WALK_STEPS {
            if shard >= shards {
                return Ok(None);
            }
            let keys = ShardKeys::new(&self.config.prefix, queue, shard);
            let mut step = redis::cmd("SCAN");
            step.arg(scan).arg("MATCH").arg(keys.completions_pattern()).arg("COUNT").arg(SCAN_COUNT);
            // SCAN names no key: it goes to the node of the shard's hash tag.
            let (next, found): (u64, Vec<Vec<u8>>) = self.conn.on_node_of(&keys.completions, &step).await?;
            let task_keys: Vec<&str> =
                found.iter().filter_map(|name| keys.completed_task(std::str::from_utf8(name).ok()?)).collect();
            for batch in task_keys.chunks(SCRIPT_BATCH) {
                self.on(queue, shard).change_completions_index(IndexChange::Add, batch, now).await?;
            }
            (shard, scan) = if next == 0 { (shard + 1, 0) } else { (shard, next) };
        }
        Ok((shard < shards).then_some(Place::Walk { shard, scan }))
    }

    /// The page of the first `limit` records that hold at `now` after the task key
    /// `after` across `queue`'s shards' indexes. Each shard gives its first `limit + 1`
    /// entries; past the last entry of a shard that gave them all (the frontier), that
    /// shard's entries are unread, so the page ends there (short, when entries were
    /// of records gone or ended) and the next starts after it.
    async fn page_after(
        &self,
        queue: &QueueName,
        shards: u32,
        after: &str,
        limit: usize,
        now: Timestamp,
    ) -> Result<CompletionsPage> {
        let mut holding: BTreeMap<String, Completed> = BTreeMap::new();
        let mut frontier: Option<String> = None;
        for shard in 0..shards {
            let keys = ShardKeys::new(&self.config.prefix, queue, shard);
            let from = if after.is_empty() { "-".to_owned() } else { format!("({after}") };
            let mut range = redis::cmd("ZRANGEBYLEX");
            range.arg(&keys.completions).arg(from).arg("+").arg("LIMIT").arg(0).arg(limit + 1);
            let entries: Vec<String> = self.conn.query(&range).await?;
            if entries.is_empty() {
                continue;
            }
            let mut read = redis::cmd("MGET");
            for key in &entries {
                read.arg(keys.completion_of(key));
            }
            let records: Vec<Option<Vec<u8>>> = self.conn.query(&read).await?;
            let mut gone = Vec::new();
            for (key, text) in entries.iter().zip(records) {
                let Some(text) = text else {
                    gone.push(key.as_str());
                    continue;
                };
                let done = record::completed(queue, &TaskKey::new(key.as_str()).map_err(corrupt)?, &text)?;
                if done.holds_at(now) {
                    holding.insert(key.clone(), done);
                }
            }
            if !gone.is_empty() {
                self.on(queue, shard).change_completions_index(IndexChange::Drop, &gone, now).await?;
            }
            if entries.len() > limit {
                let last = entries.last().cloned();
                frontier = match frontier {
                    Some(known) => last.map(|last| last.min(known)),
                    None => last,
                };
            }
        }
        let mut known: Vec<Completed> = holding
            .into_iter()
            .filter(|(key, _)| frontier.as_ref().is_none_or(|frontier| key <= frontier))
            .map(|(_, done)| done)
            .take(limit + 1)
            .collect();
        let next_cursor = if known.len() > limit {
            known.truncate(limit);
            known.last().map(|last| Place::After(last.key.to_string()).cursor())
        } else {
            frontier.map(|frontier| Place::After(frontier).cursor())
        };
        Ok(CompletionsPage::new(known, next_cursor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_the_place_it_was_made_of_and_a_foreign_one_is_refused() {
        for place in [Place::Walk { shard: 3, scan: 17 }, Place::After("订单|1".into()), Place::After(String::new())]
        {
            assert_eq!(Place::parse(Some(&place.cursor())), Ok(place.clone()), "{place:?}");
        }
        assert_eq!(Place::parse(None), Ok(Place::Walk { shard: 0, scan: 0 }), "a paging starts with the walk");
        for foreign in ["", "w", "w1", "w1.x", "wx.1", "k6", "kzz", "x61", "61"] {
            assert_eq!(Place::parse(Some(foreign)), Err(bad_cursor()), "{foreign:?}");
        }
    }
}
