//! Groups across processes sharing one Redis: three stores leasing at once from 50
//! groups of 10 tasks with a group limit of 1 never hold two leases of one group and
//! lease each group's tasks in due order; a lease ended on one process wakes another
//! whose consumers wait on the group; and, the fairness goal, one group's
//! backlog of 100,000 due tasks never keeps 100 groups of one task waiting.
//!
//! Guards against a limit counted per process (each node would lease a task of every
//! group), a count that a concurrent lease and completion race past (two leases of a
//! group at once, or a group leased out of order), a group with room that other nodes
//! learn of only at their next safety poll, and leases that walk a backlog in due
//! order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseBatch, LeaseRequest};
use punctual_core::{Group, NewTask, QueueName, Store, TaskKey, Timestamp, Wakeup};
use punctual_redis::RedisStore;
use tokio::sync::broadcast;

use crate::support;

const NOW: i64 = 1_700_000_000_000;
const WAIT: Duration = Duration::from_secs(60);

pub(crate) fn at_ms(ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW + ms)
}

pub(crate) fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("a queue")
}

pub(crate) fn grouped(q: &str, key: &str, due: Timestamp, group: &str) -> NewTask {
    let mut task = NewTask::new(queue(q), TaskKey::new(key).expect("a key"), due);
    task.group = Some(Group::new(group).expect("a group"));
    task
}

pub(crate) async fn schedule(store: &impl Store, tasks: Vec<NewTask>, now: Timestamp) {
    for chunk in tasks.chunks(1000) {
        for result in store.schedule(chunk.to_vec(), now).await.expect("schedule") {
            result.expect("each write applies");
        }
    }
}

pub(crate) async fn lease(store: &impl Store, q: &str, max: u32, limit: Option<u32>, now: Timestamp) -> LeaseBatch {
    let req = LeaseRequest::new(queue(q), max, Duration::from_secs(300), now).group_limit(limit);
    store.lease(req).await.expect("lease")
}

/// Which group each process holds a lease of, and the order each group was leased in.
#[derive(Default)]
struct Ledger {
    held: BTreeMap<String, String>,
    order: BTreeMap<String, Vec<String>>,
    overlaps: Vec<String>,
}

