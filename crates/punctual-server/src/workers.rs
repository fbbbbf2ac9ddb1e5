//! The push workers this node runs: one per queue with an action, from the config
//! file or from settings set through the API, kept by one follower ([`QueueWorkers`]).
//! The file's are started at start-up ([`QueueWorkers::start`], which fails on one
//! that cannot start) and follow the file as each SIGHUP applies it (started,
//! replaced when their action changed, stopped when the file no longer gives one).
//! Those of queues whose settings were set through the API follow the store's records:
//! task defaults applied to new tasks, and a push worker per queue with an action —
//! started, re-tuned (a new action, concurrency or rate) and stopped as the stored
//! settings change. Every node follows the store's records (the engine reads them
//! every [`RECORDS_POLL`](punctual_core::RECORDS_POLL)), so a change made through any
//! node applies on all of them within a second, without a restart.
//!
//! Tasks with an HTTP target are delivered here too: a queue's push worker (config or
//! API) serves both lanes, and every other queue known to hold such tasks (those with
//! tasks at start-up, and those the engine learns of: written here, or woken by
//! another node) gets a worker on its target lane alone, with the concurrency and rate
//! of its settings if it has any. That worker is never listed as the queue's action, so
//! pull workers still lease the queue's other tasks.
//!
//! Invariants: a queue the config file holds is never run by its stored settings (a
//! queue the file takes over loses its API worker and defaults first; one the file
//! drops gets its stored settings, if any, after the file's worker stopped); a worker
//! being replaced stops leasing first and its running deliveries get the grace period,
//! so deliveries of one queue never run under two settings at once for longer than
//! that; an action that cannot be built (a file read again: its new action; settings
//! that no longer validate: an environment variable they name went away) leaves the
//! queue as it runs, with the error logged (once per version for stored settings).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use punctual_actions::{Action, ActionSpec, Rate, RateSlots, Runtime};
use punctual_core::{Clock, Engine, Lane, QueueName, QueueRecord, RunningWorker, Store, Worker};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::config::settings::QueueSettings;
use crate::shared::FileQueues;
use crate::state::AppState;

/// A push worker this node runs for a queue of the config file, and the action it
/// runs, as the file gave it.
struct FileWorker {
    spec: ActionSpec,
    action: Action,
    worker: RunningWorker,
}

/// A push worker this node runs for an API queue, and what of the settings it runs
/// (`action`, `concurrency`, `rate`).
struct Running {
    delivery: serde_json::Value,
    kind: &'static str,
    action: Action,
    worker: RunningWorker,
}

/// Follows the config file's queues and the store's records, and keeps this node's
/// push workers as they say.
pub(crate) struct QueueWorkers<S: Store> {
    state: AppState<S>,
    runtime: Runtime,
    grace: Duration,
    /// The config file's queues as last applied here.
    file: Arc<FileQueues>,
    /// The workers of the file's queues with an action.
    file_workers: HashMap<QueueName, FileWorker>,
    /// The workers of the queues with an action set through the API.
    running: HashMap<QueueName, Running>,
    /// The document of each queue as last applied (its defaults), and the version of
    /// each whose settings failed to validate (logged once).
    applied: HashMap<QueueName, String>,
    failed: HashMap<QueueName, u64>,
    /// The concurrency and rate of each API queue without an action, for its targets.
    limits: HashMap<QueueName, Limits>,
    /// The queues known to hold tasks with a target.
    target_queues: BTreeSet<QueueName>,
    /// The target-lane workers of queues without an action, with the limits they run by.
    targets: HashMap<QueueName, (Limits, RunningWorker)>,
}

/// How many target deliveries of a queue run at once, and at what rate.
type Limits = (usize, Option<String>);

