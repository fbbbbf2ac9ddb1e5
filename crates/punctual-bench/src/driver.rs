//! What every workload drives, in process or over HTTP: schedule tasks with due times,
//! consume a queue while recording each task's fire lag, and count what completed.
//!
//! - [`EngineDriver`] runs an [`Engine`] in this process (embedded or Redis store) and
//!   consumes with a [`Worker`] of [`WORKER_CONCURRENCY`] slots; the lag is handler
//!   start − due, both on the engine's clock (Redis' own time on the Redis store).
//! - [`HttpDriver`] talks to a running `punctual serve` as pull workers do, with the
//!   [`PullLoops`] settings of the command line: `loops` concurrent long polls (`max`
//!   `lease_max`, `wait` `long_poll`), each answer acknowledged with one batch ack
//!   (`POST /v1/acks`) or one ack call per task, in turn: the pull loops of
//!   `punctual_testkit::pull`, the tests' own; the lag is lease receipt (this machine's
//!   clock) − due.
//!
//! Every report states the consumer's settings ([`ConsumerSettings`], from
//! [`Driver::settings`]), since the figures depend on them.
//!
//! A [`Recorder`] counts each key once (keys are decimal numbers), so a second firing
//! of a task is counted as a duplicate rather than hiding a lost one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use punctual_core::{
    BoxError, Delivery, Engine, Event, Outcome, RunningWorker, Store, TaskSpec, Timestamp, TryEnd, Worker,
};
use punctual_testkit::pull::{self, AckEnd, Call, Lease, Next, PullLoop, Stop, StopWhen, Tally, Target};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use punctual_client::{Client, ClientError};

use crate::args::Acks;

/// Handler slots of the in-process worker.
pub(crate) const WORKER_CONCURRENCY: usize = 256;

/// How the HTTP consumer pulls: `punctual bench --loops --lease-max --long-poll --acks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PullLoops {
    pub(crate) loops: u32,
    pub(crate) lease_max: u32,
    pub(crate) long_poll: Duration,
    pub(crate) acks: Acks,
}

impl PullLoops {
    /// How a report states them.
    pub(crate) fn settings(&self) -> ConsumerSettings {
        let PullLoops { loops, lease_max, long_poll, acks } = *self;
        ConsumerSettings::HttpPull { loops, lease_max, long_poll_ms: long_poll.as_millis() as u64, acks }
    }

    /// One of the loops on `queue`; stopped, it drops its long poll in flight.
    fn pull_loop(&self, queue: &str) -> PullLoop {
        PullLoop {
            queue: queue.to_owned(),
            max: self.lease_max,
            lease: None,
            wait: self.long_poll,
            acks: match self.acks {
                Acks::Batch => pull::Acks::Batch,
                Acks::Each => pull::Acks::Each,
            },
            stop_when: StopWhen::Asked,
        }
    }
}

/// How a workload's tasks were consumed, as its report states it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ConsumerSettings {
    /// A [`Worker`] in this process.
    InProcess { concurrency: usize },
    /// Pull loops over HTTP.
    HttpPull { loops: u32, lease_max: u32, long_poll_ms: u64, acks: Acks },
}

impl ConsumerSettings {
    /// One line for a table.
    pub(crate) fn describe(&self) -> String {
        match self {
            ConsumerSettings::InProcess { concurrency } => {
                format!("consumer: a worker in this process, {concurrency} handler slots")
            }
            ConsumerSettings::HttpPull { loops, lease_max, long_poll_ms, acks } => format!(
                "consumer: {loops} pull loops, leases of up to {lease_max}, long poll {}, {}",
                punctual_core::time::format_duration(Duration::from_millis(*long_poll_ms)),
                match acks {
                    Acks::Batch => "one POST /v1/acks per answer",
                    Acks::Each => "one ack call per task",
                }
            ),
        }
    }
}

/// One task to schedule: its key, its due time (epoch ms on the driver's clock; a time
/// already past means due now) and an optional payload.
#[derive(Debug, Clone)]
pub(crate) struct BenchTask {
    pub(crate) key: String,
    pub(crate) due_ms: i64,
    pub(crate) payload: Option<Value>,
    pub(crate) group: Option<String>,
}

