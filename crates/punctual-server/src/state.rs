//! What every handler shares: the engine, the lease-id codec, the tokens and their
//! grants (kept as digests, see `config::access`), the HTTP limits, the config file's
//! queues and the push actions, the nodes whose delivery policy differs, and the
//! shutdown signal.
//!
//! The config file's queues and calendars are put to work by one call,
//! [`AppState::apply_config_file`], at start and at each SIGHUP (`reload`), so a file
//! read again applies as it would at start.

use std::sync::{Arc, Mutex, OnceLock};

use punctual_core::{Engine, QueueName, Store, TokenCodec};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::config::access::Auth;
use crate::config::declared::push_refusal;
use crate::error::ApiError;
use crate::metrics::{Metrics, MetricsSnapshot, QueueActivity};
use crate::policy::PolicyPeers;
use crate::shared::{FileQueues, HttpOptions, Readiness};

/// The state of [`app`](crate::app). Cheap to clone.
#[derive(Debug)]
pub struct AppState<S: Store> {
    pub(crate) inner: Arc<Inner<S>>,
}

impl<S: Store> Clone for AppState<S> {
    fn clone(&self) -> Self {
        AppState { inner: Arc::clone(&self.inner) }
    }
}

#[derive(Debug)]
pub(crate) struct Inner<S: Store> {
    pub(crate) engine: Engine<S>,
    pub(crate) codec: TokenCodec,
    /// The access rules in force; a SIGHUP may replace them (`reload`).
    auth: std::sync::RwLock<Arc<Auth>>,
    pub(crate) options: HttpOptions,
    /// The config file's queues in force; a SIGHUP may replace them (`reload`). The
    /// push workers follow them (`workers`).
    file_queues: tokio::sync::watch::Sender<Arc<FileQueues>>,
    pub(crate) shutdown: CancellationToken,
    /// What `/readyz` last answered (`None` before its first answer); a change is
    /// logged, with the reason when it turns unready.
    pub(crate) readiness: Mutex<Option<Readiness>>,
    /// The server's push actions by queue: their rate-limit counts in `/metrics`, and
    /// leases refused on their queues.
    pub(crate) actions: Mutex<Vec<(String, punctual_actions::Action)>>,
    /// The OpenAPI document of this server (it depends on the tokens and limits), made
    /// when it is first asked for.
    pub(crate) openapi: OnceLock<serde_json::Value>,
    /// The counts of `/metrics` and the dashboard, from the engine's events.
    pub(crate) metrics: Arc<Metrics>,
    /// The nodes sharing the store whose delivery policy differs from this node's
    /// (`/readyz`, `/metrics`); none on the embedded store.
    pub(crate) delivery_policy: PolicyPeers,
    /// The outboxes this server drains (`/readyz`, `/metrics`, the dashboard).
    pub(crate) outboxes: Mutex<Vec<crate::config::outbox::Drained>>,
}

impl<S: Store> AppState<S> {
    /// Shows these actions' rate limits in `/metrics` and refuses leases on their
    /// queues.
    pub(crate) fn show_actions(&self, actions: Vec<(String, punctual_actions::Action)>) {
        *self.inner.actions.lock().expect("actions lock poisoned") = actions;
    }

    /// Shows these outboxes' drains in `/readyz` and `/metrics`.
    pub(crate) fn show_outboxes(&self, outboxes: Vec<crate::config::outbox::Drained>) {
        *self.inner.outboxes.lock().expect("outboxes lock poisoned") = outboxes;
    }

    /// The outboxes this server drains.
    pub(crate) fn outboxes(&self) -> Vec<crate::config::outbox::Drained> {
        self.inner.outboxes.lock().expect("outboxes lock poisoned").clone()
    }

