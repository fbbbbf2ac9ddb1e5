//! The drain: takes a batch of an outbox's rows under a lock that other drains skip
//! (`FOR UPDATE SKIP LOCKED`, so every node drains the same table and none takes a row
//! another holds), applies each through an [`Applier`], and in the same database
//! transaction deletes the rows applied and moves the refused ones to the failed
//! table. Then the next batch at once when the batch was full, else at a notification
//! (PostgreSQL) or the poll.
//!
//! Invariants:
//! - a row is deleted only after its applier answered that it is applied (or was
//!   before); a crash between the two leaves the row, which the next drain applies
//!   again, and the store's mark makes that change nothing (`Store::apply_once`);
//! - rows of one `(queue, key)` apply in id order: a batch leaves a key's rows for
//!   later when a row of the key with a smaller id is not in the batch (another drain
//!   holds it, or it committed after the batch was read), and stops a key at its first
//!   row that could not be applied;
//! - a row that cannot be applied now (the store is unavailable) stays, and the drain
//!   backs off; a refused row never blocks the rows behind it.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::{Dialect, OutboxError, TableName, mysql, postgres};

/// One row of an outbox, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: i64,
    pub queue: String,
    /// The task's key; for `cancel_tag`, the tag.
    pub key: String,
    pub op: String,
    /// The body, JSON text, for `schedule`.
    pub body: Option<String>,
    /// When the row was inserted, in milliseconds since the epoch.
    pub created_at_ms: i64,
}

/// What applying a row came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Applied now.
    Applied,
    /// Applied before (its mark was there): nothing changed.
    Replayed,
    /// Never applicable (an unknown op, a body the API refuses): moved to the failed
    /// table with why.
    Refused(String),
    /// Not now (the store did not answer): left for a later try.
    Unavailable(String),
}

/// Applies rows: punctual's side of the drain.
pub trait Applier: Send + Sync + 'static {
    /// Applies `rows`, of distinct keys, each on its own; an answer per row, in order.
    fn apply(&self, rows: &[Row]) -> impl Future<Output = Vec<Applied>> + Send;
}

/// One outbox to drain.
#[derive(Debug, Clone)]
pub struct DrainConfig {
    pub url: String,
    pub table: TableName,
    /// Rows a batch takes at most.
    pub batch: u32,
    /// How long the drain waits for rows before it looks again (without a
    /// notification).
    pub poll: Duration,
}

impl DrainConfig {
    /// The default poll: PostgreSQL's notifications wake the drain at commit, so its
    /// poll is only the fallback; MySQL has only the poll.
    pub fn default_poll(dialect: Dialect) -> Duration {
        match dialect {
            Dialect::Postgres => Duration::from_secs(1),
            Dialect::MySql => Duration::from_millis(100),
        }
    }

    /// The default batch.
    pub const DEFAULT_BATCH: u32 = 500;
}

/// What one batch did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchReport {
    /// Rows the batch took.
    pub taken: usize,
    pub applied: u64,
    pub replayed: u64,
    pub failed: u64,
    /// Rows left for a later batch (an earlier row of their key elsewhere, or a row of
    /// their key that could not be applied).
    pub left: u64,
    /// Why rows could not be applied, if some could not.
    pub unavailable: Option<String>,
}

/// What the drain of one outbox has done and sees, for metrics and readiness.
#[derive(Debug)]
pub struct DrainStatus {
    inner: Mutex<StatusInner>,
    /// Batches ended (committed, whatever they took), for those who wait on the drain.
    batches: tokio::sync::watch::Sender<u64>,
}

impl Default for DrainStatus {
    fn default() -> DrainStatus {
        DrainStatus { inner: Mutex::default(), batches: tokio::sync::watch::channel(0).0 }
    }
}

#[derive(Debug, Default, Clone)]
struct StatusInner {
    applied: u64,
    replayed: u64,
    failed: u64,
    waiting: Option<u64>,
    oldest_ms: Option<i64>,
    failed_rows: Option<u64>,
    queues: Vec<QueueBacklog>,
    error: Option<String>,
}