impl BenchTask {
    pub(crate) fn new(key: u64, due_ms: i64) -> BenchTask {
        BenchTask { key: key.to_string(), due_ms, payload: None, group: None }
    }

    /// With payload `{"n": key}`, as the earlier benchmarks used.
    pub(crate) fn with_payload(key: u64, due_ms: i64) -> BenchTask {
        BenchTask { payload: Some(json!({ "n": key })), ..BenchTask::new(key, due_ms) }
    }

    /// In group `group`.
    pub(crate) fn in_group(mut self, group: String) -> BenchTask {
        self.group = Some(group);
        self
    }
}

/// What a workload needs of its target.
pub(crate) trait Driver: Clone + Send + Sync + 'static {
    /// Now, in epoch ms, on the clock that decides due times.
    fn now_ms(&self) -> i64;
    /// Schedules `tasks` in `queue` in one call (at most 10,000); durable on return.
    fn schedule(&self, queue: &str, tasks: Vec<BenchTask>) -> impl Future<Output = Result<()>> + Send;
    /// Schedules one task with the single-task call.
    fn schedule_one(&self, queue: &str, task: BenchTask) -> impl Future<Output = Result<()>> + Send;
    /// Starts consuming `queue`: every task fired is recorded, then acknowledged done.
    fn consume(&self, queue: &str, recorder: Arc<Recorder>) -> Result<Consumer>;
    /// Tries of `queue` acknowledged done so far by this driver's consumers.
    fn completed(&self, queue: &str, recorder: &Recorder) -> u64;
    /// Tasks of `queue` still stored, in any state.
    fn remaining(&self, queue: &str) -> impl Future<Output = Result<u64>> + Send;
    /// How [`Driver::consume`] consumes.
    fn settings(&self) -> ConsumerSettings;
}

/// A running consumer; [`Consumer::stop`] ends it.
#[derive(Debug)]
pub(crate) enum Consumer {
    Worker(RunningWorker),
    Http { stop: Stop, workers: Vec<JoinHandle<Result<(), ClientError>>> },
}

impl Consumer {
    /// Stops consuming: running handlers finish (in process); long polls are dropped
    /// (the server releases their leases at once).
    pub(crate) async fn stop(self) -> Result<()> {
        match self {
            Consumer::Worker(worker) => worker.shutdown().await,
            Consumer::Http { stop, workers } => {
                stop.stop();
                for worker in workers {
                    worker.await.context("an HTTP worker panicked")??;
                }
            }
        }
        Ok(())
    }
}

/// Fire lags of one queue, each key counted once.
#[derive(Debug)]
pub(crate) struct Recorder {
    state: Mutex<Fired>,
    /// How many distinct keys make "all fired"; `usize::MAX` while unknown.
    expected: AtomicUsize,
    all_fired: Notify,
    /// Wakes [`Recorder::wait_fired`] at each task's first firing.
    fired_one: Notify,
    /// Acks answered done (HTTP consumer).
    acked: AtomicU64,
    bar: ProgressBar,
}

#[derive(Debug, Default)]
struct Fired {
    lags: Vec<i64>,
    seen: HashSet<u64>,
    duplicates: u64,
}

impl Recorder {
    /// A recorder waiting for `expected` distinct keys, advancing `bar` on each.
    pub(crate) fn new(expected: usize, bar: ProgressBar) -> Arc<Recorder> {
        Arc::new(Recorder {
            state: Mutex::new(Fired::default()),
            expected: AtomicUsize::new(expected),
            all_fired: Notify::new(),
            fired_one: Notify::new(),
            acked: AtomicU64::new(0),
            bar,
        })
    }