impl<S: Store> QueueWorkers<S> {
    /// Starts a worker per queue with an action in the config file `settings`, as
    /// `state` holds them ([`AppState::apply_config_file`]), shown at once in
    /// `/metrics` and lease refusals; on an error, stops those it started. Then
    /// [`QueueWorkers::follow`].
    pub(crate) async fn start(
        state: AppState<S>,
        settings: &Settings,
        clock: Arc<dyn Clock>,
        rates: Option<Arc<dyn RateSlots>>,
    ) -> anyhow::Result<QueueWorkers<S>> {
        let mut runtime = Runtime::with_egress(clock, settings.egress.clone())
            .context("cannot set up the actions")?
            .sign_targets_with(settings.targets_secret.clone());
        if let Some(rates) = rates {
            runtime = runtime.shared_rates(rates);
        }
        if settings.telemetry.is_some() {
            runtime = runtime.trace_headers(crate::telemetry::trace_headers());
        }
        let mut workers = QueueWorkers {
            file: state.file_queues(),
            state,
            runtime,
            grace: settings.grace_period,
            file_workers: HashMap::new(),
            running: HashMap::new(),
            applied: HashMap::new(),
            failed: HashMap::new(),
            limits: HashMap::new(),
            target_queues: BTreeSet::new(),
            targets: HashMap::new(),
        };
        for (queue, spec) in &workers.file.actions.clone() {
            let started = Action::build(spec, &workers.runtime)
                .with_context(|| format!("cannot build the action of queue {queue}"))
                .and_then(|action| {
                    let worker = start_worker(&workers.state.inner.engine, queue, &action, spec, workers.grace)
                        .with_context(|| format!("cannot start the worker of queue {queue}"))?;
                    Ok(FileWorker { spec: spec.clone(), action, worker })
                });
            match started {
                Ok(started) => {
                    tracing::info!(queue = %queue, kind = started.action.kind(), concurrency = spec.concurrency, "push action ready");
                    workers.file_workers.insert(queue.clone(), started);
                }
                Err(e) => {
                    stop_workers(workers.file_workers.into_values().map(|running| running.worker)).await;
                    return Err(e);
                }
            }
        }
        workers.show_actions();
        Ok(workers)
    }

    /// The runtime the actions run in.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Applies every change of the config file's queues and of the records until
    /// `stop`, then stops every worker (running deliveries get the grace period).
    pub(crate) async fn follow(mut self, stop: CancellationToken) {
        let engine = self.state.inner.engine.clone();
        let mut file = self.state.watch_file_queues();
        let mut records = engine.watch_queue_records();
        let mut target_queues = engine.watch_target_queues();
        // Queues holding tasks now may hold tasks with a target.
        match engine.stats(None).await {
            Ok(stats) => self.target_queues.extend(stats.into_iter().map(|s| s.name)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the queues at start-up; their targets wait for a wake-up")
            }
        }
        loop {
            let file_queues = file.borrow_and_update().clone();
            if !Arc::ptr_eq(&file_queues, &self.file) {
                self.apply_file(file_queues).await;
            }
            let current: Arc<Vec<QueueRecord>> = records.borrow_and_update().clone();
            self.target_queues.extend(target_queues.borrow_and_update().iter().cloned());
            self.apply(&current).await;
            self.deliver_targets().await;
            tokio::select! {
                changed = file.changed() => if changed.is_err() { break },
                changed = records.changed() => if changed.is_err() { break },
                changed = target_queues.changed() => if changed.is_err() { break },
                _ = stop.cancelled() => break,
            }
        }
        let workers = self.running.drain().map(|(_, running)| running.worker);
        let workers = workers.chain(self.file_workers.drain().map(|(_, running)| running.worker));
        stop_workers(workers.chain(self.targets.drain().map(|(_, (_, worker))| worker))).await;
    }

