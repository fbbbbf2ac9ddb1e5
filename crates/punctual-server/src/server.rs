//! Serving the app on a socket, and stopping gracefully.
//!
//! A server without tokens that listens beyond loopback (`--listen 0.0.0.0:7575`) says
//! at start, as a warning, that anyone who can reach it may schedule and cancel tasks,
//! and how to set tokens. Each connection is HTTP/1.1 with a deadline for its request head (a client that
//! trickles headers is cut off) and keep-alive; a head too large to read is answered
//! in the API's error body (`head`). On the stop signal the listener closes,
//! idle connections close, long polls answer at once with no leases, and requests in
//! flight get the grace period to finish; the caller then shuts the engine down
//! ([`stop_engine`]), which makes every acknowledged write durable. Its last line says
//! only what is true: while the store cannot be reached, writes it did not confirm were
//! answered `503` and could not be made durable.
//!
//! With TLS (`--tls-cert`, `--tls-key`, see `tls`) each connection first completes its
//! handshake (within the head deadline), then speaks what ALPN chose: HTTP/2 for `h2`,
//! else HTTP/1.1 as above. SIGHUP reloads the certificate for new handshakes; open
//! connections keep theirs.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::TokioExecutor;
use hyper_util::rt::{TokioIo, TokioTimer};
use punctual_core::{Engine, Store};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::api::ops::store_answers;
use crate::app::app;
use crate::head::Guarded;
use crate::state::AppState;
use crate::tls::Tls;

/// How long a client may take to send a request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest [`stop_engine`] waits to learn whether the store still answers.
const STORE_CHECK_AT_STOP: Duration = Duration::from_secs(2);

/// Serves [`app`] over `state` on `listener` until `stop` completes, then stops
/// gracefully: requests in flight get `grace` to finish. The engine is left running;
/// shut it down afterwards.
pub async fn serve_on<S: Store>(
    listener: TcpListener,
    state: AppState<S>,
    stop: impl Future<Output = ()> + Send,
    grace: Duration,
) {
    serve_with(listener, state, stop, grace, None).await;
}

/// [`serve_on`], over TLS when `tls` is set.
pub(crate) async fn serve_with<S: Store>(
    listener: TcpListener,
    state: AppState<S>,
    stop: impl Future<Output = ()> + Send,
    grace: Duration,
    tls: Option<Tls>,
) {
    if let Ok(address) = listener.local_addr() {
        warn_if_open(address, state.auth().required());
    }
    let router = app(state.clone());
    let stopping = state.shutdown_token().clone();
    let connections = TaskTracker::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    match &tls {
                        None => {
                            connections.spawn(serve_connection(stream, Protocol::Http1, router.clone(), stopping.clone()));
                        }
                        Some(tls) => {
                            connections.spawn(serve_tls(stream, tls.clone(), router.clone(), stopping.clone()));
                        }
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut stop => break,
        }
    }
    drop(listener);
    tracing::info!("stopping: no new connections; finishing requests in flight");
    crate::service_manager::stopping();
    stopping.cancel();
    connections.close();
    if tokio::time::timeout(grace, connections.wait()).await.is_err() {
        tracing::warn!(grace = ?grace, "requests still running after the grace period are abandoned");
    }
}

/// Warns when `address` is reachable from beyond this machine and no token is needed.
fn warn_if_open(address: SocketAddr, tokens: bool) {
    if tokens || address.ip().is_loopback() {
        return;
    }
    tracing::warn!(
        listen = %address,
        "auth is off and the server listens beyond loopback: anyone who can reach it may schedule, cancel and \
         lease tasks. Set tokens (--token, PUNCTUAL_TOKENS or tokens = [...] in the config file) or listen on \
         127.0.0.1"
    );
}

/// Shuts the engine down (stop the workers first) and logs what is durable: every
/// write the store confirmed, and, when the store cannot be reached, that writes it
/// did not confirm could not be made so.
pub(crate) async fn stop_engine<S: Store>(engine: &Engine<S>) -> anyhow::Result<()> {
    let reachable = match tokio::time::timeout(STORE_CHECK_AT_STOP, store_answers(engine)).await {
        Ok(answer) => answer.map_err(|e| e.to_string()),
        Err(_) => Err(format!("it did not answer within {STORE_CHECK_AT_STOP:?}")),
    };
    engine.shutdown().await.context("cannot make every write durable while stopping")?;
    match reachable {
        Ok(()) => tracing::info!("stopped; every acknowledged write is durable"),
        Err(why) => tracing::warn!(
            error = %why,
            "stopped while the store cannot be reached: the writes it confirmed are durable; those it did not \
             confirm were answered 503 and could not be made durable"
        ),
    }
    Ok(())
}

/// Completes the handshake, then serves the protocol ALPN chose.
async fn serve_tls(stream: TcpStream, tls: Tls, router: Router, stopping: CancellationToken) {
    let handshake = tokio::select! {
        done = tokio::time::timeout(HEADER_TIMEOUT, tls.acceptor().accept(stream)) => done,
        () = stopping.cancelled() => return,
    };
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(timeout = ?HEADER_TIMEOUT, "TLS handshake not done in time");
            return;
        }
    };
    let protocol = if stream.get_ref().1.alpn_protocol() == Some(b"h2") { Protocol::Http2 } else { Protocol::Http1 };
    serve_connection(stream, protocol, router, stopping).await;
}

/// What a connection speaks: HTTP/1.1, or HTTP/2 where TLS's ALPN chose `h2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Serves the router on one connection until it ends or the server stops.
async fn serve_connection<IO>(io: IO, protocol: Protocol, router: Router, stopping: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service =
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| router.clone().oneshot(req.map(Body::new)));
    match protocol {
        // A deadline for each request head, and keep-alive; a head too large to read
        // is answered in the error body (`Guarded`).
        Protocol::Http1 => {
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(Guarded::new(io)), service);
            run_connection(conn, http1::Connection::graceful_shutdown, &stopping).await;
        }
        // Its heads are hpack-framed, so hyper's own limits apply and `Guarded` (which
        // reads HTTP/1.1 answers) does not.
        Protocol::Http2 => {
            let mut builder = http2::Builder::new(TokioExecutor::new());
            builder.timer(TokioTimer::new());
            let conn = builder.serve_connection(TokioIo::new(io), service);
            run_connection(conn, http2::Connection::graceful_shutdown, &stopping).await;
        }
    }
}

/// Runs one connection, HTTP/1.1 or HTTP/2, to its end; once `stopping` is cancelled,
/// shuts it down gracefully (`graceful_shutdown`: requests in flight finish, no new
/// ones are read) and waits for that.
async fn run_connection<C>(conn: C, graceful_shutdown: fn(Pin<&mut C>), stopping: &CancellationToken)
where
    C: Future<Output = hyper::Result<()>>,
{
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        }
        () = stopping.cancelled() => {
            graceful_shutdown(conn.as_mut());
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error while stopping");
            }
        }
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub(crate) async fn stop_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
