//! Queues and their shards: the registry in Redis (`<p>:queues`, queue → shard count
//! and whether keys are placed by hash tag), this process's memory of it, which shard
//! a key is in, and what a call spanning
//! shards needs: reading each shard's earliest members to share a batch among the
//! shards, merging their answers, waiting for a shard's replicas.
//!
//! Invariants: a queue's shard count and placement never change once recorded (the
//! first process to write the queue records both in one script; later ones use them,
//! warning when configured otherwise), so every process finds a key in the same shard; a call that takes "the
//! earliest N" across shards takes them in one order everywhere ([`take_earliest`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use punctual_core::{Error, QueueName, Result, TaskKey, Timestamp};

use crate::keys::{self, ShardKeys};
use crate::{Shared, TimeSource, clock};

/// How a queue's keys are spread over its shards, as recorded in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sharding {
    pub(crate) count: u32,
    /// Whether a key with a hash tag is placed by its tag ([`keys::hash_tag`]): so for
    /// every queue this version registers; a queue an earlier punctual registered
    /// places each key whole, as it always did.
    pub(crate) hash_tags: bool,
}

impl Sharding {
    /// The shard of `key`.
    pub(crate) fn shard_of(&self, key: &TaskKey) -> u32 {
        keys::shard_of(key, self.count, self.hash_tags)
    }
}

/// Shardings as recorded in Redis, learnt on first use of each queue.
#[derive(Debug, Default)]
pub(crate) struct Shards {
    known: Mutex<HashMap<QueueName, Sharding>>,
}

impl Shards {
    fn get(&self, queue: &QueueName) -> Option<Sharding> {
        self.known.lock().expect("shards lock poisoned").get(queue).copied()
    }

    fn learn(&self, queue: &QueueName, sharding: Sharding) {
        self.known.lock().expect("shards lock poisoned").insert(queue.clone(), sharding);
    }

    fn all(&self) -> Vec<(QueueName, Sharding)> {
        self.known.lock().expect("shards lock poisoned").iter().map(|(q, s)| (q.clone(), *s)).collect()
    }
}

impl Shared {
    /// The shard count of `queue`; `register` records the queue in Redis if no process
    /// has (see [`Shared::sharding`]).
    pub(crate) async fn shard_count(&self, queue: &QueueName, register: bool) -> Result<u32> {
        Ok(self.sharding(queue, register).await?.count)
    }

    /// How `queue` is sharded; `register` records it in Redis, as configured and with
    /// hash tags, if no process has. Unrecorded and not registering: as configured.
    pub(crate) async fn sharding(&self, queue: &QueueName, register: bool) -> Result<Sharding> {
        if let Some(known) = self.shards.get(queue) {
            return Ok(known);
        }
        let wanted = Sharding {
            count: self.config.shards.get(queue).copied().unwrap_or(self.config.default_shards).max(1),
            hash_tags: true,
        };
        let stored = if register {
            self.register_queue(queue, wanted).await?
        } else {
            let registry = keys::registry(&self.config.prefix);
            let tags = format!("{queue}#hash-tags");
            let (count, tags): (Option<u32>, Option<String>) =
                self.conn.query(redis::cmd("HMGET").arg(&registry).arg(queue.as_str()).arg(tags)).await?;
            let Some(count) = count else { return Ok(wanted) };
            Sharding { count: count.max(1), hash_tags: tags.is_some() }
        };
        if stored.count != wanted.count {
            tracing::warn!(
                queue = %queue, configured = wanted.count, recorded = stored.count,
                "the queue was first written with another shard count; using the recorded one (resharding is not supported)"
            );
        }
        self.shards.learn(queue, stored);
        Ok(stored)
    }

    /// Whether `queue` is split into shards, as this process has learnt (every call on
    /// a queue learns its count first).
    pub(crate) fn sharded(&self, queue: &QueueName) -> bool {
        self.shards.get(queue).is_some_and(|s| s.count > 1)
    }

    /// The shard of `key` in `queue`; `register` as in [`Shared::sharding`].
    pub(crate) async fn shard_of(&self, queue: &QueueName, key: &TaskKey, register: bool) -> Result<u32> {
        Ok(self.sharding(queue, register).await?.shard_of(key))
    }

    /// Records again in Redis every queue whose shard count this process knows (after
    /// Redis lost the registry, tasks this process writes must stay visible to every
    /// node's reaper and stats).
    pub(crate) async fn register_known_queues(&self) -> Result<()> {
        for (queue, sharding) in self.shards.all() {
            self.register_queue(&queue, sharding).await?;
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
