//! The outbox through the real binary, on the machine's PostgreSQL and MariaDB (a
//! database of its own per test): `punctual outbox init` makes the tables; a server
//! with an `[[outbox]]` table applies each committed row as its request — a schedule
//! becomes the task, a cancel removes it — and never a rolled-back one; rows the API
//! refuses land in the failed table with the API's message; `punctual outbox status`
//! and `/metrics` count them. And the issue's crash test: `kill -9` of the draining
//! server again and again while the application commits and rolls back: every
//! committed row applied exactly once (each key's task created once, never replaced,
//! a cancel never replayed over a later schedule), no rolled-back row applied.
//!
//! Larger runs: `PUNCTUAL_CHAOS_KILLS=10` kills 10 times instead of 3 (RELIABILITY.md).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Api, BIN, server_builder, start};
use punctual_outbox::{Dialect, execute, query_texts};
use punctual_testkit::databases::TestDatabase;
use punctual_testkit::poll_until;
use punctual_testkit::server::ServerProcess;
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// The application's transaction: `statements` between `BEGIN` and `end`.
fn transaction(url: &str, statements: &[String], end: &str) {
    let mut all = vec!["BEGIN".to_owned()];
    all.extend(statements.iter().cloned());
    all.push(end.to_owned());
    runtime().block_on(execute(url, &all.iter().map(String::as_str).collect::<Vec<_>>())).unwrap();
}

fn row(dialect: Dialect, key: &str, op: &str, body: Option<&str>) -> String {
    let key_column = if dialect == Dialect::MySql { "`key`" } else { "key" };
    let body = body.map_or("NULL".to_owned(), |b| format!("'{b}'"));
    format!(
        "INSERT INTO punctual_outbox (queue, {key_column}, op, body) VALUES ('order.cancel', '{key}', '{op}', {body})"
    )
}

fn count(url: &str, table: &str) -> u64 {
    let counted = runtime().block_on(query_texts(url, &format!("SELECT CAST(count(*) AS CHAR(20)) FROM {table}")));
    counted.unwrap()[0].as_deref().unwrap_or("0").trim().parse().unwrap()
}

/// `punctual outbox ARGS…` against `url`; its output, after a zero exit.
fn outbox_command(url: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(BIN).arg("outbox").args(args).arg("--url").arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "punctual outbox {args:?}: {text}");
    text
}

/// A server draining the outbox at `url`, polling every 50 ms.
fn draining_server(url: &str, dir: &tempfile::TempDir) -> ServerProcess {
    start(server_builder().arg("--config").arg(draining_config(url, dir)))
}

/// A config file of one `[[outbox]]`, the one at `url`, polled every 50 ms.
fn draining_config(url: &str, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let config = dir.path().join("punctual.toml");
    std::fs::write(&config, format!("[[outbox]]\nurl = \"{url}\"\npoll = \"50ms\"\nbatch = 50\n")).unwrap();
    config
}

