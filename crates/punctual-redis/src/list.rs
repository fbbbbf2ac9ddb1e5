//! Listing a queue's tasks a page at a time, in (due, key) order across every shard
//! (by tag: see `tag_list`).
//!
//! Invariant: a page holds the first `limit` tasks after the cursor in (due, key bytes)
//! order; each shard's script gives its first `limit + 1`, so whether more follow is
//! known without another call.

use punctual_core::Result;
use punctual_core::store::{ListRequest, Page};

use crate::Shared;
use crate::cursor::Cursor;

impl Shared {
    pub(crate) async fn list(&self, req: &ListRequest) -> Result<Page> {
        if let Some(tag) = &req.tag {
            return self.list_tagged(req, tag).await;
        }
        let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
        let limit = req.limit.max(1) as usize;
        let mut found = Vec::new();
        for shard in 0..self.shard_count(&req.queue, false).await? {
            found.extend(self.on(&req.queue, shard).list(req.state, cursor.as_ref(), limit).await?);
        }
        found.sort_by(|a, b| (a.due_at, a.key.as_str().as_bytes()).cmp(&(b.due_at, b.key.as_str().as_bytes())));
        let more = found.len() > limit;
        found.truncate(limit);
        let next_cursor = if more { found.last().map(Cursor::of) } else { None };
        Ok(Page::new(found, next_cursor))
    }
}
