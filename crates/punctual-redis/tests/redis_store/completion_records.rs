//! Dedupe windows in Redis: a task's window is the 17th field of its record, through a
//! lease and back; `Done` leaves a completion record in a key of the task's own shard
//! (its hash tag), which Redis expires at the record's end.
//!
//! Guards against a window lost at a lease (the lease script rewrites the header in
//! place), a completion record under another hash tag than its task's (a script
//! touching two Cluster slots), and one that never expires (records piling up in Redis
//! for every task ever done).

use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{NewTask, QueueName, ScheduleOutcome, Store, TaskKey, Timestamp, Unique};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};

use crate::support;

const NOW: i64 = 1_700_000_000_000;
const HOUR_MS: i64 = 3_600_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW + offset_ms)
}

fn redis(args: &[&str]) -> String {
    support::server().command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// A store on the private server under `prefix`, time from the caller, every queue in
/// `shards` shards.
async fn store(prefix: &str, shards: u32) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&support::server().url()).expect("server url"));
    config.prefix = prefix.into();
    config.time = TimeSource::Caller;
    config.default_shards = shards;
    RedisStore::connect(config).await.expect("connect to the private redis-server")
}

#[tokio::test]
async fn a_window_is_a_17th_field_through_a_lease_and_done_leaves_an_expiring_record_in_the_tasks_shard() {
    let prefix = "unique-records";
    let store = store(prefix, 4).await;
    let q = QueueName::new("receipts").expect("a queue name");
    let key = TaskKey::new("receipt-1").expect("a key");
    let mut task = NewTask::new(q.clone(), key.clone(), at(0));
    task.unique_for = Some(Unique::new(Duration::from_secs(3600)).counting_dead());
    let written = store.schedule(vec![task], at(0)).await.expect("schedule").remove(0).expect("created");
    let id = written.task.expect("written").meta.id;

    // The task's shard: the one whose tasks hash holds it.
    let tag = (0..4)
        .map(|shard| if shard == 0 { "{receipts}".to_owned() } else { format!("{{receipts/{shard}}}") })
        .find(|tag| redis(&["HEXISTS", &format!("{prefix}:{tag}:tasks"), key.as_str()]) == "1")
        .expect("the task is in one shard");
    let header = || redis(&["HGET", &format!("{prefix}:{tag}:tasks"), key.as_str()]).replace('|', "");
    // 3,600,000 ms is "255s0" in base 36; negative: it holds a dead task too.
    assert!(header().starts_with('S') && header().ends_with(",,-255s0"), "17 fields: {}", header());
    let batch = store.lease(LeaseRequest::new(q.clone(), 1, Duration::from_secs(30), at(0))).await.expect("lease");
    assert!(header().starts_with('L') && header().ends_with(",,-255s0"), "the lease keeps it: {}", header());
    assert_eq!(batch.leases[0].task.unique_for, Some(Unique::new(Duration::from_secs(3600)).counting_dead()));

    let done = CompleteRequest::new(batch.leases[0].token.clone(), Completion::Done, at(1000));
    store.complete(done).await.expect("done");
    let record_key = format!("{prefix}:{tag}:completed:{}", key.as_str());
    let ends = NOW + 1000 + HOUR_MS;
    assert_eq!(redis(&["GET", &record_key]), format!("{},{id},0,1,{ends}", NOW + 1000));
    let ttl: i64 = redis(&["PTTL", &record_key]).parse().expect("a TTL in ms");
    assert!(ttl > HOUR_MS - 60_000 && ttl <= HOUR_MS, "expires at its end, a window after the ack: {ttl} ms");

    let kept = store.schedule(vec![NewTask::new(q.clone(), key.clone(), at(0))], at(2000)).await.expect("schedule");
    let kept = kept.into_iter().next().expect("one").expect("kept");
    assert_eq!((kept.outcome, kept.task), (ScheduleOutcome::Kept, None));
    assert_eq!(kept.completed.map(|record| (record.id, record.unique_until)), Some((id, Timestamp::from_millis(ends))));
}