/// Leases (at most 4 a call, group limit 1) and completes until `done` reaches `total`,
/// noting in `ledger` each lease from when its answer arrives until just before its
/// completion is sent: a second lease of a group noted meanwhile is an overlap.
async fn work(
    store: Arc<RedisStore>,
    q: &'static str,
    ledger: Arc<Mutex<Ledger>>,
    done: Arc<AtomicUsize>,
    total: usize,
) {
    let now = at_ms(3_600_000);
    while done.load(Ordering::SeqCst) < total {
        let batch = lease(&*store, q, 4, Some(1), now).await;
        if batch.leases.is_empty() {
            tokio::task::yield_now().await;
            continue;
        }
        {
            let mut ledger = ledger.lock().expect("the ledger");
            for lease in &batch.leases {
                let (group, key) =
                    (lease.task.group.as_ref().expect("grouped").to_string(), lease.task.key.to_string());
                if let Some(other) = ledger.held.insert(group.clone(), key.clone()) {
                    ledger.overlaps.push(format!("{key} leased while {other} of {group} was"));
                }
                ledger.order.entry(group).or_default().push(key);
            }
        }
        // Hold the leases a moment, so another process's lease of a held group would
        // land while they are noted.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let mut completions = Vec::new();
        {
            let mut ledger = ledger.lock().expect("the ledger");
            for lease in &batch.leases {
                ledger.held.remove(lease.task.group.as_ref().expect("grouped").as_str());
                completions.push(CompleteRequest::new(lease.token.clone(), Completion::Done, now));
            }
        }
        for result in store.complete_many(completions).await.expect("complete") {
            result.expect("each lease is still live");
            done.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_processes_never_hold_two_leases_of_a_group_and_lease_each_group_in_due_order() {
    let stores = futures_util::future::join_all((0..3).map(|_| support::on_server_under("group-nodes"))).await;
    hold_each_groups_limit_and_due_order(stores, "orders", |group, t| format!("{group}-t{t}")).await;
}

/// `stores` (processes on one store) lease with a group limit of 1 and complete 50
/// groups × 10 tasks of `q`, task t of group g keyed `key_of(g, t)` and due at t s + g
/// ms (each group's in the order of t, and the groups' interleaved): no two leases of a
/// group at once, each group leased in due order, each task completed once.
pub(crate) async fn hold_each_groups_limit_and_due_order(
    stores: Vec<RedisStore>,
    q: &'static str,
    key_of: fn(&str, i64) -> String,
) {
    let stores: Vec<Arc<RedisStore>> = stores.into_iter().map(Arc::new).collect();
    let tasks: Vec<NewTask> = (0..10)
        .flat_map(|t| {
            (0..50).map(move |g| {
                let group = format!("g{g:02}");
                grouped(q, &key_of(&group, t), at_ms(t * 1000 + g), &group)
            })
        })
        .collect();
    schedule(&*stores[0], tasks, at_ms(0)).await;
    let (ledger, done) = (Arc::new(Mutex::new(Ledger::default())), Arc::new(AtomicUsize::new(0)));
    let workers = stores
        .iter()
        .map(|store| tokio::spawn(work(Arc::clone(store), q, Arc::clone(&ledger), Arc::clone(&done), 500)));
    let finished = tokio::time::timeout(WAIT, futures_util::future::join_all(workers)).await;
    for worker in finished.expect("500 tasks leased and completed in time") {
        worker.expect("a worker");
    }
    let ledger = ledger.lock().expect("the ledger");
    assert!(ledger.overlaps.is_empty(), "two leases of one group at once: {:?}", ledger.overlaps);
    assert_eq!(ledger.order.len(), 50);
    for (group, keys) in &ledger.order {
        let expected: Vec<String> = (0..10).map(|t| key_of(group, t)).collect();
        assert_eq!(keys, &expected, "{group} out of due order");
    }
    assert_eq!(done.load(Ordering::SeqCst), 500, "each task completed once");
}

/// Schedules probes in fresh queues until one's wake-up is heard: the store subscribes
/// on its own time.
async fn until_subscribed(store: &impl Store, wakeups: &mut broadcast::Receiver<Wakeup>) {
    for probe in 0.. {
        let name = format!("probe-{probe}");
        schedule(store, vec![NewTask::new(queue(&name), TaskKey::new("k").expect("a key"), at_ms(0))], at_ms(0)).await;
        let heard = tokio::time::timeout(Duration::from_millis(200), async {
            while wakeups.recv().await.expect("the wake-up channel").queue.as_str() != name {}
        });
        if heard.await.is_ok() {
            return;
        }
        assert!(probe < 50, "the store never heard its own wake-ups");
    }
}

#[tokio::test]
async fn a_lease_ended_on_one_process_wakes_another_waiting_on_the_group() {
    let (prefix, q) = ("group-wake", "orders");
    let (first, second) = (support::on_server_under(prefix).await, support::on_server_under(prefix).await);
    let mut wakeups = second.peers().expect("a shared store has peers").wakeups;
    until_subscribed(&second, &mut wakeups).await;
    let tasks = vec![grouped(q, "one", at_ms(-2000), "customer-42"), grouped(q, "two", at_ms(-1000), "customer-42")];
    schedule(&first, tasks, at_ms(-3000)).await;
    let taken = lease(&first, q, 10, Some(1), at_ms(0)).await;
    assert_eq!(taken.leases.len(), 1);
    let waiting = lease(&second, q, 10, Some(1), at_ms(0)).await;
    assert_eq!((waiting.leases.len(), waiting.next_due), (0, None), "the group is at its limit: no work");
    while wakeups.try_recv().is_ok() {}
    let done = CompleteRequest::new(taken.leases[0].token.clone(), Completion::Done, at_ms(0));
    first.complete(done).await.expect("complete");
    loop {
        let wakeup = tokio::time::timeout(WAIT, wakeups.recv()).await.expect("a wake-up in time").expect("channel");
        if wakeup.queue.as_str() == q {
            assert_eq!(wakeup.due_at, at_ms(-1000), "the group's next task");
            break;
        }
    }
    let second_lease = lease(&second, q, 10, Some(1), at_ms(0)).await;
    assert_eq!(second_lease.leases.iter().map(|l| l.task.key.as_str()).collect::<Vec<_>>(), ["two"]);
}

#[tokio::test]
async fn a_backlog_of_100000_never_keeps_100_groups_of_one_waiting() {
    let (prefix, q) = ("group-fair", "fair");
    let store = support::on_server_under(prefix).await;
    let mut tasks: Vec<NewTask> =
        (0..100_000).map(|i| grouped(q, &format!("big-{i:06}"), at_ms(-60_000), "big")).collect();
    tasks.extend((0..100).map(|i| grouped(q, &format!("small-{i:03}"), at_ms(-1000), &format!("small-{i:03}"))));
    schedule(&store, tasks, at_ms(-61_000)).await;
    let (mut leased, mut small_seen, mut last_small_at) = (0, 0, 0);
    while leased < 1000 && small_seen < 100 {
        let batch = lease(&store, q, 100, None, at_ms(0)).await;
        for lease in &batch.leases {
            leased += 1;
            if lease.task.key.as_str().starts_with("small-") {
                small_seen += 1;
                last_small_at = leased;
            }
        }
    }
    println!("the 100 groups of one task were all handed out within the first {last_small_at} leases");
    assert_eq!(small_seen, 100, "groups of one still waiting after {leased} leases");
    assert!(last_small_at <= 1000);
}
