//! First benchmarks of the library on the embedded store, each beside the naive
//! approach of the seeds, in the same run on the same machine:
//!
//! - **schedule throughput**: concurrent single `schedule` calls (group commit: many
//!   calls share one transaction and one fsync) and batches of 1,000, against the naive
//!   one-durable-commit-per-task insert into the same kind of SQLite table;
//! - **fire lag** (handler start − due time) of N tasks due uniformly over a window,
//!   against a poller that scans for due rows every second (the seeds' "cron scan" /
//!   "ZSet + per-second poller"), on the same data.
//!
//! Run: `cargo run --release --example bench -- [--tasks 10000] [--window-secs 10]`

#![allow(clippy::disallowed_methods, reason = "a benchmark reads the wall clock")]
#![allow(clippy::unwrap_used, reason = "a benchmark stops at the first failure")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use punctual::{Delivery, Engine, EngineConfig, Outcome, SqliteStore, TaskSpec, Timestamp, Worker};
use rusqlite::params;

struct Args {
    tasks: usize,
    window: Duration,
}

fn args() -> Args {
    let mut args = Args { tasks: 10_000, window: Duration::from_secs(10) };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--tasks" => args.tasks = value.parse().expect("--tasks takes a number"),
            "--window-secs" => args.window = Duration::from_secs(value.parse().expect("--window-secs takes a number")),
            other => panic!("unknown flag {other}: use --tasks N and --window-secs S"),
        }
    }
    args
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(lags: &mut [i64]) -> String {
    lags.sort_unstable();
    format!(
        "p50 {:>5} ms  p90 {:>5} ms  p99 {:>5} ms  max {:>5} ms  (n = {})",
        percentile(lags, 50.0),
        percentile(lags, 90.0),
        percentile(lags, 99.0),
        lags.last().copied().unwrap_or(0),
        lags.len()
    )
}

/// Concurrent single-task schedules: `clients` tasks each scheduling in a loop.
async fn schedule_singles(engine: &Engine<SqliteStore>, total: usize, clients: usize) -> f64 {
    let start = Instant::now();
    let mut joins = Vec::new();
    for client in 0..clients {
        let engine = engine.clone();
        joins.push(tokio::spawn(async move {
            for i in (client..total).step_by(clients) {
                let spec = TaskSpec::after(Duration::from_secs(86_400)).payload(serde_json::json!({"n": i}));
                engine.schedule("bench.singles", &format!("task-{i}"), spec).await.expect("schedule");
            }
        }));
    }
    for join in joins {
        join.await.expect("client");
    }
    total as f64 / start.elapsed().as_secs_f64()
}

