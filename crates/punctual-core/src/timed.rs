//! The engine's store, each call timed: a [`Store`] that implements every method of the
//! trait by calling the store underneath and publishing an [`Event::StoreCall`] with
//! the operation and its wall time, and an [`Event::StoreError`] when the store, not
//! the input, made the call fail.
//!
//! Invariant: every method is implemented here, none forwarded by `Deref`, so a method
//! added to the trait does not compile until it is timed (`peers`, which does no I/O,
//! is forwarded untimed).

use std::future::Future;
use std::sync::Arc;

use crate::audit::{AuditEntry, AuditRequest};
use crate::calendar::{CalendarChangeRequest, CalendarRecord};
use crate::clock::Stopwatch;
use crate::error::{Error, Result};
use crate::events::{Bus, Event, StoreOp};
use crate::history::HistoryEvent;
use crate::model::{Actor, NewTask, QueueName, Tag, Task, TaskKey};
use crate::store::{
    ApplyOnceRequest, CompleteRequest, CompletionsPage, CompletionsRequest, ExtendRequest, GroupsPage, GroupsRequest,
    HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, ImportRequest, Imported, KeyHistory,
    LeaseBatch, LeaseRequest, LeaseToken, ListRequest, OnceEffect, Page, Peers, PurgeRequest, QueueChangeRequest,
    QueueRecord, QueueStats, ReapResult, RetriedDead, RetryDeadBatchRequest, RetryDeadRequest, Scheduled, Store,
    SweepRequest, Swept,
};
use crate::time::Timestamp;

#[derive(Debug)]
pub(crate) struct Timed<S> {
    store: S,
    bus: Arc<Bus>,
}

impl<S: Store> Timed<S> {
    pub(crate) fn new(store: S, bus: Arc<Bus>) -> Timed<S> {
        Timed { store, bus }
    }

    /// The store underneath, untimed.
    pub(crate) fn inner(&self) -> &S {
        &self.store
    }

    async fn call<T>(&self, op: StoreOp, call: impl Future<Output = Result<T>>) -> Result<T> {
        let watch = Stopwatch::start();
        let result = call.await;
        self.bus.publish(Event::StoreCall { op, took: watch.elapsed() });
        if let Err(e @ (Error::Unavailable(_) | Error::Internal(_))) = &result {
            self.bus.publish(Event::StoreError { op, error: e.to_string() });
        }
        result
    }
}

