//! The engine applies a task's timing: each misfire policy after an outage (no
//! consumer leased while occurrences fell due), overlap `queue` after a long firing,
//! repeats in a working-time calendar, and jitter.
//!
//! Guards against a skipped occurrence that fires anyway or leaves its lease to
//! expire, a catch-up that fires more than `catch_up_max` or walks from the task's
//! first occurrence, a `missed` count that lies, a repeat that forgets its calendar
//! after its first firing, and jitter that moves the occurrence a delivery says it
//! stands for.
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when told.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;
use std::time::Duration;

use punctual_core::calendar::{CalendarChange, CalendarName};
use punctual_core::policy::{Misfire, Overlap, Timing};
use punctual_core::store::LeaseRequest;
use punctual_core::{
    Engine, EngineConfig, Event, Lease, LeaseOptions, MemoryStore, Outcome, QueueName, Repeat, Store, TaskSpec,
    Timestamp, TokioClock,
};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Saturday 3 October 2026, 10:00 UTC.
fn start() -> Timestamp {
    Timestamp::parse("2026-10-03T10:00:00Z").unwrap()
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn engine() -> Engine<MemoryStore> {
    Engine::start(MemoryStore::new(), EngineConfig::default().clock(Arc::new(TokioClock::starting_at(start()))))
}

fn hourly(timing: Timing) -> TaskSpec {
    TaskSpec::at(start()).repeat(Repeat::every(HOUR).unwrap()).timing(timing)
}

async fn lease_all(engine: &Engine<MemoryStore>) -> Vec<Lease> {
    engine.lease("reminders", LeaseOptions::default().max(10).lease_for(HOUR)).await.unwrap()
}

async fn due_at(engine: &Engine<MemoryStore>, key: &str) -> Option<Timestamp> {
    engine.get("reminders", key).await.unwrap().map(|task| task.due_at)
}

#[tokio::test(start_paused = true)]
async fn fire_once_fires_one_late_occurrence_that_counts_the_missed_and_goes_on_from_now() {
    let engine = engine();
    engine.schedule("reminders", "daily", hourly(Timing::default())).await.unwrap();
    tokio::time::advance(3 * HOUR + 30 * MINUTE).await;
    let leases = lease_all(&engine).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(
        (leases[0].scheduled_for, leases[0].missed),
        (start(), 3),
        "the firing of 10:00 stands in for 11:00, 12:00 and 13:00"
    );
    engine.complete(&leases[0], Outcome::Done).await.unwrap();
    assert_eq!(due_at(&engine, "daily").await, Some(at("2026-10-03T14:00:00Z")));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn fire_all_fires_the_latest_catch_up_max_in_order_then_goes_on() {
    let engine = engine();
    let mut timing = Timing::default();
    timing.misfire = Misfire::FireAll;
    timing.catch_up_max = Some(2);
    engine.schedule("reminders", "daily", hourly(timing)).await.unwrap();
    tokio::time::advance(3 * HOUR + 30 * MINUTE).await;
    let mut fired = Vec::new();
    loop {
        let leases = lease_all(&engine).await;
        let Some(lease) = leases.first() else { break };
        assert_eq!(leases.len(), 1, "one task, one firing at a time");
        fired.push((lease.scheduled_for, lease.missed));
        engine.complete(lease, Outcome::Done).await.unwrap();
    }
    let hour = |h| at(&format!("2026-10-03T{h}:00:00Z"));
    assert_eq!(fired, [(hour(10), 1), (hour(12), 0), (hour(13), 0)], "11:00 dropped, counted by the first");
    assert_eq!(due_at(&engine, "daily").await, Some(hour(14)));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn skip_completes_a_late_first_try_without_firing_it() {
    let engine = engine();
    let mut events = engine.subscribe();
    let mut timing = Timing::default();
    timing.misfire = Misfire::Skip;
    timing.misfire_after = Some(10 * MINUTE);
    engine.schedule("reminders", "daily", hourly(timing.clone())).await.unwrap();
    engine.schedule("reminders", "once", TaskSpec::at(start()).timing(timing.clone())).await.unwrap();
    let in_time = TaskSpec::at(start().saturating_add(3 * HOUR + 25 * MINUTE)).timing(timing);
    engine.schedule("reminders", "in-time", in_time).await.unwrap();
    tokio::time::advance(3 * HOUR + 30 * MINUTE).await;

    let leases = lease_all(&engine).await;
    let keys: Vec<&str> = leases.iter().map(|lease| lease.token.key.as_str()).collect();
    assert_eq!(keys, ["in-time"], "5 minutes late is within misfire_after; the others are misfires");
    assert_eq!(due_at(&engine, "daily").await, Some(at("2026-10-03T14:00:00Z")), "on to the next after now");
    assert_eq!(due_at(&engine, "once").await, None, "a skipped one-off task ends");
    let skipped = events
        .wait_for(Duration::from_secs(1), |event| match event {
            Event::Misfired { key, next: None, .. } => Some(key.to_string()),
            _ => None,
        })
        .await;
    assert_eq!(skipped.as_deref(), Some("once"));
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn overlap_queue_fires_once_more_after_a_firing_that_outlived_its_interval() {
    let engine = engine();
    let spec = |overlap| {
        let mut timing = Timing::default();
        timing.overlap = overlap;
        TaskSpec::at(start()).repeat(Repeat::every(10 * MINUTE).unwrap()).timing(timing)
    };
    engine.schedule("reminders", "queued", spec(Overlap::Queue)).await.unwrap();
    engine.schedule("reminders", "skipped", spec(Overlap::Skip)).await.unwrap();
    let leases = lease_all(&engine).await;
    assert_eq!(leases.len(), 2);
    // The firings run 25 minutes: 10:10 and 10:20 fall due meanwhile.
    tokio::time::advance(25 * MINUTE).await;
    for lease in &leases {
        engine.complete(lease, Outcome::Done).await.unwrap();
    }
    assert_eq!(due_at(&engine, "queued").await, Some(at("2026-10-03T10:20:00Z")), "the latest, at once");
    assert_eq!(due_at(&engine, "skipped").await, Some(at("2026-10-03T10:30:00Z")), "the next after now");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_repeat_in_a_calendar_fires_on_working_days_only_and_keeps_its_calendar() {
    let engine = engine();
    let office = r#"{"tz":"UTC","hours":{"mon":["09:00-17:00"],"tue":["09:00-17:00"],"wed":["09:00-17:00"],
        "thu":["09:00-17:00"],"fri":["09:00-17:00"]},"holidays":["2026-10-06"]}"#;
    engine.change_calendar("office", CalendarChange::Put(office.into()), Some(0)).await.unwrap();
    // Scheduled on Saturday with a delay of 30 minutes of working time, then daily.
    let spec = TaskSpec::after(30 * MINUTE)
        .repeat(Repeat::every(24 * HOUR).unwrap())
        .calendar(CalendarName::new("office").unwrap());
    let scheduled = engine.schedule("reminders", "daily", spec).await.unwrap();
    let monday = at("2026-10-05T09:30:00Z");
    assert_eq!(scheduled.task.unwrap().due_at, monday, "30 working minutes from Saturday");
    let mut fired = Vec::new();
    for _ in 0..3 {
        let due = due_at(&engine, "daily").await.unwrap();
        tokio::time::advance(Duration::from_millis(u64::try_from(due.as_millis() - now(&engine)).unwrap())).await;
        let leases = lease_all(&engine).await;
        assert_eq!(leases.len(), 1);
        fired.push(leases[0].scheduled_for);
        engine.complete(&leases[0], Outcome::Done).await.unwrap();
    }
    // Tuesday 6 October is a holiday.
    let days = ["2026-10-05T09:30:00Z", "2026-10-07T09:30:00Z", "2026-10-08T09:30:00Z"].map(at);
    assert_eq!(fired, days);
    engine.shutdown().await.unwrap();
}

fn now(engine: &Engine<MemoryStore>) -> i64 {
    engine.clock().now().as_millis()
}

#[tokio::test(start_paused = true)]
async fn jitter_moves_the_due_time_but_not_the_occurrence_a_delivery_stands_for() {
    let engine = engine();
    let mut timing = Timing::default();
    timing.jitter = Some(30 * MINUTE);
    let nominal = start().saturating_add(HOUR);
    let mut due_times = Vec::new();
    for i in 0..20 {
        let key = format!("r-{i}");
        let task = engine.schedule("reminders", &key, TaskSpec::at(nominal).timing(timing.clone())).await.unwrap();
        let due = task.task.unwrap().due_at;
        assert!(due >= nominal && due < nominal.saturating_add(30 * MINUTE), "{due} outside [09:00, 09:30)");
        due_times.push(due);
    }
    due_times.sort();
    due_times.dedup();
    assert!(due_times.len() > 10, "20 draws in 30 minutes gave only {} times", due_times.len());
    tokio::time::advance(2 * HOUR).await;
    let leases = engine.lease("reminders", LeaseOptions::default().max(100)).await.unwrap();
    assert_eq!(leases.len(), 20);
    assert!(leases.iter().all(|lease| lease.scheduled_for == nominal), "a delivery stands for 09:00");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn overlap_allow_fires_each_occurrence_as_a_task_of_its_own_while_the_last_still_runs() {
    let engine = engine();
    let mut timing = Timing::default();
    timing.overlap = Overlap::Allow;
    let spec = TaskSpec::at(start()).repeat(Repeat::every(10 * MINUTE).unwrap()).timing(timing).tag("pi-9");
    engine.schedule("reminders", "tick", spec.payload(serde_json::json!({"n": 1}))).await.unwrap();
    let first = lease_all(&engine).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].token.key.as_str(), "tick@2026-10-03T10:00:00.000Z");
    assert_eq!((first[0].scheduled_for, &first[0].task.payload), (start(), &serde_json::json!({"n": 1})));
    assert_eq!(first[0].task.tags.len(), 1, "the repeat's tags, so a cancel by tag reaches it");
    assert_eq!(due_at(&engine, "tick").await, Some(at("2026-10-03T10:10:00Z")), "the repeat moved on at once");
    // 10:10 fires while 10:00's lease (an hour) still runs.
    tokio::time::advance(10 * MINUTE).await;
    let second = lease_all(&engine).await;
    let keys: Vec<&str> = second.iter().map(|lease| lease.token.key.as_str()).collect();
    assert_eq!(keys, ["tick@2026-10-03T10:10:00.000Z"]);
    engine.complete(&first[0], Outcome::retry("busy")).await.unwrap();
    assert_eq!(
        engine.get("reminders", "tick@2026-10-03T10:00:00.000Z").await.unwrap().unwrap().attempts,
        1,
        "its own retries"
    );
    engine.shutdown().await.unwrap();
}

/// A repeat under allow whose lease expired (its completion failed after the
/// occurrence's task was written) is leased again on a later try: it writes nothing
/// more and never fires itself, so the occurrence fires once.
#[tokio::test(start_paused = true)]
async fn overlap_allow_never_fires_the_repeat_itself_on_a_later_try() {
    let engine = engine();
    let mut events = engine.subscribe();
    let mut timing = Timing::default();
    timing.overlap = Overlap::Allow;
    let spec = TaskSpec::at(start()).repeat(Repeat::every(HOUR).unwrap()).timing(timing);
    engine.schedule("reminders", "tick", spec).await.unwrap();
    // Another process leased the repeat and died before completing it.
    let request = LeaseRequest::new(QueueName::new("reminders").unwrap(), 1, Duration::from_secs(5), start());
    assert_eq!(engine.store().lease(request).await.unwrap().leases.len(), 1);
    tokio::time::advance(Duration::from_secs(6)).await;
    let expired = events
        .wait_for(Duration::from_secs(60), |event| matches!(event, Event::LeaseExpired { .. }).then_some(()))
        .await;
    assert!(expired.is_some(), "the reaper did not requeue the dead process's lease");
    let leases = lease_all(&engine).await;
    let keys: Vec<&str> = leases.iter().map(|lease| lease.token.key.as_str()).collect();
    assert_eq!(keys, ["tick@2026-10-03T10:00:00.000Z"], "the repeat's second try fired itself");
    engine.complete(&leases[0], Outcome::Done).await.unwrap();
    assert_eq!(due_at(&engine, "tick").await, Some(at("2026-10-03T11:00:00Z")));
    engine.shutdown().await.unwrap();
}
