//! Dead tasks in bulk: retrying many at once (every dead task, those carrying a tag,
//! those among some keys), and deleting those past a retention.
//!
//! Guards against a bulk retry that misses dead tasks past its first batch, revives a
//! task that is not dead or belongs to another queue, retries a task twice in one walk
//! (one it revived that died again), or leaves consumers asleep; and against a
//! retention sweep that deletes a task that died too recently, is in another state or
//! queue, leaves its tags behind, or misreports when the next one is due to go.

use std::collections::BTreeSet;
use std::sync::Arc;

use punctual_core::store::{Completion, DeadSelection, RetryDeadBatchRequest, RetryDeadRequest, SweepRequest, Swept};
use punctual_core::{Engine, EngineConfig, Error, LeaseOptions, ManualClock, Store, TaskSpec, TaskState, Timestamp};

use super::support::*;

/// Follows a bulk retry's cursor from its first batch; the batches' counts.
async fn walk<S: Store>(store: &S, first: RetryDeadBatchRequest) -> Vec<u64> {
    let mut counts = Vec::new();
    let mut request = first;
    for _ in 0..1000 {
        let batch = store.retry_dead_batch(request.clone()).await.unwrap_or_else(|e| panic!("retry_dead_batch: {e}"));
        counts.push(batch.retried);
        match batch.next_cursor {
            Some(cursor) => request = request.after(cursor),
            None => return counts,
        }
    }
    panic!("the bulk retry did not end after 1,000 batches");
}

fn retry_request(queue_name: &str, selection: DeadSelection, limit: u32, now: Timestamp) -> RetryDeadBatchRequest {
    RetryDeadBatchRequest::new(queue(queue_name), selection, limit, now)
}

fn keys_in(tasks: &[punctual_core::Task]) -> BTreeSet<String> {
    tasks.iter().map(|t| t.key.to_string()).collect()
}

/// `retry_dead_batch` contract, every dead task: the walk puts each back as
/// `retry_dead` does (due now, attempts 0, `last_error` kept), whatever the batch size,
/// leaves other states and queues alone, and does not take again a task it revived that
/// died again during the walk (due after the first batch's now).
pub async fn retry_dead_batch_of_every_dead_task_retries_each_once<S: Store>(store: S) {
    for i in 0..7 {
        create(&store, new_task("orders", &format!("dead-{i}"), at_secs(i)), T0).await;
    }
    create(&store, new_task("mail", "dead", T0), T0).await;
    assert_eq!(kill_due(&store, "orders", at_secs(10)).await.len(), 7);
    assert_eq!(kill_due(&store, "mail", at_secs(10)).await.len(), 1);
    create(&store, new_task("orders", "leased", at_secs(10)), T0).await;
    lease_one(&store, "orders", secs(3600), at_secs(10)).await;
    create(&store, new_task("orders", "scheduled", at_secs(600)), T0).await;
    let untouched = [stored(&store, "orders", "leased").await, stored(&store, "orders", "scheduled").await];

    // Batches of 3: the first at 100 s, the rest at 101 s. Those revived at 101 s are due
    // after the walk's bound: the first batch that revives some, they die again.
    let mut request = retry_request("orders", DeadSelection::All, 3, at_secs(100));
    let first = store.retry_dead_batch(request.clone()).await.expect("retry_dead_batch");
    assert!(first.retried <= 3, "a batch of 3 retried {}", first.retried);
    let mut total = first.retried;
    request.now = at_secs(101);
    let mut cursor = first.next_cursor;
    let mut died_again = BTreeSet::new();
    while let Some(next) = cursor.take() {
        request = request.after(next);
        let batch = store.retry_dead_batch(request.clone()).await.expect("retry_dead_batch");
        total += batch.retried;
        cursor = batch.next_cursor;
        if batch.retried > 0 {
            for lease in lease(&store, "orders", 10, secs(300), at_secs(101)).await.leases {
                let completion = if lease.task.due_at == at_secs(101) {
                    died_again.insert(lease.token.key.to_string());
                    Completion::Dead { error: "gave up again".into() }
                } else {
                    Completion::Done
                };
                complete_ok(&store, &lease.token, completion, at_secs(101)).await;
            }
            break;
        }
    }
    if let Some(next) = cursor {
        total += walk(&store, request.after(next)).await.iter().sum::<u64>();
    }
    assert!(!died_again.is_empty(), "set-up: some were revived at 101 s and died again");
    assert_eq!(total, 7, "each dead task once, none that died again during the walk");

    let dead = list_all(&store, "orders", Some(TaskState::Dead)).await;
    assert_eq!(keys_in(&dead), died_again, "only those that died again during the walk are dead");
    for task in list_all(&store, "orders", Some(TaskState::Scheduled)).await {
        if task.key.as_str().starts_with("dead-") {
            assert_eq!((task.due_at, task.attempts), (at_secs(101), 0), "{} is due now, attempts reset", task.key);
            assert_eq!(task.last_error.as_deref(), Some("gave up"), "last_error is kept for reference");
        }
    }
    for task in untouched {
        assert_eq!(stored(&store, "orders", task.key.as_str()).await, task, "{} is not dead", task.key);
    }
    assert_eq!(stored(&store, "mail", "dead").await.state, TaskState::Dead, "another queue's dead task");

    // A second walk takes those that died again, and an unknown queue answers nothing.
    let second = walk(&store, retry_request("orders", DeadSelection::All, 500, at_secs(200))).await;
    assert_eq!(second.iter().sum::<u64>(), died_again.len() as u64);
    assert!(list_all(&store, "orders", Some(TaskState::Dead)).await.is_empty());
    assert_eq!(
        walk(&store, retry_request("unknown", DeadSelection::All, 500, at_secs(200))).await.iter().sum::<u64>(),
        0
    );
}

