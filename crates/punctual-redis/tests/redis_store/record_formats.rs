//! Records written before format 2 (format 1, `lua/common.lua`) are still leased,
//! read, listed, completed, retried and cancelled; new tasks are written in format 2,
//! exactly as documented (a priority above 0 in a 15th field, a debounce bound in a
//! 16th, timing among the body's policies), records written before priorities are of
//! priority 0, those written before debounce have no bound and those written before
//! timing the default timing, and the scripts' base 36 is Rust's.
//!
//! Guards against an upgrade that loses work: a user with millions of tasks pending in
//! Redis, written by an earlier punctual, upgrades; if any script or the Rust decoder
//! read only the new format, those tasks would never fire, or fail every call that
//! touches them. The records here are written straight into a real `redis-server`, byte
//! for byte as the earlier scripts wrote them, with the sets and indexes they kept.

use std::time::Duration;

use punctual_core::history::{AckOutcome, EventKind};
use punctual_core::policy::Timing;
use punctual_core::store::{
    CompleteRequest, Completion, HistoryRequest, LeaseRequest, LeaseToken, ListRequest, RetryDeadRequest,
};
use punctual_core::{Backoff, IfExists, Lane, NewTask, Priority, QueueName, Store, Tag, TaskKey, TaskState, Timestamp};
use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use serde_json::json;

use crate::support;

const NOW: i64 = 1_700_000_000_000;
const PREFIX: &str = "format1";
const ID: u64 = 1_099_511_627_776;

fn queue() -> QueueName {
    QueueName::new("upgrade").expect("a queue name")
}

fn key(k: &str) -> TaskKey {
    TaskKey::new(k).expect("a key")
}

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW + offset_ms)
}

/// `n` in base 36, as `i64::from_str_radix` reads it.
fn base36(n: i64) -> String {
    let mut digits = Vec::new();
    let mut rest = n.unsigned_abs();
    loop {
        digits.push(char::from_digit((rest % 36) as u32, 36).expect("a digit"));
        rest /= 36;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        digits.push('-');
    }
    digits.iter().rev().collect()
}

/// Runs one command on the private server, panicking on an error reply.
fn redis(args: &[&str]) -> String {
    support::server().command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn shard_key(name: &str) -> String {
    format!("{PREFIX}:{{upgrade}}:{name}")
}

/// The stored record of `k`.
fn record(k: &str) -> String {
    redis(&["HGET", &shard_key("tasks"), k])
}

/// Writes what an earlier punctual left in Redis: the queue registered with one shard,
/// the fence counter, and six tasks in format 1 with their sets and their tag.
fn seed() {
    let ms = |offset: i64| (NOW + offset).to_string();
    let tasks = [
        // key, record, (set, score) of each set the task is in
        ("due-1", format!(r#"0,{},,,,,20,,,{},{},,,0|{{"p":{{"n":1}}}}"#, ms(-5000), ID + 1, ms(-90_000)), "scheduled"),
        (
            "due-2",
            format!(
                r#"0,{},,,,,5,,,{},{},{},,6|urgent{{"p":{{"n":2}},"b":{{"initial":"1s","factor":2.0,"max":"1h"}}}}"#,
                ms(-4000),
                ID + 2,
                ms(-90_000),
                ms(-60_000)
            ),
            "scheduled",
        ),
        (
            "later",
            format!(
                r#"0,{},,,3,2,20,,,{},{},{},4,0|boom{{"p":{{"n":3}}}}"#,
                ms(3_600_000),
                ID + 3,
                ms(-90_000),
                ms(-1000)
            ),
            "scheduled",
        ),
        (
            "leased",
            format!(
                r#"1,{},{},7,,,20,,,{},{},{},,0|{{"p":{{"n":4}}}}"#,
                ms(-10_000),
                ms(60_000),
                ID + 4,
                ms(-90_000),
                ms(-2000)
            ),
            "leases",
        ),
        (
            "dead",
            format!(
                r#"2,{},,3,,20,20,,,{},{},{},4,0|gone{{"p":{{"n":5}}}}"#,
                ms(-20_000),
                ID + 5,
                ms(-90_000),
                ms(-3000)
            ),
            "dead",
        ),
        (
            "repeating",
            format!(
                r#"0,{},,,,,20,,,{},{},,,0|{{"p":{{"n":6}},"r":{{"every":"1m"}}}}"#,
                ms(-1000),
                ID + 6,
                ms(-90_000)
            ),
            "scheduled",
        ),
    ];
    redis(&["HSET", &format!("{PREFIX}:queues"), "upgrade", "1"]);
    redis(&["SET", &shard_key("seq"), "7"]);
    for (k, rec, set) in &tasks {
        redis(&["HSET", &shard_key("tasks"), k, rec]);
        let due = rec.split(',').nth(1).expect("a due time");
        match *set {
            "leases" => {
                redis(&["ZADD", &shard_key("leases"), &ms(60_000), k]);
                redis(&["ZADD", &shard_key("inflight"), due, k]);
            }
            "dead" => {
                redis(&["ZADD", &shard_key("dead"), due, k]);
                redis(&["ZADD", &shard_key("died"), &ms(-3000), k]);
            }
            _ => {
                redis(&["ZADD", &shard_key("scheduled"), due, k]);
            }
        }
    }
    redis(&["ZADD", &shard_key("tags"), "0", "urgent\ndue-2"]);
}

async fn store() -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&support::server().url()).expect("server url"));
    config.prefix = PREFIX.into();
    config.time = TimeSource::Caller;
    RedisStore::connect(config).await.expect("connect to the private redis-server")
}

