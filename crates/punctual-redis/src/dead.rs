//! Dead tasks: retrying one or many (`lua/retry_dead.lua`, `lua/retry_dead_many.lua`),
//! deleting one, and deleting those past a retention (`lua/sweep_dead.lua`), shard by
//! shard, every script one bounded batch of at most [`SCRIPT_BATCH`] tasks.
//!
//! A bulk retry's cursor is `<shard>.<rest>`: the shard the next batch works on and,
//! for every dead task, the walk's bound (the first batch's now: tasks due later died
//! during the walk), or for a tag, the last member of the tags index looked at in that
//! shard (empty: from the tag's first). Keys need no cursor: each shard's share goes in
//! one script.

use punctual_core::store::{DeadSelection, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, SweepRequest, Swept};
use punctual_core::{Actor, QueueName, Result, Tag, Task, TaskKey};

use crate::cursor::bad_cursor;
use crate::keys::ShardKeys;
use crate::scripts::{DeadBatch, DeleteIf};
use crate::shards::{Sharding, earliest, take_earliest};
use crate::{SCRIPT_BATCH, Shared};

impl Shared {
    pub(crate) async fn retry_dead(&self, req: &RetryDeadRequest) -> Result<Option<Task>> {
        let queue = &req.queue;
        let shard = self.shard_of(queue, &req.key, false).await?;
        let arming = self.heads.arming(queue, shard);
        let revived = self.on(queue, shard).retry_dead(&req.key, req.now, req.by.as_ref()).await?;
        arming.done();
        let Some(task) = revived else { return Ok(None) };
        self.heads.lower(queue, task.lane(), shard, task.priority, task.due_at);
        self.replicate(queue, shard).await?;
        Ok(Some(task))
    }

    pub(crate) async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.delete(queue, key, DeleteIf::Dead, by).await
    }

    pub(crate) async fn retry_dead_batch(&self, req: &RetryDeadBatchRequest) -> Result<RetriedDead> {
        let sharding = self.sharding(&req.queue, false).await?;
        let shards = sharding.count;
        match &req.selection {
            DeadSelection::Keys(keys) => self.retry_dead_keys(req, keys, sharding).await,
            DeadSelection::All => self.retry_dead_walk(req, None, shards).await,
            DeadSelection::Tagged(tag) => self.retry_dead_walk(req, Some(tag), shards).await,
        }
    }

    /// Each shard's share of `keys`, in scripts of at most a batch.
    async fn retry_dead_keys(
        &self,
        req: &RetryDeadBatchRequest,
        keys: &[TaskKey],
        sharding: Sharding,
    ) -> Result<RetriedDead> {
        let mut retried = 0;
        for shard in 0..sharding.count {
            let mine: Vec<&TaskKey> = keys.iter().filter(|key| sharding.shard_of(key) == shard).collect();
            for chunk in mine.chunks(batch_of(req)) {
                let arming = self.heads.arming(&req.queue, shard);
                let revived = self
                    .on(&req.queue, shard)
                    .retry_dead_many(DeadBatch::Keys(chunk), req.now, req.by.as_ref())
                    .await?
                    .retried;
                if revived > 0 {
                    // Revived tasks are due now, each in its lane: the heads are read afresh.
                    self.heads.forget(&req.queue, shard);
                }
                arming.done();
                retried += revived;
                self.replicate(&req.queue, shard).await?;
            }
        }
        Ok(RetriedDead::new(retried, None))
    }

    /// One batch of the walk over every dead task (`tag` `None`) or a tag's tasks, in
    /// the shard the cursor names.
    async fn retry_dead_walk(
        &self,
        req: &RetryDeadBatchRequest,
        tag: Option<&Tag>,
        shards: u32,
    ) -> Result<RetriedDead> {
        let (shard, rest) = match req.cursor.as_deref() {
            Some(cursor) => {
                let (shard, rest) = cursor.split_once('.').ok_or_else(bad_cursor)?;
                (shard.parse::<u32>().map_err(|_| bad_cursor())?, Some(rest.to_owned()))
            }
            None => (0, None),
        };
        let (batch, bound) = match tag {
            Some(tag) => (DeadBatch::Tagged { tag, after: rest.as_deref().unwrap_or(""), size: batch_of(req) }, None),
            None => {
                let bound = match &rest {
                    Some(bound) => bound.parse::<i64>().map_err(|_| bad_cursor())?,
                    None => self.read_now(req.now).await?.as_millis(),
                };
                (DeadBatch::All { bound, size: batch_of(req) }, Some(bound.to_string()))
            }
        };
        let arming = self.heads.arming(&req.queue, shard);
        let done = self.on(&req.queue, shard).retry_dead_many(batch, req.now, req.by.as_ref()).await?;
        if done.retried > 0 {
            self.heads.forget(&req.queue, shard);
        }
        arming.done();
        self.replicate(&req.queue, shard).await?;
        // A tag's walk starts afresh in the next shard; the bound stays.
        let next_cursor = if done.more {
            Some(format!("{shard}.{}", bound.unwrap_or(done.last)))
        } else if shard + 1 < shards {
            Some(format!("{}.{}", shard + 1, bound.unwrap_or_default()))
        } else {
            None
        };
        Ok(RetriedDead::new(done.retried, next_cursor))
    }

    /// The earliest deaths first across shards, as `reap` takes the earliest expiries:
    /// read each shard's deaths up to `died_by`, then have each shard's script delete its
    /// share of the first `limit` (and tell its earliest death left).
    pub(crate) async fn sweep_dead(&self, req: &SweepRequest) -> Result<Swept> {
        let limit = (req.limit.max(1) as usize).min(SCRIPT_BATCH);
        let shards = self.shard_count(&req.queue, false).await?;
        let share = if shards > 1 {
            let mut deaths = Vec::new();
            for shard in 0..shards {
                let keys = ShardKeys::new(&self.config.prefix, &req.queue, shard);
                let found = self.scored_until(&keys.died, req.died_by, limit).await?;
                deaths.extend(found.into_iter().map(|(at, _)| (at, shard as usize)));
            }
            take_earliest(&mut deaths, shards as usize, limit)
        } else {
            vec![limit]
        };
        let mut deleted = 0;
        let mut oldest = None;
        for (shard, take) in (0..shards).zip(share) {
            let swept = self.on(&req.queue, shard).sweep_dead(req.died_by, take).await?;
            if swept.deleted > 0 {
                self.replicate(&req.queue, shard).await?;
            }
            deleted += swept.deleted;
            oldest = earliest(oldest, swept.oldest_death);
        }
        Ok(Swept::new(deleted, oldest))
    }
}

/// Tasks one script of `req` looks at.
fn batch_of(req: &RetryDeadBatchRequest) -> usize {
    (req.limit.max(1) as usize).min(SCRIPT_BATCH)
}
