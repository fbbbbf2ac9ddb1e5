//! `soak`: a `punctual serve` under steady load for a long time, killed with `kill -9`
//! and restarted on the same store every `--kill-every`, its Redis (when private)
//! killed and restarted once mid-run; then a drain and an account of every task.
//!
//! The load is what users run: a producer schedules `--rate` one-off tasks a second
//! ([`NEAR_SHARE`] of them due within [`NEAR_MAX_MS`], in one batch call per tick; the
//! rest due [`FAR_MIN_MS`]–[`FAR_MAX_MS`] out, one `PUT` each, never later than the
//! end of the load, a third of those cancelled [`CANCEL_AFTER`] later), [`REPEATING`]
//! tasks repeat every [`REPEAT_EVERY`] (two of them cancelled at half time), and
//! [`PULL_LOOPS`] pull loops lease and acknowledge over HTTP. A call that fails (the
//! server is down, or its Redis) is not retried with the same keys: only what the
//! server acknowledged counts.
//!
//! What the run holds as true, and checks at the end:
//! - **lost** = one-off tasks whose schedule was acknowledged (2xx, `created`), not
//!   cancelled (a cancel answered `204`, or one left unanswered: it may have been
//!   applied), never leased, and no longer stored (`GET` answers 404); plus repeating
//!   tasks, not cancelled, no longer stored at the end. Must be 0: the run fails
//!   otherwise.
//! - **fired after cancel**: a lease of a task whose cancel was confirmed before the
//!   task was due. Must be 0: the run fails otherwise.
//! - **duplicates**: a delivery id (one occurrence of a task) leased more than once.
//!   At-least-once allows it only when an earlier lease's ack was not confirmed
//!   (`204`); each is attributed to the kill or Redis restart during which that ack
//!   failed, or to "other" when it failed at another time; one whose every earlier ack
//!   was confirmed is "unexplained" (a bug).
//!
//! Lag is lease received − due, on this machine's clock (the server's and Redis' are
//! the same machine's). Memory is the server's `VmRSS`, read at the end of each minute
//! and just before each kill: the server restarts every `--kill-every`, so the memory
//! before each kill (always after the same uptime) is what shows growth across the run.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use punctual_client::{Client, ClientError};
use punctual_core::Timestamp;
use punctual_private_redis::{Persistence, RedisServer};
use serde::Serialize;
use serde_json::{Value, json};

use crate::args::{BenchArgs, BenchStore};
use crate::report::{figures, table, thousands};
use crate::serve::{ServeStore, Served};
use crate::stats::{LagStats, now_millis, percentile, rss_kib};

/// The one queue of the run (pull workers: no action).
const QUEUE: &str = "soak";
const PULL_LOOPS: usize = 4;
/// A pull loop's lease call: `max`, `lease`, `wait`.
const LEASE_MAX: u32 = 100;
const LEASE: &str = "10s";
const LONG_POLL: &str = "2s";
const REPEATING: usize = 10;
const REPEAT_EVERY: &str = "5s";
/// Repeating tasks cancelled at half time (the first ones).
const REPEATING_CANCELLED: usize = 2;
/// Share of one-off tasks due soon, scheduled in batches.
const NEAR_SHARE: f64 = 0.9;
const NEAR_MAX_MS: i64 = 5_000;
const FAR_MIN_MS: i64 = 10_000;
const FAR_MAX_MS: i64 = 90_000;
/// Share of the far tasks cancelled, [`CANCEL_AFTER`] after they were acknowledged.
const CANCEL_SHARE: f64 = 1.0 / 3.0;
const CANCEL_AFTER: Duration = Duration::from_secs(2);
/// The producer's tick: one batch call per tick.
const TICK: Duration = Duration::from_millis(100);
/// Pause after a failed call (the server or its Redis is down) before the next one.
const RETRY: Duration = Duration::from_millis(50);
/// Longest wait for one call to the server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the private redis-server stays down when it is killed mid-run.
const REDIS_DOWN: Duration = Duration::from_secs(5);
/// Longest wait, after the load, for every acknowledged task to be leased.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(180);
/// Longest wait for the server to serve again after its Redis came back.
const SERVING_TIMEOUT: Duration = Duration::from_secs(60);
/// Memory growth is measured from this point of the run on (warm-up excluded).
const GROWTH_FROM_MS: i64 = 5 * 60_000;
const GROWTH_GOAL_PCT: f64 = 5.0;
/// An ack that failed this close to a kill or the Redis outage is attributed to it.
const ATTRIBUTION_MARGIN_MS: i64 = 2_000;
const MINUTE_MS: i64 = 60_000;

/// How an ack ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ack {
    /// `204`.
    Confirmed,
    /// Answered with another status (`409`: the lease expired or the task was cancelled).
    Refused,
    /// No answer: the call failed (the server died, its Redis was down, a timeout).
    Unanswered,
}

/// One lease received by a pull loop, and how its ack ended.
#[derive(Debug)]
struct Delivery {
    key: String,
    delivery_id: String,
    due_ms: i64,
    leased_ms: i64,
    ack: Ack,
    /// When the ack call ended.
    ack_ms: i64,
}

/// Everything the clients saw, shared by the producer, the pull loops and the run.
#[derive(Debug, Default)]
struct Record {
    /// One-off tasks whose schedule was acknowledged: key → due (epoch ms).
    scheduled: HashMap<String, i64>,
    /// One-off tasks whose schedule failed or was not answered (not counted).
    schedules_failed: u64,
    /// Repeating tasks whose schedule was acknowledged.
    repeating: Vec<String>,
    /// Confirmed cancels (`204`): key → when the answer arrived (epoch ms).
    cancelled: HashMap<String, i64>,
    /// Cancels left unanswered: they may have been applied.
    cancels_unconfirmed: HashSet<String>,
    /// Cancels answered `404` (the task had fired already).
    cancels_not_found: u64,
    deliveries: Vec<Delivery>,
    lease_calls_failed: u64,
}

