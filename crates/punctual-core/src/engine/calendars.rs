//! Calendars ([`CalendarRecord`]): the store keeps them for every process sharing it,
//! and the engine follows them as it follows the queue records.
//!
//! - They are read with the queue records, every [`RECORDS_POLL`](super::RECORDS_POLL),
//!   and published to [`Engine::watch_calendars`] when they changed: each live
//!   calendar with its checked [`Calendar`], ready for the arithmetic of business
//!   time. A removed calendar is not in the set.
//! - The calendars of the config file ([`EngineConfig::calendars`](super::EngineConfig))
//!   are in the set from the start, and win over a stored one of the same name
//!   (left out, with a warning); [`Engine::change_calendar`] refuses their names.
//!   [`Engine::set_config_calendars`] replaces them (a server's config file read
//!   again) in the set at once; a stored calendar one of them no longer shadows is
//!   served again from the next read, within `RECORDS_POLL`. Stored calendars are
//!   never written or removed for the config's.
//! - This engine's own changes ([`Engine::change_calendar`]) apply here at once; other
//!   processes apply them at their next read, within `RECORDS_POLL`.
//! - A failed read keeps the calendars last read. A stored document that is not a valid
//!   calendar (written by a newer build) is left out of the set, with a warning once
//!   per version. A read parses only the calendars whose version it has not seen.
//! - Reads and this engine's changes take turns, so a read that began before a change
//!   can never land after it and undo it here.
//! - Nothing counts in a calendar before a first read succeeded: a schedule, a lease
//!   and an ack each read the calendars first if none has ([`Engine::calendars_loaded`]),
//!   so a process just started never refuses a stored calendar as missing, counts a
//!   missed occurrence without it, or sends a repeat in it to `dead`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

use super::Engine;
use crate::calendar::{Calendar, CalendarChange, CalendarChangeRequest, CalendarName, CalendarRecord, CalendarSpec};
use crate::error::{Error, Result};
use crate::store::Store;

/// A live calendar: its record and the calendar its document describes.
#[derive(Debug, Clone)]
pub struct CalendarEntry {
    /// The stored record; `None` for a calendar of the config file.
    pub record: Option<CalendarRecord>,
    pub calendar: Arc<Calendar>,
}

/// The live calendars as last read, by name.
#[derive(Debug, Clone, Default)]
pub struct CalendarSet {
    entries: BTreeMap<CalendarName, CalendarEntry>,
    /// The stored calendars left out, at the version left out (not read nor warned of
    /// again until it changes).
    left_out: BTreeMap<CalendarName, u64>,
}

impl CalendarSet {
    /// The config file's calendars.
    fn of_config(config: &BTreeMap<CalendarName, Arc<Calendar>>) -> CalendarSet {
        let entries = config
            .iter()
            .map(|(name, calendar)| (name.clone(), CalendarEntry { record: None, calendar: Arc::clone(calendar) }));
        CalendarSet { entries: entries.collect(), left_out: BTreeMap::new() }
    }

    /// This set's config calendars with the live calendars among `records`, leaving
    /// out (with a warning, once per version) those whose document is not a valid
    /// calendar and those named as a config calendar. A calendar at the version this
    /// set holds is kept as it is, not read again.
    fn with_records(&self, records: Vec<CalendarRecord>) -> CalendarSet {
        let mut updated = CalendarSet {
            entries: self
                .entries
                .iter()
                .filter(|(_, entry)| entry.record.is_none())
                .map(|(n, e)| (n.clone(), e.clone()))
                .collect(),
            left_out: BTreeMap::new(),
        };
        for record in records {
            if record.spec.is_none() {
                continue;
            }
            if self.left_out.get(&record.name) == Some(&record.version) {
                updated.left_out.insert(record.name, record.version);
                continue;
            }
            let held = self.entries.get(&record.name).filter(|entry| entry.record.as_ref() == Some(&record));
            if let Some(entry) = held {
                updated.entries.insert(record.name, entry.clone());
                continue;
            }
            if updated.is_config(record.name.as_str()) {
                tracing::warn!(calendar = %record.name, "a stored calendar has a config calendar's name: serving the config's");
                updated.left_out.insert(record.name, record.version);
                continue;
            }
            match record.calendar() {
                Ok(Some(calendar)) => {
                    let entry = CalendarEntry { record: Some(record.clone()), calendar: Arc::new(calendar) };
                    updated.entries.insert(record.name, entry);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(calendar = %record.name, error = %e, "leaving out a stored calendar");
                    updated.left_out.insert(record.name, record.version);
                }
            }
        }
        updated
    }

