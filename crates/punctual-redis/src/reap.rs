//! Reaping expired leases across every queue and shard in the registry
//! (`lua/reap.lua` does one shard).
//!
//! Invariant: earliest expiry first across queues, as the contract says: first read
//! each shard's expired leases, then have each shard's script end its share of the
//! earliest `limit` (at most [`SCRIPT_BATCH`] per script), and answer them in expiry
//! order.

use std::collections::HashMap;

use punctual_core::store::{ReapResult, Reaped};
use punctual_core::{Result, TaskState, Timestamp};

use crate::keys::ShardKeys;
use crate::shards::{earliest, take_earliest};
use crate::{SCRIPT_BATCH, Shared};

impl Shared {
    pub(crate) async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        let limit = limit.max(1) as usize;
        let look_at = self.read_now(now).await?;
        // Every shard of every queue, and its expired leases: (expiry, shard index, key).
        let mut shards = Vec::new();
        let mut expired = Vec::new();
        for (queue, count) in self.queues().await? {
            for shard in 0..count {
                let keys = ShardKeys::new(&self.config.prefix, &queue, shard);
                let found = self.scored_until(&keys.leases, look_at, limit).await?;
                expired.extend(found.into_iter().map(|(at, key)| ((at, shards.len(), key), shards.len())));
                shards.push((queue.clone(), shard));
            }
        }
        let share = take_earliest(&mut expired, shards.len(), limit);
        let expiry: HashMap<(usize, &str), Timestamp> =
            expired.iter().map(|((at, index, key), _)| ((*index, key.as_str()), *at)).collect();
        let mut reaped: Vec<(Timestamp, Reaped)> = Vec::new();
        let mut next_expiry = None;
        for (index, ((queue, shard), take)) in shards.iter().zip(share).enumerate() {
            let arming = self.heads.arming(queue, *shard);
            let result = self.on(queue, *shard).reap(take.min(SCRIPT_BATCH), now).await?;
            if result.reaped.iter().any(|r| r.state == TaskState::Scheduled) {
                // Due again: the shard's head is read afresh.
                self.heads.forget(queue, *shard);
            }
            arming.done();
            next_expiry = earliest(next_expiry, result.next_expiry);
            for ended in result.reaped {
                let at = expiry.get(&(index, ended.key.as_str())).copied().unwrap_or(now);
                reaped.push((at, ended));
            }
        }
        // Earliest expiry first across queues, as the contract says.
        reaped.sort_by_key(|(at, _)| *at);
        Ok(ReapResult::new(reaped.into_iter().map(|(_, r)| r).collect(), next_expiry))
    }
}
