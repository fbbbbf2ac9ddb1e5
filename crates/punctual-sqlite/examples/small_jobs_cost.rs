//! What the embedded store's threads (writer and checkpointer) spend per task when its
//! jobs are small, as over HTTP: `TASKS` tasks scheduled one per call by 64 callers at
//! once, then drained by 16 loops that each lease 10 and acknowledge each lease with a
//! call of its own, all at once. One JSON line: the CPU per task of each phase. Build
//! it at two commits to compare them (BENCHMARKS.md, "Issue V"):
//!
//! ```text
//! cargo run --release -p punctual-sqlite --example small_jobs_cost -- 40000
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Clock, NewTask, QueueName, Store, SystemClock, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

#[path = "support/cpu.rs"]
mod cpu;
use cpu::cpu_of_threads;

const SCHEDULERS: usize = 64;
const DRAINERS: usize = 16;
const LEASE_SIZE: u32 = 10;

fn now() -> Timestamp {
    SystemClock.now()
}

/// Schedules `tasks` tasks due now, one per call, from [`SCHEDULERS`] callers.
async fn schedule(store: &Arc<SqliteStore>, queue: &QueueName, tasks: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..SCHEDULERS)
        .map(|_| {
            let (store, next, queue) = (Arc::clone(store), Arc::clone(&next), queue.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= tasks {
                        break;
                    }
                    let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).expect("a key"), now());
                    task.payload = serde_json::json!({ "n": i });
                    let mut results = store.schedule(vec![task], now()).await.expect("schedule");
                    results.pop().expect("one result").expect("the task is scheduled");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.await.expect("a scheduler");
    }
}

/// Leases and acknowledges `tasks` tasks, [`LEASE_SIZE`] a lease, each ack a call.
async fn drain(store: &Arc<SqliteStore>, queue: &QueueName, tasks: usize) {
    let done = Arc::new(AtomicUsize::new(0));
    let loops: Vec<_> = (0..DRAINERS)
        .map(|_| {
            let (store, done, queue) = (Arc::clone(store), Arc::clone(&done), queue.clone());
            tokio::spawn(async move {
                while done.load(Ordering::SeqCst) < tasks {
                    // Named as a server names its node, whose leases' history events say so.
                    let request = LeaseRequest::new(queue.clone(), LEASE_SIZE, Duration::from_secs(300), now())
                        .on_node(Some(Arc::from("web-1:7575 (pid 4242)")));
                    let batch = store.lease(request).await.expect("lease");
                    if batch.leases.is_empty() {
                        tokio::task::yield_now().await;
                        continue;
                    }
                    let acks: Vec<_> = batch
                        .leases
                        .iter()
                        .map(|lease| {
                            let (store, token) = (Arc::clone(&store), lease.token.clone());
                            tokio::spawn(async move {
                                store.complete(CompleteRequest::new(token, Completion::Done, now())).await
                            })
                        })
                        .collect();
                    for ack in acks {
                        ack.await.expect("an ack").expect("the lease is live");
                    }
                    done.fetch_add(batch.leases.len(), Ordering::SeqCst);
                }
            })
        })
        .collect();
    for drained in loops {
        drained.await.expect("a drain loop");
    }
}

#[tokio::main]
async fn main() {
    let tasks: usize = std::env::args().nth(1).map_or(40_000, |n| n.parse().expect("TASKS"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let queue = QueueName::new("q").expect("a queue");
    let started = cpu_of_threads("punctual-sqlite");
    schedule(&store, &queue, tasks).await;
    let scheduled = cpu_of_threads("punctual-sqlite");
    drain(&store, &queue, tasks).await;
    let drained = cpu_of_threads("punctual-sqlite");
    store.close().await.expect("close");
    let per_task = |seconds: f64| seconds * 1e6 / tasks as f64;
    println!(
        "{{\"tasks\": {tasks}, \"schedule_cpu_us_per_task\": {:.1}, \"drain_cpu_us_per_task\": {:.1}}}",
        per_task(scheduled - started),
        per_task(drained - scheduled)
    );
}