    /// State over a started engine; reads the store's signing secret for lease ids.
    pub async fn new(engine: Engine<S>, options: HttpOptions) -> Result<AppState<S>, punctual_core::Error> {
        let codec = TokenCodec::new(engine.store().secret().await?);
        let auth = Auth::new(&options.tokens, &options.access);
        let metrics = Arc::new(Metrics::default());
        let observer = Arc::clone(&metrics);
        engine.observe(move |event: &punctual_core::Event| observer.observe(event));
        Ok(AppState {
            inner: Arc::new(Inner {
                engine,
                codec,
                auth: std::sync::RwLock::new(Arc::new(auth)),
                file_queues: tokio::sync::watch::channel(Arc::new(FileQueues::of_options(&options))).0,
                options,
                shutdown: CancellationToken::new(),
                readiness: Mutex::new(None),
                actions: Mutex::new(Vec::new()),
                openapi: OnceLock::new(),
                metrics,
                delivery_policy: PolicyPeers::default(),
                outboxes: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The access rules in force.
    pub(crate) fn auth(&self) -> Arc<Auth> {
        Arc::clone(&self.inner.auth.read().expect("auth lock poisoned"))
    }

    /// Puts `auth` in force for the next request.
    pub(crate) fn replace_auth(&self, auth: Auth) {
        *self.inner.auth.write().expect("auth lock poisoned") = Arc::new(auth);
    }

    /// The config file's queues in force.
    pub(crate) fn file_queues(&self) -> Arc<FileQueues> {
        Arc::clone(&self.inner.file_queues.borrow())
    }

    /// The config file's queues in force, told of each change.
    pub(crate) fn watch_file_queues(&self) -> tokio::sync::watch::Receiver<Arc<FileQueues>> {
        self.inner.file_queues.subscribe()
    }

    /// Puts the config file's queues and calendars to work, at start and at each
    /// SIGHUP: each queue's task defaults and group limits for its next schedule and
    /// lease (the engine's), the declared queues and `strict_queues` for the next
    /// request, the calendars (served beside the store's, winning over those of their
    /// names), and the push actions (the workers follow, `workers`).
    pub(crate) async fn apply_config_file(&self, settings: &Settings) {
        let engine = &self.inner.engine;
        engine.set_config_queues(settings.queues.clone());
        engine.set_history_retention(settings.history_retention.clone());
        engine.set_dead_retention(settings.dead_retention.clone());
        let calendars = settings.calendars.iter().map(|(name, calendar)| (name.clone(), Arc::new(calendar.clone())));
        engine.set_config_calendars(calendars.collect()).await;
        self.inner.file_queues.send_replace(Arc::new(FileQueues::of_settings(settings)));
    }

    /// The engine underneath.
    pub fn engine(&self) -> &Engine<S> {
        &self.inner.engine
    }

    /// Everything counted since the server started (what `/metrics` shows).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot(&self.inner.engine.waiting_consumers())
    }

    /// The queue's recent outcomes and throughput (what the dashboard shows).
    pub fn activity(&self, queue: &QueueName) -> QueueActivity {
        self.inner.metrics.activity(queue, self.inner.engine.clock().now())
    }

    /// Cancelled when the server begins to stop: long polls then answer at once with
    /// an empty list.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// `Ok` when tasks may be scheduled to `queue` (see `config::declared`).
    pub(crate) fn schedulable(&self, queue: &str) -> Result<(), ApiError> {
        self.file_queues().declared.check(queue)
    }

    /// `Ok` when pull workers may lease from `queue`: it is schedulable and has no push
    /// action on this server.
    pub(crate) fn leasable(&self, queue: &str) -> Result<(), ApiError> {
        self.schedulable(queue)?;
        let actions = self.inner.actions.lock().expect("actions lock poisoned");
        match actions.iter().find(|(name, _)| name == queue) {
            Some((_, action)) => Err(push_refusal(queue, action.kind())),
            None => Ok(()),
        }
    }

    /// `400` (field `target`…) when `spec` carries a target this server will not
    /// deliver: the queue's settings say `targets: false`, or its URL's host is an IP
    /// address the egress policy refuses (a name is checked at every connection).
    pub(crate) fn check_target(&self, queue: &str, spec: &punctual_core::TaskSpec) -> Result<(), ApiError> {
        let Some(target) = &spec.target else { return Ok(()) };
        if crate::config::settings::refuses_targets(&self.inner.engine, queue) {
            return Err(ApiError::invalid(
                "target",
                format!("queue '{queue}' refuses tasks with a target (its settings say \"targets\": false)"),
            ));
        }
        self.egress().check_url_text(target.url()).map_err(|refusal| {
            ApiError::invalid("target.url", format!("{refusal}; the server would refuse to deliver there"))
        })
    }

    /// The nodes sharing the store whose delivery policy differs from this node's.
    pub(crate) fn delivery_policy(&self) -> &PolicyPeers {
        &self.inner.delivery_policy
    }

    /// Where push actions may connect.
    pub(crate) fn egress(&self) -> &punctual_actions::EgressPolicy {
        &self.inner.options.egress
    }

    /// The lease-id codec (tests forge and alter ids with it).
    pub fn codec(&self) -> &TokenCodec {
        &self.inner.codec
    }
}
