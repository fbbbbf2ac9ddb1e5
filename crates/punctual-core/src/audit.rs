//! The audit: who changed a queue's settings, paused, resumed or purged it, set or
//! removed a calendar, or reloaded the access rules, and when. Kept by the store,
//! newest first by a sequence number the store gives each entry.
//!
//! Rules every store keeps (the conformance suite checks them):
//! - a queue or calendar change ([`Store::change_queue`](crate::Store::change_queue),
//!   [`Store::change_calendar`](crate::Store::change_calendar)) writes its entry in the
//!   same atomic step as the change, and a refused change (a version conflict) none;
//! - other entries (a purge, an access reload) are appended on their own
//!   ([`Store::append_audit`](crate::Store::append_audit)) after what they tell;
//! - sequence numbers rise with each entry and are never reused, so paging newest
//!   first with a cursor (the last sequence number read) visits each entry once;
//! - [`Store::sweep_audit`](crate::Store::sweep_audit) deletes entries older than a
//!   cutoff.
//!
//! Stored form ([`encode`], [`decode`]): one JSON object per entry, the fields of
//! [`AuditEntry`] but its sequence number, which the store keeps beside it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::names::Actor;
use crate::time::Timestamp;

/// How long the audit is kept.
pub const AUDIT_RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuditAction {
    #[serde(rename = "queue.settings.set")]
    QueueSettingsSet,
    #[serde(rename = "queue.settings.clear")]
    QueueSettingsClear,
    #[serde(rename = "queue.pause")]
    QueuePause,
    #[serde(rename = "queue.resume")]
    QueueResume,
    #[serde(rename = "queue.purge")]
    QueuePurge,
    #[serde(rename = "calendar.set")]
    CalendarSet,
    #[serde(rename = "calendar.remove")]
    CalendarRemove,
    #[serde(rename = "access.reload")]
    AccessReload,
}

impl AuditAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::QueueSettingsSet => "queue.settings.set",
            AuditAction::QueueSettingsClear => "queue.settings.clear",
            AuditAction::QueuePause => "queue.pause",
            AuditAction::QueueResume => "queue.resume",
            AuditAction::QueuePurge => "queue.purge",
            AuditAction::CalendarSet => "calendar.set",
            AuditAction::CalendarRemove => "calendar.remove",
            AuditAction::AccessReload => "access.reload",
        }
    }
}

/// One entry of the audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditEntry {
    /// Given by the store when it keeps the entry (0 before).
    #[serde(skip)]
    pub seq: u64,
    pub at: Timestamp,
    /// The name of the token that made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    pub action: AuditAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<String>,
    /// What the change was (the settings set, what a purge selected and cancelled…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

impl AuditEntry {
    pub fn new(at: Timestamp, by: Option<&Actor>, action: AuditAction) -> AuditEntry {
        AuditEntry {
            seq: 0,
            at,
            by: by.map(|by| by.as_str().to_owned()),
            action,
            queue: None,
            calendar: None,
            detail: None,
        }
    }

    pub fn on_queue(mut self, queue: &str) -> AuditEntry {
        self.queue = Some(queue.to_owned());
        self
    }

    pub fn on_calendar(mut self, calendar: &str) -> AuditEntry {
        self.calendar = Some(calendar.to_owned());
        self
    }

    pub fn detail(mut self, detail: Value) -> AuditEntry {
        self.detail = Some(detail);
        self
    }

    /// A document (settings, a calendar) as the entry's detail: its JSON when it is
    /// JSON, else its text.
    pub fn document(self, text: &str) -> AuditEntry {
        let detail = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        self.detail(detail)
    }
}

/// One page of the audit, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditRequest {
    /// At most this many entries (≥ 1).
    pub limit: u32,
    /// Only entries older than this sequence number (the previous page's last).
    pub before: Option<u64>,
}

impl AuditRequest {
    pub fn new(limit: u32, before: Option<u64>) -> AuditRequest {
        AuditRequest { limit, before }
    }
}

/// The stored form of `entry`.
pub fn encode(entry: &AuditEntry) -> String {
    serde_json::to_string(entry).expect("an audit entry always serializes")
}

/// An entry from its stored form and its sequence number.
pub fn decode(seq: u64, text: &str) -> Result<AuditEntry> {
    let mut entry: AuditEntry = serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("stored data cannot be read: audit entry {text:?}: {e}")))?;
    entry.seq = seq;
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_as_it_was_written() {
        let entry = AuditEntry::new(
            Timestamp::from_millis(1_765_000_000_000),
            Some(&Actor::new("ops")),
            AuditAction::QueuePause,
        )
        .on_queue("order.cancel")
        .document(r#"{"max_attempts": 3}"#);
        let read = decode(7, &encode(&entry)).unwrap();
        assert_eq!(read, AuditEntry { seq: 7, ..entry });
        let text = AuditEntry::new(Timestamp::EPOCH, None, AuditAction::CalendarSet).document("not json");
        assert_eq!(text.detail, Some(Value::String("not json".into())));
    }
}