    /// This set with `config` as the config file's calendars in place of those it
    /// held: a stored calendar named as one of them is left out (with a warning, as a
    /// read leaves it out), and a stored one left out for a config calendar that is
    /// gone is read again at the next read.
    fn with_config(&self, config: &BTreeMap<CalendarName, Arc<Calendar>>) -> CalendarSet {
        let mut updated = CalendarSet::of_config(config);
        updated.left_out = self.left_out.clone();
        updated.left_out.retain(|name, _| !self.is_config(name.as_str()) || config.contains_key(name));
        for (name, entry) in &self.entries {
            let Some(record) = &entry.record else { continue };
            if config.contains_key(name) {
                tracing::warn!(calendar = %name, "a stored calendar has a config calendar's name: serving the config's");
                updated.left_out.insert(name.clone(), record.version);
            } else {
                updated.entries.insert(name.clone(), entry.clone());
            }
        }
        updated
    }

    /// Whether `name` is a calendar of the config file.
    fn is_config(&self, name: &str) -> bool {
        self.entries.get(name).is_some_and(|entry| entry.record.is_none())
    }

    /// The live calendar of this name.
    pub fn get(&self, name: &str) -> Option<&CalendarEntry> {
        self.entries.get(name)
    }

    /// Every live calendar, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&CalendarName, &CalendarEntry)> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The versions by name (0 for the config's), to tell whether a read changed
    /// anything.
    fn versions(&self) -> impl Iterator<Item = (&CalendarName, u64)> {
        self.entries.iter().map(|(name, entry)| (name, entry.record.as_ref().map_or(0, |record| record.version)))
    }

