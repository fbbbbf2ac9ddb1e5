//! Everything the server is configured with: flags of `punctual serve`, the TOML file
//! of API.md's "Server configuration", and built-in defaults, in that order of
//! precedence; the access rules; and the queue settings set through the API at run
//! time, validated as the file's queue tables are.
//!
//! Invariant: nothing here imports the state, the handlers or the router; they are
//! built on top of it.
//!
//! The file is read in two stages (STYLE.md): serde reads it into raw structs that
//! mirror the file (`deny_unknown_fields`: an unknown key is an error, not ignored),
//! keeping each value's position; validation then builds [`Settings`] with defaults
//! applied. Every error names the file and the line at fault.
//!
//! A queue with an action (`[queues."name".action]`, see `actions`) is served by the
//! server itself: the action is validated here (templates compiled, URLs parsed,
//! secrets read from the environment), so a bad one stops start-up with its line
//! instead of failing every delivery.
//!
//! `[egress]` says where HTTP push actions may connect besides public addresses:
//! `allow` (IP addresses, CIDR networks, host names, `*.domain`) and `allow_private`.
//! Each entry is checked with its line, and an action whose URL host is an IP address
//! the policy refuses is an error on the line of its `url`.
//!
//! This module owns the validated [`Settings`], [`ConfigError`] and the entry points
//! (`load`, `settings`, `unreadable`); `flags` holds `ServeArgs` and its `--help`,
//! `raw` the structs of the file as typed, `validate` the merge of flags, file and
//! defaults, `queues` the `[queues]` and `[egress]` tables, `actions` the action
//! tables, `access` the `[[access]]` tables of scoped tokens with the grants and the
//! permission every route needs, `declared` the queues the file declares (and what is
//! refused on the others), `calendars` the `[calendars]` tables of working-time
//! calendars, `outbox` the `[[outbox]]` tables of the databases drained, `telemetry`
//! the `[telemetry]` table of traces exported over OTLP, and `settings` a queue's
//! settings given through the API.

pub(crate) mod access;
mod actions;
mod calendars;
pub(crate) mod declared;
mod flags;
pub(crate) mod outbox;
mod queues;
mod raw;
pub(crate) mod settings;
pub(crate) mod telemetry;
mod validate;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use punctual_actions::{ActionSpec, EgressPolicy};
use punctual_core::{EngineConfig, QueueDefaults, QueueName};
use serde::Deserialize;

pub use flags::ServeArgs;
pub(crate) use validate::{QueueTable, queue_table, settings};

/// The longest a request may take when neither a flag nor the file says.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest body of a batch request when neither a flag nor the file says (32 MiB).
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where tasks are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Backend {
    /// The embedded store in this directory.
    Embedded(PathBuf),
    /// A Redis or Redis Cluster URL.
    Redis(String),
}

/// Everything the server runs with, validated, defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) listen: String,
    pub(crate) backend: Backend,
    /// Tokens that may do everything.
    pub(crate) tokens: Vec<String>,
    /// Scoped tokens (`[[access]]`).
    pub(crate) access: Vec<access::AccessToken>,
    pub(crate) log_format: LogFormat,
    pub(crate) grace_period: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) max_payload_bytes: usize,
    pub(crate) max_batch: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_overdue: Option<Duration>,
    /// Only the queues of the file are served (`queues`).
    pub(crate) strict_queues: bool,
    pub(crate) queues: HashMap<QueueName, QueueDefaults>,
    /// Queues the server delivers itself, in name order.
    pub(crate) actions: Vec<(QueueName, ActionSpec)>,
    /// Shards per queue on Redis, where the file sets them.
    pub(crate) shards: HashMap<QueueName, u32>,
    /// How long dead tasks are kept, per queue that sets it.
    pub(crate) dead_retention: HashMap<QueueName, Duration>,
    /// Per queue, how long its tasks' histories are kept (default 7 days).
    pub(crate) history_retention: HashMap<QueueName, Duration>,
    pub(crate) redis: RedisSettings,
    /// Where the push actions may connect.
    pub(crate) egress: EgressPolicy,
    /// Signs deliveries to tasks' HTTP targets whose queue has no webhook secret
    /// (`[targets] secret_env`).
    pub(crate) targets_secret: Option<punctual_actions::SigningSecrets>,
    /// HTTPS: the certificate chain and key to serve with.
    pub(crate) tls: Option<crate::tls::TlsFiles>,
    /// Working-time calendars of the file (`[calendars."name"]`), in name order.
    pub(crate) calendars: Vec<(punctual_core::calendar::CalendarName, punctual_core::Calendar)>,
    /// The outboxes this server drains (`[[outbox]]`), in the file's order.
    pub(crate) outboxes: Vec<outbox::OutboxSettings>,
    /// Where traces are exported (`[telemetry]`, or the OTLP environment variables);
    /// `None`: traces are off.
    pub(crate) telemetry: Option<telemetry::TelemetrySettings>,
    /// The file these settings were read from, if any.
    pub(crate) config_file: Option<PathBuf>,
}