#[tokio::test]
async fn tasks_stored_in_format_1_are_served_as_before_and_new_ones_in_format_2() {
    seed();
    let store = store().await;
    let q = queue();

    // Read: every field as the earlier punctual stored it.
    let due_2 = store.get(&q, &key("due-2")).await.expect("get").expect("due-2 is there");
    assert_eq!((due_2.state, due_2.due_at, due_2.max_attempts), (TaskState::Scheduled, at(-4000), 5));
    assert_eq!((due_2.created_at, due_2.updated_at, due_2.meta.id), (at(-90_000), at(-60_000), ID + 2));
    assert_eq!(due_2.payload, json!({"n": 2}));
    assert_eq!(due_2.backoff, Backoff::new(Duration::from_secs(1), 2.0, Duration::from_secs(3600)).expect("backoff"));
    assert_eq!(due_2.tags, [Tag::new("urgent").expect("a tag")]);
    let later = store.get(&q, &key("later")).await.expect("get").expect("later is there");
    assert_eq!((later.version, later.attempts, later.last_error.as_deref()), (3, 2, Some("boom")));
    let leased = store.get(&q, &key("leased")).await.expect("get").expect("leased is there");
    assert_eq!((leased.state, leased.lease_expires_at, leased.meta.fence), (TaskState::Leased, Some(at(60_000)), 7));
    let dead = store.get(&q, &key("dead")).await.expect("get").expect("dead is there");
    assert_eq!((dead.state, dead.attempts, dead.last_error.as_deref()), (TaskState::Dead, 20, Some("gone")));
    let repeating = store.get(&q, &key("repeating")).await.expect("get").expect("repeating is there");
    assert!(repeating.repeat.is_some(), "the repeat policy was read");

    // Listed, in every state and by tag.
    let page = store.list(ListRequest::new(q.clone(), None, 100, None)).await.expect("list");
    assert_eq!(page.tasks.len(), 6, "{page:?}");
    let tagged =
        store.list(ListRequest::new(q.clone(), None, 100, None).tagged(Tag::new("urgent").expect("a tag"))).await;
    assert_eq!(tagged.expect("list by tag").tasks.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["due-2"]);
    let stats = store.stats(Some(&q)).await.expect("stats");
    assert_eq!((stats[0].scheduled, stats[0].leased, stats[0].dead), (4, 1, 1));

    // Leased in due order, with fences after the old counter.
    let batch = store.lease(LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(0))).await.expect("lease");
    let leased_keys: Vec<&str> = batch.leases.iter().map(|l| l.task.key.as_str()).collect();
    assert_eq!(leased_keys, ["due-1", "due-2", "repeating"]);
    assert_eq!(batch.leases.iter().map(|l| l.token.fence).collect::<Vec<_>>(), [8, 9, 10]);
    assert_eq!(batch.leases[0].task.payload, json!({"n": 1}));
    assert!(record("due-1").starts_with("1,"), "a task read in format 1 is written back in format 1");

    // Completed: done, retried (error kept), rescheduled (next occurrence).
    let lease_of = |k: &str| batch.leases.iter().find(|l| l.task.key.as_str() == k).expect("leased");
    let token = |k: &str| lease_of(k).token.clone();
    let repeating_delivery = lease_of("repeating").delivery_id.clone();
    let acks = vec![
        CompleteRequest::new(token("due-1"), Completion::Done, at(1)),
        CompleteRequest::new(token("due-2"), Completion::Retry { at: at(1000), error: "again".into() }, at(1)),
        CompleteRequest::new(token("repeating"), Completion::Reschedule { at: at(59_000), anchor: at(59_000) }, at(1)),
    ];
    for outcome in store.complete_many(acks).await.expect("complete") {
        outcome.expect("each lease was live");
    }
    assert_eq!(store.get(&q, &key("due-1")).await.expect("get"), None);
    let due_2 = store.get(&q, &key("due-2")).await.expect("get").expect("due-2 retried");
    assert_eq!((due_2.state, due_2.attempts, due_2.last_error.as_deref()), (TaskState::Scheduled, 1, Some("again")));
    assert_eq!((due_2.due_at, due_2.payload.clone()), (at(1000), json!({"n": 2})));
    let repeating = store.get(&q, &key("repeating")).await.expect("get").expect("repeating rescheduled");
    assert_eq!((repeating.meta.occurrence, repeating.due_at), (2, at(59_000)));

    // The lease the earlier punctual handed out is still honoured, and fenced.
    let old = LeaseToken::new(q.clone(), key("leased"), ID + 4, 1, 7);
    let stale = LeaseToken::new(q.clone(), key("leased"), ID + 4, 1, 6);
    assert!(store.complete(CompleteRequest::new(stale, Completion::Done, at(2))).await.is_err(), "a stale fence");
    store.complete(CompleteRequest::new(old, Completion::Done, at(2))).await.expect("the old lease completes");
    assert_eq!(store.get(&q, &key("leased")).await.expect("get"), None);

    // A dead task comes back to work and runs.
    let retried = store.retry_dead(RetryDeadRequest::new(q.clone(), key("dead"), at(3))).await.expect("retry");
    assert_eq!(retried.map(|t| (t.state, t.attempts)), Some((TaskState::Scheduled, 0)));
    let batch = store.lease(LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(3))).await.expect("lease");
    assert_eq!(batch.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["dead"]);
    let token = batch.leases[0].token.clone();
    store.complete(CompleteRequest::new(token, Completion::Done, at(4))).await.expect("done");

    // Cancelled, one by key and one by tag.
    assert!(store.cancel(&q, &key("later"), None).await.expect("cancel"));
    assert_eq!(store.cancel_tag(&q, &Tag::new("urgent").expect("a tag"), None).await.expect("cancel by tag"), 1);

    // Replaced: the task keeps its id and creation, and is written in format 2.
    assert!(record("repeating").starts_with("0,"), "{}", record("repeating"));
    let mut replacement = NewTask::new(q.clone(), key("repeating"), at(120_000));
    replacement.payload = json!({"n": 7});
    replacement.if_exists = IfExists::Replace;
    let replaced = store
        .schedule(vec![replacement], at(5))
        .await
        .expect("schedule")
        .remove(0)
        .expect("replaced")
        .task
        .expect("written");
    assert_eq!((replaced.meta.id, replaced.created_at, replaced.version), (ID + 6, at(-90_000), 2));
    assert!(record("repeating").starts_with('S'), "{}", record("repeating"));
    let again = store.get(&q, &key("repeating")).await.expect("get").expect("replaced");
    assert_eq!((again.payload, again.due_at, again.repeat), (json!({"n": 7}), at(120_000), None));
    // Told as any task's life: its lease (the try, fence and delivery id read from format
    // 1), its ack, and the replace, whose body of format 1 is told changed as payload and
    // policies.
    let told = store.history(HistoryRequest::new(q.clone(), key("repeating"), Timestamp::EPOCH)).await;
    let told = told.expect("history");
    let kinds: Vec<EventKind> = told.iter().map(|event| event.kind).collect();
    assert_eq!(kinds, [EventKind::Leased, EventKind::Acked, EventKind::Replaced], "{told:#?}");
    assert_eq!((told[0].attempt, told[0].lease), (Some(1), Some(10)));
    assert_eq!(told[0].delivery_id, Some(repeating_delivery));
    assert_eq!((told[1].outcome, told[1].due_at), (Some(AckOutcome::Reschedule), Some(at(59_000))));
    assert_eq!(told[2].changed, ["due_at", "payload", "policies"]);

    let stats = store.stats(Some(&q)).await.expect("stats");
    assert_eq!((stats[0].scheduled, stats[0].leased, stats[0].dead), (1, 0, 0));
    assert_eq!(redis(&["HLEN", &shard_key("tasks")]), "1");
    assert_eq!(redis(&["ZCARD", &shard_key("tags")]), "0");
}

