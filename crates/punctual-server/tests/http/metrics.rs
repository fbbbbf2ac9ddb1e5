//! The server's counters, built from the engine's events, after a scripted run on a
//! manual clock: guards against events counted twice, not at all, or in the wrong
//! queue, and against fire lag or handler duration measured from the wrong instants —
//! for pull workers (lease + ack) and for a worker's handlers alike. And the group
//! gauges of `/metrics`, read from the store at each scrape: guards against a gauge
//! that counts the wrong groups' tasks, ignores the queue's limit, or keeps a value
//! once a group has room again.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestServer, at, find_sample, metrics_text, sample};

use punctual_core::{
    Delivery, Engine, EngineConfig, IfExists, LeaseOptions, ManualClock, Outcome, QueueName, TaskSpec, Timestamp,
    TryEnd, Worker,
};
use punctual_server::metrics::{MetricsSnapshot, QueueCounts};
use punctual_server::{AppState, HttpOptions};
use punctual_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::timeout;

const PATIENCE: Duration = Duration::from_secs(20);
const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn queue<'a>(snapshot: &'a MetricsSnapshot, name: &str) -> &'a QueueCounts {
    snapshot.queues.iter().find(|q| q.queue.as_str() == name).unwrap_or_else(|| panic!("no counts for {name}"))
}