    /// Puts the file's actions to work as `file` gives them: a worker stopped where it
    /// gives none any more, started where it gives a new one, replaced where it
    /// changed one (built first: an action that cannot be built leaves the running
    /// one). A queue the file takes over loses its API worker and defaults first.
    async fn apply_file(&mut self, file: Arc<FileQueues>) {
        self.file = file;
        let file = Arc::clone(&self.file);
        let dropped: Vec<QueueName> =
            self.file_workers.keys().filter(|q| !file.actions.iter().any(|(queue, _)| queue == *q)).cloned().collect();
        for queue in dropped {
            if let Some(old) = self.file_workers.remove(&queue) {
                tracing::info!(queue = %queue, kind = old.action.kind(),
                    "push action stopped: the config file no longer gives the queue one");
                old.worker.shutdown().await;
            }
        }
        for (queue, spec) in &file.actions {
            if self.file_workers.get(queue).is_some_and(|running| running.spec == *spec) {
                continue;
            }
            self.clear(queue).await;
            let action = match Action::build(spec, &self.runtime) {
                Ok(action) => action,
                Err(e) => {
                    tracing::error!(queue = %queue, error = %e,
                        "cannot build the queue's action from the config file; the one running (if any) goes on");
                    continue;
                }
            };
            // Its worker serves both lanes: the one delivering its targets alone stops.
            let old = self.file_workers.remove(queue).map(|old| old.worker);
            let targets = self.targets.remove(queue).map(|(_, worker)| worker);
            stop_workers(old.into_iter().chain(targets)).await;
            match start_worker(&self.state.inner.engine, queue, &action, spec, self.grace) {
                Ok(worker) => {
                    tracing::info!(queue = %queue, kind = action.kind(), concurrency = spec.concurrency,
                        "push action ready (config file reloaded)");
                    self.file_workers.insert(queue.clone(), FileWorker { spec: spec.clone(), action, worker });
                }
                Err(e) => tracing::error!(queue = %queue, error = %e, "cannot start the queue's push action"),
            }
        }
        self.show_actions();
    }

    /// Runs a target-lane worker for each queue known to hold tasks with a target that
    /// has no push worker of its own, with its current limits.
    async fn deliver_targets(&mut self) {
        let config = &self.file.settings;
        let wanted: HashMap<QueueName, Limits> = self
            .target_queues
            .iter()
            .filter(|q| !self.running.contains_key(*q) && !self.file_workers.contains_key(*q))
            .map(|q| {
                let limits = match config.get(q) {
                    Some(_) => (punctual_actions::ActionSpec::DEFAULT_CONCURRENCY, None),
                    None => {
                        self.limits.get(q).cloned().unwrap_or((punctual_actions::ActionSpec::DEFAULT_CONCURRENCY, None))
                    }
                };
                (q.clone(), limits)
            })
            .collect();
        let stale: Vec<QueueName> = self
            .targets
            .iter()
            .filter(|(q, (limits, _))| wanted.get(*q) != Some(limits))
            .map(|(q, _)| q.clone())
            .collect();
        for queue in stale {
            if let Some((_, worker)) = self.targets.remove(&queue) {
                worker.shutdown().await;
            }
        }
        for (queue, limits) in wanted {
            if self.targets.contains_key(&queue) {
                continue;
            }
            let (concurrency, rate) = &limits;
            let rate = rate.as_deref().and_then(|r| Rate::parse(r).ok());
            let action = Action::for_targets(*concurrency, rate, &self.runtime);
            let started = Worker::new(self.state.inner.engine.clone())
                .handle(queue.as_str(), action)
                .concurrency(queue.as_str(), *concurrency)
                .lanes(queue.as_str(), &[Lane::Target])
                .grace(self.grace)
                .start();
            match started {
                Ok(worker) => {
                    tracing::info!(queue = %queue, concurrency, "target deliveries ready");
                    self.targets.insert(queue, (limits, worker));
                }
                Err(e) => tracing::error!(queue = %queue, error = %e, "cannot start delivering the queue's targets"),
            }
        }
    }

    /// Puts the stored settings of the queues the config file does not hold to work.
    async fn apply(&mut self, records: &[QueueRecord]) {
        let file = Arc::clone(&self.file);
        let api: Vec<&QueueRecord> = records.iter().filter(|r| !file.holds(&r.queue)).collect();
        let gone: Vec<QueueName> =
            self.applied.keys().filter(|q| !api.iter().any(|r| &r.queue == *q)).cloned().collect();
        for queue in gone {
            self.clear(&queue).await;
        }
        for record in api {
            match record.settings.as_deref() {
                None => self.clear(&record.queue).await,
                Some(document) if self.applied.get(&record.queue).is_some_and(|d| d == document) => {}
                Some(document) => self.set(record, document).await,
            }
        }
        self.show_actions();
    }

