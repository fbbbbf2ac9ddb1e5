//! Connecting to a Redis that `punctual import` reads from (the legacy keyspace, a
//! Redisson delayed queue): one multiplexed connection with bounded connect and
//! response times, and errors that name the Redis without its password. Shared by
//! [`crate::keyspace`] and [`crate::redisson`], which know what to read there.
//!
//! Errors are the crate's: `Invalid` for a URL that is not a Redis URL, `Unavailable`
//! for a Redis that cannot be reached.

use std::time::Duration;

use punctual_core::{Error, Result};
use redis::aio::MultiplexedConnection;

use crate::target::redacted;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one call (a page's pipeline, a script) may take.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Checks that `url` is one [`connect`] takes (`redis://…` or `rediss://…`), by its
/// syntax only: nothing is connected. `Invalid` with the reason.
pub fn check_url(url: &str) -> Result<()> {
    client(url).map(drop)
}

fn client(url: &str) -> Result<redis::Client> {
    redis::Client::open(url).map_err(|e| Error::invalid("url", e))
}

/// Connects to the Redis at `url`. `Invalid` for a URL that is not a Redis URL (see
/// [`check_url`]), `Unavailable` for a Redis that does not answer.
pub(crate) async fn connect(url: &str) -> Result<MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    client(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| Error::Unavailable(format!("cannot reach Redis at {} ({e})", redacted(url))))
}
