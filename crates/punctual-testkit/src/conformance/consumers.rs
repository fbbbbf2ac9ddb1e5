//! Consumers on a real engine: `Engine::lease` hands out a task once it is due, a
//! waiting consumer is woken at once by an earlier task (guarantee 2: no poll
//! interval), the reaper re-fires expired leases, and a `Worker` runs handlers on time,
//! never for a cancelled task, and retries failures under one delivery id.
//!
//! Time is a `ManualClock`; checks wait on handler reports and store signals with a
//! time limit, never on a wall-clock sleep.

use std::sync::Arc;

use punctual_core::{BoxError, Clock, Delivery, LeaseOptions, Outcome, Repeat, Store, TaskSpec, TaskState, Worker};
use tokio::sync::{Semaphore, mpsc};

use super::support::*;

/// Guarantee 1 through the engine: `Engine::lease` hands out nothing before `due_at`
/// (even 1 ms before) and the task at `due_at`.
pub async fn engine_lease_hands_out_a_task_only_once_it_is_due<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    engine.schedule("orders", "order-1", TaskSpec::after(secs(10))).await.expect("schedule");
    assert!(engine_lease(&engine, "orders", 10, secs(30)).await.is_empty(), "leased 10 s early");
    clock.advance(millis(9_999));
    assert!(engine_lease(&engine, "orders", 10, secs(30)).await.is_empty(), "leased 1 ms early");
    clock.advance(millis(1));
    let leases = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&leases), ["order-1"], "due at 10 s");
    assert!(leases[0].task.due_at <= clock.now());
}

/// Guarantee 2 ("woken early when an earlier task arrives"): a consumer waiting in
/// `Engine::lease` for a task a minute away gets a task scheduled for now at once,
/// without time moving.
pub async fn an_earlier_task_wakes_a_waiting_consumer_at_once<S: Store>(store: S) {
    let (engine, clock, mut signals) = start_signalling_engine(store, T0);
    engine.schedule("orders", "later", TaskSpec::after(secs(60))).await.expect("schedule");
    let consumer = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("orders", LeaseOptions::default().wait(secs(30))).await })
    };
    // The consumer looks once, finds nothing due, and goes to sleep until 60 s.
    let first_look = signals.lease_on("orders").await;
    assert_eq!(first_look, 0, "nothing was due yet");

    engine.schedule("orders", "now", TaskSpec::now()).await.expect("schedule");
    let leases = within("the waiting consumer to be woken", consumer).await.expect("consumer panicked");
    let leases = leases.expect("Engine::lease");
    assert_eq!(keys_of(&leases), ["now"], "the earlier task, at once");
    assert_eq!(clock.now(), T0, "time did not move: the consumer was woken, not timed out");
}

/// `Engine::lease` with `wait`: returns a task as soon as it falls due, and an empty
/// list once `wait` has passed with nothing due — not before.
pub async fn a_waiting_consumer_gets_a_task_as_it_falls_due_and_nothing_after_wait<S: Store>(store: S) {
    let (engine, clock, mut signals) = start_signalling_engine(store, T0);
    engine.schedule("orders", "soon", TaskSpec::after(secs(10))).await.expect("schedule");
    let consumer = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("orders", LeaseOptions::default().wait(secs(60))).await })
    };
    assert_eq!(signals.lease_on("orders").await, 0, "nothing was due yet");
    clock.advance(secs(10));
    let leases = within("the task falling due", consumer).await.expect("consumer panicked").expect("lease");
    assert_eq!(keys_of(&leases), ["soon"]);

    let idle = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("idle", LeaseOptions::default().wait(secs(30))).await })
    };
    assert_eq!(signals.lease_on("idle").await, 0, "the idle queue is empty");
    clock.advance(millis(29_999));
    assert!(!idle.is_finished(), "Engine::lease gave up before its wait had passed");
    clock.advance(millis(1));
    let leases = within("the wait to end", idle).await.expect("consumer panicked").expect("lease");
    assert!(leases.is_empty(), "nothing was due in the idle queue: {leases:?}");
}

