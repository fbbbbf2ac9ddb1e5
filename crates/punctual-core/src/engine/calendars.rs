//! Calendars ([`CalendarRecord`]): the store keeps them for every process sharing it,
//! and the engine follows them as it follows the queue records.
//!
//! - They are read with the queue records, every [`RECORDS_POLL`](super::RECORDS_POLL),
//!   and published to [`Engine::watch_calendars`] when they changed: each live
//!   calendar with its checked [`Calendar`], ready for the arithmetic of business
//!   time. A removed calendar is not in the set.
//! - This engine's own changes ([`Engine::change_calendar`]) apply here at once; other
//!   processes apply them at their next read, within `RECORDS_POLL`.
//! - A failed read keeps the calendars last read. A stored document that is not a valid
//!   calendar (written by a newer build) is left out of the set, with a warning.
//! - Reads and this engine's changes take turns, so a read that began before a change
//!   can never land after it and undo it here.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::Engine;
use crate::calendar::{Calendar, CalendarChange, CalendarChangeRequest, CalendarName, CalendarRecord, CalendarSpec};
use crate::error::{Error, Result};
use crate::store::Store;

/// A live calendar: its record and the calendar its document describes.
#[derive(Debug, Clone)]
pub struct CalendarEntry {
    pub record: CalendarRecord,
    pub calendar: Arc<Calendar>,
}

/// The live calendars as last read, by name.
#[derive(Debug, Clone, Default)]
pub struct CalendarSet {
    entries: BTreeMap<CalendarName, CalendarEntry>,
}

impl CalendarSet {
    /// The set of the live calendars among `records`, leaving out (with a warning)
    /// those whose document is not a valid calendar.
    fn of(records: Vec<CalendarRecord>) -> CalendarSet {
        let mut entries = BTreeMap::new();
        for record in records {
            match record.calendar() {
                Ok(Some(calendar)) => {
                    entries.insert(record.name.clone(), CalendarEntry { record, calendar: Arc::new(calendar) });
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(calendar = %record.name, error = %e, "leaving out a stored calendar"),
            }
        }
        CalendarSet { entries }
    }

    /// The live calendar of this name.
    pub fn get(&self, name: &str) -> Option<&CalendarEntry> {
        self.entries.get(name)
    }

    /// Every live calendar, by name.
    pub fn iter(&self) -> impl Iterator<Item = &CalendarEntry> {
        self.entries.values()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The versions by name, to tell whether a read changed anything.
    fn versions(&self) -> impl Iterator<Item = (&CalendarName, u64)> {
        self.entries.iter().map(|(name, entry)| (name, entry.record.version))
    }

    /// This set with `record` applied (added, replaced, or removed).
    fn with(&self, record: &CalendarRecord) -> CalendarSet {
        let mut updated = self.clone();
        updated.entries.remove(&record.name);
        if let Ok(Some(calendar)) = record.calendar() {
            let entry = CalendarEntry { record: record.clone(), calendar: Arc::new(calendar) };
            updated.entries.insert(record.name.clone(), entry);
        }
        updated
    }
}

/// The calendars as last read.
#[derive(Debug)]
pub(super) struct Calendars {
    latest: watch::Sender<Arc<CalendarSet>>,
    /// Held by each read and each change of this engine, from the store call to
    /// applying what it returned.
    turn: tokio::sync::Mutex<()>,
}

impl Default for Calendars {
    fn default() -> Calendars {
        Calendars { latest: watch::channel(Arc::new(CalendarSet::default())).0, turn: tokio::sync::Mutex::new(()) }
    }
}

impl<S: Store> Engine<S> {
    /// The live calendars, updated at every read that changes them (see the module doc).
    pub fn watch_calendars(&self) -> watch::Receiver<Arc<CalendarSet>> {
        self.inner.calendars.latest.subscribe()
    }

    /// The live calendars as last read.
    pub fn calendars(&self) -> Arc<CalendarSet> {
        Arc::clone(&self.inner.calendars.latest.borrow())
    }

    /// Creates, replaces or removes a calendar (only if it is at `if_version`, 0
    /// meaning none) and applies it in this process at once; the record as it is
    /// after. A document that is not a valid calendar is [`Error::Invalid`] naming
    /// the field, and nothing is stored.
    pub async fn change_calendar(
        &self,
        name: &str,
        change: CalendarChange,
        if_version: Option<u64>,
    ) -> Result<CalendarRecord> {
        self.check_running()?;
        let name = CalendarName::new(name)?;
        if let CalendarChange::Put(document) = &change {
            let spec: CalendarSpec = serde_json::from_str(document)
                .map_err(|e| Error::invalid("calendar", format!("not a calendar document: {e}")))?;
            Calendar::new(spec)?;
        }
        let mut request = CalendarChangeRequest::new(name, change, self.now());
        if let Some(version) = if_version {
            request = request.if_version(version);
        }
        let _turn = self.inner.calendars.turn.lock().await;
        let record = self.inner.store.change_calendar(request).await?;
        self.inner.calendars.latest.send_modify(|set| *set = Arc::new(set.with(&record)));
        Ok(record)
    }

    /// Reads the calendars and publishes them if they changed.
    pub(super) async fn read_calendars(&self) -> Result<()> {
        let _turn = self.inner.calendars.turn.lock().await;
        let set = CalendarSet::of(self.inner.store.calendar_records().await?);
        self.inner.calendars.latest.send_if_modified(|latest| {
            let changed = !latest.versions().eq(set.versions());
            if changed {
                *latest = Arc::new(set);
            }
            changed
        });
        Ok(())
    }
}