/// The `[redis]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisSettings {
    pub(crate) prefix: String,
    pub(crate) wait_replicas: u32,
    pub(crate) timeout: Duration,
    /// How far a sharded queue's leases may stray from due order across its shards.
    pub(crate) shard_order_slack: Duration,
}

impl Default for RedisSettings {
    fn default() -> RedisSettings {
        RedisSettings {
            prefix: "punctual".into(),
            wait_replicas: 0,
            timeout: Duration::from_secs(5),
            shard_order_slack: Duration::from_secs(1),
        }
    }
}

impl Settings {
    /// What the engine starts with: the limits and the dead-task retentions, which
    /// take a restart. The queues' defaults and the calendars are not here: they are
    /// applied once the engine runs, at start and at each SIGHUP alike
    /// (`AppState::apply_config_file`).
    pub(crate) fn engine_config(&self) -> EngineConfig {
        let mut config = EngineConfig::default();
        config.limits.max_payload_bytes = self.max_payload_bytes;
        config.limits.max_batch = self.max_batch;
        for (name, keep) in &self.history_retention {
            config = config.history_retention(name.clone(), *keep);
        }
        for (name, keep) in &self.dead_retention {
            config = config.dead_retention(name.clone(), *keep);
        }
        config
    }
}

/// A configuration that cannot be used: the file, the line if known, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    source: String,
    line: Option<usize>,
    message: String,
    /// The key the file lacks, when that is the fault, as a path in its queue's table
    /// (`action.url`); `line` is then the line of the table's `kind`.
    missing: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}, line {line}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The 1-based line of the file the error is on, when it is on one.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the file and line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The key the file lacks, when that is the fault (see `missing`).
    pub(crate) fn missing(&self) -> Option<&str> {
        self.missing.as_deref()
    }

    /// An error on `line` of `source` (`None`: on the source as a whole).
    fn new(source: impl Into<String>, line: Option<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError { source: source.into(), line, message: message.into(), missing: None }
    }

    fn flag(message: impl Into<String>) -> ConfigError {
        ConfigError::new("command line", None, message)
    }
}

/// The error of a configuration file that cannot be read.
pub(crate) fn unreadable(path: &Path, e: &std::io::Error) -> ConfigError {
    ConfigError::new(path.display().to_string(), None, format!("cannot read the configuration file: {e}"))
}

/// Reads the file named by `--config`, if any, and merges the flags over it.
pub(crate) fn load(args: &ServeArgs) -> Result<Settings, ConfigError> {
    match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| unreadable(path, &e))?;
            settings(args, Some((path, &text)))
        }
        None => settings(args, None),
    }
}

/// The helpers of the tests of `validate` and `queues`: a file read without flags.
#[cfg(test)]
mod testing {
    use std::path::Path;

    use super::{ConfigError, ServeArgs, Settings, settings};

    pub(super) fn file(text: &str) -> Result<Settings, ConfigError> {
        settings(&ServeArgs::default(), Some((Path::new("punctual.toml"), text)))
    }

    pub(super) fn error_line(text: &str) -> (Option<usize>, String) {
        let e = file(text).unwrap_err();
        assert_eq!(e.source, "punctual.toml");
        (e.line, e.message)
    }
}