/// Waits until `check` holds for the server's metrics (a guard, not a sleep).
async fn until(state: &AppState<SqliteStore>, what: &str, check: impl Fn(&MetricsSnapshot) -> bool) {
    timeout(PATIENCE, async {
        while !check(&state.metrics()) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}: {:#?}", state.metrics()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_and_histograms_equal_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    let mut config = EngineConfig::default().clock(Arc::new(clock.clone()));
    config.watchdog = None;
    let engine = Engine::start(SqliteStore::open(dir.path()).unwrap(), config);
    let state = AppState::new(engine.clone(), HttpOptions::default()).await.unwrap();

    // Pull queue: six created, one replaced, one kept (not counted).
    for key in ["a", "b", "c", "d", "e", "f"] {
        engine.schedule("pull", key, TaskSpec::now().max_attempts(5)).await.unwrap();
    }
    engine.schedule("pull", "f", TaskSpec::now()).await.unwrap();
    engine.schedule("pull", "f", TaskSpec::now().if_exists(IfExists::Keep)).await.unwrap();
    assert!(engine.cancel("pull", "f").await.unwrap());
    assert!(!engine.cancel("pull", "nothing").await.unwrap(), "a cancel of nothing counts nothing");

    // Leased 2 s after due: five fires with 2 s of lag each.
    clock.advance(Duration::from_secs(2));
    let leases =
        engine.lease("pull", LeaseOptions::default().max(10).lease_for(Duration::from_secs(10))).await.unwrap();
    assert_eq!(leases.len(), 5);
    let token = |key: &str| leases.iter().find(|l| l.token.key.as_str() == key).unwrap().token.clone();

    // Acked 3 s after the lease: four outcomes, each 3 s of handler duration.
    clock.advance(Duration::from_secs(3));
    engine.ack(&token("a"), Outcome::Done).await.unwrap();
    engine.ack(&token("b"), Outcome::retry("smtp timeout")).await.unwrap();
    let acks =
        vec![(token("c"), Outcome::reschedule_in(Duration::from_secs(3600))), (token("d"), Outcome::fail("gone"))];
    assert!(engine.ack_many(acks).await.unwrap().iter().all(Result::is_ok));
    // A second ack of the same lease is refused and counts nothing.
    assert!(engine.ack(&token("a"), Outcome::Done).await.is_err());

    // "e" is never acked: its lease expires and the reaper counts it.
    clock.advance(Duration::from_secs(10));
    until(&state, "the expired lease", |m| queue(m, "pull").expired == 1).await;

    // Worker queue: three tasks run by a handler, on a clock standing still.
    let (ran, mut ran_rx) = mpsc::unbounded_channel();
    for key in ["w1", "w2", "w3"] {
        engine.schedule("push", key, TaskSpec::now()).await.unwrap();
    }
    let worker = Worker::new(engine.clone())
        .handle("push", move |d: Delivery| {
            let ran = ran.clone();
            async move {
                ran.send(d.task.key.to_string()).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    for _ in 0..3 {
        timeout(PATIENCE, ran_rx.recv()).await.expect("a handler ran").unwrap();
    }
    until(&state, "three done", |m| queue(m, "push").done == 3).await;
    worker.shutdown().await;

    let m = state.metrics();
    let pull = queue(&m, "pull");
    assert_eq!(
        (
            pull.scheduled,
            pull.fired,
            pull.done,
            pull.retried,
            pull.rescheduled,
            pull.cancelled,
            pull.dead,
            pull.expired
        ),
        (7, 5, 1, 1, 1, 1, 1, 1),
        "{pull:#?}"
    );
    assert_eq!(pull.fire_lag.count, 5);
    assert!((pull.fire_lag.sum_seconds - 10.0).abs() < 1e-6, "{:?}", pull.fire_lag);
    assert_eq!(pull.fire_lag.buckets.iter().find(|(b, _)| *b == 1.0).map(|(_, n)| *n), Some(0));
    assert_eq!(pull.fire_lag.buckets.iter().find(|(b, _)| *b == 2.5).map(|(_, n)| *n), Some(5));
    assert_eq!(pull.handler_duration.count, 4);
    assert!((pull.handler_duration.sum_seconds - 12.0).abs() < 1e-6, "{:?}", pull.handler_duration);

    let push = queue(&m, "push");
    assert_eq!((push.scheduled, push.fired, push.done, push.retried, push.dead), (3, 3, 3, 0, 0));
    assert_eq!((push.fire_lag.count, push.handler_duration.count), (3, 3));
    assert_eq!(push.fire_lag.sum_seconds, 0.0, "the clock stood still: no lag");

    for op in ["schedule", "lease", "complete", "complete_many", "get", "cancel", "reap"] {
        let found = m.store_ops.iter().find(|o| o.op == op).unwrap_or_else(|| panic!("no latency for {op}"));
        assert!(found.latency.count >= 1, "{op}");
    }
    assert_eq!(m.watchdog_restarts, vec![("consumer", 0), ("reaper", 0)]);

    // The recent history, newest first, with each try's lag and duration.
    let activity = state.activity(&QueueName::new("pull").unwrap());
    let outcomes: Vec<(&str, TryEnd)> = activity.recent.iter().map(|o| (o.key.as_str(), o.outcome)).collect();
    assert_eq!(
        outcomes,
        vec![
            ("e", TryEnd::Expired),
            ("d", TryEnd::Dead),
            ("c", TryEnd::Rescheduled),
            ("b", TryEnd::Retried),
            ("a", TryEnd::Done)
        ]
    );
    let a = &activity.recent[4];
    assert_eq!((a.lag_ms, a.duration_ms, a.attempt), (Some(2000), Some(3000), 1));
    assert_eq!(activity.fired_per_slot.iter().sum::<u64>(), 5);
    engine.shutdown().await.unwrap();
}

const HOUR: i64 = 3_600_000;

/// `punctual_groups` and `punctual_group_limited_tasks` over HTTP, on a queue with
/// `group_concurrency = 1`: a group at its limit holds its scheduled tasks in the
/// gauge until its lease is acked; tasks without a group are no group; a queue with
/// groups and no limit is counted but has no limited tasks.
#[tokio::test]
async fn the_group_gauges_follow_the_leases_of_a_limited_queue() {
    let s = TestServer::manual().await;
    let (status, body) = s.put("/v1/queues/flow.remind/settings", json!({"group_concurrency": 1})).await;
    assert_eq!(status, 201, "{body}");
    for (key, group) in
        [("wf-1.step-1", "wf-1"), ("wf-1.step-2", "wf-1"), ("wf-1.step-3", "wf-1"), ("wf-2.step-1", "wf-2")]
    {
        s.create("flow.remind", key, json!({"due_at": at(-HOUR), "group": group})).await;
    }
    s.create("flow.remind", "plain", json!({"due_at": at(-HOUR)})).await;
    s.create("order.cancel", "order-1", json!({"delay": "30m", "group": "merchant-42"})).await;
    let groups = r#"punctual_groups{queue="flow.remind"}"#;
    let limited = r#"punctual_group_limited_tasks{queue="flow.remind"}"#;

    let text = metrics_text(&s).await;
    assert_eq!((sample(&text, groups), sample(&text, limited)), (2.0, 0.0), "nothing leased yet:\n{text}");
    assert_eq!(sample(&text, r#"punctual_groups{queue="order.cancel"}"#), 1.0, "{text}");
    let unlimited = find_sample(&text, r#"punctual_group_limited_tasks{queue="order.cancel"}"#);
    assert_eq!(unlimited, None, "no group_concurrency, no limited tasks:\n{text}");

    let leases = s.lease("flow.remind", json!({"max": 10})).await;
    let keys: Vec<&str> = leases.iter().map(|l| l["task"]["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 3, "one lease per group and the ungrouped one: {keys:?}");
    let text = metrics_text(&s).await;
    assert_eq!(sample(&text, limited), 2.0, "wf-1 is at its limit with two scheduled; wf-2 has none left:\n{text}");

    let first: &Value = leases.iter().find(|l| l["task"]["group"] == "wf-1").unwrap();
    assert_eq!(s.ack(first, json!({"outcome": "done"})).await.0, 204);
    let text = metrics_text(&s).await;
    assert_eq!(sample(&text, limited), 0.0, "wf-1 has room again:\n{text}");

    let next = s.lease("flow.remind", json!({"max": 10})).await;
    assert_eq!(next.len(), 1, "wf-1's next: {next:?}");
    let text = metrics_text(&s).await;
    assert_eq!((sample(&text, groups), sample(&text, limited)), (2.0, 1.0), "step-3 waits on step-2:\n{text}");

    for lease in next.iter().chain(leases.iter().filter(|l| l["task"]["group"] != "wf-1")) {
        assert_eq!(s.ack(lease, json!({"outcome": "done"})).await.0, 204);
    }
    assert_eq!(s.delete("/v1/queues/flow.remind/tasks/wf-1.step-3").await.0, 204);
    let text = metrics_text(&s).await;
    assert_eq!((sample(&text, groups), sample(&text, limited)), (0.0, 0.0), "an emptied queue drops to 0:\n{text}");
}