/// `retry_dead_batch` contract, by tag: only the queue's dead tasks carrying it, each
/// once, however many batches the walk over the tag's tasks (dead or not) takes.
pub async fn retry_dead_batch_by_tag_retries_only_its_dead_tasks<S: Store>(store: S) {
    for task in [
        tagged("flow", "dead-1", &["wf-1"]),
        tagged("flow", "dead-2", &["wf-1", "wf-2"]),
        tagged("flow", "dead-3", &["wf-1"]),
        tagged("flow", "dead-other-tag", &["wf-2"]),
        tagged("flow", "dead-untagged", &[]),
        tagged("other", "dead-1", &["wf-1"]),
    ] {
        create(&store, task, T0).await;
    }
    kill_due(&store, "flow", T0).await;
    kill_due(&store, "other", T0).await;
    create(&store, tagged("flow", "leased", &["wf-1"]), T0).await;
    lease_one(&store, "flow", secs(3600), T0).await;
    let mut later = tagged("flow", "scheduled", &["wf-1"]);
    later.due_at = at_secs(600);
    create(&store, later, T0).await;
    let untouched = [stored(&store, "flow", "leased").await, stored(&store, "flow", "scheduled").await];

    let counts = walk(&store, retry_request("flow", DeadSelection::Tagged(tag("wf-1")), 2, at_secs(60))).await;
    assert_eq!(
        counts.iter().sum::<u64>(),
        3,
        "dead-1, dead-2 and dead-3, in batches of two of the tag's five: {counts:?}"
    );
    for name in ["dead-1", "dead-2", "dead-3"] {
        let task = stored(&store, "flow", name).await;
        assert_eq!((task.state, task.due_at, task.attempts), (TaskState::Scheduled, at_secs(60), 0), "{name}");
    }
    let dead = list_all(&store, "flow", Some(TaskState::Dead)).await;
    assert_eq!(keys_in(&dead), ["dead-other-tag", "dead-untagged"].map(String::from).into());
    for task in untouched {
        assert_eq!(stored(&store, "flow", task.key.as_str()).await, task, "{} is not dead", task.key);
    }
    assert_eq!(stored(&store, "other", "dead-1").await.state, TaskState::Dead, "another queue's");
    let none = walk(&store, retry_request("flow", DeadSelection::Tagged(tag("unknown")), 2, at_secs(60))).await;
    assert_eq!(none.iter().sum::<u64>(), 0);
}

