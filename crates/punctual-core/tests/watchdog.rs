//! The watchdog against a real missed wake-up: a task written straight into the store
//! (as another process sharing it would) does not wake this engine's sleeping
//! dispatcher. Guards against timers that silently stop moving until someone restarts
//! the process: without the watchdog the task never fires; with it, the stalled wait is
//! restarted within `interval + stall_after` of engine time, and the restart counted.
//! And against a hung reaper (a store call that never returns) leaving expired leases
//! unreaped for ever: the watchdog replaces it.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::Faulty;
use punctual_core::events::{Event, Restarted, StoreOp};
use punctual_core::{
    Delivery, Engine, EngineConfig, LeaseOptions, ManualClock, MemoryStore, NewTask, Outcome, QueueName, Store,
    TaskKey, TaskSpec, Timestamp, WatchdogConfig, Worker,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const PATIENCE: Duration = Duration::from_secs(20);

fn waiting<S: Store>(engine: &Engine<S>, queue: &str) -> usize {
    engine.waiting_consumers().iter().find(|(q, _)| q.as_str() == queue).map_or(0, |(_, n)| *n)
}

/// What the engine says happened, counted as it happens: `(consumer restarts, reaper
/// restarts, expired leases)`.
#[derive(Clone, Default)]
struct Counts(Arc<std::sync::Mutex<(u64, u64, u64)>>);

impl Counts {
    fn of<S: Store>(engine: &Engine<S>) -> Counts {
        let counts = Counts::default();
        let seen = counts.clone();
        engine.observe(move |event: &Event| {
            let mut c = seen.0.lock().unwrap();
            match event {
                Event::WatchdogRestart(Restarted::Consumer(_)) => c.0 += 1,
                Event::WatchdogRestart(Restarted::Reaper) => c.1 += 1,
                Event::LeaseExpired { .. } => c.2 += 1,
                _ => {}
            }
        });
        counts
    }

    fn restarts(&self) -> Vec<(&'static str, u64)> {
        let c = self.0.lock().unwrap();
        vec![("consumer", c.0), ("reaper", c.1)]
    }

    fn expired(&self) -> u64 {
        self.0.lock().unwrap().2
    }
}

/// An engine on a manual clock with a worker on "q" whose handler reports each key;
/// returns once the worker's dispatcher waits for work.
async fn stalled_setup(
    watchdog: Option<WatchdogConfig>,
) -> (Engine<MemoryStore>, Counts, ManualClock, mpsc::UnboundedReceiver<String>, punctual_core::RunningWorker) {
    let clock = ManualClock::new(START);
    let mut config = EngineConfig::default().clock(Arc::new(clock.clone()));
    config.watchdog = watchdog;
    let engine = Engine::start(MemoryStore::new(), config);
    let counts = Counts::of(&engine);
    let mut events = engine.subscribe();
    let (ran, ran_rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let ran = ran.clone();
            async move {
                ran.send(d.task.key.to_string()).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    // Its first look at the store is over (it found nothing): from now on it sleeps.
    let looked = events.wait_for(PATIENCE, |e| matches!(e, Event::StoreCall { op: StoreOp::Lease, .. }).then_some(()));
    looked.await.expect("the dispatcher looked once");
    assert_eq!(waiting(&engine, "q"), 1, "the dispatcher waits");
    // Behind the engine's back: no wake-up is offered for this write.
    let task = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new("sneaky").unwrap(), START);
    engine.store().schedule(vec![task], START).await.unwrap().pop().unwrap().unwrap();
    (engine, counts, clock, ran_rx, worker)
}

#[tokio::test(start_paused = true)]
async fn a_missed_wake_up_is_healed_and_counted() {
    let config = WatchdogConfig::new(Duration::from_secs(5), Duration::from_secs(10));
    let (engine, counts, clock, mut ran, worker) = stalled_setup(Some(config)).await;
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
    assert_eq!(counts.restarts(), vec![("consumer", 1), ("reaper", 0)]);
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn without_the_watchdog_the_same_task_stays_stuck() {
    let (engine, _counts, clock, mut ran, worker) = stalled_setup(None).await;
    clock.advance(Duration::from_secs(60));
    // The control: proving a negative needs a bounded wait.
    assert!(timeout(Duration::from_millis(300), ran.recv()).await.is_err(), "nothing woke the dispatcher");
    let stats = engine.stats(Some("q")).await.unwrap();
    assert_eq!(stats[0].scheduled, 1, "the task waits, due for a minute");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_hung_reaper_is_replaced_and_expired_leases_come_back() {
    let clock = ManualClock::new(START);
    let mut config = EngineConfig::default().clock(Arc::new(clock.clone()));
    config.watchdog = Some(WatchdogConfig::new(Duration::from_secs(5), Duration::from_secs(10)));
    let store = Faulty { hung_reaps: 1, ..Faulty::default() };
    let engine = Engine::start(store, config);
    let counts = Counts::of(&engine);
    // The reaper's first pass (at start) hangs in the store.
    timeout(PATIENCE, async {
        while engine.store().reaps.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the reaper's first pass");
    engine.schedule("q", "k", TaskSpec::now()).await.unwrap();
    let leases = engine.lease("q", LeaseOptions::default().lease_for(Duration::from_secs(1))).await.unwrap();
    assert_eq!(leases.len(), 1, "leased, never acked: the lease expires at +1 s");
    timeout(PATIENCE, async {
        while counts.expired() == 0 {
            clock.advance(Duration::from_secs(5));
            let _ = timeout(Duration::from_millis(100), std::future::pending::<()>()).await;
        }
    })
    .await
    .expect("a new reaper ended the expired lease");
    assert_eq!(counts.restarts(), vec![("consumer", 0), ("reaper", 1)]);
    let task = engine.get("q", "k").await.unwrap().unwrap();
    assert_eq!((task.state, task.attempts), (punctual_core::TaskState::Scheduled, 1), "due again, the try counted");
    engine.shutdown().await.unwrap();
}
