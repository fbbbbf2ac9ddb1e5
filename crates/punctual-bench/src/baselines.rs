//! The seeds' approaches, fed the same workloads as punctual on the same machine, so
//! every figure of punctual has the naive one beside it:
//!
//! - **keyspace notifications**: a key per task set to expire at its due time (`SET …
//!   PXAT`), with `notify-keyspace-events Ex` and a subscriber on
//!   `__keyevent@0__:expired`; the lag is event receipt − due. Redis publishes an
//!   expiry only when its expiry cycle deletes the key, so events come late; an event
//!   that never arrives within the window + 30 s is counted as missing.
//! - **a ZSet polled once a second**: `ZADD` of every task scored by due time, then
//!   every second `ZRANGEBYSCORE -inf now` and `ZREM` of what was due (the seeds' cron
//!   scan and per-second poller); the lag is the poll's handling time − due.
//! - **one SQLite commit per task**: an `INSERT` in its own durable transaction (WAL,
//!   `synchronous = FULL`), one task at a time, the naive way to make each schedule call
//!   durable.
//!
//! Every Redis key used starts with the run's prefix; the poller's ZSet is deleted and
//! `notify-keyspace-events` is put back as it was when done.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures_util::StreamExt;

use crate::stats::now_millis;

/// How long after the window a missing keyspace event is still waited for.
const KEYSPACE_GRACE: Duration = Duration::from_secs(30);
/// Lead time between scheduling and the first due time, as for punctual.
const LEAD_MS: i64 = 1_000;

/// Lags of a baseline, and how many tasks never fired.
#[derive(Debug)]
pub(crate) struct BaselineRun {
    pub(crate) lags: Vec<i64>,
    pub(crate) missing: usize,
}

async fn connect(url: &str) -> Result<(redis::Client, redis::aio::MultiplexedConnection)> {
    let client = redis::Client::open(url).with_context(|| format!("bad Redis URL {url}"))?;
    let conn = client.get_multiplexed_async_connection().await.with_context(|| format!("cannot connect to {url}"))?;
    Ok((client, conn))
}

/// Due time of task `i` of `tasks` spread over `window` from `start`.
fn due(start: i64, i: usize, tasks: usize, window: Duration) -> i64 {
    start + (i as f64 * window.as_millis() as f64 / tasks as f64) as i64
}

/// The seeds' keyspace notifications, for `tasks` due uniformly over `window`.
pub(crate) async fn keyspace(url: &str, prefix: &str, tasks: usize, window: Duration) -> Result<BaselineRun> {
    let (client, mut conn) = connect(url).await?;
    let previous: Vec<String> =
        redis::cmd("CONFIG").arg("GET").arg("notify-keyspace-events").query_async(&mut conn).await?;
    let previous = previous.get(1).cloned().unwrap_or_default();
    redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("Ex").query_async::<()>(&mut conn).await?;
    let result = keyspace_run(&client, &mut conn, prefix, tasks, window).await;
    redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg(previous).query_async::<()>(&mut conn).await?;
    result
}

async fn keyspace_run(
    client: &redis::Client,
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    tasks: usize,
    window: Duration,
) -> Result<BaselineRun> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe("__keyevent@0__:expired").await?;
    let mut events = pubsub.into_on_message();
    let start = now_millis() + LEAD_MS;
    for chunk in (0..tasks).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let due = due(start, i, tasks, window);
            pipe.cmd("SET").arg(format!("{prefix}:remind:{due}:{i}")).arg("").arg("PXAT").arg(due).ignore();
        }
        pipe.query_async::<()>(conn).await?;
    }
    let mut lags = Vec::with_capacity(tasks);
    let deadline = Instant::now() + window + Duration::from_millis(LEAD_MS as u64) + KEYSPACE_GRACE;
    while lags.len() < tasks {
        let Ok(Some(message)) = tokio::time::timeout_at(deadline.into(), events.next()).await else { break };
        let key: String = message.get_payload()?;
        // Other clients' keys may expire on a shared Redis: only ours count.
        let Some(rest) = key.strip_prefix(prefix).and_then(|k| k.strip_prefix(":remind:")) else { continue };
        let due: i64 = rest.split(':').next().and_then(|d| d.parse().ok()).context("a malformed key")?;
        lags.push(now_millis() - due);
    }
    let missing = tasks - lags.len();
    Ok(BaselineRun { lags, missing })
}

/// A ZSet polled once a second, for `tasks` due uniformly over `window`.
pub(crate) async fn poller(url: &str, prefix: &str, tasks: usize, window: Duration) -> Result<BaselineRun> {
    let (_client, mut conn) = connect(url).await?;
    let zset = format!("{prefix}:poller:due");
    let start = now_millis() + LEAD_MS;
    for chunk in (0..tasks).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let due = due(start, i, tasks, window);
            pipe.cmd("ZADD").arg(&zset).arg(due).arg(format!("{due}:{i}")).ignore();
        }
        pipe.query_async::<()>(&mut conn).await?;
    }
    let mut lags = Vec::with_capacity(tasks);
    let give_up = Instant::now() + window + Duration::from_millis(LEAD_MS as u64) + KEYSPACE_GRACE;
    // The baseline measured: a hand-built poller looks once a second.
    let mut every_second = tokio::time::interval(Duration::from_secs(1));
    every_second.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while lags.len() < tasks && Instant::now() < give_up {
        every_second.tick().await;
        let now = now_millis();
        let due: Vec<String> =
            redis::cmd("ZRANGEBYSCORE").arg(&zset).arg("-inf").arg(now).query_async(&mut conn).await?;
        for member in &due {
            let at: i64 = member.split(':').next().and_then(|d| d.parse().ok()).context("a malformed member")?;
            lags.push(now_millis() - at);
        }
        if !due.is_empty() {
            redis::cmd("ZREM").arg(&zset).arg(&due).query_async::<()>(&mut conn).await?;
        }
    }
    redis::cmd("DEL").arg(&zset).query_async::<()>(&mut conn).await?;
    let missing = tasks - lags.len();
    Ok(BaselineRun { lags, missing })
}

/// Tasks per second of one durable SQLite commit per task, for `duration`, in a new
/// database in `dir`.
pub(crate) fn naive_commit_per_task(dir: &Path, duration: Duration) -> Result<(u64, Duration)> {
    std::fs::create_dir_all(dir)?;
    let conn = rusqlite::Connection::open(dir.join("naive.db")).context("cannot open the naive database")?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS tasks (key TEXT PRIMARY KEY, due_at INTEGER NOT NULL, payload TEXT NOT NULL);
         CREATE INDEX IF NOT EXISTS tasks_due ON tasks (due_at);",
    )?;
    let started = Instant::now();
    let deadline = started + duration;
    let mut count = 0u64;
    while Instant::now() < deadline {
        conn.execute(
            "INSERT INTO tasks (key, due_at, payload) VALUES (?1, ?2, ?3)",
            rusqlite::params![format!("task-{count}"), now_millis() + 86_400_000, format!("{{\"n\":{count}}}")],
        )?;
        count += 1;
    }
    Ok((count, started.elapsed()))
}
