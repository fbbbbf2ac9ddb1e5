//! A Redis that stops answering (frozen with SIGSTOP: connections stay open, nothing
//! comes back) fails a call after one `op_timeout`, however many shards the call
//! spans.
//!
//! Guards against completions of several shards applied one shard after another, each
//! waiting out its own timeout: an ack behind them would wait k timeouts.

#![allow(clippy::disallowed_methods, reason = "measures real time against a real, frozen process")]

use std::time::{Duration, Instant};

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Error, NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use punctual_testkit::signal;

const OP_TIMEOUT: Duration = Duration::from_millis(300);
const SHARDS: u32 = 8;

#[tokio::test]
async fn completions_over_many_shards_fail_within_one_timeout_when_redis_freezes() {
    let redis = punctual_testkit::redis::server();
    let pid = redis.pid().expect("the redis-server's pid");
    let mut config = RedisConfig::new(Target::parse(&redis.url()).expect("the server's URL"));
    config.default_shards = SHARDS;
    config.op_timeout = OP_TIMEOUT;
    config.time = TimeSource::Caller;
    let store = RedisStore::connect(config).await.expect("connect to the private redis-server");

    let queue = QueueName::new("frozen").expect("a queue name");
    let now = Timestamp::from_millis(1_796_040_000_000);
    let tasks: Vec<NewTask> =
        (0..64).map(|i| NewTask::new(queue.clone(), TaskKey::new(format!("t{i}")).expect("a key"), now)).collect();
    for scheduled in store.schedule(tasks, now).await.expect("schedule") {
        scheduled.expect("each task is scheduled");
    }
    let leases = store.lease(LeaseRequest::new(queue, 64, Duration::from_secs(60), now)).await.expect("lease");
    assert_eq!(leases.leases.len(), 64, "every task leased");
    let acks: Vec<CompleteRequest> =
        leases.leases.iter().map(|lease| CompleteRequest::new(lease.token.clone(), Completion::Done, now)).collect();

    signal(pid, "STOP");
    let started = Instant::now();
    let outcome = store.complete_many(acks).await;
    let took = started.elapsed();
    signal(pid, "CONT");

    assert!(matches!(outcome, Err(Error::Unavailable(_))), "{outcome:?}");
    println!("acks of 64 tasks over {SHARDS} shards, Redis frozen: refused after {took:?} (timeout {OP_TIMEOUT:?})");
    assert!(took < OP_TIMEOUT * 2, "refused after {took:?}: more than one timeout of {OP_TIMEOUT:?}");
}
