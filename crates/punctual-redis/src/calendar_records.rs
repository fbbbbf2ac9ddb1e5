//! Calendar records ([`CalendarRecord`]: a calendar's document and version, shared by
//! every process on the store): one Hash for the whole store, `<p>:calendars`, a field
//! per calendar (see `keys`), for the reasons `queue_records` gives for queues: every
//! process reads them all about once a second, and they are few.
//!
//! A record is `<version>,<updated_at ms>` in decimal, then, while the calendar has a
//! document, `|` and the document as given: `2,1767225600000|{"tz":"Asia/Shanghai",…}`.
//! A removed calendar keeps `<version>,<updated_at ms>`, so versions never repeat.
//!
//! A change is atomic across processes by compare-and-set, as a queue record's is
//! (`versioned`), decided by [`change_calendar`].

use std::collections::BTreeMap;

use punctual_core::calendar::{CalendarChangeRequest, CalendarName, CalendarRecord, change_calendar};
use punctual_core::store::corrupt;
use punctual_core::{Result, Timestamp};

use crate::versioned::Versioned;
use crate::{Shared, keys};

impl Shared {
    /// Sorted by name: `CalendarName` orders as its text does, bytewise.
    pub(crate) async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        let key = keys::calendar_records(&self.config.prefix);
        let all: BTreeMap<String, String> = self.conn.query(redis::cmd("HGETALL").arg(&key)).await?;
        all.into_iter().map(|(name, record)| decode(CalendarName::new(name).map_err(corrupt)?, &record)).collect()
    }

    pub(crate) async fn change_calendar(&self, req: &CalendarChangeRequest) -> Result<CalendarRecord> {
        let hash = keys::calendar_records(&self.config.prefix);
        let what = format!("calendar {}", req.name);
        let decode = |stored: &str| decode(req.name.clone(), stored);
        let decide = |existing: Option<&CalendarRecord>| change_calendar(existing, req);
        self.change_versioned(&hash, req.name.as_str(), &req.audit_entry(), what, decode, decide).await
    }
}

impl Versioned for CalendarRecord {
    fn version(&self) -> u64 {
        self.version
    }
    fn encode(&self) -> String {
        encode(self)
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
    use punctual_core::Error;

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
