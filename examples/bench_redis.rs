//! Benchmarks of punctual on Redis, each beside the seeds' Redis approaches, in the
//! same run, on one private `redis-server` (no persistence) started for the purpose:
//!
//! - **schedule throughput**: batches of 1,000 and concurrent single calls;
//! - **Redis memory per pending task** (`INFO memory` before and after);
//! - **fire + ack throughput**: a worker draining tasks already due;
//! - **burst**: tasks all due at one instant, time to drain, and the longest script
//!   Redis ran meanwhile (`LATENCY HISTOGRAM evalsha`);
//! - **fire lag** of tasks due uniformly over a window, against the seeds' keyspace
//!   notifications (`SET … PXAT` + a subscriber on `__keyevent@0__:expired`) and a ZSet
//!   polled once a second, on the same Redis.
//!
//! Run: `cargo run --release --example bench_redis -- [--tasks 10000] [--window-secs 20]
//! [--pending 100000] [--burst 100000]`

#![allow(clippy::disallowed_methods, reason = "a benchmark reads the wall clock")]
#![allow(clippy::unwrap_used, reason = "a benchmark stops at the first failure")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use punctual::redis::{RedisConfig, RedisStore, Target};
use punctual::{Delivery, Engine, EngineConfig, Outcome, TaskSpec, Timestamp, Worker};
use punctual_testkit::redis::RedisServer;

struct Args {
    tasks: usize,
    window: Duration,
    pending: usize,
    burst: usize,
}

