//! The engine follows the store's queue records: guards against a pause that another
//! process wrote never reaching this one, a queue paused before a restart handing out
//! a task in the first instant after it, an engine's own change waiting for the next
//! read, and run-time defaults or purges that do not apply.
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when every task waits.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;
use std::time::Duration;

use punctual_core::store::QueueChangeRequest;
use punctual_core::{
    Engine, EngineConfig, Error, LeaseOptions, MemoryStore, PurgeSelection, QueueChange, QueueDefaults, QueueName,
    RECORDS_POLL, Store, TaskSpec, Timestamp, TokioClock,
};

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn engine(store: MemoryStore) -> Engine<MemoryStore> {
    Engine::start(store, EngineConfig::default().clock(Arc::new(TokioClock::starting_at(START))))
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// Writes a pause straight into the store, as another process sharing it would.
async fn pause_from_elsewhere(store: &MemoryStore, name: &str, paused: bool, now: Timestamp) {
    store.change_queue(QueueChangeRequest::new(queue(name), QueueChange::Paused(paused), now)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_pause_written_by_another_process_applies_within_the_poll() {
    let engine = engine(MemoryStore::new());
    engine.schedule("q", "k", TaskSpec::after(Duration::from_secs(60))).await.unwrap();
    pause_from_elsewhere(engine.store(), "q", true, engine.clock().now()).await;
    tokio::time::sleep(RECORDS_POLL + Duration::from_millis(1)).await;
    assert!(engine.is_paused(&queue("q")), "the pause was not read within {RECORDS_POLL:?}");

    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(engine.lease("q", LeaseOptions::default()).await.unwrap().is_empty(), "a paused queue handed out");
    pause_from_elsewhere(engine.store(), "q", false, engine.clock().now()).await;
    let leased = engine.lease("q", LeaseOptions::default().wait(RECORDS_POLL * 2)).await.unwrap();
    assert_eq!(leased.len(), 1, "the resume was not read within the poll");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_queue_paused_before_a_restart_hands_out_nothing_after_it() {
    let store = MemoryStore::new();
    let now = START;
    let due = punctual_core::NewTask::new(queue("q"), punctual_core::TaskKey::new("k").unwrap(), now);
    store.schedule(vec![due], now).await.unwrap();
    pause_from_elsewhere(&store, "q", true, now).await;

    let engine = engine(store);
    assert!(engine.lease("q", LeaseOptions::default()).await.unwrap().is_empty(), "leased before reading the pause");
    assert!(engine.is_paused(&queue("q")));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_engines_own_change_applies_at_once_and_a_stale_version_changes_nothing() {
    let engine = engine(MemoryStore::new());
    let mut records = engine.watch_queue_records();
    let paused = engine.change_queue("q", QueueChange::Paused(true), Some(0)).await.unwrap();
    assert_eq!((paused.version, paused.paused), (1, true));
    assert!(engine.is_paused(&queue("q")), "not applied at once");
    assert!(records.has_changed().unwrap(), "not published");
    assert_eq!(records.borrow_and_update().as_slice(), std::slice::from_ref(&paused));

    let stale = engine.change_queue("q", QueueChange::Paused(false), Some(0)).await;
    assert!(matches!(stale, Err(Error::Conflict(_))), "{stale:?}");
    assert!(engine.is_paused(&queue("q")), "a refused change resumed the queue");
    let settings = engine.change_queue("q", QueueChange::Settings("{}".into()), Some(1)).await.unwrap();
    assert_eq!((settings.version, settings.paused, settings.settings.as_deref()), (2, true, Some("{}")));
    assert_eq!(engine.queue_record("q").await.unwrap(), Some(settings));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn run_time_defaults_apply_to_new_tasks_until_removed() {
    let engine = engine(MemoryStore::new());
    let mut defaults = QueueDefaults::default();
    defaults.max_attempts = 3;
    engine.set_queue_defaults(&queue("q"), Some(defaults));
    let with = engine.schedule("q", "a", TaskSpec::now()).await.unwrap().task.unwrap();
    let other = engine.schedule("other", "a", TaskSpec::now()).await.unwrap().task.unwrap();
    engine.set_queue_defaults(&queue("q"), None);
    let without = engine.schedule("q", "b", TaskSpec::now()).await.unwrap().task.unwrap();
    assert_eq!((with.max_attempts, other.max_attempts, without.max_attempts), (3, 20, 20));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_purge_cancels_the_selection_in_batches_and_leased_tasks_for_good() {
    let engine = engine(MemoryStore::new());
    let tasks: Vec<(String, TaskSpec)> = (0..2_500).map(|n| (format!("k{n}"), TaskSpec::now())).collect();
    engine.schedule_many("q", tasks).await.unwrap().into_iter().for_each(|r| drop(r.unwrap()));
    engine.schedule("other", "k", TaskSpec::now()).await.unwrap();
    let leased = engine.lease("q", LeaseOptions::default().max(10)).await.unwrap();

    assert_eq!(engine.purge("q", PurgeSelection::Scheduled).await.unwrap(), 2_490);
    assert_eq!(engine.purge("q", PurgeSelection::Dead).await.unwrap(), 0);
    assert_eq!(engine.purge("q", PurgeSelection::All).await.unwrap(), 10, "the leased tasks");
    let ack = engine.ack(&leased[0].token, punctual_core::Outcome::Done).await;
    assert!(matches!(ack, Err(Error::LeaseLost)), "{ack:?}");
    let stats = engine.stats(None).await.unwrap();
    let left: Vec<(&str, u64)> = stats.iter().map(|s| (s.name.as_str(), s.scheduled + s.leased + s.dead)).collect();
    assert!(left.contains(&("other", 1)) && !left.iter().any(|(q, n)| *q == "q" && *n > 0), "{left:?}");
    engine.shutdown().await.unwrap();
}
