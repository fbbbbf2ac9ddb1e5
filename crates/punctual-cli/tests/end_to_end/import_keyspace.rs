//! `punctual import keyspace` against a private `redis-server` and a real server.
//!
//! Guards against a migration that loses or doubles reminders: a task due at the wrong
//! time or under the wrong key, a payload mangled, a key outside `--match` pulled in, a
//! re-run that imports twice, a dry run that writes, a `--delete-source` that deletes
//! what punctual does not hold, and bad input that fails silently or with the wrong
//! exit status. (That a key changed between the read and the delete is kept is tested
//! on the delete step itself, in `punctual-redis`'s `src/keyspace.rs`: from outside, the
//! window cannot be hit on purpose.)

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use std::collections::BTreeMap;
use std::time::Instant;

use crate::common;

use common::run::{Out, run, run_env};
use common::*;
use punctual_testkit::redis::{RedisServer, server};
use serde_json::{Value, json};

/// Legacy keys under `legacy:` with a TTL: three prefixes, plus a few whose value is not
/// JSON; `TOTAL` in all.
const TOTAL: usize = 10_000;
const NOT_JSON: usize = 10;
/// Keys under `legacy:` without a TTL, and keys outside `--match`.
const FOREVER: usize = 50;
const OTHER: usize = 100;

fn connection(redis: &RedisServer) -> redis::Connection {
    redis::Client::open(redis.url()).unwrap().get_connection().unwrap()
}

/// One legacy key: the Redis key, its value and its expiry (epoch ms).
struct Legacy {
    key: String,
    value: String,
    expire_at: i64,
}

