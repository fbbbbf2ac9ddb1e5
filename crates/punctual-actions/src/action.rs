//! An action: what the server runs for every task of a queue — a webhook, an email, a
//! chat message or a message published to a broker (RabbitMQ, NATS JetStream, a Redis
//! stream) — built from an [`ActionSpec`] and run by the core
//! [`Worker`](punctual_core::Worker) as the queue's [`Handler`].
//!
//! Invariants: delivering never returns an error and never panics on bad input: every
//! failure is an [`Outcome`] (retry or fail) with a sentence for `last_error`. A rate
//! limit holds a delivery back before it is sent, never fails it. A delivery of a
//! rate-limited queue confirms its lease with the store just before it takes its slot
//! ([`Delivery::confirm_lease`]): a task cancelled, replaced or whose lease expired
//! while it waited is never sent, and takes no slot. (No other wait comes between the lease and the send:
//! the worker leases only for free slots of the queue's concurrency, and a retry
//! waits in the store as a scheduled task.) Every HTTP action of a process shares one
//! connection pool ([`Runtime`]); time comes from the engine's clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use punctual_core::{BoxError, Clock, Delivery, Handler, Outcome};
use tracing::Instrument;

use crate::chat::{Chat, ChatConfig};
use crate::egress::{EgressPolicy, RefusalNote};
use crate::email::{Email, EmailConfig};
use crate::error::ActionError;
use crate::http::{FinalStatuses, Sender};
use crate::nats::{Nats, NatsConfig};
use crate::rabbitmq::{Rabbitmq, RabbitmqConfig};
use crate::rate::{Rate, RateLimiter, RateSlots, RateStats};
use crate::redis_stream::{RedisStream, RedisStreamConfig};
use crate::secret::SigningSecrets;
use crate::target::TargetSender;
use crate::template::{Templates, zone};
use crate::trace::{TraceHeaders, delivery_span, record_outcome};
use crate::webhook::{Webhook, WebhookConfig};

/// What an action does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActionKind {
    Webhook(WebhookConfig),
    Email(EmailConfig),
    Chat(ChatConfig),
    Rabbitmq(RabbitmqConfig),
    Nats(NatsConfig),
    RedisStream(RedisStreamConfig),
}

impl ActionKind {
    /// The URL schemes of a broker kind's `url` (none for the others).
    pub(crate) fn schemes(&self) -> Vec<&'static str> {
        match self {
            ActionKind::Rabbitmq(_) => vec!["amqp", "amqps"],
            ActionKind::Nats(_) => vec!["nats", "tls"],
            ActionKind::RedisStream(_) => vec!["redis", "rediss"],
            _ => Vec::new(),
        }
    }

    /// The configuration's name of the kind (`webhook`, `email`, `wecom`, …).
    pub fn name(&self) -> &'static str {
        match self {
            ActionKind::Webhook(_) => "webhook",
            ActionKind::Email(_) => "email",
            ActionKind::Chat(chat) => chat.platform.name(),
            ActionKind::Rabbitmq(_) => "rabbitmq",
            ActionKind::Nats(_) => "nats",
            ActionKind::RedisStream(_) => "redis-stream",
        }
    }
}

/// An action and how it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActionSpec {
    pub kind: ActionKind,
    /// How long one delivery may take (request and answer; each SMTP command).
    pub timeout: Duration,
    /// Deliveries of the queue at once.
    pub concurrency: usize,
    /// At most this many deliveries per window; more wait their turn.
    pub rate: Option<Rate>,
    /// The HTTP answers that send the task to dead at once (webhooks and chat robots;
    /// email goes by the SMTP reply: 5xx dead, 4xx retried).
    pub final_statuses: FinalStatuses,
    /// IANA zone for times in templates (default UTC).
    pub timezone: Option<String>,
}

impl ActionSpec {
    /// The default timeout of a delivery.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default concurrency of a queue.
    pub const DEFAULT_CONCURRENCY: usize = 16;