    /// Puts a queue's settings to work: its defaults, and its worker when the action
    /// or its limits changed.
    async fn set(&mut self, record: &QueueRecord, document: &str) {
        let queue = &record.queue;
        let settings = serde_json::from_str(document)
            .map_err(|e| format!("the stored settings are not JSON: {e}"))
            .and_then(|doc| QueueSettings::from_document(doc, self.state.egress()).map_err(|e| e.detail().message));
        let settings = match settings {
            Ok(settings) => settings,
            Err(message) => {
                if self.failed.insert(queue.clone(), record.version) != Some(record.version) {
                    tracing::error!(queue = %queue, version = record.version, error = %message,
                        "the queue's settings no longer validate; it keeps running as before");
                }
                return;
            }
        };
        self.failed.remove(queue);
        let engine = self.state.inner.engine.clone();
        engine.set_queue_defaults(queue, Some(settings.defaults.clone()));
        self.applied.insert(queue.clone(), document.to_owned());
        self.limits.insert(queue.clone(), (settings.concurrency, settings.rate.clone()));
        let delivery = delivery_part(&settings);
        if self.running.get(queue).is_some_and(|r| r.delivery == delivery) {
            return;
        }
        if let Some(old) = self.running.remove(queue) {
            old.worker.shutdown().await;
        }
        let Some(spec) = settings.action else { return };
        let started = Action::build(&spec, &self.runtime).map_err(|e| e.to_string()).and_then(|action| {
            let worker = start_worker(&engine, queue, &action, &spec, self.grace).map_err(|e| e.to_string())?;
            Ok((action, worker))
        });
        match started {
            Ok((action, worker)) => {
                tracing::info!(queue = %queue, kind = action.kind(), concurrency = spec.concurrency,
                    version = record.version, "push action ready (settings from the API)");
                let running = Running { delivery, kind: action.kind(), action, worker };
                self.running.insert(queue.clone(), running);
            }
            Err(error) => tracing::error!(queue = %queue, error = %error, "cannot start the queue's push action"),
        }
    }

    /// The queue has no API settings any more: built-in defaults, no worker.
    async fn clear(&mut self, queue: &QueueName) {
        if self.applied.remove(queue).is_none() {
            return;
        }
        self.state.inner.engine.set_queue_defaults(queue, None);
        self.limits.remove(queue);
        if let Some(running) = self.running.remove(queue) {
            tracing::info!(queue = %queue, kind = running.kind, "push action stopped: the queue's settings were removed");
            running.worker.shutdown().await;
        }
    }

    /// Shows the running actions in `/metrics` and lease refusals.
    fn show_actions(&self) {
        let mut actions: Vec<(String, Action)> =
            self.file_workers.iter().map(|(queue, running)| (queue.to_string(), running.action.clone())).collect();
        actions.extend(self.running.iter().map(|(queue, running)| (queue.to_string(), running.action.clone())));
        self.state.show_actions(actions);
    }
}

/// What of a queue's settings its worker runs by: a change elsewhere (the task
/// defaults) leaves the worker running.
fn delivery_part(settings: &QueueSettings) -> serde_json::Value {
    let field = |name: &str| settings.document.get(name).cloned().unwrap_or(serde_json::Value::Null);
    serde_json::json!([field("action"), field("concurrency"), field("rate")])
}

/// Starts `queue`'s push worker running `action` (built from `spec`) on both lanes:
/// its tasks with a target are delivered to their target, sharing the action's
/// concurrency and rate.
fn start_worker<S: Store>(
    engine: &Engine<S>,
    queue: &QueueName,
    action: &Action,
    spec: &ActionSpec,
    grace: Duration,
) -> punctual_core::Result<RunningWorker> {
    Worker::new(engine.clone())
        .handle(queue.as_str(), action.clone())
        .concurrency(queue.as_str(), spec.concurrency)
        .lanes(queue.as_str(), &Lane::ALL)
        .grace(grace)
        .start()
}

/// Stops `workers` together; running deliveries get each worker's grace period.
pub(crate) async fn stop_workers(workers: impl IntoIterator<Item = RunningWorker>) {
    futures_util::future::join_all(workers.into_iter().map(RunningWorker::shutdown)).await;
}