/// `retry_dead_batch` contract, by keys: those naming a dead task of the queue, in one
/// batch; a key naming a task in another state, or none, is passed over.
pub async fn retry_dead_batch_by_keys_retries_the_dead_among_them<S: Store>(store: S) {
    for name in ["a", "b", "c"] {
        create(&store, new_task("orders", name, T0), T0).await;
    }
    create(&store, new_task("mail", "a", T0), T0).await;
    kill_due(&store, "orders", T0).await;
    kill_due(&store, "mail", T0).await;
    create(&store, new_task("orders", "scheduled", at_secs(600)), T0).await;
    let before = stored(&store, "orders", "scheduled").await;

    let keys = ["a", "scheduled", "missing", "c"].map(key).to_vec();
    let batch = store
        .retry_dead_batch(retry_request("orders", DeadSelection::Keys(keys), 10, at_secs(60)))
        .await
        .expect("retry_dead_batch");
    assert_eq!((batch.retried, batch.next_cursor), (2, None), "a and c, in one batch");
    for name in ["a", "c"] {
        assert_eq!(stored(&store, "orders", name).await.state, TaskState::Scheduled, "{name}");
    }
    assert_eq!(stored(&store, "orders", "b").await.state, TaskState::Dead, "b was not asked for");
    assert_eq!(stored(&store, "orders", "scheduled").await, before);
    assert_eq!(get(&store, "orders", "missing").await, None, "a key naming no task creates none");
    assert_eq!(stored(&store, "mail", "a").await.state, TaskState::Dead, "the same key in another queue");
}

async fn sweep<S: Store>(store: &S, queue_name: &str, died_by: Timestamp, limit: u32) -> Swept {
    store
        .sweep_dead(SweepRequest::new(queue(queue_name), died_by, limit))
        .await
        .unwrap_or_else(|e| panic!("sweep_dead of {queue_name}: {e}"))
}

/// `sweep_dead` contract: deletes dead tasks of the queue that died at or before
/// `died_by` (their `updated_at`), those that died first first, up to `limit`, with
/// their tags; never a task in another state, of another queue, or one that died later
/// (after a retry, a task dies anew); and tells when the earliest left died.
pub async fn sweep_dead_deletes_what_died_by_the_time_those_first<S: Store>(store: S) {
    let mut first = new_task("orders", "died-10", T0);
    first.tags = vec![tag("wf-1")];
    create(&store, first, T0).await;
    kill_due(&store, "orders", at_secs(10)).await;
    create(&store, new_task("orders", "died-20", T0), T0).await;
    kill_due(&store, "orders", at_secs(20)).await;
    let mut reaped = new_task("orders", "died-30", T0);
    reaped.max_attempts = 1;
    create(&store, reaped, T0).await;
    lease_one(&store, "orders", secs(30), T0).await;
    assert_eq!(reap(&store, at_secs(30), 10).await.reaped.len(), 1, "its only attempt expired: dead at 30 s");
    create(&store, new_task("mail", "died-5", T0), T0).await;
    kill_due(&store, "mail", at_secs(5)).await;
    let mut leased = new_task("orders", "leased", at_secs(30));
    leased.tags = vec![tag("wf-1")];
    create(&store, leased, T0).await;
    lease_one(&store, "orders", secs(3600), at_secs(30)).await;
    create(&store, new_task("orders", "scheduled", at_secs(600)), T0).await;
    let untouched = [stored(&store, "orders", "leased").await, stored(&store, "orders", "scheduled").await];
    assert_eq!(stored(&store, "orders", "died-30").await.updated_at, at_secs(30), "set-up: reaped dead at 30 s");

    assert_eq!(sweep(&store, "orders", at_secs(20), 1).await, Swept::new(1, Some(at_secs(20))), "the first to die");
    assert_eq!(get(&store, "orders", "died-10").await, None);
    assert_eq!(sweep(&store, "orders", at_secs(20), 10).await, Swept::new(1, Some(at_secs(30))));
    assert_eq!(get(&store, "orders", "died-20").await, None);
    assert_eq!(sweep(&store, "orders", at_secs(29), 10).await, Swept::new(0, Some(at_secs(30))), "died at 30 s");
    let tagged = list_all_tagged(&store, "orders", "wf-1", None, 10).await;
    assert_eq!(keys_in(&tagged), ["leased"].map(String::from).into(), "the swept task's tags went with it");

    // Retried and dead again at 50 s: it died at 50 s now.
    store
        .retry_dead(RetryDeadRequest::new(queue("orders"), key("died-30"), at_secs(40)))
        .await
        .expect("retry_dead")
        .expect("dead");
    kill_due(&store, "orders", at_secs(50)).await;
    assert_eq!(sweep(&store, "orders", at_secs(45), 10).await, Swept::new(0, Some(at_secs(50))));
    assert_eq!(sweep(&store, "orders", at_secs(50), 10).await, Swept::new(1, None), "none left");
    for task in untouched {
        assert_eq!(stored(&store, "orders", task.key.as_str()).await, task, "{} is not dead", task.key);
    }
    assert_eq!(stored(&store, "mail", "died-5").await.state, TaskState::Dead, "another queue's dead task");
    assert_eq!(sweep(&store, "unknown", Timestamp::MAX, 10).await, Swept::new(0, None));
    assert_eq!(sweep(&store, "mail", at_secs(4), 10).await, Swept::new(0, Some(at_secs(5))));
}

