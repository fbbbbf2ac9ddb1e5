//! Applies each operation to the real store and to the reference store with the same
//! arguments, and compares their answers (see `compare` for what each store may choose
//! on its own). Where the contract lets a store choose among ties (which due task a
//! `lease` takes first, which expired lease a `reap`, which dead task a sweep), the
//! real store answers first and the reference is told its choice. After each step the
//! twin reads back everything a caller can observe (its child `observe`).

mod observe;

use std::collections::BTreeSet;
use std::fmt::{Debug, Display};
use std::mem::discriminant;
use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::store::{
    CompleteRequest, Completion, DeadSelection, ExtendRequest, ImportRequest, Imported, LeaseRequest, PurgeRequest,
    PurgeSelection, RetryDeadBatchRequest, RetryDeadRequest, ScheduleOutcome, SweepRequest,
};
use punctual_core::transitions::{self, completion_for};
use punctual_core::{
    Backoff, Error, IfExists, LeaseToken, MemoryStore, NewTask, Outcome, Priority, QueueName, Repeat, Store, Task,
    TaskKey, TaskState, Timestamp, Unique,
};

use self::observe::{PagingSession, View};
use super::compare::Identities;
use super::{
    CompletionSpec, DeadPick, Exists, MAX_PAGES, Op, PurgePick, QUEUES, RepeatSpec, START, ScheduleItem, Slot, TAGS,
    TaskPick, TokenPick, group, payload, queue_name, tag, task_key,
};

/// A lease as each store issued it: (reference token, real token).
type TokenPair = (LeaseToken, LeaseToken);

/// The real store and the reference, side by side.
pub(super) struct Twin<'s, S> {
    real: &'s S,
    reference: &'s MemoryStore,
    now: Timestamp,
    ids: Identities,
    /// Every lease token the stores have issued, in order.
    tokens: Vec<TokenPair>,
    /// What both stores held after the last step.
    view: View,
    paging: Option<PagingSession>,
    /// Tasks this step wrote in a way reading them cannot tell (an extend to the expiry
    /// the lease already had), so their place among ties may have changed.
    extended: BTreeSet<Slot>,
    /// Numbers the error texts handed to the stores, so each is distinct.
    errors_written: u32,
}

impl<'s, S: Store> Twin<'s, S> {
    pub(super) fn new(real: &'s S, reference: &'s MemoryStore) -> Self {
        Twin {
            real,
            reference,
            now: START,
            ids: Identities::default(),
            tokens: Vec::new(),
            view: View::default(),
            paging: None,
            extended: BTreeSet::new(),
            errors_written: 0,
        }
    }