    /// `kind` with a 10 s timeout, 16 at once, no rate limit, the default final
    /// statuses, times in UTC.
    pub fn new(kind: ActionKind) -> ActionSpec {
        ActionSpec {
            kind,
            timeout: Self::DEFAULT_TIMEOUT,
            concurrency: Self::DEFAULT_CONCURRENCY,
            rate: None,
            final_statuses: FinalStatuses::default(),
            timezone: None,
        }
    }

    /// Sets the timeout of a delivery.
    pub fn timeout(mut self, timeout: Duration) -> ActionSpec {
        self.timeout = timeout;
        self
    }

    /// Sets how many deliveries run at once.
    pub fn concurrency(mut self, n: usize) -> ActionSpec {
        self.concurrency = n;
        self
    }

    /// Limits the rate of deliveries.
    pub fn rate(mut self, rate: Rate) -> ActionSpec {
        self.rate = Some(rate);
        self
    }

    /// Sets which HTTP answers send the task to dead at once.
    pub fn final_statuses(mut self, statuses: FinalStatuses) -> ActionSpec {
        self.final_statuses = statuses;
        self
    }

    /// Shows times in templates in `zone` (IANA name).
    pub fn timezone(mut self, zone: impl Into<String>) -> ActionSpec {
        self.timezone = Some(zone.into());
        self
    }

    /// Checks everything that can be checked without a network: URLs, addresses,
    /// template syntax, the time zone, limits. Needs no runtime.
    pub fn check(&self) -> Result<(), ActionError> {
        self.check_limits()?;
        let templates = Templates::new(zone(self.timezone.as_deref())?);
        match &self.kind {
            ActionKind::Webhook(config) => crate::webhook::check(config).map(drop),
            ActionKind::Email(config) => crate::email::prepare(config, templates).map(drop),
            ActionKind::Chat(config) => {
                // A client that is never used: building one opens nothing.
                let sender = Sender {
                    client: reqwest::Client::new(),
                    timeout: self.timeout,
                    finals: self.final_statuses.clone(),
                    clock: Arc::new(punctual_core::SystemClock),
                    note: RefusalNote::default(),
                    trace: TraceHeaders::default(),
                };
                Chat::new(config.clone(), templates, sender).map(drop)
            }
            broker => {
                // Building a broker action opens nothing either.
                let (egress, clock) = (Arc::new(EgressPolicy::public_only()), Arc::new(punctual_core::SystemClock));
                Deliverer::broker(broker, templates, self.timeout, egress, clock).map(drop)
            }
        }
    }

    /// Checks that the action's host, when it is an IP address, is one `policy`
    /// allows (a host name is checked when it is resolved, on every connection). The
    /// field at fault is `url` (email: `smtp.host`).
    pub fn check_egress(&self, policy: &EgressPolicy) -> Result<(), ActionError> {
        let refused = |field: &str, refusal| ActionError::invalid(field, format!("refused: {refusal}"));
        let url = match &self.kind {
            ActionKind::Webhook(config) => crate::webhook::parse_url(&config.url, "url")?,
            ActionKind::Chat(config) => match config.url.as_deref().or(config.platform.default_url()) {
                Some(url) => crate::webhook::parse_url(url, "url")?,
                None => return Ok(()),
            },
            ActionKind::Email(config) => {
                return policy.check_host(config.smtp.host.trim()).map_err(|r| refused("smtp.host", r));
            }
            ActionKind::Rabbitmq(RabbitmqConfig { url, .. })
            | ActionKind::Nats(NatsConfig { url, .. })
            | ActionKind::RedisStream(RedisStreamConfig { url, .. }) => {
                crate::broker::parse_url(url.expose(), &self.kind.schemes(), "url")?
            }
        };
        policy.check_url(&url).map_err(|r| refused("url", r))
    }

    fn check_limits(&self) -> Result<(), ActionError> {
        if self.timeout.is_zero() {
            return Err(ActionError::invalid("timeout", "timeout must be longer than 0"));
        }
        if !(1..=10_000).contains(&self.concurrency) {
            return Err(ActionError::invalid(
                "concurrency",
                format!("concurrency must be from 1 to 10000, not {}", self.concurrency),
            ));
        }
        Ok(())
    }
}

