//! The worker on the reference store with tokio's paused time: guards against a
//! handler that panics or errors taking its dispatcher down, leases expiring under a
//! slow but healthy handler (no heartbeat), shutdown losing or double-running work,
//! concurrency limits being exceeded, a sleeping timer missing an earlier task, and an
//! ack the store did not answer costing a second delivery or applying twice.
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when every task waits,
//! straight to the next deadline, so a handler that works for three lease lengths takes
//! no wall time, and every run sees the same instants.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use punctual_core::{
    Backoff, Delivery, Engine, EngineConfig, Event, EventStream, MemoryStore, Outcome, TaskSpec, TaskState, Timestamp,
    TokioClock, Worker,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

use common::Faulty;

const PATIENCE: Duration = Duration::from_secs(20);
const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn start() -> (Engine<MemoryStore>, ()) {
    let clock = TokioClock::starting_at(START);
    (Engine::start(MemoryStore::new(), EngineConfig::default().clock(Arc::new(clock))), ())
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    timeout(PATIENCE, rx.recv()).await.unwrap_or_else(|_| panic!("timed out waiting for {what}")).expect("channel open")
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_becomes_a_retry_with_the_same_delivery_id() {
    let (engine, _dir) = start();
    let fast = Backoff::new(Duration::from_millis(10), 1.0, Duration::from_millis(10)).unwrap();
    engine.schedule("q", "k", TaskSpec::now().max_attempts(3).backoff(fast)).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send((d.attempt, d.delivery_id.clone(), d.task.last_error.clone())).unwrap();
                if d.attempt == 1 {
                    panic!("boom on the first try");
                }
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    let (first_attempt, first_id, _) = next(&mut rx, "first try").await;
    let (second_attempt, second_id, last_error) = next(&mut rx, "second try").await;
    assert_eq!((first_attempt, second_attempt), (1, 2));
    assert_eq!(first_id, second_id, "tries of one occurrence share a delivery id");
    let last_error = last_error.expect("the panic is recorded");
    assert!(last_error.contains("handler panicked: boom on the first try"), "{last_error}");
    worker.shutdown().await;
    assert_eq!(engine.get("q", "k").await.unwrap(), None, "done after the retry");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn handler_errors_exhaust_attempts_and_leave_the_task_dead() {
    let (engine, _dir) = start();
    let fast = Backoff::new(Duration::from_millis(5), 1.0, Duration::from_millis(5)).unwrap();
    engine.schedule("q", "k", TaskSpec::now().max_attempts(3).backoff(fast)).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(d.attempt).unwrap();
                Err::<Outcome, _>(format!("smtp timeout on try {}", d.attempt))
            }
        })
        .start()
        .unwrap();
    for expected in 1..=3 {
        assert_eq!(next(&mut rx, "a try").await, expected);
    }
    // The third failure is the last: wait until the store shows it dead.
    let dead = timeout(PATIENCE, async {
        loop {
            if let Some(task) = engine.get("q", "k").await.unwrap()
                && task.state == TaskState::Dead
            {
                return task;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("task dead");
    assert_eq!(dead.attempts, 3);
    assert_eq!(dead.last_error.as_deref(), Some("smtp timeout on try 3"));
    worker.shutdown().await;
    assert!(rx.try_recv().is_err(), "no fourth try");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn heartbeats_keep_a_slow_handler_s_lease_alive() {
    let (engine, _dir) = start();
    engine.schedule("q", "slow", TaskSpec::now()).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .lease_for(Duration::from_secs(1))
        .handle("q", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(("start", d.attempt)).unwrap();
                // Three lease lengths: without renewal the reaper would take the task back.
                tokio::time::sleep(Duration::from_millis(3200)).await;
                tx.send(("end", d.attempt)).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    assert_eq!(next(&mut rx, "start").await, ("start", 1));
    assert_eq!(next(&mut rx, "end").await, ("end", 1), "the same try ran to the end, not a second one");
    worker.shutdown().await;
    assert!(rx.try_recv().is_err(), "fired exactly once");
    assert_eq!(engine.get("q", "slow").await.unwrap(), None, "its ack was accepted");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_releases_leases_of_handlers_still_running_after_the_grace_period() {
    let (engine, _dir) = start();
    engine.schedule("q", "stuck", TaskSpec::now()).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .grace(Duration::from_millis(200))
        .handle("q", move |_d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(()).unwrap();
                std::future::pending::<()>().await;
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    next(&mut rx, "the handler to start").await;
    assert_eq!(engine.get("q", "stuck").await.unwrap().unwrap().state, TaskState::Leased);
    worker.shutdown().await;
    let task = engine.get("q", "stuck").await.unwrap().expect("still stored");
    assert_eq!(task.state, TaskState::Scheduled, "released, due again");
    assert_eq!(task.attempts, 0, "a released lease is not a failed try");
    // A new worker runs it at once.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(d.attempt).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    assert_eq!(next(&mut rx, "the rerun").await, 1);
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn no_more_handlers_run_at_once_than_the_queue_s_concurrency() {
    let (engine, _dir) = start();
    let items = (0..12).map(|i| (format!("k{i}"), TaskSpec::now())).collect();
    engine.schedule_many("q", items).await.unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        Worker::new(engine.clone())
            .handle("q", move |d: Delivery| {
                let (tx, running, peak) = (tx.clone(), Arc::clone(&running), Arc::clone(&peak));
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    tx.send(d.task.key.to_string()).unwrap();
                    Ok::<_, punctual_core::BoxError>(Outcome::Done)
                }
            })
            .concurrency("q", 3)
            .start()
            .unwrap()
    };
    let mut fired = Vec::new();
    for _ in 0..12 {
        fired.push(next(&mut rx, "a task").await);
    }
    fired.sort();
    fired.dedup();
    assert_eq!(fired.len(), 12, "each task once");
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 3, "{peak} handlers ran at once, the limit is 3");
    assert!(peak >= 2, "the slots were used in parallel (peak {peak})");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_sleeping_timer_wakes_at_once_for_an_earlier_task() {
    let (engine, _dir) = start();
    engine.schedule("q", "later", TaskSpec::after(Duration::from_secs(3600))).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let clock_engine = engine.clone();
    let worker = Worker::new(engine.clone())
        .handle("q", move |d: Delivery| {
            let (tx, engine) = (tx.clone(), clock_engine.clone());
            async move {
                let lag = engine.clock().now().saturating_since(d.task.due_at);
                tx.send((d.task.key.to_string(), lag)).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    // Let the dispatcher go to sleep until the task an hour away.
    tokio::task::yield_now().await;
    engine.schedule("q", "soon", TaskSpec::after(Duration::from_millis(150))).await.unwrap();
    let (key, lag) = next(&mut rx, "the earlier task").await;
    assert_eq!(key, "soon");
    // Loose bound for a shared CI machine; the benchmark measures it precisely.
    assert!(lag < Duration::from_millis(500), "fired {lag:?} late");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_repeating_task_keeps_firing_until_its_tag_is_cancelled() {
    let (engine, _dir) = start();
    let every = punctual_core::Repeat::every(Duration::from_millis(100)).unwrap();
    engine.schedule("remind", "step-1", TaskSpec::now().repeat(every).tag("pi-9")).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("remind", move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(d.delivery_id.clone()).unwrap();
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    let ids = [next(&mut rx, "1st").await, next(&mut rx, "2nd").await, next(&mut rx, "3rd").await];
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "each occurrence has its own delivery id: {ids:?}");
    assert_eq!(engine.cancel_tag("remind", "pi-9").await.unwrap(), 1);
    // Drain an occurrence that may have been in flight during the cancel, then expect silence.
    let _ = timeout(Duration::from_millis(300), rx.recv()).await;
    assert!(timeout(Duration::from_millis(400), rx.recv()).await.is_err(), "no reminder after cancel");
    assert_eq!(engine.get("remind", "step-1").await.unwrap(), None);
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// An engine on a store whose next completions go unanswered: `applied` says, for each,
/// whether the store applied it before the answer was lost.
fn start_unanswered(applied: &[bool]) -> Engine<Faulty> {
    let store =
        Faulty { unanswered_completes: std::sync::Mutex::new(applied.iter().copied().collect()), ..Faulty::default() };
    Engine::start(store, EngineConfig::default().clock(Arc::new(TokioClock::starting_at(START))))
}

/// A worker on `queue` reporting each try's attempt and answering `Done`.
fn reporting_worker(
    engine: &Engine<Faulty>,
    queue: &str,
) -> (punctual_core::RunningWorker, mpsc::UnboundedReceiver<u32>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .lease_for(Duration::from_secs(1))
        .handle(queue, move |d: Delivery| {
            let tx = tx.clone();
            async move {
                tx.send(d.attempt).expect("the test listens");
                Ok::<_, punctual_core::BoxError>(Outcome::Done)
            }
        })
        .start()
        .expect("the worker starts");
    (worker, rx)
}

/// Waits for the engine to say what `pick` looks for.
async fn until(events: &mut EventStream, what: &str, pick: impl Fn(&Event) -> bool) {
    events.wait_for(PATIENCE, |event| pick(event).then_some(())).await.unwrap_or_else(|| panic!("{what}"));
}

/// Guards against a store blip (Redis slow to answer one call, a node resuming from a
/// pause) costing a second delivery: the worker asks again and the task runs once.
#[tokio::test(start_paused = true)]
async fn an_ack_the_store_did_not_answer_is_asked_again_and_the_task_runs_once() {
    let engine = start_unanswered(&[false]);
    let mut events = engine.subscribe();
    engine.schedule("q", "k", TaskSpec::now()).await.unwrap();
    let (worker, mut rx) = reporting_worker(&engine, "q");
    assert_eq!(next(&mut rx, "the first try").await, 1);
    until(&mut events, "the first try's ack is applied", |e| matches!(e, Event::Completed { attempt: 1, .. })).await;
    assert_eq!(engine.get("q", "k").await.unwrap(), None);
    assert_eq!(engine.store().completes.load(Ordering::SeqCst), 2, "the unanswered ack, then the one applied");
    // Well past the lease: a lost ack would have brought the task back by now.
    assert!(timeout(Duration::from_secs(5), rx.recv()).await.is_err(), "one try only");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// Guards against asking again applying a completion twice: the store applied the
/// first one and lost its answer, so the repeat is refused (the lease is spent) and
/// the task, done once, never fires again.
#[tokio::test(start_paused = true)]
async fn an_ack_applied_without_an_answer_is_refused_when_asked_again() {
    let engine = start_unanswered(&[true]);
    let mut events = engine.subscribe();
    engine.schedule("q", "k", TaskSpec::now()).await.unwrap();
    let (worker, mut rx) = reporting_worker(&engine, "q");
    assert_eq!(next(&mut rx, "the first try").await, 1);
    until(&mut events, "the repeat is refused", |e| matches!(e, Event::AckRefused { .. })).await;
    assert_eq!(engine.get("q", "k").await.unwrap(), None, "the first, unanswered, ack was applied");
    assert_eq!(engine.store().completes.load(Ordering::SeqCst), 2);
    assert!(timeout(Duration::from_secs(5), rx.recv()).await.is_err(), "one try only");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}

/// The bound on asking again: a store that answers none of three tries leaves the
/// task to its lease, and it fires again, as before the retries existed.
#[tokio::test(start_paused = true)]
async fn an_ack_unanswered_three_times_is_left_to_the_lease_and_the_task_fires_again() {
    let engine = start_unanswered(&[false, false, false]);
    let mut events = engine.subscribe();
    engine.schedule("q", "k", TaskSpec::now()).await.unwrap();
    let (worker, mut rx) = reporting_worker(&engine, "q");
    assert_eq!(next(&mut rx, "the first try").await, 1);
    assert_eq!(next(&mut rx, "the second try, after the lease expired").await, 2);
    until(&mut events, "the second try's ack is applied", |e| matches!(e, Event::Completed { attempt: 2, .. })).await;
    assert_eq!(engine.get("q", "k").await.unwrap(), None);
    assert_eq!(engine.store().completes.load(Ordering::SeqCst), 4, "three unanswered, then the second try's");
    worker.shutdown().await;
    engine.shutdown().await.unwrap();
}