fn lock(record: &Mutex<Record>) -> std::sync::MutexGuard<'_, Record> {
    record.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A `kill -9` of the server and its restart.
#[derive(Debug, Serialize)]
struct Kill {
    /// Seconds into the run.
    at_s: f64,
    /// The server's resident memory just before (KiB).
    rss_before_kib: Option<u64>,
    /// Kill → the restarted server answers `/readyz`.
    restart_ms: u64,
    #[serde(skip)]
    at_ms: i64,
    #[serde(skip)]
    back_ms: i64,
}

/// The kill and restart of the private redis-server, the punctual server staying up.
#[derive(Debug, Serialize)]
struct RedisRestart {
    at_s: f64,
    /// How long redis-server was down (killed → answering PING again).
    down_ms: u64,
    /// Kill → the punctual server answers a read of the queue again.
    serving_again_ms: u64,
    #[serde(skip)]
    at_ms: i64,
    #[serde(skip)]
    back_ms: i64,
}

/// The memory reading at the end of one minute.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kib: Option<u64>,
    redis_rss_kib: Option<u64>,
    /// Seconds since the server last (re)started.
    uptime_s: f64,
}

/// One minute of the run (the drain's minutes follow the load's).
#[derive(Debug, Serialize)]
struct Minute {
    minute: u64,
    /// Leases received in the minute, and their lag (lease received − due), ms.
    leases: usize,
    lag_p50_ms: i64,
    lag_p99_ms: i64,
    lag_max_ms: i64,
    /// The server's resident memory at the end of the minute (KiB), and its uptime then.
    rss_kib: Option<u64>,
    uptime_s: Option<f64>,
    /// The private redis-server's resident memory then (KiB).
    redis_rss_kib: Option<u64>,
    kills: usize,
}

/// Duplicates (a delivery id leased more than once), by cause.
#[derive(Debug, Default, Serialize)]
struct Duplicates {
    total: u64,
    /// An earlier lease's ack failed during a kill (kill → restarted, ± 2 s).
    ack_unconfirmed_at_kill: u64,
    /// An earlier lease's ack failed while Redis was down (or the server reconnecting).
    ack_unconfirmed_at_redis_restart: u64,
    /// An earlier lease's ack failed at another time (e.g. a timeout).
    ack_unconfirmed_other: u64,
    /// Every earlier lease's ack was confirmed: not explained by at-least-once.
    unexplained: u64,
}

/// Memory growth across the run, after the warm-up.
#[derive(Debug, Serialize)]
struct Growth {
    /// What was compared: the memory just before each kill, or the minutes' readings.
    basis: &'static str,
    /// The first and last readings at or after 5 minutes (KiB), and the seconds they were taken.
    first_kib: u64,
    first_at_s: f64,
    last_kib: u64,
    last_at_s: f64,
    pct: f64,
    goal_pct: f64,
    met: bool,
}

#[derive(Debug, Serialize)]
struct Settings {
    rate_per_s: u32,
    pull_loops: usize,
    lease_max: u32,
    lease: &'static str,
    long_poll: &'static str,
    repeating: usize,
    repeat_every: &'static str,
    near_share: f64,
    near_max_ms: i64,
    far_ms: [i64; 2],
    cancel_share_of_far: f64,
}

/// The soak's results.
#[derive(Debug, Serialize)]
pub(crate) struct SoakReport {
    workload: &'static str,
    target: String,
    store: String,
    duration_s: f64,
    kill_every_s: f64,
    settings: Settings,
    /// One-off tasks acknowledged, and schedules that failed (not counted).
    scheduled: u64,
    schedules_failed: u64,
    repeating: usize,
    cancels_confirmed: u64,
    cancels_unconfirmed: u64,
    cancels_not_found: u64,
    /// Acknowledged one-off tasks whose cancel was confirmed or left unanswered (the
    /// cancels above include the repeating tasks'). With `delivered`, `still_present`
    /// and the one-off part of `lost`, these partition `scheduled`.
    one_off_cancelled: u64,
    leases: u64,
    lease_calls_failed: u64,
    acks_confirmed: u64,
    acks_refused: u64,
    acks_unanswered: u64,
    /// Acknowledged, not cancelled one-off tasks leased at least once.
    delivered: u64,
    /// Acknowledged, not cancelled, never leased, but still stored at the end.
    still_present: u64,
    lost: u64,
    /// Some lost keys, to look up (at most 20).
    lost_keys: Vec<String>,
    fired_after_cancel: u64,
    repeat_occurrences: u64,
    /// The longest time between two occurrences of a repeating task (not cancelled).
    repeat_max_gap_ms: i64,
    duplicates: Duplicates,
    kill_count: usize,
    kills: Vec<Kill>,
    redis_restart: Option<RedisRestart>,
    /// Load end → every acknowledged task leased.
    drain_ms: u64,
    lag: LagStats,
    minutes: Vec<Minute>,
    memory_growth: Option<Growth>,
    notes: Vec<String>,
}

/// The Redis a soak runs on.
enum SoakRedis {
    Private(RedisServer),
    /// An existing one: not restarted; the run's keys deleted after.
    External(String),
}

