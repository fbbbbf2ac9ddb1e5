//! Handlers and the worker that runs them: the strategy pattern of the seeds, where the
//! queue selects the handler.
//!
//! A [`Worker`] runs one dispatcher per handled queue. A dispatcher sleeps until the
//! queue's next due time (woken early by earlier tasks), leases as many tasks as the
//! queue has free handler slots, and runs each handler in its own tokio task while a
//! heartbeat renews the lease. Whatever a handler does — return an outcome, return an
//! error, panic — ends in exactly one completion; a handler never takes a dispatcher
//! down. A completion the store did not answer is asked again a few times (fenced by
//! the lease, so never applied twice) before the worker leaves it to the lease expiry.
//! On shutdown, dispatchers stop leasing, running handlers get a grace period, and
//! leases of handlers still running after it are released so the tasks fire again.
//!
//! A task is leased only when a handler slot is free, so no lease waits for a slot: a
//! task waiting for the queue's concurrency is still `scheduled`, and a cancel removes
//! it for good. A handler that waits after being handed its lease (a rate limit, say)
//! calls [`Delivery::confirm_lease`] before it acts: the store then says whether the
//! lease is still live, atomically with cancels and replaces, and a handler told it is
//! lost does nothing. Such a try ends in no completion (there is no lease left to
//! complete); that is the one exception to "exactly one completion".

use crate::history::{DeliveryReport, clip};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::engine::{Engine, LeaseWait};
use crate::error::{Error, Result};
use crate::model::{QueueName, Task};
use crate::outcome::Outcome;
use crate::store::{Lease, LeaseToken, Store};
use crate::target::Lane;
use crate::time::Timestamp;

/// An error a handler returns; it becomes a retry.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One try of one occurrence of a task, handed to a handler.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Delivery {
    /// The task as leased.
    pub task: Task,
    /// This try's ordinal, 1 for the first.
    pub attempt: u32,
    /// The same for every try of this occurrence: use it to make the handler
    /// idempotent.
    pub delivery_id: String,
    /// When the lease ends unless renewed (the worker renews it while the handler runs).
    pub lease_expires_at: Timestamp,
    /// The time the occurrence was scheduled for (see [`Lease::scheduled_for`]).
    pub scheduled_for: Timestamp,
    /// The later occurrences this firing stands in for (see [`Lease::missed`]).
    pub missed: u32,
    /// The lease on the store, for [`Delivery::confirm_lease`].
    hold: LeaseHold,
}

impl Delivery {
    fn of(lease: &Lease, hold: LeaseHold) -> Delivery {
        Delivery {
            task: lease.task.clone(),
            attempt: lease.attempt,
            delivery_id: lease.delivery_id.clone(),
            lease_expires_at: lease.expires_at,
            scheduled_for: lease.scheduled_for,
            missed: lease.missed,
            hold,
        }
    }

    /// Asks the store whether this try's lease is still live and renews it for the
    /// worker's lease time; the new expiry.
    ///
    /// Call it after waiting (for a rate limit, a connection, anything) and before
    /// doing what cannot be undone, such as sending a message. The check is one atomic
    /// store operation, so a cancel or a replace of the task that the store applied
    /// before it, or the lease's expiry, is always seen: [`Error::LeaseLost`]. Then
    /// do nothing and return any outcome: the worker completes nothing for a lost
    /// lease (the task is gone, belongs to a newer version, or is another try's now).
    /// Any other error means the lease could not be confirmed (the store is
    /// unreachable): do not act either, and return a retry.
    pub async fn confirm_lease(&self) -> Result<Timestamp> {
        let renewed = self.hold.renew.renew().await;
        if matches!(renewed, Err(Error::LeaseLost)) {
            self.hold.lost.store(true, Ordering::SeqCst);
        }
        renewed
    }

