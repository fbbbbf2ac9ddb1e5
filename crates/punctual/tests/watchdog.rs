//! The watchdog against a real missed wake-up: a task written straight into the store
//! (as another process sharing it would) does not wake this engine's sleeping
//! dispatcher. Guards against timers that silently stop moving until someone restarts
//! the process: without the watchdog the task never fires; with it, the stalled wait is
//! restarted within `interval + stall_after` of engine time, and the restart counted.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use std::sync::Arc;
use std::time::Duration;

use punctual::metrics::MetricsSnapshot;
use punctual::{
    Delivery, Engine, EngineConfig, ManualClock, NewTask, Outcome, QueueName, SqliteStore, Store, TaskKey, Timestamp,
    WatchdogConfig, Worker,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const PATIENCE: Duration = Duration::from_secs(20);

fn waiting(m: &MetricsSnapshot, queue: &str) -> usize {
    m.queues.iter().find(|q| q.queue.as_str() == queue).map_or(0, |q| q.waiting_consumers)
}

/// An engine on a manual clock with a worker on "q" whose handler reports each key;
/// returns once the worker's dispatcher waits for work.
async fn stalled_setup(
    watchdog: Option<WatchdogConfig>,
) -> (Engine<SqliteStore>, ManualClock, mpsc::UnboundedReceiver<String>, punctual::RunningWorker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    let mut config = EngineConfig::default().clock(Arc::new(clock.clone()));
    config.watchdog = watchdog;
    let engine = Engine::start(SqliteStore::open(dir.path()).unwrap(), config);
    let (ran, ran_rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let ran = ran.clone();
            async move {
                ran.send(d.task.key.to_string()).unwrap();
                Ok::<_, punctual::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    timeout(PATIENCE, async {
        while waiting(&engine.metrics(), "q") == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the dispatcher waits");
    // Behind the engine's back: no wake-up is offered for this write.
    let task = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new("sneaky").unwrap(), START);
    engine.store().schedule(vec![task], START).await.unwrap().pop().unwrap().unwrap();
    (engine, clock, ran_rx, worker, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_wake_up_is_healed_and_counted() {
    let config = WatchdogConfig::new(Duration::from_secs(5), Duration::from_secs(10));
    let (engine, clock, mut ran, worker, _dir) = stalled_setup(Some(config)).await;
    // Move engine time in watchdog intervals until the handler runs: a pass needs to
    // see the queue twice without progress, the task due for 10 s.
    let fired = timeout(PATIENCE, async {
        loop {
            clock.advance(Duration::from_secs(5));
            if let Ok(Some(key)) = timeout(Duration::from_millis(100), ran.recv()).await {
                break key;
            }
        }
    })
    .await
    .expect("the watchdog restarted the stalled wait");
    assert_eq!(fired, "sneaky");
    let restarts = engine.metrics().watchdog_restarts;
    assert_eq!(restarts, vec![("consumer", 1), ("reaper", 0)]);
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_watchdog_the_same_task_stays_stuck() {
    let (engine, clock, mut ran, worker, _dir) = stalled_setup(None).await;
    clock.advance(Duration::from_secs(60));
    // The control: proving a negative needs a bounded wait.
    assert!(timeout(Duration::from_millis(300), ran.recv()).await.is_err(), "nothing woke the dispatcher");
    let stats = engine.stats(Some("q")).await.unwrap();
    assert_eq!(stats[0].scheduled, 1, "the task waits, due for a minute");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}