/// What every action of a process shares: one HTTP connection pool, the egress policy
/// it connects under and the note its HTTP refusals carry ([`Runtime::refusal_note`]),
/// the clock, where rate limits are counted (in this process unless
/// [`Runtime::shared_rates`]), and the trace headers HTTP deliveries carry (none unless
/// [`Runtime::trace_headers`]).
#[derive(Debug, Clone)]
pub struct Runtime {
    client: reqwest::Client,
    egress: Arc<EgressPolicy>,
    note: RefusalNote,
    clock: Arc<dyn Clock>,
    rates: Option<Arc<dyn RateSlots>>,
    trace: TraceHeaders,
    /// Signs deliveries to tasks' targets whose queue has no secret of its own.
    targets_secret: Option<SigningSecrets>,
}

impl Runtime {
    /// A runtime reading time from `clock` (the engine's) whose HTTP actions connect
    /// to public addresses only ([`EgressPolicy::public_only`]).
    pub fn new(clock: Arc<dyn Clock>) -> Result<Runtime, ActionError> {
        Runtime::with_egress(clock, EgressPolicy::public_only())
    }

    /// A runtime whose HTTP actions connect where `egress` allows, e.g.
    /// `EgressPolicy::public_only().allow("10.0.0.0/8")?`.
    pub fn with_egress(clock: Arc<dyn Clock>, egress: EgressPolicy) -> Result<Runtime, ActionError> {
        let egress = Arc::new(egress);
        let client = crate::http::client(Arc::clone(&egress))
            .map_err(|e| ActionError::invalid("http", format!("cannot set up the HTTP client: {e}")))?;
        Ok(Runtime {
            client,
            egress,
            note: RefusalNote::default(),
            clock,
            rates: None,
            trace: TraceHeaders::default(),
            targets_secret: None,
        })
    }

    /// Signs deliveries to tasks' HTTP targets with `secret` when their queue's action
    /// has no secret of its own (the server's `[targets] secret_env`, and
    /// `previous_secret_env` while it is rotated).
    pub fn sign_targets_with(mut self, secret: Option<SigningSecrets>) -> Runtime {
        self.targets_secret = secret;
        self
    }

    /// Sends `headers` (W3C `traceparent`, `tracestate` of the delivery's span) with
    /// every webhook delivery and every delivery to a task's HTTP target of the
    /// actions built on this runtime, so that the receiver continues the trace.
    pub fn trace_headers(mut self, headers: TraceHeaders) -> Runtime {
        self.trace = headers;
        self
    }

    /// The sender of an action's tasks' targets, with this runtime's settings.
    fn target_sender(&self) -> Arc<TargetSender> {
        Arc::new(TargetSender {
            client: self.client.clone(),
            clock: Arc::clone(&self.clock),
            egress: Arc::clone(&self.egress),
            secret: self.targets_secret.clone(),
            note: self.note.clone(),
            trace: self.trace.clone(),
        })
    }

    /// The note added to the `last_error` of every HTTP delivery (a webhook, a chat
    /// robot, a task's target) of this runtime's actions that the egress policy
    /// refuses: setting it on this handle sets it for all of them.
    pub fn refusal_note(&self) -> RefusalNote {
        self.note.clone()
    }

    /// Counts the rate limits of the actions built on this runtime in `slots`, which
    /// every process sharing the store shares (the Redis store's), so that a queue's
    /// `rate` holds across all of them.
    pub fn shared_rates(mut self, slots: Arc<dyn RateSlots>) -> Runtime {
        self.rates = Some(slots);
        self
    }
}

/// A built action: a [`Handler`] for the core worker. Cheap to clone; clones share the
/// connection pool and the rate limiter.
#[derive(Clone)]
pub struct Action {
    inner: Arc<Inner>,
}

