//! What the broker actions (`rabbitmq`, `nats`, `redis-stream`) share: their URL
//! (parsed, checked against the egress policy, shown without credentials) and one
//! connection per action, opened on first use and again after it broke, with a growing
//! pause between failed attempts.
//!
//! Invariants: at most one connection attempt of an action runs at a time; while an
//! action waits out its pause, deliveries fail fast (retry) with the last error instead
//! of each opening a connection of its own; a connection reported broken is dropped
//! only if it is still the current one (a stale report never closes a fresh
//! connection). The pause starts at [`FIRST_PAUSE`], doubles per failed attempt up to
//! [`MAX_PAUSE`], and is forgotten at the first success. Time comes from the clock.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Timestamp};
use reqwest::Url;

use crate::egress::{EgressPolicy, Resolved};
use crate::error::ActionError;

/// The pause after the first failed connection attempt.
pub(crate) const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between connection attempts.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(10);

/// Parses a broker URL of one of `schemes`; the error names `field` and never shows the
/// URL's credentials.
pub(crate) fn parse_url(text: &str, schemes: &[&str], field: &str) -> Result<Url, ActionError> {
    let url = Url::parse(text).map_err(|e| ActionError::invalid(field, format!("{field} is not a valid URL ({e})")))?;
    if !schemes.contains(&url.scheme()) {
        return Err(ActionError::invalid(
            field,
            format!("{field} must start with {}, not {}://", schemes.join(":// or ") + "://", url.scheme()),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ActionError::invalid(field, format!("{field} needs a host")));
    }
    Ok(url)
}

/// `scheme://host:port` of `url`: what of a broker URL may be shown (no user, password,
/// path or query).
pub(crate) fn shown(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Resolves `host:port` and keeps the addresses `policy` allows
/// ([`EgressPolicy::resolve`]); the error is a sentence for `last_error` (a refusal
/// starts with `refused: `).
pub(crate) async fn screened_addresses(
    host: &str,
    port: u16,
    policy: &EgressPolicy,
) -> Result<Vec<std::net::SocketAddr>, String> {
    match policy.resolve(host, port).await {
        Resolved::Allowed(addresses) => Ok(addresses),
        Resolved::Refused(refusal) => Err(format!("refused: {refusal}")),
        Resolved::Failed(e) => Err(format!("cannot resolve {host}: {e}")),
    }
}

/// One connection of an action, shared by its deliveries (`C` is a cheap clone: a
/// channel, a client handle).
pub(crate) struct Link<C> {
    clock: Arc<dyn Clock>,
    state: tokio::sync::Mutex<LinkState<C>>,
}

impl<C> std::fmt::Debug for Link<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").finish_non_exhaustive()
    }
}

struct LinkState<C> {
    current: Option<(C, u64)>,
    generation: u64,
    failures: u32,
    next_attempt: Option<Timestamp>,
    last_error: String,
}

/// A connection lent to one delivery, with the generation to report it broken by.
#[derive(Debug, Clone)]
pub(crate) struct Lent<C> {
    pub(crate) connection: C,
    pub(crate) generation: u64,
}

impl<C: Clone> Link<C> {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Link<C> {
        Link {
            clock,
            state: tokio::sync::Mutex::new(LinkState {
                current: None,
                generation: 0,
                failures: 0,
                next_attempt: None,
                last_error: String::new(),
            }),
        }
    }

    /// The current connection, or a new one from `connect` when there is none and the
    /// pause after the last failure is over. The error is a sentence for `last_error`.
    pub(crate) async fn get<F, Fut>(&self, connect: F) -> Result<Lent<C>, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<C, String>>,
    {
        let mut state = self.state.lock().await;
        if let Some((connection, generation)) = &state.current {
            return Ok(Lent { connection: connection.clone(), generation: *generation });
        }
        let now = self.clock.now();
        if let Some(next) = state.next_attempt
            && now < next
        {
            let wait = next.saturating_since(now);
            return Err(format!("{} (next connection attempt in {} ms)", state.last_error, wait.as_millis()));
        }
        match connect().await {
            Ok(connection) => {
                state.generation += 1;
                let generation = state.generation;
                state.current = Some((connection.clone(), generation));
                state.failures = 0;
                state.next_attempt = None;
                Ok(Lent { connection, generation })
            }
            Err(error) => {
                let pause = pause_after(state.failures);
                state.failures = state.failures.saturating_add(1);
                state.next_attempt = Some(self.clock.now().saturating_add(pause));
                state.last_error = error.clone();
                Err(error)
            }
        }
    }

    /// Drops the connection `lent` came from, if it is still the current one: the next
    /// delivery connects again.
    pub(crate) async fn broken(&self, lent: &Lent<C>) {
        let mut state = self.state.lock().await;
        if state.current.as_ref().is_some_and(|(_, generation)| *generation == lent.generation) {
            state.current = None;
        }
    }
}

/// The pause after `failures` failed attempts in a row (0: the first failure).
fn pause_after(failures: u32) -> Duration {
    FIRST_PAUSE.saturating_mul(1u32.checked_shl(failures.min(16)).unwrap_or(u32::MAX)).min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_maximum() {
        let pauses: Vec<u128> = (0..10).map(|n| pause_after(n).as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
        assert_eq!(pause_after(u32::MAX), MAX_PAUSE);
    }

    #[test]
    fn urls_are_shown_without_credentials() {
        let url = parse_url("amqp://guest:s3cret@rabbit.example:5672/%2f", &["amqp", "amqps"], "url").unwrap();
        assert_eq!(shown(&url), "amqp://rabbit.example:5672");
        let error = parse_url("http://rabbit.example", &["amqp", "amqps"], "url").unwrap_err();
        assert_eq!(error.field(), "url");
        assert!(error.to_string().contains("amqp:// or amqps://"), "{error}");
    }

    #[tokio::test]
    async fn a_failed_connection_pauses_attempts_and_a_stale_report_keeps_the_fresh_connection() {
        let clock = Arc::new(punctual_core::ManualClock::new(Timestamp::from_millis(1_000_000)));
        let link: Link<u32> = Link::new(clock.clone());
        let error = link.get(|| async { Err::<u32, _>("refused".to_owned()) }).await.unwrap_err();
        assert_eq!(error, "refused");
        // Within the pause: no attempt is made.
        let error = link.get(|| async { panic!("no attempt during the pause") }).await.unwrap_err();
        assert!(error.starts_with("refused (next connection attempt in"), "{error}");
        clock.advance(FIRST_PAUSE);
        let first = link.get(|| async { Ok(7) }).await.unwrap();
        assert_eq!(first.connection, 7);
        link.broken(&first).await;
        let second = link.get(|| async { Ok(8) }).await.unwrap();
        // A late report about the first connection leaves the second in place.
        link.broken(&first).await;
        let again = link.get(|| async { panic!("the current connection is reused") }).await.unwrap();
        assert_eq!((again.connection, again.generation), (8, second.generation));
    }
}
