//! Queues and their shards: the registry in Redis (`<p>:queues`, queue → shard count),
//! this process's memory of it, which shard a key is in, and what a call spanning
//! shards needs: reading each shard's earliest members to share a batch among the
//! shards, merging their answers, waiting for a shard's replicas.
//!
//! Invariants: a queue's shard count never changes once recorded (the first process
//! to write the queue records it; later ones use it, warning when configured
//! otherwise), so every process finds a key in the same shard; a call that takes "the
//! earliest N" across shards takes them in one order everywhere ([`take_earliest`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use punctual_core::{Error, QueueName, Result, TaskKey, Timestamp};

use crate::keys::{self, ShardKeys};
use crate::{Shared, TimeSource, clock};

/// Shard counts as recorded in Redis, learnt on first use of each queue.
#[derive(Debug, Default)]
pub(crate) struct Shards {
    known: Mutex<HashMap<QueueName, u32>>,
}

impl Shards {
    fn get(&self, queue: &QueueName) -> Option<u32> {
        self.known.lock().expect("shards lock poisoned").get(queue).copied()
    }

    fn learn(&self, queue: &QueueName, shards: u32) {
        self.known.lock().expect("shards lock poisoned").insert(queue.clone(), shards);
    }

    fn all(&self) -> Vec<(QueueName, u32)> {
        self.known.lock().expect("shards lock poisoned").iter().map(|(q, n)| (q.clone(), *n)).collect()
    }
}

impl Shared {
    /// The shard count of `queue`; `register` records it in Redis if no process has.
    pub(crate) async fn shard_count(&self, queue: &QueueName, register: bool) -> Result<u32> {
        if let Some(n) = self.shards.get(queue) {
            return Ok(n);
        }
        let wanted = self.config.shards.get(queue).copied().unwrap_or(self.config.default_shards).max(1);
        let registry = keys::registry(&self.config.prefix);
        if register {
            self.conn.query::<()>(redis::cmd("HSETNX").arg(&registry).arg(queue.as_str()).arg(wanted)).await?;
        }
        let stored: Option<u32> = self.conn.query(redis::cmd("HGET").arg(&registry).arg(queue.as_str())).await?;
        let Some(stored) = stored else { return Ok(wanted) };
        if stored != wanted {
            tracing::warn!(
                queue = %queue, configured = wanted, recorded = stored,
                "the queue was first written with another shard count; using the recorded one (resharding is not supported)"
            );
        }
        self.shards.learn(queue, stored);
        Ok(stored)
    }

    /// Whether `queue` is split into shards, as this process has learnt (every call on
    /// a queue learns its count first).
    pub(crate) fn sharded(&self, queue: &QueueName) -> bool {
        self.shards.get(queue).is_some_and(|n| n > 1)
    }

    /// The shard of `key` in `queue`; `register` as in [`Shared::shard_count`].
    pub(crate) async fn shard_of(&self, queue: &QueueName, key: &TaskKey, register: bool) -> Result<u32> {
        Ok(keys::shard_of(key, self.shard_count(queue, register).await?))
    }

    /// Records again in Redis every queue whose shard count this process knows (after
    /// Redis lost the registry, tasks this process writes must stay visible to every
    /// node's reaper and stats).
    pub(crate) async fn register_known_queues(&self) -> Result<()> {
        let registry = keys::registry(&self.config.prefix);
        for (queue, shards) in self.shards.all() {
            self.conn.query::<()>(redis::cmd("HSETNX").arg(&registry).arg(queue.as_str()).arg(shards)).await?;
        }
        Ok(())
    }

    /// The queues recorded in Redis, by name.
    pub(crate) async fn queues(&self) -> Result<BTreeMap<QueueName, u32>> {
        let all: HashMap<String, u32> =
            self.conn.query(redis::cmd("HGETALL").arg(keys::registry(&self.config.prefix))).await?;
        Ok(all.into_iter().filter_map(|(name, n)| Some((QueueName::new(name).ok()?, n.max(1)))).collect())
    }

    /// Waits for replicas of the shard's node when so configured.
    pub(crate) async fn replicate(&self, queue: &QueueName, shard: u32) -> Result<()> {
        self.replicate_key(&ShardKeys::new(&self.config.prefix, queue, shard).tasks).await
    }

    /// Waits for replicas of the node holding `key` when so configured.
    pub(crate) async fn replicate_key(&self, key: &str) -> Result<()> {
        if self.config.wait_replicas == 0 {
            return Ok(());
        }
        let timeout_ms = u64::try_from(self.config.op_timeout.as_millis()).unwrap_or(u64::MAX) / 2;
        // WAIT goes to the node of `key`: the command names no key, so route it by
        // the key where that matters (a Cluster).
        let acked: u32 = self.conn.wait(key, self.config.wait_replicas, timeout_ms).await?;
        if acked < self.config.wait_replicas {
            return Err(Error::Unavailable(format!(
                "only {acked} of {} replicas confirmed the write in time",
                self.config.wait_replicas
            )));
        }
        Ok(())
    }

    /// The `now` of a read outside a script: the caller's, or Redis' own.
    pub(crate) async fn read_now(&self, now: Timestamp) -> Result<Timestamp> {
        match self.config.time {
            TimeSource::Caller => Ok(now),
            TimeSource::Redis => clock::redis_time(&self.conn).await,
        }
    }

    /// Up to `limit` members of `zset` scored at or before `until`, earliest first.
    pub(crate) async fn scored_until(
        &self,
        zset: &str,
        until: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Timestamp, String)>> {
        let found: Vec<(String, f64)> = self
            .conn
            .query(
                redis::cmd("ZRANGEBYSCORE")
                    .arg(zset)
                    .arg("-inf")
                    .arg(until.as_millis())
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(limit),
            )
            .await?;
        Ok(found.into_iter().map(|(member, score)| (Timestamp::from_millis(score as i64), member)).collect())
    }
}

/// Keeps the `limit` first of `found` (items of the shards `0..shards`, each with the
/// index of its shard) in the order of `(item, shard)`, and answers how many of them
/// each shard holds: its share of a batch that takes the earliest across shards.
pub(crate) fn take_earliest<T: Ord>(found: &mut Vec<(T, usize)>, shards: usize, limit: usize) -> Vec<usize> {
    found.sort();
    found.truncate(limit);
    let mut share = vec![0; shards];
    for (_, shard) in found.iter() {
        share[*shard] += 1;
    }
    share
}

/// The earlier of two optional times.
pub(crate) fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_across_shards_are_shared_by_time_then_item_then_shard() {
        let at = Timestamp::from_millis;
        let mut found = vec![((at(5), "b"), 0), ((at(1), "z"), 2), ((at(5), "a"), 1), ((at(9), "c"), 0)];
        assert_eq!(take_earliest(&mut found, 3, 2), vec![0, 1, 1]);
        assert_eq!(found, vec![((at(1), "z"), 2), ((at(5), "a"), 1)]);
        assert_eq!(earliest(Some(at(3)), None), Some(at(3)));
        assert_eq!(earliest(Some(at(3)), Some(at(2))), Some(at(2)));
    }
}