    /// This set with `record` applied: `calendar`, the calendar its document describes,
    /// added or replacing the one of its name, or with `None` that one removed.
    fn with(&self, record: &CalendarRecord, calendar: Option<Calendar>) -> CalendarSet {
        let mut updated = self.clone();
        updated.entries.remove(&record.name);
        updated.left_out.remove(&record.name);
        if let Some(calendar) = calendar {
            let entry = CalendarEntry { record: Some(record.clone()), calendar: Arc::new(calendar) };
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
    /// Whether a read of the store's calendars has succeeded yet.
    read: AtomicBool,
}

impl Calendars {
    /// The config file's calendars, before any read.
    pub(super) fn new(config: &BTreeMap<CalendarName, Arc<Calendar>>) -> Calendars {
        let set = CalendarSet::of_config(config);
        Calendars {
            latest: watch::channel(Arc::new(set)).0,
            turn: tokio::sync::Mutex::new(()),
            read: AtomicBool::new(false),
        }
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
        if self.calendars().is_config(name.as_str()) {
            return Err(Error::Conflict(format!("calendar '{name}' is in the server's config file: change it there")));
        }
        let calendar = match &change {
            CalendarChange::Put(document) => {
                let spec: CalendarSpec = serde_json::from_str(document)
                    .map_err(|e| Error::invalid("calendar", format!("not a calendar document: {e}")))?;
                Some(Calendar::new(spec)?)
            }
            CalendarChange::Remove => None,
        };
        let mut request = CalendarChangeRequest::new(name, change, self.now()).by(crate::history::acting());
        if let Some(version) = if_version {
            request = request.if_version(version);
        }
        let _turn = self.inner.calendars.turn.lock().await;
        let record = self.inner.store.change_calendar(request).await?;
        self.inner.calendars.latest.send_modify(|set| *set = Arc::new(set.with(&record, calendar)));
        Ok(record)
    }

    /// Replaces the config file's calendars ([`EngineConfig::calendars`](super::EngineConfig))
    /// with `config`, as a server does when it reads its config file again: served
    /// here at once, winning over stored ones of their names as at the start (see the
    /// module doc). Stored calendars are not touched.
    pub async fn set_config_calendars(&self, config: BTreeMap<CalendarName, Arc<Calendar>>) {
        let _turn = self.inner.calendars.turn.lock().await;
        self.inner.calendars.latest.send_modify(|set| *set = Arc::new(set.with_config(&config)));
    }

    /// Reads the calendars once if no read has succeeded yet; before anything that
    /// counts in them (see the module doc). The store's error when that read fails.
    pub(super) async fn calendars_loaded(&self) -> Result<()> {
        if self.inner.calendars.read.load(Ordering::Acquire) {
            return Ok(());
        }
        self.read_calendars().await
    }

    /// Reads the calendars and publishes them if they changed.
    pub(super) async fn read_calendars(&self) -> Result<()> {
        let _turn = self.inner.calendars.turn.lock().await;
        let records = self.inner.store.calendar_records().await?;
        let set = self.calendars().with_records(records);
        self.inner.calendars.latest.send_if_modified(|latest| {
            let changed = !latest.versions().eq(set.versions());
            if changed {
                *latest = Arc::new(set);
            }
            changed
        });
        self.inner.calendars.read.store(true, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn record(name: &str, spec: &str, version: u64) -> CalendarRecord {
        CalendarRecord::new(CalendarName::new(name).unwrap(), Some(spec.to_owned()), version, Timestamp::from_millis(0))
    }

    #[test]
    fn a_read_keeps_the_calendars_it_holds_and_leaves_out_a_bad_one_until_it_changes() {
        let good = r#"{"tz":"UTC","hours":{"mon":["09:00-17:00"]}}"#;
        let first = CalendarSet::default().with_records(vec![record("bad", "{", 1), record("office", good, 1)]);
        assert_eq!((first.len(), first.left_out.get("bad")), (1, Some(&1)));
        let again = first.with_records(vec![record("bad", "{", 1), record("office", good, 1)]);
        let (before, after) = (first.get("office").unwrap(), again.get("office").unwrap());
        assert!(Arc::ptr_eq(&before.calendar, &after.calendar), "an unchanged calendar is not read again");
        assert_eq!(again.left_out.get("bad"), Some(&1));
        let mended = again.with_records(vec![record("bad", good, 2), record("office", good, 2)]);
        assert_eq!((mended.len(), mended.left_out.len()), (2, 0));
        assert!(!Arc::ptr_eq(&after.calendar, &mended.get("office").unwrap().calendar), "a new version is read");
    }

    /// A config file read again: its calendars replace the config's, a stored one of
    /// the same name stays stored but is not served, and comes back once the file no
    /// longer names it.
    #[test]
    fn new_config_calendars_replace_the_old_and_shadow_stored_ones_only_while_named() {
        let calendar = |tz: &str| {
            let spec: CalendarSpec =
                serde_json::from_str(&format!(r#"{{"tz":"{tz}","hours":{{"mon":["09:00-17:00"]}}}}"#)).unwrap();
            Arc::new(Calendar::new(spec).unwrap())
        };
        let name = |n: &str| CalendarName::new(n).unwrap();
        let document = r#"{"tz":"UTC","hours":{"mon":["09:00-17:00"]}}"#;
        let stored = vec![record("office", document, 4), record("shop", document, 1)];
        let start = CalendarSet::of_config(&BTreeMap::from([(name("old"), calendar("Europe/Paris"))]));
        let read = start.with_records(stored.clone());
        assert_eq!(read.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["office", "old", "shop"]);

        let reloaded = read.with_config(&BTreeMap::from([(name("office"), calendar("Asia/Shanghai"))]));
        let office = reloaded.get("office").unwrap();
        assert!(office.record.is_none() && office.calendar.tz() == "Asia/Shanghai", "the config's wins");
        assert!(reloaded.get("old").is_none(), "a calendar the file dropped is gone");
        assert!(reloaded.get("shop").unwrap().record.is_some(), "other stored calendars stay");
        let read_again = reloaded.with_records(stored.clone());
        assert!(read_again.get("office").unwrap().record.is_none(), "a read keeps serving the config's");

        let dropped = read_again.with_config(&BTreeMap::new());
        assert!(dropped.get("office").is_none());
        let back = dropped.with_records(stored).get("office").and_then(|entry| entry.record.clone());
        assert_eq!(back.map(|record| record.version), Some(4), "the stored calendar is served again");
    }
}
