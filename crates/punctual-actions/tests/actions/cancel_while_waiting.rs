//! Cancel is exact on push queues that make deliveries wait (README guarantee 4), on
//! the embedded store and on Redis.
//!
//! Guards against the bug of issue I.1: with `rate = "1/4s"`, a task cancelled by tag
//! while its delivery waited for its rate slot was still delivered seconds later,
//! because the delivery held a lease and was sent without asking the store whether
//! that lease was still live. Here tasks wait for a rate slot (leased) or for a slot of
//! the queue's concurrency (still scheduled) and are cancelled by key, by tag,
//! replaced, or lose their lease to expiry meanwhile; the receiver, a real HTTP server
//! on loopback, must never see them (a replaced task is delivered as its new version
//! only), and must see every other task.
//!
//! On Redis the rate's slots are counted in Redis, as the server does there (shared by
//! every node), so both kinds of limiter are exercised.
//!
//! The clock is manual: each rate window passes when the test advances it, so the test
//! waits on events (a handler finishing, a request received), never on real time.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Receiver, Reply, START_MS, WAIT, next};
use punctual_actions::{Action, ActionKind, ActionSpec, Rate, RateSlots, Slot, SlotFuture, WebhookConfig};
use punctual_core::{
    Delivery, Engine, EngineConfig, Handler, ManualClock, QueueName, RunningWorker, Store, TaskSpec, Timestamp, Worker,
};
use punctual_redis::{RedisConfig, RedisRates, RedisStore, Target, TimeSource};
use punctual_sqlite::SqliteStore;
use punctual_testkit::redis::RedisServer;
use serde_json::json;
use tokio::sync::mpsc;

const QUEUE: &str = "flow.remind";

/// An engine on a manual clock, where its rate limits are counted (`None`: in this
/// process), and what keeps its store alive.
struct Setup<S: Store> {
    engine: Engine<S>,
    clock: ManualClock,
    rates: Option<Arc<dyn RateSlots>>,
    _keep: Box<dyn std::any::Any + Send>,
}

/// The Redis store's rate-limit slots behind the actions' seam, as the server has them.
#[derive(Debug)]
struct InRedis(RedisRates);

impl RateSlots for InRedis {
    fn take<'a>(&'a self, queue: &'a QueueName, rate: Rate, now: Timestamp) -> SlotFuture<'a> {
        Box::pin(async move {
            let wait = self.0.take(queue, rate, now).await?;
            Ok(wait.map_or(Slot::Taken, Slot::Full))
        })
    }
}

fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_millis(START_MS))
}

fn embedded_store() -> Setup<SqliteStore> {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let store = SqliteStore::open(dir.path()).unwrap();
    let engine = Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())));
    Setup { engine, clock, rates: None, _keep: Box::new(dir) }
}

async fn redis_store() -> Setup<RedisStore> {
    let server: RedisServer = punctual_testkit::redis::server();
    let mut config = RedisConfig::new(Target::parse(&server.url()).unwrap());
    // The scripts take `now` from the manual clock.
    config.time = TimeSource::Caller;
    let store = RedisStore::connect(config).await.unwrap();
    let rates: Arc<dyn RateSlots> = Arc::new(InRedis(store.rates()));
    let clock = clock();
    let engine = Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())));
    Setup { engine, clock, rates: Some(rates), _keep: Box::new(server) }
}

/// The queue's webhook action to `receiver`, which answers 200 to everything.
fn action<S: Store>(setup: &Setup<S>, receiver: &Receiver, rate: Option<&str>) -> Action {
    receiver.always(Reply::status(200));
    let mut spec = ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(receiver.url("/hook"))));
    if let Some(rate) = rate {
        spec = spec.rate(Rate::parse(rate).unwrap());
    }
    let mut runtime = common::loopback_runtime(Arc::new(setup.clock.clone()));
    if let Some(rates) = &setup.rates {
        runtime = runtime.shared_rates(Arc::clone(rates));
    }
    Action::build(&spec, &runtime).unwrap()
}

/// Runs `action` for the queue and reports each handler call's end (the key), so the
/// test knows when no delivery is left that could still send.
struct Watched {
    worker: RunningWorker,
    started: Arc<AtomicUsize>,
    finished: mpsc::UnboundedReceiver<String>,
    ended: usize,
}

