//! Leases a client never received are given back at once, not left to expire.
//!
//! A long poll can lose its client at three points: while it waits (the handler
//! future is dropped; the wait is cancelled, and a store call already under way runs
//! to completion in its own task), after the store leased tasks but before the
//! response was built, and after the response was built but before its body was
//! handed to the connection. At each point the leases are owned by an
//! [`Undelivered`], whose `Drop` releases them; only a body that was handed over
//! disarms it.
//!
//! Handing the body to the connection is the last point the server can observe: bytes
//! lost in the network after that are indistinguishable from a worker that crashed,
//! and end when the lease expires.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use punctual_core::{Engine, LeaseToken, Store};

/// Leases not yet handed to the client; released when dropped armed.
#[derive(Debug)]
pub(crate) struct Undelivered<S: Store> {
    engine: Engine<S>,
    tokens: Vec<LeaseToken>,
}

impl<S: Store> Undelivered<S> {
    pub(crate) fn new(engine: Engine<S>, tokens: Vec<LeaseToken>) -> Undelivered<S> {
        Undelivered { engine, tokens }
    }

    /// The leases reached the client: keep them.
    pub(crate) fn disarm(mut self) {
        self.tokens.clear();
    }
}

impl<S: Store> Drop for Undelivered<S> {
    fn drop(&mut self) {
        if self.tokens.is_empty() {
            return;
        }
        let tokens = std::mem::take(&mut self.tokens);
        let engine = self.engine.clone();
        // Without a runtime (the process is ending) the leases simply expire.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            for token in &tokens {
                match engine.release(token).await {
                    Ok(()) => {
                        tracing::info!(queue = %token.queue, key = %token.key, "released a lease its client did not receive");
                    }
                    Err(e) => {
                        tracing::warn!(queue = %token.queue, key = %token.key, error = %e, "could not release an undelivered lease; it will expire");
                    }
                }
            }
        });
    }
}

/// A response body of one chunk that keeps its leases until the connection takes the
/// chunk.
#[derive(Debug)]
pub(crate) struct DeliveryBody<S: Store> {
    data: Option<Bytes>,
    leases: Option<Undelivered<S>>,
}

impl<S: Store> DeliveryBody<S> {
    pub(crate) fn new(data: Bytes, leases: Undelivered<S>) -> DeliveryBody<S> {
        DeliveryBody { data: Some(data), leases: Some(leases) }
    }
}

impl<S: Store> Body for DeliveryBody<S> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match this.data.take() {
            Some(data) => {
                if let Some(leases) = this.leases.take() {
                    leases.disarm();
                }
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
