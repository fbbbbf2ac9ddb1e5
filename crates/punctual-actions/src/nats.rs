//! NATS JetStream: a due task is published to a subject and is done when JetStream
//! acknowledged it; `Nats-Msg-Id` is the delivery id, so the stream drops a duplicate
//! of a try whose acknowledgement was lost.

use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Delivery, Outcome};

use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;

/// A `nats` action's settings. `subject` and `body` are templates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NatsConfig {
    /// `nats://host:4222` (`nats://user:pass@host:4222`, `tls://…`; a secret).
    pub url: Secret,
    /// The subject published to (template); a JetStream stream must capture it.
    pub subject: String,
    /// The message body (template); `None` is the standard delivery body as JSON.
    pub body: Option<String>,
}

impl NatsConfig {
    /// Publishes the standard body to `subject`.
    pub fn new(url: Secret, subject: impl Into<String>) -> NatsConfig {
        NatsConfig { url, subject: subject.into(), body: None }
    }
}

/// A built `nats` action.
#[derive(Debug)]
pub(crate) struct Nats {}

impl Nats {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &NatsConfig,
        templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Nats, ActionError> {
        let _ = (config, templates, timeout, egress, clock);
        Ok(Nats {})
    }

    /// Publishes one try.
    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let _ = delivery;
        Outcome::retry("SKELETON")
    }
}