    /// Keeps what the delivery's far end answered (an HTTP status, the first bytes of
    /// the body) with this try's `acked` event in the task's history.
    pub fn note_answer(&self, status: Option<u16>, answer: &str) {
        if let Ok(mut noted) = self.hold.answer.lock() {
            *noted = Some((status, clip(answer).to_owned()));
        }
    }
}

/// What a delivery's far end answered: an HTTP status (if any) and the body's first
/// bytes.
type NotedAnswer = (Option<u16>, String);

/// A delivery's hold on its lease: renews it on request, and remembers when the store
/// said it was lost, so the worker does not complete it.
#[derive(Clone)]
struct LeaseHold {
    renew: Arc<dyn Renew>,
    lost: Arc<AtomicBool>,
    /// What [`Delivery::note_answer`] noted.
    answer: Arc<std::sync::Mutex<Option<NotedAnswer>>>,
}

impl fmt::Debug for LeaseHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseHold").field("lost", &self.lost.load(Ordering::SeqCst)).finish()
    }
}

/// Object-safe lease renewal, so [`Delivery`] needs no store type parameter.
trait Renew: Send + Sync {
    fn renew(&self) -> Pin<Box<dyn Future<Output = Result<Timestamp>> + Send + '_>>;
}

struct EngineLease<S: Store> {
    engine: Engine<S>,
    token: LeaseToken,
    lease_for: Duration,
}

impl<S: Store> Renew for EngineLease<S> {
    fn renew(&self) -> Pin<Box<dyn Future<Output = Result<Timestamp>> + Send + '_>> {
        Box::pin(async move {
            let expiry = self.engine.extend(&self.token, self.lease_for).await?;
            self.engine.lease_expires(expiry);
            Ok(expiry)
        })
    }
}

/// Runs tasks of a queue. Implemented by async closures
/// `|delivery: Delivery| async move { Ok::<_, E>(Outcome::Done) }` (any `E` that
/// converts into [`BoxError`], e.g. `anyhow::Error`) and by your own types.
pub trait Handler: Send + Sync + 'static {
    /// Handles one try; an `Err` becomes [`Outcome::retry`].
    fn handle(&self, delivery: Delivery) -> impl Future<Output = Result<Outcome, BoxError>> + Send;
}

impl<F, Fut, E> Handler for F
where
    F: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, E>> + Send + 'static,
    E: Into<BoxError>,
{
    fn handle(&self, delivery: Delivery) -> impl Future<Output = Result<Outcome, BoxError>> + Send {
        let fut = self(delivery);
        async move { fut.await.map_err(Into::into) }
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Outcome, BoxError>> + Send>>;

/// Object-safe form of [`Handler`] so one worker can hold many handler types.
trait ErasedHandler: Send + Sync {
    fn call(self: Arc<Self>, delivery: Delivery) -> BoxFuture;
}

struct Erased<H>(H);

impl<H: Handler> ErasedHandler for Erased<H> {
    fn call(self: Arc<Self>, delivery: Delivery) -> BoxFuture {
        Box::pin(async move { self.0.handle(delivery).await })
    }
}

struct Route {
    handler: Arc<dyn ErasedHandler>,
    concurrency: usize,
    lanes: &'static [Lane],
}

/// Routes queues to handlers. Build with [`Worker::new`], [`Worker::handle`] and the
/// setters, then [`Worker::start`].
pub struct Worker<S: Store> {
    engine: Engine<S>,
    routes: HashMap<String, Route>,
    default_concurrency: usize,
    lease_for: Duration,
    grace: Duration,
}

impl<S: Store> fmt::Debug for Worker<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker").field("queues", &self.routes.keys().collect::<Vec<_>>()).finish()
    }
}

impl<S: Store> Worker<S> {
    /// A worker with no handlers: 16 concurrent handlers per queue, 15 s leases renewed
    /// every 5 s, a 30 s shutdown grace period.
    pub fn new(engine: Engine<S>) -> Worker<S> {
        Worker {
            engine,
            routes: HashMap::new(),
            default_concurrency: 16,
            lease_for: Duration::from_secs(15),
            grace: Duration::from_secs(30),
        }
    }