/// Runs the soak and emits its report (a table, or `--json` a one-element array with
/// the table on stderr); fails when anything acknowledged was lost.
pub(crate) async fn run(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.server.is_some() {
        bail!(
            "soak kills and restarts the server it starts, so it cannot run against --server; \
             pass --store embedded, private-redis or redis://HOST:PORT instead"
        );
    }
    let prefix = crate::run_prefix();
    let mut redis = match &args.store {
        BenchStore::Embedded => None,
        BenchStore::Redis(url) => Some(SoakRedis::External(url.clone())),
        BenchStore::PrivateRedis => Some(SoakRedis::Private(private_redis_aof()?)),
        BenchStore::PrivateCluster => bail!(crate::PRIVATE_CLUSTER_IS_FOR_PENDING),
    };
    let redis_url = match &redis {
        None => None,
        Some(SoakRedis::Private(server)) => Some(server.url()),
        Some(SoakRedis::External(url)) => Some(url.clone()),
    };
    let store = match &redis_url {
        None => ServeStore::Embedded,
        Some(url) => ServeStore::Redis { url, prefix: &prefix },
    };
    let mut served = Served::start(store, args.data.as_deref(), None).await.context("soak")?;
    let store_name = match &redis {
        None => "embedded store".to_owned(),
        Some(SoakRedis::Private(server)) => {
            format!("private redis-server at {} (AOF, appendfsync always)", server.url())
        }
        Some(SoakRedis::External(url)) => format!("Redis at {url}"),
    };
    let target = format!(
        "punctual serve at {} (started for the run, on the {store_name})",
        served.url().as_str().trim_end_matches('/')
    );
    let client = Client::with_timeout(served.url(), None, REQUEST_TIMEOUT)?;
    let record = Arc::new(Mutex::new(Record::default()));
    let quiet = args.quiet;
    let duration_ms = args.duration.as_millis() as i64;
    let kill_every_ms = args.kill_every.as_millis() as i64;
    if !quiet {
        eprintln!(
            "soak: {}s on {target}, {}/s one-off tasks, {REPEATING} repeating, kill -9 every {}s",
            args.duration.as_secs_f64(),
            args.rate,
            args.kill_every.as_secs_f64()
        );
    }

    let start = Instant::now();
    let start_ms = now_millis();
    let end_ms = start_ms + duration_ms;
    schedule_repeating(&client, &record).await?;
    let stop_producing = Arc::new(AtomicBool::new(false));
    let stop_working = Arc::new(AtomicBool::new(false));
    let producer = tokio::spawn(producer(
        client.clone(),
        Arc::clone(&record),
        Arc::clone(&stop_producing),
        args.rate,
        start_ms + duration_ms / 2,
        end_ms,
    ));
    let workers: Vec<_> = (0..PULL_LOOPS)
        .map(|_| tokio::spawn(pull_loop(client.clone(), Arc::clone(&record), Arc::clone(&stop_working))))
        .collect();

    // The clock of the run: kills, the Redis restart, a memory reading each minute.
    let mut kills = Vec::new();
    let mut redis_restart = None;
    let restart_redis_at = match &redis {
        Some(SoakRedis::Private(_)) => {
            // Half-way between two kills, near the middle of the run.
            let at = (duration_ms / 2 / kill_every_ms) * kill_every_ms + kill_every_ms / 2;
            Some(if at < duration_ms { at } else { duration_ms / 2 })
        }
        _ => None,
    };
    let mut samples: Vec<Sample> = Vec::new();
    let mut started_at = Instant::now();
    let mut next_kill = kill_every_ms;
    loop {
        let elapsed = start.elapsed().as_millis() as i64;
        let next_minute = (samples.len() as i64 + 1) * MINUTE_MS;
        let minutes_due = (duration_ms as u64).div_ceil(MINUTE_MS as u64) as i64;
        if elapsed >= next_minute || (elapsed >= duration_ms && (samples.len() as i64) < minutes_due) {
            let sample = Sample {
                rss_kib: rss_kib(Some(served.pid())).ok(),
                redis_rss_kib: match &redis {
                    Some(SoakRedis::Private(server)) => server.pid().and_then(|pid| rss_kib(Some(pid)).ok()),
                    _ => None,
                },
                uptime_s: started_at.elapsed().as_secs_f64(),
            };
            samples.push(sample);
            if !quiet {
                progress_line(&record, samples.len(), duration_ms, start_ms, kills.len(), &sample);
            }
            continue;
        }
        if elapsed >= next_kill && next_kill <= duration_ms {
            let rss_before_kib = rss_kib(Some(served.pid())).ok();
            let at_ms = now_millis();
            let began = Instant::now();
            served.kill_and_restart().await.context("cannot restart punctual serve after kill -9")?;
            started_at = Instant::now();
            kills.push(Kill {
                at_s: (at_ms - start_ms) as f64 / 1000.0,
                rss_before_kib,
                restart_ms: began.elapsed().as_millis() as u64,
                at_ms,
                back_ms: now_millis(),
            });
            next_kill += kill_every_ms;
            continue;
        }
        if let Some(at) = restart_redis_at
            && redis_restart.is_none()
            && elapsed >= at
            && let Some(SoakRedis::Private(server)) = redis.take()
        {
            let (server, restart) = restart_private_redis(server, &client, start_ms).await?;
            if !quiet {
                eprintln!(
                    "soak: redis-server killed at {:.0}s, down {} ms, punctual serving again after {} ms",
                    restart.at_s, restart.down_ms, restart.serving_again_ms
                );
            }
            redis = Some(SoakRedis::Private(server));
            redis_restart = Some(restart);
            continue;
        }
        if elapsed >= duration_ms {
            break;
        }
        let mut wake = next_minute.min(duration_ms);
        if next_kill <= duration_ms {
            wake = wake.min(next_kill);
        }
        if let Some(at) = restart_redis_at.filter(|_| redis_restart.is_none()) {
            wake = wake.min(at);
        }
        tokio::time::sleep(Duration::from_millis((wake - elapsed).clamp(1, 1_000) as u64)).await;
    }

    // The drain: no more schedules; the pull loops run until every acknowledged task was leased.
    stop_producing.store(true, Ordering::SeqCst);
    producer.await.context("the producer panicked")?;
    let drain_began = Instant::now();
    let drained = loop {
        if undelivered(&record).is_empty() {
            break true;
        }
        if drain_began.elapsed() >= DRAIN_TIMEOUT {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let drain_ms = drain_began.elapsed().as_millis() as u64;
    stop_working.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.context("a pull loop panicked")?;
    }

    // Whatever was not leased: still stored (late), or lost.
    let mut notes = Vec::new();
    if !drained {
        notes.push(format!(
            "the drain ended after {}s with tasks not leased; those still stored are counted as still present",
            DRAIN_TIMEOUT.as_secs()
        ));
    }
    let (mut still_present, mut lost_keys) = (0, Vec::new());
    for key in undelivered(&record) {
        if stored(&client, &key).await? {
            still_present += 1;
        } else {
            lost_keys.push(key);
        }
    }
    let repeating_live: Vec<String> = {
        let record = lock(&record);
        record
            .repeating
            .iter()
            .filter(|k| !record.cancelled.contains_key(*k) && !record.cancels_unconfirmed.contains(*k))
            .cloned()
            .collect()
    };
    for key in &repeating_live {
        if !stored(&client, key).await? {
            lost_keys.push(key.clone());
        }
    }
    drop(served);
    match redis {
        Some(SoakRedis::External(url)) => crate::delete_prefix(&url, &prefix).await?,
        Some(SoakRedis::Private(server)) => drop(server),
        None => {}
    }

    let record = Arc::into_inner(record).context("a client still holds the record")?;
    let record = record.into_inner().unwrap_or_else(PoisonError::into_inner);
    let report = SoakReport::build(ReportInput {
        record,
        target,
        store: args.store.to_string(),
        duration_ms,
        kill_every_ms,
        rate: args.rate,
        start_ms,
        kills,
        redis_restart,
        samples,
        drain_ms,
        still_present,
        lost_keys,
        repeating_live,
        notes,
    });
    if args.json {
        eprintln!("{}", report.table());
        emit(&serde_json::to_string_pretty(&[&report])?)?;
    } else {
        emit(&report.table())?;
    }
    if report.lost > 0 || report.fired_after_cancel > 0 {
        bail!(
            "the soak lost {} acknowledged task(s) and fired {} cancelled one(s): a broken guarantee; \
             the keys are in the report (lost_keys), the server's log in its data directory (run with --data DIR to keep it)",
            report.lost,
            report.fired_after_cancel
        );
    }
    Ok(())
}

/// A private redis-server fsyncing its AOF before each write is answered.
fn private_redis_aof() -> Result<RedisServer> {
    RedisServer::start(Persistence::AofAlways, &[]).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!(
                "redis-server not found on PATH: install it (Debian: apt-get install redis-server) \
                 or pass --store redis://HOST:PORT"
            )
        } else {
            anyhow::anyhow!("cannot start a private redis-server: {e}")
        }
    })
}

