//! The engine follows the store's calendars: guards against a calendar that another
//! process wrote never reaching this one, an engine's own change waiting for the next
//! read, a removed calendar still served, and a document that is not a calendar being
//! stored.
//!
//! Time is tokio's, paused ([`TokioClock`]): it moves only when every task waits.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;

use punctual_core::calendar::{CalendarChange, CalendarChangeRequest, CalendarName};
use punctual_core::{Engine, EngineConfig, Error, MemoryStore, RECORDS_POLL, Store, Timestamp, TokioClock};

const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const BERLIN: &str = r#"{"tz":"Europe/Berlin","hours":{"mon":["09:00-17:00"],"tue":["09:00-17:00"]}}"#;
const SHANGHAI: &str = r#"{"tz":"Asia/Shanghai","hours":{"mon":["09:00-18:00"]},"workdays":["2026-09-27"]}"#;

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
