//! HTTP figures of `punctual serve` on the embedded store: schedule requests per
//! second, lease + ack per second, and long-poll fire lag (response received − due).
//!
//! Start a server on a fresh directory, then run this against it:
//!
//! ```sh
//! cargo run --release -- serve --data /tmp/punctual-bench &
//! cargo run --release --example bench_http -- [--server http://127.0.0.1:7575]
//! ```

#![allow(clippy::disallowed_methods, reason = "a benchmark reads the wall clock")]
#![allow(clippy::unwrap_used, reason = "a benchmark stops at the first failure")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

const CLIENTS: usize = 64;
const SCHEDULES: usize = 20_000;
const LEASE_TASKS: usize = 20_000;
const LEASE_WORKERS: usize = 8;
const FIRE_TASKS: usize = 2_000;
const FIRE_WINDOW_MS: i64 = 10_000;
const POLLERS: usize = 8;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    sorted[(((p / 100.0) * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

async fn put(http: &reqwest::Client, server: &str, queue: &str, key: &str, body: Value) {
    let url = format!("{server}/v1/queues/{queue}/tasks/{key}");
    let response = http.put(url).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.text().await.unwrap());
}

async fn schedules_per_second(http: &reqwest::Client, server: &str) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (http, server, next) = (http.clone(), server.to_owned(), Arc::clone(&next));
        clients.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= SCHEDULES {
                    return;
                }
                put(&http, &server, "bench.schedule", &format!("k{i}"), json!({"delay": "1d", "payload": {"n": i}}))
                    .await;
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    SCHEDULES as f64 / start.elapsed().as_secs_f64()
}

async fn lease_acks_per_second(http: &reqwest::Client, server: &str) -> f64 {
    for chunk in 0..LEASE_TASKS / 1000 {
        let tasks: Vec<Value> = (chunk * 1000..(chunk + 1) * 1000).map(|i| json!({"key": format!("k{i}")})).collect();
        let url = format!("{server}/v1/queues/bench.lease/tasks");
        http.post(url).json(&json!({ "tasks": tasks })).send().await.unwrap().error_for_status().unwrap();
    }
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..LEASE_WORKERS {
        let (http, server, done) = (http.clone(), server.to_owned(), Arc::clone(&done));
        workers.push(tokio::spawn(async move {
            while done.load(Ordering::Relaxed) < LEASE_TASKS {
                let url = format!("{server}/v1/queues/bench.lease/lease");
                let answer: Value =
                    http.post(url).json(&json!({"max": 100, "wait": "1s"})).send().await.unwrap().json().await.unwrap();
                let leases = answer["leases"].as_array().unwrap();
                if leases.is_empty() {
                    continue;
                }
                let acks: Vec<Value> =
                    leases.iter().map(|l| json!({"lease_id": l["lease_id"], "outcome": "done"})).collect();
                let url = format!("{server}/v1/acks");
                http.post(url).json(&json!({ "acks": acks })).send().await.unwrap().error_for_status().unwrap();
                done.fetch_add(leases.len(), Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    LEASE_TASKS as f64 / start.elapsed().as_secs_f64()
}

async fn long_poll_lags(http: &reqwest::Client, server: &str) -> Vec<i64> {
    let start = now_ms() + 2_000;
    let step = FIRE_WINDOW_MS as f64 / FIRE_TASKS as f64;
    let tasks: Vec<Value> =
        (0..FIRE_TASKS).map(|i| json!({"key": format!("k{i}"), "due_at": start + (i as f64 * step) as i64})).collect();
    for chunk in tasks.chunks(1000) {
        let url = format!("{server}/v1/queues/bench.fire/tasks");
        http.post(url).json(&json!({ "tasks": chunk })).send().await.unwrap().error_for_status().unwrap();
    }
    let lags = Arc::new(std::sync::Mutex::new(Vec::with_capacity(FIRE_TASKS)));
    let mut pollers = Vec::new();
    for _ in 0..POLLERS {
        let (http, server, lags) = (http.clone(), server.to_owned(), Arc::clone(&lags));
        pollers.push(tokio::spawn(async move {
            while lags.lock().unwrap().len() < FIRE_TASKS {
                let url = format!("{server}/v1/queues/bench.fire/lease");
                let answer: Value =
                    http.post(url).json(&json!({"max": 10, "wait": "2s"})).send().await.unwrap().json().await.unwrap();
                let received = now_ms();
                let leases = answer["leases"].as_array().unwrap().clone();
                for lease in &leases {
                    let due = lease["task"]["due_at"].as_str().unwrap();
                    let due = punctual::Timestamp::parse(due).unwrap().as_millis();
                    lags.lock().unwrap().push(received - due);
                    let url = format!("{server}/v1/leases/{}/ack", lease["lease_id"].as_str().unwrap());
                    http.post(url).json(&json!({"outcome": "done"})).send().await.unwrap();
                }
            }
        }));
    }
    for poller in pollers {
        poller.await.unwrap();
    }
    let mut lags = Arc::try_unwrap(lags).unwrap().into_inner().unwrap();
    lags.sort_unstable();
    lags
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut server = "http://127.0.0.1:7575".to_owned();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--server" => server = args.next().expect("--server takes a URL"),
            other => panic!("unknown flag {other}: use --server URL"),
        }
    }
    let http = reqwest::Client::builder().pool_max_idle_per_host(CLIENTS).build().unwrap();
    println!("punctual HTTP bench against {server}");
    let schedules = schedules_per_second(&http, &server).await;
    println!("  schedule (PUT, {CLIENTS} concurrent clients, {SCHEDULES} tasks): {schedules:>8.0} requests/s");
    let leases = lease_acks_per_second(&http, &server).await;
    println!("  lease (max 100) + batch ack, {LEASE_WORKERS} workers, {LEASE_TASKS} tasks: {leases:>8.0} tasks/s");
    let lags = long_poll_lags(&http, &server).await;
    println!(
        "  long-poll fire lag, {FIRE_TASKS} tasks over {}s, {POLLERS} pollers: p50 {} ms  p90 {} ms  p99 {} ms  max {} ms",
        FIRE_WINDOW_MS / 1000,
        percentile(&lags, 50.0),
        percentile(&lags, 90.0),
        percentile(&lags, 99.0),
        lags.last().unwrap()
    );
}
