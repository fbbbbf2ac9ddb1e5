//! `punctual serve`: the HTTP API of `API.md` on top of the engine.
//!
//! Entry points used by the `punctual` binary: [`ServeArgs`] (the flags of
//! `punctual serve`) and [`serve`]. Tests build the router with [`app`] over an
//! [`AppState`], without a socket, or serve it on their own listener with
//! [`serve_on`].
//!
//! Layout, in layers: each module imports only those of lower layers (checked by the
//! test `module_graph_has_no_circles`).
//! - leaves: `error` (the one mapping to the error body), `extract` (reading
//!   requests), `metrics` (counted from the engine's events) and `prom` (their
//!   Prometheus text), `delivery` (leases a client never received are released),
//!   `head` (request heads too large for hyper, answered in the error body), `tls`
//!   (HTTPS: the certificate and its reload on SIGHUP), `rates` (push actions' rate
//!   limits counted in Redis), `policy` (the delivery policy every node sharing a
//!   store must share, and the report of nodes that differ);
//! - `bodies`: the API's request and response bodies, their validation and their
//!   OpenAPI schemas;
//! - `config`: flags, the TOML file (two stages), access rules, action tables, the
//!   declared queues and queue settings set through the API;
//! - `shared`: the words the layers above share (`HttpOptions`, who is calling);
//!   `telemetry`: traces over OpenTelemetry (the exporter, the spans of requests,
//!   the `traceparent` read from requests and sent with deliveries);
//! - `state`: what every handler shares;
//! - `api`: the handlers, one file per resource, and the OpenAPI document; `workers`:
//!   the push workers of the config file's queues and of those set through the API;
//! - `app`: the router and its middleware (auth, timeouts, limits); `server`: the
//!   socket and graceful shutdown; this file: start-up and the backend's `match`.
//!
//! The server is generic over the [`Store`]; [`serve`] picks the backend with one
//! `match`: the embedded store or Redis (one server or a Cluster).
//!
//! Push actions: each queue with an action gets its own core [`Worker`](punctual_core::Worker) (concurrency =
//! the action's), so a slow receiver holds only its own queue's slots; on Redis a
//! queue's `rate` is counted in Redis, so it holds across every server (`rates`). On
//! shutdown the HTTP side stops first, then the workers (running deliveries get the
//! grace period), then the engine.
//!
//! The config file's queues and calendars are applied after the engine starts and
//! before anything is served, by the call each SIGHUP makes again
//! (`AppState::apply_config_file`); the engine's config carries only what a reload
//! cannot change.
//!
//! Traces (`[telemetry]`) start before anything else, so that every request's span
//! is exported, and are flushed last, once the engine has stopped.

mod api;
mod app;
mod bodies;
mod calendar_notices;
mod config;
mod delivery;
mod error;
mod extract;
mod head;
pub mod metrics;
mod outbox;
mod policy;
mod prom;
mod rates;
#[cfg(unix)]
mod reload;
mod server;
mod service_manager;
mod shared;
mod state;
mod telemetry;
mod tls;
mod workers;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use punctual_actions::RateSlots;
use punctual_core::{Clock, Engine, Store, SystemClock};
use punctual_redis::{RedisConfig, RedisStore, Target, redacted};
use punctual_sqlite::SqliteStore;

pub use app::app;
pub use config::access::{AccessToken, Permission, QueuePattern};
pub use config::{ConfigError, ServeArgs};
pub use server::serve_on;
pub use shared::HttpOptions;
pub use state::AppState;

use config::{Backend, LogFormat, Settings};

/// Runs the server until SIGTERM or SIGINT, then stops gracefully and makes every
/// acknowledged write durable.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let settings = config::load(&args)?;
    let (traces, trace_layer) = match &settings.telemetry {
        Some(telemetry) => {
            let (traces, layer) = telemetry::Traces::start(telemetry)?;
            (Some(traces), Some(layer))
        }
        None => (None, None),
    };
    init_logging(settings.log_format, trace_layer);
    if let Some(telemetry) = &settings.telemetry {
        tracing::info!(url = %telemetry.traces_url, service = %telemetry.service_name,
            "traces are exported over OTLP to {}", telemetry.traces_url);
    }
    let served = serve_settings(&args, &settings).await;
    // Last: the spans of the requests and deliveries that ended while stopping.
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    served
}

/// [`serve`] once the settings are read and logging is set up.
async fn serve_settings(args: &ServeArgs, settings: &Settings) -> anyhow::Result<()> {
    // Before the store opens: a certificate that does not load stops start-up at once.
    let tls = settings.tls.clone().map(tls::Tls::load).transpose()?;
    match open_store(settings).await? {
        OpenedStore::Embedded(store) => {
            tracing::info!(data = %store_name(settings), "embedded store opened");
            run(store, Sharing::default(), args, settings, tls).await
        }
        OpenedStore::Redis(store) => {
            tracing::info!(store = %store_name(settings), prefix = %settings.redis.prefix, "Redis store connected");
            let sharing = Sharing {
                clock: Some(store.clock()),
                rates: Some(Arc::new(rates::SharedRates(store.rates()))),
                nodes: Some(store.nodes()),
            };
            run(store, sharing, args, settings, tls).await
        }
    }
}