    /// Runs `handler` for tasks of `queue` (replacing an earlier one for that queue).
    pub fn handle(mut self, queue: &str, handler: impl Handler) -> Worker<S> {
        let (concurrency, lanes) = self
            .routes
            .get(queue)
            .map_or((self.default_concurrency, &[Lane::Handler][..]), |r| (r.concurrency, r.lanes));
        let route = Route { handler: Arc::new(Erased(handler)), concurrency, lanes };
        self.routes.insert(queue.to_owned(), route);
        self
    }

    /// At most `n` handlers of `queue` at once (call after [`Worker::handle`]).
    pub fn concurrency(mut self, queue: &str, n: usize) -> Worker<S> {
        if let Some(route) = self.routes.get_mut(queue) {
            route.concurrency = n;
        }
        self
    }

    /// Which of `queue`'s tasks the handler runs (call after [`Worker::handle`]): those
    /// without a target (the default, `&[Lane::Handler]`), those with one
    /// (`&[Lane::Target]`, for a server delivering targets), or both (`&Lane::ALL`),
    /// sharing the queue's concurrency.
    pub fn lanes(mut self, queue: &str, lanes: &'static [Lane]) -> Worker<S> {
        if let Some(route) = self.routes.get_mut(queue) {
            route.lanes = lanes;
        }
        self
    }

    /// How long each lease lasts; it is renewed every third of that while the handler
    /// runs, so a crashed process's tasks come back within this time.
    pub fn lease_for(mut self, d: Duration) -> Worker<S> {
        self.lease_for = d;
        self
    }

    /// How long shutdown waits for running handlers before releasing their leases.
    pub fn grace(mut self, d: Duration) -> Worker<S> {
        self.grace = d;
        self
    }

    /// Starts a dispatcher per queue on the current tokio runtime.
    pub fn start(self) -> Result<RunningWorker> {
        if self.lease_for < Duration::from_secs(1) {
            return Err(Error::invalid("lease_for", "a lease lasts at least 1s"));
        }
        let stop_leasing = CancellationToken::new();
        let abort_handlers = CancellationToken::new();
        let mut dispatchers = JoinSet::new();
        for (queue, route) in self.routes {
            let queue = QueueName::new(queue)?;
            if route.concurrency == 0 {
                return Err(Error::invalid(
                    "concurrency",
                    format!("queue '{queue}' needs a concurrency of at least 1"),
                ));
            }
            let dispatcher = Dispatcher {
                engine: self.engine.clone(),
                queue,
                handler: route.handler,
                lanes: route.lanes,
                slots: Arc::new(Semaphore::new(route.concurrency)),
                concurrency: route.concurrency,
                lease_for: self.lease_for,
                stop_leasing: stop_leasing.clone(),
                abort_handlers: abort_handlers.clone(),
            };
            dispatchers.spawn(dispatcher.run());
        }
        Ok(RunningWorker { stop_leasing, abort_handlers, dispatchers, grace: self.grace })
    }
}

/// A started [`Worker`]. Dropping it without [`RunningWorker::shutdown`] stops nothing.
#[derive(Debug)]
pub struct RunningWorker {
    stop_leasing: CancellationToken,
    abort_handlers: CancellationToken,
    dispatchers: JoinSet<()>,
    grace: Duration,
}

impl RunningWorker {
    /// Stops leasing, waits up to the grace period for running handlers to finish and
    /// acknowledge, then releases the leases of those still running (their tasks fire
    /// again, attempts not counted).
    pub async fn shutdown(mut self) {
        self.stop_leasing.cancel();
        let all_done = async { while self.dispatchers.join_next().await.is_some() {} };
        if tokio::time::timeout(self.grace, all_done).await.is_err() {
            tracing::warn!(grace = ?self.grace, "handlers still running after the grace period; releasing their leases");
            self.abort_handlers.cancel();
            while self.dispatchers.join_next().await.is_some() {}
        }
    }
}