/// Kills the private redis-server, keeps it down [`REDIS_DOWN`], starts it again on its
/// port and directory (it reloads its AOF) and waits until the server serves again.
async fn restart_private_redis(
    mut server: RedisServer,
    client: &Client,
    start_ms: i64,
) -> Result<(RedisServer, RedisRestart)> {
    let at_ms = now_millis();
    let began = Instant::now();
    server.kill();
    tokio::time::sleep(REDIS_DOWN).await;
    let server = tokio::task::spawn_blocking(move || server.restart().map(|()| server))
        .await
        .context("the redis-server restart panicked")?
        .context("cannot restart the private redis-server")?;
    let down_ms = began.elapsed().as_millis() as u64;
    loop {
        if client.get(&["v1", "queues", QUEUE], &[]).await.is_ok() {
            break;
        }
        if began.elapsed() >= REDIS_DOWN + SERVING_TIMEOUT {
            bail!("punctual serve did not serve again within {}s of its Redis restarting", SERVING_TIMEOUT.as_secs());
        }
        tokio::time::sleep(RETRY).await;
    }
    let serving_again_ms = began.elapsed().as_millis() as u64;
    let restart = RedisRestart {
        at_s: (at_ms - start_ms) as f64 / 1000.0,
        down_ms,
        serving_again_ms,
        at_ms,
        back_ms: now_millis(),
    };
    Ok((server, restart))
}

/// Schedules the repeating tasks, each retried until acknowledged (the server is up).
async fn schedule_repeating(client: &Client, record: &Mutex<Record>) -> Result<()> {
    for i in 0..REPEATING {
        let key = format!("r-{i}");
        let body = json!({"delay": "1s", "repeat": {"every": REPEAT_EVERY}, "payload": {"repeating": i}});
        let began = Instant::now();
        loop {
            match client.put(&["v1", "queues", QUEUE, "tasks", &key], &body).await {
                Ok(_) => break,
                Err(e) if began.elapsed() > SERVING_TIMEOUT => {
                    return Err(anyhow::Error::new(e).context(format!("cannot schedule the repeating task {key}")));
                }
                Err(_) => tokio::time::sleep(RETRY).await,
            }
        }
        lock(record).repeating.push(key);
    }
    Ok(())
}

