//! Consumers: leasing due tasks (sleeping until the queue's wake time, woken early by
//! an earlier task) and completing their leases.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::config::check_lease_for;
use super::{Engine, LeaseOptions, completion_for};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{QueueName, Task};
use crate::outcome::{Outcome, TryEnd};
use crate::store::{CompleteRequest, Completion, ExtendRequest, Lease, LeaseRequest, LeaseToken, Store};
use crate::time::Timestamp;
use crate::wake::WakeAt;

impl<S: Store> Engine<S> {
    /// Leases due tasks of `queue`. With `wait`, holds on until a task falls due or
    /// `wait` passes (then answers an empty list); woken by the engine, never polling.
    pub async fn lease(&self, queue: &str, options: LeaseOptions) -> Result<Vec<Lease>> {
        self.lease_cancellable(queue, options, &CancellationToken::new()).await
    }

    /// [`Engine::lease`] that also stops waiting when `cancel` fires, answering an
    /// empty list. Cancelling never loses leases: a store call already under way
    /// completes and its leases are returned, whereas dropping the future of
    /// [`Engine::lease`] mid-call would leave them to expire. For servers whose client
    /// may go away during a long poll.
    pub async fn lease_cancellable(
        &self,
        queue: &str,
        options: LeaseOptions,
        cancel: &CancellationToken,
    ) -> Result<Vec<Lease>> {
        let queue = QueueName::new(queue)?;
        options.validate()?;
        let deadline = self.now().saturating_add(options.wait);
        let wait =
            LeaseWait { queue: &queue, max: options.max, lease_for: options.lease_for, deadline, cancel: Some(cancel) };
        self.lease_until(wait).await
    }

