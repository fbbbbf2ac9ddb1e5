//! Calendar records ([`CalendarRecord`]: a calendar's document and version, shared by
//! every process on the store): one Hash for the whole store, `<p>:calendars`, a field
//! per calendar (see `keys`), for the reasons `queue_records` gives for queues: every
//! process reads them all about once a second, and they are few.
//!
//! A record is `<version>,<updated_at ms>` in decimal, then, while the calendar has a
//! document, `|` and the document as given: `2,1767225600000|{"tz":"Asia/Shanghai",…}`.
//! A removed calendar keeps `<version>,<updated_at ms>`, so versions never repeat.
//!
//! A change is atomic across processes by compare-and-set, as a queue record's is:
//! read the record, decide the next one with [`change_calendar`], and write it with
//! `lua/change_record.lua` only if the stored version is still the one read; a process
//! that lost the race reads again.

use std::collections::BTreeMap;

use punctual_core::calendar::{CalendarChangeRequest, CalendarName, CalendarRecord, change_calendar};
use punctual_core::store::corrupt;
use punctual_core::{Error, Result, Timestamp};

use crate::{Shared, keys};

/// How many times one change reads again after losing a race before it gives up.
const MAX_RACES: usize = 32;

impl Shared {
    /// Sorted by name: `CalendarName` orders as its text does, bytewise.
    pub(crate) async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        let key = keys::calendar_records(&self.config.prefix);
        let all: BTreeMap<String, String> = self.conn.query(redis::cmd("HGETALL").arg(&key)).await?;
        all.into_iter().map(|(name, record)| decode(CalendarName::new(name).map_err(corrupt)?, &record)).collect()
    }

    pub(crate) async fn change_calendar(&self, req: &CalendarChangeRequest) -> Result<CalendarRecord> {
        let hash = keys::calendar_records(&self.config.prefix);
        for _ in 0..MAX_RACES {
            let stored: Option<String> = self.conn.query(redis::cmd("HGET").arg(&hash).arg(req.name.as_str())).await?;
            let existing = stored.map(|record| decode(req.name.clone(), &record)).transpose()?;
            let read = existing.as_ref().map_or(0, |record| record.version);
            let changed = change_calendar(existing.as_ref(), req)?;
            if self.write_record(&hash, req.name.as_str(), read, &encode(&changed)).await? {
                self.replicate_key(&hash).await?;
                return Ok(changed);
            }
        }
        Err(Error::Unavailable(format!(
            "calendar {} changed {MAX_RACES} times while this change was being applied; try again",
            req.name
        )))
    }
}

/// The record as stored (see the module doc).
fn encode(record: &CalendarRecord) -> String {
    let head = format!("{},{}", record.version, record.updated_at.as_millis());
    match &record.spec {
        Some(spec) => format!("{head}|{spec}"),
        None => head,
    }
}

fn decode(name: CalendarName, stored: &str) -> Result<CalendarRecord> {
    let bad = || corrupt(format!("calendar record of {name}: '{stored}'"));
    let (head, spec) = match stored.split_once('|') {
        Some((head, spec)) => (head, Some(spec.to_owned())),
        None => (stored, None),
    };
    let (version, updated_at) = head.split_once(',').ok_or_else(bad)?;
    let version: u64 = version.parse().map_err(|_| bad())?;
    let updated_at: i64 = updated_at.parse().map_err(|_| bad())?;
    Ok(CalendarRecord::new(name, spec, version, Timestamp::from_millis(updated_at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(spec: Option<&str>, version: u64) -> CalendarRecord {
        let name = CalendarName::new("cn-office").unwrap();
        CalendarRecord::new(name, spec.map(str::to_owned), version, Timestamp::from_millis(1_767_225_600_000))
    }

    #[test]
    fn records_read_back_as_written() {
        for written in [record(None, 2), record(Some(r#"{"tz":"UTC","note":"a|b,c"}"#), 42), record(Some(""), u64::MAX)]
        {
            let stored = encode(&written);
            assert_eq!(decode(written.name.clone(), &stored).unwrap(), written, "{stored}");
        }
        assert_eq!(encode(&record(Some("{}"), 3)), "3,1767225600000|{}");
        assert_eq!(encode(&record(None, 1)), "1,1767225600000");
    }

    #[test]
    fn a_record_not_in_the_format_is_corrupt() {
        let name = CalendarName::new("office").unwrap();
        for stored in ["", "1", "1,x", "x,2", "1,2,3", "-1,2|{}"] {
            assert!(matches!(decode(name.clone(), stored), Err(Error::Internal(_))), "{stored:?}");
        }
    }
}