/// `Engine::retry_dead_many`: every dead task, those carrying a tag, or some keys (each
/// once however often given, at most the batch limit), past the store's batches; a
/// consumer waiting on the queue is woken at once.
pub async fn engine_retries_dead_tasks_in_bulk_and_wakes_a_waiting_consumer<S: Store>(store: S) {
    let (engine, _clock, mut signals) = start_signalling_engine(store, T0);
    let mut tasks = Vec::new();
    for i in 0..520 {
        let spec = TaskSpec::now().max_attempts(1);
        let spec = if i % 2 == 0 { spec.tag("even") } else { spec };
        tasks.push((format!("k{i:03}"), spec));
    }
    for result in engine.schedule_many("orders", tasks).await.expect("schedule_many") {
        result.expect("schedule");
    }
    engine.schedule("mail", "dead", TaskSpec::now()).await.expect("schedule");
    assert_eq!(kill_due(engine.store(), "orders", T0).await.len(), 520);
    kill_due(engine.store(), "mail", T0).await;

    let too_many: Vec<_> = (0..=engine.limits().max_batch).map(|i| key(&format!("k{i}"))).collect();
    assert_refused(engine.retry_dead_many("orders", DeadSelection::Keys(too_many)).await, "keys", "too many keys");
    assert_refused(engine.retry_dead_many("orders/eu", DeadSelection::All).await, "queue", "a bad queue");
    assert_eq!(stats(engine.store(), Some("orders")).await[0].dead, 520, "refused calls changed nothing");

    signals.clear();
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("orders", LeaseOptions::default().max(10).wait(secs(60))).await })
    };
    // It asked, found nothing due, and waits (its clock stands still: only a wake-up
    // can end the wait before the end of the check).
    assert_eq!(signals.lease_on("orders").await, 0, "nothing is due before the retry");
    let keys = ["k001", "k001", "k003", "missing"].map(key).to_vec();
    assert_eq!(engine.retry_dead_many("orders", DeadSelection::Keys(keys)).await.expect("by keys"), 2);
    let mut woken = within("the waiting consumer", waiting).await.expect("the lease task").expect("lease");
    // A sharded store retries atomically per shard only (`Store::retry_dead_batch`): the
    // consumer may wake on the first shard's retry, before the other's. Both are done
    // now that the call answered, so what it did not get is due at once.
    if woken.len() < 2 {
        woken.extend(engine.lease("orders", LeaseOptions::default().max(10)).await.expect("lease the other"));
    }
    assert_eq!(keys_of(&woken).into_iter().collect::<BTreeSet<_>>(), ["k001", "k003"].map(String::from).into());

    assert_eq!(engine.retry_dead_many("orders", DeadSelection::Tagged(tag("even"))).await.expect("by tag"), 260);
    assert_eq!(engine.retry_dead_many("orders", DeadSelection::All).await.expect("all"), 258);
    assert_eq!(engine.retry_dead_many("orders", DeadSelection::All).await.expect("all again"), 0);
    let counts = &stats(engine.store(), Some("orders")).await[0];
    assert_eq!((counts.scheduled, counts.leased, counts.dead), (518, 2, 0));
    assert_eq!(stored(engine.store(), "mail", "dead").await.state, TaskState::Dead, "another queue's dead task");
    within("the engine to shut down", engine.shutdown()).await.expect("shutdown");
    match engine.retry_dead_many("orders", DeadSelection::All).await {
        Err(Error::ShuttingDown) => {}
        other => panic!("a bulk retry after shutdown: {other:?}"),
    }
}

