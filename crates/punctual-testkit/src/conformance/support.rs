//! Helpers shared by the checks: fixed instants, short builders, store calls that fail
//! loudly with context, waiting with a time limit, and [`Signals`], the engine's events
//! a check waits on instead of sleeping.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use punctual_core::store::{
    CompleteRequest, Completion, LeaseBatch, LeaseRequest, ListRequest, Page, QueueStats, ReapResult, Scheduled,
};
use punctual_core::{
    BoxError, Delivery, Engine, EngineConfig, Error, Event, Handler, Lease, LeaseOptions, LeaseToken, ManualClock,
    NewTask, Observer, Outcome, QueueName, Result, RunningWorker, ScheduleOutcome, Store, Tag, Task, TaskKey,
    TaskState, Timestamp,
};
use tokio::sync::mpsc;

/// How long a check waits for an event before it fails.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// 2026-01-01T00:00:00Z: every check's time starts here.
pub(crate) const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

/// `offset` milliseconds after [`T0`].
pub(crate) fn at_ms(offset: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset)
}

/// `offset` seconds after [`T0`].
pub(crate) fn at_secs(offset: i64) -> Timestamp {
    at_ms(offset * 1_000)
}

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub(crate) fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(crate) fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("the suite uses valid queue names")
}

pub(crate) fn key(name: &str) -> TaskKey {
    TaskKey::new(name).expect("the suite uses valid keys")
}

pub(crate) fn tag(name: &str) -> Tag {
    Tag::new(name).expect("the suite uses valid tags")
}

/// A task with the built-in default policies.
pub(crate) fn new_task(queue_name: &str, key_name: &str, due: Timestamp) -> NewTask {
    NewTask::new(queue(queue_name), key(key_name), due)
}

/// A task due at [`T0`] carrying `tags`.
pub(crate) fn tagged(queue_name: &str, key_name: &str, tags: &[&str]) -> NewTask {
    let mut task = new_task(queue_name, key_name, T0);
    task.tags = tags.iter().map(|t| tag(t)).collect();
    task
}

/// The task's `queue/key`, for messages.
pub(crate) fn name_of(task: &Task) -> String {
    format!("{}/{}", task.queue, task.key)
}

/// `schedule`, failing the check if the call fails as a whole.
pub(crate) async fn schedule<S: Store>(store: &S, tasks: Vec<NewTask>, now: Timestamp) -> Vec<Result<Scheduled>> {
    let count = tasks.len();
    let results = store.schedule(tasks, now).await.unwrap_or_else(|e| panic!("schedule call failed as a whole: {e}"));
    assert_eq!(results.len(), count, "schedule of {count} tasks answered {} results", results.len());
    results
}

/// Schedules one task and returns what the store answered for it.
pub(crate) async fn schedule_one<S: Store>(store: &S, task: NewTask, now: Timestamp) -> Scheduled {
    let what = format!("{}/{}", task.queue, task.key);
    let mut results = schedule(store, vec![task], now).await;
    results.pop().expect("one result").unwrap_or_else(|e| panic!("scheduling {what} failed: {e}"))
}

/// What a schedule of one task answered when a task is under its key afterwards.
#[derive(Debug)]
pub(crate) struct Upserted {
    pub(crate) outcome: ScheduleOutcome,
    /// The task written or kept.
    pub(crate) task: Task,
}

/// Schedules one task, which leaves a task under its key (no dedupe window keeps it),
/// and returns what the store answered for it.
pub(crate) async fn upsert<S: Store>(store: &S, task: NewTask, now: Timestamp) -> Upserted {
    let what = format!("{}/{}", task.queue, task.key);
    let scheduled = schedule_one(store, task, now).await;
    let task = scheduled.task.unwrap_or_else(|| panic!("{what}: no task, kept by {:?}", scheduled.completed));
    Upserted { outcome: scheduled.outcome, task }
}

