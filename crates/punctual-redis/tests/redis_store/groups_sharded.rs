//! Groups on a queue split into shards: a task with a group carries the group as its
//! key's hash tag (`{customer-42}order-1`), so a group's tasks, counts, turn and slots
//! share one shard. Three processes on four shards of a Cluster hold each group's
//! limit and due order; one group's backlog keeps no group of any shard waiting (every
//! due shard gives each lease a share); a group this process frees is leased from at
//! once, and the engine's consumer waiting on it is woken; a grouped task whose key lacks the tag is refused; and a queue an earlier
//! punctual registered keeps placing keys whole, and refuses groups.
//!
//! Guards against a group split over shards (its limit counted per shard), a lease
//! that drains the shard with the earliest backlog before visiting the others, heads
//! that miss a shard's grouped tasks or keep a freed group's shard empty until the
//! safety poll, and a placement that moves the keys a queue already holds.

use punctual_core::store::{CompleteRequest, Completion};
use std::sync::Arc;
use std::time::Duration;

use punctual_core::{
    Engine, EngineConfig, Error, LeaseOptions, ManualClock, NewTask, Outcome, QueueDefaults, Store, TaskKey, TaskSpec,
};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};

use crate::group_nodes::{at_ms, grouped, hold_each_groups_limit_and_due_order, lease, queue, schedule};
use crate::support;

const SHARDS: u32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_processes_on_four_shards_never_hold_two_leases_of_a_group_and_keep_its_due_order() {
    let prefix = "groups-sharded-nodes";
    let stores = futures_util::future::join_all((0..3).map(|_| support::on_cluster_under(prefix, SHARDS))).await;
    hold_each_groups_limit_and_due_order(stores, "orders", |group, t| format!("{{{group}}}t{t}")).await;
}

#[tokio::test]
async fn a_backlog_of_100000_in_one_shard_keeps_no_group_of_any_shard_waiting() {
    let q = "fair";
    let store = support::on_cluster(SHARDS).await;
    let mut tasks: Vec<NewTask> =
        (0..100_000).map(|i| grouped(q, &format!("{{big}}b-{i:06}"), at_ms(-60_000), "big")).collect();
    tasks
        .extend((0..100).map(|i| grouped(q, &format!("{{small-{i:03}}}only"), at_ms(-1000), &format!("small-{i:03}"))));
    schedule(&store, tasks, at_ms(-61_000)).await;
    let (mut leased, mut small_seen, mut last_small_at) = (0, 0, 0);
    while leased < 1000 && small_seen < 100 {
        let batch = lease(&store, q, 100, None, at_ms(0)).await;
        assert!(!batch.leases.is_empty(), "due tasks wait, yet a lease took none");
        for lease in &batch.leases {
            leased += 1;
            if lease.task.key.as_str().starts_with("{small-") {
                small_seen += 1;
                last_small_at = leased;
            }
        }
    }
    println!(
        "over {SHARDS} shards, the 100 groups of one task were all handed out within the first {last_small_at} leases"
    );
    assert_eq!(small_seen, 100, "groups of one still waiting after {leased} leases");
}

#[tokio::test]
async fn a_group_this_process_frees_is_leased_from_again_at_once() {
    let q = "freed";
    let store = support::on_cluster(SHARDS).await;
    let tasks = vec![grouped(q, "{c-1}first", at_ms(-2000), "c-1"), grouped(q, "{c-1}second", at_ms(-1000), "c-1")];
    schedule(&store, tasks, at_ms(-3000)).await;
    let first = lease(&store, q, 10, Some(1), at_ms(0)).await;
    assert_eq!(first.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["{c-1}first"]);
    let blocked = lease(&store, q, 10, Some(1), at_ms(0)).await;
    assert_eq!((blocked.leases.len(), blocked.next_due), (0, None), "the group is at its limit: no work");
    let done = CompleteRequest::new(first.leases[0].token.clone(), Completion::Done, at_ms(0));
    store.complete(done).await.expect("complete");
    let next = lease(&store, q, 10, Some(1), at_ms(0)).await;
    assert_eq!(next.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["{c-1}second"]);
}

