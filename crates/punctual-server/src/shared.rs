//! The words the server's layers share: the app's HTTP options and the config file's
//! queues as this node applies them (made from the validated config, again at each
//! SIGHUP), who is calling, and what `/readyz` last answered.
//!
//! Invariant: this module depends on nothing above the config (no state, handler or
//! router), so the state, the handlers and the router can all use it without
//! depending on each other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use punctual_actions::ActionSpec;
use punctual_core::{QueueDefaults, QueueName};

use crate::config::access::{AccessToken, Grant};
use crate::config::declared::Declared;
use crate::config::{self, Settings};

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
    /// counts while they hold no task. What the app starts with: `punctual serve`
    /// replaces them, with `strict_queues`, when a SIGHUP reads the file again.
    pub queues: Vec<QueueName>,
    /// Refuse schedules and leases naming a queue not in `queues` (`404`).
    pub strict_queues: bool,
    /// The config file, named when its queues' settings are refused a change.
    pub config_file: Option<PathBuf>,
    /// Where push actions may connect: settings given through the API are checked
    /// against it as the file's are.
    pub egress: punctual_actions::EgressPolicy,
    /// The queues of the config file as the settings API shows them.
    pub(crate) config_queues: BTreeMap<QueueName, ConfigQueue>,
}

/// The config file's queues as this node applies them; a SIGHUP that reads the file
/// again replaces them whole (`AppState::apply_config_file`).
#[derive(Debug, Clone, Default)]
pub(crate) struct FileQueues {
    /// The queues it declares, and whether others are refused.
    pub(crate) declared: Declared,
    /// Each of its queues as the settings API shows it (`source: config`).
    pub(crate) settings: BTreeMap<QueueName, ConfigQueue>,
    /// The push actions it gives queues, in name order.
    pub(crate) actions: Vec<(QueueName, ActionSpec)>,
}

impl FileQueues {
    /// What `options` give: no action, since they name none.
    pub(crate) fn of_options(options: &HttpOptions) -> FileQueues {
        FileQueues {
            declared: Declared::new(options.queues.iter().cloned(), options.strict_queues),
            settings: options.config_queues.clone(),
            actions: Vec::new(),
        }
    }

    /// What the validated config file gives.
    pub(crate) fn of_settings(settings: &Settings) -> FileQueues {
        FileQueues {
            declared: Declared::new(settings.queues.keys().cloned(), settings.strict_queues),
            settings: config_queues(settings),
            actions: settings.actions.clone(),
        }
    }

    /// Whether `queue`'s settings come from the file.
    pub(crate) fn holds(&self, queue: &QueueName) -> bool {
        self.settings.contains_key(queue)
    }
}

/// The file's queues as the settings API shows them.
fn config_queues(settings: &Settings) -> BTreeMap<QueueName, ConfigQueue> {
    settings
        .queues
        .iter()
        .map(|(name, defaults)| {
            let action = settings
                .actions
                .iter()
                .find(|(queue, _)| queue == name)
                .map(|(_, spec)| (spec.kind.name(), spec.concurrency, spec.rate));
            let queue = ConfigQueue { defaults: defaults.clone(), action, shards: settings.shards.get(name).copied() };
            (name.clone(), queue)
        })
        .collect()
}

/// A queue of the config file, as the settings API shows it (`source: config`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigQueue {
    pub(crate) defaults: QueueDefaults,
    /// `(kind, concurrency, rate)` of its action.
    pub(crate) action: Option<(&'static str, usize, Option<punctual_core::policy::Rate>)>,
    pub(crate) shards: Option<u32>,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            tokens: Vec::new(),
            access: Vec::new(),
            request_timeout: config::DEFAULT_REQUEST_TIMEOUT,
            max_body_bytes: config::DEFAULT_MAX_BODY_BYTES,
            max_overdue: None,
            queues: Vec::new(),
            strict_queues: false,
            config_file: None,
            egress: punctual_actions::EgressPolicy::public_only(),
            config_queues: BTreeMap::new(),
        }
    }
}

impl From<&Settings> for HttpOptions {
    fn from(settings: &Settings) -> HttpOptions {
        HttpOptions {
            tokens: settings.tokens.clone(),
            access: settings.access.clone(),
            request_timeout: settings.request_timeout,
            max_body_bytes: settings.max_body_bytes,
            max_overdue: settings.max_overdue,
            queues: settings.queues.keys().cloned().collect(),
            strict_queues: settings.strict_queues,
            config_file: settings.config_file.clone(),
            egress: settings.egress.clone(),
            config_queues: config_queues(settings),
        }
    }
}

/// Who is calling: the token's grant, put in the request's extensions by the router's
/// auth for the handlers that check inside (`GET /v1/queues`, `POST /v1/acks`).
/// Without tokens, everything.
pub(crate) type Caller = axum::Extension<Arc<Grant>>;

/// What `/readyz` answered, as far as its log is concerned: a change is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    Ready,
    Stopping,
    StoreUnreachable,
}