/// Schedules a task that must be new.
pub(crate) async fn create<S: Store>(store: &S, task: NewTask, now: Timestamp) -> Task {
    let what = format!("{}/{}", task.queue, task.key);
    let scheduled = upsert(store, task, now).await;
    assert_eq!(scheduled.outcome, ScheduleOutcome::Created, "{what} did not exist, so schedule must create it");
    scheduled.task
}

/// The stored task, or `None`.
pub(crate) async fn get<S: Store>(store: &S, queue_name: &str, key_name: &str) -> Option<Task> {
    store
        .get(&queue(queue_name), &key(key_name))
        .await
        .unwrap_or_else(|e| panic!("get {queue_name}/{key_name} failed: {e}"))
}

/// The stored task, which must exist.
pub(crate) async fn stored<S: Store>(store: &S, queue_name: &str, key_name: &str) -> Task {
    get(store, queue_name, key_name).await.unwrap_or_else(|| panic!("{queue_name}/{key_name} should be stored"))
}

pub(crate) async fn lease<S: Store>(
    store: &S,
    queue_name: &str,
    max: u32,
    lease_for: Duration,
    now: Timestamp,
) -> LeaseBatch {
    store
        .lease(LeaseRequest::new(queue(queue_name), max, lease_for, now))
        .await
        .unwrap_or_else(|e| panic!("lease of {queue_name} failed: {e}"))
}

/// Leases with `max` 1 and expects exactly one lease.
pub(crate) async fn lease_one<S: Store>(store: &S, queue_name: &str, lease_for: Duration, now: Timestamp) -> Lease {
    let mut batch = lease(store, queue_name, 1, lease_for, now).await;
    assert_eq!(batch.leases.len(), 1, "expected one due task in {queue_name} at {now}, got {:?}", batch.leases);
    batch.leases.pop().expect("one lease")
}

pub(crate) async fn complete<S: Store>(
    store: &S,
    token: &LeaseToken,
    completion: Completion,
    now: Timestamp,
) -> Result<()> {
    store.complete(CompleteRequest::new(token.clone(), completion, now)).await
}

/// Completes a lease that must be live.
pub(crate) async fn complete_ok<S: Store>(store: &S, token: &LeaseToken, completion: Completion, now: Timestamp) {
    let what = format!("{completion:?} of {}/{}", token.queue, token.key);
    complete(store, token, completion, now).await.unwrap_or_else(|e| panic!("{what} on a live lease failed: {e}"));
}

pub(crate) async fn reap<S: Store>(store: &S, now: Timestamp, limit: u32) -> ReapResult {
    store.reap(now, limit).await.unwrap_or_else(|e| panic!("reap failed: {e}"))
}

pub(crate) async fn list_page<S: Store>(
    store: &S,
    queue_name: &str,
    state: Option<TaskState>,
    limit: u32,
    cursor: Option<String>,
) -> Page {
    page_of(store, ListRequest::new(queue(queue_name), state, limit, cursor)).await
}

/// `list`, failing the check if the call fails.
async fn page_of<S: Store>(store: &S, request: ListRequest) -> Page {
    let what = format!("{:?}", request);
    store.list(request).await.unwrap_or_else(|e| panic!("list {what} failed: {e}"))
}

/// One page of the queue's tasks carrying `tag_name` (in `state`, when given).
pub(crate) async fn list_tagged_page<S: Store>(
    store: &S,
    queue_name: &str,
    tag_name: &str,
    state: Option<TaskState>,
    limit: u32,
    cursor: Option<String>,
) -> Page {
    page_of(store, ListRequest::new(queue(queue_name), state, limit, cursor).tagged(tag(tag_name))).await
}

/// Every task of the queue carrying `tag_name` (in `state`, when given), paging through
/// `limit` at a time: each page no longer than that, and only the last one short.
pub(crate) async fn list_all_tagged<S: Store>(
    store: &S,
    queue_name: &str,
    tag_name: &str,
    state: Option<TaskState>,
    limit: u32,
) -> Vec<Task> {
    let mut tasks = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = list_tagged_page(store, queue_name, tag_name, state, limit, cursor).await;
        assert!(page.tasks.len() <= limit as usize, "a page of {} tasks, over its limit {limit}", page.tasks.len());
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return tasks,
        }
    }
    panic!("listing {queue_name} tagged {tag_name} did not end after 10,000 pages");
}

