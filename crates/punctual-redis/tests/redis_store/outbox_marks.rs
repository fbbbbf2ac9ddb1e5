//! Outbox marks in Redis: each shard keeps the marks of the rows it applied in
//! `…:outbox` (mark → applied ms); a cancel by tag on a queue of several shards applies
//! shard by shard, each shard's part with its own mark, so a row read again after some
//! parts applied applies the rest and no part twice; a shard's part spanning several
//! scripts is marked by its last; marks go once past `MARK_RETENTION`, at most 100 per
//! write; a row costs its call three commands more (`ZSCORE`, a range read of old
//! marks, `ZADD`), a row read again one script and one `ZSCORE`, and a call without a
//! row no command more.
//!
//! Guards against a cancel by tag marked as a whole (a shard that failed never
//! applied, or, marked shard by shard but answered `None` when some shard applied, a
//! count lost), a part marked by its first script (the rest of a large tag left), marks
//! kept forever or dropped in one unbounded sweep, and marks read by calls without a
//! row.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use std::collections::BTreeMap;

use punctual_core::outbox::{MARK_RETENTION, OutboxName, OutboxRow};
use punctual_core::store::{ApplyOnceRequest, OnceEffect, OnceOp};
use punctual_core::{NewTask, QueueName, Store, Tag, TaskKey, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use punctual_testkit::redis::{self, RedisServer};

use crate::support;

const NOW: i64 = 1_700_000_000_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW + offset_ms)
}

fn on(server: &RedisServer, args: &[&str]) -> String {
    server.command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn redis(args: &[&str]) -> String {
    on(support::server(), args)
}

/// A store on `server` under `prefix`, time from the caller, every queue in `shards`.
async fn store_on(server: &RedisServer, prefix: &str, shards: u32) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&server.url()).expect("server url"));
    config.prefix = prefix.into();
    config.time = TimeSource::Caller;
    config.default_shards = shards;
    RedisStore::connect(config).await.expect("connect to the private redis-server")
}

fn row(id: i64) -> OutboxRow {
    OutboxRow::new(OutboxName::new("shop").unwrap(), id)
}

fn q() -> QueueName {
    QueueName::new("orders").unwrap()
}

fn shard_key(prefix: &str, shard: u32, name: &str) -> String {
    if shard == 0 { format!("{prefix}:{{orders}}:{name}") } else { format!("{prefix}:{{orders/{shard}}}:{name}") }
}

fn tagged(key: &str, tag: &str, due: Timestamp) -> NewTask {
    let mut task = NewTask::new(q(), TaskKey::new(key).unwrap(), due);
    task.tags = vec![Tag::new(tag).unwrap()];
    task
}

async fn schedule(store: &RedisStore, tasks: Vec<NewTask>, now: Timestamp) {
    for chunk in tasks.chunks(1000) {
        for written in store.schedule(chunk.to_vec(), now).await.expect("schedule") {
            written.expect("each task is written");
        }
    }
}

async fn apply(store: &RedisStore, id: i64, op: OnceOp, now: Timestamp) -> Option<OnceEffect> {
    store.apply_once(ApplyOnceRequest::new(row(id), op, now)).await.expect("apply_once")
}

fn cancel_tag_op(tag: &str) -> OnceOp {
    OnceOp::CancelTag { queue: q(), tag: Tag::new(tag).unwrap() }
}

fn cancel_op(key: &str) -> OnceOp {
    OnceOp::Cancel { queue: q(), key: TaskKey::new(key).unwrap() }
}

