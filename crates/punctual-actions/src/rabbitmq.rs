//! RabbitMQ (AMQP 0-9-1): a due task becomes a persistent message on an exchange,
//! and is done only when the broker confirmed it (publisher confirms).

use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Delivery, Outcome};

use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;

/// A `rabbitmq` action's settings. `routing_key` and `body` are templates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RabbitmqConfig {
    /// `amqp://user:pass@host:5672/%2f` or `amqps://…` (a secret: it carries the password).
    pub url: Secret,
    /// The exchange published to; `""` is the default exchange (routing key = queue name).
    pub exchange: String,
    /// The routing key (template).
    pub routing_key: String,
    /// The message body (template); `None` is the standard delivery body as JSON.
    pub body: Option<String>,
    /// Publish as mandatory: a message no queue is bound to receive comes back, and the
    /// task goes to dead with the reason. Default on.
    pub mandatory: bool,
}

impl RabbitmqConfig {
    /// Publishes to `exchange` with `routing_key`, the standard body, mandatory.
    pub fn new(url: Secret, exchange: impl Into<String>, routing_key: impl Into<String>) -> RabbitmqConfig {
        RabbitmqConfig { url, exchange: exchange.into(), routing_key: routing_key.into(), body: None, mandatory: true }
    }
}

/// A built `rabbitmq` action.
#[derive(Debug)]
pub(crate) struct Rabbitmq {}

impl Rabbitmq {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &RabbitmqConfig,
        templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Rabbitmq, ActionError> {
        let _ = (config, templates, timeout, egress, clock);
        Ok(Rabbitmq {})
    }

    /// Publishes one try.
    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let _ = delivery;
        Outcome::retry("SKELETON")
    }
}