/// A copy of a [`DrainStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSnapshot {
    /// Rows applied by this process, replays not counted.
    pub applied: u64,
    /// Rows found applied before, by this process.
    pub replayed: u64,
    /// Rows this process moved to the failed table.
    pub failed: u64,
    /// Rows in the table at the last look (`None`: not looked yet).
    pub waiting: Option<u64>,
    /// When the oldest of them was inserted, ms since the epoch.
    pub oldest_ms: Option<i64>,
    /// Rows in the failed table at the last look.
    pub failed_rows: Option<u64>,
    /// Each queue's rows waiting at the last look.
    pub queues: Vec<QueueBacklog>,
    /// Why the database or the store cannot be drained now, if so.
    pub error: Option<String>,
}

impl DrainStatus {
    pub fn snapshot(&self) -> StatusSnapshot {
        let s = self.inner.lock().expect("status lock poisoned").clone();
        StatusSnapshot {
            applied: s.applied,
            replayed: s.replayed,
            failed: s.failed,
            waiting: s.waiting,
            oldest_ms: s.oldest_ms,
            failed_rows: s.failed_rows,
            queues: s.queues,
            error: s.error,
        }
    }

    fn with(&self, f: impl FnOnce(&mut StatusInner)) {
        f(&mut self.inner.lock().expect("status lock poisoned"));
    }

    /// The count of batches the drain ended, each after its transaction committed:
    /// a receiver's `changed()` resolves at the next one.
    pub fn batches(&self) -> tokio::sync::watch::Receiver<u64> {
        self.batches.subscribe()
    }
}

/// The table's backlog as counted by a status query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlog {
    pub waiting: u64,
    pub oldest_ms: Option<i64>,
    pub failed: u64,
    /// The rows waiting of each queue, by name.
    pub queues: Vec<QueueBacklog>,
}

/// One queue's rows in an outbox table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBacklog {
    pub queue: String,
    pub waiting: u64,
    /// When its oldest row was inserted, ms since the epoch.
    pub oldest_ms: Option<i64>,
}

impl Backlog {
    /// The backlog of these queues' rows, and the failed rows.
    pub fn of(queues: Vec<QueueBacklog>, failed: u64) -> Backlog {
        Backlog {
            waiting: queues.iter().map(|q| q.waiting).sum(),
            oldest_ms: queues.iter().filter_map(|q| q.oldest_ms).min(),
            failed,
            queues,
        }
    }
}

/// How often the drain counts the table's backlog.
const BACKLOG_EVERY: Duration = Duration::from_secs(5);
/// The longest back-off after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Drains `config`'s outbox through `applier` until `stop`, reconnecting with a
/// back-off whenever the database fails, and telling `status` what it does.
pub async fn run<A: Applier>(config: DrainConfig, applier: Arc<A>, status: Arc<DrainStatus>, stop: CancellationToken) {
    let dialect = match Dialect::of_url(&config.url) {
        Ok(dialect) => dialect,
        Err(e) => {
            status.with(|s| s.error = Some(e.to_string()));
            return;
        }
    };
    let mut failures = 0u32;
    while !stop.is_cancelled() {
        let session = match dialect {
            Dialect::Postgres => postgres::session(&config, &*applier, &status, &stop).await,
            Dialect::MySql => mysql::session(&config, &*applier, &status, &stop).await,
        };
        let Err(e) = session else { return };
        failures += 1;
        let why = format!("outbox {}: {e}", config.table);
        if failures == 1 {
            tracing::warn!(table = %config.table, error = %e, "the outbox's database failed; draining again once it answers");
        }
        status.with(|s| s.error = Some(why));
        let pause = backoff(failures);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// 100 ms doubled per failure in a row, up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    Duration::from_millis(100).saturating_mul(1 << failures.min(10)).min(MAX_BACKOFF)
}

/// The loop of one connected session, shared by the dialects: `batch` drains one
/// batch, `backlog` counts the table, `woken` resolves at a notification or the poll.
pub(crate) async fn drain_session<B, BF, K, KF, W, WF>(
    config: &DrainConfig,
    status: &DrainStatus,
    stop: &CancellationToken,
    mut batch: B,
    mut backlog: K,
    mut woken: W,
) -> Result<(), OutboxError>
where
    B: FnMut() -> BF,
    BF: Future<Output = Result<BatchReport, OutboxError>>,
    K: FnMut() -> KF,
    KF: Future<Output = Result<Backlog, OutboxError>>,
    W: FnMut(Duration) -> WF,
    WF: Future<Output = ()>,
{
    let mut last_count: Option<Instant> = None;
    let mut unavailable_in_a_row = 0u32;
    loop {
        if stop.is_cancelled() {
            return Ok(());
        }
        if last_count.is_none_or(|at| at.elapsed() >= BACKLOG_EVERY) {
            let counted = backlog().await?;
            status.with(|s| {
                s.waiting = Some(counted.waiting);
                s.oldest_ms = counted.oldest_ms;
                s.failed_rows = Some(counted.failed);
                s.queues = counted.queues;
            });
            last_count = Some(Instant::now());
        }
        let report = match batch().await {
            Ok(report) => report,
            // Another transaction won a lock (MySQL's deadlock detection picks a
            // victim now and then): the batch is undone, its rows stay; at once again.
            Err(OutboxError::Contended(why)) => {
                tracing::debug!(table = %config.table, %why, "an outbox batch was undone by a lock conflict");
                continue;
            }
            Err(e) => return Err(e),
        };
        status.with(|s| {
            s.applied += report.applied;
            s.replayed += report.replayed;
            s.failed += report.failed;
            s.error = report.unavailable.clone();
        });
        status.batches.send_modify(|ended| *ended += 1);
        if let Some(why) = &report.unavailable {
            unavailable_in_a_row += 1;
            if unavailable_in_a_row == 1 {
                tracing::warn!(table = %config.table, error = %why, "outbox rows cannot be applied now; trying again");
            }
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = tokio::time::sleep(backoff(unavailable_in_a_row)) => {}
            }
            continue;
        }
        unavailable_in_a_row = 0;
        let full = report.taken >= config.batch as usize && report.left < report.taken as u64;
        if !full {
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = woken(config.poll) => {}
            }
        }
    }
}