    /// Records one firing of `key`, `lag_ms` after its due time.
    pub(crate) fn record(&self, key: &str, lag_ms: i64) {
        let fired = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let Ok(n) = key.parse::<u64>()
                && !state.seen.insert(n)
            {
                state.duplicates += 1;
                return;
            }
            state.lags.push(lag_ms);
            state.lags.len()
        };
        self.bar.inc(1);
        self.fired_one.notify_waiters();
        if fired == self.expected.load(Ordering::SeqCst) {
            self.all_fired.notify_one();
        }
    }

    /// Distinct tasks fired so far.
    pub(crate) fn fired(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).lags.len()
    }

    /// Waits until `count` distinct tasks or more fired.
    pub(crate) async fn wait_fired(&self, count: usize) {
        loop {
            let mut notified = std::pin::pin!(self.fired_one.notified());
            // Registered before the check, so a firing between the two is not missed.
            notified.as_mut().enable();
            if self.fired() >= count {
                return;
            }
            notified.await;
        }
    }

    /// Sets how many distinct tasks make "all fired" (when it was unknown at start).
    pub(crate) fn expect(&self, expected: usize) {
        self.expected.store(expected, Ordering::SeqCst);
        if self.fired() >= expected {
            self.all_fired.notify_one();
        }
    }

    /// Waits until every expected task fired; false after `timeout`.
    pub(crate) async fn wait_all(&self, timeout: Duration) -> bool {
        if self.fired() >= self.expected.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::timeout(timeout, self.all_fired.notified()).await.is_ok()
            || self.fired() >= self.expected.load(Ordering::SeqCst)
    }

    /// The lags recorded (one per distinct key) and the number of duplicate firings.
    pub(crate) fn take(&self) -> (Vec<i64>, u64) {
        self.bar.finish_and_clear();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (std::mem::take(&mut state.lags), state.duplicates)
    }
}

/// The HTTP consumer's pull loops record each lease at receipt, and count the acks
/// confirmed; a failed call ends the run.
impl Tally for Recorder {
    fn leased(&self, leases: &[Lease]) {
        for lease in leases {
            self.record(&lease.key, lease.received_ms - lease.due_ms);
        }
    }

    fn acked(&self, _leases: &[Lease], ends: &[AckEnd], _acked_ms: i64) {
        let confirmed = ends.iter().filter(|end| **end == AckEnd::Confirmed).count();
        self.acked.fetch_add(confirmed as u64, Ordering::Relaxed);
    }

    fn failed(&self, _call: Call, _error: &ClientError, _took: Duration) -> Next {
        Next::Stop
    }
}

/// An engine in this process.
#[derive(Debug)]
pub(crate) struct EngineDriver<S: Store> {
    engine: Engine<S>,
    /// Tries that ended done, per queue, counted from the engine's events.
    done: Arc<Mutex<HashMap<String, u64>>>,
}

impl<S: Store> Clone for EngineDriver<S> {
    fn clone(&self) -> Self {
        EngineDriver { engine: self.engine.clone(), done: Arc::clone(&self.done) }
    }
}

impl<S: Store> EngineDriver<S> {
    pub(crate) fn new(engine: Engine<S>) -> EngineDriver<S> {
        let done = Arc::new(Mutex::new(HashMap::new()));
        let counts = Arc::clone(&done);
        engine.observe(move |event: &Event| {
            if let Event::Completed { queue, ended: TryEnd::Done, .. } = event {
                *counts.lock().expect("done counts poisoned").entry(queue.to_string()).or_insert(0) += 1;
            }
        });
        EngineDriver { engine, done }
    }
}

fn spec(task: &BenchTask) -> TaskSpec {
    let mut spec = TaskSpec::at(Timestamp::from_millis(task.due_ms));
    if let Some(payload) = &task.payload {
        spec = spec.payload(payload.clone());
    }
    if let Some(group) = &task.group {
        spec = spec.group(group.clone());
    }
    spec
}

impl<S: Store> Driver for EngineDriver<S> {
    fn now_ms(&self) -> i64 {
        self.engine.clock().now().as_millis()
    }

    async fn schedule(&self, queue: &str, tasks: Vec<BenchTask>) -> Result<()> {
        let items = tasks.iter().map(|t| (t.key.clone(), spec(t))).collect();
        for result in self.engine.schedule_many(queue, items).await.context("schedule_many")? {
            result.context("schedule_many refused a task")?;
        }
        Ok(())
    }

    async fn schedule_one(&self, queue: &str, task: BenchTask) -> Result<()> {
        self.engine.schedule(queue, &task.key, spec(&task)).await.context("schedule")?;
        Ok(())
    }

