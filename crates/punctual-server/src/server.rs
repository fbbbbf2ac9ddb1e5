//! Serving the app on a socket, and stopping gracefully.
//!
//! Each connection is HTTP/1.1 with a deadline for its request head (a client that
//! trickles headers is cut off) and keep-alive; a head too large to read is answered
//! in the API's error body (`head`). On the stop signal the listener closes,
//! idle connections close, long polls answer at once with no leases, and requests in
//! flight get the grace period to finish; the caller then shuts the engine down, which
//! makes every write durable.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use punctual_core::Store;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::app::app;
use crate::head::Guarded;
use crate::state::AppState;

/// How long a client may take to send a request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves [`app`] over `state` on `listener` until `stop` completes, then stops
/// gracefully: requests in flight get `grace` to finish. The engine is left running;
/// shut it down afterwards.
pub async fn serve_on<S: Store>(
    listener: TcpListener,
    state: AppState<S>,
    stop: impl Future<Output = ()> + Send,
    grace: Duration,
) {
    let router = app(state.clone());
    let stopping = state.shutdown_token().clone();
    let connections = TaskTracker::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    connections.spawn(serve_connection(stream, router.clone(), stopping.clone()));
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
    stopping.cancel();
    connections.close();
    if tokio::time::timeout(grace, connections.wait()).await.is_err() {
        tracing::warn!(grace = ?grace, "requests still running after the grace period are abandoned");
    }
}

async fn serve_connection(stream: TcpStream, router: Router, stopping: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let service =
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| router.clone().oneshot(req.map(Body::new)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(Guarded::new(stream)), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        }
        () = stopping.cancelled() => {
            conn.as_mut().graceful_shutdown();
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
