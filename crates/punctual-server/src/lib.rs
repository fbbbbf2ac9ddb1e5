//! `punctual serve`: the HTTP API of `API.md` on top of the engine.
//!
//! Entry points used by the `punctual` binary: [`ServeArgs`] (the flags of
//! `punctual serve`) and [`serve`]. Tests build the router with [`app`] over an
//! [`AppState`], without a socket, or serve it on their own listener with
//! [`serve_on`].
//!
//! Layout: `config` (flags and the TOML file, two stages), `app` (the router and its
//! middleware: auth, timeouts, limits), `routes` (one handler per route), `api`
//! (request and response bodies, validation), `extract` (reading requests), `error`
//! (the one mapping to the error body), `delivery` (leases a client never received are
//! released), `ops` (health, readiness, metrics, OpenAPI, the dashboard), `prom` (the
//! Prometheus text of `/metrics`), `server` (the socket and graceful
//! shutdown).
//!
//! The server is generic over the [`Store`]; [`serve`] picks the backend with one
//! `match`, the seam where the Redis store will plug in.

mod api;
mod app;
mod config;
mod delivery;
mod error;
mod extract;
mod openapi;
mod ops;
mod prom;
mod routes;
mod schema;
mod server;
mod state;

use anyhow::Context;
use punctual_core::{Engine, Store};
use punctual_sqlite::SqliteStore;

pub use app::app;
pub use config::{ConfigError, ServeArgs};
pub use server::serve_on;
pub use state::{AppState, HttpOptions};

use config::{Backend, LogFormat, Settings};

/// The OpenAPI document the server publishes at `/openapi.json`.
pub fn openapi() -> serde_json::Value {
    use utoipa::OpenApi;
    serde_json::to_value(openapi::ApiDoc::openapi()).unwrap_or_default()
}

/// Runs the server until SIGTERM or SIGINT, then stops gracefully and makes every
/// write durable.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let settings = config::load(&args)?;
    init_logging(settings.log_format);
    match settings.backend.clone() {
        Backend::Embedded(dir) => {
            let store = SqliteStore::open(&dir)
                .with_context(|| format!("cannot open the embedded store in {}", dir.display()))?;
            tracing::info!(data = %dir.display(), "embedded store opened");
            run(store, &settings).await
        }
        Backend::Redis(url) => anyhow::bail!(
            "the Redis store ({url}) is not supported yet: this version of punctual has the embedded store \
             only; use --data DIR"
        ),
    }
}

async fn run<S: Store>(store: S, settings: &Settings) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let engine = Engine::start(store, settings.engine_config());
    let state = match AppState::new(engine.clone(), settings.http_options()).await {
        Ok(state) => state,
        Err(e) => {
            let _ = engine.shutdown().await;
            return Err(e).context("cannot read the store's signing secret");
        }
    };
    let address = listener.local_addr().map_or_else(|_| settings.listen.clone(), |a| a.to_string());
    tracing::info!(
        listen = %address,
        auth = if settings.tokens.is_empty() { "off" } else { "bearer tokens" },
        "punctual {} is serving", env!("CARGO_PKG_VERSION")
    );
    serve_on(listener, state, server::stop_signal(), settings.grace_period).await;
    engine.shutdown().await.context("cannot make every write durable while stopping")?;
    tracing::info!("stopped; every write is durable");
    Ok(())
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: log files and collectors get plain text.
    let colours = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colours);
    // A subscriber set before (by an embedding program or a test) stays.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