/// Leases every task of the queue due at `now` and completes each as dead (error
/// "gave up"); their keys.
pub(crate) async fn kill_due<S: Store>(store: &S, queue_name: &str, now: Timestamp) -> Vec<TaskKey> {
    let mut killed = Vec::new();
    loop {
        let leases = lease(store, queue_name, 1000, secs(300), now).await.leases;
        if leases.is_empty() {
            return killed;
        }
        let requests: Vec<CompleteRequest> = leases
            .iter()
            .map(|l| CompleteRequest::new(l.token.clone(), Completion::Dead { error: "gave up".into() }, now))
            .collect();
        let results = store.complete_many(requests).await.unwrap_or_else(|e| panic!("complete_many failed: {e}"));
        assert!(results.iter().all(Result::is_ok), "completing live leases as dead: {results:?}");
        killed.extend(leases.into_iter().map(|l| l.token.key));
    }
}

/// Every task of the queue in the given state (all states for `None`), paging through.
pub(crate) async fn list_all<S: Store>(store: &S, queue_name: &str, state: Option<TaskState>) -> Vec<Task> {
    let mut tasks = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = list_page(store, queue_name, state, 100, cursor).await;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return tasks,
        }
    }
    panic!("listing {queue_name} did not end after 10,000 pages");
}

pub(crate) async fn stats<S: Store>(store: &S, queue_name: Option<&str>) -> Vec<QueueStats> {
    let name = queue_name.map(queue);
    store.stats(name.as_ref()).await.unwrap_or_else(|e| panic!("stats failed: {e}"))
}

/// What the store holds in these queues, and the counts of every queue: compared
/// before and after a call that must change nothing.
#[derive(Debug, PartialEq)]
pub(crate) struct Contents {
    tasks: Vec<Vec<Task>>,
    stats: Vec<QueueStats>,
}

pub(crate) async fn contents<S: Store>(store: &S, queue_names: &[&str]) -> Contents {
    let mut tasks = Vec::new();
    for name in queue_names {
        tasks.push(list_all(store, name, None).await);
    }
    Contents { tasks, stats: stats(store, None).await }
}

/// Fails unless `result` is [`Error::LeaseLost`].
pub(crate) fn assert_lease_lost<T: Debug>(result: Result<T>, what: &str) {
    match result {
        Err(Error::LeaseLost) => {}
        other => panic!("{what}: expected Error::LeaseLost, got {other:?}"),
    }
}

/// Fails unless `result` is [`Error::Invalid`] (or [`Error::PayloadTooLarge`]) about
/// `field`.
pub(crate) fn assert_refused<T: Debug>(result: Result<T>, field: &str, what: &str) {
    match result {
        Err(e @ (Error::Invalid { .. } | Error::PayloadTooLarge { .. })) => {
            assert_eq!(e.field(), Some(field), "{what}: refused, but about the wrong field: {e}");
        }
        other => panic!("{what}: expected a refusal about '{field}', got {other:?}"),
    }
}

/// Runs `future` to completion, failing the check if that takes longer than
/// [`WAIT_LIMIT`].
pub(crate) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT_LIMIT, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {WAIT_LIMIT:?} waiting for {what}"),
    }
}

/// What the racing changes `racers` returned, each as it lands: the winners' answers;
/// a loser must have lost with `Error::Conflict`.
pub(crate) async fn winners<T: 'static>(
    what: &str,
    mut racers: tokio::task::JoinSet<punctual_core::Result<T>>,
) -> Vec<T> {
    let mut won = Vec::new();
    while let Some(joined) = within(what, racers.join_next()).await {
        match joined.expect("a racer panicked") {
            Ok(answer) => won.push(answer),
            Err(punctual_core::Error::Conflict(_)) => {}
            Err(e) => panic!("a racing change failed with {e} instead of Conflict"),
        }
    }
    won
}

