//! `wait_replicas`: a write answers only once that many replicas have it. Guards
//! against a failover to a replica losing writes the API had acknowledged.

use std::time::Duration;

use punctual_core::{NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use punctual_testkit::redis::{self, Persistence};

fn task(key: &str) -> NewTask {
    let (queue, key) = (QueueName::new("orders").expect("a valid queue"), TaskKey::new(key).expect("a valid key"));
    NewTask::new(queue, key, Timestamp::from_millis(1_000))
}

#[tokio::test]
async fn writes_wait_for_the_replica_and_are_refused_when_it_is_gone() {
    let primary = redis::server();
    let port = primary.port().to_string();
    let mut replica = redis::server_with(Persistence::None, &["--replicaof", "127.0.0.1", &port]);
    // The replica is in sync once the primary counts it as online.
    let online = || primary.command(&["INFO", "replication"]).unwrap().contains("state=online").then_some(());
    let synced = punctual_testkit::poll_until(Duration::from_secs(10), online).is_some();
    assert!(synced, "the replica never connected: {}", primary.command(&["INFO", "replication"]).unwrap());

    let mut config = RedisConfig::new(Target::parse(&primary.url()).unwrap());
    config.time = TimeSource::Caller;
    config.wait_replicas = 1;
    config.op_timeout = Duration::from_secs(2);
    let store = RedisStore::connect(config).await.unwrap();
    let now = Timestamp::from_millis(1_000);
    let written = store.schedule(vec![task("order-1")], now).await.unwrap();
    assert!(written[0].is_ok(), "{written:?}");
    assert_eq!(
        replica.command(&["HLEN", "punctual:{orders}:tasks"]).unwrap(),
        "1",
        "the replica has the task when we answer"
    );

    replica.kill();
    let refused = store.schedule(vec![task("order-2")], now).await;
    assert!(
        matches!(refused, Err(punctual_core::Error::Unavailable(ref why)) if why.contains("replicas")),
        "without its replica a write is refused as unavailable: {refused:?}"
    );
}
