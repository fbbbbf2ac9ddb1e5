//! Calendars as stored resources: their records (a document and a version, shared by
//! every process on a store).
//!
//! Guards against a calendar version that repeats or skips (a conditional change made
//! against an old version would then apply to a newer calendar, also one created again
//! after a removal), a removal that forgets the version or leaves the document, a
//! document not kept as given, a conditional change that half applies or that two
//! racing processes both win, and calendars that reach into queue records or tasks.

use std::sync::Arc;

use punctual_core::calendar::{CalendarChange, CalendarChangeRequest, CalendarName, CalendarRecord};
use punctual_core::{Error, Store, TaskState, Timestamp};

use super::support::*;

/// A calendar document with characters a store's own encoding could trip on.
const SPEC: &str = "{\"tz\":\"Asia/Shanghai\",\"hours\":{\"mon\":[\"09:00-12:00\",\"13:30-18:00\"]},\
                    \"note\":\"a|b,c;\\nd é\"}";
const OTHER: &str = "{\"tz\":\"Europe/Berlin\",\"hours\":{\"fri\":[\"09:00-17:00\"]}}";

fn name(text: &str) -> CalendarName {
    CalendarName::new(text).expect("a calendar name")
}

fn put(calendar: &str, spec: &str, now: Timestamp) -> CalendarChangeRequest {
    CalendarChangeRequest::new(name(calendar), CalendarChange::Put(spec.to_owned()), now)
}

fn remove(calendar: &str, now: Timestamp) -> CalendarChangeRequest {
    CalendarChangeRequest::new(name(calendar), CalendarChange::Remove, now)
}

fn record(calendar: &str, spec: Option<&str>, version: u64, at: Timestamp) -> CalendarRecord {
    CalendarRecord::new(name(calendar), spec.map(str::to_owned), version, at)
}

async fn change<S: Store>(store: &S, req: CalendarChangeRequest) -> CalendarRecord {
    let what = format!("{:?} of {}", req.change, req.name);
    store.change_calendar(req).await.unwrap_or_else(|e| panic!("change_calendar ({what}) failed: {e}"))
}

async fn records<S: Store>(store: &S) -> Vec<CalendarRecord> {
    store.calendar_records().await.unwrap_or_else(|e| panic!("calendar_records: {e}"))
}

async fn record_of<S: Store>(store: &S, calendar: &str) -> Option<CalendarRecord> {
    records(store).await.into_iter().find(|record| record.name.as_str() == calendar)
}

/// `change_calendar` contract: created at version 1, one version up and `updated_at`
/// the change's `now` at every change after; a removal keeps the record without its
/// document (listed, its version kept), a second removal is `Error::NotFound` and
/// changes nothing, and a calendar created again goes on from the removed version.
/// The document is kept as given.
pub async fn a_calendar_starts_at_version_one_and_a_removal_keeps_its_version<S: Store>(store: S) {
    assert_eq!(records(&store).await, Vec::new(), "a new store has no calendars");
    let steps = [
        (put("cn-office", SPEC, at_secs(1)), record("cn-office", Some(SPEC), 1, at_secs(1)), "created"),
        (put("cn-office", OTHER, at_secs(2)), record("cn-office", Some(OTHER), 2, at_secs(2)), "replaced"),
        (put("cn-office", OTHER, at_secs(3)), record("cn-office", Some(OTHER), 3, at_secs(3)), "the same again"),
        (remove("cn-office", at_secs(4)), record("cn-office", None, 4, at_secs(4)), "removed"),
        (put("cn-office", SPEC, at_secs(5)), record("cn-office", Some(SPEC), 5, at_secs(5)), "created again"),
    ];
    for (req, expected, what) in steps {
        assert_eq!(change(&store, req).await, expected, "the answer: {what}");
        assert_eq!(record_of(&store, "cn-office").await, Some(expected), "as stored: {what}");
    }
    change(&store, remove("cn-office", at_secs(6))).await;
    match store.change_calendar(remove("cn-office", at_secs(7))).await {
        Err(Error::NotFound(_)) => {}
        other => panic!("removing a removed calendar: expected Error::NotFound, got {other:?}"),
    }
    match store.change_calendar(remove("never", at_secs(7))).await {
        Err(Error::NotFound(_)) => {}
        other => panic!("removing a calendar never created: expected Error::NotFound, got {other:?}"),
    }
    assert_eq!(
        records(&store).await,
        vec![record("cn-office", None, 6, at_secs(6))],
        "refused removals changed nothing"
    );
}

