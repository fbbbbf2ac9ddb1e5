//! Queue records ([`QueueRecord`]: a queue's settings document and pause state, shared
//! by every process on the store): one Hash for the whole store, `<p>:queue-records`,
//! a field per queue (see `keys`).
//!
//! One Hash rather than a key per queue because every process reads every record about
//! once a second ([`Store::queue_records`](punctual_core::Store::queue_records)): one
//! `HGETALL` is one call to one node however many queues there are, where a key per
//! queue would need a list of them or a `SCAN`, and on a Cluster calls to every node.
//! Records are few (one per queue given settings or paused) and rarely changed, so the
//! Hash stays small and one node serves it easily.
//!
//! A record is `<version>,<updated_at ms>,<P paused | R running>` in decimal, then, when
//! the queue has a settings document, `|` and the document as given (so `|` with
//! nothing after is an empty document, not none): `3,1767225600000,P|{"rate":"20/1m"}`.
//! Readable with `redis-cli HGETALL`, and a few bytes more than the document.
//!
//! A change is atomic across processes by compare-and-set (`versioned`), decided by
//! [`transitions::change_queue`], so versions and `if_version` follow the core's one rule.

use std::collections::BTreeMap;

use punctual_core::store::{QueueChangeRequest, QueueRecord, corrupt};
use punctual_core::{QueueName, Result, Timestamp, transitions};

use crate::versioned::Versioned;
use crate::{Shared, keys};

impl Shared {
    pub(crate) async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        let key = keys::queue_records(&self.config.prefix);
        let stored: Option<String> = self.conn.query(redis::cmd("HGET").arg(&key).arg(queue.as_str())).await?;
        stored.map(|record| decode(queue.clone(), &record)).transpose()
    }

    /// Sorted by name: `QueueName` orders as its text does, bytewise.
    pub(crate) async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        let key = keys::queue_records(&self.config.prefix);
        let all: BTreeMap<String, String> = self.conn.query(redis::cmd("HGETALL").arg(&key)).await?;
        all.into_iter().map(|(name, record)| decode(QueueName::new(name).map_err(corrupt)?, &record)).collect()
    }

    pub(crate) async fn change_queue(&self, req: &QueueChangeRequest) -> Result<QueueRecord> {
        let hash = keys::queue_records(&self.config.prefix);
        let what = format!("queue {}", req.queue);
        let decode = |stored: &str| decode(req.queue.clone(), stored);
        let decide = |existing: Option<&QueueRecord>| transitions::change_queue(existing, req);
        self.change_versioned(&hash, req.queue.as_str(), &req.audit_entry(), what, decode, decide).await
    }
}

impl Versioned for QueueRecord {
    fn version(&self) -> u64 {
        self.version
    }
    fn encode(&self) -> String {
        encode(self)
    }
}

/// The record as stored (see the module doc).
fn encode(record: &QueueRecord) -> String {
    let paused = if record.paused { 'P' } else { 'R' };
    let head = format!("{},{},{paused}", record.version, record.updated_at.as_millis());
    match &record.settings {
        Some(settings) => format!("{head}|{settings}"),
        None => head,
    }
}

fn decode(queue: QueueName, stored: &str) -> Result<QueueRecord> {
    let bad = || corrupt(format!("queue record of {queue}: '{stored}'"));
    let (head, settings) = match stored.split_once('|') {
        Some((head, settings)) => (head, Some(settings.to_owned())),
        None => (stored, None),
    };
    let mut fields = head.split(',');
    let version: u64 = fields.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let updated_at: i64 = fields.next().and_then(|t| t.parse().ok()).ok_or_else(bad)?;
    let paused = match fields.next() {
        Some("P") => true,
        Some("R") => false,
        _ => return Err(bad()),
    };
    if fields.next().is_some() {
        return Err(bad());
    }
    Ok(QueueRecord::new(queue, settings, paused, version, Timestamp::from_millis(updated_at)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_core::Error;

    fn record(settings: Option<&str>, paused: bool, version: u64) -> QueueRecord {
        let queue = QueueName::new("order.cancel").unwrap();
        QueueRecord::new(queue, settings.map(str::to_owned), paused, version, Timestamp::from_millis(1_767_225_600_000))
    }

    #[test]
    fn records_read_back_as_written() {
        for written in [
            record(None, true, 1),
            record(Some(r#"{"rate":"20/1m","note":"a|b,c"}"#), false, 42),
            record(Some(""), true, u64::MAX),
        ] {
            let stored = encode(&written);
            assert_eq!(decode(written.queue.clone(), &stored).unwrap(), written, "{stored}");
        }
        assert_eq!(encode(&record(Some("{}"), true, 3)), "3,1767225600000,P|{}");
        assert_eq!(encode(&record(None, false, 1)), "1,1767225600000,R");
    }

    #[test]
    fn a_record_not_in_the_format_is_corrupt() {
        let queue = QueueName::new("q").unwrap();
        for stored in ["", "1,2", "1,2,X", "x,2,P", "1,2,P,4", "1,2,p|{}"] {
            assert!(matches!(decode(queue.clone(), stored), Err(Error::Internal(_))), "{stored:?}");
        }
    }
}