    /// The heart of every consumer: lease when the queue's wake time has come, else
    /// sleep until it, an earlier offer, the wait's deadline, or its cancel.
    pub(crate) async fn lease_until(&self, wait: LeaseWait<'_>) -> Result<Vec<Lease>> {
        let LeaseWait { queue, max, lease_for, deadline, cancel } = wait;
        // Whether the queue is paused is known only once the records were read.
        self.records_loaded().await?;
        let waker = self.waker(queue);
        let _waiting = waker.wait();
        loop {
            self.check_running()?;
            let changed = waker.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.now();
            let wake_at = waker.get();
            // Read after `changed` is enabled, so a resume from now on wakes this wait.
            let paused = waker.is_paused();
            if !paused && wake_at.is_some_and(|at| at <= now) {
                waker.take();
                match self.inner.store.lease(LeaseRequest::new(queue.clone(), max, lease_for, now)).await {
                    Ok(batch) => {
                        waker.offer(batch.next_due);
                        waker.leased.fetch_add(batch.leases.len() as u64, Ordering::Relaxed);
                        self.publish(Event::Looked { queue: queue.clone(), leased: batch.leases.len() });
                        for lease in &batch.leases {
                            self.publish(Event::Leased {
                                queue: queue.clone(),
                                key: lease.token.key.clone(),
                                task_id: lease.token.task_id,
                                fence: lease.token.fence,
                                delivery_id: lease.delivery_id.clone(),
                                attempt: lease.attempt,
                                due_at: lease.task.due_at,
                                at: now,
                            });
                        }
                        if let Some(first) = batch.leases.first() {
                            self.inner.reaper_wake.offer(Some(first.expires_at));
                            return Ok(batch.leases);
                        }
                        // Nothing leased yet the store says work is due (another
                        // consumer took it meanwhile, or a store lagging behind): let
                        // other tasks run before asking again, never spin.
                        tokio::task::yield_now().await;
                    }
                    Err(e) => {
                        waker.offer(Some(now.saturating_add(Duration::from_secs(1))));
                        return Err(e);
                    }
                }
                continue;
            }
            if now >= deadline {
                return Ok(Vec::new());
            }
            let until = if paused { deadline } else { wake_at.map_or(deadline, |at| at.min(deadline)) };
            let stopping = self.inner.stopping.cancelled();
            let cancelled = async {
                match cancel {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.inner.timer.sleep_until(until) => {}
                _ = &mut changed => {}
                _ = stopping => return Err(Error::ShuttingDown),
                _ = cancelled => return Ok(Vec::new()),
            }
        }
    }

    /// Acknowledges a lease by token (pull workers): reads the task, turns `outcome`
    /// into a completion by its policies, and applies it if the lease is still live.
    pub async fn ack(&self, token: &LeaseToken, outcome: Outcome) -> Result<()> {
        let task = self.inner.store.get(&token.queue, &token.key).await?;
        let now = self.now();
        match task {
            Some(task) if token.is_live_for(&task, now) => self.finish(Held { token, task: &task }, outcome).await,
            _ => {
                self.refused(token);
                Err(Error::LeaseLost)
            }
        }
    }

    /// Completes `lease` with `outcome` using the task as it was leased: repeats are
    /// re-armed, failures retried with backoff or sent to `dead`, atomically with the
    /// ack. [`Error::LeaseLost`] if the lease is no longer live.
    pub async fn complete(&self, lease: &Lease, outcome: Outcome) -> Result<()> {
        self.finish(Held { token: &lease.token, task: &lease.task }, outcome).await
    }

    /// [`Engine::complete`] of a lease held by a worker or read back by an ack.
    async fn finish(&self, held: Held<'_>, outcome: Outcome) -> Result<()> {
        let ending = held.end(outcome, self.now());
        let next_due = ending.completion.next_due();
        let applied = self
            .inner
            .store
            .complete(CompleteRequest::new(held.token.clone(), ending.completion.clone(), ending.at))
            .await;
        if let Err(Error::LeaseLost) = applied {
            self.refused(held.token);
        }
        applied?;
        self.completed(held, &ending);
        self.waker(&held.token.queue).offer(next_due);
        Ok(())
    }

    /// Many acks by token, each applied or refused on its own.
    pub async fn ack_many(&self, acks: Vec<(LeaseToken, Outcome)>) -> Result<Vec<Result<()>>> {
        let mut results: Vec<Option<Result<()>>> = Vec::with_capacity(acks.len());
        let mut requests = Vec::with_capacity(acks.len());
        let mut offers = Vec::with_capacity(acks.len());
        let mut finished = Vec::with_capacity(acks.len());
        // Every task is read in one call (one pipelined round trip on a remote store),
        // since the completion of each depends on its policies as stored.
        let keys = acks.iter().map(|(token, _)| (token.queue.clone(), token.key.clone())).collect();
        let tasks = self.inner.store.get_many(keys).await?;
        let now = self.now();
        for ((token, outcome), task) in acks.into_iter().zip(tasks) {
            match task {
                Some(task) if token.is_live_for(&task, now) => {
                    let ending = Held { token: &token, task: &task }.end(outcome, now);
                    if let Some(at) = ending.completion.next_due() {
                        offers.push((token.queue.clone(), at));
                    }
                    requests.push(CompleteRequest::new(token.clone(), ending.completion.clone(), now));
                    finished.push((token, task, ending));
                    results.push(None);
                }
                _ => {
                    self.refused(&token);
                    results.push(Some(Err(Error::LeaseLost)));
                }
            }
        }
        let applied = self.inner.store.complete_many(requests).await?;
        for (result, (token, task, ending)) in applied.iter().zip(finished) {
            match result {
                Ok(()) => self.completed(Held { token: &token, task: &task }, &ending),
                Err(Error::LeaseLost) => self.refused(&token),
                Err(_) => {}
            }
        }
        let mut applied = applied.into_iter();
        for (queue, at) in offers {
            self.waker(&queue).offer(Some(at));
        }
        Ok(results
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|| applied.next().unwrap_or(Err(Error::LeaseLost))))
            .collect())
    }

    /// Extends a live lease to `lease_for` from now; the new expiry.
    pub async fn extend(&self, token: &LeaseToken, lease_for: Duration) -> Result<Timestamp> {
        check_lease_for(lease_for)?;
        self.inner.store.extend(ExtendRequest::new(token.clone(), lease_for, self.now())).await
    }

    /// Gives a live lease back untried; the task is due again at once.
    pub async fn release(&self, token: &LeaseToken) -> Result<()> {
        self.inner.store.release(token, self.now()).await?;
        self.publish(Event::Released {
            queue: token.queue.clone(),
            key: token.key.clone(),
            task_id: token.task_id,
            fence: token.fence,
        });
        self.waker(&token.queue).offer(Some(Timestamp::EPOCH));
        Ok(())
    }

    /// Publishes that an ack of `token` was refused: its lease is no longer live.
    fn refused(&self, token: &LeaseToken) {
        self.publish(Event::AckRefused { queue: token.queue.clone(), key: token.key.clone() });
    }

    /// Publishes what an applied completion did: how the try of `held` ended, and
    /// that the task died if it did.
    fn completed(&self, held: Held<'_>, ending: &Ending) {
        let Held { token, task } = held;
        let now = ending.at;
        let error = match &ending.completion {
            Completion::Retry { error, .. } | Completion::Dead { error } => Some(error.clone()),
            Completion::Done | Completion::Reschedule { .. } => None,
        };
        self.publish(Event::Completed {
            queue: token.queue.clone(),
            key: token.key.clone(),
            task_id: token.task_id,
            fence: token.fence,
            delivery_id: task.delivery_id(),
            attempt: task.attempts + 1,
            ended: ending.ended,
            error: error.clone(),
            due_at: task.due_at,
            updated_at: task.updated_at,
            at: now,
        });
        if let (TryEnd::Dead, Some(error)) = (ending.ended, error) {
            self.publish(Event::Dead { queue: token.queue.clone(), key: token.key.clone(), error, at: now });
        }
    }
}

