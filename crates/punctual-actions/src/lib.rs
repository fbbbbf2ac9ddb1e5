//! Push actions of punctual: the handlers the server runs for a queue configured with
//! an action, so no glue code is needed between "the task is due" and "someone is
//! told".
//!
//! - [`webhook`]: a signed `POST` of the task (API.md, "Push actions"), whose answer
//!   decides the outcome (done, reschedule, retry honouring `Retry-After`, dead).
//! - [`email`]: a message over SMTP (plain, STARTTLS or TLS; AUTH; pooled connections).
//! - [`chat`]: WeCom, DingTalk, Feishu/Lark and Slack robots, with their JSON,
//!   signatures, mentions and error codes.
//! - brokers: a message published to RabbitMQ ([`RabbitmqConfig`], publisher
//!   confirms), NATS JetStream ([`NatsConfig`], acknowledged, deduplicated by delivery
//!   id) or a Redis stream ([`RedisStreamConfig`], `XADD`): punctual as the delay layer
//!   in front of a broker a team already runs.
//!
//! Build an [`ActionSpec`], then an [`Action`] with a shared [`Runtime`], and give it to
//! the core [`Worker`](punctual_core::Worker) for its queue.
//!
//! Each delivery runs in a span for traces ([`trace`]); webhooks and tasks' HTTP
//! targets carry its `traceparent` when the runtime is given [`TraceHeaders`].
//!
//! Where HTTP actions may connect is the runtime's [`EgressPolicy`]: public addresses
//! only unless allowed (loopback, private, link-local and the like are refused). A
//! refused connection fails the delivery (dead) with a [`Refusal`] saying what to
//! allow.
//!
//! Invariants: a delivery always ends in an [`Outcome`](punctual_core::Outcome) —
//! transport trouble retries, a refusal or a template error fails (dead, with a clear
//! `last_error`); nothing panics or is dropped silently. No webhook or chat robot
//! connects to an address the egress policy refuses. Secrets are redacted wherever
//! formatted ([`Secret`]). Rate limits delay, never fail ([`RateLimiter`]).

mod action;
mod broker;
pub mod chat;
mod egress;
pub mod email;
mod error;
mod http;
mod nats;
mod rabbitmq;
mod rate;
mod redis_stream;
mod secret;
mod target;
mod template;
pub mod trace;
pub mod webhook;

pub use action::{Action, ActionKind, ActionSpec, Runtime};
pub use chat::{ChatConfig, Platform};
pub use egress::{EgressPolicy, Refusal, RefusalNote};
pub use email::{EmailConfig, SmtpConfig, SmtpSecurity};
pub use error::ActionError;
pub use http::{FinalStatuses, hex};
pub use nats::NatsConfig;
pub use rabbitmq::RabbitmqConfig;
pub use rate::{Rate, RateLimiter, RateSlots, RateStats, Slot, SlotFuture};
pub use redis_stream::RedisStreamConfig;
pub use secret::{Secret, SigningSecrets};
pub use template::check_template;
pub use trace::TraceHeaders;
pub use webhook::{WebhookConfig, signature};

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
