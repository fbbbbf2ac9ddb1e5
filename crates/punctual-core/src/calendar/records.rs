//! Calendar records: what a store keeps of each named calendar, shared by every
//! process on the store, and the one rule for changing them ([`change_calendar`]).
//!
//! A record holds the calendar's document (its [`CalendarSpec`](super::CalendarSpec)
//! as JSON, as the API gave it; the store keeps the text) and a version. Removing a
//! calendar keeps its record without a document, so a version never repeats and a
//! conditional change made against an old version can never match a newer calendar
//! of the same name.

use super::{Calendar, CalendarSpec};
use crate::audit::{AuditAction, AuditEntry};
use crate::error::{Error, Result};
use crate::names::Actor;
use crate::names::CalendarName;
use crate::time::Timestamp;

/// A calendar as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CalendarRecord {
    pub name: CalendarName,
    /// The calendar's document (a [`CalendarSpec`] as JSON); `None` once removed.
    pub spec: Option<String>,
    /// 1 when the record was created, 1 more at every change (a removal too).
    pub version: u64,
    pub updated_at: Timestamp,
}

impl CalendarRecord {
    pub fn new(name: CalendarName, spec: Option<String>, version: u64, updated_at: Timestamp) -> CalendarRecord {
        CalendarRecord { name, spec, version, updated_at }
    }

    /// The calendar its document describes; `None` once removed. A document that is
    /// not a valid calendar (written by a newer build, or damaged) is an error naming
    /// the calendar.
    pub fn calendar(&self) -> Result<Option<Calendar>> {
        let Some(spec) = &self.spec else { return Ok(None) };
        let spec: CalendarSpec = serde_json::from_str(spec)
            .map_err(|e| Error::Internal(format!("calendar {} as stored is not a calendar: {e}", self.name)))?;
        Calendar::new(spec)
            .map(Some)
            .map_err(|e| Error::Internal(format!("calendar {} as stored is not valid: {e}", self.name)))
    }
}

/// A change to a calendar's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalendarChange {
    /// Stores this document, creating the calendar or replacing it.
    Put(String),
    /// Removes the calendar: [`Error::NotFound`] when there is none.
    Remove,
}

/// A store's `change_calendar` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CalendarChangeRequest {
    pub name: CalendarName,
    pub change: CalendarChange,
    /// Apply only if the calendar is at this version (`Some(0)`: only if there is no
    /// calendar, never created or removed); else [`Error::Conflict`] and nothing
    /// changes.
    pub if_version: Option<u64>,
    pub now: Timestamp,
    /// Who changes the calendar, for the audit.
    pub by: Option<Actor>,
}

impl CalendarChangeRequest {
    pub fn new(name: CalendarName, change: CalendarChange, now: Timestamp) -> CalendarChangeRequest {
        CalendarChangeRequest { name, change, if_version: None, now, by: None }
    }

    pub fn by(mut self, by: Option<Actor>) -> CalendarChangeRequest {
        self.by = by;
        self
    }

    /// The audit's entry of this change.
    pub fn audit_entry(&self) -> AuditEntry {
        let name = self.name.as_str();
        match &self.change {
            CalendarChange::Put(document) => AuditEntry::new(self.now, self.by.as_ref(), AuditAction::CalendarSet)
                .on_calendar(name)
                .document(document),
            CalendarChange::Remove => {
                AuditEntry::new(self.now, self.by.as_ref(), AuditAction::CalendarRemove).on_calendar(name)
            }
        }
    }

    /// Makes the change conditional on the calendar's version (0: no calendar).
    pub fn if_version(mut self, version: u64) -> CalendarChangeRequest {
        self.if_version = Some(version);
        self
    }
}