impl Watched {
    fn start<S: Store>(engine: &Engine<S>, action: Action, concurrency: usize, lease_for: Duration) -> Watched {
        let started = Arc::new(AtomicUsize::new(0));
        let (tx, finished) = mpsc::unbounded_channel();
        let count = Arc::clone(&started);
        let handler = move |delivery: Delivery| {
            let (action, tx, count) = (action.clone(), tx.clone(), Arc::clone(&count));
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                let key = delivery.task.key.to_string();
                let outcome = action.handle(delivery).await;
                let _ = tx.send(key);
                outcome
            }
        };
        let worker = Worker::new(engine.clone())
            .handle(QUEUE, handler)
            .concurrency(QUEUE, concurrency)
            .lease_for(lease_for)
            .start()
            .unwrap();
        Watched { worker, started, finished, ended: 0 }
    }

    /// Waits for the next handler call to end.
    async fn next_end(&mut self) -> String {
        let key = next(&mut self.finished, "a handler call ending").await;
        self.ended += 1;
        key
    }

    /// Whether every handler call started has ended.
    fn idle(&self) -> bool {
        self.started.load(Ordering::SeqCst) == self.ended
    }
}

/// Whether the queue has nothing scheduled or leased.
async fn drained<S: Store>(engine: &Engine<S>) -> bool {
    let stats = engine.stats(Some(QUEUE)).await.unwrap();
    stats.iter().all(|s| s.scheduled == 0 && s.leased == 0)
}

/// The body of every request the receiver got so far.
fn received_bodies(receiver: &mut Receiver) -> Vec<serde_json::Value> {
    std::iter::from_fn(|| receiver.seen.try_recv().ok()).map(|request| request.json()).collect()
}

/// Every request the receiver got so far, as (key, payload).
fn received(receiver: &mut Receiver) -> Vec<(String, serde_json::Value)> {
    let key = |body: &serde_json::Value| body["key"].as_str().unwrap().to_owned();
    received_bodies(receiver).into_iter().map(|body| (key(&body), body["payload"].clone())).collect()
}

/// Advances the clock a rate window at a time until the queue is drained and no
/// handler call is left running: after that nothing more can be sent.
async fn run_out<S: Store>(setup: &Setup<S>, watched: &mut Watched, window: Duration) {
    #[allow(clippy::disallowed_methods, reason = "a bound on the test's real running time")]
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        #[allow(clippy::disallowed_methods, reason = "a bound on the test's real running time")]
        let late = std::time::Instant::now() > deadline;
        assert!(!late, "the queue did not drain within {WAIT:?}");
        // In this order: once nothing is scheduled or leased no handler call can
        // start, so if none is running after that, none ever will.
        let drained = drained(&setup.engine).await;
        if watched.idle() {
            if drained {
                return;
            }
            // No handler runs, yet the store holds a task: a completion is on its way
            // to the store, or a due task is about to be leased. Let them run, then
            // look again (each look is a store call: this loop waits on the store).
            tokio::task::yield_now().await;
            continue;
        }
        setup.clock.advance(window);
        // Each window lets one delivery through; lost ones end without a slot.
        watched.next_end().await;
    }
}

/// Schedules `key` due now and waits until it was delivered and its handler call ended.
async fn delivered_at_once<S: Store>(engine: &Engine<S>, receiver: &mut Receiver, watched: &mut Watched, key: &str) {
    engine.schedule(QUEUE, key, TaskSpec::now()).await.unwrap();
    assert_eq!(receiver.next().await.json()["key"], key);
    assert_eq!(watched.next_end().await, key);
}

/// Waits until `n` deliveries wait for the action's rate limit.
async fn waiting_for_the_rate(action: &Action, n: u64) {
    while action.rate_stats().unwrap().waiting < n {
        tokio::task::yield_now().await;
    }
}