struct Inner {
    kind: &'static str,
    concurrency: usize,
    deliverer: Deliverer,
    limiter: Option<RateLimiter>,
    targets: Arc<TargetSender>,
    /// How each delivery's span joins its task's trace.
    trace: TraceHeaders,
}

#[derive(Debug)]
enum Deliverer {
    Webhook(Webhook),
    Email(Email),
    Chat(Chat),
    Rabbitmq(Rabbitmq),
    Nats(Nats),
    RedisStream(RedisStream),
    /// A queue without an action: only its tasks with a target are delivered.
    TargetsOnly,
}

impl Deliverer {
    /// The deliverer of a broker kind (`None` for the others).
    fn broker(
        kind: &ActionKind,
        templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Deliverer, ActionError> {
        Ok(match kind {
            ActionKind::Rabbitmq(config) => {
                Deliverer::Rabbitmq(Rabbitmq::new(config, templates, timeout, egress, clock)?)
            }
            ActionKind::Nats(config) => Deliverer::Nats(Nats::new(config, templates, timeout, egress, clock)?),
            ActionKind::RedisStream(config) => {
                Deliverer::RedisStream(RedisStream::new(config, templates, timeout, egress, clock)?)
            }
            other => return Err(ActionError::invalid("kind", format!("{} is not a broker action", other.name()))),
        })
    }
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Action")
            .field("deliverer", &self.inner.deliverer)
            .field("limiter", &self.inner.limiter)
            .finish()
    }
}

impl Action {
    /// Builds the action of `spec`. Needs a tokio runtime (email's connection pool).
    /// An IP address host the runtime's egress policy refuses is an error (field
    /// `url`): such a host bypasses the resolver that checks names.
    pub fn build(spec: &ActionSpec, runtime: &Runtime) -> Result<Action, ActionError> {
        spec.check_limits()?;
        spec.check_egress(&runtime.egress)?;
        let templates = Templates::new(zone(spec.timezone.as_deref())?);
        let clock = Arc::clone(&runtime.clock);
        let sender = Sender {
            client: runtime.client.clone(),
            timeout: spec.timeout,
            finals: spec.final_statuses.clone(),
            clock: clock.clone(),
            note: runtime.note.clone(),
            trace: runtime.trace.clone(),
        };
        let deliverer = match &spec.kind {
            ActionKind::Webhook(config) => Deliverer::Webhook(Webhook::new(config.clone(), sender)?),
            ActionKind::Email(config) => {
                let egress = Arc::clone(&runtime.egress);
                Deliverer::Email(Email::new(config, templates, spec.timeout, spec.concurrency, egress, clock.clone())?)
            }
            ActionKind::Chat(config) => Deliverer::Chat(Chat::new(config.clone(), templates, sender)?),
            broker => Deliverer::broker(broker, templates, spec.timeout, Arc::clone(&runtime.egress), clock.clone())?,
        };
        Ok(Action {
            inner: Arc::new(Inner {
                kind: spec.kind.name(),
                concurrency: spec.concurrency,
                deliverer,
                limiter: spec.rate.map(|rate| limiter(rate, clock, runtime)),
                targets: runtime.target_sender(),
                trace: runtime.trace.clone(),
            }),
        })
    }

    /// The deliverer of a queue without an action: its tasks with an HTTP target, at
    /// most `concurrency` at once and within `rate` if given. Run it on the target lane
    /// only ([`Lane::Target`](punctual_core::Lane)); kind `targets`.
    pub fn for_targets(concurrency: usize, rate: Option<Rate>, runtime: &Runtime) -> Action {
        Action {
            inner: Arc::new(Inner {
                kind: "targets",
                concurrency,
                deliverer: Deliverer::TargetsOnly,
                limiter: rate.map(|rate| limiter(rate, Arc::clone(&runtime.clock), runtime)),
                targets: runtime.target_sender(),
                trace: runtime.trace.clone(),
            }),
        }
    }