    pub(super) async fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        self.observe().await.map_err(|e| format!("before the first step: {e}"))?;
        for (step, op) in ops.iter().enumerate() {
            let at = format!("t+{}ms", self.now.as_millis() - START.as_millis());
            self.apply(op).await.map_err(|e| format!("step {step} {op:?} at {at}: {e}"))?;
            self.observe().await.map_err(|e| format!("after step {step} {op:?} at {at}: {e}"))?;
        }
        Ok(())
    }

    async fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Schedule(items) => self.schedule(items).await,
            Op::Get(pick) => {
                let (queue, key) = self.pick_task(pick);
                let real = self.real.get(&queue, &key).await;
                let reference = self.reference.get(&queue, &key).await;
                self.same_tasks(format!("get {queue}/{key}"), real, reference)
            }
            Op::Cancel(pick) => {
                let (queue, key) = self.pick_task(pick);
                let real = self.real.cancel(&queue, &key, None).await;
                same("cancel", &real, &self.reference.cancel(&queue, &key, None).await)
            }
            Op::CancelTag { queue, tag: index } => {
                let (queue, tag) = (queue_name(*queue), tag(*index));
                let real = self.real.cancel_tag(&queue, &tag, None).await;
                same("cancel_tag", &real, &self.reference.cancel_tag(&queue, &tag, None).await)
            }
            Op::Lease { queue, max, lease_secs, group_limit, group_rate } => {
                let group_rate = group_rate.map(|(count, secs)| Rate { count, per: Duration::from_secs(secs) });
                let limits = (*group_limit, group_rate);
                self.lease(queue_name(*queue), *max, Duration::from_secs(*lease_secs), limits).await.map(drop)
            }
            Op::Complete { token, completion } => self.complete(&[(token.clone(), completion.clone())], false).await,
            Op::CompleteMany(items) => self.complete(items, true).await,
            Op::Extend { token, lease_secs } => self.extend(token, Duration::from_secs(*lease_secs)).await,
            Op::Release { token } => {
                let Some((reference_token, real_token)) = self.pick_token(token) else { return Ok(()) };
                let real = self.real.release(&real_token, self.now).await;
                let reference = self.reference.release(&reference_token, self.now).await;
                same(format_args!("release of {real_token:?}"), &real, &reference)
            }
            Op::Reap { limit } => self.reap(*limit).await,
            Op::RetryDead(pick) => {
                let (queue, key) = self.pick_task(pick);
                let request = RetryDeadRequest::new(queue.clone(), key.clone(), self.now);
                let real = self.real.retry_dead(request.clone()).await;
                let reference = self.reference.retry_dead(request).await;
                self.same_tasks(format!("retry_dead {queue}/{key}"), real, reference)
            }
            Op::DeleteDead(pick) => {
                let (queue, key) = self.pick_task(pick);
                let real = self.real.delete_dead(&queue, &key, None).await;
                same("delete_dead", &real, &self.reference.delete_dead(&queue, &key, None).await)
            }
            Op::FailDue { queue, max } => {
                let leased = self.lease(queue_name(*queue), *max, Duration::from_secs(5), (None, None)).await?;
                let items: Vec<(TokenPair, Completion)> =
                    leased.into_iter().map(|pair| (pair, Completion::Dead { error: self.next_error_text() })).collect();
                for (pair, completion) in items {
                    self.complete_each(vec![(pair, completion)], false).await?;
                }
                Ok(())
            }
            Op::RetryDeadMany { queue, which, limit } => self.retry_dead_many(queue_name(*queue), which, *limit).await,
            Op::SweepDead { queue, age_ms, limit } => self.sweep_dead(queue_name(*queue), *age_ms, *limit).await,
            Op::Purge { queue, which, limit } => {
                let selection = match which {
                    PurgePick::PurgeScheduled => PurgeSelection::Scheduled,
                    PurgePick::PurgeDead => PurgeSelection::Dead,
                    PurgePick::PurgeAll => PurgeSelection::All,
                };
                let request = PurgeRequest::new(queue_name(*queue), selection, *limit);
                let real = purge_until_none(self.real, &request).await?;
                let reference = purge_until_none(self.reference, &request).await?;
                if real == reference {
                    Ok(())
                } else {
                    Err(format!(
                        "the whole purge ({request:?}) cancelled {real} tasks, the reference store {reference}"
                    ))
                }
            }
            Op::ListPage { queue, state, tag: index, limit } => {
                self.list_page(queue_name(*queue), *state, index.map(tag), *limit).await
            }
            Op::Stats { queue } => self.stats(queue.map(queue_name)).await,
            Op::Import { from, key } => self.import(from, task_key(*key)).await,
            Op::Advance { ms } => {
                self.now = self.now.saturating_add(Duration::from_millis(*ms));
                Ok(())
            }
        }
    }

    fn next_error_text(&mut self) -> String {
        self.errors_written += 1;
        format!("handler failed (#{})", self.errors_written)
    }

    /// Compares two answers that are tasks (or none).
    fn same_tasks(
        &mut self,
        what: String,
        real: punctual_core::Result<Option<Task>>,
        reference: punctual_core::Result<Option<Task>>,
    ) -> Result<(), String> {
        match (&real, &reference) {
            (Ok(Some(real)), Ok(Some(reference))) => self.ids.same(reference, real).map_err(|e| format!("{what}: {e}")),
            (Ok(None), Ok(None)) => Ok(()),
            _ => Err(format!("{what}: the store answered {real:?}, the reference store {reference:?}")),
        }
    }

    // ---- Picking what an operation names, from what both stores held after the last step ----

    /// The (queue, key) an operation names.
    fn pick_task(&self, pick: &TaskPick) -> Slot {
        let nth = |index: usize, dead_only: bool| {
            let slots: Vec<&Slot> = self
                .view
                .reference
                .iter()
                .filter(|(_, task)| !dead_only || task.state == TaskState::Dead)
                .map(|(slot, _)| slot)
                .collect();
            slots.get(index % slots.len().max(1)).map(|slot| (*slot).clone())
        };
        let by_index = |queue: usize, key: usize| (queue_name(queue % QUEUES.len()), task_key(key));
        match pick {
            TaskPick::Existing(index) => nth(*index, false).unwrap_or_else(|| by_index(*index, *index)),
            TaskPick::DeadOne(index) => {
                nth(*index, true).or_else(|| nth(*index, false)).unwrap_or_else(|| by_index(*index, *index))
            }
            TaskPick::Slot { queue, key } => by_index(*queue, *key),
        }
    }

    /// Whether the reference's token names a live lease.
    fn is_live(&self, token: &LeaseToken) -> bool {
        let slot = (token.queue.clone(), token.key.clone());
        self.view.reference.get(&slot).is_some_and(|task| token.is_live_for(task, self.now))
    }

    /// The tokens an operation uses; `None` when no lease was ever issued.
    fn pick_token(&self, pick: &TokenPick) -> Option<TokenPair> {
        let live: Vec<&TokenPair> = self.tokens.iter().filter(|(token, _)| self.is_live(token)).collect();
        let any_live = |index: usize| live.get(index % live.len().max(1)).map(|pair| (*pair).clone());
        let any_issued = |index: usize| self.tokens.get(index % self.tokens.len().max(1)).cloned();
        let forged = |index: usize, forge: fn(&mut LeaseToken)| {
            any_live(index).or_else(|| any_issued(index)).map(|(mut reference, mut real)| {
                forge(&mut reference);
                forge(&mut real);
                (reference, real)
            })
        };
        match pick {
            TokenPick::Live(index) => any_live(*index).or_else(|| any_issued(*index)),
            TokenPick::Issued(index) => any_issued(*index),
            TokenPick::ForgedFence(index) => forged(*index, |token| token.fence += 1),
            TokenPick::ForgedVersion(index) => forged(*index, |token| token.version += 1),
        }
    }

    /// The completion the spec asks for, for the task of `token` as last read.
    fn completion(&mut self, spec: &CompletionSpec, token: &LeaseToken) -> Completion {
        let now = self.now;
        let task = self.view.reference.get(&(token.queue.clone(), token.key.clone())).cloned();
        match spec {
            CompletionSpec::Done => Completion::Done,
            CompletionSpec::RetryAfter { ms } => {
                Completion::Retry { at: now.saturating_add(Duration::from_millis(*ms)), error: self.next_error_text() }
            }
            CompletionSpec::RescheduleAfter { ms } => {
                Completion::Reschedule { at: now.saturating_add(Duration::from_millis(*ms)), anchor: now }
            }
            CompletionSpec::GiveUp => Completion::Dead { error: self.next_error_text() },
            CompletionSpec::DoneByPolicy => match task {
                Some(task) => completion_for(&task, Outcome::Done, now, 0.0),
                None => Completion::Done,
            },
            CompletionSpec::FailedByPolicy => {
                let error = self.next_error_text();
                match task {
                    Some(task) => completion_for(&task, Outcome::retry(&error), now, 0.0),
                    None => Completion::Dead { error },
                }
            }
        }
    }

    // ---- Operations ----

    fn new_task(&self, item: &ScheduleItem) -> NewTask {
        let due_at = Timestamp::from_millis(self.now.as_millis() + item.due_ms);
        let mut task = NewTask::new(queue_name(item.queue % QUEUES.len()), task_key(item.key), due_at);
        task.payload = payload(item.payload);
        task.max_attempts = item.max_attempts.max(1);
        task.priority = Priority::new(item.priority.min(Priority::HIGHEST.get()).into()).expect("a priority of 0 to 9");
        task.debounce = item.debounce_ms.map(Duration::from_millis);
        task.group = item.group.map(group);
        task.unique_for = item.unique.map(|(ms, dead)| {
            let unique = Unique::new(Duration::from_millis(ms));
            if dead { unique.counting_dead() } else { unique }
        });
        if item.custom_backoff {
            task.backoff = Backoff::new(Duration::from_millis(500), 3.0, Duration::from_secs(10))
                .expect("the model's backoff is valid");
        }
        task.repeat = item.repeat.as_ref().map(|spec| match spec {
            RepeatSpec::Every { every_ms, times, until_ms } => {
                let mut repeat = Repeat::every(Duration::from_millis((*every_ms).max(1))).expect("interval ≥ 1 ms");
                if let Some(times) = times {
                    repeat = repeat.times((*times).max(1)).expect("times ≥ 1");
                }
                if let Some(until_ms) = until_ms {
                    repeat = repeat.until(self.now.saturating_add(Duration::from_millis(*until_ms)));
                }
                repeat
            }
            RepeatSpec::WeekdayMornings => {
                Repeat::cron("0 9 * * MON-FRI", "Asia/Shanghai").expect("the model's cron rule is valid")
            }
        });
        // As the engine hands them over: sorted, without duplicates.
        task.tags = (0..TAGS.len()).filter(|bit| item.tags & (1 << bit) != 0).map(tag).collect();
        task.tags.sort();
        task.if_exists = match item.if_exists {
            Exists::Replace => IfExists::Replace,
            Exists::Keep => IfExists::Keep,
            Exists::Refuse => IfExists::Error,
        };
        task
    }

    async fn schedule(&mut self, items: &[ScheduleItem]) -> Result<(), String> {
        let tasks: Vec<NewTask> = items.iter().map(|item| self.new_task(item)).collect();
        let whole = |e: Error| format!("schedule failed as a whole for valid tasks: {e:?}");
        let real = self.real.schedule(tasks.clone(), self.now).await.map_err(whole)?;
        let reference = self.reference.schedule(tasks.clone(), self.now).await.map_err(whole)?;
        if real.len() != tasks.len() {
            return Err(format!("schedule of {} tasks answered {} results", tasks.len(), real.len()));
        }
        for (index, ((new, real), reference)) in tasks.iter().zip(real).zip(reference).enumerate() {
            let what = format!("task {index} ({}/{}, if_exists {:?})", new.queue, new.key, new.if_exists);
            match (&real, &reference) {
                (Ok(real), Ok(reference)) if real.outcome == reference.outcome => match (&reference.task, &real.task) {
                    (Some(reference_task), Some(real_task)) => {
                        if real.outcome == ScheduleOutcome::Created {
                            self.ids.created(reference_task, real_task).map_err(|e| format!("{what}: {e}"))?;
                        }
                        self.ids.same(reference_task, real_task).map_err(|e| format!("{what}: {e}"))?;
                    }
                    // Kept by a dedupe window's completion record: no task.
                    (None, None) => self
                        .ids
                        .same_record(reference.completed.as_ref(), real.completed.as_ref())
                        .map_err(|e| format!("{what}: {e}"))?,
                    _ => return Err(format!("{what}: the store answered {real:?}, the reference store {reference:?}")),
                },
                (Err(real), Err(reference)) if discriminant(real) == discriminant(reference) => {}
                _ => return Err(format!("{what}: the store answered {real:?}, the reference store {reference:?}")),
            }
        }
        Ok(())
    }

    /// Imports the reference's task `from` names under `key`, into both stores.
    async fn import(&mut self, from: &TaskPick, key: TaskKey) -> Result<(), String> {
        let slot = self.pick_task(from);
        let Some(mut task) = self.view.reference.get(&slot).cloned() else { return Ok(()) };
        task.key = key;
        let target = (task.queue.clone(), task.key.clone());
        let request = ImportRequest::new(vec![task], Vec::new(), self.now);
        let real = self.real.import(request.clone()).await;
        let reference = self.reference.import(request).await;
        same(format_args!("import into {}/{}", target.0, target.1), &real, &reference)?;
        if real.as_deref() == Ok(&[Imported::Written]) {
            let (Ok(Some(real)), Ok(Some(reference))) =
                (self.real.get(&target.0, &target.1).await, self.reference.get(&target.0, &target.1).await)
            else {
                return Err(format!("{}/{}: imported, but not there to read", target.0, target.1));
            };
            self.ids.imported(&reference, &real)?;
        }
        Ok(())
    }

    /// Leases on both stores; the pairs of tokens issued.
    async fn lease(
        &mut self,
        queue: QueueName,
        max: u32,
        lease_for: Duration,
        (group_limit, group_rate): (Option<u32>, Option<Rate>),
    ) -> Result<Vec<TokenPair>, String> {
        let now = self.now;
        let request =
            LeaseRequest::new(queue.clone(), max, lease_for, now).group_limit(group_limit).group_rate(group_rate);
        let real = self.real.lease(request.clone()).await.map_err(|e| format!("lease failed: {e:?}"))?;
        // Without groups: the highest priority first, each the earliest due, ties in
        // the store's order as last listed. (With groups, the turns decide: the
        // reference store, which keeps them, is the judge.)
        let listed = self.view.real_order.get(&queue).cloned().unwrap_or_default();
        let mut grouped = false;
        let mut due: Vec<(&TaskKey, Priority)> = listed
            .iter()
            .filter_map(|key| {
                let task = self.view.reference.get(&(queue.clone(), key.clone()))?;
                grouped |= task.group.is_some();
                transitions::is_due(task, now).then_some((key, task.priority))
            })
            .collect();
        // Stable: within a priority, the listed (due) order stays.
        due.sort_by_key(|(_, priority)| std::cmp::Reverse(*priority));
        let due: Vec<&TaskKey> = due.into_iter().map(|(key, _)| key).collect();
        let expected: Vec<&TaskKey> = due.iter().copied().take(max as usize).collect();
        let leased: Vec<&TaskKey> = real.leases.iter().map(|lease| &lease.token.key).collect();
        if !grouped && leased != expected {
            return Err(format!(
                "lease (max {max}) handed out {leased:?}; due, by priority then in the store's listed order: {due:?}, so the contract \
                 says {expected:?}"
            ));
        }
        self.reference
            .prefer_among_ties(real.leases.iter().map(|l| (l.token.queue.clone(), l.token.key.clone())).collect());
        let reference =
            self.reference.lease(request).await.map_err(|e| format!("the reference's lease failed: {e:?}"))?;
        let reference_keys: Vec<&TaskKey> = reference.leases.iter().map(|lease| &lease.token.key).collect();
        if reference_keys != leased {
            return Err(format!("lease (max {max}) handed out {leased:?}, the reference store {reference_keys:?}"));
        }
        let mut issued = Vec::new();
        for (reference, real) in reference.leases.iter().zip(&real.leases) {
            if real.token.queue != queue {
                return Err(format!("a lease of queue {queue} names queue {}", real.token.queue));
            }
            self.ids.leased(&reference.task, &real.task)?;
            self.ids.same(&reference.task, &real.task).map_err(|e| format!("the leased task: {e}"))?;
            let task = &real.task;
            let token =
                LeaseToken::new(task.queue.clone(), task.key.clone(), task.meta.id, task.version, task.meta.fence);
            let mut wrong = Vec::new();
            if real.token != token {
                wrong.push(format!("token {:?}, its task says {token:?}", real.token));
            }
            if real.expires_at != reference.expires_at {
                wrong.push(format!("expires_at {}, the reference store {}", real.expires_at, reference.expires_at));
            }
            if real.attempt != reference.attempt {
                wrong.push(format!("attempt {}, the reference store {}", real.attempt, reference.attempt));
            }
            if real.delivery_id != task.delivery_id() {
                wrong.push(format!("delivery_id {}, its task says {}", real.delivery_id, task.delivery_id()));
            }
            if !wrong.is_empty() {
                return Err(format!("lease of {}: {}", task.key, wrong.join("; ")));
            }
            issued.push((reference.token.clone(), real.token.clone()));
        }
        self.tokens.extend(issued.iter().cloned());
        if real.next_due != reference.next_due {
            return Err(format!(
                "lease answered next_due {:?}, the reference store {:?}",
                real.next_due, reference.next_due
            ));
        }
        Ok(issued)
    }

    /// Completes the leases picked, with one `complete_many` call each when `many`, else
    /// with `complete`.
    async fn complete(&mut self, items: &[(TokenPick, CompletionSpec)], many: bool) -> Result<(), String> {
        let mut picked = Vec::new();
        for (pick, spec) in items {
            if let Some(pair) = self.pick_token(pick) {
                let completion = self.completion(spec, &pair.0);
                picked.push((pair, completion));
            }
        }
        self.complete_each(picked, many).await
    }

    /// Completes on both stores, with one `complete_many` call each when `many`, else
    /// one `complete` call (of the one item).
    async fn complete_each(&mut self, items: Vec<(TokenPair, Completion)>, many: bool) -> Result<(), String> {
        if items.is_empty() {
            return Ok(());
        }
        let now = self.now;
        let requests = |real: bool| -> Vec<CompleteRequest> {
            items
                .iter()
                .map(|((reference, real_token), completion)| {
                    let token = if real { real_token.clone() } else { reference.clone() };
                    CompleteRequest::new(token, completion.clone(), now)
                })
                .collect()
        };
        let (real, reference) = if many {
            let real = self.real.complete_many(requests(true)).await.map_err(|e| format!("complete_many: {e:?}"))?;
            let reference = self.reference.complete_many(requests(false)).await.map_err(|e| format!("{e:?}"))?;
            (real, reference)
        } else {
            let (real, reference) = (requests(true).remove(0), requests(false).remove(0));
            (vec![self.real.complete(real).await], vec![self.reference.complete(reference).await])
        };
        if real.len() != items.len() {
            return Err(format!("complete_many of {} answered {} results", items.len(), real.len()));
        }
        for (index, ((((reference_token, real_token), completion), real), reference)) in
            items.iter().zip(&real).zip(&reference).enumerate()
        {
            let live = if self.is_live(reference_token) { "live" } else { "not live" };
            same(
                format_args!("completion {index}, {completion:?} with {real_token:?} (the lease was {live})"),
                real,
                reference,
            )?;
        }
        Ok(())
    }

    async fn extend(&mut self, pick: &TokenPick, lease_for: Duration) -> Result<(), String> {
        let Some((reference_token, real_token)) = self.pick_token(pick) else { return Ok(()) };
        let real = self.real.extend(ExtendRequest::new(real_token.clone(), lease_for, self.now)).await;
        let reference = self.reference.extend(ExtendRequest::new(reference_token, lease_for, self.now)).await;
        if reference.is_ok() {
            self.extended.insert((real_token.queue.clone(), real_token.key.clone()));
        }
        same(format_args!("extend of {real_token:?}"), &real, &reference)
    }

    async fn reap(&mut self, limit: u32) -> Result<(), String> {
        let now = self.now;
        let real = self.real.reap(now, limit).await.map_err(|e| format!("reap failed: {e:?}"))?;
        self.reference.prefer_among_ties(real.reaped.iter().map(|r| (r.queue.clone(), r.key.clone())).collect());
        let reference = self.reference.reap(now, limit).await.map_err(|e| format!("the reference's reap: {e:?}"))?;
        if real != reference {
            let expired: Vec<String> = (self.view.reference.values())
                .filter(|task| transitions::is_expired(task, now))
                .map(|task| format!("{}/{} at {:?}", task.queue, task.key, task.lease_expires_at))
                .collect();
            return Err(format!(
                "reap (limit {limit}) answered {real:?}; the reference store, choosing as the store did among \
                 leases expiring at the same instant, {reference:?}; expired leases: {expired:?} (the contract: \
                 the earliest {limit}, earliest first)"
            ));
        }
        for reaped in reference.reaped {
            self.ids.reaped((reaped.queue, reaped.key));
        }
        Ok(())
    }

    async fn retry_dead_many(&mut self, queue: QueueName, which: &DeadPick, limit: u32) -> Result<(), String> {
        let selection = match which {
            DeadPick::EveryDead => DeadSelection::All,
            DeadPick::DeadWithTag(index) => DeadSelection::Tagged(tag(*index)),
            DeadPick::DeadKeys(picks) => DeadSelection::Keys(picks.iter().map(|pick| self.pick_task(pick).1).collect()),
        };
        // Keys go at most `limit` per call, as the contract asks of callers.
        let walks: Vec<DeadSelection> = match selection {
            DeadSelection::Keys(keys) => {
                keys.chunks(limit.max(1) as usize).map(|chunk| DeadSelection::Keys(chunk.to_vec())).collect()
            }
            other => vec![other],
        };
        let real = bulk_retry(self.real, &queue, &walks, limit, self.now).await?;
        let reference = bulk_retry(self.reference, &queue, &walks, limit, self.now).await?;
        if real == reference {
            Ok(())
        } else {
            Err(format!("the bulk retry retried {real} tasks, the reference store {reference}"))
        }
    }

    async fn sweep_dead(&mut self, queue: QueueName, age_ms: u64, limit: u32) -> Result<(), String> {
        let died_by = Timestamp::from_millis(self.now.as_millis() - i64::try_from(age_ms).unwrap_or(i64::MAX));
        let request = SweepRequest::new(queue.clone(), died_by, limit);
        let real = self.real.sweep_dead(request.clone()).await.map_err(|e| format!("sweep_dead failed: {e:?}"))?;
        // Which went: every dead task the store no longer has.
        let mut gone = Vec::new();
        let dead: Vec<(Slot, Timestamp)> = (self.view.reference.iter())
            .filter(|(slot, task)| slot.0 == queue && task.state == TaskState::Dead)
            .map(|(slot, task)| (slot.clone(), task.updated_at))
            .collect();
        for (slot, _) in &dead {
            if self.real.get(&slot.0, &slot.1).await.map_err(|e| format!("get failed: {e:?}"))?.is_none() {
                gone.push(slot.clone());
            }
        }
        self.reference.prefer_among_ties(gone.clone());
        let reference =
            self.reference.sweep_dead(request).await.map_err(|e| format!("the reference's sweep: {e:?}"))?;
        if real == reference {
            return Ok(());
        }
        let gone: Vec<&TaskKey> = gone.iter().map(|slot| &slot.1).collect();
        let deaths: Vec<String> = dead.iter().map(|(slot, died)| format!("{} died {died}", slot.1)).collect();
        Err(format!(
            "sweep_dead (died by {died_by}, limit {limit}) answered {real:?} and deleted {gone:?}; the reference \
             store, choosing as the store did among tasks that died at the same instant, {reference:?}; the dead \
             tasks: {deaths:?} (the contract: those that died first, up to the limit)"
        ))
    }

    async fn stats(&mut self, queue: Option<QueueName>) -> Result<(), String> {
        let real = self.real.stats(queue.as_ref()).await;
        same(format_args!("stats({queue:?})"), &real, &self.reference.stats(queue.as_ref()).await)
    }
}

