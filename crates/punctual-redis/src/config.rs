//! How a [`RedisStore`](crate::RedisStore) connects and behaves: [`RedisConfig`], with
//! its defaults in [`RedisConfig::new`], and where the scripts' "now" comes from
//! ([`TimeSource`]).
//!
//! Invariant: a config holds the target as given and shows it only redacted (its
//! `Debug` goes through [`Target`]'s).

use std::collections::HashMap;
use std::time::Duration;

use punctual_core::QueueName;

use crate::Target;

/// Where "now" comes from in scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TimeSource {
    /// Redis `TIME`: every node agrees, whatever its own clock says.
    #[default]
    Redis,
    /// The `now` of each call (tests on a manual clock).
    Caller,
}

/// How a [`RedisStore`](crate::RedisStore) connects and behaves. Start from
/// [`RedisConfig::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    pub target: Target,
    /// Prefix of every key (default `punctual`): several deployments can share a Redis.
    pub prefix: String,
    pub time: TimeSource,
    /// Shards of queues split for load. Fixed for a queue's life: the first process to
    /// write a queue records its count in Redis, and that count wins.
    pub shards: HashMap<QueueName, u32>,
    /// Shards of queues not in `shards` (default 1).
    pub default_shards: u32,
    /// How far a sharded queue's leases may stray from due order across its shards
    /// (default 1 s): no task is leased while another shard of its queue holds a task
    /// due more than this earlier. Zero keeps strict due order, at the cost of a script
    /// per run of tasks that one shard holds before the next shard's earliest.
    pub shard_order_slack: Duration,
    /// No call waits longer than this for Redis (default 5 s); then `Unavailable`.
    pub op_timeout: Duration,
    /// The engine looks at its queues at least this often (default 1 s).
    pub safety_poll: Duration,
    /// After each write, wait until this many replicas have it (`WAIT`), up to
    /// `op_timeout`; fewer is `Unavailable` (the write may still have happened).
    pub wait_replicas: u32,
}

impl RedisConfig {
    pub fn new(target: Target) -> RedisConfig {
        RedisConfig {
            target,
            prefix: "punctual".into(),
            time: TimeSource::Redis,
            shards: HashMap::new(),
            default_shards: 1,
            shard_order_slack: Duration::from_secs(1),
            op_timeout: Duration::from_secs(5),
            safety_poll: Duration::from_secs(1),
            wait_replicas: 0,
        }
    }
}
