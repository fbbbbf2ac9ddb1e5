//! A sharded queue's leases with the default `shard_order_slack` (1 s): due order holds
//! within each shard and, across shards, to within the slack, and a lease visits only
//! shards with due work instead of every shard.
//!
//! Guards against two bugs: a sharded queue whose leases read every shard first (the
//! cost that made 16 shards a third as fast as one), and leases spread over shards so
//! freely that a task waits behind tasks of other shards due long after it.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use punctual_core::store::LeaseRequest;
use punctual_core::{NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use punctual_testkit::redis;

const SHARDS: u32 = 8;
const SLACK: Duration = Duration::from_secs(1);

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_767_225_600_000 + ms)
}

async fn store_on(url: &str) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(url).expect("url"));
    config.default_shards = SHARDS;
    config.time = TimeSource::Caller;
    assert_eq!(config.shard_order_slack, SLACK, "the default this test is about");
    RedisStore::connect(config).await.expect("connect")
}

/// Evaluations of scripts so far (`INFO commandstats`).
fn scripts_run(server: &redis::RedisServer) -> u64 {
    let stats = server.command(&["INFO", "commandstats"]).expect("INFO commandstats");
    stats
        .lines()
        .filter(|line| line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_eval:"))
        .filter_map(|line| line.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test]
async fn leases_keep_due_order_within_shards_and_within_the_slack_across_them() {
    let server = redis::server();
    let store = store_on(&server.url()).await;
    let queue = QueueName::new("spread").unwrap();
    // 4,000 tasks due 5 ms apart over 20 s, keys in no order of their due times.
    let tasks: Vec<NewTask> = (0..4_000i64)
        .map(|i| NewTask::new(queue.clone(), TaskKey::new(format!("k{}", (i * 7919) % 4_000)).unwrap(), at(i * 5)))
        .collect();
    let due_of: HashMap<String, Timestamp> = tasks.iter().map(|t| (t.key.as_str().to_owned(), t.due_at)).collect();
    for chunk in tasks.chunks(1_000) {
        store.schedule(chunk.to_vec(), at(0)).await.expect("schedule");
    }
    let mut waiting: BTreeSet<(Timestamp, String)> = due_of.iter().map(|(k, d)| (*d, k.clone())).collect();
    let now = at(60_000);
    let shard_of = |key: &str| key_shard(key);
    let mut last_in_shard: HashMap<u32, Timestamp> = HashMap::new();
    let scripts_before = scripts_run(&server);
    let mut calls = 0u64;
    // The latest due time leased so far, and how far it ran ahead of the earliest task
    // still waiting after the call: at most the slack.
    let mut latest_leased = at(0);
    let mut worst_lead = Duration::ZERO;
    while !waiting.is_empty() {
        let batch = store.lease(LeaseRequest::new(queue.clone(), 100, Duration::from_secs(60), now)).await.unwrap();
        calls += 1;
        assert!(!batch.leases.is_empty(), "{} tasks due, none leased", waiting.len());
        let mut by_due: Vec<(Timestamp, String)> =
            batch.leases.iter().map(|l| (l.task.due_at, l.task.key.as_str().to_owned())).collect();
        by_due.sort();
        for (due, key) in by_due {
            assert!(waiting.remove(&(due, key.clone())), "{key} leased twice or never scheduled");
            latest_leased = latest_leased.max(due);
            let shard = shard_of(&key);
            if let Some(last) = last_in_shard.insert(shard, due) {
                assert!(last <= due, "shard {shard} out of due order: {last} then {due}");
            }
        }
        if let Some((earliest_waiting, key)) = waiting.first() {
            let lead = latest_leased.saturating_since(*earliest_waiting);
            worst_lead = worst_lead.max(lead);
            assert!(
                lead <= SLACK,
                "a task due {latest_leased} was leased while {key}, due {lead:?} earlier, still waits: beyond the slack"
            );
        }
    }
    let scripts = scripts_run(&server) - scripts_before;
    // A shard's run within the slack here is about 25 tasks (a task every 40 ms per
    // shard), so a batch of 100 takes several scripts; reading every shard first would
    // cost 8 reads and as many scripts a call.
    println!(
        "4,000 tasks due over 20 s in {SHARDS} shards, leased 100 at a time: {calls} calls, {scripts} scripts, \
         furthest ahead of due order {worst_lead:?}"
    );
}

#[tokio::test]
async fn a_lease_visits_only_shards_with_due_work() {
    let server = redis::server();
    let store = store_on(&server.url()).await;
    let queue = QueueName::new("burst").unwrap();
    let later: Vec<NewTask> = (0..400)
        .map(|i| NewTask::new(queue.clone(), TaskKey::new(format!("later-{i}")).unwrap(), at(3_600_000)))
        .collect();
    store.schedule(later, at(0)).await.expect("schedule");
    // A burst due at one instant, in every shard.
    let burst: Vec<NewTask> =
        (0..2_000).map(|i| NewTask::new(queue.clone(), TaskKey::new(format!("now-{i}")).unwrap(), at(0))).collect();
    for chunk in burst.chunks(1_000) {
        store.schedule(chunk.to_vec(), at(0)).await.expect("schedule");
    }
    let before = scripts_run(&server);
    let mut calls = 0u64;
    let mut leased = 0;
    while leased < 2_000 {
        let batch = store.lease(LeaseRequest::new(queue.clone(), 100, Duration::from_secs(60), at(1))).await.unwrap();
        assert!(!batch.leases.is_empty(), "{leased} of 2,000 leased, then none");
        assert!(batch.leases.iter().all(|l| l.task.key.as_str().starts_with("now-")), "a task not due was leased");
        leased += batch.leases.len();
        calls += 1;
    }
    let idle = store.lease(LeaseRequest::new(queue.clone(), 100, Duration::from_secs(60), at(1))).await.unwrap();
    assert_eq!((idle.leases.len(), idle.next_due), (0, Some(at(3_600_000))));
    let scripts = scripts_run(&server) - before;
    println!("a burst of 2,000 in {SHARDS} shards leased 100 at a time: {calls} calls, {scripts} scripts");
    // One script a call, two where a shard runs dry mid-batch; the call that finds
    // nothing due runs none.
    assert!(scripts <= calls * 2, "{scripts} scripts for {calls} lease calls: leases visit shards with nothing due");
}

/// The shard of `key` among [`SHARDS`], as the store computes it (FNV-1a).
fn key_shard(key: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash % u64::from(SHARDS)) as u32
}

#[tokio::test]
async fn a_schedule_of_another_process_reaches_a_lease_through_its_wake_up() {
    let server = redis::server();
    let leaser = store_on(&server.url()).await;
    let writer = store_on(&server.url()).await;
    let queue = QueueName::new("elsewhere").unwrap();
    // The leaser learns every shard empty.
    let idle = leaser.lease(LeaseRequest::new(queue.clone(), 10, Duration::from_secs(60), at(0))).await.unwrap();
    assert_eq!((idle.leases.len(), idle.next_due), (0, None));
    let mut wakeups = leaser.peers().expect("a Redis store has peers").wakeups;
    writer.schedule(vec![NewTask::new(queue.clone(), TaskKey::new("late").unwrap(), at(10))], at(0)).await.unwrap();
    // Within the heads' trust (a second), only the wake-up can tell the leaser: the
    // follower lowers the shard's head before it passes the wake-up on.
    let wakeup = tokio::time::timeout(Duration::from_secs(10), wakeups.recv()).await.expect("a wake-up").unwrap();
    assert_eq!((wakeup.queue, wakeup.due_at), (queue.clone(), at(10)));
    let batch = leaser.lease(LeaseRequest::new(queue.clone(), 10, Duration::from_secs(60), at(20))).await.unwrap();
    assert_eq!(batch.leases.len(), 1, "the wake-up of another process's schedule did not reach the leaser's heads");
}
