//! Redis streams: a due task is appended (`XADD`) to a stream on any Redis, and is
//! done when Redis answered with the entry's id.

use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Delivery, Outcome};

use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;

/// A `redis-stream` action's settings. `stream` and every field's value are templates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStreamConfig {
    /// `redis://[:pass@]host:6379[/db]` or `rediss://…` (a secret).
    pub url: Secret,
    /// The stream's key (template).
    pub stream: String,
    /// Trims the stream to about this many entries (`MAXLEN ~`).
    pub maxlen: Option<u64>,
    /// The entry's fields, in order: name and value template. Empty: one field `body`
    /// holding the standard delivery body as JSON.
    pub fields: Vec<(String, String)>,
}

impl RedisStreamConfig {
    /// Appends the standard body to `stream`.
    pub fn new(url: Secret, stream: impl Into<String>) -> RedisStreamConfig {
        RedisStreamConfig { url, stream: stream.into(), maxlen: None, fields: Vec::new() }
    }
}

/// A built `redis-stream` action.
#[derive(Debug)]
pub(crate) struct RedisStream {}

impl RedisStream {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &RedisStreamConfig,
        templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<RedisStream, ActionError> {
        let _ = (config, templates, timeout, egress, clock);
        Ok(RedisStream {})
    }

    /// Appends one try.
    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let _ = delivery;
        Outcome::retry("SKELETON")
    }
}