#[tokio::test]
async fn a_process_that_never_wrote_the_queue_finds_the_grouped_tasks_of_every_shard() {
    let (prefix, q) = ("groups-sharded-reader", "orders");
    let (writer, reader) =
        (support::on_cluster_under(prefix, SHARDS).await, support::on_cluster_under(prefix, SHARDS).await);
    let tasks: Vec<NewTask> =
        (0..8).map(|g| grouped(q, &format!("{{g{g}}}only"), at_ms(-1000 - g), &format!("g{g}"))).collect();
    schedule(&writer, tasks, at_ms(-2000)).await;
    let taken = lease(&reader, q, 100, Some(1), at_ms(0)).await;
    let mut keys: Vec<&str> = taken.leases.iter().map(|l| l.task.key.as_str()).collect();
    keys.sort_unstable();
    let expected: Vec<String> = (0..8).map(|g| format!("{{g{g}}}only")).collect();
    assert_eq!(keys, expected, "its heads count each shard's grouped tasks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_engine_wakes_a_consumer_waiting_on_a_group_of_a_sharded_queue_when_its_lease_ends() {
    let clock = ManualClock::new(at_ms(0));
    let mut defaults = QueueDefaults::default();
    defaults.group_concurrency = Some(1);
    let config = EngineConfig::default().clock(Arc::new(clock)).queue(queue("orders"), defaults);
    let engine = Engine::start(support::on_cluster(SHARDS).await, config);
    for key in ["{customer-42}first", "{customer-42}second"] {
        engine.schedule("orders", key, TaskSpec::now().group("customer-42")).await.expect("schedule");
    }
    let wait = Duration::from_secs(30);
    let first = engine.lease("orders", LeaseOptions::default().max(10)).await.expect("lease");
    assert_eq!(first.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["{customer-42}first"]);
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("orders", LeaseOptions::default().max(10).wait(wait)).await })
    };
    engine.complete(&first[0], Outcome::Done).await.expect("ack");
    let second = tokio::time::timeout(wait / 2, waiting)
        .await
        .expect("woken when the group had room, not at the wait's end")
        .expect("join")
        .expect("lease");
    assert_eq!(second.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["{customer-42}second"]);
    engine.shutdown().await.expect("shutdown");
}

/// A store on the private server under `prefix`, every queue in [`SHARDS`] shards.
async fn sharded_on_server(prefix: &str) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&support::server().url()).expect("server url"));
    config.prefix = prefix.into();
    config.default_shards = SHARDS;
    config.time = TimeSource::Caller;
    RedisStore::connect(config).await.expect("connect to the private redis-server")
}

fn connection() -> redis::Connection {
    redis::Client::open(support::server().url()).expect("a client").get_connection().expect("a connection")
}

fn refusal(result: &punctual_core::Result<punctual_core::store::Scheduled>) -> String {
    match result {
        Err(Error::Invalid { field, reason }) if field == "group" => reason.clone(),
        other => panic!("not refused on its group: {other:?}"),
    }
}

#[tokio::test]
async fn on_a_sharded_queue_a_grouped_task_needs_its_group_as_its_keys_hash_tag() {
    let (prefix, q) = ("groups-sharded-tags", "orders");
    let store = sharded_on_server(prefix).await;
    let tasks = vec![
        grouped(q, "{c-1}a", at_ms(0), "c-1"),
        grouped(q, "b", at_ms(0), "c-1"),
        grouped(q, "{c-2}c", at_ms(0), "c-1"),
    ];
    let results = store.schedule(tasks, at_ms(0)).await.expect("schedule");
    assert!(results[0].is_ok(), "the group as the key's tag: written: {:?}", results[0]);
    assert!(refusal(&results[1]).contains("'{c-1}b'"), "the refusal shows the key to use: {}", refusal(&results[1]));
    assert!(refusal(&results[2]).contains("hash tag"));
    for key in ["b", "{c-2}c"] {
        let found = store.get(&queue(q), &TaskKey::new(key).expect("a key")).await.expect("get");
        assert!(found.is_none(), "{key}: a refused task is not stored");
    }
    let recorded: Option<String> = redis::cmd("HGET")
        .arg(format!("{prefix}:queues"))
        .arg(format!("{q}#hash-tags"))
        .query(&mut connection())
        .expect("HGET");
    assert_eq!(recorded.as_deref(), Some("1"), "the queue is registered with hash tags");
}

/// The shard an earlier punctual placed `key` in: FNV-1a of the whole key.
fn whole_key_shard(key: &str) -> u32 {
    let hash = key
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    (hash % u64::from(SHARDS)) as u32
}

#[tokio::test]
async fn a_queue_an_earlier_punctual_registered_places_keys_whole_and_refuses_groups() {
    let (prefix, q) = ("groups-sharded-legacy", "orders");
    // As an earlier punctual registered it: the shard count alone.
    let () =
        redis::cmd("HSET").arg(format!("{prefix}:queues")).arg(q).arg(SHARDS).query(&mut connection()).expect("HSET");
    let store = sharded_on_server(prefix).await;
    let key = "{customer-42}order-1";
    let mut plain = NewTask::new(queue(q), TaskKey::new(key).expect("a key"), at_ms(0));
    plain.payload = serde_json::json!("kept");
    let results = store.schedule(vec![plain, grouped(q, "{c-1}a", at_ms(0), "c-1")], at_ms(0)).await.expect("schedule");
    assert!(results[0].is_ok());
    assert!(refusal(&results[1]).contains("earlier punctual"), "{}", refusal(&results[1]));
    let shard = whole_key_shard(key);
    let tasks = if shard == 0 { format!("{prefix}:{{{q}}}:tasks") } else { format!("{prefix}:{{{q}/{shard}}}:tasks") };
    let held: bool = redis::cmd("HEXISTS").arg(&tasks).arg(key).query(&mut connection()).expect("HEXISTS");
    assert!(held, "the key is placed whole, in shard {shard}, as an earlier punctual placed it");
    let found = store.get(&queue(q), &TaskKey::new(key).expect("a key")).await.expect("get").expect("stored");
    assert_eq!(found.payload, serde_json::json!("kept"));
}