struct Dispatcher<S: Store> {
    engine: Engine<S>,
    queue: QueueName,
    handler: Arc<dyn ErasedHandler>,
    lanes: &'static [Lane],
    slots: Arc<Semaphore>,
    concurrency: usize,
    lease_for: Duration,
    stop_leasing: CancellationToken,
    abort_handlers: CancellationToken,
}

impl<S: Store> Dispatcher<S> {
    /// Leases while there are free slots; returns once leasing stopped and every
    /// handler it started has completed.
    async fn run(self) {
        let mut running = JoinSet::new();
        let mut failures = 0u32;
        loop {
            // Wait for a free slot (or stop).
            let first = tokio::select! {
                permit = Arc::clone(&self.slots).acquire_owned() => permit.expect("semaphore never closed"),
                _ = self.stop_leasing.cancelled() => break,
            };
            let free = 1 + self.slots.available_permits().min(self.concurrency);
            let wait = LeaseWait {
                queue: &self.queue,
                lanes: self.lanes,
                max: free.min(1000) as u32,
                lease_for: self.lease_for,
                deadline: Timestamp::from_millis(i64::MAX),
                cancel: Some(&self.stop_leasing),
            };
            let leased = self.engine.lease_until(wait).await;
            let leases = match leased {
                Ok(leases) => {
                    failures = 0;
                    leases
                }
                Err(Error::ShuttingDown) => break,
                Err(e) => {
                    failures += 1;
                    if failures == 1 {
                        tracing::warn!(queue = %self.queue, error = %e, "cannot lease; retrying with backoff");
                    }
                    let pause = Duration::from_millis(50u64 << failures.min(7));
                    tokio::select! {
                        _ = self.engine.sleep(pause) => {}
                        _ = self.stop_leasing.cancelled() => break,
                    }
                    continue;
                }
            };
            let mut first = Some(first);
            for lease in leases {
                let permit = match first.take() {
                    Some(permit) => permit,
                    None => Arc::clone(&self.slots).acquire_owned().await.expect("semaphore never closed"),
                };
                let run = RunOne {
                    engine: self.engine.clone(),
                    handler: Arc::clone(&self.handler),
                    lease,
                    lease_for: self.lease_for,
                    abort: self.abort_handlers.clone(),
                };
                running.spawn(async move {
                    run.run().await;
                    drop(permit);
                });
            }
            // Reap finished handler tasks so the set stays small.
            while running.try_join_next().is_some() {}
        }
        while running.join_next().await.is_some() {}
    }
}

struct RunOne<S: Store> {
    engine: Engine<S>,
    handler: Arc<dyn ErasedHandler>,
    lease: Lease,
    lease_for: Duration,
    abort: CancellationToken,
}