/// Six tasks of a queue with `rate = "1/2s"` and `concurrency = 3`: `first` is sent at
/// once; of the five scheduled after it, the three earliest are leased and wait for
/// their rate slot, the other two wait for a slot of the concurrency (scheduled). Then
/// `k1` (leased) and `k4` (scheduled) are cancelled by tag, `k2` (leased) by key, and
/// `k3` (leased) is replaced: only `first`, `k5` and `k3`'s new version reach the
/// receiver.
async fn cancelled_while_waiting_for_a_rate_slot<S: Store>(setup: Setup<S>) {
    let mut receiver = Receiver::start().await;
    let action = action(&setup, &receiver, Some("1/2s"));
    let mut watched = Watched::start(&setup.engine, action.clone(), 3, Duration::from_secs(3600));
    let engine = &setup.engine;

    delivered_at_once(engine, &mut receiver, &mut watched, "first").await;

    let now = punctual_core::Clock::now(&setup.clock).as_millis();
    for (i, tag) in [(1, "wf-9"), (2, "wf-1"), (3, "wf-1"), (4, "wf-9"), (5, "wf-1")] {
        // Distinct due times in the past: leased in this order.
        let due = Timestamp::from_millis(now - 100 + i);
        let spec = TaskSpec::at(due).payload(json!({"v": 1})).tag(tag);
        engine.schedule(QUEUE, &format!("k{i}"), spec).await.unwrap();
    }
    waiting_for_the_rate(&action, 3).await;
    assert!(received(&mut receiver).is_empty(), "the window is full: nothing sent yet");
    for (key, state) in [("k1", "leased"), ("k2", "leased"), ("k3", "leased"), ("k4", "scheduled")] {
        let task = engine.get(QUEUE, key).await.unwrap().unwrap();
        assert_eq!(task.state.as_str(), state, "{key}");
    }

    assert_eq!(engine.cancel_tag(QUEUE, "wf-9").await.unwrap(), 2);
    assert!(engine.cancel(QUEUE, "k2").await.unwrap());
    engine.schedule(QUEUE, "k3", TaskSpec::now().payload(json!({"v": 2}))).await.unwrap();

    run_out(&setup, &mut watched, Duration::from_secs(2)).await;
    let mut seen = received(&mut receiver);
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(seen, vec![("k3".to_owned(), json!({"v": 2})), ("k5".to_owned(), json!({"v": 1}))]);
    let stats = action.rate_stats().unwrap();
    assert_eq!(stats.passed, 3, "the cancelled deliveries took no rate slot: {stats:?}");
    for key in ["k1", "k2", "k4"] {
        assert_eq!(engine.get(QUEUE, key).await.unwrap(), None, "{key} stays cancelled");
    }
    watched.worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// A delivery that waited for its rate slot longer than its lease: the lease expired
/// and the task was leased again (attempt 2). The stale try must stand down; only the
/// new one is sent.
async fn expired_while_waiting_for_a_rate_slot<S: Store>(setup: Setup<S>) {
    let mut receiver = Receiver::start().await;
    let action = action(&setup, &receiver, Some("1/1m"));
    let mut watched = Watched::start(&setup.engine, action.clone(), 16, Duration::from_secs(300));
    let engine = &setup.engine;

    delivered_at_once(engine, &mut receiver, &mut watched, "a").await;
    engine.schedule(QUEUE, "b", TaskSpec::now()).await.unwrap();
    waiting_for_the_rate(&action, 1).await;
    // Past the 5-minute lease (heartbeats run on real time and have not renewed it).
    setup.clock.advance(Duration::from_secs(360));
    run_out(&setup, &mut watched, Duration::from_secs(60)).await;
    let tries: Vec<(String, u64)> = received_bodies(&mut receiver)
        .iter()
        .map(|body| (body["key"].as_str().unwrap().to_owned(), body["attempt"].as_u64().unwrap()))
        .collect();
    assert_eq!(tries, [("b".to_owned(), 2)], "only the second try was sent");
    assert_eq!(watched.ended, 3, "a, b's stale try, b's second try");
    watched.worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// `concurrency = 1` and a receiver slow to answer the first delivery: the others wait
/// for the slot, unleased; cancelled by key and by tag meanwhile, they never go.
async fn cancelled_while_waiting_for_a_concurrency_slot<S: Store>(setup: Setup<S>) {
    let mut receiver = Receiver::start().await;
    let action = {
        let spec = ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(receiver.url("/hook"))));
        Action::build(&spec, &common::loopback_runtime(Arc::new(setup.clock.clone()))).unwrap()
    };
    let mut watched = Watched::start(&setup.engine, action, 1, Duration::from_secs(3600));
    let engine = &setup.engine;

    engine.schedule(QUEUE, "first", TaskSpec::now()).await.unwrap();
    // Not answered yet: the only slot stays busy.
    assert_eq!(receiver.next().await.json()["key"], "first");
    for (key, tag) in [("k1", "wf-9"), ("k2", "wf-1"), ("k3", "wf-9"), ("k4", "wf-1")] {
        engine.schedule(QUEUE, key, TaskSpec::now().tag(tag)).await.unwrap();
    }
    assert_eq!(engine.cancel_tag(QUEUE, "wf-9").await.unwrap(), 2);
    assert!(engine.cancel(QUEUE, "k2").await.unwrap());
    receiver.always(Reply::status(200));
    receiver.answer(Reply::status(200));

    run_out(&setup, &mut watched, Duration::from_millis(1)).await;
    let keys: BTreeSet<String> = received(&mut receiver).into_iter().map(|(key, _)| key).collect();
    assert_eq!(keys, BTreeSet::from(["k4".to_owned()]));
    watched.worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// Each scenario as a test on the embedded store and one on Redis.
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        mod embedded {
            $(#[tokio::test]
            async fn $scenario() {
                super::$scenario(super::embedded_store()).await;
            })*
        }
        mod redis {
            $(#[tokio::test]
            async fn $scenario() {
                super::$scenario(super::redis_store().await).await;
            })*
        }
    };
}

on_both_stores!(
    cancelled_while_waiting_for_a_rate_slot,
    expired_while_waiting_for_a_rate_slot,
    cancelled_while_waiting_for_a_concurrency_slot,
);
