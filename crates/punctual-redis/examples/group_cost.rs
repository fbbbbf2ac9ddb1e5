//! What groups cost Redis, at the store: the CPU Redis spends per task (`INFO cpu`)
//! to schedule a burst of due tasks in batches of 1,000, then to lease them, 8 loops
//! of 100 at a time, each answer acknowledged with one `complete_many`, the tasks
//! spread over `GROUPS` groups (0: none), with a group limit of `LIMIT` (0: none).
//! One JSON line. Run it against a private Redis, as BENCHMARKS.md does:
//!
//! ```text
//! cargo run --release -p punctual-redis --example group_cost -- redis://127.0.0.1:6390 50000 1000 0
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Group, NewTask, QueueName, Store, TaskKey};
use punctual_redis::{RedisConfig, RedisStore, Target};

/// Redis' CPU seconds so far, system and user.
fn redis_cpu(connection: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(connection).expect("INFO cpu");
    info.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| *name == "used_cpu_sys" || *name == "used_cpu_user")
        .map(|(_, value)| value.trim().parse::<f64>().expect("a number of seconds"))
        .sum()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, tasks, groups, limit] = &args[..] else {
        panic!("usage: group_cost REDIS_URL TASKS GROUPS LIMIT (GROUPS, LIMIT 0: none)");
    };
    let (tasks, groups, limit): (usize, usize, u32) =
        (tasks.parse().expect("TASKS"), groups.parse().expect("GROUPS"), limit.parse().expect("LIMIT"));
    let mut config = RedisConfig::new(Target::parse(url).expect("a Redis URL"));
    config.prefix = format!("cost{}", std::process::id());
    let store = Arc::new(RedisStore::connect(config).await.expect("connect"));
    let mut connection = redis::Client::open(url.as_str()).expect("a client").get_connection().expect("a connection");
    let queue = QueueName::new("q").expect("a queue");
    let now = store.clock().now();

    let clock = store.clock();
    let seconds_since = |at: punctual_core::Timestamp| clock.now().saturating_since(at).as_secs_f64();
    let (cpu, started) = (redis_cpu(&mut connection), clock.now());
    for batch in 0..tasks.div_ceil(1000) {
        let items = (batch * 1000..((batch + 1) * 1000).min(tasks)).map(|i| {
            let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).expect("a key"), now);
            task.payload = serde_json::json!({ "n": i });
            if groups > 0 {
                task.group = Some(Group::new(format!("customer-{}", i % groups)).expect("a group"));
            }
            task
        });
        for result in store.schedule(items.collect(), now).await.expect("schedule") {
            result.expect("each task is scheduled");
        }
    }
    let (schedule_cpu, schedule_s) = (redis_cpu(&mut connection) - cpu, seconds_since(started));

    let (cpu, started) = (redis_cpu(&mut connection), clock.now());
    let done = Arc::new(AtomicUsize::new(0));
    let loops = (0..8).map(|_| {
        let (store, done, queue) = (Arc::clone(&store), Arc::clone(&done), queue.clone());
        tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < tasks {
                let now = store.clock().now();
                let request = LeaseRequest::new(queue.clone(), 100, std::time::Duration::from_secs(300), now)
                    .group_limit((limit > 0).then_some(limit));
                let batch = store.lease(request).await.expect("lease");
                if batch.leases.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                let acks =
                    batch.leases.iter().map(|l| CompleteRequest::new(l.token.clone(), Completion::Done, now)).collect();
                for result in store.complete_many(acks).await.expect("complete") {
                    result.expect("each lease is live");
                }
                done.fetch_add(batch.leases.len(), Ordering::SeqCst);
            }
        })
    });
    for finished in futures_util::future::join_all(loops).await {
        finished.expect("a lease loop");
    }
    let (lease_cpu, lease_s) = (redis_cpu(&mut connection) - cpu, seconds_since(started));
    let per_task = |cpu: f64| (cpu / tasks as f64 * 1e7).round() / 10.0;
    println!(
        "{{\"tasks\": {tasks}, \"groups\": {groups}, \"limit\": {limit}, \"schedule_us\": {}, \"lease_ack_us\": {}, \
         \"together_us\": {}, \"schedule_per_s\": {}, \"lease_ack_per_s\": {}}}",
        per_task(schedule_cpu),
        per_task(lease_cpu),
        per_task(schedule_cpu + lease_cpu),
        (tasks as f64 / schedule_s).round(),
        (tasks as f64 / lease_s).round()
    );
}