#[tokio::test]
async fn a_new_pending_task_is_written_in_format_2_and_kept_small() {
    let mut config = RedisConfig::new(Target::parse(&support::server().url()).expect("server url"));
    config.prefix = "format2".into();
    config.time = TimeSource::Caller;
    let store = RedisStore::connect(config).await.expect("connect");
    let q = queue();
    let created = at(0);
    let mut task = NewTask::new(q.clone(), key("999999"), at(30 * 86_400_000));
    task.payload = json!({"n": 999_999});
    let scheduled = store
        .schedule(vec![task], created)
        .await
        .expect("schedule")
        .remove(0)
        .expect("scheduled")
        .task
        .expect("written");
    let stored = redis(&["HGET", "format2:{upgrade}:tasks", "999999"]);
    let id36 = base36(i64::try_from(scheduled.meta.id).expect("ids are below 2^53"));
    // due NOW + 30 days = "lq5rbf28" in base 36, 30 days = "16v7k00".
    assert_eq!(stored, format!(r#"Slq5rbf28,{id36},16v7k00|{{"n":999999}}"#));
    // Redis' sds header and terminator add 4 bytes: jemalloc's 48-byte class.
    assert!(stored.len() + 4 <= 48, "{} bytes: {stored}", stored.len());
    assert_eq!(store.get(&q, &key("999999")).await.expect("get"), Some(scheduled));

    // Leased when due for 30 s: the lease's expiry 30 s after updated ("n5c"), fence 1,
    // updated 30 days after created.
    let lease_for = Duration::from_secs(30);
    let batch = store.lease(LeaseRequest::new(q.clone(), 1, lease_for, at(30 * 86_400_000))).await.expect("lease");
    let lease = batch.leases.into_iter().next().expect("the task was due");
    let stored = redis(&["HGET", "format2:{upgrade}:tasks", "999999"]);
    assert_eq!(stored, format!(r#"Llq5rbf28,{id36},16v7k00,,,n5c,1,16v7k00|{{"n":999999}}"#));
    assert_eq!(store.get(&q, &key("999999")).await.expect("get"), Some(lease.task));
}

#[tokio::test]
async fn a_record_of_format_2_written_before_targets_is_leased_in_the_handler_lane_and_kept_so() {
    // Every one of the 13 fields set, as before targets: due, id, 90 s before due
    // created, max 5, no tags, no lease, fence 3, updated 10 s after created, 1
    // attempt, a 4-byte error, version 2, occurrence 3, anchor 1 s before due.
    let prefix = "format2-13";
    let due = at(-1000);
    let fields = [
        base36(due.as_millis()),
        base36(ID as i64 + 9),
        base36(90_000),
        "5".into(),
        String::new(),
        String::new(),
        "3".into(),
        base36(10_000),
        "1".into(),
        "4".into(),
        "2".into(),
        "3".into(),
        base36(NOW - 2000),
    ];
    let stored = format!(r#"S{}|boom{{"n":9}}"#, fields.join(","));
    redis(&["HSET", &format!("{prefix}:queues"), "upgrade", "1"]);
    redis(&["HSET", &format!("{prefix}:{{upgrade}}:tasks"), "old", &stored]);
    redis(&["ZADD", &format!("{prefix}:{{upgrade}}:scheduled"), &due.as_millis().to_string(), "old"]);
    let store = support::on_server_under(prefix).await;
    let q = queue();
    let before = store.get(&q, &key("old")).await.expect("get").expect("the task is there");
    assert_eq!((before.target, before.version, before.attempts, before.meta.fence), (None, 2, 1, 3));
    let batch = store.lease(LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(0))).await.expect("lease");
    assert_eq!(batch.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["old"]);
    let leased = redis(&["HGET", &format!("{prefix}:{{upgrade}}:tasks"), "old"]);
    let header = leased.split('|').next().expect("a header");
    assert_eq!(header.split(',').count(), 13, "no 14th field without a target: {leased}");
    assert!(leased.starts_with('L') && leased.ends_with(r#"|boom{"n":9}"#), "{leased}");
    assert_eq!(batch.leases[0].task.last_error.as_deref(), Some("boom"));
}

#[tokio::test]
async fn a_task_with_a_target_keeps_it_in_its_record_and_its_key_in_the_target_lanes_set() {
    let prefix = "format2-target";
    let store = support::on_server_under(prefix).await;
    let q = queue();
    let shard_key = |name: &str| format!("{prefix}:{{upgrade}}:{name}");
    let target = punctual_core::Target::new("http://127.0.0.1:9/hook").expect("a target");
    let mut task = NewTask::new(q.clone(), key("t"), at(60_000));
    task.payload = json!({"n": 1});
    task.target = Some(target.clone());
    let scheduled = store
        .schedule(vec![task.clone()], at(0))
        .await
        .expect("schedule")
        .remove(0)
        .expect("created")
        .task
        .expect("written");
    let id36 = base36(i64::try_from(scheduled.meta.id).expect("ids are below 2^53"));
    // The target's 31 bytes ("v" in base 36) in the 14th field, the target between the
    // (empty) tags and the payload.
    let stored = redis(&["HGET", &shard_key("tasks"), "t"]);
    let due36 = base36(NOW + 60_000);
    assert_eq!(stored, format!(r#"S{due36},{id36},1aao,,,,,,,,,,,v|{{"u":"http://127.0.0.1:9/hook"}}{{"n":1}}"#));
    assert_eq!(redis(&["ZSCORE", &shard_key("scheduled:target"), "t"]), (NOW + 60_000).to_string());
    assert_eq!(redis(&["ZCARD", &shard_key("scheduled")]), "0", "not in the handler lane's set");
    assert_eq!(store.get(&q, &key("t")).await.expect("get"), Some(scheduled));

    // Replaced without a target: back in the handler lane, with no 14th field.
    task.target = None;
    store.schedule(vec![task], at(1)).await.expect("schedule").remove(0).expect("replaced");
    let stored = redis(&["HGET", &shard_key("tasks"), "t"]);
    assert!(!stored.contains("hook") && stored.split('|').next().expect("a header").split(',').count() <= 13);
    assert_eq!(redis(&["ZCARD", &shard_key("scheduled:target")]), "0", "{stored}");
    assert_eq!(redis(&["ZSCORE", &shard_key("scheduled"), "t"]), (NOW + 60_000).to_string());
}

#[tokio::test]
async fn a_priority_is_a_15th_field_and_records_from_before_priorities_are_of_priority_0() {
    let prefix = "format2-priority";
    let shard_key = |name: &str| format!("{prefix}:{{upgrade}}:{name}");
    // Written before priorities: 14 fields (a target) and 13 (none), both due first.
    let target = r#"{"u":"http://127.0.0.1:9/hook"}"#;
    let with_target = format!("S{},{},,,,,,,,,,,,{}|{target}", base36(NOW - 9000), base36(ID as i64 + 21), base36(31));
    let plain = format!("S{},{}|", base36(NOW - 8000), base36(ID as i64 + 22));
    redis(&["HSET", &format!("{prefix}:queues"), "upgrade", "1"]);
    redis(&["HSET", &shard_key("tasks"), "old-target", &with_target, "old-plain", &plain]);
    redis(&["ZADD", &shard_key("scheduled:target"), &(NOW - 9000).to_string(), "old-target"]);
    redis(&["ZADD", &shard_key("scheduled"), &(NOW - 8000).to_string(), "old-plain"]);
    let store = support::on_server_under(prefix).await;
    let q = queue();
    for old in ["old-target", "old-plain"] {
        let task = store.get(&q, &key(old)).await.expect("get").expect("the task is there");
        assert_eq!(task.priority, Priority::LOWEST, "{old}");
    }
    // A new task of priority 5: its priority in a 15th field, its key in the urgent set.
    let mut urgent = NewTask::new(q.clone(), key("urgent"), at(-1000));
    urgent.priority = Priority::new(5).expect("a priority");
    let scheduled = store
        .schedule(vec![urgent], at(-2000))
        .await
        .expect("schedule")
        .remove(0)
        .expect("created")
        .task
        .expect("written");
    let id36 = base36(i64::try_from(scheduled.meta.id).expect("ids are below 2^53"));
    let stored = redis(&["HGET", &shard_key("tasks"), "urgent"]);
    assert_eq!(stored, format!("S{},{id36},rs,,,,,,,,,,,,5|", base36(NOW - 1000)));
    let score = 4 * (1_i64 << 48) + NOW - 1000;
    assert_eq!(redis(&["ZSCORE", &shard_key("scheduled:urgent"), "urgent"]), score.to_string());
    let lease = |lane| LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(0)).in_lane(lane);
    let batch = store.lease(lease(Lane::Handler)).await.expect("lease");
    let keys: Vec<&str> = batch.leases.iter().map(|l| l.task.key.as_str()).collect();
    assert_eq!(keys, ["urgent", "old-plain"], "priority 5 before the earlier task of priority 0");
    let leased = redis(&["HGET", &shard_key("tasks"), "urgent"]);
    assert!(leased.starts_with('L') && leased.ends_with(",5|"), "a lease keeps the priority: {leased}");
    let leased = redis(&["HGET", &shard_key("tasks"), "old-plain"]);
    assert!(leased.split('|').next().expect("a header").split(',').count() <= 13, "{leased}");
    let targets = store.lease(lease(Lane::Target)).await.expect("lease");
    assert_eq!(targets.leases[0].task.priority, Priority::LOWEST);
    let leased = redis(&["HGET", &shard_key("tasks"), "old-target"]);
    assert_eq!(leased.split('|').next().expect("a header").split(',').count(), 14, "no 15th field: {leased}");
    assert_eq!(redis(&["EXISTS", &shard_key("scheduled:urgent")]), "0", "the urgent task left its set");
}

#[test]
fn the_scripts_write_and_read_base_36_as_rust_does() {
    let numbers: Vec<i64> = [0, 1, 35, 36, 37, 1295, 1296, 1297, 46_655, 46_656, 1_679_615, 1_679_616]
        .into_iter()
        .chain([(1 << 41) - 1, 253_402_207_200_999, (1 << 53) - 1])
        .flat_map(|n: i64| [n, -n])
        .collect();
    let script = format!(
        "{}\nlocal out = {{}}\nfor i, n in ipairs(ARGV) do\n  local text = b36(tonumber(n))\n  \
         out[i] = text .. '=' .. string.format('%d', field(text))\nend\nreturn out",
        include_str!("../../src/lua/common.lua")
    );
    let texts: Vec<String> = numbers.iter().map(i64::to_string).collect();
    let mut args = vec!["EVAL", script.as_str(), "0"];
    args.extend(texts.iter().map(String::as_str));
    let answer = redis(&args);
    let expected: Vec<String> = numbers.iter().map(|&n| format!("{}={n}", base36(n))).collect();
    assert_eq!(answer.lines().collect::<Vec<_>>(), expected);
    for n in &numbers {
        assert_eq!(i64::from_str_radix(&base36(*n), 36), Ok(*n));
    }
}

#[tokio::test]
async fn a_debounce_bound_is_a_16th_field_until_a_lease_and_records_from_before_have_none() {
    let prefix = "format2-debounce";
    let shard_key = |name: &str| format!("{prefix}:{{upgrade}}:{name}");
    let header = |k: &str| redis(&["HGET", &shard_key("tasks"), k]).split('|').next().expect("a header").to_owned();
    // Written before debounce: 15 fields (priority 3).
    let old = format!("S{},{},,,,,,,,,,,,,3|", base36(NOW - 9000), base36(ID as i64 + 31));
    redis(&["HSET", &format!("{prefix}:queues"), "upgrade", "1"]);
    redis(&["HSET", &shard_key("tasks"), "old", &old]);
    redis(&["ZADD", &shard_key("scheduled"), &(NOW - 9000).to_string(), "old"]);
    redis(&["ZADD", &shard_key("scheduled:urgent"), &(6 * (1_i64 << 48) + NOW - 9000).to_string(), "old"]);
    let store = support::on_server_under(prefix).await;
    let q = queue();
    let before = store.get(&q, &key("old")).await.expect("get").expect("the task is there");
    assert_eq!((before.meta.debounce_until, before.priority.get()), (None, 3));

    let debounced = |k: &str, due: Timestamp, max_wait_s: u64| {
        let mut task = NewTask::new(q.clone(), key(k), due);
        task.debounce = Some(Duration::from_secs(max_wait_s));
        task
    };
    // The old task replaced by a debounced schedule: a new burst, bound now + 10 s.
    let mut replacement = debounced("old", at(60_000), 10);
    replacement.priority = Priority::new(3).expect("a priority");
    // A new task scheduled twice in one call: the second write sees the first's bound
    // (10 s), not a burst of its own (30 s).
    let batch = vec![replacement, debounced("new", at(5000), 10), debounced("new", at(60_000), 30)];
    let answers: Vec<_> =
        store.schedule(batch, at(0)).await.expect("schedule").into_iter().map(|a| a.expect("ok")).collect();
    let answers: Vec<_> = answers.into_iter().map(|a| a.task.expect("written")).collect();
    let bounds: Vec<_> = answers.iter().map(|a| (a.due_at, a.meta.debounce_until)).collect();
    assert_eq!(bounds, [(at(10_000), Some(at(10_000))), (at(5000), Some(at(10_000))), (at(10_000), Some(at(10_000)))]);
    let old_header = header("old");
    let fields: Vec<&str> = old_header.split(',').collect();
    assert_eq!((fields.len(), fields[14], fields[15]), (16, "3", "0"), "priority kept, due at its bound: {old_header}");
    // Created at 0, due at 10 s (lead "7ps"), version 2, bound = due.
    let id36 = base36(i64::try_from(answers[1].meta.id).expect("ids are below 2^53"));
    let due36 = base36(NOW + 10_000);
    assert_eq!(header("new"), format!("S{due36},{id36},7ps,,,,,,,,2,,,,,0"));
    assert_eq!(store.get(&q, &key("new")).await.expect("get"), Some(answers[2].clone()));

    // Outside a burst, a record is what it was before debounce, byte for byte.
    let plain = NewTask::new(q.clone(), key("plain"), at(60_000));
    let plain = store.schedule(vec![plain], at(0)).await.expect("schedule").remove(0).expect("created");
    let plain = plain.task.expect("written");
    let plain36 = base36(i64::try_from(plain.meta.id).expect("ids are below 2^53"));
    assert_eq!(redis(&["HGET", &shard_key("tasks"), "plain"]), format!("S{},{plain36},1aao|", base36(NOW + 60_000)));

    // A lease ends the burst: no 16th field, the record a lease wrote before debounce.
    let batch =
        store.lease(LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(10_000))).await.expect("lease");
    assert_eq!(batch.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["old", "new"]);
    assert!(batch.leases.iter().all(|l| l.task.meta.debounce_until.is_none()), "{batch:?}");
    let old_header = header("old");
    assert_eq!(old_header.split(',').count(), 15, "the priority kept, no bound: {old_header}");
    let fence = base36(i64::try_from(batch.leases[1].token.fence).expect("a small fence"));
    assert_eq!(header("new"), format!("L{due36},{id36},7ps,,,n5c,{fence},7ps,,,2"));
    assert_eq!(store.get(&q, &key("new")).await.expect("get"), Some(batch.leases[1].task.clone()));
}

#[tokio::test]
async fn timing_goes_in_the_body_the_anchor_in_the_13th_field_and_records_from_before_timing_are_kept() {
    let prefix = "format2-timing";
    let shard_key = |name: &str| format!("{prefix}:{{upgrade}}:{name}");
    let record = |k: &str| redis(&["HGET", &shard_key("tasks"), k]);
    // Written before timing: a repeat anchored 500 ms before its due time.
    let old_body = "{\"n\":1}\n{\"r\":{\"every\":\"1m\"}}";
    let old = format!("S{},{},,,,,,,,,,,{}|{old_body}", base36(NOW - 9000), base36(ID as i64 + 41), base36(NOW - 9500));
    // And one of format 1, due later.
    let v1 = format!(r#"0,{},,,,,20,,,{},{},,,0|{{"p":{{"n":4}},"r":{{"every":"1m"}}}}"#, NOW + 9000, ID + 42, NOW);
    redis(&["HSET", &format!("{prefix}:queues"), "upgrade", "1"]);
    redis(&["HSET", &shard_key("tasks"), "old", &old, "v1", &v1]);
    redis(&["ZADD", &shard_key("scheduled"), &(NOW - 9000).to_string(), "old", &(NOW + 9000).to_string(), "v1"]);
    let store = support::on_server_under(prefix).await;
    let q = queue();
    let before = store.get(&q, &key("old")).await.expect("get").expect("the task is there");
    assert_eq!((before.timing.clone(), before.meta.anchor), (Timing::default(), at(-9500)));
    let v1 = store.get(&q, &key("v1")).await.expect("get").expect("the task is there");
    assert_eq!((v1.timing, v1.meta.anchor, v1.payload), (Timing::default(), at(9000), json!({"n": 4})));
    assert!(before.repeat.is_some(), "the repeat policy was read");

    // Rescheduled: the anchor the completion gives, the body untouched.
    let batch = store.lease(LeaseRequest::new(q.clone(), 10, Duration::from_secs(30), at(0))).await.expect("lease");
    let rearm = Completion::Reschedule { at: at(60_500), anchor: at(60_000) };
    let token = batch.leases[0].token.clone();
    store.complete(CompleteRequest::new(token, rearm, at(1))).await.expect("rescheduled");
    let rescheduled = record("old");
    let fields: Vec<&str> = rescheduled.split('|').next().expect("a header").split(',').collect();
    assert_eq!(
        (fields[0], fields.get(12).copied()),
        (&*format!("S{}", base36(NOW + 60_500)), Some(&*base36(NOW + 60_000)))
    );
    assert!(rescheduled.ends_with(&format!("|{old_body}")), "{rescheduled}");
    let read = store.get(&q, &key("old")).await.expect("get").expect("rescheduled");
    assert_eq!((read.meta.anchor, read.due_at, read.timing), (at(60_000), at(60_500), Timing::default()));

    // Without timing, scheduled for its due time: the record written before timing.
    let mut plain = NewTask::new(q.clone(), key("plain"), at(60_000));
    plain.payload = json!({"n": 2});
    plain.repeat = before.repeat.clone();
    let plain = store.schedule(vec![plain], at(0)).await.expect("schedule").remove(0).expect("created");
    let id36 = base36(i64::try_from(plain.task.expect("written").meta.id).expect("ids are below 2^53"));
    let due36 = base36(NOW + 60_000);
    assert_eq!(record("plain"), format!("S{due36},{id36},1aao|{{\"n\":2}}\n{{\"r\":{{\"every\":\"1m\"}}}}"));

    // With timing, scheduled for 10 s before its (jittered) due time: the anchor in the
    // 13th field, the timing after the payload; a replace writes the new task's.
    let mut timed = NewTask::new(q.clone(), key("timed"), at(60_000));
    timed.payload = json!({"n": 3});
    timed.timing.jitter = Some(Duration::from_secs(30));
    timed.scheduled_for = at(50_000);
    let written = store.schedule(vec![timed.clone()], at(0)).await.expect("schedule").remove(0).expect("created");
    let written = written.task.expect("written");
    let id36 = base36(i64::try_from(written.meta.id).expect("ids are below 2^53"));
    let anchor36 = base36(NOW + 50_000);
    let expected = format!("S{due36},{id36},1aao,,,,,,,,,,{anchor36}|{{\"n\":3}}\n{{\"t\":{{\"jitter\":\"30s\"}}}}");
    assert_eq!(record("timed"), expected);
    assert_eq!((written.meta.anchor, written.timing.clone()), (at(50_000), timed.timing.clone()));
    let mut replacement = NewTask::new(q.clone(), key("timed"), at(70_000));
    replacement.payload = json!({"n": 3});
    store.schedule(vec![replacement], at(1)).await.expect("schedule").remove(0).expect("replaced");
    assert_eq!(record("timed"), format!("S{},{id36},{},,,,,1,,,2|{{\"n\":3}}", base36(NOW + 70_000), base36(70_000)));
}