#[tokio::test]
async fn a_cancel_by_tag_applies_shard_by_shard_and_a_row_read_again_applies_only_the_rest() {
    let prefix = "outbox-parts";
    let store = store_on(support::server(), prefix, 4).await;
    let tasks: Vec<NewTask> = (0..40).map(|i| tagged(&format!("t{i}"), "batch", at(60_000))).collect();
    schedule(&store, tasks, at(0)).await;
    let keys_in = |shard: u32| -> Vec<String> {
        let listed = redis(&["HKEYS", &shard_key(prefix, shard, "tasks")]);
        listed.lines().filter(|k| !k.is_empty()).map(str::to_owned).collect()
    };
    let held: Vec<Vec<String>> = (0..4).map(keys_in).collect();
    assert!(held.iter().all(|keys| !keys.is_empty()), "40 keys fill every shard: {held:?}");

    // Shard 2's script fails (its marks key holds a string: WRONGTYPE at the first look).
    let poisoned = shard_key(prefix, 2, "outbox");
    redis(&["SET", &poisoned, "not a set"]);
    let failed = store.apply_once(ApplyOnceRequest::new(row(1), cancel_tag_op("batch"), at(1))).await;
    assert!(failed.is_err(), "shard 2 failed: {failed:?}");
    let mark = row(1).mark();
    for shard in 0..2 {
        assert!(keys_in(shard).is_empty(), "shard {shard}'s part applied before the failure");
        let marked = redis(&["ZSCORE", &shard_key(prefix, shard, "outbox"), &mark]);
        assert_eq!(marked, (NOW + 1).to_string(), "shard {shard}'s part is marked at the row's now");
    }
    assert_eq!(keys_in(2), held[2], "the failed shard changed nothing");
    assert_eq!(keys_in(3), held[3], "the shard after it was never reached");

    // A task tagged after shard 0's part applied: the row read again must not cancel it.
    let late = held[0][0].clone();
    schedule(&store, vec![tagged(&late, "batch", at(60_000))], at(2)).await;
    redis(&["DEL", &poisoned]);
    let rest = apply(&store, 1, cancel_tag_op("batch"), at(3)).await;
    let expected = (held[2].len() + held[3].len()) as u64;
    assert_eq!(rest, Some(OnceEffect::CancelledTag(expected)), "the parts not applied, and only those");
    assert_eq!(keys_in(0), std::slice::from_ref(&late), "shard 0's part applied once");
    assert!(keys_in(2).is_empty() && keys_in(3).is_empty());
    assert_eq!(apply(&store, 1, cancel_tag_op("batch"), at(4)).await, None, "every shard has the mark");
    assert!(store.get(&q(), &TaskKey::new(late).unwrap()).await.expect("get").is_some());
}

#[tokio::test]
async fn a_shards_part_of_a_large_tag_is_marked_by_its_last_script() {
    let prefix = "outbox-large-tag";
    let store = store_on(support::server(), prefix, 1).await;
    let tasks: Vec<NewTask> = (0..1_200).map(|i| tagged(&format!("t{i}"), "big", at(60_000))).collect();
    schedule(&store, tasks, at(0)).await;
    // 500 tasks per script: three scripts, the third marks the row.
    assert_eq!(apply(&store, 7, cancel_tag_op("big"), at(1)).await, Some(OnceEffect::CancelledTag(1_200)));
    assert_eq!(redis(&["HLEN", &shard_key(prefix, 0, "tasks")]), "0");
    assert_eq!(apply(&store, 7, cancel_tag_op("big"), at(2)).await, None);
}

