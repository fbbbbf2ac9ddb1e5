//! Listing the tasks of a queue that carry a tag (`lua/list_tag.lua`), in due order
//! across every shard of the queue.
//!
//! The tags index orders a tag's tasks by key, not by due time, so a page is found by
//! walking the tag's index entries of each shard, [`SCRIPT_BATCH`] entries per script
//! (no script holds Redis for long), keeping the first `limit + 1` tasks after the
//! cursor in (due, key) order, the order of every listing; only those are then read. A
//! page therefore costs a pass over the tag's tasks in the queue, the rest of the queue
//! nothing. A task that changed between the walk and the read (another due time, state
//! or tags) is left out of the page: it did not stay in place.

use punctual_core::store::{ListRequest, Page};
use punctual_core::{QueueName, Result, Tag};

use crate::cursor::Cursor;
use crate::keys::ShardKeys;
use crate::{SCRIPT_BATCH, Shared, record};

/// A task the walk found: its due time, key and shard.
type Found = (i64, String, u32);

impl Shared {
    pub(crate) async fn list_tagged(&self, req: &ListRequest, tag: &Tag) -> Result<Page> {
        let store = self.identity.current();
        let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
        let limit = req.limit.max(1) as usize;
        let mut first: Vec<Found> = Vec::new();
        for shard in 0..self.shard_count(&req.queue, false).await? {
            let mut after: Vec<u8> = Vec::new();
            loop {
                let on = self.on(&req.queue, shard);
                let batch = on.list_tag(tag, req.state, cursor.as_ref(), &after, SCRIPT_BATCH).await?;
                first.extend(batch.found.into_iter().map(|(due, key)| (due, key, shard)));
                first.sort_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
                first.truncate(limit + 1);
                if batch.next.is_empty() {
                    break;
                }
                after = batch.next;
            }
        }
        let more = first.len() > limit;
        first.truncate(limit);
        let mut tasks = Vec::with_capacity(first.len());
        for (found, record) in first.iter().zip(self.records_of(&req.queue, &first).await?) {
            let Some(record) = record else { continue };
            let task = record::decode(store, &req.queue, &found.1, &record)?;
            let in_place = task.due_at.as_millis() == found.0 && task.tags.contains(tag);
            if in_place && req.state.is_none_or(|state| task.state == state) {
                tasks.push(task);
            }
        }
        // The walk's own place, not the last task read: one left out changes nothing.
        let next_cursor = if more { first.last().map(|(due, key, _)| Cursor::at(*due, key)) } else { None };
        Ok(Page::new(tasks, next_cursor))
    }

    /// The records of `found`, in its order (`None`: gone), one `HMGET` per shard.
    async fn records_of(&self, queue: &QueueName, found: &[Found]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut records = vec![None; found.len()];
        let mut shards: Vec<u32> = found.iter().map(|(_, _, shard)| *shard).collect();
        shards.sort_unstable();
        shards.dedup();
        for shard in shards {
            let at: Vec<usize> = (0..found.len()).filter(|i| found[*i].2 == shard).collect();
            let keys = ShardKeys::new(&self.config.prefix, queue, shard);
            let mut command = redis::cmd("HMGET");
            command.arg(&keys.tasks);
            for i in &at {
                command.arg(found[*i].1.as_str());
            }
            let read: Vec<Option<Vec<u8>>> = self.conn.query(&command).await?;
            for (i, record) in at.into_iter().zip(read) {
                records[i] = record;
            }
        }
        Ok(records)
    }
}