impl<S: Store> RunOne<S> {
    async fn run(self) {
        let token = &self.lease.token;
        let lost = Arc::new(AtomicBool::new(false));
        let renew = EngineLease { engine: self.engine.clone(), token: token.clone(), lease_for: self.lease_for };
        let answer = Arc::new(std::sync::Mutex::new(None));
        let hold = LeaseHold { renew: Arc::new(renew), lost: Arc::clone(&lost), answer: Arc::clone(&answer) };
        let started = self.engine.clock().now();
        let delivery = Delivery::of(&self.lease, hold);
        // Whatever the handler logs carries the task's fields (`Instrument`: a span
        // entered with a guard would not follow the future across awaits).
        let span = tracing::info_span!("task", queue = %token.queue, key = %token.key, attempt = delivery.attempt, delivery_id = %delivery.delivery_id);
        let mut handler = tokio::spawn(Arc::clone(&self.handler).call(delivery).instrument(span));
        let heartbeat = self.lease_for / 3;
        let mut renewing = true;
        let joined = loop {
            tokio::select! {
                joined = &mut handler => break joined,
                _ = self.engine.sleep(heartbeat), if renewing => {
                    match self.engine.extend(token, self.lease_for).await {
                        Ok(expiry) => self.engine.lease_expires(expiry),
                        Err(Error::LeaseLost) => {
                            tracing::info!(queue = %token.queue, key = %token.key, "task was cancelled or replaced while its handler ran");
                            renewing = false;
                        }
                        Err(e) => tracing::warn!(queue = %token.queue, key = %token.key, error = %e, "cannot renew lease"),
                    }
                }
                _ = self.abort.cancelled() => {
                    handler.abort();
                    if let Err(e) = self.engine.release(token).await {
                        tracing::warn!(queue = %token.queue, key = %token.key, error = %e, "cannot release lease at shutdown; it will expire");
                    }
                    return;
                }
            }
        };
        let outcome = match joined {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => Outcome::retry(error),
            Err(join) if join.is_panic() => {
                Outcome::retry(format!("handler panicked: {}", panic_message(join.into_panic())))
            }
            Err(_) => Outcome::retry("handler was cancelled"),
        };
        if lost.load(Ordering::SeqCst) {
            tracing::info!(queue = %token.queue, key = %token.key, "handler stood down: the task was cancelled or replaced, or its lease expired, while it waited");
            return;
        }
        let took = self.engine.clock().now().as_millis().saturating_sub(started.as_millis());
        let (status, answer) = answer.lock().ok().and_then(|mut noted| noted.take()).unzip();
        let report = DeliveryReport::new(u64::try_from(took).ok(), status.flatten(), answer);
        self.acknowledge(outcome, report).await;
    }

    /// Completes the lease with `outcome`. A completion the store did not answer is
    /// asked again, [`ACK_TRIES`] tries in all: giving up costs a second delivery when
    /// the lease expires, and a repeat is harmless (completions are fenced, so one the
    /// store applied without answering refuses the repeat, never applies it twice).
    async fn acknowledge(&self, outcome: Outcome, report: DeliveryReport) {
        let token = &self.lease.token;
        let mut pause = ACK_RETRY_PAUSE;
        for tries in 1..=ACK_TRIES {
            let error = match self.engine.complete_reported(&self.lease, outcome.clone(), report.clone()).await {
                Ok(()) => return,
                Err(Error::LeaseLost) if tries == 1 => {
                    tracing::info!(queue = %token.queue, key = %token.key, "ack refused: the lease expired or the task was replaced or cancelled");
                    return;
                }
                Err(Error::LeaseLost) => {
                    tracing::info!(queue = %token.queue, key = %token.key, tries, "ack refused when asked again: the lease expired meanwhile, or the unanswered try was applied");
                    return;
                }
                Err(e @ Error::Unavailable(_)) if tries < ACK_TRIES => e,
                Err(e) => {
                    tracing::warn!(queue = %token.queue, key = %token.key, error = %e, tries, "cannot acknowledge; the lease will expire and the task fire again");
                    return;
                }
            };
            tracing::info!(queue = %token.queue, key = %token.key, error = %error, "the store did not answer an ack; asking again");
            tokio::select! {
                _ = self.engine.sleep(pause) => {}
                _ = self.abort.cancelled() => {
                    tracing::warn!(queue = %token.queue, key = %token.key, error = %error, "cannot acknowledge before shutdown; the lease will expire and the task fire again");
                    return;
                }
            }
            pause *= 4;
        }
    }
}

/// How many times a worker tries one completion the store does not answer
/// ([`RunOne::acknowledge`]), and its pause before the second try (four times longer
/// before each later one).
const ACK_TRIES: u32 = 3;
const ACK_RETRY_PAUSE: Duration = Duration::from_millis(100);

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_owned()
    }
}
