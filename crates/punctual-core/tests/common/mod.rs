//! The embedded reference store with the faults a test asks for: a reap that never
//! returns (a hung call), completions that go unanswered (a store that stopped
//! answering, before or after it applied the completion), audit entries refused. Every other call passes
//! through unchanged.

use punctual_core::audit::{AuditEntry, AuditRequest};
use punctual_core::history::HistoryEvent;
use punctual_core::{Actor, HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, KeyHistory};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use punctual_core::calendar::{CalendarChangeRequest, CalendarRecord};
use punctual_core::store::{
    ApplyOnceRequest, CompleteRequest, CompletionsPage, CompletionsRequest, ExtendRequest, GroupsPage, GroupsRequest,
    ImportRequest, Imported, LeaseBatch, LeaseRequest, ListRequest, OnceEffect, Page, PurgeRequest, QueueChangeRequest,
    QueueRecord, QueueStats, ReapResult, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, Scheduled, SweepRequest,
    Swept,
};
use punctual_core::{Error, LeaseToken, MemoryStore, NewTask, QueueName, Result, Store, Tag, Task, TaskKey, Timestamp};

pub struct Faulty {
    pub inner: MemoryStore,
    /// Reaps asked for so far.
    pub reaps: AtomicUsize,
    /// How many of the first reaps never return.
    pub hung_reaps: usize,
    /// What the next completions meet, in order, each `Unavailable`: `true` when the
    /// store applied the completion before its answer was lost. Once empty, completions
    /// pass through.
    pub unanswered_completes: Mutex<VecDeque<bool>>,
    /// Completions asked for so far.
    pub completes: AtomicUsize,
    /// Whether audit entries are refused (`Unavailable`), as by a store that failed
    /// after the change they tell of.
    pub refused_audit: bool,
}

/// The store with no faults.
impl Default for Faulty {
    fn default() -> Faulty {
        Faulty {
            inner: MemoryStore::new(),
            reaps: AtomicUsize::new(0),
            hung_reaps: 0,
            unanswered_completes: Mutex::new(VecDeque::new()),
            completes: AtomicUsize::new(0),
            refused_audit: false,
        }
    }
}

impl Store for Faulty {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.inner.schedule(tasks, now).await
    }
    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        self.inner.get(queue, key).await
    }
    async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.inner.cancel(queue, key, by).await
    }
    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        self.inner.cancel_tag(queue, tag, by).await
    }
    async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        self.inner.apply_once(req).await
    }
    async fn list(&self, req: ListRequest) -> Result<Page> {
        self.inner.list(req).await
    }
    async fn groups(&self, req: GroupsRequest) -> Result<GroupsPage> {
        self.inner.groups(req).await
    }
    async fn completions(&self, req: CompletionsRequest) -> Result<CompletionsPage> {
        self.inner.completions(req).await
    }
    async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        self.inner.import(req).await
    }
    async fn append_audit(&self, entry: AuditEntry) -> Result<()> {
        if self.refused_audit {
            return Err(Error::Unavailable("the store refuses audit entries (a test's fault)".into()));
        }
        self.inner.append_audit(entry).await
    }
    async fn audit(&self, req: AuditRequest) -> Result<Vec<AuditEntry>> {
        self.inner.audit(req).await
    }
    async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.inner.sweep_audit(before, limit).await
    }
    async fn history(&self, req: HistoryRequest) -> Result<Vec<HistoryEvent>> {
        self.inner.history(req).await
    }
    async fn histories(&self, req: HistoriesRequest) -> Result<HistoriesPage> {
        self.inner.histories(req).await
    }
    async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        self.inner.import_histories(queue, histories).await
    }
    async fn sweep_history(&self, req: HistorySweepRequest) -> Result<u64> {
        self.inner.sweep_history(req).await
    }
    async fn queue_names(&self) -> Result<Vec<QueueName>> {
        self.inner.queue_names().await
    }
    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        self.inner.lease(req).await
    }
    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.completes.fetch_add(1, Ordering::SeqCst);
        let fault = self.unanswered_completes.lock().expect("faults lock").pop_front();
        match fault {
            None => self.inner.complete(req).await,
            Some(applied) => {
                if applied {
                    self.inner.complete(req).await?;
                }
                Err(Error::Unavailable("the store did not answer (a fault the test asked for)".into()))
            }
        }
    }
    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        self.inner.complete_many(reqs).await
    }
    async fn extend(&self, req: ExtendRequest) -> Result<Timestamp> {
        self.inner.extend(req).await
    }
    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        self.inner.release(token, now).await
    }
    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        if self.reaps.fetch_add(1, Ordering::SeqCst) < self.hung_reaps {
            std::future::pending::<()>().await;
        }
        self.inner.reap(now, limit).await
    }
    async fn retry_dead(&self, req: RetryDeadRequest) -> Result<Option<Task>> {
        self.inner.retry_dead(req).await
    }
    async fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> Result<RetriedDead> {
        self.inner.retry_dead_batch(req).await
    }
    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.inner.delete_dead(queue, key, by).await
    }
    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        self.inner.sweep_dead(req).await
    }
    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        self.inner.stats(queue).await
    }
    async fn purge(&self, req: PurgeRequest) -> Result<u64> {
        self.inner.purge(req).await
    }
    async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        self.inner.queue_record(queue).await
    }
    async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        self.inner.queue_records().await
    }
    async fn change_queue(&self, req: QueueChangeRequest) -> Result<QueueRecord> {
        self.inner.change_queue(req).await
    }
    async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        self.inner.calendar_records().await
    }
    async fn change_calendar(&self, req: CalendarChangeRequest) -> Result<CalendarRecord> {
        self.inner.change_calendar(req).await
    }
    async fn secret(&self) -> Result<[u8; 32]> {
        self.inner.secret().await
    }
    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}