/// Fills Redis the way the legacy writers did (`SET` with an absolute expiry), in one
/// pipeline; returns the keys `--match 'legacy:*'` should import.
fn fill(redis: &RedisServer) -> Vec<Legacy> {
    // Due from two minutes to about four hours ahead, no two alike.
    let base = now_ms() + 120_000;
    let mut legacy = Vec::with_capacity(TOTAL);
    for i in 0..TOTAL - NOT_JSON {
        let prefix = ["order", "flow", "mail"][i % 3];
        let expire_at = base + (i as i64 % 977) * 13_000 + i as i64;
        legacy.push(Legacy { key: format!("legacy:{prefix}:{i}"), value: format!(r#"{{"n":{i}}}"#), expire_at });
    }
    for j in 0..NOT_JSON {
        legacy.push(Legacy { key: format!("legacy:bad:{j}"), value: format!("not json {j}"), expire_at: base + 7 });
    }
    let mut pipe = redis::pipe();
    for item in &legacy {
        pipe.cmd("SET").arg(&item.key).arg(&item.value).arg("PXAT").arg(item.expire_at).ignore();
    }
    for j in 0..FOREVER {
        pipe.cmd("SET").arg(format!("legacy:forever:{j}")).arg("1").ignore();
    }
    for j in 0..OTHER {
        pipe.cmd("SET").arg(format!("other:{j}")).arg("1").arg("PX").arg(600_000).ignore();
    }
    pipe.exec(&mut connection(redis)).unwrap();
    legacy
}

/// Every task of `queue`, by key (pages of the API's largest limit).
fn tasks(api: &Api, queue: &str) -> BTreeMap<String, Value> {
    api.stored_tasks(queue)
}

fn import(server: &str, redis: &RedisServer, args: &[&str]) -> Out {
    let url = redis.url();
    let mut all = vec!["import", "keyspace", "--redis", url.as_str(), "--json"];
    all.extend(args);
    run(server, &all)
}

/// Imports all `legacy:` keys once per payload mode, each into a queue of its own, and
/// checks every task; then runs the first import again.
#[test]
fn ten_thousand_keys_become_exactly_their_tasks_in_each_payload_mode() {
    let redis = server();
    let punctual = start_server();
    let api = Api::of(&punctual);
    let legacy = fill(&redis);

    for (queue, mode) in [("imp.value", "value"), ("imp.json", "json"), ("imp.none", "none")] {
        let started = Instant::now();
        let out = import(
            &punctual.url(),
            &redis,
            &["--match", "legacy:*", "--strip-prefix", "legacy:", "--queue", queue, "--payload", mode],
        );
        let took = started.elapsed();
        out.expect_code(0, mode);
        let counts = out.json();
        let not_json = if mode == "json" { NOT_JSON } else { 0 };
        assert_eq!(counts["scanned"], TOTAL + FOREVER, "{mode}: {counts}");
        assert_eq!(counts["imported"], TOTAL - not_json, "{mode}: {counts}");
        assert_eq!(counts["skipped_no_ttl"], FOREVER, "{mode}: {counts}");
        assert_eq!(counts["skipped_not_json"], not_json, "{mode}: {counts}");
        assert_eq!(counts["already_present"], 0, "{mode}: {counts}");
        eprintln!(
            "--payload {mode}: {} keys in {took:?} ({:.0} keys/s)",
            TOTAL + FOREVER,
            (TOTAL + FOREVER) as f64 / took.as_secs_f64()
        );
        if mode == "json" {
            out.expect_contains(&["legacy:bad:0", "not JSON"], "a value that is not JSON is named");
        }

        let stored = tasks(&api, queue);
        assert_eq!(stored.len(), TOTAL - not_json, "{mode}: exactly the imported keys");
        // The task's delay is the key's remaining time when Redis was read, and the
        // server adds it to its own now when the batch arrives: the task is late by the
        // time from the read to the store, which lies inside this run, and never early
        // (1 ms for both clocks truncating to milliseconds).
        let late_at_most = i64::try_from(took.as_millis()).unwrap() + 1;
        for item in &legacy {
            let key = item.key.strip_prefix("legacy:").unwrap();
            let Some(task) = stored.get(key) else {
                assert!(mode == "json" && key.starts_with("bad:"), "{mode}: no task for {key}");
                continue;
            };
            let due = parse_time(&task["due_at"]);
            assert!(
                (item.expire_at - 1..=item.expire_at + late_at_most).contains(&due),
                "{mode}: {key} is due {} ms after its key's expiry (allowed -1..={late_at_most})",
                due - item.expire_at
            );
            let payload = match mode {
                "value" => json!(item.value),
                "json" => serde_json::from_str(&item.value).unwrap(),
                _ => Value::Null,
            };
            assert_eq!(task["payload"], payload, "{mode}: {key}");
        }
    }
    assert!(!tasks(&api, "imp.value").keys().any(|k| k.starts_with("other:") || k.starts_with("legacy:")));

    // Again: everything is there already, nothing is touched.
    let before = tasks(&api, "imp.value");
    let out =
        import(&punctual.url(), &redis, &["--match", "legacy:*", "--strip-prefix", "legacy:", "--queue", "imp.value"]);
    out.expect_code(0, "re-run");
    let counts = out.json();
    assert_eq!(
        (counts["imported"].as_u64(), counts["already_present"].as_u64()),
        (Some(0), Some(TOTAL as u64)),
        "{counts}"
    );
    let after = tasks(&api, "imp.value");
    assert_eq!(before.len(), after.len());
    for (key, task) in &before {
        assert_eq!(
            (&after[key]["version"], &after[key]["due_at"]),
            (&task["version"], &task["due_at"]),
            "{key} untouched"
        );
    }
}

/// Each key's type, value and expiry, to compare before and after.
fn snapshot(redis: &RedisServer) -> BTreeMap<String, (String, String, i64)> {
    let mut conn = connection(redis);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
            let value: String =
                if kind == "string" { redis::cmd("GET").arg(&key).query(&mut conn).unwrap() } else { String::new() };
            let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(&mut conn).unwrap();
            (key, (kind, value, expire_at))
        })
        .collect()
}

fn small_fill(redis: &RedisServer) {
    let mut conn = connection(redis);
    let mut pipe = redis::pipe();
    for i in 0..20 {
        pipe.cmd("SET").arg(format!("legacy:{i}")).arg(format!("v{i}")).arg("PX").arg(600_000 + i).ignore();
    }
    pipe.cmd("SET").arg("legacy:forever").arg("1").ignore();
    pipe.cmd("HSET").arg("legacy:hash").arg("f").arg("1").ignore();
    pipe.cmd("PEXPIRE").arg("legacy:hash").arg(600_000).ignore();
    pipe.cmd("SET").arg("other:1").arg("1").arg("PX").arg(600_000).ignore();
    pipe.exec(&mut conn).unwrap();
}

#[test]
fn a_dry_run_reads_and_reports_but_writes_nothing() {
    let redis = server();
    let punctual = start_server();
    let api = Api::of(&punctual);
    small_fill(&redis);
    let before = snapshot(&redis);
    let out = import(
        &punctual.url(),
        &redis,
        &["--match", "legacy:*", "--strip-prefix", "legacy:", "--queue", "imp.dry", "--delete-source", "--dry-run"],
    );
    out.expect_code(0, "dry run");
    let counts = out.json();
    assert_eq!(counts["dry_run"], true);
    assert_eq!((counts["imported"].as_u64(), counts["deleted"].as_u64()), (Some(20), Some(20)), "{counts}");
    assert_eq!((counts["skipped_no_ttl"].as_u64(), counts["skipped_not_string"].as_u64()), (Some(1), Some(1)));
    assert_eq!(snapshot(&redis), before, "Redis untouched: the same keys, values and expiries");
    let queue = api.get("/v1/queues/imp.dry").expect(200, "queue").clone();
    assert_eq!(queue["scheduled"], 0, "no task created: {queue}");
    assert!(api.get("/v1/queues/imp.dry/tasks").json["tasks"].as_array().unwrap().is_empty());

    // Without --json, the summary says it was a dry run, with what would happen.
    let url = redis.url();
    let text = run(
        &punctual.url(),
        &["import", "keyspace", "--redis", &url, "--match", "legacy:*", "--queue", "imp.dry", "--dry-run"],
    );
    text.expect_code(0, "dry run, text");
    text.expect_contains(&["dry run", "nothing was written", "would be imported"], "dry-run summary");
}

#[test]
fn delete_source_removes_the_imported_keys_and_nothing_else() {
    let redis = server();
    let punctual = start_server();
    let api = Api::of(&punctual);
    small_fill(&redis);
    let mut conn = connection(&redis);
    // About to expire (inside --min-ttl): left to the listener, not imported.
    redis::cmd("SET").arg("legacy:soon").arg("s").arg("PX").arg(60_000).exec(&mut conn).unwrap();
    let out = import(
        &punctual.url(),
        &redis,
        &[
            "--match",
            "legacy:*",
            "--strip-prefix",
            "legacy:",
            "--queue",
            "imp.move",
            "--delete-source",
            "--min-ttl",
            "2m",
        ],
    );
    out.expect_code(0, "import --delete-source");
    let counts = out.json();
    assert_eq!(counts["imported"], 20, "{counts}");
    assert_eq!(counts["deleted"], 20, "{counts}");
    assert_eq!(counts["left_expiring_soon"], 1, "{counts}");
    assert_eq!((counts["kept_changed"].as_u64(), counts["gone_before_delete"].as_u64()), (Some(0), Some(0)));
    let left: Vec<String> = snapshot(&redis).into_keys().collect();
    assert_eq!(left, ["legacy:forever", "legacy:hash", "legacy:soon", "other:1"], "only what was not imported stays");
    let stored = tasks(&api, "imp.move");
    assert_eq!(stored.len(), 20);
    assert_eq!(stored["7"]["payload"], "v7");

    // A re-run finds nothing left to import or delete (the key left to the listener stays so).
    let again = import(
        &punctual.url(),
        &redis,
        &[
            "--match",
            "legacy:*",
            "--strip-prefix",
            "legacy:",
            "--queue",
            "imp.move",
            "--delete-source",
            "--min-ttl",
            "2m",
        ],
    );
    let counts = again.expect_code(0, "re-run").json();
    assert_eq!((counts["imported"].as_u64(), counts["deleted"].as_u64()), (Some(0), Some(0)), "{counts}");
}

#[test]
fn keys_without_the_prefix_or_that_are_no_task_keys_are_named_and_skipped() {
    let redis = server();
    let punctual = start_server();
    let api = Api::of(&punctual);
    let mut conn = connection(&redis);
    redis::pipe()
        .cmd("SET")
        .arg("legacy:ok")
        .arg("1")
        .arg("PX")
        .arg(600_000)
        .ignore()
        .cmd("SET")
        .arg("elsewhere:x")
        .arg("1")
        .arg("PX")
        .arg(600_000)
        .ignore()
        .cmd("SET")
        .arg("legacy:bad\u{1}key")
        .arg("1")
        .arg("PX")
        .arg(600_000)
        .ignore()
        .exec(&mut conn)
        .unwrap();
    let out = import(&punctual.url(), &redis, &["--match", "*", "--strip-prefix", "legacy:", "--queue", "imp.prefix"]);
    out.expect_code(0, "skips are counted, not errors");
    let counts = out.json();
    assert_eq!((counts["imported"].as_u64(), counts["skipped_no_prefix"].as_u64()), (Some(1), Some(1)), "{counts}");
    assert_eq!(counts["skipped_invalid_key"], 1, "{counts}");
    out.expect_contains(&["'elsewhere:x': does not start with --strip-prefix", "control character"], "named");
    assert_eq!(tasks(&api, "imp.prefix").into_keys().collect::<Vec<_>>(), ["ok"]);
}

/// A task the server refuses (its payload is over the 64 KiB limit) is not stored, so
/// its key must stay in Redis for the listener: deleting it would lose the reminder.
#[test]
fn a_key_whose_task_the_server_refuses_is_kept_in_redis_and_the_exit_status_is_1() {
    let redis = server();
    let punctual = start_server();
    let api = Api::of(&punctual);
    let mut conn = connection(&redis);
    redis::pipe()
        .cmd("SET")
        .arg("legacy:small")
        .arg("1")
        .arg("PX")
        .arg(600_000)
        .ignore()
        .cmd("SET")
        .arg("legacy:huge")
        .arg("x".repeat(70_000))
        .arg("PX")
        .arg(600_000)
        .ignore()
        .exec(&mut conn)
        .unwrap();
    let out = import(
        &punctual.url(),
        &redis,
        &["--match", "legacy:*", "--strip-prefix", "legacy:", "--queue", "imp.refused", "--delete-source"],
    );
    out.expect_code(1, "the server refused a key");
    out.expect_contains(&["'legacy:huge': refused by the server", "refused 1 of the keys"], "named, with the reason");
    let counts = out.json();
    assert_eq!(
        (counts["imported"].as_u64(), counts["refused"].as_u64(), counts["deleted"].as_u64()),
        (Some(1), Some(1), Some(1))
    );
    let left: Vec<String> = snapshot(&redis).into_keys().collect();
    assert_eq!(left, ["legacy:huge"], "the refused key stays for the listener");
    assert_eq!(tasks(&api, "imp.refused").into_keys().collect::<Vec<_>>(), ["small"]);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let redis = server();
    let url = redis.url();
    let base = ["import", "keyspace", "--redis", url.as_str(), "--queue", "imp.bad"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        // A server that is not there: usage errors are found before any call.
        run(&format!("http://127.0.0.1:{}", free_port()), &args)
    };

    let out = with(&["--match", "legacy:*", "--payload", "yaml"]);
    out.expect_code(2, "unknown --payload");
    out.expect_contains(&["--payload", "value", "json", "none"], "the modes are listed");

    let out = with(&["--match", "legacy:[ab", "--dry-run"]);
    out.expect_code(2, "unclosed [");
    out.expect_contains(&["not a valid pattern", "no closing ]"], "bad pattern");

    let out = with(&["--match", "order:*", "--strip-prefix", "legacy:", "--dry-run"]);
    out.expect_code(2, "a prefix no matched key can start with");
    out.expect_contains(&["none starts with --strip-prefix 'legacy:'"], "prefix vs pattern");

    let out = run_env(&["import", "keyspace", "--redis", "http://x", "--match", "*", "--queue", "q"], &[]);
    out.expect_code(2, "not a Redis URL");
    out.expect_contains(&["not a Redis URL", "redis://127.0.0.1:6379"], "URL");

    let out = run_env(&["import", "keyspace", "--redis", &url, "--match", "*", "--queue", "no spaces"], &[]);
    out.expect_code(2, "bad queue name");

    let nowhere = format!("redis://127.0.0.1:{}", free_port());
    let out = run_env(&["import", "keyspace", "--redis", &nowhere, "--match", "*", "--queue", "q"], &[]);
    out.expect_code(1, "Redis unreachable");
    out.expect_contains(&["cannot reach Redis at", "is it running"], "what to check");

    let out = with(&["--match", "legacy:*"]);
    out.expect_code(1, "punctual unreachable");
    out.expect_contains(&["cannot reach the punctual server", "punctual serve"], "what to start");
}

#[test]
fn import_keyspace_help_teaches_by_example() {
    let out = run_env(&["import", "keyspace", "--help"], &[]);
    out.expect_code(0, "help");
    out.expect_contains(
        &["Examples:", "punctual import keyspace --redis redis://", "--delete-source", "if_exists keep", "Exit status"],
        "help",
    );
}

/// A loopback port nobody listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