    fn consume(&self, queue: &str, recorder: Arc<Recorder>) -> Result<Consumer> {
        let engine = self.engine.clone();
        let worker = Worker::new(self.engine.clone())
            .handle(queue, move |delivery: Delivery| {
                let lag = engine.clock().now().as_millis() - delivery.task.due_at.as_millis();
                recorder.record(delivery.task.key.as_str(), lag);
                async { Ok::<_, BoxError>(Outcome::Done) }
            })
            .concurrency(queue, WORKER_CONCURRENCY)
            .start()
            .context("cannot start the worker")?;
        Ok(Consumer::Worker(worker))
    }

    fn completed(&self, queue: &str, _recorder: &Recorder) -> u64 {
        self.done.lock().expect("done counts poisoned").get(queue).copied().unwrap_or(0)
    }

    async fn remaining(&self, queue: &str) -> Result<u64> {
        let stats = self.engine.stats(Some(queue)).await.context("stats")?;
        Ok(stats.iter().map(|s| s.scheduled + s.leased + s.dead).sum())
    }

    fn settings(&self) -> ConsumerSettings {
        ConsumerSettings::InProcess { concurrency: WORKER_CONCURRENCY }
    }
}

/// A running `punctual serve`, over its HTTP API.
#[derive(Debug, Clone)]
pub(crate) struct HttpDriver {
    client: Client,
    /// The same server, for the pull loops.
    target: Target,
    pull: PullLoops,
}

impl HttpDriver {
    /// A driver of the server at `url`; its requests may take a long poll's wait on
    /// top of the client's usual timeout.
    pub(crate) fn new(url: &punctual_client::Url, token: Option<String>, pull: PullLoops) -> Result<HttpDriver> {
        let client = Client::with_timeout(url, token, punctual_client::REQUEST_TIMEOUT + pull.long_poll)?;
        Ok(HttpDriver { target: Target::new(client.clone()), client, pull })
    }
}

fn task_body(task: &BenchTask) -> Value {
    let mut body = json!({ "due_at": task.due_ms });
    if let Some(payload) = &task.payload {
        body["payload"] = payload.clone();
    }
    if let Some(group) = &task.group {
        body["group"] = json!(group);
    }
    body
}

impl Driver for HttpDriver {
    fn now_ms(&self) -> i64 {
        super::stats::now_millis()
    }

    async fn schedule(&self, queue: &str, tasks: Vec<BenchTask>) -> Result<()> {
        let items: Vec<Value> = tasks
            .iter()
            .map(|t| {
                let mut body = task_body(t);
                body["key"] = json!(t.key);
                body
            })
            .collect();
        let answer =
            self.client.post_json(&["v1", "queues", queue, "tasks"], &json!({ "tasks": items })).await?.json()?;
        let results = answer.value["results"].as_array().context("the batch answer has no results")?;
        if let Some(refused) = results.iter().find(|r| !r["error"].is_null()) {
            bail!("the server refused a task of the batch: {refused}");
        }
        Ok(())
    }

    async fn schedule_one(&self, queue: &str, task: BenchTask) -> Result<()> {
        self.client.put(&["v1", "queues", queue, "tasks", &task.key], &task_body(&task)).await?;
        Ok(())
    }

    fn consume(&self, queue: &str, recorder: Arc<Recorder>) -> Result<Consumer> {
        let stop = Stop::default();
        let workers = (0..self.pull.loops)
            .map(|_| {
                let (pull_loop, target, stop) = (self.pull.pull_loop(queue), self.target.clone(), stop.clone());
                let recorder = Arc::clone(&recorder);
                tokio::spawn(async move { pull_loop.run(&target, &stop, &*recorder).await })
            })
            .collect();
        Ok(Consumer::Http { stop, workers })
    }

    fn completed(&self, _queue: &str, recorder: &Recorder) -> u64 {
        recorder.acked.load(Ordering::Relaxed)
    }

    async fn remaining(&self, queue: &str) -> Result<u64> {
        let stats = self.client.get(&["v1", "queues", queue], &[]).await?.value;
        Ok(["scheduled", "leased", "dead"].iter().map(|s| stats[s].as_u64().unwrap_or(0)).sum())
    }

    fn settings(&self) -> ConsumerSettings {
        self.pull.settings()
    }
}