/// DESIGN.md retry rules through the engine's reaper: a lease nobody acks expires, the
/// task fires again at once as attempt 2 of the same delivery, and the first lease's
/// late ack is refused.
pub async fn engine_reaper_refires_a_task_whose_lease_expired<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    engine.schedule("orders", "order-1", TaskSpec::now()).await.expect("schedule");
    let first = engine_lease_one(&engine, "orders", secs(30)).await;
    clock.advance(secs(30));
    let options = LeaseOptions::default().wait(secs(60)).lease_for(secs(30));
    let leases = within("the reaper to bring the task back", engine.lease("orders", options)).await.expect("lease");
    assert_eq!(keys_of(&leases), ["order-1"], "the task fires again once its lease expired");
    let second = &leases[0];
    assert_eq!(second.attempt, 2, "the expired lease counted as a try");
    assert_eq!(second.delivery_id, first.delivery_id);
    assert!(second.task.last_error.is_some(), "last_error says the lease expired");
    assert_lease_lost(engine.ack(&first.token, Outcome::Done).await, "the expired lease's ack");
    engine.ack(&second.token, Outcome::Done).await.expect("ack of the live lease");
    assert_eq!(get(engine.store(), "orders", "order-1").await, None);
}

/// Guarantee 1 through a `Worker`: the handler runs at or after `due_at`, never
/// before — a task due 1 ms after another is not run with it.
pub async fn worker_fires_a_task_at_its_due_time_never_before<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    engine.schedule("orders", "early", TaskSpec::at(at_ms(9_999))).await.expect("schedule");
    engine.schedule("orders", "on-time", TaskSpec::at(at_secs(10))).await.expect("schedule");
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let handler = reporting_handler(clock.clone(), fired_tx, |_| Outcome::Done);
    let worker = Worker::new(engine.clone()).handle("orders", handler).start().expect("start worker");

    clock.advance(millis(9_999));
    let early = next_fired(&mut fired, "the task due at 9.999 s").await;
    assert_eq!(early.key, "early");
    assert!(early.at >= at_ms(9_999), "ran at {} before its due time", early.at);
    assert!(fired.try_recv().is_err(), "the task due at 10 s ran at 9.999 s");
    assert_eq!(stored(engine.store(), "orders", "on-time").await.state, TaskState::Scheduled);

    clock.advance(millis(1));
    let on_time = next_fired(&mut fired, "the task due at 10 s").await;
    assert_eq!(on_time.key, "on-time");
    assert!(on_time.at >= at_secs(10), "ran at {} before its due time", on_time.at);
    stop(worker, engine).await;
}

/// Guarantee 4 through a `Worker`: a task cancelled before it was due never runs, even
/// once its due time has passed. With one handler slot, tasks run earliest first, so
/// the later task running proves the cancelled one did not.
pub async fn worker_never_fires_a_task_cancelled_before_it_is_due<S: Store>(store: S) {
    let (engine, clock, mut signals) = start_signalling_engine(store, T0);
    engine.schedule("orders", "cancelled", TaskSpec::after(secs(10))).await.expect("schedule");
    engine.schedule("orders", "later", TaskSpec::after(secs(20))).await.expect("schedule");
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let handler = reporting_handler(clock.clone(), fired_tx, |_| Outcome::Done);
    let worker = Worker::new(engine.clone()).handle("orders", handler).concurrency("orders", 1).start().expect("start");

    assert!(engine.cancel("orders", "cancelled").await.expect("cancel"), "the task existed");
    clock.advance(secs(20));
    let first = next_fired(&mut fired, "the task due at 20 s").await;
    assert_eq!(first.key, "later", "the cancelled task ran");
    assert_eq!(signals.completion_of("later").await, Ok(()));
    assert!(fired.try_recv().is_err(), "the cancelled task ran");
    assert!(list_all(engine.store(), "orders", None).await.is_empty());
    stop(worker, engine).await;
}