/// The keys of `leases`, in order.
pub(crate) fn keys_of(leases: &[Lease]) -> Vec<String> {
    leases.iter().map(|lease| lease.token.key.to_string()).collect()
}

/// An engine on `store` whose time stands at `start` until the check moves it.
pub(crate) fn start_engine<S: Store>(store: S, start: Timestamp) -> (Engine<S>, ManualClock) {
    let clock = ManualClock::new(start);
    let engine = Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())));
    (engine, clock)
}

/// `Engine::lease` without waiting.
pub(crate) async fn engine_lease<S: Store>(
    engine: &Engine<S>,
    queue_name: &str,
    max: u32,
    lease_for: Duration,
) -> Vec<Lease> {
    // Bounded: a store whose `next_due` says work is due when none is leasable would
    // keep the engine asking forever.
    let options = LeaseOptions::default().max(max).lease_for(lease_for);
    within(&format!("Engine::lease of {queue_name}"), engine.lease(queue_name, options))
        .await
        .unwrap_or_else(|e| panic!("Engine::lease of {queue_name} failed: {e}"))
}

/// Shuts down `worker`, then `engine` (closing the store), each within the time limit.
pub(crate) async fn stop<S: Store>(worker: RunningWorker, engine: Engine<S>) {
    within("the worker to shut down", worker.shutdown()).await;
    within("the engine to shut down", engine.shutdown()).await.expect("engine shutdown");
}

/// `Engine::lease` that must hand out exactly one task.
pub(crate) async fn engine_lease_one<S: Store>(engine: &Engine<S>, queue_name: &str, lease_for: Duration) -> Lease {
    let mut leases = engine_lease(engine, queue_name, 1, lease_for).await;
    assert_eq!(leases.len(), 1, "expected one due task in {queue_name} at {}, got {leases:?}", engine.clock().now());
    leases.pop().expect("one lease")
}

/// What the engine told a check, from its events.
#[derive(Debug, Clone)]
pub(crate) enum Signal {
    /// A consumer's lease call on `queue` answered, handing out `leased` tasks.
    Looked { queue: QueueName, leased: usize },
    /// An ack of `key`'s lease was applied (`Ok`) or refused (`LeaseLost`).
    Completed { key: TaskKey, result: Result<()> },
    /// The dead-task retention looked at `queue`, deleting `deleted` dead tasks.
    Swept { queue: QueueName, deleted: u64 },
}

/// The engine's events a check waits on (see [`signals`]).
#[derive(Debug)]
pub(crate) struct Signals {
    receiver: mpsc::UnboundedReceiver<Signal>,
}

/// An observer to start an engine with ([`EngineConfig::observe`]) and the receiving
/// end of what it hears.
pub(crate) fn signals() -> (impl Observer, Signals) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let observer = move |event: &Event| {
        let signal = match event {
            Event::Looked { queue, leased } => Signal::Looked { queue: queue.clone(), leased: *leased },
            Event::Completed { key, .. } => Signal::Completed { key: key.clone(), result: Ok(()) },
            Event::AckRefused { key, .. } => Signal::Completed { key: key.clone(), result: Err(Error::LeaseLost) },
            Event::DeadSwept { queue, deleted } => Signal::Swept { queue: queue.clone(), deleted: *deleted },
            _ => return,
        };
        // Nobody listening is fine: the check only needed some of the reports.
        let _ = sender.send(signal);
    };
    (observer, Signals { receiver })
}

/// An engine on `store`, whose time stands at `start` until the check moves it, and
/// what it tells the check.
pub(crate) fn start_signalling_engine<S: Store>(store: S, start: Timestamp) -> (Engine<S>, ManualClock, Signals) {
    let (observer, signals) = signals();
    let clock = ManualClock::new(start);
    let config = EngineConfig::default().clock(Arc::new(clock.clone())).observe(observer);
    (Engine::start(store, config), clock, signals)
}