fn args() -> Args {
    let mut args = Args { tasks: 10_000, window: Duration::from_secs(20), pending: 100_000, burst: 100_000 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value: u64 = it.next().unwrap_or_default().parse().expect("flags take a number");
        match flag.as_str() {
            "--tasks" => args.tasks = value as usize,
            "--window-secs" => args.window = Duration::from_secs(value),
            "--pending" => args.pending = value as usize,
            "--burst" => args.burst = value as usize,
            other => panic!("unknown flag {other}: use --tasks, --window-secs, --pending, --burst"),
        }
    }
    args
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn summary(lags: &mut [i64]) -> (i64, i64, i64, String) {
    lags.sort_unstable();
    let at = |p: f64| lags[(((p / 100.0) * (lags.len() - 1) as f64).round() as usize).min(lags.len() - 1)];
    let (p50, p99, max) = (at(50.0), at(99.0), *lags.last().unwrap());
    (
        p50,
        p99,
        max,
        format!("p50 {p50:>5} ms  p90 {:>5} ms  p99 {p99:>5} ms  max {max:>5} ms  (n = {})", at(90.0), lags.len()),
    )
}

fn used_memory(server: &RedisServer) -> i64 {
    let info = server.command(&["INFO", "memory"]);
    info.lines().find_map(|l| l.strip_prefix("used_memory:")).unwrap().trim().parse().unwrap()
}

async fn schedule_batches(
    engine: &Engine<RedisStore>,
    queue: &str,
    total: usize,
    due: impl Fn(usize) -> TaskSpec,
) -> f64 {
    let start = Instant::now();
    for chunk in 0..total.div_ceil(1000) {
        let items = (chunk * 1000..((chunk + 1) * 1000).min(total)).map(|i| (format!("task-{i}"), due(i))).collect();
        for result in engine.schedule_many(queue, items).await.unwrap() {
            result.unwrap();
        }
    }
    total as f64 / start.elapsed().as_secs_f64()
}

async fn schedule_singles(engine: &Engine<RedisStore>, total: usize, clients: usize) -> f64 {
    let start = Instant::now();
    let mut joins = Vec::new();
    for client in 0..clients {
        let engine = engine.clone();
        joins.push(tokio::spawn(async move {
            for i in (client..total).step_by(clients) {
                let spec = TaskSpec::after(Duration::from_secs(86_400)).payload(serde_json::json!({"n": i}));
                engine.schedule("bench.singles", &format!("task-{i}"), spec).await.unwrap();
            }
        }));
    }
    for join in joins {
        join.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// Runs a worker on `queue` until `expected` tasks have fired; their fire lags.
async fn drain(engine: &Engine<RedisStore>, queue: &'static str, expected: usize) -> Vec<i64> {
    let lags = Arc::new(Mutex::new(Vec::with_capacity(expected)));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let worker = {
        let lags = Arc::clone(&lags);
        Worker::new(engine.clone())
            .handle(queue, move |d: Delivery| {
                let mut lags = lags.lock().unwrap();
                lags.push(now_ms() - d.task.due_at.as_millis());
                if lags.len() == expected {
                    let _ = done_tx.send(());
                }
                async { Ok::<_, punctual::BoxError>(Outcome::Done) }
            })
            .concurrency(queue, 256)
            .start()
            .unwrap()
    };
    tokio::time::timeout(Duration::from_secs(600), done_rx.recv()).await.expect("every task fired");
    worker.shutdown().await;
    Arc::try_unwrap(lags).unwrap().into_inner().unwrap()
}

/// The seeds' way: a key per task expiring at its due time, and a subscriber to
/// expiry events. Returns the lags of the events received.
async fn keyspace_fire_lag(server: &RedisServer, tasks: usize, window: Duration) -> (Vec<i64>, usize) {
    server.command(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    let client = redis::Client::open(server.url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe("__keyevent@0__:expired").await.unwrap();
    let mut events = pubsub.into_on_message();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let start = now_ms() + 1_000;
    let step = window.as_millis() as f64 / tasks as f64;
    for chunk in (0..tasks).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let due = start + (i as f64 * step) as i64;
            pipe.cmd("SET").arg(format!("remind:{due}:{i}")).arg("").arg("PXAT").arg(due).ignore();
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
    let mut lags = Vec::with_capacity(tasks);
    let deadline = Instant::now() + window + Duration::from_secs(30);
    while lags.len() < tasks {
        let Ok(Some(message)) = tokio::time::timeout_at(deadline.into(), events.next()).await else { break };
        let key: String = message.get_payload().unwrap();
        let due: i64 = key.split(':').nth(1).unwrap().parse().unwrap();
        lags.push(now_ms() - due);
    }
    let missing = tasks - lags.len();
    (lags, missing)
}

/// A ZSet of due times polled once a second (`ZRANGEBYSCORE` + `ZREM`).
async fn poller_fire_lag(server: &RedisServer, tasks: usize, window: Duration) -> Vec<i64> {
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let start = now_ms() + 1_000;
    let step = window.as_millis() as f64 / tasks as f64;
    for chunk in (0..tasks).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let due = start + (i as f64 * step) as i64;
            pipe.cmd("ZADD").arg("poller:due").arg(due).arg(format!("{due}:{i}")).ignore();
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
    let mut lags = Vec::with_capacity(tasks);
    while lags.len() < tasks {
        let now = now_ms();
        let due: Vec<String> =
            redis::cmd("ZRANGEBYSCORE").arg("poller:due").arg("-inf").arg(now).query_async(&mut conn).await.unwrap();
        for member in &due {
            let at: i64 = member.split(':').next().unwrap().parse().unwrap();
            lags.push(now_ms() - at);
        }
        if !due.is_empty() {
            redis::cmd("ZREM").arg("poller:due").arg(&due).query_async::<()>(&mut conn).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    lags
}

/// The longest `EVALSHA` Redis ran, as the upper bound of its latency histogram's
/// highest non-empty bucket.
fn longest_script(server: &RedisServer) -> String {
    let histogram = server.command(&["LATENCY", "HISTOGRAM", "evalsha"]);
    // Flattened: …, "histogram_usec", bucket, count, bucket, count, …
    let lines: Vec<&str> = histogram.lines().collect();
    let start = lines.iter().position(|l| *l == "histogram_usec").map_or(lines.len(), |p| p + 1);
    let buckets: Vec<i64> = lines[start..].iter().step_by(2).filter_map(|b| b.parse().ok()).collect();
    match buckets.last() {
        Some(usec) => format!("≤ {:.1} ms", *usec as f64 / 1000.0),
        None => "n/a".into(),
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    let server = RedisServer::start();
    let store = RedisStore::connect(RedisConfig::new(Target::parse(&server.url()).unwrap())).await.unwrap();
    let clock = store.clock();
    let engine = Engine::start(store, EngineConfig::default().clock(clock));
    println!("punctual on Redis ({}), one private redis-server without persistence", server.url());

    println!("\nschedule throughput, {} tasks due in a day", args.pending);
    let before = used_memory(&server);
    let batches = schedule_batches(&engine, "bench.pending", args.pending, |i| {
        TaskSpec::after(Duration::from_secs(86_400)).payload(serde_json::json!({"n": i}))
    })
    .await;
    let per_task = (used_memory(&server) - before) as f64 / args.pending as f64;
    println!("  batches of 1,000:          {batches:>8.0} tasks/s");
    let singles_total = args.pending.min(20_000);
    let singles = schedule_singles(&engine, singles_total, 64).await;
    println!("  single calls, 64 clients:  {singles:>8.0} tasks/s ({singles_total} tasks)");
    println!("  Redis memory per pending task (payload {{\"n\": i}}): {per_task:.0} bytes");

    let due_now = args.burst.min(50_000);
    schedule_batches(&engine, "bench.drain", due_now, |_| TaskSpec::now()).await;
    let started = Instant::now();
    drain(&engine, "bench.drain", due_now).await;
    let drain_rate = due_now as f64 / started.elapsed().as_secs_f64();
    println!("\nfire + ack throughput (a worker draining {due_now} due tasks): {drain_rate:>8.0} tasks/s");

    server.command(&["CONFIG", "RESETSTAT"]);
    let at = Timestamp::from_millis(now_ms() + 3_000 + (args.burst as i64 / 50));
    schedule_batches(&engine, "bench.burst", args.burst, |_| TaskSpec::at(at)).await;
    let fired = drain(&engine, "bench.burst", args.burst).await;
    let drained_in = fired.iter().max().copied().unwrap_or(0);
    println!(
        "\nburst: {} tasks due at one instant drained in {drained_in} ms ({:.0} tasks/s); longest script {}",
        args.burst,
        args.burst as f64 / (drained_in.max(1) as f64 / 1000.0),
        longest_script(&server)
    );

    println!("\nfire lag, {} tasks due uniformly over {:?}", args.tasks, args.window);
    let begin = now_ms() + 1_000;
    let step = args.window.as_millis() as f64 / args.tasks as f64;
    schedule_batches(&engine, "bench.spread", args.tasks, |i| {
        TaskSpec::at(Timestamp::from_millis(begin + (i as f64 * step) as i64))
    })
    .await;
    let mut ours = drain(&engine, "bench.spread", args.tasks).await;
    let (p50, p99, _, text) = summary(&mut ours);
    println!("  punctual:                  {text}");
    let (mut keyspace, missing) = keyspace_fire_lag(&server, args.tasks, args.window).await;
    let (k50, k99, _, text) = summary(&mut keyspace);
    println!("  keyspace notifications:    {text}, {missing} events never arrived");
    let mut polled = poller_fire_lag(&server, args.tasks, args.window).await;
    let (z50, z99, _, text) = summary(&mut polled);
    println!("  ZSet polled every second:  {text}");
    let ratio = |theirs: i64, ours: i64| theirs as f64 / ours.max(1) as f64;
    println!(
        "  ratio (theirs / punctual's, lag floored at 1 ms): keyspace p50 {:.0}× p99 {:.0}×, poller p50 {:.0}× p99 {:.0}×",
        ratio(k50, p50),
        ratio(k99, p99),
        ratio(z50, p50),
        ratio(z99, p99)
    );
    engine.shutdown().await.unwrap();
}