fn committed_rows_become_tasks_and_rolled_back_ones_never(dialect: Dialect) {
    let db = runtime().block_on(TestDatabase::of(dialect));
    let url = db.url();
    outbox_command(&url, &["init"]);
    outbox_command(&url, &["init"]);
    let dir = tempfile::tempdir().unwrap();
    let server = draining_server(&url, &dir);
    let api = Api::of(&server);
    let order = |n: u32| json!({"delay": "30m", "payload": {"order_id": n}}).to_string();
    transaction(
        &url,
        &[row(dialect, "order-1", "schedule", Some(&order(1))), row(dialect, "order-2", "schedule", Some(&order(2)))],
        "COMMIT",
    );
    transaction(&url, &[row(dialect, "order-3", "schedule", Some(&order(3)))], "ROLLBACK");
    transaction(
        &url,
        &[
            row(dialect, "order-2", "cancel", None),
            row(dialect, "order-4", "schedule", Some(r#"{"delay": "soon"}"#)),
            row(dialect, "order-5", "reschedule", None),
        ],
        "COMMIT",
    );
    let applied = poll_until(Duration::from_secs(20), || (count(&url, "punctual_outbox") == 0).then_some(()));
    assert!(applied.is_some(), "the outbox was not drained: {}", server.logs());
    let task = api.task("order.cancel", "order-1").expect(200, "order-1 from its committed row").clone();
    assert_eq!(task["payload"], json!({"order_id": 1}));
    assert_eq!(task["version"], json!(1));
    api.task("order.cancel", "order-2").expect(404, "order-2 cancelled by its later row");
    api.task("order.cancel", "order-3").expect(404, "order-3's transaction rolled back");
    let errors = runtime()
        .block_on(query_texts(&url, "SELECT error FROM punctual_outbox_failed ORDER BY id"))
        .unwrap()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect::<Vec<_>>();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with("delay: "), "the API's message, by field: {errors:?}");
    assert!(errors[1].contains("'reschedule' is not an outbox op"), "{errors:?}");
    let status = outbox_command(&url, &["status"]);
    assert!(status.contains("0 rows waiting") && status.contains("2 failed"), "{status}");
    let metrics = api.get("/metrics").text;
    assert!(metrics.contains("punctual_outbox_applied_total{outbox=\"punctual_outbox:127.0.0.1:"), "{metrics}");
    let detail = api.get("/v1/queues/order.cancel").expect(200, "the queue").clone();
    assert!(detail["outbox"]["rows_waiting"].is_u64(), "the queue shows its outbox rows: {detail}");
    let elsewhere = api.get("/v1/queues/other").expect(200, "another queue").clone();
    assert_eq!(elsewhere["outbox"]["rows_waiting"], json!(0), "{elsewhere}");
    assert!(metrics.contains("punctual_outbox_up{outbox="), "{metrics}");
}

#[test]
fn postgres_committed_rows_become_tasks_and_rolled_back_ones_never() {
    committed_rows_become_tasks_and_rolled_back_ones_never(Dialect::Postgres);
}

#[test]
fn mysql_committed_rows_become_tasks_and_rolled_back_ones_never() {
    committed_rows_become_tasks_and_rolled_back_ones_never(Dialect::MySql);
}

/// The rows this server applied since it started, as `/metrics` counts them.
fn applied_rows(api: &Api) -> u64 {
    let metrics = api.get("/metrics").text;
    metrics
        .lines()
        .filter(|line| line.starts_with("punctual_outbox_applied_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Kills per run unless `PUNCTUAL_CHAOS_KILLS` says otherwise.
fn kills() -> usize {
    std::env::var("PUNCTUAL_CHAOS_KILLS").ok().and_then(|n| n.parse().ok()).unwrap_or(3)
}

/// The application: until `stop`, transactions of 20 keys, committed or (one in five)
/// rolled back. A key gets a schedule (a replay would replace the task: version 2) or,
/// one in three, a schedule, a cancel and a schedule again (a cancel replayed after the
/// last schedule would leave no task). Each key written, and whether committed.
fn application(url: String, dialect: Dialect, stop: Arc<AtomicBool>) -> Vec<(String, bool)> {
    let mut written = Vec::new();
    let mut n = 0u32;
    for transaction_number in 0.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let commit = transaction_number % 5 != 4;
        let mut statements = Vec::new();
        for _ in 0..20 {
            let key = format!("k{n}");
            let payload = |which: &str| json!({"delay": "1h", "payload": {which: n}}).to_string();
            if n.is_multiple_of(3) {
                statements.push(row(dialect, &key, "schedule", Some(&payload("first"))));
                statements.push(row(dialect, &key, "cancel", None));
            }
            statements.push(row(dialect, &key, "schedule", Some(&payload("last"))));
            written.push((key, commit));
            n += 1;
        }
        transaction(&url, &statements, if commit { "COMMIT" } else { "ROLLBACK" });
    }
    written
}

fn each_committed_row_applies_once_through_kill_9(dialect: Dialect) {
    let db = runtime().block_on(TestDatabase::of(dialect));
    let url = db.url();
    outbox_command(&url, &["init"]);
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(Mutex::new(draining_server(&url, &dir)));
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (url, stop) = (url.clone(), Arc::clone(&stop));
        std::thread::spawn(move || application(url, dialect, stop))
    };
    for _ in 0..kills() {
        // At least 300 rows applied since the last start, then the crash, in the
        // middle of whatever batch runs.
        let mut server = server.lock().unwrap();
        let api = Api::of(&server);
        let applied = poll_until(Duration::from_secs(20), || (applied_rows(&api) >= 300).then_some(()));
        assert!(applied.is_some(), "the server applied too little: {}", server.logs());
        server.kill().unwrap();
        server.restart().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let written = producer.join().unwrap();
    let drained = poll_until(Duration::from_secs(60), || (count(&url, "punctual_outbox") == 0).then_some(()));
    let server = server.lock().unwrap();
    assert!(drained.is_some(), "the outbox was not drained after the last restart: {}", server.logs());
    assert_eq!(count(&url, "punctual_outbox_failed"), 0, "no row failed");
    let api = Api::of(&server);
    let (mut committed, mut rolled_back) = (0, 0);
    for (key, commit) in &written {
        let answer = api.task("order.cancel", key);
        if *commit {
            committed += 1;
            let task = answer.expect(200, &format!("{key}: committed, so scheduled")).clone();
            let n: u32 = key[1..].parse().unwrap();
            assert_eq!(task["payload"], json!({"last": n}), "{key}: its last row is the one that stands");
            assert_eq!(task["version"], json!(1), "{key}: created once by its last row, never replaced: {task}");
        } else {
            rolled_back += 1;
            answer.expect(404, &format!("{key}: rolled back, so never applied"));
        }
    }
    println!(
        "{dialect:?}: {} kills, {committed} committed keys (1 or 3 rows each) applied exactly once, \
         {rolled_back} rolled back never applied",
        kills()
    );
    assert!(committed >= 200, "the application committed too little to tell: {committed}");
}

#[test]
fn postgres_each_committed_row_applies_once_through_kill_9() {
    each_committed_row_applies_once_through_kill_9(Dialect::Postgres);
}

#[test]
fn mysql_each_committed_row_applies_once_through_kill_9() {
    each_committed_row_applies_once_through_kill_9(Dialect::MySql);
}

#[test]
fn two_servers_on_one_redis_drain_one_outbox_and_apply_each_row_once() {
    let db = runtime().block_on(TestDatabase::postgres());
    let url = db.url();
    outbox_command(&url, &["init"]);
    let dir = tempfile::tempdir().unwrap();
    let redis = punctual_testkit::redis::server();
    let config = draining_config(&url, &dir);
    let servers: Vec<ServerProcess> =
        (0..2).map(|_| start(server_builder().store(redis.url()).arg("--config").arg(&config))).collect();
    for batch in 0..20 {
        let rows: Vec<String> = (0..50)
            .map(|i| {
                let n = batch * 50 + i;
                row(
                    Dialect::Postgres,
                    &format!("k{n}"),
                    "schedule",
                    Some(&json!({"delay": "1h", "payload": n}).to_string()),
                )
            })
            .collect();
        transaction(&url, &rows, "COMMIT");
    }
    let drained = poll_until(Duration::from_secs(60), || (count(&url, "punctual_outbox") == 0).then_some(()));
    assert!(drained.is_some(), "the outbox was not drained");
    let applied: Vec<u64> = servers.iter().map(|server| applied_rows(&Api::of(server))).collect();
    assert_eq!(applied.iter().sum::<u64>(), 1000, "each row applied once between them: {applied:?}");
    let api = Api::of(&servers[0]);
    for n in 0..1000 {
        let task = api.task("order.cancel", &format!("k{n}")).expect(200, "each committed row's task").clone();
        assert_eq!(task["version"], json!(1), "k{n} created once: {task}");
    }
    println!("two servers drained 1,000 rows: {applied:?} applied by each");
}
