//! Pausing a queue in the engine: nothing of it is handed out — a long poll waits out
//! its deadline and answers nothing, a worker delivers nothing, the watchdog does not
//! "heal" it — while schedules go on; on resume the waiting consumers take what fell
//! due meanwhile at once, in due order, each task once. Other queues never notice.
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when every task waits.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;
use std::time::Duration;

use punctual_core::events::{Event, Restarted};
use punctual_core::{
    Delivery, Engine, EngineConfig, LeaseOptions, MemoryStore, Outcome, QueueName, TaskSpec, Timestamp, TokioClock,
    WatchdogConfig, Worker,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const PATIENCE: Duration = Duration::from_secs(20);

fn engine(config: EngineConfig) -> Engine<MemoryStore> {
    Engine::start(MemoryStore::new(), config.clock(Arc::new(TokioClock::starting_at(START))))
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_on_a_paused_queue_waits_and_takes_the_task_at_resume() {
    let engine = engine(EngineConfig::default());
    engine.set_paused(&queue("q"), true);
    assert!(engine.is_paused(&queue("q")) && !engine.is_paused(&queue("other")));
    engine.schedule("q", "due", TaskSpec::now()).await.unwrap();
    engine.schedule("other", "due", TaskSpec::now()).await.unwrap();

    let wait = LeaseOptions::default().wait(Duration::from_secs(5));
    let before = engine.clock().now();
    let leased = engine.lease("q", wait).await.unwrap();
    assert!(leased.is_empty(), "a paused queue handed out {leased:?}");
    assert!(engine.clock().now().saturating_since(before) >= Duration::from_secs(5), "the poll did not wait");
    assert_eq!(engine.lease("other", LeaseOptions::default()).await.unwrap().len(), 1, "another queue is not paused");

    let polling = tokio::spawn({
        let engine = engine.clone();
        async move {
            let leased = engine.lease("q", LeaseOptions::default().wait(Duration::from_secs(60))).await.unwrap();
            (leased, engine.clock().now())
        }
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    let resumed_at = engine.clock().now();
    engine.set_paused(&queue("q"), false);
    let (leased, at) = timeout(PATIENCE, polling).await.unwrap().unwrap();
    assert_eq!(leased.iter().map(|l| l.token.key.as_str()).collect::<Vec<_>>(), ["due"]);
    assert_eq!(at, resumed_at, "the waiting poll took the task at the instant of resume");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_worker_delivers_nothing_while_paused_then_everything_in_due_order_once() {
    let engine = engine(EngineConfig::default());
    engine.set_paused(&queue("q"), true);
    let (tx, mut delivered) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(d.task.key.to_string()).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .concurrency("q", 1)
        .start()
        .unwrap();
    for n in (0..20).rev() {
        engine.schedule("q", &format!("t{n:02}"), TaskSpec::after(Duration::from_millis(100 * n))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(delivered.try_recv().is_err(), "a paused queue was delivered");

    engine.set_paused(&queue("q"), false);
    let mut order = Vec::new();
    for _ in 0..20 {
        order.push(timeout(PATIENCE, delivered.recv()).await.unwrap().unwrap());
    }
    let expected: Vec<String> = (0..20).map(|n| format!("t{n:02}")).collect();
    assert_eq!(order, expected, "resumed deliveries in due order, each once");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(delivered.try_recv().is_err(), "a task was delivered twice");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_watchdog_leaves_a_paused_queue_alone() {
    let watchdog = WatchdogConfig::new(Duration::from_secs(1), Duration::from_secs(2));
    let mut config = EngineConfig::default();
    config.watchdog = Some(watchdog);
    let engine = engine(config);
    let (tx, mut restarts) = mpsc::unbounded_channel();
    engine.observe(move |event: &Event| {
        if let Event::WatchdogRestart(Restarted::Consumer(queue)) = event {
            let _ = tx.send(queue.to_string());
        }
    });
    engine.set_paused(&queue("q"), true);
    engine.schedule("q", "overdue", TaskSpec::now()).await.unwrap();
    let leased = engine.lease("q", LeaseOptions::default().wait(Duration::from_secs(30))).await.unwrap();
    assert!(leased.is_empty());
    assert_eq!(restarts.try_recv().ok(), None, "the watchdog restarted a paused queue");
    engine.shutdown().await.unwrap();
}
