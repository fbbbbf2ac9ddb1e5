//! Listing a queue's groups a page at a time, by name, each with its tasks counted by
//! state (`lua/list_groups.lua` lists one shard's).
//!
//! A cursor is the last group name of a page (a group name is valid text of a cursor,
//! and the API carries it as it is). Invariant: a page holds the first `limit` names
//! after the cursor, bytewise, among every shard's; a group in several shards is one
//! entry, its counts summed. Each shard gives its first `limit + 1` names after the
//! cursor, which holds every name of the page that shard has, and tells whether more
//! follow.

use std::collections::BTreeMap;

use punctual_core::store::{GroupCounts, GroupsPage, GroupsRequest};
use punctual_core::{Error, Group, Result};

use crate::cursor::bad_cursor;
use crate::{SCRIPT_BATCH, Shared};

impl Shared {
    pub(crate) async fn groups(&self, req: &GroupsRequest) -> Result<GroupsPage> {
        let after = match req.cursor.as_deref() {
            Some(cursor) => Group::new(cursor).map_err(|_| bad_cursor())?.to_string(),
            None => String::new(),
        };
        let limit = (req.limit.max(1) as usize).min(SCRIPT_BATCH);
        let mut found: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for shard in 0..self.shard_count(&req.queue, false).await? {
            for counts in self.on(&req.queue, shard).list_groups(&after, limit).await? {
                let sum = found.entry(counts.group.to_string()).or_default();
                *sum = (sum.0 + counts.scheduled, sum.1 + counts.leased, sum.2 + counts.dead);
            }
        }
        let more = found.len() > limit;
        let groups: Vec<GroupCounts> = found
            .into_iter()
            .take(limit)
            .map(|(name, (scheduled, leased, dead))| {
                let group = Group::new(name).map_err(|e| Error::Internal(e.to_string()))?;
                Ok(GroupCounts::new(group, scheduled, leased, dead))
            })
            .collect::<Result<_>>()?;
        let next_cursor = if more { groups.last().map(|last| last.group.to_string()) } else { None };
        Ok(GroupsPage::new(groups, next_cursor))
    }
}