/// What a consumer leases, and until when it waits for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseWait<'a> {
    pub(crate) queue: &'a QueueName,
    /// At most this many leases (≥ 1).
    pub(crate) max: u32,
    /// Each lease expires this long after it is taken.
    pub(crate) lease_for: Duration,
    /// No lease by then: the wait answers an empty list.
    pub(crate) deadline: Timestamp,
    /// Ends the wait early, answering an empty list (leases already taken are kept).
    pub(crate) cancel: Option<&'a CancellationToken>,
}

/// A lease being completed: its token, and the task as it was leased (a worker's
/// [`Lease`], or the task an ack read back and found live for the token).
#[derive(Debug, Clone, Copy)]
struct Held<'a> {
    token: &'a LeaseToken,
    task: &'a Task,
}

impl Held<'_> {
    /// How the try ends when its handler answered `outcome` at `now`, by the task's
    /// policies.
    fn end(self, outcome: Outcome, now: Timestamp) -> Ending {
        let handler_done = matches!(outcome, Outcome::Done);
        let completion = completion_for(self.task, outcome, now, rand::random::<f64>());
        let ended = TryEnd::of(&completion, handler_done);
        Ending { completion, ended, at: now }
    }
}

/// How the engine ends a try: what the store is to apply, how the try ended, and when.
#[derive(Debug)]
struct Ending {
    completion: Completion,
    ended: TryEnd,
    at: Timestamp,
}

/// What the engine keeps per queue: its wake-up, whether it is paused, and the
/// consumer's own counts the watchdog reads (who waits, and how many leases were
/// handed out).
#[derive(Debug, Default)]
pub(crate) struct QueueState {
    wake: WakeAt,
    paused: AtomicBool,
    waiting: AtomicUsize,
    pub(super) leased: AtomicU64,
}

impl std::ops::Deref for QueueState {
    type Target = WakeAt;
    fn deref(&self) -> &WakeAt {
        &self.wake
    }
}

impl QueueState {
    /// Counts a consumer as waiting for the queue while the guard lives.
    pub(crate) fn wait(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(self)
    }

    /// Consumers waiting for the queue now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Leases handed out so far.
    pub(crate) fn leased(&self) -> u64 {
        self.leased.load(Ordering::Relaxed)
    }

    /// Whether nothing of the queue is handed out now.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Pauses or resumes; on resume every waiting consumer looks at the queue at once.
    pub(crate) fn set_paused(&self, paused: bool) {
        let was = self.paused.swap(paused, Ordering::SeqCst);
        if was && !paused {
            // `take` then `offer`: the offer is then a lowering, so it always notifies.
            self.wake.take();
            self.wake.offer(Some(Timestamp::EPOCH));
        }
    }
}

/// A consumer counted as waiting; uncounted when dropped.
#[derive(Debug)]
pub(crate) struct Waiting<'a>(&'a QueueState);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}