/// Schedules `rate` one-off tasks a second until `stop`, and cancels some; cancels the
/// first repeating tasks once `half_ms` has passed.
async fn producer(
    client: Client,
    record: Arc<Mutex<Record>>,
    stop: Arc<AtomicBool>,
    rate: u32,
    half_ms: i64,
    end_ms: i64,
) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let per_tick = f64::from(rate) * TICK.as_secs_f64();
    let (mut owed, mut next_id) = (0.0, 0_u64);
    let mut cancels: VecDeque<(Instant, String)> = VecDeque::new();
    let mut repeating_cancelled = false;
    while !stop.load(Ordering::SeqCst) {
        ticks.tick().await;
        owed += per_tick;
        let count = owed.floor() as u64;
        owed -= count as f64;
        let now = now_millis();
        let (mut near, mut far) = (Vec::new(), Vec::new());
        for _ in 0..count {
            next_id += 1;
            let key = format!("t-{next_id}");
            let far_due = now + FAR_MIN_MS + (rand::random::<f64>() * (FAR_MAX_MS - FAR_MIN_MS) as f64) as i64;
            if rand::random::<f64>() >= NEAR_SHARE && far_due <= end_ms {
                far.push((key, far_due));
            } else {
                near.push((key, now + (rand::random::<f64>() * NEAR_MAX_MS as f64) as i64));
            }
        }
        if !near.is_empty() {
            schedule_batch(&client, &record, near).await;
        }
        for (key, due) in far {
            let body = json!({"due_at": due, "payload": {"key": key}});
            match client.put(&["v1", "queues", QUEUE, "tasks", &key], &body).await {
                Ok(answer) if answer.status.as_u16() == 201 => {
                    lock(&record).scheduled.insert(key.clone(), due);
                    if rand::random::<f64>() < CANCEL_SHARE {
                        cancels.push_back((Instant::now() + CANCEL_AFTER, key));
                    }
                }
                _ => lock(&record).schedules_failed += 1,
            }
        }
        while cancels.front().is_some_and(|(at, _)| *at <= Instant::now()) {
            if let Some((_, key)) = cancels.pop_front() {
                cancel(&client, &record, &key).await;
            }
        }
        if !repeating_cancelled && now_millis() >= half_ms {
            repeating_cancelled = true;
            for i in 0..REPEATING_CANCELLED {
                cancel(&client, &record, &format!("r-{i}")).await;
            }
        }
    }
}

/// One batch call; the tasks answered `created` are acknowledged.
async fn schedule_batch(client: &Client, record: &Mutex<Record>, tasks: Vec<(String, i64)>) {
    let body = json!({
        "tasks": tasks.iter().map(|(key, due)| json!({"key": key, "due_at": due, "payload": {"key": key}})).collect::<Vec<_>>()
    });
    let answer = client.post_json(&["v1", "queues", QUEUE, "tasks"], &body).await;
    let results = answer.ok().and_then(|a| a.body).and_then(|b| b.value["results"].as_array().cloned());
    let mut record = lock(record);
    match results {
        Some(results) if results.len() == tasks.len() => {
            for ((key, due), result) in tasks.into_iter().zip(results) {
                if result["outcome"] == "created" {
                    record.scheduled.insert(key, due);
                } else {
                    record.schedules_failed += 1;
                }
            }
        }
        _ => record.schedules_failed += tasks.len() as u64,
    }
}

async fn cancel(client: &Client, record: &Mutex<Record>, key: &str) {
    let answer = client.delete(&["v1", "queues", QUEUE, "tasks", key]).await;
    let mut record = lock(record);
    match answer {
        Ok(_) => {
            record.cancelled.insert(key.to_owned(), now_millis());
        }
        Err(ClientError::Api(e)) if e.status == 404 => record.cancels_not_found += 1,
        Err(_) => {
            record.cancels_unconfirmed.insert(key.to_owned());
        }
    }
}

