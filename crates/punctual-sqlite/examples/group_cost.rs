//! What groups cost the embedded store, in process: a burst of `TASKS` tasks due at
//! once, scheduled in batches of 1,000, then drained by 50 loops that each lease 100
//! at a time — one lease call at a time, as the engine's consumers of a lane do — and
//! acknowledge each answer with one `complete_many`, the tasks spread over `GROUPS`
//! groups (0: none). One JSON line: tasks per second scheduled and drained, and the
//! CPU the store's threads (writer and checkpointer) spent per task drained.
//!
//! ```text
//! cargo run --release -p punctual-sqlite --example group_cost -- 100000 1000
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Clock, Group, NewTask, QueueName, Stopwatch, Store, SystemClock, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

#[path = "support/cpu.rs"]
mod cpu;
use cpu::cpu_of_threads;

const LOOPS: usize = 50;

fn now() -> Timestamp {
    SystemClock.now()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, tasks, groups] = &args[..] else {
        panic!("usage: group_cost TASKS GROUPS (GROUPS 0: none)");
    };
    let (tasks, groups): (usize, usize) = (tasks.parse().expect("TASKS"), groups.parse().expect("GROUPS"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let queue = QueueName::new("q").expect("a queue");
    let due = now();

    let started = Stopwatch::start();
    for batch in 0..tasks.div_ceil(1000) {
        let items = (batch * 1000..((batch + 1) * 1000).min(tasks)).map(|i| {
            let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).expect("a key"), due);
            task.payload = serde_json::json!({ "n": i });
            if groups > 0 {
                task.group = Some(Group::new(format!("group-{}", i % groups)).expect("a group"));
            }
            task
        });
        for result in store.schedule(items.collect(), now()).await.expect("schedule") {
            result.expect("each task is scheduled");
        }
    }
    let schedule_s = started.elapsed().as_secs_f64();

    let (started, cpu) = (Stopwatch::start(), cpu_of_threads("punctual-sqlite"));
    let done = Arc::new(AtomicUsize::new(0));
    let one_lease_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    let loops: Vec<_> = (0..LOOPS)
        .map(|_| {
            let (store, done, queue) = (Arc::clone(&store), Arc::clone(&done), queue.clone());
            let one_lease_at_a_time = Arc::clone(&one_lease_at_a_time);
            tokio::spawn(async move {
                while done.load(Ordering::SeqCst) < tasks {
                    let request = LeaseRequest::new(queue.clone(), 100, Duration::from_secs(300), now());
                    let batch = {
                        let _turn = one_lease_at_a_time.lock().await;
                        store.lease(request).await.expect("lease")
                    };
                    if batch.leases.is_empty() {
                        tokio::task::yield_now().await;
                        continue;
                    }
                    let acks = batch
                        .leases
                        .iter()
                        .map(|lease| CompleteRequest::new(lease.token.clone(), Completion::Done, now()))
                        .collect();
                    for result in store.complete_many(acks).await.expect("complete") {
                        result.expect("each lease is live");
                    }
                    done.fetch_add(batch.leases.len(), Ordering::SeqCst);
                }
            })
        })
        .collect();
    for finished in loops {
        finished.await.expect("a lease loop");
    }
    let (drain_s, store_cpu) = (started.elapsed().as_secs_f64(), cpu_of_threads("punctual-sqlite") - cpu);
    store.close().await.expect("close");
    println!(
        "{{\"tasks\": {tasks}, \"groups\": {groups}, \"scheduled_per_s\": {}, \"drained_per_s\": {}, \
         \"store_cpu_us_per_task\": {:.1}}}",
        (tasks as f64 / schedule_s).round(),
        (tasks as f64 / drain_s).round(),
        store_cpu * 1e6 / tasks as f64
    );
}
