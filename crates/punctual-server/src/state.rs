//! What every handler shares: the engine, the lease-id codec, the tokens and their
//! grants (kept as digests, see `access`), the HTTP limits, the declared queues and
//! push actions, and the shutdown signal.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_core::{Engine, QueueName, Store, TokenCodec};
use tokio_util::sync::CancellationToken;

use crate::access::{AccessToken, Auth};
use crate::error::ApiError;
use crate::metrics::{Metrics, MetricsSnapshot, QueueActivity};
use crate::openapi::Served;
use crate::queues::{Declared, push_refusal};

/// HTTP-level settings of the app (the engine's own limits live in its config).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Bearer tokens that may do everything; when empty and `access` is too, no
    /// request needs one.
    pub tokens: Vec<String>,
    /// Scoped tokens (`[[access]]`): each may do what its grant says.
    pub access: Vec<AccessToken>,
    /// The longest a request may take (reading its body included); a lease request
    /// gets this on top of the longest `wait` (60 s).
    pub request_timeout: Duration,
    /// The largest request body of a batch (`POST …/tasks`, `POST /v1/acks`).
    pub max_body_bytes: usize,
    /// `/readyz` names the queues whose oldest due task has waited longer than this
    /// (it stays ready: a backlog is for alerts, not for the load balancer); `None`:
    /// not checked.
    pub max_overdue: Option<Duration>,
    /// The queues the config file declares: listed by `GET /v1/queues` with zero
    /// counts while they hold no task.
    pub queues: Vec<QueueName>,
    /// Refuse schedules and leases naming a queue not in `queues` (`404`).
    pub strict_queues: bool,
    /// The config file, named when its queues' settings are refused a change.
    pub config_file: Option<std::path::PathBuf>,
    /// Where push actions may connect: settings given through the API are checked
    /// against it as the file's are.
    pub egress: punctual_actions::EgressPolicy,
    /// The queues of the config file as the settings API shows them.
    pub(crate) config_queues: std::collections::BTreeMap<QueueName, ConfigQueue>,
}

/// A queue of the config file, as the settings API shows it (`source: config`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigQueue {
    pub(crate) defaults: punctual_core::QueueDefaults,
    /// `(kind, concurrency, rate)` of its action.
    pub(crate) action: Option<(&'static str, usize, Option<punctual_core::policy::Rate>)>,
    pub(crate) shards: Option<u32>,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            tokens: Vec::new(),
            access: Vec::new(),
            request_timeout: Duration::from_secs(30),
            max_body_bytes: 32 * 1024 * 1024,
            max_overdue: None,
            queues: Vec::new(),
            strict_queues: false,
            config_file: None,
            egress: punctual_actions::EgressPolicy::public_only(),
            config_queues: std::collections::BTreeMap::new(),
        }
    }
}

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
    pub(crate) auth: Auth,
    pub(crate) options: HttpOptions,
    pub(crate) declared: Declared,
    pub(crate) shutdown: CancellationToken,
    /// What `/readyz` last answered (`None` before its first answer); a change is
    /// logged, with the reason when it turns unready.
    pub(crate) readiness: Mutex<Option<crate::ops::Readiness>>,
    /// The server's push actions by queue: their rate-limit counts in `/metrics`, and
    /// leases refused on their queues.
    pub(crate) actions: Mutex<Vec<(String, punctual_actions::Action)>>,
    /// The OpenAPI document of this server (it depends on the tokens and limits).
    pub(crate) openapi: serde_json::Value,
    /// The counts of `/metrics` and the dashboard, from the engine's events.
    pub(crate) metrics: Arc<Metrics>,
}

impl<S: Store> AppState<S> {
    /// Shows these actions' rate limits in `/metrics` and refuses leases on their
    /// queues.
    pub(crate) fn show_actions(&self, actions: Vec<(String, punctual_actions::Action)>) {
        *self.inner.actions.lock().expect("actions lock poisoned") = actions;
    }

    /// State over a started engine; reads the store's signing secret for lease ids.
    pub async fn new(engine: Engine<S>, options: HttpOptions) -> Result<AppState<S>, punctual_core::Error> {
        let codec = TokenCodec::new(engine.store().secret().await?);
        let auth = Auth::new(&options.tokens, &options.access);
        let served = Served { tokens: auth.required(), max_batch: engine.limits().max_batch };
        let metrics = Arc::new(Metrics::default());
        let observer = Arc::clone(&metrics);
        engine.observe(move |event: &punctual_core::Event| observer.observe(event));
        Ok(AppState {
            inner: Arc::new(Inner {
                engine,
                codec,
                auth,
                declared: Declared::new(options.queues.iter().cloned(), options.strict_queues),
                options,
                shutdown: CancellationToken::new(),
                readiness: Mutex::new(None),
                actions: Mutex::new(Vec::new()),
                openapi: crate::openapi::document(served),
                metrics,
            }),
        })
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

    /// `Ok` when tasks may be scheduled to `queue` (see `queues`).
    pub(crate) fn schedulable(&self, queue: &str) -> Result<(), ApiError> {
        self.inner.declared.check(queue)
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
        if crate::settings::refuses_targets(&self.inner.engine, queue) {
            return Err(ApiError::invalid(
                "target",
                format!("queue '{queue}' refuses tasks with a target (its settings say \"targets\": false)"),
            ));
        }
        self.egress().check_url_text(target.url()).map_err(|refusal| {
            ApiError::invalid("target.url", format!("{refusal}; the server would refuse to deliver there"))
        })
    }

    /// Where push actions may connect.
    pub(crate) fn egress(&self) -> &punctual_actions::EgressPolicy {
        &self.inner.options.egress
    }

    /// `409` when `queue`'s settings come from the config file.
    pub(crate) fn refuse_config_change(&self, queue: &str) -> Result<(), ApiError> {
        let name = QueueName::new(queue)?;
        if !self.inner.options.config_queues.contains_key(&name) {
            return Ok(());
        }
        let file =
            self.inner.options.config_file.as_ref().map_or("the config file".to_owned(), |f| f.display().to_string());
        Err(ApiError::Conflict(format!(
            "queue '{queue}' is set in {file}: change its settings there (pause and resume work through the API)"
        )))
    }

    /// The settings of a queue of the config file, with its pause state from `record`.
    pub(crate) fn config_settings_view(
        &self,
        queue: &QueueName,
        record: Option<&punctual_core::QueueRecord>,
    ) -> Option<crate::settings::SettingsView> {
        let config = self.inner.options.config_queues.get(queue)?;
        let (action, concurrency, rate) = match &config.action {
            Some((kind, concurrency, rate)) => {
                (serde_json::json!({ "kind": kind }), *concurrency, rate.map(|r| r.to_string()))
            }
            None => (serde_json::Value::Null, punctual_actions::ActionSpec::DEFAULT_CONCURRENCY, None),
        };
        Some(crate::settings::SettingsView {
            queue: queue.to_string(),
            source: crate::settings::Source::Config,
            defaults: crate::settings::DefaultsView {
                max_attempts: config.defaults.max_attempts,
                backoff: config.defaults.backoff,
                repeat: config.defaults.repeat.clone(),
            },
            action,
            concurrency,
            rate,
            shards: config.shards.unwrap_or(1),
            targets: true,
            paused: record.is_some_and(|r| r.paused),
            version: record.map_or(0, |r| r.version),
            updated_at: record.map_or(punctual_core::Timestamp::EPOCH, |r| r.updated_at),
        })
    }

    /// The lease-id codec (tests forge and alter ids with it).
    pub fn codec(&self) -> &TokenCodec {
        &self.inner.codec
    }
}