/// The record after `req` applies to `existing`: version + 1 and `updated_at = now`;
/// [`Error::Conflict`] when `if_version` is not the calendar's version (a removed
/// calendar's is 0: it matches no version it had), [`Error::NotFound`] when a removal
/// finds no calendar. Every store applies changes through this.
pub fn change_calendar(existing: Option<&CalendarRecord>, req: &CalendarChangeRequest) -> Result<CalendarRecord> {
    let version = existing.map_or(0, |record| record.version);
    let live = existing.filter(|record| record.spec.is_some()).map_or(0, |record| record.version);
    if let Some(expected) = req.if_version
        && expected != live
    {
        return Err(Error::Conflict(match live {
            0 => format!("calendar {} does not exist, so it is not at version {expected}", req.name),
            _ => format!("calendar {} is at version {live}, not {expected}", req.name),
        }));
    }
    let spec = match &req.change {
        CalendarChange::Put(spec) => Some(spec.clone()),
        CalendarChange::Remove if existing.is_some_and(|record| record.spec.is_some()) => None,
        CalendarChange::Remove => return Err(Error::NotFound(format!("calendar '{}'", req.name))),
    };
    Ok(CalendarRecord::new(req.name.clone(), spec, version + 1, req.now))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"tz":"Europe/Berlin","hours":{"mon":["09:00-17:00"]}}"#;

    fn name() -> CalendarName {
        CalendarName::new("de-office").unwrap()
    }

    fn put(spec: &str) -> CalendarChangeRequest {
        CalendarChangeRequest::new(name(), CalendarChange::Put(spec.to_owned()), Timestamp::from_millis(1_000))
    }

    #[test]
    fn names_follow_the_queue_rules() {
        assert!(CalendarName::new("cn-office.2027:v2").is_ok());
        for bad in ["", "a b", "中", &"x".repeat(129)] {
            assert!(
                matches!(CalendarName::new(bad), Err(Error::Invalid { field, .. }) if field == "calendar"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn versions_rise_through_puts_and_a_removal() {
        let created = change_calendar(None, &put(SPEC)).unwrap();
        assert_eq!((created.version, created.spec.as_deref()), (1, Some(SPEC)));
        let removed = CalendarChangeRequest::new(name(), CalendarChange::Remove, Timestamp::from_millis(2_000));
        let gone = change_calendar(Some(&created), &removed).unwrap();
        assert_eq!((gone.version, gone.spec.clone(), gone.updated_at), (2, None, Timestamp::from_millis(2_000)));
        assert!(matches!(change_calendar(Some(&gone), &removed), Err(Error::NotFound(_))));
        assert!(matches!(change_calendar(None, &removed), Err(Error::NotFound(_))));
        assert_eq!(change_calendar(Some(&gone), &put(SPEC)).unwrap().version, 3);
    }

    #[test]
    fn a_conditional_change_needs_the_version_it_names() {
        assert_eq!(change_calendar(None, &put(SPEC).if_version(0)).unwrap().version, 1);
        assert!(matches!(change_calendar(None, &put(SPEC).if_version(1)), Err(Error::Conflict(_))));
        let created = change_calendar(None, &put(SPEC)).unwrap();
        assert!(matches!(change_calendar(Some(&created), &put(SPEC).if_version(0)), Err(Error::Conflict(_))));
        assert_eq!(change_calendar(Some(&created), &put(SPEC).if_version(1)).unwrap().version, 2);
        let removed = CalendarRecord::new(name(), None, 5, Timestamp::from_millis(0));
        assert!(matches!(change_calendar(Some(&removed), &put(SPEC).if_version(5)), Err(Error::Conflict(_))));
        assert_eq!(change_calendar(Some(&removed), &put(SPEC).if_version(0)).unwrap().version, 6);
    }

    #[test]
    fn a_record_reads_as_its_calendar() {
        let record = change_calendar(None, &put(SPEC)).unwrap();
        assert_eq!(record.calendar().unwrap().unwrap().tz(), "Europe/Berlin");
        let damaged = CalendarRecord::new(name(), Some("{".to_owned()), 1, Timestamp::from_millis(0));
        assert!(matches!(damaged.calendar(), Err(Error::Internal(_))));
        let removed = CalendarRecord::new(name(), None, 2, Timestamp::from_millis(0));
        assert_eq!(removed.calendar().unwrap(), None);
    }
}