/// `calendar_records` contract: every calendar, removed ones included, sorted by name
/// (bytewise); calendars touch no queue record and no task.
pub async fn calendars_are_listed_by_name_and_touch_no_queue_or_task<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    let names = ["de-office", "a-z", "cn-office.2027", "0", "Office", "a_z", "a:z"];
    for (i, calendar) in names.iter().enumerate() {
        change(&store, put(calendar, &format!("{{\"n\":{i}}}"), at_secs(i as i64))).await;
    }
    change(&store, remove("a-z", at_secs(20))).await;
    let listed: Vec<String> = records(&store).await.iter().map(|record| record.name.to_string()).collect();
    let mut sorted: Vec<String> = names.iter().map(|calendar| calendar.to_string()).collect();
    sorted.sort();
    assert_eq!(listed, sorted, "every calendar once, by name, the removed one included");
    assert_eq!(record_of(&store, "a-z").await, Some(record("a-z", None, 2, at_secs(20))));
    assert_eq!(record_of(&store, "Office").await, Some(record("Office", Some("{\"n\":4}"), 1, at_secs(4))));
    assert_eq!(store.queue_records().await.expect("queue_records"), Vec::new(), "no queue record made");
    assert_eq!(stored(&store, "orders", "order-1").await.state, TaskState::Scheduled, "calendars touch no task");
}

/// `change_calendar` contract, conditional: a change whose `if_version` is not the
/// record's (0: none) is `Error::Conflict` and changes nothing, a removal included;
/// a removed calendar is at version 0 again (created anew with `if_version(0)`, its
/// version going on from the removed one's); of changes racing on one version exactly
/// one applies, while unconditional ones
/// racing all apply, none lost.
pub async fn a_calendar_change_at_another_version_is_a_conflict_and_changes_nothing<S: Store>(store: S) {
    let refused = |result: punctual_core::Result<CalendarRecord>, what: &str| match result {
        Err(Error::Conflict(_)) => {}
        other => panic!("{what}: expected Error::Conflict, got {other:?}"),
    };
    refused(store.change_calendar(put("office", SPEC, at_secs(1)).if_version(1)).await, "no calendar yet");
    assert_eq!(records(&store).await, Vec::new(), "the refused change created nothing");
    let created = store.change_calendar(put("office", SPEC, at_secs(2)).if_version(0)).await;
    assert_eq!(created.expect("if_version 0 with no calendar"), record("office", Some(SPEC), 1, at_secs(2)));
    refused(store.change_calendar(put("office", OTHER, at_secs(3)).if_version(0)).await, "if_version 0 once created");
    for stale in [0, 2, 9] {
        refused(store.change_calendar(remove("office", at_secs(4)).if_version(stale)).await, "a stale removal");
    }
    assert_eq!(records(&store).await, vec![record("office", Some(SPEC), 1, at_secs(2))], "refused: nothing changed");

    change(&store, put("gone", SPEC, at_secs(1))).await;
    change(&store, remove("gone", at_secs(2))).await;
    refused(store.change_calendar(put("gone", SPEC, at_secs(3)).if_version(2)).await, "the version it had");
    let again = store.change_calendar(put("gone", OTHER, at_secs(3)).if_version(0)).await;
    assert_eq!(again.expect("if_version 0 of a removed calendar"), record("gone", Some(OTHER), 3, at_secs(3)));
    let store = Arc::new(store);
    let mut racers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        racers.spawn(async move {
            store.change_calendar(put("office", &format!("{{\"racer\":{i}}}"), at_secs(5)).if_version(1)).await
        });
    }
    let won = winners("the racing conditional changes", racers).await;
    assert_eq!(won.len(), 1, "exactly one change at version 1 applies: {won:?}");
    assert_eq!(won[0].version, 2);
    assert_eq!(record_of(&*store, "office").await.as_ref(), Some(&won[0]));

    let mut racers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        racers.spawn(async move { change(&*store, put("office", &format!("{{\"all\":{i}}}"), at_secs(6))).await });
    }
    while let Some(joined) = within("the racing changes", racers.join_next()).await {
        joined.expect("a racer panicked");
    }
    assert_eq!(record_of(&*store, "office").await.map(|record| record.version), Some(10), "every change counted");
}
