//! A Redis that lost punctual's data (`FLUSHALL`, a restart without persistence) is a
//! new store: it gets a new identity, its delivery ids never repeat those of before,
//! and every process that used it before notices, once.
//!
//! Guards against two failures seen in use: after Redis came back empty, a new node
//! handed out delivery id `1-1-1` again — the id of the first task the old store ever
//! fired — so a handler de-duplicating on delivery ids would have skipped a real task;
//! and the only sign of the loss was the log line "Redis is reachable again".
//!
//! Each test has its own `redis-server` (a `FLUSHALL` would empty every other test's
//! keys), never the machine's own Redis.

#![allow(clippy::disallowed_methods, reason = "waits on real processes with real deadlines")]

use std::time::{Duration, Instant};

use punctual_core::store::CompleteRequest;
use punctual_core::store::{Completion, LeaseRequest};
use punctual_core::{
    Engine, EngineConfig, Event, Lease, NewTask, QueueName, Store, StoreReset, TaskKey, TaskSpec, Timestamp,
};
use punctual_redis::{RedisConfig, RedisStore, Target};
use punctual_testkit::redis::RedisServer;

const DEADLINE: Duration = Duration::from_secs(15);

async fn connect(redis: &RedisServer) -> RedisStore {
    RedisStore::connect(RedisConfig::new(Target::parse(&redis.url()).expect("the server's URL")))
        .await
        .expect("connect to the private redis-server")
}

fn queue() -> QueueName {
    QueueName::new("order.cancel").expect("a queue name")
}

/// Schedules `key` due now and leases it.
async fn fire(store: &RedisStore, key: &str) -> Lease {
    let now = store.clock().now();
    // A second back: due by Redis' clock too, whatever the measured offset's error.
    let due = Timestamp::from_millis(now.as_millis() - 1_000);
    let task = NewTask::new(queue(), TaskKey::new(key).expect("a key"), due);
    store.schedule(vec![task], now).await.expect("schedule").pop().expect("one result").expect("scheduled");
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(60), now)).await.expect("lease");
    batch.leases.into_iter().next().expect("the task was due")
}

/// Waits for the next reset the store reports.
async fn next_reset(resets: &mut tokio::sync::broadcast::Receiver<StoreReset>) -> StoreReset {
    tokio::time::timeout(DEADLINE, resets.recv())
        .await
        .unwrap_or_else(|_| panic!("no reset was reported within {DEADLINE:?}"))
        .expect("the store's reset channel")
}

#[tokio::test]
async fn a_flushed_redis_gives_a_new_node_other_delivery_ids_than_before() {
    let redis = punctual_testkit::redis::server();
    let before = connect(&redis).await;
    let first = fire(&before, "order-1").await;
    before.close().await.expect("close");

    redis.command(&["FLUSHALL"]).expect("FLUSHALL");
    let after = connect(&redis).await;
    let again = fire(&after, "order-1").await;

    println!("delivery id before FLUSHALL {}, after {}", first.delivery_id, again.delivery_id);
    assert_ne!(after.id(), first.task.meta.store, "the emptied Redis kept its old identity");
    assert_ne!(again.delivery_id, first.delivery_id, "the first task after FLUSHALL repeated a delivery id");
    assert_ne!(again.task.meta.id, first.task.meta.id, "task ids began again where the old store's began");
}

#[tokio::test]
async fn a_node_running_through_a_flush_reports_it_once_and_goes_on_as_the_new_store() {
    let redis = punctual_testkit::redis::server();
    let store = connect(&redis).await;
    let secret = store.secret().await.expect("secret");
    let old_id = store.id();
    let mut resets = store.peers().expect("a shared store has peers").resets.expect("and reports resets");
    let old = fire(&store, "order-1").await;

    let flushed = Instant::now();
    redis.command(&["FLUSHALL"]).expect("FLUSHALL");
    // Written before this node noticed: its queue must still be visible to every node.
    let written_meanwhile = fire(&store, "order-2").await;
    let reset = next_reset(&mut resets).await;
    println!("FLUSHALL noticed after {:?}: {}", flushed.elapsed(), reset.what);

    assert_eq!(reset.previous, old_id);
    assert_eq!(reset.current, store.id(), "the node goes on as the store Redis holds now");
    assert_ne!(reset.current, old_id);
    assert!(reset.what.contains("Every task scheduled before is gone"), "{}", reset.what);
    let stored: String = redis.command(&["GET", "punctual:store"]).expect("GET");
    assert!(stored.contains(&store.id().to_string()), "Redis holds {stored:?}");

    // Lease ids stay valid: the node put its signing secret back.
    assert_eq!(store.secret().await.expect("secret"), secret, "the lease-signing secret changed");
    // The queue written before the node noticed is registered again.
    let stats = store.stats(None).await.expect("stats");
    assert_eq!(stats.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["order.cancel"], "{stats:?}");
    let now = store.clock().now();
    store
        .complete(CompleteRequest::new(written_meanwhile.token, Completion::Done, now))
        .await
        .expect("an ack of a task written after the flush");

    let new = fire(&store, "order-1").await;
    assert_ne!(new.delivery_id, old.delivery_id);
    assert!(new.delivery_id.starts_with(&format!("{}-", store.id())), "{}", new.delivery_id);

    // Reported once: checking again finds the store as this node now knows it.
    store.check_identity().await.expect("check");
    assert!(resets.try_recv().is_err(), "the same reset was reported twice");
}

#[tokio::test]
async fn a_redis_restarted_without_persistence_is_reported_by_the_engine() {
    let mut redis = punctual_testkit::redis::server();
    let engine = Engine::start(connect(&redis).await, EngineConfig::default());
    let mut events = engine.subscribe();
    let mut resets = engine.store().peers().expect("peers").resets.expect("resets");
    engine.schedule("order.cancel", "order-1", TaskSpec::now()).await.expect("schedule");

    let restarted = Instant::now();
    redis.restart().expect("restart the redis-server, empty");
    next_reset(&mut resets).await;
    println!("restart without persistence noticed after {:?}", restarted.elapsed());
    // The engine hears of it on its own subscription, at about the same moment, and
    // says so once.
    let reset = events.wait_for(DEADLINE, |event| match event {
        Event::StoreReset { reset, missed } => Some((reset.clone(), *missed)),
        _ => None,
    });
    let (last, missed) = reset.await.expect("the engine reported the reset within the deadline of the store");
    assert_eq!(missed, 0);
    assert_eq!(last.expect("the reset itself").current, engine.store().id());
    assert!(engine.stats(Some("order.cancel")).await.expect("stats")[0].scheduled == 0, "the task is gone");
    engine.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_store_from_before_identities_gets_one_and_keeps_its_tasks() {
    let redis = punctual_testkit::redis::server();
    let old = connect(&redis).await;
    fire(&old, "order-1").await;
    old.close().await.expect("close");
    drop(old);
    // As an earlier punctual left it: tasks and an id counter, no identity.
    redis.command(&["DEL", "punctual:store"]).expect("DEL");

    let upgraded = connect(&redis).await;
    let stored = upgraded.get(&queue(), &TaskKey::new("order-1").expect("a key")).await.expect("get");
    let task = stored.expect("the old task is kept");
    assert_eq!(task.meta.store, upgraded.id());
    let lease = fire(&upgraded, "order-2").await;
    assert_eq!(lease.task.meta.store, upgraded.id());
    assert!(lease.delivery_id.starts_with(&format!("{}-", upgraded.id())), "{}", lease.delivery_id);
    assert_eq!(connect(&redis).await.id(), upgraded.id(), "every node reads the minted identity");
}