impl Signals {
    /// Waits (up to [`WAIT_LIMIT`]) for the first report that `pick` accepts, skipping
    /// the others.
    pub(crate) async fn wait_for<T>(&mut self, what: &str, mut pick: impl FnMut(Signal) -> Option<T>) -> T {
        within(what, async {
            loop {
                match self.receiver.recv().await {
                    Some(signal) => {
                        if let Some(found) = pick(signal) {
                            return found;
                        }
                    }
                    None => panic!("the engine was dropped while waiting for {what}"),
                }
            }
        })
        .await
    }

    /// Waits for the completion of `key_name` and returns what the engine said of it.
    pub(crate) async fn completion_of(&mut self, key_name: &str) -> Result<()> {
        let wanted = key(key_name);
        self.wait_for(&format!("the ack of {key_name}"), |signal| match signal {
            Signal::Completed { key, result } if key == wanted => Some(result),
            _ => None,
        })
        .await
    }

    /// Waits for the completions of all of `key_names`, in whatever order they come;
    /// what the engine said of each, in the order of `key_names`.
    pub(crate) async fn completions_of(&mut self, key_names: &[&str]) -> Vec<Result<()>> {
        let mut answers: Vec<Option<Result<()>>> = vec![None; key_names.len()];
        let what = format!("the acks of {key_names:?}");
        self.wait_for(&what, |signal| {
            if let Signal::Completed { key, result } = signal
                && let Some(slot) = key_names.iter().position(|name| key.as_str() == *name)
            {
                answers[slot].get_or_insert(result);
            }
            answers.iter().all(Option::is_some).then_some(())
        })
        .await;
        answers.into_iter().map(|answer| answer.expect("every ack arrived")).collect()
    }

    /// Forgets every report so far.
    pub(crate) fn clear(&mut self) {
        while self.receiver.try_recv().is_ok() {}
    }

    /// Waits for a sweep of `queue_name`'s dead tasks; how many it deleted.
    pub(crate) async fn sweep_of(&mut self, queue_name: &str) -> u64 {
        let wanted = queue(queue_name);
        self.wait_for(&format!("a sweep of {queue_name}'s dead tasks"), |signal| match signal {
            Signal::Swept { queue, deleted } if queue == wanted => Some(deleted),
            _ => None,
        })
        .await
    }

    /// Waits for a consumer's lease call on `queue_name` to answer; how many tasks it
    /// handed out.
    pub(crate) async fn lease_on(&mut self, queue_name: &str) -> usize {
        let wanted = queue(queue_name);
        self.wait_for(&format!("a lease call on {queue_name}"), |signal| match signal {
            Signal::Looked { queue, leased } if queue == wanted => Some(leased),
            _ => None,
        })
        .await
    }
}

/// One call of a handler, as it reported it.
#[derive(Debug, Clone)]
pub(crate) struct Fired {
    pub(crate) key: String,
    pub(crate) attempt: u32,
    pub(crate) delivery_id: String,
    /// The engine's time when the handler ran.
    pub(crate) at: Timestamp,
}

impl Fired {
    pub(crate) fn of(delivery: &Delivery, clock: &ManualClock) -> Fired {
        use punctual_core::Clock;
        Fired {
            key: delivery.task.key.to_string(),
            attempt: delivery.attempt,
            delivery_id: delivery.delivery_id.clone(),
            at: clock.now(),
        }
    }
}

/// A handler that reports each call on `fired` and answers what `decide` says.
pub(crate) fn reporting_handler(
    clock: ManualClock,
    fired: mpsc::UnboundedSender<Fired>,
    decide: impl Fn(&Delivery) -> Outcome + Send + Sync + 'static,
) -> impl Handler {
    move |delivery: Delivery| {
        let outcome = decide(&delivery);
        let _ = fired.send(Fired::of(&delivery, &clock));
        async move { Ok::<_, BoxError>(outcome) }
    }
}

/// Waits for the next handler call.
pub(crate) async fn next_fired(fired: &mut mpsc::UnboundedReceiver<Fired>, what: &str) -> Fired {
    within(what, fired.recv()).await.unwrap_or_else(|| panic!("every handler was dropped while waiting for {what}"))
}
