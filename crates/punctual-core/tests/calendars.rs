//! The engine follows the store's calendars: guards against a calendar that another
//! process wrote never reaching this one, an engine's own change waiting for the next
//! read, a removed calendar still served, a document that is not a calendar being
//! stored, and an engine just started counting as if the stored calendars did not exist
//! (a calendar task refused, a late repeat in one sent to `dead`).
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when every task waits.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;
use std::time::Duration;

use punctual_core::calendar::{CalendarChange, CalendarChangeRequest, CalendarName};
use punctual_core::policy::Misfire;
use punctual_core::store::LeaseRequest;
use punctual_core::{
    Engine, EngineConfig, Error, LeaseOptions, LeaseToken, MemoryStore, NewTask, Outcome, QueueName, RECORDS_POLL,
    Repeat, Store, TaskKey, TaskSpec, TaskState, Timestamp, TokioClock,
};

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const BERLIN: &str = r#"{"tz":"Europe/Berlin","hours":{"mon":["09:00-17:00"],"tue":["09:00-17:00"]}}"#;
const SHANGHAI: &str = r#"{"tz":"Asia/Shanghai","hours":{"mon":["09:00-18:00"]},"workdays":["2026-09-27"]}"#;
const DAY: Duration = Duration::from_secs(24 * 3600);

fn engine(store: MemoryStore) -> Engine<MemoryStore> {
    Engine::start(store, EngineConfig::default().clock(Arc::new(TokioClock::starting_at(START))))
}

fn tz_of(engine: &Engine<MemoryStore>, name: &str) -> Option<String> {
    engine.calendars().get(name).map(|entry| entry.calendar.tz().to_owned())
}

