//! Timing policies and anchors: a task's timing (calendar, misfire, overlap, jitter)
//! reads back as written through every state; its anchor is the time its occurrence
//! was scheduled for (before jitter), kept by a lease, a retry and an expiry, set by a
//! reschedule, and never later than the due time a debounce brought forward.
//!
//! Guards against a store that drops the timing on a lease, a retry or a replace (a
//! repeat that forgets its calendar after its first firing), that writes the due time
//! as the anchor (deliveries that say a jittered time was the one scheduled, a
//! fixed-rate grid that drifts by each jitter), or that keeps the first anchor across
//! occurrences (a catch-up that walks from the task's first occurrence); and, through
//! the engine, a misfire policy that a store's lease or completion undoes (a skip that
//! fires, a catch-up that repeats or loses an occurrence).

use std::sync::Arc;
use std::time::Duration;

use punctual_core::calendar::CalendarName;
use punctual_core::policy::{Misfire, Overlap, Timing};
use punctual_core::store::Completion;
use punctual_core::{EngineConfig, ManualClock, Outcome, Repeat, Store, TaskSpec};

use super::support::*;

fn timing() -> Timing {
    let mut timing = Timing::default();
    timing.calendar = Some(CalendarName::new("cn-office").expect("a valid name"));
    timing.misfire = Misfire::Skip;
    timing.misfire_after = Some(Duration::from_secs(600));
    timing.overlap = Overlap::Queue;
    timing.jitter = Some(Duration::from_secs(30));
    timing
}

/// `schedule`, `lease`, `complete` contract: the timing and `scheduled_for` of a new
/// task read back as written (the anchor is `scheduled_for`, not the jittered due
/// time); a lease, a retry and an expired lease keep both; a reschedule sets the
/// anchor it is given and keeps the timing; a replace writes the new task's.
pub async fn a_tasks_timing_and_anchor_are_kept_as_written<S: Store>(store: S) {
    let mut task = new_task("reminders", "pi-9", at_secs(17));
    task.timing = timing();
    task.scheduled_for = at_secs(10);
    create(&store, task, T0).await;
    let read = stored(&store, "reminders", "pi-9").await;
    assert_eq!((read.timing.clone(), read.meta.anchor, read.due_at), (timing(), at_secs(10), at_secs(17)));

    let lease = lease_one(&store, "reminders", secs(30), at_secs(20)).await;
    assert_eq!((lease.task.timing.clone(), lease.task.meta.anchor), (timing(), at_secs(10)), "as leased");
    let retry = Completion::Retry { at: at_secs(40), error: "HTTP 503".into() };
    complete_ok(&store, &lease.token, retry, at_secs(21)).await;
    let read = stored(&store, "reminders", "pi-9").await;
    assert_eq!((read.timing.clone(), read.meta.anchor, read.due_at), (timing(), at_secs(10), at_secs(40)), "retried");

    // The retry's lease expires: reaped, the task keeps its timing and anchor.
    let lease = lease_one(&store, "reminders", secs(5), at_secs(40)).await;
    assert_eq!(reap(&store, at_secs(60), 10).await.reaped.len(), 1);
    let read = stored(&store, "reminders", "pi-9").await;
    assert_eq!((read.timing.clone(), read.meta.anchor), (timing(), at_secs(10)), "reaped");
    drop(lease);

    let lease = lease_one(&store, "reminders", secs(30), at_secs(61)).await;
    let rearm = Completion::Reschedule { at: at_secs(3_620), anchor: at_secs(3_600) };
    complete_ok(&store, &lease.token, rearm, at_secs(62)).await;
    let read = stored(&store, "reminders", "pi-9").await;
    assert_eq!((read.meta.anchor, read.due_at, read.meta.occurrence), (at_secs(3_600), at_secs(3_620), 2));
    assert_eq!(read.timing, timing(), "a repeat keeps its timing");

    upsert(&store, new_task("reminders", "pi-9", at_secs(5_000)), at_secs(63)).await;
    let read = stored(&store, "reminders", "pi-9").await;
    assert_eq!((read.timing.clone(), read.meta.anchor), (Timing::default(), at_secs(5_000)), "replaced");
}

/// `schedule` contract: a debounced schedule that brings the due time before the
/// task's `scheduled_for` anchors at the due time, so the anchor is never later than
/// the time the task is due.
pub async fn a_debounced_due_time_before_scheduled_for_is_the_anchor<S: Store>(store: S) {
    let mut first = new_task("reminders", "burst", at_secs(20));
    first.debounce = Some(secs(30));
    create(&store, first, T0).await;
    let mut later = new_task("reminders", "burst", at_secs(90));
    later.scheduled_for = at_secs(80);
    later.debounce = Some(secs(30));
    upsert(&store, later, at_secs(5)).await;
    let read = stored(&store, "reminders", "burst").await;
    assert_eq!((read.due_at, read.meta.anchor), (at_secs(30), at_secs(30)), "due by the burst's bound, anchored there");
}

/// Engine on the store: after an outage (no lease while three occurrences of an hourly
/// repeat fell due), `fire_once` fires one late occurrence that counts the three
/// missed, `fire_all` with `catch_up_max` 2 fires the first and then the latest two in
/// order, and `skip` fires nothing and moves on; each then waits for its next
/// occurrence after now.
pub async fn engine_applies_each_misfire_policy_after_an_outage<S: Store>(store: S) {
    let clock = ManualClock::new(T0);
    let engine = punctual_core::Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())));
    let hourly = |misfire: Misfire, catch_up_max: Option<u32>| {
        let mut timing = Timing::default();
        timing.misfire = misfire;
        timing.catch_up_max = catch_up_max;
        TaskSpec::at(T0).repeat(Repeat::every(secs(3600)).expect("a valid interval")).timing(timing)
    };
    let specs = [
        ("once", hourly(Misfire::FireOnce, None)),
        ("all", hourly(Misfire::FireAll, Some(2))),
        ("skip", hourly(Misfire::Skip, None)),
    ];
    for (name, spec) in specs {
        engine.schedule("reminders", name, spec).await.expect("schedule");
    }
    clock.advance(secs(3 * 3600 + 1800));
    let mut fired = Vec::new();
    loop {
        let leases = engine_lease(&engine, "reminders", 10, secs(60)).await;
        if leases.is_empty() {
            break;
        }
        for lease in leases {
            let offset = (lease.scheduled_for.as_millis() - T0.as_millis()) / 3_600_000;
            fired.push((lease.token.key.to_string(), offset, lease.missed));
            engine.complete(&lease, Outcome::Done).await.expect("ack");
        }
    }
    fired.sort();
    let expected = [("all", 0, 1), ("all", 2, 0), ("all", 3, 0), ("once", 0, 3)];
    let expected: Vec<(String, i64, u32)> = expected.iter().map(|(k, h, m)| ((*k).to_owned(), *h, *m)).collect();
    assert_eq!(fired, expected, "(key, hour scheduled for, missed) of each firing");
    for name in ["once", "all", "skip"] {
        let task = stored(engine.store(), "reminders", name).await;
        assert_eq!(task.due_at, at_secs(4 * 3600), "{name} waits for its next occurrence after now");
    }
    engine.shutdown().await.expect("shutdown");
}
