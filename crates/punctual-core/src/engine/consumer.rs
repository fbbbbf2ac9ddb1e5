//! Consumers: leasing due tasks (sleeping until the queue's wake time, woken early by
//! an earlier task) and completing their leases.

use crate::history::{DeliveryReport, acting};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::calendars::CalendarSet;
use super::config::check_lease_for;
use super::{Engine, LeaseOptions};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{QueueName, Task};
use crate::outcome::{Outcome, TryEnd};
use crate::store::{CompleteRequest, Completion, ExtendRequest, Lease, LeaseRequest, LeaseToken, Store};
use crate::target::Lane;
use crate::time::Timestamp;
use crate::transitions::completion_in;
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
        let wait = LeaseWait {
            queue: &queue,
            lanes: &[Lane::Handler],
            max: options.max,
            lease_for: options.lease_for,
            deadline,
            cancel: Some(cancel),
        };
        self.lease_until(wait).await
    }

    /// The heart of every consumer: lease when the wake time of one of the wait's
    /// lanes has come, else sleep until the earliest, an earlier offer, the wait's
    /// deadline, or its cancel.
    pub(crate) async fn lease_until(&self, wait: LeaseWait<'_>) -> Result<Vec<Lease>> {
        let LeaseWait { queue, lanes, max, lease_for, deadline, cancel } = wait;
        // Whether the queue is paused is known only once the records were read, and
        // how a late task counts in its calendar once the calendars were.
        self.records_loaded().await?;
        self.calendars_loaded().await?;
        let state = self.waker(queue);
        let watches = |lane: Lane| lanes.contains(&lane);
        let _waiting: Vec<Waiting<'_>> = lanes.iter().map(|lane| state.wait(*lane)).collect();
        loop {
            self.check_running()?;
            let handler_changed = state.lane(Lane::Handler).changed();
            let target_changed = state.lane(Lane::Target).changed();
            tokio::pin!(handler_changed, target_changed);
            // Only the watched lanes' notifiers are registered with: an offer to the
            // other lane is none of this wait's business.
            if watches(Lane::Handler) {
                handler_changed.as_mut().enable();
            }
            if watches(Lane::Target) {
                target_changed.as_mut().enable();
            }
            let now = self.now();
            // Read after `changed` is enabled, so a resume from now on wakes this wait.
            let paused = state.is_paused();
            let mut leases = Vec::new();
            let mut looked = false;
            for &lane in lanes {
                let waker = state.lane(lane);
                let room = max.saturating_sub(leases.len() as u32);
                if paused || room == 0 || waker.get().is_none_or(|at| at > now) {
                    continue;
                }
                looked = true;
                waker.take();
                let (group_limit, group_rate) = self.group_limits(queue);
                let request = LeaseRequest::new(queue.clone(), room, lease_for, now)
                    .in_lane(lane)
                    .group_limit(group_limit)
                    .group_rate(group_rate)
                    .by(acting())
                    .on_node(self.inner.config.node.clone());
                match self.inner.store.lease(request).await {
                    Ok(batch) => {
                        waker.offer(batch.next_due);
                        let fired = self.firings(batch.leases, now).await;
                        self.leased(queue, &fired, now);
                        leases.extend(fired);
                    }
                    Err(e) => {
                        waker.offer(Some(now.saturating_add(Duration::from_secs(1))));
                        if leases.is_empty() {
                            return Err(e);
                        }
                    }
                }
            }
            state.leased.fetch_add(leases.len() as u64, Ordering::Relaxed);
            if let Some(first) = leases.first() {
                self.inner.reaper_wake.offer(Some(first.expires_at));
                return Ok(leases);
            }
            if looked {
                // Nothing leased yet the store said work was due (another consumer
                // took it meanwhile, or a store lagging behind): let other tasks run
                // before asking again, never spin.
                tokio::task::yield_now().await;
                continue;
            }
            if now >= deadline {
                return Ok(Vec::new());
            }
            let earliest = lanes.iter().filter_map(|lane| state.lane(*lane).get()).min();
            let until = if paused { deadline } else { earliest.map_or(deadline, |at| at.min(deadline)) };
            let stopping = self.inner.stopping.cancelled();
            let cancelled = async {
                match cancel {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.inner.timer.sleep_until(until) => {}
                _ = &mut handler_changed, if watches(Lane::Handler) => {}
                _ = &mut target_changed, if watches(Lane::Target) => {}
                _ = stopping => return Err(Error::ShuttingDown),
                _ = cancelled => return Ok(Vec::new()),
            }
        }
    }

    /// Publishes one store lease call's result.
    fn leased(&self, queue: &QueueName, leases: &[Lease], now: Timestamp) {
        self.publish(Event::Looked { queue: queue.clone(), leased: leases.len() });
        for lease in leases {
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
    }

    /// Acknowledges a lease by token (pull workers): reads the task, turns `outcome`
    /// into a completion by its policies, and applies it if the lease is still live.
    pub async fn ack(&self, token: &LeaseToken, outcome: Outcome) -> Result<()> {
        let task = self.inner.store.get(&token.queue, &token.key).await?;
        let now = self.now();
        match task {
            Some(task) if token.is_live_for(&task, now) => {
                self.finish(Held { token, task: &task }, outcome, None).await
            }
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
        self.finish(Held { token: &lease.token, task: &lease.task }, outcome, None).await
    }

    /// [`Engine::complete`] of a push delivery, keeping what it saw in the task's
    /// history.
    pub async fn complete_reported(&self, lease: &Lease, outcome: Outcome, report: DeliveryReport) -> Result<()> {
        self.finish(Held { token: &lease.token, task: &lease.task }, outcome, Some(report)).await
    }

    /// [`Engine::complete`] of a lease held by a worker or read back by an ack.
    async fn finish(&self, held: Held<'_>, outcome: Outcome, report: Option<DeliveryReport>) -> Result<()> {
        let calendars = self.calendars_of(std::slice::from_ref(held.task)).await?;
        let ending = held.end(outcome, self.now(), calendars.as_deref());
        let next_due = ending.completion.next_due();
        let request =
            CompleteRequest::new(held.token.clone(), ending.completion.clone(), ending.at).by(acting()).report(report);
        let applied = self.inner.store.complete(request).await;
        if let Err(Error::LeaseLost) = applied {
            self.refused(held.token);
        }
        applied?;
        self.completed(held, &ending);
        self.waker(&held.token.queue).lane(held.task.lane()).offer(next_due);
        self.lease_ended(&held.token.queue, held.task.group.is_some());
        Ok(())
    }

    /// The calendars, when one of `tasks` counts in one (read first if no read has
    /// succeeded yet); `None` otherwise, so a completion of tasks without a calendar
    /// reads nothing.
    async fn calendars_of<'t>(&self, tasks: impl IntoIterator<Item = &'t Task>) -> Result<Option<Arc<CalendarSet>>> {
        if !tasks.into_iter().any(|task| task.timing.calendar.is_some()) {
            return Ok(None);
        }
        self.calendars_loaded().await?;
        Ok(Some(self.calendars()))
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
        let calendars = self.calendars_of(tasks.iter().flatten()).await?;
        let now = self.now();
        let by = acting();
        for ((token, outcome), task) in acks.into_iter().zip(tasks) {
            match task {
                Some(task) if token.is_live_for(&task, now) => {
                    let ending = Held { token: &token, task: &task }.end(outcome, now, calendars.as_deref());
                    if let Some(at) = ending.completion.next_due() {
                        offers.push((token.queue.clone(), task.lane(), at));
                    }
                    requests.push(CompleteRequest::new(token.clone(), ending.completion.clone(), now).by(by.clone()));
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
                Ok(()) => {
                    self.completed(Held { token: &token, task: &task }, &ending);
                    self.lease_ended(&token.queue, task.group.is_some());
                }
                Err(Error::LeaseLost) => self.refused(&token),
                Err(_) => {}
            }
        }
        let mut applied = applied.into_iter();
        for (queue, lane, at) in offers {
            self.waker(&queue).lane(lane).offer(Some(at));
        }
        Ok(results
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|| applied.next().unwrap_or(Err(Error::LeaseLost))))
            .collect())
    }

    /// Extends a live lease to `lease_for` from now; the new expiry.
    pub async fn extend(&self, token: &LeaseToken, lease_for: Duration) -> Result<Timestamp> {
        check_lease_for(lease_for)?;
        self.inner.store.extend(ExtendRequest::new(token.clone(), lease_for, self.now()).by(acting())).await
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
        // The token does not say the task's lane; a look at the other costs one read.
        // (That look also finds a group that the release gave room.)
        self.waker(&token.queue).offer_both(Some(Timestamp::EPOCH));
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
    /// Which of the queue's tasks: without a target, with one, or both (leased in
    /// this order when both are due).
    pub(crate) lanes: &'a [Lane],
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
    /// policies (a repeat in its calendar, looked up in `calendars`: those of
    /// [`Engine::calendars_of`]).
    fn end(self, outcome: Outcome, now: Timestamp, calendars: Option<&CalendarSet>) -> Ending {
        let handler_done = matches!(outcome, Outcome::Done);
        let name = self.task.timing.calendar.as_ref();
        let calendar = name.zip(calendars).and_then(|(name, calendars)| calendars.get(name.as_str()));
        let calendar = calendar.map(|entry| &*entry.calendar);
        let completion = completion_in(self.task, outcome, now, rand::random::<f64>(), calendar);
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

/// What the engine keeps per queue: the wake-up of each lane, whether it is paused,
/// and the consumers' own counts the watchdog reads (who waits, and how many leases
/// were handed out).
#[derive(Debug, Default)]
pub(crate) struct QueueState {
    handler_wake: WakeAt,
    target_wake: WakeAt,
    paused: AtomicBool,
    /// Consumers waiting, per lane ([`Lane::Handler`] first).
    waiting: [AtomicUsize; 2],
    pub(super) leased: AtomicU64,
}

impl QueueState {
    /// The wake-up of one lane's consumers.
    pub(crate) fn lane(&self, lane: Lane) -> &WakeAt {
        match lane {
            Lane::Handler => &self.handler_wake,
            Lane::Target => &self.target_wake,
        }
    }

    /// Offers `at` to both lanes' consumers.
    pub(crate) fn offer_both(&self, at: Option<Timestamp>) {
        for lane in Lane::ALL {
            self.lane(lane).offer(at);
        }
    }

    /// Makes both lanes' consumers look at once, even if their wake times already
    /// said so: `take` then `offer`, so the offer is a lowering and always notifies.
    pub(crate) fn look_now(&self) {
        for lane in Lane::ALL {
            self.lane(lane).take();
            self.lane(lane).offer(Some(Timestamp::EPOCH));
        }
    }

    /// Counts a consumer as waiting for the queue's `lane` while the guard lives.
    pub(crate) fn wait(&self, lane: Lane) -> Waiting<'_> {
        let count = &self.waiting[lane as usize];
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }

    /// Consumers waiting for the queue now, in either lane.
    pub(crate) fn waiting(&self) -> usize {
        Lane::ALL.iter().map(|lane| self.waiting_in(*lane)).sum()
    }

    /// Consumers waiting for the queue's `lane` now.
    pub(crate) fn waiting_in(&self, lane: Lane) -> usize {
        self.waiting[lane as usize].load(Ordering::Relaxed)
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
            self.look_now();
        }
    }
}

/// A consumer counted as waiting; uncounted when dropped.
#[derive(Debug)]
pub(crate) struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