#[tokio::test(start_paused = true)]
async fn a_calendar_written_by_another_process_applies_within_the_poll() {
    let engine = engine(MemoryStore::new());
    let mut watched = engine.watch_calendars();
    let name = CalendarName::new("office").unwrap();
    let put = CalendarChangeRequest::new(name.clone(), CalendarChange::Put(BERLIN.into()), START);
    engine.store().change_calendar(put).await.unwrap();
    tokio::time::timeout(RECORDS_POLL * 2, watched.changed()).await.expect("not read within the poll").unwrap();
    assert_eq!(tz_of(&engine, "office").as_deref(), Some("Europe/Berlin"));

    let removal = CalendarChangeRequest::new(name, CalendarChange::Remove, START);
    engine.store().change_calendar(removal).await.unwrap();
    tokio::time::timeout(RECORDS_POLL * 2, watched.changed()).await.expect("removal not read").unwrap();
    assert!(engine.calendars().is_empty(), "a removed calendar is still served");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_engines_own_change_applies_at_once_and_a_bad_document_stores_nothing() {
    let engine = engine(MemoryStore::new());
    let created = engine.change_calendar("cn-office", CalendarChange::Put(SHANGHAI.into()), Some(0)).await.unwrap();
    assert_eq!(created.version, 1);
    assert_eq!(tz_of(&engine, "cn-office").as_deref(), Some("Asia/Shanghai"), "not applied at once");

    let stale = engine.change_calendar("cn-office", CalendarChange::Put(BERLIN.into()), Some(0)).await;
    assert!(matches!(stale, Err(Error::Conflict(_))), "{stale:?}");
    for bad in [r#"{"tz":"Mars/Olympus"}"#, "[1]", r#"{"tz":"UTC","hours":{"mon":["18:00-09:00"]}}"#] {
        let refused = engine.change_calendar("cn-office", CalendarChange::Put(bad.into()), None).await;
        assert!(matches!(refused, Err(Error::Invalid { .. })), "{bad}: {refused:?}");
    }
    let bad_name = engine.change_calendar("a b", CalendarChange::Put(BERLIN.into()), None).await;
    assert!(matches!(bad_name, Err(Error::Invalid { ref field, .. }) if field == "calendar"), "{bad_name:?}");
    let stored = engine.store().calendar_records().await.unwrap();
    assert_eq!(stored, vec![created], "a refused change stored something");

    engine.change_calendar("cn-office", CalendarChange::Remove, Some(1)).await.unwrap();
    assert!(engine.calendars().get("cn-office").is_none(), "the removal did not apply at once");
    let again = engine.change_calendar("cn-office", CalendarChange::Remove, None).await;
    assert!(matches!(again, Err(Error::NotFound(_))), "{again:?}");
    engine.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_config_calendar_is_served_and_no_change_or_stored_namesake_replaces_it() {
    let store = MemoryStore::new();
    let name = CalendarName::new("office").unwrap();
    let namesake = CalendarChangeRequest::new(name.clone(), CalendarChange::Put(SHANGHAI.into()), START);
    store.change_calendar(namesake).await.unwrap();
    let spec = serde_json::from_str(BERLIN).unwrap();
    let config = EngineConfig::default()
        .clock(Arc::new(TokioClock::starting_at(START)))
        .calendar(name, punctual_core::Calendar::new(spec).unwrap());
    let engine = Engine::start(store, config);
    assert_eq!(tz_of(&engine, "office").as_deref(), Some("Europe/Berlin"), "served before any read");
    let refused = engine.change_calendar("office", CalendarChange::Put(SHANGHAI.into()), None).await;
    assert!(matches!(refused, Err(Error::Conflict(ref message)) if message.contains("config")), "{refused:?}");
    // Another process stores a calendar: the read that brings it reads the namesake too.
    let mut watched = engine.watch_calendars();
    let other =
        CalendarChangeRequest::new(CalendarName::new("other").unwrap(), CalendarChange::Put(SHANGHAI.into()), START);
    engine.store().change_calendar(other).await.unwrap();
    while tz_of(&engine, "other").is_none() {
        tokio::time::timeout(RECORDS_POLL * 2, watched.changed()).await.expect("not read within the poll").unwrap();
    }
    assert_eq!(tz_of(&engine, "office").as_deref(), Some("Europe/Berlin"), "the stored namesake replaced it");
    assert_eq!(tz_of(&engine, "other").as_deref(), Some("Asia/Shanghai"));
    engine.shutdown().await.unwrap();
}

/// A store as an earlier process left it: the office calendar (Mondays 09:00-18:00 in
/// Shanghai) and two daily repeats in it, first due Monday 2026-11-30 10:00 there:
/// `skipped` under misfire skip, `leased` leased then (its lease still live).
async fn left_by_an_earlier_process() -> (MemoryStore, LeaseToken) {
    let store = MemoryStore::new();
    let office = CalendarName::new("office").unwrap();
    store
        .change_calendar(CalendarChangeRequest::new(office.clone(), CalendarChange::Put(SHANGHAI.into()), START))
        .await
        .unwrap();
    let monday = Timestamp::parse("2026-11-30T02:00:00Z").unwrap();
    let daily = |key: &str, misfire: Misfire| {
        let mut task = NewTask::new(QueueName::new("flow.remind").unwrap(), TaskKey::new(key).unwrap(), monday);
        task.repeat = Some(Repeat::every(DAY).unwrap());
        task.timing.calendar = Some(office.clone());
        task.timing.misfire = misfire;
        task
    };
    store.schedule(vec![daily("leased", Misfire::FireOnce)], monday).await.unwrap();
    let request = LeaseRequest::new(QueueName::new("flow.remind").unwrap(), 1, 30 * DAY, monday);
    let token = store.lease(request).await.unwrap().leases.remove(0).token;
    store.schedule(vec![daily("skipped", Misfire::Skip)], monday).await.unwrap();
    (store, token)
}

/// Ten days on, before the engine's own first read of the store could run (paused time
/// on one thread: nothing else runs until the test awaits a timer).
#[tokio::test(start_paused = true)]
async fn an_engine_counts_in_the_stored_calendars_from_its_first_call() {
    let later = Timestamp::parse("2026-12-10T02:00:00Z").unwrap();
    let next_monday = Timestamp::parse("2026-12-14T02:00:00Z").unwrap();
    let engine_at =
        |store| Engine::start(store, EngineConfig::default().clock(Arc::new(TokioClock::starting_at(later))));

    let engine = engine_at(left_by_an_earlier_process().await.0);
    let leases = engine.lease("flow.remind", LeaseOptions::default().max(10)).await.unwrap();
    assert!(leases.is_empty(), "a late occurrence under skip fires nothing: {leases:?}");
    let skipped = engine.get("flow.remind", "skipped").await.unwrap().unwrap();
    assert_eq!((skipped.state, skipped.due_at), (TaskState::Scheduled, next_monday), "{:?}", skipped.last_error);
    engine.shutdown().await.unwrap();

    let (store, token) = left_by_an_earlier_process().await;
    let engine = engine_at(store);
    engine.ack(&token, Outcome::Done).await.unwrap();
    let acked = engine.get("flow.remind", "leased").await.unwrap().unwrap();
    assert_eq!((acked.state, acked.due_at), (TaskState::Scheduled, next_monday), "{:?}", acked.last_error);
    engine.shutdown().await.unwrap();

    let engine = engine_at(left_by_an_earlier_process().await.0);
    let spec = TaskSpec::after(Duration::from_secs(3600)).calendar(CalendarName::new("office").unwrap());
    let scheduled = engine.schedule("flow.remind", "step", spec).await.unwrap();
    assert_eq!(scheduled.task.unwrap().due_at, next_monday, "one working hour from Monday's opening at 09:00");
    engine.shutdown().await.unwrap();
}