    /// The kind's configuration name (`webhook`, `email`, `wecom`, …).
    pub fn kind(&self) -> &'static str {
        self.inner.kind
    }

    /// Deliveries at once (the worker's concurrency for the queue).
    pub fn concurrency(&self) -> usize {
        self.inner.concurrency
    }

    /// The rate limiter's counters, when the action has a rate limit.
    pub fn rate_stats(&self) -> Option<RateStats> {
        self.inner.limiter.as_ref().map(RateLimiter::stats)
    }

    /// Delivers one try: waits for the rate limit (confirming the lease just before
    /// taking the slot), sends, and reads the answer.
    pub async fn deliver(&self, delivery: &Delivery) -> Outcome {
        if let Some(limiter) = &self.inner.limiter
            && let Err(e) = limiter.acquire(&delivery.task.queue, || delivery.confirm_lease()).await
        {
            // LeaseLost: the worker completes nothing, whatever this says.
            return Outcome::retry(format!("not sent: the lease could not be confirmed before sending: {e}"));
        }
        if let Some(target) = &delivery.task.target {
            return self.inner.targets.deliver(delivery, target, self.signing_secret()).await;
        }
        match &self.inner.deliverer {
            Deliverer::Webhook(webhook) => webhook.deliver(delivery).await,
            Deliverer::Email(email) => email.deliver(delivery).await,
            Deliverer::Chat(chat) => chat.deliver(delivery).await,
            // A broker's message carries the delivery's trace in its headers.
            Deliverer::Rabbitmq(rabbitmq) => rabbitmq.deliver(delivery, &self.trace_of(delivery)).await,
            Deliverer::Nats(nats) => nats.deliver(delivery, &self.trace_of(delivery)).await,
            Deliverer::RedisStream(stream) => stream.deliver(delivery, &self.trace_of(delivery)).await,
            // Run on the target lane only, so a task without a target never comes here.
            Deliverer::TargetsOnly => {
                Outcome::retry("the queue has no action: a task without a target is for pull workers")
            }
        }
    }

    /// The trace headers of `delivery` sent now, in its span (see
    /// [`TraceHeaders::for_task`]).
    fn trace_of(&self, delivery: &Delivery) -> Vec<(String, String)> {
        self.inner.trace.for_task(&delivery.task)
    }

    /// The secret that signs this queue's deliveries, when its action is a webhook
    /// with one: it signs deliveries to the queue's tasks' targets too.
    fn signing_secret(&self) -> Option<&SigningSecrets> {
        match &self.inner.deliverer {
            Deliverer::Webhook(webhook) => webhook.secret(),
            _ => None,
        }
    }
}

/// A rate limiter for an action of `runtime`: counted where its rates are.
fn limiter(rate: Rate, clock: Arc<dyn Clock>, runtime: &Runtime) -> RateLimiter {
    match &runtime.rates {
        Some(slots) => RateLimiter::shared(rate, clock, Arc::clone(slots)),
        None => RateLimiter::new(rate, clock),
    }
}

impl Handler for Action {
    async fn handle(&self, delivery: Delivery) -> Result<Outcome, BoxError> {
        let span = delivery_span(&delivery, self.kind(), &self.inner.trace);
        let outcome = self.deliver(&delivery).instrument(span.clone()).await;
        record_outcome(&span, &outcome);
        // The span ends with the try, before the log line below.
        drop(span);
        let (queue, key, attempt, action) = (&delivery.task.queue, &delivery.task.key, delivery.attempt, self.kind());
        match &outcome {
            Outcome::Done => {}
            // The receiver asked for it ("still pending: remind again"): nothing failed.
            Outcome::Reschedule(_) => {
                tracing::info!(%queue, %key, attempt, action, %outcome, "delivered; the receiver asked to fire again later");
            }
            Outcome::Fail(_) => tracing::warn!(%queue, %key, attempt, action, %outcome, "delivery failed for good"),
            // Retry; `Outcome` is non-exhaustive, so a kind added later is logged as one.
            _ => tracing::info!(%queue, %key, attempt, action, %outcome, "delivery failed; will retry"),
        }
        Ok(outcome)
    }
}
