//! Queue records ([`QueueRecord`]): the store keeps each queue's settings and pause
//! state for every process sharing it, and the engine follows them.
//!
//! - The records are read before this engine hands out its first lease — so a queue
//!   paused before a restart hands out nothing after it — then every [`RECORDS_POLL`]
//!   on the engine's timer. Each read applies every record's pause to this process's
//!   consumers and, when they changed, publishes the records to
//!   [`Engine::watch_queue_records`] (the server starts, stops and tunes push workers
//!   from them).
//! - This engine's own changes ([`Engine::change_queue`]) apply here at once; other
//!   processes apply them at their next read, within `RECORDS_POLL`.
//! - A failed read keeps the records last read: a store that is down resumes nothing.
//! - Reads and this engine's changes take turns (`Records::turn`), so a read that
//!   began before a change can never land after it and undo it here.
//!
//! What a record's settings document means is the server's business; the engine reads
//! only the pause state. Task defaults set at run time ([`Engine::set_queue_defaults`])
//! come from that document, through the server.

use crate::audit::{AuditAction, AuditEntry, AuditRequest};
use crate::history::acting;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::{Engine, QueueDefaults};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::QueueName;
use crate::store::{PurgeRequest, PurgeSelection, QueueChange, QueueChangeRequest, QueueRecord, Store};

/// How often the engine reads the store's queue records.
pub const RECORDS_POLL: Duration = Duration::from_millis(500);
/// Tasks cancelled per store call of a purge.
const PURGE_BATCH: u32 = 1_000;

/// The records as last read, sorted by queue name.
#[derive(Debug)]
pub(super) struct Records {
    latest: watch::Sender<Arc<Vec<QueueRecord>>>,
    /// Whether a read has succeeded yet.
    loaded: AtomicBool,
    /// Held by each read and each change of this engine, from the store call to
    /// applying what it returned.
    turn: tokio::sync::Mutex<()>,
}