#[tokio::test]
async fn marks_are_kept_for_the_retention_then_dropped_at_most_100_per_write() {
    let prefix = "outbox-retention";
    let store = store_on(support::server(), prefix, 1).await;
    let marks = shard_key(prefix, 0, "outbox");
    let retention = i64::try_from(MARK_RETENTION.as_millis()).unwrap();
    // 250 rows applied at 0 (cancels of absent keys: a mark each, nothing else).
    for id in 0..250 {
        assert_eq!(apply(&store, id, cancel_op("absent"), at(0)).await, Some(OnceEffect::Cancelled(false)));
    }
    assert_eq!(redis(&["ZCARD", &marks]), "250");
    // The whole retention later, every mark holds.
    assert_eq!(apply(&store, 1_000, cancel_op("absent"), at(retention)).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(redis(&["ZCARD", &marks]), "251");
    assert_eq!(apply(&store, 0, cancel_op("absent"), at(retention)).await, None, "row 0 still marked");
    // A millisecond past it, each write drops at most 100 of them, the oldest first.
    let past = retention + 1;
    assert_eq!(apply(&store, 1_001, cancel_op("absent"), at(past)).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(redis(&["ZCARD", &marks]), "152", "150 old marks left, and the two new ones");
    assert_eq!(apply(&store, 1_002, cancel_op("absent"), at(past)).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(apply(&store, 1_003, cancel_op("absent"), at(past)).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(redis(&["ZCARD", &marks]), "4", "only the marks within the retention");
    for id in 1_000..1_004 {
        assert_ne!(redis(&["ZSCORE", &marks, &row(id).mark()]), "", "row {id}'s mark");
    }
    // Row 0's mark went: read again now, it applies again (the retention's promise).
    assert_eq!(apply(&store, 0, cancel_op("absent"), at(past)).await, Some(OnceEffect::Cancelled(false)));
}

/// Calls so far of each command, scripts' own commands included (`INFO commandstats`).
fn command_calls(server: &RedisServer) -> BTreeMap<String, u64> {
    let stats = on(server, &["INFO", "commandstats"]);
    stats
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split("calls=").nth(1)?.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// The commands a sequence of calls sends, scripts' included, that a write of tasks or
/// marks can send (the store's background reads, `GET`, `TIME`, `HGETALL`…, left out).
async fn commands_of<F: std::future::Future<Output = ()>>(
    server: &RedisServer,
    calls: impl FnOnce() -> F,
) -> BTreeMap<String, u64> {
    const WRITES: [&str; 14] = [
        "evalsha",
        "eval",
        "zscore",
        "zrangebyscore",
        "zrem",
        "zadd",
        "zrange",
        "zrangebylex",
        "hset",
        "hdel",
        "hmget",
        "mget",
        "publish",
        "hget",
    ];
    let before = command_calls(server);
    calls().await;
    let after = command_calls(server);
    WRITES
        .iter()
        .map(|name| ((*name).to_owned(), after.get(*name).unwrap_or(&0) - before.get(*name).unwrap_or(&0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[tokio::test]
async fn a_row_costs_its_call_three_commands_a_replay_one_script_and_a_call_without_a_row_none() {
    let server = redis::server();
    let store = store_on(&server, "cost", 1).await;
    let now = at(0);
    let plain = |n: usize| {
        let store = &store;
        async move {
            schedule(store, vec![tagged(&format!("k{n}"), &format!("tag{n}"), at(60_000))], now).await;
            assert!(store.cancel(&q(), &TaskKey::new(format!("k{n}")).unwrap(), None).await.unwrap());
            assert!(!store.cancel(&q(), &TaskKey::new("absent").unwrap(), None).await.unwrap());
            schedule(store, vec![tagged(&format!("t{n}"), &format!("tag{n}"), at(60_000))], now).await;
            assert_eq!(store.cancel_tag(&q(), &Tag::new(format!("tag{n}")).unwrap(), None).await.unwrap(), 1);
        }
    };
    let rows = |n: usize, first: i64| {
        let store = &store;
        async move {
            let mut effects = Vec::new();
            let task = tagged(&format!("k{n}"), &format!("tag{n}"), at(60_000));
            effects.push(apply(store, first, OnceOp::Schedule(Box::new(task)), now).await);
            effects.push(apply(store, first + 1, cancel_op(&format!("k{n}")), now).await);
            effects.push(apply(store, first + 2, cancel_op("absent"), now).await);
            schedule(store, vec![tagged(&format!("t{n}"), &format!("tag{n}"), at(60_000))], now).await;
            effects.push(apply(store, first + 3, cancel_tag_op(&format!("tag{n}")), now).await);
            effects
        }
    };
    // Warm-up: the queue registered, an id block reserved, every script loaded.
    plain(0).await;
    rows(1, 0).await;
    let without_row = commands_of(&server, || plain(2)).await;
    println!("schedule, cancel, cancel of an absent key, schedule, cancel_tag: {without_row:?}");
    let mut applied = Vec::new();
    let with_rows = commands_of(&server, || async { applied = rows(3, 10).await }).await;
    println!("the same as rows (but the second schedule): {with_rows:?}");
    assert!(applied.iter().all(Option::is_some), "{applied:?}");
    let mut replayed = Vec::new();
    let replays = commands_of(&server, || async { replayed = rows(3, 10).await }).await;
    println!("the rows read again (and the second schedule): {replays:?}");
    assert_eq!(replayed.iter().filter(|effect| effect.is_none()).count(), 4, "{replayed:?}");

    assert_eq!(without_row.get("zscore"), None, "a call without a row reads no mark");
    let mut expected = without_row.clone();
    for name in ["zscore", "zrangebyscore", "zadd"] {
        *expected.entry(name.to_owned()).or_default() += 4;
    }
    assert_eq!(with_rows, expected, "each of 4 rows: its call's commands and three more");
    // A row read again: one script and one ZSCORE; the second schedule as before (its
    // task cancelled first, so that it finds the queue, and its key's history, as the
    // replays' did: a history started costs its index one ZADD more).
    assert!(store.cancel(&q(), &TaskKey::new("t3").unwrap(), None).await.unwrap());
    let schedule_alone = commands_of(&server, || schedule(&store, vec![tagged("t3", "tag3", at(60_000))], now)).await;
    let mut expected = schedule_alone.clone();
    *expected.entry("evalsha".to_owned()).or_default() += 4;
    *expected.entry("zscore".to_owned()).or_default() += 4;
    assert_eq!(replays, expected, "a row read again costs one script and one ZSCORE");
}