/// Retention (`EngineConfig::dead_retention`): the engine deletes a queue's dead tasks
/// once they have been dead that long, on its clock, and no sooner; queues without one
/// keep theirs. It looks again when the next is due to go, not before.
pub async fn engine_deletes_dead_tasks_once_past_the_queues_retention<S: Store>(store: S) {
    let (observer, mut signals) = signals();
    let clock = ManualClock::new(T0);
    let config = EngineConfig::default()
        .clock(Arc::new(clock.clone()))
        .dead_retention(queue("orders"), secs(3600))
        .observe(observer);
    let engine = Engine::start(store, config);
    assert_eq!(signals.sweep_of("orders").await, 0, "a sweep at start, with nothing dead");
    engine_kill(&engine, "orders", "early").await;
    engine_kill(&engine, "mail", "kept").await;
    clock.advance(secs(1800));
    engine_kill(&engine, "orders", "late").await;

    clock.advance(secs(1800));
    assert_eq!(signals.sweep_of("orders").await, 1, "the next sweep is an hour after the start, and deletes one");
    assert_eq!(get(engine.store(), "orders", "early").await, None, "dead for an hour");
    assert_eq!(stored(engine.store(), "orders", "late").await.state, TaskState::Dead, "dead for half an hour");

    clock.advance(secs(1800));
    assert_eq!(signals.sweep_of("orders").await, 1, "the next, when 'late' has been dead an hour");
    assert_eq!(get(engine.store(), "orders", "late").await, None);
    assert_eq!(stored(engine.store(), "mail", "kept").await.state, TaskState::Dead, "mail keeps its dead tasks");
    within("the engine to shut down", engine.shutdown()).await.expect("shutdown");
}

/// Retention set while the engine runs (`Engine::set_dead_retention`, a config file
/// read again): a queue given one is swept at once, by it; the same retentions set
/// again change nothing (the next sweep stays when the next task is due to go); a
/// changed one is swept at once by the new one.
pub async fn engine_applies_a_dead_retention_set_while_it_runs<S: Store>(store: S) {
    let (observer, mut signals) = signals();
    let clock = ManualClock::new(T0);
    let engine = Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())).observe(observer));
    engine_kill(&engine, "orders", "early").await;
    clock.advance(secs(7200));
    engine_kill(&engine, "orders", "late").await;

    let hour: std::collections::HashMap<_, _> = [(queue("orders"), secs(3600))].into();
    engine.set_dead_retention(hour.clone());
    assert_eq!(signals.sweep_of("orders").await, 1, "swept at once: 'early' has been dead two hours");
    assert_eq!(get(engine.store(), "orders", "early").await, None);
    engine.set_dead_retention(hour);
    clock.advance(secs(3600));
    assert_eq!(signals.sweep_of("orders").await, 1, "the next sweep: when 'late' has been dead an hour");
    assert_eq!(get(engine.store(), "orders", "late").await, None);

    engine_kill(&engine, "orders", "third").await;
    clock.advance(secs(1800));
    engine.set_dead_retention([(queue("orders"), secs(1800))].into());
    assert_eq!(signals.sweep_of("orders").await, 1, "a shorter retention, swept at once");
    within("the engine to shut down", engine.shutdown()).await.expect("shutdown");
}

/// Kills a task of `queue_name` through `engine`, now: one try, leased, its handler
/// gives up.
async fn engine_kill<S: Store>(engine: &Engine<S>, queue_name: &str, key_name: &str) {
    engine.schedule(queue_name, key_name, TaskSpec::now().max_attempts(1)).await.expect("schedule");
    let lease = engine_lease_one(engine, queue_name, secs(30)).await;
    engine.ack(&lease.token, punctual_core::Outcome::fail("gave up")).await.expect("ack");
}
