//! Leasing due tasks, extending and releasing leases (completions are in
//! `group_commit`, expiries in `reap`).
//!
//! Invariants: a lease reads and takes only its lane's scheduled set in each shard
//! (`keys`), so it costs what it takes whatever the other lane holds; a sharded queue
//! fires in due order like any other: a lease call takes the earliest due tasks of its
//! lane across all its shards (read each shard's due heads, then have each shard's
//! script lease its share), at most [`SCRIPT_BATCH`] in all.

use punctual_core::store::{ExtendRequest, LeaseBatch, LeaseRequest, LeaseToken};
use punctual_core::{Result, Timestamp};

use crate::keys::ShardKeys;
use crate::shards::{earliest, take_earliest};
use crate::{SCRIPT_BATCH, Shared};

impl Shared {
    pub(crate) async fn lease(&self, req: &LeaseRequest) -> Result<LeaseBatch> {
        let shards = self.shard_count(&req.queue, false).await?;
        let max = (req.max.max(1) as usize).min(SCRIPT_BATCH);
        // One shard: one script, no reads first.
        let share = if shards == 1 { vec![max] } else { self.lease_shares(req, shards, max).await? };
        let mut leases = Vec::new();
        let mut next_due = None;
        for (shard, take) in (0..shards).zip(share) {
            let batch = self.on(&req.queue, shard).lease(req, take).await?;
            next_due = earliest(next_due, batch.next_due);
            leases.extend(batch.leases);
        }
        leases.sort_by(|a, b| (a.task.due_at, a.task.key.as_str()).cmp(&(b.task.due_at, b.task.key.as_str())));
        Ok(LeaseBatch::new(leases, next_due))
    }

    /// How many of the `max` earliest due tasks of a sharded queue's lane each shard holds.
    async fn lease_shares(&self, req: &LeaseRequest, shards: u32, max: usize) -> Result<Vec<usize>> {
        let now = self.read_now(req.now).await?;
        let mut due = Vec::new();
        for shard in 0..shards {
            let keys = ShardKeys::new(&self.config.prefix, &req.queue, shard);
            let heads = self.scored_until(keys.scheduled_in(req.lane), now, max).await?;
            due.extend(heads.into_iter().map(|(at, key)| ((at, key), shard as usize)));
        }
        Ok(take_earliest(&mut due, shards as usize, max))
    }

    pub(crate) async fn extend(&self, req: &ExtendRequest) -> Result<Timestamp> {
        let token = &req.token;
        let shard = self.shard_of(&token.queue, &token.key, false).await?;
        self.on(&token.queue, shard).extend(req).await
    }

    pub(crate) async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        let shard = self.shard_of(&token.queue, &token.key, false).await?;
        self.on(&token.queue, shard).release(token, now).await
    }
}