/// Leases and acknowledges (one batch ack per answer) until `stop`.
async fn pull_loop(client: Client, record: Arc<Mutex<Record>>, stop: Arc<AtomicBool>) {
    let body = json!({"max": LEASE_MAX, "lease": LEASE, "wait": LONG_POLL});
    while !stop.load(Ordering::SeqCst) {
        let answer = client.post_json(&["v1", "queues", QUEUE, "lease"], &body).await;
        let leased_ms = now_millis();
        let leases = match answer.map(|a| a.body.map(|b| b.value)) {
            Ok(Some(value)) => value["leases"].as_array().cloned().unwrap_or_default(),
            _ => {
                lock(&record).lease_calls_failed += 1;
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        if leases.is_empty() {
            continue;
        }
        let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
        let answer = client.post_json(&["v1", "acks"], &json!({ "acks": acks })).await;
        let ack_ms = now_millis();
        let statuses: Option<Vec<Value>> =
            answer.ok().and_then(|a| a.body).and_then(|b| b.value["results"].as_array().cloned());
        let mut record = lock(&record);
        for (i, lease) in leases.iter().enumerate() {
            let task = &lease["task"];
            let due_ms =
                task["due_at"].as_str().and_then(|t| Timestamp::parse(t).ok()).map_or(leased_ms, |t| t.as_millis());
            let ack = match statuses.as_ref().map(|s| s.get(i).and_then(|r| r["status"].as_u64())) {
                Some(Some(204)) => Ack::Confirmed,
                Some(Some(_)) => Ack::Refused,
                _ => Ack::Unanswered,
            };
            record.deliveries.push(Delivery {
                key: task["key"].as_str().unwrap_or_default().to_owned(),
                delivery_id: lease["delivery_id"].as_str().unwrap_or_default().to_owned(),
                due_ms,
                leased_ms,
                ack,
                ack_ms,
            });
        }
    }
}

/// Acknowledged one-off tasks, not cancelled (nor possibly cancelled), never leased.
fn undelivered(record: &Mutex<Record>) -> Vec<String> {
    let record = lock(record);
    let leased: HashSet<&str> = record.deliveries.iter().map(|d| d.key.as_str()).collect();
    record
        .scheduled
        .keys()
        .filter(|k| {
            !leased.contains(k.as_str())
                && !record.cancelled.contains_key(*k)
                && !record.cancels_unconfirmed.contains(*k)
        })
        .cloned()
        .collect()
}

/// Is the task still stored? (`GET` answers it, or 404.)
async fn stored(client: &Client, key: &str) -> Result<bool> {
    let began = Instant::now();
    loop {
        match client.get(&["v1", "queues", QUEUE, "tasks", key], &[]).await {
            Ok(_) => return Ok(true),
            Err(ClientError::Api(e)) if e.status == 404 => return Ok(false),
            Err(e) if began.elapsed() > SERVING_TIMEOUT => {
                return Err(anyhow::Error::new(e).context(format!("cannot check whether task {key} is still stored")));
            }
            Err(_) => tokio::time::sleep(RETRY).await,
        }
    }
}

/// One line on stderr at the end of each minute.
fn progress_line(
    record: &Mutex<Record>,
    minute: usize,
    duration_ms: i64,
    start_ms: i64,
    kills: usize,
    sample: &Sample,
) {
    let record = lock(record);
    let from = start_ms + (minute as i64 - 1) * MINUTE_MS;
    let mut lags: Vec<i64> =
        record.deliveries.iter().filter(|d| d.leased_ms >= from).map(|d| d.leased_ms - d.due_ms).collect();
    lags.sort_unstable();
    eprintln!(
        "soak {minute}m/{}m: scheduled {} (failed {}), cancelled {}, leases {}, kills {kills}, \
         lag this minute p50 {} ms p99 {} ms, server RSS {} (up {:.0}s)",
        (duration_ms as u64).div_ceil(MINUTE_MS as u64),
        record.scheduled.len(),
        record.schedules_failed,
        record.cancelled.len(),
        record.deliveries.len(),
        percentile(&lags, 50.0),
        percentile(&lags, 99.0),
        sample.rss_kib.map_or("-".to_owned(), kib),
        sample.uptime_s,
    );
}

fn kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// What the report is made of.
struct ReportInput {
    record: Record,
    target: String,
    store: String,
    duration_ms: i64,
    kill_every_ms: i64,
    rate: u32,
    start_ms: i64,
    kills: Vec<Kill>,
    redis_restart: Option<RedisRestart>,
    samples: Vec<Sample>,
    drain_ms: u64,
    still_present: u64,
    lost_keys: Vec<String>,
    repeating_live: Vec<String>,
    notes: Vec<String>,
}

impl SoakReport {
    fn build(input: ReportInput) -> SoakReport {
        let ReportInput {
            record,
            target,
            store,
            duration_ms,
            kill_every_ms,
            rate,
            start_ms,
            kills,
            redis_restart,
            samples,
            drain_ms,
            still_present,
            lost_keys,
            repeating_live,
            mut notes,
        } = input;
        let deliveries = &record.deliveries;
        let count = |ack: Ack| deliveries.iter().filter(|d| d.ack == ack).count() as u64;

        // Duplicates, each attributed by the earliest unconfirmed ack of its delivery id.
        let mut by_id: HashMap<&str, Vec<&Delivery>> = HashMap::new();
        for d in deliveries {
            by_id.entry(&d.delivery_id).or_default().push(d);
        }
        let mut duplicates = Duplicates::default();
        let near = |at: i64, from: i64, to: i64| at >= from - ATTRIBUTION_MARGIN_MS && at <= to + ATTRIBUTION_MARGIN_MS;
        for group in by_id.values_mut().filter(|g| g.len() > 1) {
            group.sort_by_key(|d| d.leased_ms);
            let extra = group.len() as u64 - 1;
            duplicates.total += extra;
            let unconfirmed = group[..group.len() - 1].iter().find(|d| d.ack != Ack::Confirmed);
            match unconfirmed {
                None => duplicates.unexplained += extra,
                Some(d) if kills.iter().any(|k| near(d.ack_ms, k.at_ms, k.back_ms)) => {
                    duplicates.ack_unconfirmed_at_kill += extra;
                }
                Some(d) if redis_restart.as_ref().is_some_and(|r| near(d.ack_ms, r.at_ms, r.back_ms)) => {
                    duplicates.ack_unconfirmed_at_redis_restart += extra;
                }
                Some(_) => duplicates.ack_unconfirmed_other += extra,
            }
        }

        let fired_after_cancel = deliveries
            .iter()
            .filter(|d| record.cancelled.get(&d.key).is_some_and(|&cancelled_ms| d.due_ms > cancelled_ms))
            .count() as u64;

        let leased: HashSet<&str> = deliveries.iter().map(|d| d.key.as_str()).collect();
        let delivered = record
            .scheduled
            .keys()
            .filter(|k| {
                leased.contains(k.as_str())
                    && !record.cancelled.contains_key(*k)
                    && !record.cancels_unconfirmed.contains(*k)
            })
            .count() as u64;
        let one_off_cancelled = record
            .scheduled
            .keys()
            .filter(|k| record.cancelled.contains_key(*k) || record.cancels_unconfirmed.contains(*k))
            .count() as u64;

        // Repeating tasks: occurrences, and the longest gap between two of a live one.
        let mut repeat_occurrences = 0;
        let mut repeat_max_gap_ms = 0;
        for key in &record.repeating {
            let mut firsts: HashMap<&str, i64> = HashMap::new();
            for d in deliveries.iter().filter(|d| &d.key == key) {
                let first = firsts.entry(&d.delivery_id).or_insert(d.leased_ms);
                *first = (*first).min(d.leased_ms);
            }
            repeat_occurrences += firsts.len() as u64;
            if repeating_live.contains(key) {
                let mut times: Vec<i64> = firsts.into_values().collect();
                times.sort_unstable();
                let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
                repeat_max_gap_ms = repeat_max_gap_ms.max(gap);
            }
        }

        // Per minute: the lag of the leases received in it, and the memory at its end.
        let last_minute = deliveries.iter().map(|d| (d.leased_ms - start_ms).max(0) / MINUTE_MS).max().unwrap_or(0);
        let rows = (last_minute as usize + 1).max(samples.len());
        let mut lags: Vec<Vec<i64>> = vec![Vec::new(); rows];
        for d in deliveries {
            lags[((d.leased_ms - start_ms).max(0) / MINUTE_MS) as usize].push(d.leased_ms - d.due_ms);
        }
        let minutes = lags
            .into_iter()
            .enumerate()
            .map(|(minute, lags)| {
                let lag = LagStats::of(lags);
                let sample = samples.get(minute);
                let (from, to) = (minute as i64 * MINUTE_MS, (minute as i64 + 1) * MINUTE_MS);
                Minute {
                    minute: minute as u64,
                    leases: lag.count,
                    lag_p50_ms: lag.p50,
                    lag_p99_ms: lag.p99,
                    lag_max_ms: lag.max,
                    rss_kib: sample.and_then(|s| s.rss_kib),
                    uptime_s: sample.map(|s| (s.uptime_s * 10.0).round() / 10.0),
                    redis_rss_kib: sample.and_then(|s| s.redis_rss_kib),
                    kills: kills
                        .iter()
                        .filter(|k| {
                            let at = k.at_ms - start_ms;
                            at >= from && at < to
                        })
                        .count(),
                }
            })
            .collect();

        let memory_growth = growth(&kills, &samples);
        if memory_growth.is_none() {
            notes.push("memory growth needs two readings after the first 5 minutes: run longer".to_owned());
        }
        if duplicates.unexplained > 0 {
            notes.push(format!(
                "{} duplicate(s) had every earlier ack confirmed: not explained by at-least-once delivery",
                duplicates.unexplained
            ));
        }
        let lag = LagStats::of(deliveries.iter().map(|d| d.leased_ms - d.due_ms).collect());
        let lost = lost_keys.len() as u64;
        SoakReport {
            workload: "soak",
            target,
            store,
            duration_s: duration_ms as f64 / 1000.0,
            kill_every_s: kill_every_ms as f64 / 1000.0,
            settings: Settings {
                rate_per_s: rate,
                pull_loops: PULL_LOOPS,
                lease_max: LEASE_MAX,
                lease: LEASE,
                long_poll: LONG_POLL,
                repeating: REPEATING,
                repeat_every: REPEAT_EVERY,
                near_share: NEAR_SHARE,
                near_max_ms: NEAR_MAX_MS,
                far_ms: [FAR_MIN_MS, FAR_MAX_MS],
                cancel_share_of_far: CANCEL_SHARE,
            },
            scheduled: record.scheduled.len() as u64,
            schedules_failed: record.schedules_failed,
            repeating: record.repeating.len(),
            cancels_confirmed: record.cancelled.len() as u64,
            cancels_unconfirmed: record.cancels_unconfirmed.len() as u64,
            cancels_not_found: record.cancels_not_found,
            one_off_cancelled,
            leases: deliveries.len() as u64,
            lease_calls_failed: record.lease_calls_failed,
            acks_confirmed: count(Ack::Confirmed),
            acks_refused: count(Ack::Refused),
            acks_unanswered: count(Ack::Unanswered),
            delivered,
            still_present,
            lost,
            lost_keys: lost_keys.into_iter().take(20).collect(),
            fired_after_cancel,
            repeat_occurrences,
            repeat_max_gap_ms,
            duplicates,
            kill_count: kills.len(),
            kills,
            redis_restart,
            drain_ms,
            lag,
            minutes,
            memory_growth,
            notes,
        }
    }

    pub(crate) fn table(&self) -> String {
        let d = &self.duplicates;
        let mut rows = vec![
            ("duration".to_owned(), format!("{:.0} s, kill -9 every {:.0} s", self.duration_s, self.kill_every_s)),
            ("kills (server restarted on the same store)".to_owned(), self.kill_count.to_string()),
            (
                "one-off tasks acknowledged (schedules failed)".to_owned(),
                format!("{} ({})", thousands(self.scheduled as f64), thousands(self.schedules_failed as f64)),
            ),
            (
                "cancels confirmed / unconfirmed / not found (of one-off tasks)".to_owned(),
                format!(
                    "{} / {} / {} ({})",
                    self.cancels_confirmed, self.cancels_unconfirmed, self.cancels_not_found, self.one_off_cancelled
                ),
            ),
            (
                "repeating tasks, occurrences leased".to_owned(),
                format!("{}, {}", self.repeating, self.repeat_occurrences),
            ),
            ("longest gap between occurrences".to_owned(), format!("{} ms", thousands(self.repeat_max_gap_ms as f64))),
            (
                "leases (acks confirmed / refused / unanswered)".to_owned(),
                format!(
                    "{} ({} / {} / {})",
                    thousands(self.leases as f64),
                    thousands(self.acks_confirmed as f64),
                    self.acks_refused,
                    self.acks_unanswered
                ),
            ),
            ("acknowledged tasks delivered".to_owned(), thousands(self.delivered as f64)),
            ("still stored, not delivered".to_owned(), self.still_present.to_string()),
            ("LOST (must be 0)".to_owned(), self.lost.to_string()),
            ("fired after a confirmed cancel (must be 0)".to_owned(), self.fired_after_cancel.to_string()),
            (
                "duplicates: at a kill / at the Redis restart / other / unexplained".to_owned(),
                format!(
                    "{} : {} / {} / {} / {}",
                    d.total,
                    d.ack_unconfirmed_at_kill,
                    d.ack_unconfirmed_at_redis_restart,
                    d.ack_unconfirmed_other,
                    d.unexplained
                ),
            ),
            (
                "lag p50 / p99 / max".to_owned(),
                format!("{} / {} / {} ms", self.lag.p50, self.lag.p99, thousands(self.lag.max as f64)),
            ),
            ("drain".to_owned(), format!("{} ms", thousands(self.drain_ms as f64))),
        ];
        if let Some(r) = &self.redis_restart {
            rows.push((
                "redis-server killed and restarted".to_owned(),
                format!("at {:.0} s, down {} ms, serving again after {} ms", r.at_s, r.down_ms, r.serving_again_ms),
            ));
        }
        if let Some(g) = &self.memory_growth {
            rows.push((
                format!("memory growth after 5 min ({})", g.basis),
                format!(
                    "{:+.1}% ({} at {:.0} s -> {} at {:.0} s; goal <= {:.0}%: {})",
                    g.pct,
                    kib(g.first_kib),
                    g.first_at_s,
                    kib(g.last_kib),
                    g.last_at_s,
                    g.goal_pct,
                    if g.met { "met" } else { "NOT met" }
                ),
            ));
        }
        let mut text = figures(&format!("soak on {}", self.target), rows);
        let minute_rows = self
            .minutes
            .iter()
            .map(|m| {
                vec![
                    m.minute.to_string(),
                    thousands(m.leases as f64),
                    m.lag_p50_ms.to_string(),
                    m.lag_p99_ms.to_string(),
                    thousands(m.lag_max_ms as f64),
                    m.rss_kib.map_or("-".into(), kib),
                    m.uptime_s.map_or("-".into(), |s| format!("{s:.0}")),
                    m.redis_rss_kib.map_or("-".into(), kib),
                    m.kills.to_string(),
                ]
            })
            .collect();
        text.push_str("\n\nper minute (lag = lease received - due; RSS at the minute's end)\n");
        text.push_str(&table(
            &["MIN", "LEASES", "P50 MS", "P99 MS", "MAX MS", "SERVER RSS", "UP S", "REDIS RSS", "KILLS"],
            minute_rows,
            &[0, 1, 2, 3, 4, 5, 6, 7, 8],
        ));
        if !self.kills.is_empty() {
            let kill_rows = self
                .kills
                .iter()
                .map(|k| {
                    vec![
                        format!("{:.0}", k.at_s),
                        k.rss_before_kib.map_or("-".into(), kib),
                        thousands(k.restart_ms as f64),
                    ]
                })
                .collect();
            text.push_str("\n\nkills (RSS just before each kill -9; restart = kill -> /readyz)\n");
            text.push_str(&table(&["AT S", "RSS BEFORE", "RESTART MS"], kill_rows, &[0, 1, 2]));
        }
        for note in &self.notes {
            text.push_str(&format!("\nnote: {note}"));
        }
        text
    }
}

/// Memory growth after the warm-up: between the first and last readings just before a
/// kill (each after the same uptime), else between the minutes' readings.
fn growth(kills: &[Kill], samples: &[Sample]) -> Option<Growth> {
    let before_kills: Vec<(f64, u64)> = kills
        .iter()
        .filter(|k| k.at_s * 1000.0 >= GROWTH_FROM_MS as f64)
        .filter_map(|k| k.rss_before_kib.map(|rss| (k.at_s, rss)))
        .collect();
    let minutes: Vec<(f64, u64)> = samples
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as i64 + 1) * MINUTE_MS > GROWTH_FROM_MS)
        .filter_map(|(i, s)| s.rss_kib.map(|rss| ((i as f64 + 1.0) * 60.0, rss)))
        .collect();
    let (basis, readings) = if before_kills.len() >= 2 {
        ("RSS just before each kill", before_kills)
    } else {
        ("RSS at the end of each minute", minutes)
    };
    let (&(first_at_s, first_kib), &(last_at_s, last_kib)) = (readings.first()?, readings.last()?);
    if readings.len() < 2 || first_kib == 0 {
        return None;
    }
    let pct = (last_kib as f64 - first_kib as f64) / first_kib as f64 * 100.0;
    Some(Growth {
        basis,
        first_kib,
        first_at_s,
        last_kib,
        last_at_s,
        pct: (pct * 10.0).round() / 10.0,
        goal_pct: GROWTH_GOAL_PCT,
        met: pct <= GROWTH_GOAL_PCT,
    })
}
