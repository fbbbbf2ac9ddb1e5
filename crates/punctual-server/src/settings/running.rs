//! Queues whose settings were set through the API, put to work on this node: task
//! defaults applied to new tasks, and a push worker per queue with an action — started,
//! re-tuned (a new action, concurrency or rate) and stopped as the stored settings
//! change. Every node follows the store's records (the engine reads them every
//! [`RECORDS_POLL`](punctual_core::RECORDS_POLL)), so a change made through any node
//! applies on all of them within a second, without a restart.
//!
//! Invariants: queues of the config file are never touched here (their settings come
//! from the file, their workers are started once at start-up); a worker being replaced
//! stops leasing first and its running deliveries get the grace period, so deliveries
//! of one queue never run under two settings at once for longer than that; settings
//! that no longer validate (an environment variable they name went away) leave the
//! queue as it runs, with one error logged per version.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use punctual_actions::{Action, Runtime};
use punctual_core::{QueueName, QueueRecord, RunningWorker, Store, Worker};
use tokio_util::sync::CancellationToken;

use super::QueueSettings;
use crate::state::AppState;

/// A push worker this node runs for an API queue, and what of the settings it runs
/// (`action`, `concurrency`, `rate`).
struct Running {
    delivery: serde_json::Value,
    kind: &'static str,
    action: Action,
    worker: RunningWorker,
}

/// Follows the records and keeps this node's API queues as they say.
pub(crate) struct ApiQueues<S: Store> {
    state: AppState<S>,
    runtime: Runtime,
    grace: Duration,
    /// The config file's actions, shown beside the API's (`/metrics`, lease refusals).
    config_actions: Vec<(String, Action)>,
    running: HashMap<QueueName, Running>,
    /// The document of each queue as last applied (its defaults), and the version of
    /// each whose settings failed to validate (logged once).
    applied: HashMap<QueueName, String>,
    failed: HashMap<QueueName, u64>,
}

impl<S: Store> ApiQueues<S> {
    pub(crate) fn new(
        state: AppState<S>,
        runtime: Runtime,
        grace: Duration,
        config_actions: Vec<(String, Action)>,
    ) -> ApiQueues<S> {
        ApiQueues {
            state,
            runtime,
            grace,
            config_actions,
            running: HashMap::new(),
            applied: HashMap::new(),
            failed: HashMap::new(),
        }
    }

    /// Applies every change of the records until `stop`, then stops the workers it
    /// started (running deliveries get the grace period).
    pub(crate) async fn follow(mut self, stop: CancellationToken) {
        let engine = self.state.inner.engine.clone();
        let mut records = engine.watch_queue_records();
        loop {
            let current: Arc<Vec<QueueRecord>> = records.borrow_and_update().clone();
            self.apply(&current).await;
            tokio::select! {
                changed = records.changed() => if changed.is_err() { break },
                _ = stop.cancelled() => break,
            }
        }
        let workers = self.running.drain().map(|(_, running)| running.worker.shutdown());
        futures_util::future::join_all(workers).await;
    }

    async fn apply(&mut self, records: &[QueueRecord]) {
        let state = self.state.clone();
        let api: Vec<&QueueRecord> =
            records.iter().filter(|r| !state.inner.options.config_queues.contains_key(&r.queue)).collect();
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
        let delivery = delivery_part(&settings);
        if self.running.get(queue).is_some_and(|r| r.delivery == delivery) {
            return;
        }
        if let Some(old) = self.running.remove(queue) {
            old.worker.shutdown().await;
        }
        let Some(spec) = settings.action else { return };
        let started = Action::build(&spec, &self.runtime).map_err(|e| e.to_string()).and_then(|action| {
            Worker::new(engine)
                .handle(queue.as_str(), action.clone())
                .concurrency(queue.as_str(), spec.concurrency)
                .grace(self.grace)
                .start()
                .map(|worker| (action, worker))
                .map_err(|e| e.to_string())
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
        if let Some(running) = self.running.remove(queue) {
            tracing::info!(queue = %queue, kind = running.kind, "push action stopped: the queue's settings were removed");
            running.worker.shutdown().await;
        }
    }

    fn show_actions(&self) {
        let mut actions = self.config_actions.clone();
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