/// A store opened as a server would open it: the backend's `match` for callers that
/// work on a store without serving it (`punctual migrate`).
#[derive(Debug)]
pub enum OpenedStore {
    Embedded(SqliteStore),
    Redis(RedisStore),
}

/// Opens the store a configuration file names (`data`, `store`, `[redis]`, `shards`),
/// as `punctual serve --config FILE` would; without a file, the store at `location`: a
/// directory for the embedded store or a Redis URL, with the default settings.
pub async fn open_configured_store(file: Option<&Path>, location: Option<&str>) -> anyhow::Result<OpenedStore> {
    let mut args = ServeArgs { config: file.map(Path::to_path_buf), ..ServeArgs::default() };
    match location {
        Some(url) if url.contains("://") => args.store = Some(url.to_owned()),
        Some(dir) => args.data = Some(dir.into()),
        None => {}
    }
    open_store(&config::load(&args)?).await
}

/// `settings.backend`'s store, opened; the error says what to check.
async fn open_store(settings: &Settings) -> anyhow::Result<OpenedStore> {
    match &settings.backend {
        Backend::Embedded(dir) => {
            let store = SqliteStore::open(dir)
                .with_context(|| format!("cannot open the embedded store in {}", dir.display()))?;
            Ok(OpenedStore::Embedded(store))
        }
        Backend::Redis(url) => {
            let mut config = RedisConfig::new(Target::parse(url)?);
            config.prefix = settings.redis.prefix.clone();
            config.wait_replicas = settings.redis.wait_replicas;
            config.op_timeout = settings.redis.timeout;
            config.shard_order_slack = settings.redis.shard_order_slack;
            config.shards = settings.shards.clone();
            let store = RedisStore::connect(config).await.map_err(|e| {
                let hint = if e.to_string().contains("certificate") {
                    "its TLS certificate is not signed by an authority this machine trusts \
                     (set SSL_CERT_FILE to the authority's PEM file)"
                } else {
                    "is Redis running there?"
                };
                anyhow::Error::new(e).context(format!("cannot connect to {}; {hint}", redacted(url)))
            })?;
            Ok(OpenedStore::Redis(store))
        }
    }
}

/// The store's location for logs, without a password.
fn store_name(settings: &Settings) -> String {
    match &settings.backend {
        Backend::Embedded(dir) => dir.display().to_string(),
        Backend::Redis(url) => redacted(url),
    }
}

/// What `punctual check-config` found in a valid file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigSummary {
    /// Queues with their own defaults or an action.
    pub queues: usize,
    /// `(queue, kind)` of each action, in queue order.
    pub actions: Vec<(String, String)>,
}

/// Validates a configuration file as `punctual serve --config FILE` would, without
/// starting anything: unknown keys, bad values and URLs, template syntax, secrets whose
/// environment variable is unset. The error names the file and line.
pub fn check_config(path: &Path) -> Result<ConfigSummary, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| config::unreadable(path, &e))?;
    check_config_text(path, &text)
}

/// [`check_config`] on a file's text already read; `path` only names it in errors.
pub fn check_config_text(path: &Path, text: &str) -> Result<ConfigSummary, ConfigError> {
    let settings = config::settings(&ServeArgs::default(), Some((path, text)))?;
    Ok(ConfigSummary {
        queues: settings.queues.len(),
        actions: settings.actions.iter().map(|(q, spec)| (q.to_string(), spec.kind.name().to_owned())).collect(),
    })
}

/// What a store that many servers share gives besides itself: the time they agree on,
/// the rate-limit slots of its queues, and where each server announces its delivery
/// policy. `None`: the system clock, rates counted in this process, no other server
/// (the embedded store, one process).
#[derive(Default)]
struct Sharing {
    clock: Option<Arc<dyn Clock>>,
    rates: Option<Arc<dyn RateSlots>>,
    nodes: Option<punctual_redis::RedisNodes>,
}

