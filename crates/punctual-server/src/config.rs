//! The server's settings: flags of `punctual serve`, the TOML file of API.md's "Server
//! configuration", and built-in defaults, in that order of precedence.
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use punctual_actions::{ActionSpec, EgressPolicy};
use punctual_core::time::parse_duration;
use punctual_core::{Backoff, EngineConfig, Limits, QueueDefaults, QueueName};
use serde::Deserialize;
use toml::Spanned;

use crate::actions::RawAction;
use crate::extract::ApiDuration;
use crate::state::HttpOptions;

const EXAMPLES: &str = "\
Examples:
  punctual serve                               # ./punctual-data, 127.0.0.1:7575
  punctual serve --data /var/lib/punctual --listen 0.0.0.0:7575
  punctual serve --config punctual.toml        # flags override the file
  punctual serve --token s3cret --token other  # or PUNCTUAL_TOKENS=s3cret,other
  punctual serve --store redis://127.0.0.1:6379
  PUNCTUAL_STORE=redis://:PASSWORD@10.0.0.5:6379 punctual serve   # not in `ps`
  punctual serve --store redis-cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000
  RUST_LOG=debug punctual serve --log-format json

Configuration file (TOML; every key optional; unknown keys are an error):
  listen = \"127.0.0.1:7575\"
  data = \"./punctual-data\"            # or: store = \"redis://127.0.0.1:6379\"
  tokens = [\"s3cret\"]
  log_format = \"text\"                 # or \"json\"
  grace_period = \"10s\"
  request_timeout = \"30s\"
  max_payload_bytes = 65536
  max_batch = 10000
  max_body_bytes = 33554432
  max_overdue = \"1m\"                # /readyz names queues whose due tasks wait longer
  strict_queues = false               # true: only the [queues.\"…\"] below take tasks (else 404)

  [redis]                             # with store = \"redis://…\" only
  prefix = \"punctual\"                 # of every key: deployments can share a Redis
  wait_replicas = 0                   # after each write, WAIT for this many replicas
  timeout = \"5s\"                      # no call waits longer for Redis: then 503

  [queues.\"order.cancel\"]             # defaults for tasks of this queue
  max_attempts = 10
  backoff = { initial = \"1s\", factor = 2.0, max = \"1h\" }
  shards = 1                          # Redis: split a busy queue over N hash tags
  repeat = { every = \"24h\" }          # for tasks that set no repeat of their own
  dead_retention = \"30d\"             # delete dead tasks 30 days after they died (default: keep)

  [egress]                            # where webhooks and chat robots may connect
  allow = [\"127.0.0.1\"]               # besides public addresses: IPs, CIDRs (10.0.0.0/8),
                                      #   host names (hooks.internal, *.corp.example)
  allow_private = false               # true: 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10

  [queues.\"order.cancel\".action]      # push: the server runs the handler
  kind = \"webhook\"                    # webhook | email | wecom | dingtalk | feishu | slack
  url = \"http://127.0.0.1:8080/hooks/order-cancel\"
  secret_env = \"ORDER_HOOK_SECRET\"    # signs deliveries (Punctual-Signature)
  timeout = \"10s\"
  concurrency = 32
  final_statuses = [400, 413, 415, 422]  # answers that send a task to dead (the default);
                                      #   every other non-2xx is retried

  [queues.\"flow.remind\".action]
  kind = \"wecom\"
  secret_env = \"WECOM_KEY\"            # the robot's key
  text = \"{{ assignee }}: step {{ step }} is overdue since {{ due_local }}\"
  mention = [\"{{ assignee_id }}\"]
  rate = \"20/1m\"                     # on Redis: for every server together
  timezone = \"Asia/Shanghai\"

Durations are written \"1500ms\", \"30s\", \"1h 30m\", \"7d\" or as integer milliseconds.
A queue without an action is drained by pull workers (POST /v1/queues/{queue}/lease).
Check a file without starting: punctual check-config FILE.
Logs go to stderr; RUST_LOG filters them (default: info).
SIGTERM or SIGINT: stop accepting, let running requests finish within the grace period
(long polls answer at once with no leases), make every write durable, exit 0.";

/// The flags of `punctual serve`.
#[derive(Debug, Clone, Default, Args)]
#[command(after_long_help = EXAMPLES)]
pub struct ServeArgs {
    /// TOML configuration file; flags override its values.
    #[arg(long, short = 'c', value_name = "FILE", env = "PUNCTUAL_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:7575].
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) listen: Option<String>,
    /// Directory of the embedded store, created if missing [default: ./punctual-data].
    #[arg(long, value_name = "DIR", conflicts_with = "store")]
    pub(crate) data: Option<PathBuf>,
    /// A shared store instead of the embedded one, for many servers sharing the work:
    /// redis://HOST:PORT[/DB] or redis-cluster://HOST:PORT,HOST:PORT,…; or in
    /// PUNCTUAL_STORE, which keeps a password in the URL out of the process list.
    #[arg(long, value_name = "URL", env = "PUNCTUAL_STORE", hide_env_values = true)]
    pub(crate) store: Option<String>,
    /// A bearer token clients must send (Authorization: Bearer TOKEN); repeatable, or
    /// comma-separated in PUNCTUAL_TOKENS. Without tokens the API is open.
    #[arg(
        long = "token",
        value_name = "TOKEN",
        env = "PUNCTUAL_TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub(crate) tokens: Vec<String>,
    /// Log format on stderr [default: text].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) log_format: Option<LogFormat>,
    /// On SIGTERM/SIGINT, how long running requests may take to finish [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) grace_period: Option<Duration>,
    /// The longest a request may take, reading its body included; a lease request gets
    /// its wait (up to 60s) on top [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) request_timeout: Option<Duration>,
    /// The largest task payload, serialized as JSON, in bytes [default: 65536].
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_payload_bytes: Option<usize>,
    /// The most tasks or acks in one batch request [default: 10000].
    #[arg(long, value_name = "N")]
    pub(crate) max_batch: Option<usize>,
    /// The largest body of a batch request, in bytes [default: 33554432 (32 MiB)].
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body_bytes: Option<usize>,
    /// /readyz names the queues whose oldest due task has waited longer than this for
    /// a consumer; it stays ready (alert on punctual_oldest_overdue_seconds) [default: off].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) max_overdue: Option<Duration>,
    /// Refuse to schedule or lease tasks of a queue the config file does not declare
    /// ([queues."NAME"]), with 404 naming the nearest declared queue [file: strict_queues].
    #[arg(long)]
    pub(crate) strict_queues: bool,
}

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
    pub(crate) tokens: Vec<String>,
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
    pub(crate) redis: RedisSettings,
    /// Where the push actions may connect.
    pub(crate) egress: EgressPolicy,
}

/// The `[redis]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisSettings {
    pub(crate) prefix: String,
    pub(crate) wait_replicas: u32,
    pub(crate) timeout: Duration,
}

impl Default for RedisSettings {
    fn default() -> RedisSettings {
        RedisSettings { prefix: "punctual".into(), wait_replicas: 0, timeout: Duration::from_secs(5) }
    }
}

impl Settings {
    pub(crate) fn engine_config(&self) -> EngineConfig {
        let mut config = EngineConfig::default();
        config.limits.max_payload_bytes = self.max_payload_bytes;
        config.limits.max_batch = self.max_batch;
        for (name, defaults) in &self.queues {
            config = config.queue(name.clone(), defaults.clone());
        }
        for (name, keep) in &self.dead_retention {
            config = config.dead_retention(name.clone(), *keep);
        }
        config
    }

    pub(crate) fn http_options(&self) -> HttpOptions {
        HttpOptions {
            tokens: self.tokens.clone(),
            request_timeout: self.request_timeout,
            max_body_bytes: self.max_body_bytes,
            max_overdue: self.max_overdue,
            queues: self.queues.keys().cloned().collect(),
            strict_queues: self.strict_queues,
        }
    }
}

/// A configuration that cannot be used: the file, the line if known, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    source: String,
    line: Option<usize>,
    message: String,
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

    fn flag(message: impl Into<String>) -> ConfigError {
        ConfigError { source: "command line".into(), line: None, message: message.into() }
    }
}

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<Spanned<String>>,
    data: Option<Spanned<String>>,
    store: Option<Spanned<String>>,
    tokens: Option<Vec<Spanned<String>>>,
    log_format: Option<Spanned<LogFormat>>,
    grace_period: Option<Spanned<ApiDuration>>,
    request_timeout: Option<Spanned<ApiDuration>>,
    max_payload_bytes: Option<Spanned<i64>>,
    max_batch: Option<Spanned<i64>>,
    max_body_bytes: Option<Spanned<i64>>,
    redis: Option<Spanned<RawRedis>>,
    max_overdue: Option<Spanned<ApiDuration>>,
    strict_queues: Option<Spanned<bool>>,
    egress: Option<RawEgress>,
    #[serde(default)]
    queues: BTreeMap<Spanned<String>, RawQueue>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEgress {
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    allow_private: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRedis {
    prefix: Option<Spanned<String>>,
    wait_replicas: Option<Spanned<i64>>,
    timeout: Option<Spanned<ApiDuration>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    max_attempts: Option<Spanned<i64>>,
    backoff: Option<Spanned<RawBackoff>>,
    shards: Option<Spanned<i64>>,
    repeat: Option<Spanned<crate::api::RepeatBody>>,
    dead_retention: Option<Spanned<ApiDuration>>,
    action: Option<Spanned<RawAction>>,
}

/// The shortest `dead_retention`: a bare number is milliseconds, and `dead_retention =
/// 30` meant as days would delete every dead task at once.
const MIN_DEAD_RETENTION: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    initial: ApiDuration,
    factor: f64,
    max: ApiDuration,
}

/// The error of a configuration file that cannot be read.
pub(crate) fn unreadable(path: &Path, e: &std::io::Error) -> ConfigError {
    ConfigError {
        source: path.display().to_string(),
        line: None,
        message: format!("cannot read the configuration file: {e}"),
    }
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

/// Validates the file (if any) and the flags into settings.
pub(crate) fn settings(args: &ServeArgs, file: Option<(&Path, &str)>) -> Result<Settings, ConfigError> {
    let (raw, source, text) = match file {
        Some((path, text)) => {
            let source = path.display().to_string();
            let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError {
                source: source.clone(),
                line: e.span().map(|span| line_of(text, &span)),
                message: e.message().trim().to_owned(),
            })?;
            (raw, source, text)
        }
        None => (RawConfig::default(), String::new(), ""),
    };
    let at = |span: Range<usize>, message: String| ConfigError {
        source: source.clone(),
        line: Some(line_of(text, &span)),
        message,
    };

    let listen = match (&args.listen, &raw.listen) {
        (Some(flag), _) => check_listen(flag).map_err(ConfigError::flag)?,
        (None, Some(value)) => check_listen(value.get_ref()).map_err(|m| at(value.span(), m))?,
        (None, None) => "127.0.0.1:7575".to_owned(),
    };

    let backend = match (&args.data, &args.store) {
        (Some(dir), _) => Backend::Embedded(dir.clone()),
        (None, Some(url)) => backend_of(url).map_err(ConfigError::flag)?,
        (None, None) => match (&raw.data, &raw.store) {
            (Some(_), Some(store)) => {
                return Err(at(store.span(), "give data (the embedded store) or store (a URL), not both".into()));
            }
            (Some(dir), None) => {
                if dir.get_ref().is_empty() {
                    return Err(at(dir.span(), "data names a directory and cannot be empty".into()));
                }
                Backend::Embedded(PathBuf::from(dir.get_ref()))
            }
            (None, Some(url)) => backend_of(url.get_ref()).map_err(|m| at(url.span(), m))?,
            (None, None) => Backend::Embedded(PathBuf::from("./punctual-data")),
        },
    };

    let tokens = if args.tokens.is_empty() {
        let mut tokens = Vec::new();
        for token in raw.tokens.iter().flatten() {
            check_token(token.get_ref()).map_err(|m| at(token.span(), m))?;
            tokens.push(token.get_ref().clone());
        }
        tokens
    } else {
        for token in &args.tokens {
            check_token(token).map_err(ConfigError::flag)?;
        }
        args.tokens.clone()
    };

    let duration = |flag: Option<Duration>, value: &Option<Spanned<ApiDuration>>, name: &str, default: Duration| {
        let (d, span) = match (flag, value) {
            (Some(d), _) => (d, None),
            (None, Some(v)) => (v.get_ref().0, Some(v.span())),
            (None, None) => return Ok(default),
        };
        if d.is_zero() {
            let message = format!("{name} must be longer than 0");
            return Err(span.map_or_else(|| ConfigError::flag(message.clone()), |s| at(s, message.clone())));
        }
        Ok(d)
    };
    let count = |flag: Option<usize>, value: &Option<Spanned<i64>>, name: &str, default: usize| {
        let (n, span) = match (flag, value) {
            (Some(n), _) => (i64::try_from(n).unwrap_or(i64::MAX), None),
            (None, Some(v)) => (*v.get_ref(), Some(v.span())),
            (None, None) => return Ok(default),
        };
        match usize::try_from(n) {
            Ok(n) if n >= 1 => Ok(n),
            _ => {
                let message = format!("{name} must be at least 1, not {n}");
                Err(span.map_or_else(|| ConfigError::flag(message.clone()), |s| at(s, message.clone())))
            }
        }
    };

    let egress = egress_policy(raw.egress.as_ref(), &at)?;
    let mut queues = HashMap::new();
    let mut shards = HashMap::new();
    let mut dead_retention = HashMap::new();
    let mut actions = Vec::new();
    for (name, queue) in &raw.queues {
        let queue_name = QueueName::new(name.get_ref().as_str()).map_err(|e| at(name.span(), e.to_string()))?;
        let mut defaults = QueueDefaults::default();
        if let Some(n) = &queue.max_attempts {
            defaults.max_attempts = u32::try_from(*n.get_ref()).ok().filter(|n| *n >= 1).ok_or_else(|| {
                at(n.span(), format!("max_attempts must be from 1 to {}, not {}", u32::MAX, n.get_ref()))
            })?;
        }
        if let Some(b) = &queue.backoff {
            let raw = b.get_ref();
            defaults.backoff =
                Backoff::new(raw.initial.0, raw.factor, raw.max.0).map_err(|e| at(b.span(), e.to_string()))?;
        }
        if let Some(repeat) = &queue.repeat {
            defaults.repeat = Some(repeat.get_ref().clone().into_repeat().map_err(|e| {
                let message = match e {
                    crate::error::ApiError::Invalid { field, message } => {
                        format!("{}: {message}", field.unwrap_or_else(|| "repeat".into()))
                    }
                    other => format!("repeat: {other:?}"),
                };
                at(repeat.span(), message)
            })?);
        }
        if let Some(n) = &queue.shards {
            let n = u32::try_from(*n.get_ref())
                .ok()
                .filter(|n| (1..=1024).contains(n))
                .ok_or_else(|| at(n.span(), format!("shards must be from 1 to 1024, not {}", n.get_ref())))?;
            shards.insert(queue_name.clone(), n);
        }
        if let Some(keep) = &queue.dead_retention {
            if keep.get_ref().0 < MIN_DEAD_RETENTION {
                let message = format!(
                    "dead_retention is {}, under the 1m it must at least be: a bare number is milliseconds; \
                     write e.g. \"30d\"",
                    punctual_core::time::format_duration(keep.get_ref().0)
                );
                return Err(at(keep.span(), message));
            }
            dead_retention.insert(queue_name.clone(), keep.get_ref().0);
        }
        if let Some(action) = &queue.action {
            let spec = action.get_ref().to_spec(&egress).map_err(|(span, m)| at(span.unwrap_or(action.span()), m))?;
            actions.push((queue_name.clone(), spec));
        }
        queues.insert(queue_name, defaults);
    }
    let strict_queues = args.strict_queues || raw.strict_queues.as_ref().is_some_and(|s| *s.get_ref());
    if strict_queues && queues.is_empty() {
        let message = "strict_queues refuses every queue the config file does not declare, and it declares none: \
                       add a [queues.\"NAME\"] table for each queue";
        return Err(match &raw.strict_queues {
            Some(value) if !args.strict_queues => at(value.span(), message.into()),
            _ => ConfigError::flag(format!("--strict-queues: {message}")),
        });
    }

    Ok(Settings {
        listen,
        backend,
        tokens,
        log_format: args.log_format.or(raw.log_format.as_ref().map(|f| *f.get_ref())).unwrap_or_default(),
        grace_period: duration(args.grace_period, &raw.grace_period, "grace_period", Duration::from_secs(10))?,
        request_timeout: duration(
            args.request_timeout,
            &raw.request_timeout,
            "request_timeout",
            Duration::from_secs(30),
        )?,
        max_payload_bytes: count(
            args.max_payload_bytes,
            &raw.max_payload_bytes,
            "max_payload_bytes",
            Limits::default().max_payload_bytes,
        )?,
        max_batch: count(args.max_batch, &raw.max_batch, "max_batch", Limits::default().max_batch)?,
        max_body_bytes: count(
            args.max_body_bytes,
            &raw.max_body_bytes,
            "max_body_bytes",
            HttpOptions::default().max_body_bytes,
        )?,
        max_overdue: match (args.max_overdue, &raw.max_overdue) {
            (None, None) => None,
            (flag, value) => Some(duration(flag, value, "max_overdue", Duration::ZERO)?),
        },
        strict_queues,
        queues,
        shards,
        dead_retention,
        redis: redis_settings(raw.redis.as_ref(), &at)?,
        actions,
        egress,
    })
}

fn egress_policy(
    raw: Option<&RawEgress>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<EgressPolicy, ConfigError> {
    let mut policy = EgressPolicy::public_only();
    let Some(raw) = raw else { return Ok(policy) };
    for entry in &raw.allow {
        policy = policy.allow(entry.get_ref()).map_err(|e| at(entry.span(), e.to_string()))?;
    }
    Ok(policy.allow_private(raw.allow_private.unwrap_or(false)))
}

fn redis_settings(
    raw: Option<&Spanned<RawRedis>>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<RedisSettings, ConfigError> {
    let mut settings = RedisSettings::default();
    let Some(raw) = raw else { return Ok(settings) };
    let raw = raw.get_ref();
    if let Some(prefix) = &raw.prefix {
        let valid = !prefix.get_ref().is_empty()
            && prefix.get_ref().len() <= 64
            && prefix.get_ref().bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
        if !valid {
            return Err(at(prefix.span(), "prefix is 1 to 64 of A-Z a-z 0-9 . _ : -".into()));
        }
        settings.prefix = prefix.get_ref().clone();
    }
    if let Some(n) = &raw.wait_replicas {
        settings.wait_replicas = u32::try_from(*n.get_ref())
            .ok()
            .filter(|n| *n <= 16)
            .ok_or_else(|| at(n.span(), format!("wait_replicas must be from 0 to 16, not {}", n.get_ref())))?;
    }
    if let Some(timeout) = &raw.timeout {
        if timeout.get_ref().0 < Duration::from_millis(100) {
            return Err(at(timeout.span(), "timeout must be at least 100ms".into()));
        }
        settings.timeout = timeout.get_ref().0;
    }
    Ok(settings)
}

/// The 1-based line of the byte offset where `span` starts.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    let end = span.start.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
}

fn check_listen(addr: &str) -> Result<String, String> {
    let valid = addr.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(addr.to_owned())
    } else {
        Err(format!("'{addr}' is not an address to listen on: write HOST:PORT, e.g. 127.0.0.1:7575"))
    }
}

fn backend_of(url: &str) -> Result<Backend, String> {
    if ["redis://", "rediss://", "redis-cluster://"].iter().any(|scheme| url.starts_with(scheme)) {
        Ok(Backend::Redis(url.to_owned()))
    } else {
        Err(format!(
            "'{}' is not a store URL: use redis://HOST:PORT or redis-cluster://HOST:PORT,…, \
             or data (--data DIR) for the embedded store",
            punctual_redis::redacted(url)
        ))
    }
}

fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("a token cannot be empty".into());
    }
    if token.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err("a token is printable ASCII without spaces (it travels in an HTTP header)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<Settings, ConfigError> {
        settings(&ServeArgs::default(), Some((Path::new("punctual.toml"), text)))
    }

    fn error_line(text: &str) -> (Option<usize>, String) {
        let e = file(text).unwrap_err();
        assert_eq!(e.source, "punctual.toml");
        (e.line, e.message)
    }

    #[test]
    fn defaults_without_a_file() {
        let s = settings(&ServeArgs::default(), None).unwrap();
        assert_eq!(s.listen, "127.0.0.1:7575");
        assert_eq!(s.backend, Backend::Embedded(PathBuf::from("./punctual-data")));
        assert!(s.tokens.is_empty());
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!((s.max_payload_bytes, s.max_batch), (65_536, 10_000));
        assert_eq!(s.grace_period, Duration::from_secs(10));
        assert_eq!(s.max_overdue, None, "the overdue bound of /readyz is off by default");
    }

    #[test]
    fn max_overdue_comes_from_the_file_or_the_flag() {
        assert_eq!(file("max_overdue = \"90s\"\n").unwrap().max_overdue, Some(Duration::from_secs(90)));
        let args = ServeArgs { max_overdue: Some(Duration::from_secs(5)), ..ServeArgs::default() };
        let s = settings(&args, Some((Path::new("f.toml"), "max_overdue = \"90s\"\n"))).unwrap();
        assert_eq!(s.max_overdue, Some(Duration::from_secs(5)));
        assert_eq!(error_line("\nmax_overdue = \"0s\"\n"), (Some(2), "max_overdue must be longer than 0".into()));
    }

    #[test]
    fn strict_queues_comes_from_the_file_or_the_flag_and_needs_declared_queues() {
        assert!(!file("[queues.q]\n").unwrap().strict_queues, "off by default");
        let s = file("strict_queues = true\n[queues.\"flow.remind\"]\n[queues.b.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\n").unwrap();
        assert!(s.strict_queues);
        let mut declared: Vec<String> = s.http_options().queues.iter().map(ToString::to_string).collect();
        declared.sort();
        assert_eq!(declared, ["b", "flow.remind"], "every table, with or without an action");
        assert!(s.http_options().strict_queues);
        let args = ServeArgs { strict_queues: true, ..ServeArgs::default() };
        let s = settings(&args, Some((Path::new("f.toml"), "strict_queues = false\n[queues.q]\n"))).unwrap();
        assert!(s.strict_queues, "the flag turns it on over the file");
        let (line, message) = error_line("max_batch = 5\nstrict_queues = true\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("it declares none"), "{message}");
        let e = settings(&args, None).unwrap_err();
        assert!(e.to_string().starts_with("command line: --strict-queues: "), "{e}");
        assert_eq!(error_line("strict_queues = \"yes\"\n").0, Some(1));
    }

    #[test]
    fn a_queue_can_give_its_tasks_a_default_repeat() {
        let s = file("[queues.\"flow.remind\"]\nrepeat = { every = \"24h\", times = 7 }\n").unwrap();
        let q = &s.queues[&QueueName::new("flow.remind").unwrap()];
        let expected = punctual_core::Repeat::every(Duration::from_secs(86_400)).unwrap().times(7).unwrap();
        assert_eq!(q.repeat, Some(expected));
        let cron = file("[queues.q]\nrepeat = { cron = \"0 9 * * MON-FRI\", tz = \"Asia/Shanghai\" }\n").unwrap();
        assert!(cron.queues[&QueueName::new("q").unwrap()].repeat.is_some());
        let (line, message) = error_line("[queues.q]\nmax_attempts = 3\nrepeat = { every = \"0ms\" }\n");
        assert_eq!(line, Some(3));
        assert!(message.starts_with("repeat.every:"), "{message}");
        let (line, message) = error_line("[queues.q]\nrepeat = { every = \"1h\", cron = \"* * * * *\" }\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("either every or cron"), "{message}");
    }

    #[test]
    fn the_example_of_api_md_without_its_action_is_read() {
        let s = file(
            r#"
listen = "127.0.0.1:7575"
data = "./punctual-data"            # or: store = "redis://127.0.0.1:6379"
tokens = ["s3cret"]

[queues."order.cancel"]             # defaults for tasks of this queue
max_attempts = 10
backoff = { initial = "1s", factor = 2.0, max = "1h" }
"#,
        )
        .unwrap();
        assert_eq!(s.tokens, vec!["s3cret".to_owned()]);
        let q = &s.queues[&QueueName::new("order.cancel").unwrap()];
        assert_eq!(q.max_attempts, 10);
        assert_eq!(q.backoff, Backoff::default());
    }

    #[test]
    fn the_action_of_api_md_is_read() {
        let text = r#"
[egress]
allow = ["127.0.0.1"]

[queues."order.cancel"]
max_attempts = 10

[queues."order.cancel".action]      # push: the server runs the handler
kind = "webhook"                    # webhook | email | wecom | dingtalk | feishu | slack
url = "http://127.0.0.1:8080/hooks/order-cancel"
secret = "whsec-x"
timeout = "10s"
concurrency = 32

[queues."flow.remind".action]
kind = "wecom"
secret_env = "PATH"
text = "{{ assignee }}: step {{ step }} is overdue since {{ due_local }}"
mention = ["{{ assignee_id }}"]
rate = "20/1m"
timezone = "Asia/Shanghai"

[queues."flow.mail".action]
kind = "email"
smtp = { host = "smtp.example.com", port = 2525, security = "plain", username = "u", password = "p" }
from = "Punctual <noreply@example.com>"
to = ["{{ email }}"]
subject = "Reminder"
text = "Hello {{ name }}"
html = "<p>Hello {{ name }}</p>"
"#;
        let s = file(text).unwrap();
        let names: Vec<&str> = s.actions.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["flow.mail", "flow.remind", "order.cancel"]);
        let (_, hook) = &s.actions[2];
        assert_eq!((hook.kind.name(), hook.concurrency, hook.timeout), ("webhook", 32, Duration::from_secs(10)));
        let (_, wecom) = &s.actions[1];
        assert_eq!(wecom.rate, Some(punctual_actions::Rate::parse("20/1m").unwrap()));
        assert_eq!(hook.final_statuses.as_slice(), &[400, 413, 415, 422], "the default");
        let custom = file(
            "[egress]\nallow = [\"127.0.0.1\"]\n[queues.q.action]\nkind = \"webhook\"\nurl = \"http://127.0.0.1/h\"\nfinal_statuses = [404, 400]\n",
        )
        .unwrap();
        assert_eq!(custom.actions[0].1.final_statuses.as_slice(), &[400, 404]);
        // Secrets never reach a log line.
        let debug = format!("{:?}", s.actions);
        assert!(!debug.contains("whsec-x") && !debug.contains("\"p\""), "{debug}");
        assert_eq!(s.queues[&QueueName::new("order.cancel").unwrap()].max_attempts, 10);
    }

    #[test]
    fn an_action_on_a_refused_address_is_an_error_on_its_url_line_that_says_how_to_allow_it() {
        let hook = "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:8080/hooks\"\n";
        let (line, message) = error_line(hook);
        assert_eq!(line, Some(3));
        assert_eq!(message, "url: refused: 127.0.0.1 is a loopback address; add it to [egress] allow to permit it");
        for allow in ["[egress]\nallow = [\"127.0.0.1\"]\n", "[egress]\nallow = [\"127.0.0.0/8\", \"::1\"]\n"] {
            let s = file(&format!("{allow}{hook}")).unwrap();
            assert_eq!(s.actions.len(), 1, "{allow}");
        }
        // A host name is judged when it is resolved, on every connection, not here.
        assert!(file("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://localhost:8080/hooks\"\n").is_ok());

        let private = "[queues.q.action]\nkind = \"slack\"\ntext = \"hi\"\n\nurl = \"http://10.1.2.3/hook\"\n";
        let (line, message) = error_line(private);
        assert_eq!(line, Some(5));
        assert!(message.contains("10.1.2.3 is a private address"), "{message}");
        assert!(message.contains("or set allow_private = true"), "{message}");
        assert!(file(&format!("[egress]\nallow_private = true\n{private}")).is_ok());
        let metadata = "[egress]\nallow_private = true\n[queues.q.action]\nkind = \"webhook\"\n\
                        url = \"http://[::ffff:169.254.169.254]/latest\"\n";
        let (line, message) = error_line(metadata);
        assert_eq!(line, Some(5), "allow_private does not open link-local: {message}");
        assert!(message.contains("IPv4 169.254.169.254 in IPv6 form"), "{message}");
    }

    #[test]
    fn egress_entries_are_checked_with_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("[egress]\nallow = [\"127.0.0.1\",\n  \"10.0.0.0/33\"]\n", 3, "not a CIDR network"),
            ("[egress]\n\nallow = [\"10.1.2.3/8\"]\n", 3, "did you mean 10.0.0.0/8?"),
            ("[egress]\nallow = [\"http://hooks.internal\"]\n", 2, "is a URL"),
            ("[egress]\nallow = [\"\"]\n", 2, "cannot be empty"),
            ("[egress]\nallow = \"127.0.0.1\"\n", 2, "sequence"),
            ("[egress]\nallow_private = \"yes\"\n", 2, "bool"),
            ("[egress]\ndeny = [\"1.2.3.4\"]\n", 2, "unknown field `deny`"),
        ];
        for (text, line, needle) in cases {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
        let s =
            file("[egress]\nallow = [\"127.0.0.1\", \"fd00::/8\", \"hooks.internal.example\", \"*.corp\"]\n").unwrap();
        let expected = EgressPolicy::public_only()
            .allow("127.0.0.1")
            .and_then(|p| p.allow("fd00::/8"))
            .and_then(|p| p.allow("hooks.internal.example"))
            .and_then(|p| p.allow("*.corp"))
            .unwrap();
        assert_eq!(s.egress, expected);
        assert_eq!(settings(&ServeArgs::default(), None).unwrap().egress, EgressPolicy::public_only());
    }

    /// `punctual check-config` reports these; each names its line.
    pub(crate) const BROKEN_ACTIONS: &[(&str, usize, &str)] = &[
        ("[queues.q.action]\nkind = \"pigeon\"\n", 2, "unknown variant `pigeon`"),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ncolour = 1\n", 4, "unknown field `colour`"),
        ("[queues.q.action]\nkind = \"webhook\"\n\nurl = \"ftp://x/hook\"\n", 4, "must be an http:// or https:// URL"),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"not a url\"\n", 3, "is not a URL"),
        ("[queues.q.action]\nkind = \"webhook\"\n", 2, "needs a url"),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ntext = \"hi\"\n",
            4,
            "text does not apply to a webhook",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nsecret_env = \"PUNCTUAL_SURELY_UNSET_9\"\n",
            4,
            "the environment variable PUNCTUAL_SURELY_UNSET_9 is not set",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nconcurrency = 0\n",
            4,
            "concurrency must be from 1",
        ),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ntimeout = \"soon\"\n", 4, "soon"),
        ("[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nrate = \"20\"\n", 5, "not a rate"),
        ("[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\n\ntext = \"Hello {{ name \"\n", 5, "syntax error"),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nmention = [\"ok\",\n \"{% if %}\"]\n",
            6,
            "mention[1]",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = [400,\n  410]\n",
            5,
            "final_statuses[1]: 410 (Gone) always means done",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = [302]\n",
            4,
            "final_statuses[0]: 302 is not a status that can be final: give statuses from 400 to 599",
        ),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = 404\n", 4, "sequence"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\nfinal_statuses = [404]\n",
            8,
            "final_statuses does not apply to an email action",
        ),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nmention_mobiles = [\"1\"]\n",
            5,
            "does not apply to a slack",
        ),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\ntimezone = \"Mars/Base\"\n",
            5,
            "IANA",
        ),
        ("[queues.q.action]\nkind = \"wecom\"\ntext = \"hi\"\n", 2, "needs its key"),
        ("[queues.q.action]\nkind = \"dingtalk\"\ntext = \"hi\"\n", 2, "needs its webhook url"),
        ("[queues.q.action]\nkind = \"feishu\"\nurl = \"https://x\"\n", 2, "needs a text template"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\", security = \"ssl\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\n",
            3,
            "not an SMTP security",
        ),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"not an address\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\n",
            4,
            "is not an email address",
        ),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\",\n  \"{{ oops\"]\nsubject = \"s\"\ntext = \"t\"\n",
            6,
            "template to[1]",
        ),
        ("[queues.q.action]\nkind = \"email\"\nfrom = \"a@b.c\"\n", 2, "needs an [smtp] table"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\", pasword = \"x\" }\n",
            3,
            "unknown field `pasword`",
        ),
    ];

    #[test]
    fn broken_actions_are_refused_with_their_line() {
        for (text, line, needle) in BROKEN_ACTIONS {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("listen = \"127.0.0.1:7575\"\nlisten_port = 1\n", 2, "listen_port"),
            ("\n\nlisten = \"nowhere\"\n", 3, "HOST:PORT"),
            ("data = \"d\"\nstore = \"redis://x:1\"\n", 2, "not both"),
            ("store = \"mysql://x\"\n", 1, "not a store URL"),
            ("tokens = [\"ok\",\n  \"has space\"]\n", 2, "printable"),
            ("grace_period = \"soon\"\n", 1, "soon"),
            ("request_timeout = 0\n", 1, "longer than 0"),
            ("max_batch = 0\n", 1, "at least 1"),
            ("log_format = \"xml\"\n", 1, "xml"),
            ("[queues.\"bad/name\"]\nmax_attempts = 1\n", 1, "queue"),
            ("[queues.q]\nmax_attempts = 0\n", 2, "max_attempts"),
            ("[queues.q]\n\nbackoff = { initial = \"1s\", factor = 0.5, max = \"1h\" }\n", 3, "factor"),
            ("[queues.q]\nbackoff = { initial = \"1s\", factor = 2.0 }\n", 2, "max"),
            ("[queues.q]\nretries = 3\n", 2, "retries"),
            ("listen = \n", 1, ""),
        ];
        for (text, line, needle) in cases {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn flags_override_the_file() {
        let text = "listen = \"127.0.0.1:1\"\ndata = \"from-file\"\ntokens = [\"a\"]\nmax_batch = 5\n";
        let args = ServeArgs {
            listen: Some("0.0.0.0:2".into()),
            store: Some("redis://127.0.0.1:6379".into()),
            tokens: vec!["b".into()],
            ..ServeArgs::default()
        };
        let s = settings(&args, Some((Path::new("f.toml"), text))).unwrap();
        assert_eq!(s.listen, "0.0.0.0:2");
        assert_eq!(s.backend, Backend::Redis("redis://127.0.0.1:6379".into()));
        assert_eq!(s.tokens, vec!["b".to_owned()]);
        assert_eq!(s.max_batch, 5);
        let e = settings(&ServeArgs { max_batch: Some(0), ..ServeArgs::default() }, None).unwrap_err();
        assert_eq!(e.to_string(), "command line: max_batch must be at least 1, not 0");
    }
}