impl Default for Records {
    fn default() -> Records {
        Records {
            latest: watch::channel(Arc::new(Vec::new())).0,
            loaded: AtomicBool::new(false),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

impl<S: Store> Engine<S> {
    /// The store's queue records, updated at every read (see the module docs).
    pub fn watch_queue_records(&self) -> watch::Receiver<Arc<Vec<QueueRecord>>> {
        self.inner.records.latest.subscribe()
    }

    /// The queue's record as stored now, or `None`.
    pub async fn queue_record(&self, queue: &str) -> Result<Option<QueueRecord>> {
        let queue = QueueName::new(queue)?;
        self.inner.store.queue_record(&queue).await
    }

    /// Changes the queue's record (only if it is at `if_version`, 0 meaning none yet)
    /// and applies it in this process at once; the record as it is after.
    pub async fn change_queue(&self, queue: &str, change: QueueChange, if_version: Option<u64>) -> Result<QueueRecord> {
        self.check_running()?;
        let queue = QueueName::new(queue)?;
        let mut request = QueueChangeRequest::new(queue, change, self.now()).by(acting());
        if let Some(version) = if_version {
            request = request.if_version(version);
        }
        let _turn = self.inner.records.turn.lock().await;
        let record = self.inner.store.change_queue(request).await?;
        self.apply_changed(&record);
        Ok(record)
    }

    /// Cancels every task of the queue in `selection`, in batches (leased ones for
    /// good: their acks are then refused); how many.
    /// The purge is told in the audit once done (what it selected and how many it
    /// cancelled), and so is one whose later batch failed after others cancelled tasks
    /// (it then answers that error). An entry the store cannot write is logged, and the
    /// purge still answers what it cancelled: the tasks are gone, and an error would
    /// tell the caller to purge again.
    pub async fn purge(&self, queue: &str, selection: PurgeSelection) -> Result<u64> {
        self.check_running()?;
        let queue = QueueName::new(queue)?;
        let by = acting();
        let mut total = 0;
        let purged = loop {
            match self.inner.store.purge(PurgeRequest::new(queue.clone(), selection, PURGE_BATCH).by(by.clone())).await
            {
                Ok(0) => break Ok(total),
                Ok(cancelled) => total += cancelled,
                Err(e) => break Err(e),
            }
        };
        if total > 0 {
            self.publish(Event::Cancelled { queue: queue.clone(), key: None, count: total });
        }
        if purged.is_ok() || total > 0 {
            let selected = match selection {
                PurgeSelection::Scheduled => "scheduled",
                PurgeSelection::Dead => "dead",
                PurgeSelection::All => "all",
            };
            let entry = AuditEntry::new(self.now(), by.as_ref(), AuditAction::QueuePurge)
                .on_queue(queue.as_str())
                .detail(serde_json::json!({"state": selected, "cancelled": total}));
            if let Err(e) = self.inner.store.append_audit(entry).await {
                tracing::warn!(queue = %queue, cancelled = total, error = %e, "purged, but its audit entry cannot be written");
            }
        }
        purged
    }

    /// Keeps `entry` in the audit (for a change the store does not see, such as a
    /// reload of the server's access rules).
    pub async fn record_audit(&self, entry: AuditEntry) -> Result<()> {
        self.inner.store.append_audit(entry).await
    }

    /// One page of the audit, newest first: at most `limit` entries (1 to
    /// [`MAX_LIST_LIMIT`](crate::MAX_LIST_LIMIT)) older than the entry `before`, and
    /// whether an older one exists (the store is asked for one more).
    pub async fn audit(&self, limit: u32, before: Option<u64>) -> Result<(Vec<AuditEntry>, bool)> {
        if !(1..=crate::MAX_LIST_LIMIT).contains(&limit) {
            return Err(Error::invalid("limit", format!("{limit} is outside 1 to {}", crate::MAX_LIST_LIMIT)));
        }
        let mut entries = self.inner.store.audit(AuditRequest::new(limit + 1, before)).await?;
        let more = entries.len() > limit as usize;
        entries.truncate(limit as usize);
        Ok((entries, more))
    }

    /// Sets (or, with `None`, removes) the task defaults of the queue set at run time,
    /// which win over the config's.
    pub fn set_queue_defaults(&self, queue: &QueueName, defaults: Option<QueueDefaults>) {
        let mut all = self.inner.run_time_defaults.write().expect("defaults lock poisoned");
        match defaults {
            Some(defaults) => all.insert(queue.clone(), defaults),
            None => all.remove(queue),
        };
    }

    /// Reads the records once if no read has succeeded yet (before a first lease).
    pub(super) async fn records_loaded(&self) -> Result<()> {
        if self.inner.records.loaded.load(Ordering::Acquire) {
            return Ok(());
        }
        self.read_records(Reading::UnlessRead).await
    }

    /// Reads the records (and the calendars) every [`RECORDS_POLL`] until the engine
    /// stops.
    pub(super) async fn follow_queue_records(self) {
        loop {
            if let Err(e) = self.read_records(Reading::Always).await {
                tracing::debug!(error = %e, "cannot read the queue records; keeping the last ones");
            }
            if let Err(e) = self.read_calendars().await {
                tracing::debug!(error = %e, "cannot read the calendars; keeping the last ones");
            }
            let next = self.now().saturating_add(RECORDS_POLL);
            tokio::select! {
                _ = self.inner.timer.sleep_until(next) => {}
                _ = self.inner.stopping.cancelled() => return,
            }
        }
    }

    async fn read_records(&self, reading: Reading) -> Result<()> {
        let _turn = self.inner.records.turn.lock().await;
        if reading == Reading::UnlessRead && self.inner.records.loaded.load(Ordering::Acquire) {
            return Ok(());
        }
        let records = self.inner.store.queue_records().await?;
        for record in &records {
            self.set_paused(&record.queue, record.paused);
        }
        // Watchers (the server's push workers) wake only for a change.
        self.inner.records.latest.send_if_modified(|latest| {
            let changed = latest.as_slice() != records.as_slice();
            if changed {
                *latest = Arc::new(records);
            }
            changed
        });
        self.inner.records.loaded.store(true, Ordering::Release);
        Ok(())
    }

    /// Applies a record this engine just wrote, before the next read sees it.
    fn apply_changed(&self, record: &QueueRecord) {
        self.set_paused(&record.queue, record.paused);
        self.inner.records.latest.send_modify(|records| {
            let mut updated = records.as_ref().clone();
            match updated.binary_search_by(|r| r.queue.as_str().cmp(record.queue.as_str())) {
                Ok(at) => updated[at] = record.clone(),
                Err(at) => updated.insert(at, record.clone()),
            }
            *records = Arc::new(updated);
        });
    }
}

/// Whether a read of the records is needed if another read succeeded meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Always,
    /// Before a first lease: any successful read will do.
    UnlessRead,
}