/// What applying a batch's rows came to, by row id.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Rows to delete: applied now or before.
    pub(crate) done: Vec<i64>,
    /// Rows to move to the failed table, with why.
    pub(crate) refused: Vec<(i64, String)>,
    pub(crate) report: BatchReport,
}

/// Applies `rows` (in id order) through `applier`, in rounds: the first row of each
/// key, then the second of each key whose first applied, and so on, so a key's rows go
/// in order and each round is one call; the keys in `blocked` (an earlier row
/// elsewhere) are left whole, and a key stops at its first row that could not be
/// applied now.
pub(crate) async fn apply_rows<A: Applier>(
    rows: Vec<Row>,
    blocked: &HashSet<(String, String)>,
    applier: &A,
) -> Outcome {
    let taken = rows.len();
    let mut by_key: BTreeMap<(String, String), std::collections::VecDeque<Row>> = BTreeMap::new();
    let mut outcome = Outcome { report: BatchReport { taken, ..BatchReport::default() }, ..Outcome::default() };
    for row in rows {
        let slot = (row.queue.clone(), row.key.clone());
        if blocked.contains(&slot) {
            outcome.report.left += 1;
        } else {
            by_key.entry(slot).or_default().push_back(row);
        }
    }
    // Rows in id order within a round keep the order of the batch.
    while !by_key.is_empty() {
        let mut round: Vec<Row> = by_key.values_mut().filter_map(std::collections::VecDeque::pop_front).collect();
        round.sort_by_key(|row| row.id);
        let answers = applier.apply(&round).await;
        for (row, answer) in round.into_iter().zip(answers) {
            let slot = (row.queue, row.key);
            match answer {
                Applied::Applied => {
                    outcome.done.push(row.id);
                    outcome.report.applied += 1;
                }
                Applied::Replayed => {
                    outcome.done.push(row.id);
                    outcome.report.replayed += 1;
                }
                Applied::Refused(why) => {
                    outcome.refused.push((row.id, why));
                    outcome.report.failed += 1;
                }
                Applied::Unavailable(why) => {
                    outcome.report.unavailable = Some(why);
                    let rest = by_key.remove(&slot).map_or(0, |rest| rest.len());
                    outcome.report.left += 1 + rest as u64;
                    continue;
                }
            }
            if by_key.get(&slot).is_some_and(std::collections::VecDeque::is_empty) {
                by_key.remove(&slot);
            }
        }
        by_key.retain(|_, rows| !rows.is_empty());
    }
    outcome
}

/// Each key's smallest row id in `rows`: a row of the key with a smaller id, in the
/// table but not in the batch, holds the key's rows back.
pub(crate) fn first_of_each_key(rows: &[Row]) -> BTreeMap<(String, String), i64> {
    let mut firsts = BTreeMap::new();
    for row in rows {
        firsts.entry((row.queue.clone(), row.key.clone())).or_insert(row.id);
    }
    firsts
}
