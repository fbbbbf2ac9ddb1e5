//! The audit (`punctual_core::audit`): queue and calendar changes are told with who
//! made them in the same step as the change, other entries are appended, paging newest
//! first visits each entry once, and a sweep forgets entries older than its cutoff.
//!
//! Guards against a change without its entry (or an entry of a change refused), an
//! entry without its author or detail, sequence numbers that repeat (a page repeating or
//! skipping entries) and a sweep that deletes recent entries.

use punctual_core::audit::{AuditAction, AuditEntry, AuditRequest};
use punctual_core::calendar::{CalendarChange, CalendarChangeRequest, CalendarName};
use punctual_core::history::Actor;
use punctual_core::store::{QueueChange, QueueChangeRequest};
use punctual_core::{Error, Store};
use serde_json::json;

use super::support::*;

fn ops() -> Option<Actor> {
    Some(Actor::new("ops"))
}

async fn newest<S: Store>(store: &S, limit: u32, before: Option<u64>) -> Vec<AuditEntry> {
    store.audit(AuditRequest::new(limit, before)).await.unwrap_or_else(|e| panic!("audit: {e}"))
}

/// Each queue and calendar change writes its entry with the change, naming who made
/// it; a change refused for its version writes none; an appended entry is kept; a page
/// is newest first and paging with the last sequence number read visits each once.
pub async fn queue_and_calendar_changes_are_audited_and_a_refused_one_is_not<S: Store>(store: S) {
    let settings = QueueChange::Settings(r#"{"max_attempts":3}"#.into());
    store
        .change_queue(QueueChangeRequest::new(queue("orders"), settings, at_secs(1)).by(ops()))
        .await
        .expect("settings");
    let pause = QueueChangeRequest::new(queue("orders"), QueueChange::Paused(true), at_secs(2)).by(ops());
    store.change_queue(pause).await.expect("pause");
    let stale =
        QueueChangeRequest::new(queue("orders"), QueueChange::Paused(false), at_secs(3)).if_version(1).by(ops());
    assert!(matches!(store.change_queue(stale).await, Err(Error::Conflict(_))), "version 2 is the record's");
    let calendar = CalendarName::new("office").expect("a calendar name");
    let put = CalendarChange::Put(r#"{"tz":"UTC","hours":{"mon":["09:00-17:00"]}}"#.into());
    store.change_calendar(CalendarChangeRequest::new(calendar.clone(), put, at_secs(4))).await.expect("calendar");
    let remove = CalendarChangeRequest::new(calendar, CalendarChange::Remove, at_secs(5)).by(ops());
    store.change_calendar(remove).await.expect("remove");
    let purge = AuditEntry::new(at_secs(6), ops().as_ref(), AuditAction::QueuePurge)
        .on_queue("orders")
        .detail(json!({"state": "dead", "cancelled": 2}));
    store.append_audit(purge).await.expect("append_audit");

    let entries = newest(&store, 100, None).await;
    let actions: Vec<&str> = entries.iter().map(|entry| entry.action.as_str()).collect();
    assert_eq!(
        actions,
        ["queue.purge", "calendar.remove", "calendar.set", "queue.pause", "queue.settings.set"],
        "newest first, the refused resume left out: {entries:#?}"
    );
    assert!(entries.windows(2).all(|pair| pair[0].seq > pair[1].seq), "sequence numbers fall: {entries:#?}");
    let settings = &entries[4];
    assert_eq!(
        (settings.at, settings.by.as_deref(), settings.queue.as_deref()),
        (at_secs(1), Some("ops"), Some("orders"))
    );
    assert_eq!(settings.detail, Some(json!({"max_attempts": 3})), "the settings set, as JSON");
    assert_eq!((entries[2].calendar.as_deref(), entries[2].by.as_deref()), (Some("office"), None));
    assert_eq!(entries[2].detail.as_ref().map(|detail| detail["tz"].clone()), Some(json!("UTC")));
    assert_eq!((entries[1].calendar.as_deref(), entries[1].by.as_deref()), (Some("office"), Some("ops")));
    assert_eq!(entries[0].detail, Some(json!({"state": "dead", "cancelled": 2})));

    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = newest(&store, 2, before).await;
        assert!(page.len() <= 2, "at most the limit");
        let Some(last) = page.last() else { break };
        before = Some(last.seq);
        paged.extend(page);
    }
    assert_eq!(paged, entries, "paging visits each entry once, in order");
}

/// `sweep_audit` deletes the entries made before its cutoff, oldest first, and no
/// other; the next entry's sequence number is still above every one given before.
pub async fn sweeping_the_audit_forgets_entries_before_the_cutoff<S: Store>(store: S) {
    for (i, at) in [at_secs(10), at_secs(20), at_secs(30)].into_iter().enumerate() {
        let entry = AuditEntry::new(at, None, AuditAction::AccessReload).detail(json!({ "n": i }));
        store.append_audit(entry).await.expect("append_audit");
    }
    let before = newest(&store, 10, None).await;
    assert_eq!(store.sweep_audit(at_secs(25), 1).await.expect("sweep_audit"), 1, "at most the limit");
    assert_eq!(store.sweep_audit(at_secs(25), 10).await.expect("sweep_audit"), 1);
    assert_eq!(store.sweep_audit(at_secs(25), 10).await.expect("sweep_audit"), 0, "none left before 25 s");
    let left = newest(&store, 10, None).await;
    assert_eq!(left, before[..1], "only the entry at 30 s is left");
    store.append_audit(AuditEntry::new(at_secs(40), None, AuditAction::AccessReload)).await.expect("append_audit");
    let after = newest(&store, 10, None).await;
    assert!(after[0].seq > left[0].seq, "numbers are never reused: {after:#?}");
}