impl<S: Store> Store for Timed<S> {
    async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.call(StoreOp::Schedule, self.store.schedule(tasks, now)).await
    }
    async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        self.call(StoreOp::Get, self.store.get(queue, key)).await
    }
    async fn get_many(&self, keys: Vec<(QueueName, TaskKey)>) -> Result<Vec<Option<Task>>> {
        self.call(StoreOp::GetMany, self.store.get_many(keys)).await
    }
    async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.call(StoreOp::Cancel, self.store.cancel(queue, key, by)).await
    }
    async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        self.call(StoreOp::CancelTag, self.store.cancel_tag(queue, tag, by)).await
    }
    async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        self.call(StoreOp::ApplyOnce, self.store.apply_once(req)).await
    }
    async fn apply_once_many(&self, reqs: Vec<ApplyOnceRequest>) -> Result<Vec<Result<Option<OnceEffect>>>> {
        self.call(StoreOp::ApplyOnce, self.store.apply_once_many(reqs)).await
    }
    async fn list(&self, req: ListRequest) -> Result<Page> {
        self.call(StoreOp::List, self.store.list(req)).await
    }
    async fn groups(&self, req: GroupsRequest) -> Result<GroupsPage> {
        self.call(StoreOp::List, self.store.groups(req)).await
    }
    async fn lease(&self, req: LeaseRequest) -> Result<LeaseBatch> {
        self.call(StoreOp::Lease, self.store.lease(req)).await
    }
    async fn complete(&self, req: CompleteRequest) -> Result<()> {
        self.call(StoreOp::Complete, self.store.complete(req)).await
    }
    async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        self.call(StoreOp::CompleteMany, self.store.complete_many(reqs)).await
    }
    async fn extend(&self, req: ExtendRequest) -> Result<Timestamp> {
        self.call(StoreOp::Extend, self.store.extend(req)).await
    }
    async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        self.call(StoreOp::Release, self.store.release(token, now)).await
    }
    async fn reap(&self, now: Timestamp, limit: u32) -> Result<ReapResult> {
        self.call(StoreOp::Reap, self.store.reap(now, limit)).await
    }
    async fn retry_dead(&self, req: RetryDeadRequest) -> Result<Option<Task>> {
        self.call(StoreOp::RetryDead, self.store.retry_dead(req)).await
    }
    async fn retry_dead_batch(&self, req: RetryDeadBatchRequest) -> Result<RetriedDead> {
        self.call(StoreOp::RetryDeadBatch, self.store.retry_dead_batch(req)).await
    }
    async fn delete_dead(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.call(StoreOp::DeleteDead, self.store.delete_dead(queue, key, by)).await
    }
    async fn sweep_dead(&self, req: SweepRequest) -> Result<Swept> {
        self.call(StoreOp::SweepDead, self.store.sweep_dead(req)).await
    }
    async fn completions(&self, req: CompletionsRequest) -> Result<CompletionsPage> {
        self.call(StoreOp::List, self.store.completions(req)).await
    }
    async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        self.call(StoreOp::Import, self.store.import(req)).await
    }
    async fn history(&self, req: HistoryRequest) -> Result<Vec<HistoryEvent>> {
        self.call(StoreOp::History, self.store.history(req)).await
    }
    async fn histories(&self, req: HistoriesRequest) -> Result<HistoriesPage> {
        self.call(StoreOp::History, self.store.histories(req)).await
    }
    async fn import_histories(&self, queue: &QueueName, histories: Vec<KeyHistory>) -> Result<u64> {
        self.call(StoreOp::Import, self.store.import_histories(queue, histories)).await
    }
    async fn sweep_history(&self, req: HistorySweepRequest) -> Result<u64> {
        self.call(StoreOp::SweepHistory, self.store.sweep_history(req)).await
    }
    async fn append_audit(&self, entry: AuditEntry) -> Result<()> {
        self.call(StoreOp::Audit, self.store.append_audit(entry)).await
    }
    async fn audit(&self, req: AuditRequest) -> Result<Vec<AuditEntry>> {
        self.call(StoreOp::Audit, self.store.audit(req)).await
    }
    async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.call(StoreOp::Audit, self.store.sweep_audit(before, limit)).await
    }
    async fn queue_names(&self) -> Result<Vec<QueueName>> {
        self.call(StoreOp::Stats, self.store.queue_names()).await
    }
    async fn stats(&self, queue: Option<&QueueName>) -> Result<Vec<QueueStats>> {
        self.call(StoreOp::Stats, self.store.stats(queue)).await
    }
    async fn purge(&self, req: PurgeRequest) -> Result<u64> {
        self.call(StoreOp::Purge, self.store.purge(req)).await
    }
    async fn queue_record(&self, queue: &QueueName) -> Result<Option<QueueRecord>> {
        self.call(StoreOp::QueueRecord, self.store.queue_record(queue)).await
    }
    async fn queue_records(&self) -> Result<Vec<QueueRecord>> {
        self.call(StoreOp::QueueRecords, self.store.queue_records()).await
    }
    async fn change_queue(&self, req: QueueChangeRequest) -> Result<QueueRecord> {
        self.call(StoreOp::ChangeQueue, self.store.change_queue(req)).await
    }
    async fn calendar_records(&self) -> Result<Vec<CalendarRecord>> {
        self.call(StoreOp::CalendarRecords, self.store.calendar_records()).await
    }
    async fn change_calendar(&self, req: CalendarChangeRequest) -> Result<CalendarRecord> {
        self.call(StoreOp::ChangeCalendar, self.store.change_calendar(req)).await
    }
    async fn secret(&self) -> Result<[u8; 32]> {
        self.call(StoreOp::Secret, self.store.secret()).await
    }
    fn peers(&self) -> Option<Peers> {
        self.store.peers()
    }
    async fn close(&self) -> Result<()> {
        self.call(StoreOp::Close, self.store.close()).await
    }
}