/// Guarantee 4 ("cancelling a leased task stops its retries and repeats") through a
/// `Worker`: tasks cancelled while their handlers run have their acks refused — a
/// retry and a repeat alike — and are gone.
pub async fn worker_cannot_retry_or_repeat_a_task_cancelled_while_its_handler_runs<S: Store>(store: S) {
    let (engine, clock, mut signals) = start_signalling_engine(store, T0);
    engine.schedule("orders", "retrying", TaskSpec::now()).await.expect("schedule");
    let repeat = Repeat::every(secs(60)).expect("repeat");
    engine.schedule("orders", "repeating", TaskSpec::now().repeat(repeat)).await.expect("schedule");

    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let handler = {
        let gate = Arc::clone(&gate);
        let clock = clock.clone();
        move |delivery: Delivery| {
            let _ = started_tx.send(Fired::of(&delivery, &clock));
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await?.forget();
                let outcome = match delivery.task.key.as_str() {
                    "retrying" => Outcome::retry_in(secs(0), "failed after the task was cancelled"),
                    _ => Outcome::Done,
                };
                Ok::<_, BoxError>(outcome)
            }
        }
    };
    let worker = Worker::new(engine.clone()).handle("orders", handler).start().expect("start worker");
    for _ in 0..2 {
        next_fired(&mut started, "both handlers to start").await;
    }
    assert!(engine.cancel("orders", "retrying").await.expect("cancel"));
    assert!(engine.cancel("orders", "repeating").await.expect("cancel"));
    gate.add_permits(2);

    let [retry, repeat] =
        <[_; 2]>::try_from(signals.completions_of(&["retrying", "repeating"]).await).expect("two answers for two keys");
    assert_lease_lost(retry, "the retry of a cancelled task");
    assert_lease_lost(repeat, "the repeat of a cancelled task");
    assert!(list_all(engine.store(), "orders", None).await.is_empty(), "a cancelled task came back");
    clock.advance(secs(3600));
    assert!(engine_lease(&engine, "orders", 10, secs(30)).await.is_empty());
    stop(worker, engine).await;
}

/// DESIGN.md retry rules and guarantee 3 through a `Worker`: a handler error becomes a
/// retry after the backoff, and the retry runs as attempt 2 under the same delivery id.
pub async fn worker_retries_a_failed_handler_under_the_same_delivery_id<S: Store>(store: S) {
    let (engine, clock, mut signals) = start_signalling_engine(store, T0);
    engine.schedule("orders", "flaky", TaskSpec::now().max_attempts(3)).await.expect("schedule");
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let handler = {
        let clock = clock.clone();
        move |delivery: Delivery| {
            let _ = fired_tx.send(Fired::of(&delivery, &clock));
            async move {
                if delivery.attempt == 1 {
                    Err::<Outcome, BoxError>("connection reset".into())
                } else {
                    Ok(Outcome::Done)
                }
            }
        }
    };
    let worker = Worker::new(engine.clone()).handle("orders", handler).start().expect("start worker");

    let first = next_fired(&mut fired, "the first try").await;
    assert_eq!(first.attempt, 1);
    assert_eq!(signals.completion_of("flaky").await, Ok(()), "the failure is acked as a retry");
    let task = stored(engine.store(), "orders", "flaky").await;
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.as_deref().is_some_and(|e| e.contains("connection reset")), "{:?}", task.last_error);
    assert!(task.due_at > T0 && task.due_at <= at_secs(1), "the default backoff waits up to 1 s: {}", task.due_at);

    clock.set(task.due_at);
    let second = next_fired(&mut fired, "the retry").await;
    assert_eq!(second.attempt, 2);
    assert_eq!(second.delivery_id, first.delivery_id, "a retry keeps the delivery id");
    assert_eq!(signals.completion_of("flaky").await, Ok(()));
    assert_eq!(get(engine.store(), "orders", "flaky").await, None);
    stop(worker, engine).await;
}
