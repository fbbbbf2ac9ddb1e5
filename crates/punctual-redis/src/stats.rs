//! Counts per queue: each queue's counts summed over its shards (`lua/stats.lua` counts
//! one); every queue in the registry when none is named.
//!
//! Invariant: a queue named is counted even when empty; of all queues, only those
//! holding a task are listed (the registry never forgets a queue).

use punctual_core::store::QueueStats;
use punctual_core::{QueueName, Result};

use crate::Shared;
use crate::shards::earliest;

impl Shared {
    pub(crate) async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        if let Some(queue) = queue {
            let shards = self.shard_count(queue, false).await?;
            return Ok(vec![self.stats_of(queue, shards).await?]);
        }
        let mut all = Vec::new();
        for (queue, shards) in self.queues().await? {
            let stats = self.stats_of(&queue, shards).await?;
            if stats.scheduled + stats.leased + stats.dead > 0 {
                all.push(stats);
            }
        }
        Ok(all)
    }

    async fn stats_of(&self, queue: &QueueName, shards: u32) -> Result<QueueStats> {
        let (mut scheduled, mut leased, mut dead, mut next) = (0, 0, 0, None);
        for shard in 0..shards {
            let counts = self.on(queue, shard).stats().await?;
            scheduled += counts.scheduled;
            leased += counts.leased;
            dead += counts.dead;
            next = earliest(next, counts.next_due_at);
        }
        Ok(QueueStats::new(queue.clone(), scheduled, leased, dead, next))
    }
}
