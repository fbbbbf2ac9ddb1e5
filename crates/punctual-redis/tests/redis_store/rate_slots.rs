//! Rate-limit slots kept in Redis (`RedisRates`, `lua/rate.lua`): one queue's slots are
//! shared by every process on the store, the window slides (no burst at a window's
//! edge), and a queue's slots live under its hash tag, so the script runs on a Redis
//! Cluster too.
//!
//! Guards against a rate counted per process (issue I.2: three servers on one Redis sent
//! three times a queue's `rate`) and against a limiter that lets a second burst through
//! at the boundary of a fixed window.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use crate::support;

use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::{QueueName, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};

const PER: Duration = Duration::from_millis(1000);

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_796_040_000_000 + ms)
}

/// Two stores on the same keys stand for two servers sharing one Redis.
async fn two_processes_share_the_slots(one: RedisStore, two: RedisStore) {
    let (one, two) = (one.rates(), two.rates());
    let queue = QueueName::new("flow.remind").unwrap();
    let other = QueueName::new("ops.alerts").unwrap();
    assert_eq!(one.take(&queue, Rate { count: 3, per: PER }, at(0)).await.unwrap(), None);
    assert_eq!(two.take(&queue, Rate { count: 3, per: PER }, at(100)).await.unwrap(), None);
    assert_eq!(one.take(&queue, Rate { count: 3, per: PER }, at(200)).await.unwrap(), None);
    // The window is full for both; the wait is until the oldest slot frees.
    assert_eq!(two.take(&queue, Rate { count: 3, per: PER }, at(300)).await.unwrap(), Some(Duration::from_millis(700)));
    assert_eq!(one.take(&queue, Rate { count: 3, per: PER }, at(999)).await.unwrap(), Some(Duration::from_millis(1)));
    // Another queue has its own slots.
    assert_eq!(two.take(&other, Rate { count: 3, per: PER }, at(300)).await.unwrap(), None);
    // Sliding: at 1000 the first slot frees, and only it.
    assert_eq!(two.take(&queue, Rate { count: 3, per: PER }, at(1000)).await.unwrap(), None);
    assert_eq!(one.take(&queue, Rate { count: 3, per: PER }, at(1050)).await.unwrap(), Some(Duration::from_millis(50)));
    assert_eq!(one.take(&queue, Rate { count: 3, per: PER }, at(1100)).await.unwrap(), None);
    // A smaller count (a changed configuration) counts the latest slots only.
    assert_eq!(
        one.take(&queue, Rate { count: 1, per: PER }, at(1500)).await.unwrap(),
        Some(Duration::from_millis(600))
    );
    assert_eq!(one.take(&queue, Rate { count: 1, per: PER }, at(2100)).await.unwrap(), None);
    assert_eq!(two.take(&queue, Rate { count: 3, per: PER }, at(2200)).await.unwrap(), None);
}

#[tokio::test]
async fn processes_on_one_redis_share_a_queues_slots() {
    let server = punctual_testkit::redis::server();
    let connect = || async {
        let mut config = RedisConfig::new(Target::parse(&server.url()).unwrap());
        config.time = TimeSource::Caller;
        RedisStore::connect(config).await.unwrap()
    };
    two_processes_share_the_slots(connect().await, connect().await).await;
}

#[tokio::test]
async fn the_slots_work_on_a_cluster() {
    let url = support::cluster().url();
    let connect = |prefix: &str| {
        let mut config = RedisConfig::new(Target::parse(&url).unwrap());
        config.time = TimeSource::Caller;
        config.prefix = prefix.to_owned();
        RedisStore::connect(config)
    };
    two_processes_share_the_slots(connect("rates").await.unwrap(), connect("rates").await.unwrap()).await;
}

#[tokio::test]
async fn redis_time_decides_by_default() {
    let server = punctual_testkit::redis::server();
    let store = RedisStore::connect(RedisConfig::new(Target::parse(&server.url()).unwrap())).await.unwrap();
    let rates = store.rates();
    let queue = QueueName::new("q").unwrap();
    // The caller's time is ignored: a clock a day off changes nothing.
    assert_eq!(
        rates.take(&queue, Rate { count: 1, per: Duration::from_secs(60) }, Timestamp::EPOCH).await.unwrap(),
        None
    );
    let wait =
        rates.take(&queue, Rate { count: 1, per: Duration::from_secs(60) }, at(86_400_000)).await.unwrap().unwrap();
    assert!(wait > Duration::from_secs(55) && wait <= Duration::from_secs(60), "{wait:?}");
}