async fn schedule_batches(engine: &Engine<SqliteStore>, total: usize) -> f64 {
    let start = Instant::now();
    for chunk in 0..total.div_ceil(1000) {
        let items = (chunk * 1000..((chunk + 1) * 1000).min(total))
            .map(|i| {
                (format!("task-{i}"), TaskSpec::after(Duration::from_secs(86_400)).payload(serde_json::json!({"n": i})))
            })
            .collect();
        for result in engine.schedule_many("bench.batches", items).await.expect("batch") {
            result.expect("task");
        }
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// The naive way: one durable transaction per task (an INSERT with autocommit,
/// synchronous = FULL), one task at a time.
fn naive_commit_per_task(dir: &std::path::Path, total: usize) -> f64 {
    let conn = rusqlite::Connection::open(dir.join("naive.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE tasks (key TEXT PRIMARY KEY, due_at INTEGER NOT NULL, payload TEXT NOT NULL);
         CREATE INDEX tasks_due ON tasks (due_at);",
    )
    .unwrap();
    let start = Instant::now();
    for i in 0..total {
        conn.execute(
            "INSERT INTO tasks (key, due_at, payload) VALUES (?1, ?2, ?3)",
            params![format!("task-{i}"), now_ms() + 86_400_000, format!("{{\"n\":{i}}}")],
        )
        .unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// punctual's fire lag for `tasks` due uniformly over `window`.
async fn punctual_fire_lag(engine: &Engine<SqliteStore>, tasks: usize, window: Duration) -> Vec<i64> {
    let lags = Arc::new(Mutex::new(Vec::with_capacity(tasks)));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let worker = {
        let (lags, clock_engine) = (Arc::clone(&lags), engine.clone());
        Worker::new(engine.clone())
            .handle("bench.fire", move |d: Delivery| {
                let lag = clock_engine.clock().now().as_millis() - d.task.due_at.as_millis();
                let mut lags = lags.lock().unwrap();
                lags.push(lag);
                if lags.len() == tasks {
                    let _ = done_tx.send(());
                }
                async { Ok::<_, punctual::BoxError>(Outcome::Done) }
            })
            .concurrency("bench.fire", 64)
            .start()
            .expect("worker")
    };
    let start = now_ms() + 1_000;
    let step = window.as_millis() as f64 / tasks as f64;
    let items: Vec<_> = (0..tasks)
        .map(|i| {
            let due = Timestamp::from_millis(start + (i as f64 * step) as i64);
            (format!("task-{i}"), TaskSpec::at(due))
        })
        .collect();
    for chunk in items.chunks(1000) {
        engine.schedule_many("bench.fire", chunk.to_vec()).await.expect("schedule");
    }
    tokio::time::timeout(window + Duration::from_secs(60), done_rx.recv()).await.expect("all fired");
    worker.shutdown().await;
    Arc::try_unwrap(lags).unwrap().into_inner().unwrap()
}

/// The seeds' poller: every second, select the due rows, handle and delete them.
fn poller_fire_lag(dir: &std::path::Path, tasks: usize, window: Duration) -> Vec<i64> {
    let conn = rusqlite::Connection::open(dir.join("poller.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE tasks (key TEXT PRIMARY KEY, due_at INTEGER NOT NULL);
         CREATE INDEX tasks_due ON tasks (due_at);",
    )
    .unwrap();
    let start = now_ms() + 1_000;
    let step = window.as_millis() as f64 / tasks as f64;
    {
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..tasks {
            tx.execute(
                "INSERT INTO tasks VALUES (?1, ?2)",
                params![format!("task-{i}"), start + (i as f64 * step) as i64],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let mut lags = Vec::with_capacity(tasks);
    while lags.len() < tasks {
        let now = now_ms();
        let tx = conn.unchecked_transaction().unwrap();
        let due: Vec<(String, i64)> = tx
            .prepare("SELECT key, due_at FROM tasks WHERE due_at <= ?1 ORDER BY due_at")
            .unwrap()
            .query_map([now], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (key, due_at) in due {
            lags.push(now_ms() - due_at);
            tx.execute("DELETE FROM tasks WHERE key = ?1", [key]).unwrap();
        }
        tx.commit().unwrap();
        std::thread::sleep(Duration::from_secs(1));
    }
    lags
}

#[tokio::main]
async fn main() {
    let args = args();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("punctual")).unwrap();
    let engine = Engine::start(store, EngineConfig::default());
    println!("punctual bench — {} tasks, fire window {:?}, data in {}", args.tasks, args.window, dir.path().display());

    println!("\nSchedule throughput (durable on return, synchronous = FULL)");
    let singles = schedule_singles(&engine, args.tasks, 64).await;
    println!("  punctual, single calls, 64 concurrent: {singles:>9.0} tasks/s");
    let batches = schedule_batches(&engine, args.tasks).await;
    println!("  punctual, batches of 1,000:            {batches:>9.0} tasks/s");
    let naive_total = args.tasks.min(2_000);
    let naive = naive_commit_per_task(dir.path(), naive_total);
    println!("  naive, one commit per task ({naive_total} tasks): {naive:>6.0} tasks/s");
    println!("  ratio: singles {:.1}×, batches {:.1}× the naive rate", singles / naive, batches / naive);

    println!("\nFire lag, {} tasks due uniformly over {:?}", args.tasks, args.window);
    let mut ours = punctual_fire_lag(&engine, args.tasks, args.window).await;
    println!("  punctual:              {}", summary(&mut ours));
    let dir_path = dir.path().to_owned();
    let (tasks, window) = (args.tasks, args.window);
    let mut polled = tokio::task::spawn_blocking(move || poller_fire_lag(&dir_path, tasks, window)).await.unwrap();
    println!("  poll every 1 s (seeds): {}", summary(&mut polled));
    let ratio = |p: f64| percentile(&polled, p) as f64 / percentile(&ours, p).max(1) as f64;
    println!("  ratio poller / punctual: p50 {:.0}×, p99 {:.0}×", ratio(50.0), ratio(99.0));
    engine.shutdown().await.unwrap();
}
