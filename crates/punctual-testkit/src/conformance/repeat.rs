//! Repeats: after a successful occurrence the task is re-armed at the next occurrence
//! after now, atomically with the ack — fixed rate for `every` (missed occurrences
//! skipped, not caught up), wall-clock times in a zone for `cron` — and it ends when
//! `times` or `until` is exhausted.

use punctual_core::{Clock, Outcome, Repeat, Store, TaskSpec, TaskState, Timestamp};

use super::support::*;

/// Leases the repeating task `key_name` of `queue_name` now, acks it `Done`, and
/// returns the task as stored after the ack (`None` once the repeat ended).
async fn fire_and_ack<S: Store>(
    engine: &punctual_core::Engine<S>,
    queue_name: &str,
    key_name: &str,
) -> Option<punctual_core::Task> {
    let lease = engine_lease_one(engine, queue_name, secs(300)).await;
    assert_eq!(lease.token.key.as_str(), key_name);
    engine.ack(&lease.token, Outcome::Done).await.expect("ack of a live lease");
    get(engine.store(), queue_name, key_name).await
}

/// DESIGN.md repeat rules for `every`: re-armed with the ack at the next slot of a
/// fixed rate from the first due time (not from the ack), skipping the slots missed
/// while a handler ran late; each occurrence is a new delivery at attempt 1.
pub async fn every_repeats_at_a_fixed_rate_and_skips_missed_occurrences<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    let spec = TaskSpec::now().repeat(Repeat::every(secs(10)).expect("repeat"));
    engine.schedule("heartbeat", "ping", spec).await.expect("schedule");

    let first = engine_lease_one(&engine, "heartbeat", secs(300)).await;
    clock.advance(secs(1));
    engine.ack(&first.token, Outcome::Done).await.expect("ack");
    let task = stored(engine.store(), "heartbeat", "ping").await;
    assert_eq!(task.state, TaskState::Scheduled, "re-armed with the ack");
    assert_eq!(task.due_at, at_secs(10), "fixed rate from the first due time, not 10 s after the ack");
    assert_eq!(task.attempts, 0);
    assert!(engine_lease(&engine, "heartbeat", 1, secs(300)).await.is_empty(), "fired before the next slot");

    clock.set(at_secs(10));
    let second = engine_lease_one(&engine, "heartbeat", secs(300)).await;
    assert_eq!(second.attempt, 1);
    assert_ne!(second.delivery_id, first.delivery_id, "each occurrence is a new delivery");
    clock.set(at_secs(35)); // the handler ran 25 s: the slots at 20 s and 30 s are missed
    engine.ack(&second.token, Outcome::Done).await.expect("ack");
    let task = stored(engine.store(), "heartbeat", "ping").await;
    assert_eq!(task.due_at, at_secs(40), "missed slots are skipped, not caught up");
    let batch = engine_lease(&engine, "heartbeat", 10, secs(300)).await;
    assert!(batch.is_empty(), "a missed slot fired as catch-up: {batch:?}");
}

/// DESIGN.md repeat rules for `times`: N occurrences in all, then the task is gone.
pub async fn times_fires_exactly_n_times_then_the_task_is_gone<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    let repeat = Repeat::every(secs(10)).expect("repeat").times(3).expect("times");
    engine.schedule("digest", "weekly", TaskSpec::now().repeat(repeat)).await.expect("schedule");
    let mut fired = 0;
    loop {
        fired += 1;
        match fire_and_ack(&engine, "digest", "weekly").await {
            Some(task) => {
                assert!(fired < 3, "occurrence {fired} of 3 was re-armed at {}", task.due_at);
                clock.set(task.due_at);
            }
            None => break,
        }
    }
    assert_eq!(fired, 3, "times(3) fires three times in all");
    clock.advance(secs(3600));
    assert!(engine_lease(&engine, "digest", 10, secs(300)).await.is_empty());
}

/// DESIGN.md repeat rules for `until`: no occurrence is due after `until`; an
/// occurrence due exactly at `until` still fires.
pub async fn until_ends_the_repeat_after_its_last_instant<S: Store>(store: S) {
    let (engine, clock) = start_engine(store, T0);
    let repeat = Repeat::every(secs(10)).expect("repeat").until(at_secs(20));
    engine.schedule("digest", "daily", TaskSpec::now().repeat(repeat)).await.expect("schedule");
    let mut due_times = vec![clock.now()];
    while let Some(task) = fire_and_ack(&engine, "digest", "daily").await {
        assert!(due_times.len() < 10, "the repeat did not end: {due_times:?}");
        due_times.push(task.due_at);
        clock.set(task.due_at);
    }
    assert_eq!(due_times, [T0, at_secs(10), at_secs(20)], "occurrences up to and including until");
}

/// DESIGN.md repeat rules for `cron` with a zone, re-armed atomically with the ack —
/// across the 2026-03-08 spring-forward in New York, where 02:30 does not exist and
/// the occurrence falls at the first valid time after the gap (03:00 EDT).
pub async fn cron_is_re_armed_with_the_ack_across_a_daylight_saving_change<S: Store>(store: S) {
    let utc = |text: &str| Timestamp::parse(text).expect("a valid instant");
    // 02:00 EST on 2026-03-07.
    let (engine, clock) = start_engine(store, utc("2026-03-07T07:00:00Z"));
    let repeat = Repeat::cron("30 2 * * *", "America/New_York").expect("cron");
    let scheduled = engine.schedule("report", "nightly", TaskSpec::now().repeat(repeat)).await.expect("schedule");
    let scheduled = scheduled.task.expect("a task is written");
    assert_eq!(scheduled.due_at, utc("2026-03-07T07:30:00Z"), "02:30 EST");

    let expected = [
        utc("2026-03-08T07:00:00Z"), // no 02:30 that day: 03:00 EDT
        utc("2026-03-09T06:30:00Z"), // 02:30 EDT
        utc("2026-03-10T06:30:00Z"),
    ];
    let mut due = scheduled.due_at;
    let mut delivery_ids = Vec::new();
    for next in expected {
        clock.set(due);
        let lease = engine_lease_one(&engine, "report", secs(300)).await;
        delivery_ids.push(lease.delivery_id.clone());
        clock.advance(secs(2));
        engine.ack(&lease.token, Outcome::Done).await.expect("ack");
        let task = stored(engine.store(), "report", "nightly").await;
        assert_eq!(task.state, TaskState::Scheduled, "re-armed with the ack");
        assert_eq!(task.due_at, next, "the occurrence after the one due {due}");
        assert_eq!(task.attempts, 0);
        due = task.due_at;
    }
    delivery_ids.dedup();
    assert_eq!(delivery_ids.len(), 3, "each occurrence is a new delivery");
}