/// Runs every batch of each walk of a bulk retry, following the cursor; how many
/// tasks were retried in all.
/// Purge batches until one cancels none; how many were cancelled in all.
async fn purge_until_none(store: &impl Store, request: &PurgeRequest) -> Result<u64, String> {
    let mut purged = 0;
    for batch_number in 1..=MAX_PAGES * 4 {
        let batch = store
            .purge(request.clone())
            .await
            .map_err(|e| format!("purge batch {batch_number} of {request:?} failed: {e:?}"))?;
        if batch > u64::from(request.limit) {
            return Err(format!("purge batch {batch_number} of {request:?} cancelled {batch}, over its limit"));
        }
        if batch == 0 {
            return Ok(purged);
        }
        purged += batch;
    }
    Err(format!("the purge did not end after {} batches", MAX_PAGES * 4))
}

async fn bulk_retry(
    store: &impl Store,
    queue: &QueueName,
    walks: &[DeadSelection],
    limit: u32,
    now: Timestamp,
) -> Result<u64, String> {
    let mut retried = 0;
    for selection in walks {
        let mut request = RetryDeadBatchRequest::new(queue.clone(), selection.clone(), limit, now);
        for batch_number in 1.. {
            if batch_number > MAX_PAGES * 4 {
                return Err(format!("the bulk retry did not end after {} batches", MAX_PAGES * 4));
            }
            let batch = store
                .retry_dead_batch(request.clone())
                .await
                .map_err(|e| format!("retry_dead_batch {batch_number} of {request:?} failed: {e:?}"))?;
            retried += batch.retried;
            match batch.next_cursor {
                Some(cursor) => request = request.after(cursor),
                None => break,
            }
        }
    }
    Ok(retried)
}

/// Two answers that carry no task agree: equal, or failed the same way.
fn same<T: PartialEq + Debug>(
    what: impl Display,
    real: &punctual_core::Result<T>,
    reference: &punctual_core::Result<T>,
) -> Result<(), String> {
    let agree = match (real, reference) {
        (Ok(real), Ok(reference)) => real == reference,
        (Err(real), Err(reference)) => discriminant(real) == discriminant(reference),
        _ => false,
    };
    if agree { Ok(()) } else { Err(format!("{what}: the store answered {real:?}, the reference store {reference:?}")) }
}