/// Serves on `store`, with what it shares with other servers (Redis' time, rates and
/// the nodes' announcements).
async fn run<S: Store>(
    store: S,
    sharing: Sharing,
    args: &ServeArgs,
    settings: &Settings,
    tls: Option<tls::Tls>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    // SIGHUP is caught before anything starts, so that none stops the server; once the
    // API is up it reads the config file again (`reload`).
    let stop_reloads = tokio_util::sync::CancellationToken::new();
    // Also on an early return below.
    let _stop_reloads_on_return = stop_reloads.clone().drop_guard();
    #[cfg(unix)]
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("cannot listen for SIGHUP (which reads the config file again)")?;
    if let Some(tls) = &tls {
        tracing::info!(
            certificate = %tls.files().cert.display(),
            key = %tls.files().key.display(),
            "TLS on, certificate {}; HTTP/2 and HTTP/1.1; SIGHUP reloads it",
            tls.files().cert.display()
        );
    }
    let clock: Arc<dyn Clock> = sharing.clock.unwrap_or_else(|| Arc::new(SystemClock));
    let port = listener.local_addr().map_or(0, |a| a.port());
    let node = policy::node_name(port);
    let engine = Engine::start(store, settings.engine_config().clock(Arc::clone(&clock)).node(node.as_str()));
    let state = match AppState::new(engine.clone(), HttpOptions::from(settings)).await {
        Ok(state) => state,
        Err(e) => {
            let _ = engine.shutdown().await;
            return Err(e).context("cannot read the store's signing secret");
        }
    };
    // The file's queues and calendars, as each SIGHUP applies them again.
    state.apply_config_file(settings).await;
    let stop_api_queues = tokio_util::sync::CancellationToken::new();
    let started = workers::QueueWorkers::start(state.clone(), settings, Arc::clone(&clock), sharing.rates).await;
    let (queue_workers, announcer, drains) = match started {
        Ok(queue_workers) => {
            let announcer = match sharing.nodes {
                Some(nodes) => {
                    let announcer = policy::Announcer {
                        nodes,
                        node,
                        policy: policy::DeliveryPolicy::new(&settings.egress, settings.targets_secret.as_ref()),
                        peers: state.delivery_policy().clone(),
                        note: queue_workers.runtime().refusal_note(),
                        clock,
                    };
                    Some(announcer.start(stop_api_queues.clone()).await)
                }
                None => None,
            };
            tokio::spawn(calendar_notices::warn_until_stopped(engine.clone(), stop_api_queues.clone()));
            let drains = outbox::start(&state, &settings.outboxes, &stop_api_queues);
            (tokio::spawn(queue_workers.follow(stop_api_queues.clone())), announcer, drains)
        }
        Err(e) => {
            let _ = engine.shutdown().await;
            return Err(e);
        }
    };
    #[cfg(unix)]
    let reloads = Some(tokio::spawn(reload::on_hangup(
        hangups,
        state.clone(),
        args.clone(),
        settings.clone(),
        tls.clone(),
        stop_reloads.clone(),
    )));
    #[cfg(not(unix))]
    let reloads: Option<tokio::task::JoinHandle<()>> = None;
    let address = listener.local_addr().map_or_else(|_| settings.listen.clone(), |a| a.to_string());
    tracing::info!(
        listen = %address,
        auth = match (settings.tokens.is_empty(), settings.access.is_empty()) {
            (true, true) => "off",
            (false, true) => "bearer tokens",
            (_, false) => "bearer tokens, some scoped",
        },
        "punctual {} is serving", env!("CARGO_PKG_VERSION")
    );
    service_manager::ready();
    server::serve_with(listener, state, server::stop_signal(), settings.grace_period, tls).await;
    stop_api_queues.cancel();
    stop_reloads.cancel();
    if let Some(reloads) = reloads {
        let _ = reloads.await;
    }
    // Stops the push workers: running deliveries get the grace period.
    let _ = queue_workers.await;
    // The drains stop before the engine: a row applied is deleted in its batch's
    // transaction, or read again by the next drain (and found marked).
    for drain in drains {
        let _ = drain.await;
    }
    if let Some(announcer) = announcer {
        let _ = announcer.await;
    }
    server::stop_engine(&engine).await
}

/// Logs to stderr as `format` says, filtered by `RUST_LOG` (default `info`), and, with
/// `traces`, exports the spans of traces (see `telemetry`).
fn init_logging(format: LogFormat, traces: Option<telemetry::TraceLayer>) {
    use tracing_subscriber::util::SubscriberInitExt;
    // A subscriber set before (by an embedding program or a test) stays.
    let _ = subscriber(format, traces).try_init();
}

/// The process's subscriber: the logs, and the traces layer if any. The spans meant
/// for traces (`telemetry::TARGET`) never show in the logs, whatever `RUST_LOG` says,
/// so that without the traces layer nothing takes them and they cost nothing.
fn subscriber(format: LogFormat, traces: Option<telemetry::TraceLayer>) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        .add_directive(format!("{}=off", telemetry::TARGET).parse().expect("a target's directive parses"));
    // Colours only on a terminal: log files and collectors get plain text.
    let colours = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(colours);
    let logs = match format {
        LogFormat::Text => logs.boxed(),
        LogFormat::Json => logs.json().boxed(),
    };
    let mut layers: Vec<telemetry::TraceLayer> = vec![logs.with_filter(filter).boxed()];
    layers.extend(traces);
    tracing_subscriber::registry().with(layers)
}

#[test]
fn spans_of_traces_are_disabled_without_traces() {
    let span = || telemetry::request_span("lease", &axum::http::Method::POST, "/v1/queues/{queue}/lease");
    for format in [LogFormat::Text, LogFormat::Json] {
        tracing::subscriber::with_default(subscriber(format, None), || {
            assert!(span().is_disabled(), "nothing takes them");
            assert!(tracing::enabled!(tracing::Level::INFO), "the logs go on");
        });
    }
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    tracing::subscriber::with_default(subscriber(LogFormat::Text, Some(telemetry::layer(&provider))), || {
        assert!(!span().is_disabled(), "the traces layer takes them");
    });
}

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
