//! RabbitMQ (AMQP 0-9-1): a due task becomes a persistent message on an exchange,
//! and is done only when the broker confirmed it (publisher confirms).
//!
//! One connection and one confirm channel per action, opened on the first delivery
//! through the action's [`Link`] (the host resolved and screened by the egress policy
//! at each connection), shared by every delivery of the action; a channel or
//! connection that broke is reported to the link, so the next delivery opens a fresh
//! one.
//!
//! | what happened | outcome |
//! |---|---|
//! | the broker acked the message (confirm) | done |
//! | the message came back (`basic.return`: mandatory, no queue bound) | dead: `unroutable: exchange "E" has no queue bound for routing key "K"` |
//! | the broker nacked the message | retry |
//! | no confirm within the action's timeout | retry (and a fresh connection) |
//! | cannot connect, connection reset or closed, channel closed for a transient reason (320 CONNECTION_FORCED, 504, 505, 506, 541, …) | retry (and a fresh connection) |
//! | a refusal retrying cannot cure: 403 ACCESS_REFUSED (bad credentials too), 404 NOT_FOUND (no such exchange), 406 PRECONDITION_FAILED (message larger than the broker's maximum), 311, 312, 402, 501, 502, 503, 530, 540; an address the egress policy refuses; a template that does not render | dead, with the broker's reason |
//!
//! Invariants:
//! - A task is done only on the broker's ack of its message; anything else (no
//!   answer, a nack, a broken link) retries, so a message is never lost and is
//!   published again only when its confirm did not arrive.
//! - Credentials never reach a log line or `last_error`: messages name the broker as
//!   `RabbitMQ amqp://host:port` ([`shown`]), and [`Rabbitmq`]'s `Debug` shows the same.
//! - A refusal that cannot succeed by retrying sends the task to dead at once with the
//!   broker's reason; transient trouble retries with the task's backoff.
//! - A returned message is matched to its delivery by `message_id` (the delivery id),
//!   never by the order of the confirms: the client library hands a return to
//!   whichever confirm of the same batch it resolves first. So a delivery decides only
//!   after every delivery published before it on the channel has recorded its
//!   confirmation (a return always comes before the ack of its message, and so with
//!   the confirm of one published no later). If such a delivery gave up first, a
//!   return may have been lost with it: an ack is then retried, not taken as done.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::protocol::{AMQPError, BasicProperties};
use lapin::tcp::{AsyncTcpStream, OwnedTLSConfig};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::uri::{AMQPScheme, AMQPUri};
use lapin::{Confirmation, ConnectionProperties, ErrorKind};
use punctual_core::{Clock, Delivery, Outcome};
use reqwest::Url;
use tokio::time::Instant;

use crate::broker::{Link, parse_url, screened_addresses, shown};
use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;
use crate::webhook::standard_body;

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

/// AMQP's limit on exchange names and routing keys (a short string).
const SHORT_STRING_MAX: usize = 255;

/// A built `rabbitmq` action.
pub(crate) struct Rabbitmq {
    url: Url,
    /// Boxed, as the action's other large parts: one variant of the deliverers' enum.
    uri: Box<AMQPUri>,
    /// `RabbitMQ amqp://host:port`: how every message names the broker.
    broker: String,
    exchange: String,
    mandatory: bool,
    templates: Templates,
    templated_body: bool,
    timeout: Duration,
    egress: Arc<EgressPolicy>,
    clock: Arc<dyn Clock>,
    link: Box<Link<Publisher>>,
    /// The last connection failure when retrying cannot cure it (bad credentials, an
    /// address the policy refuses): deliveries during the link's pause fail with it too.
    refusal: Mutex<Option<String>>,
}

impl fmt::Debug for Rabbitmq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rabbitmq")
            .field("broker", &self.broker)
            .field("exchange", &self.exchange)
            .field("mandatory", &self.mandatory)
            .field("templates", &self.templates)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The open link of an action: its confirm channel (which keeps its connection open)
/// and the order of the publishes on it.
#[derive(Clone)]
struct Publisher {
    channel: lapin::Channel,
    order: Arc<Order>,
}

/// Why a publish did not end in a confirmation.
enum Trouble {
    /// Retrying cannot help: dead with this reason.
    Refused(String),
    /// Retry; the link is broken when `broken`.
    Transient { error: String, broken: bool },
}

impl Rabbitmq {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &RabbitmqConfig,
        mut templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Rabbitmq, ActionError> {
        let url = parse_url(config.url.expose(), &["amqp", "amqps"], "url")?;
        // The library's own parse (vhost, credentials, query); its message could quote
        // the URL, so it is not shown.
        let uri: AMQPUri = config.url.expose().parse().map_err(|_| {
            ActionError::invalid("url", "url is not a valid AMQP URL: use amqp://user:password@host:5672/vhost")
        })?;
        if config.exchange.len() > SHORT_STRING_MAX {
            return Err(ActionError::invalid("exchange", "exchange must be at most 255 bytes long"));
        }
        templates.add("routing_key", &config.routing_key)?;
        if let Some(body) = &config.body {
            templates.add("body", body)?;
        }
        let broker = format!("RabbitMQ {}", shown(&url));
        Ok(Rabbitmq {
            url,
            uri: Box::new(uri),
            broker,
            exchange: config.exchange.clone(),
            mandatory: config.mandatory,
            templates,
            templated_body: config.body.is_some(),
            timeout,
            egress,
            link: Box::new(Link::new(Arc::clone(&clock))),
            clock,
            refusal: Mutex::new(None),
        })
    }

    /// Publishes one try, with `trace` (the delivery's `traceparent`, …) among the
    /// message's headers, and waits for the broker's confirmation (the module docs'
    /// table).
    pub(crate) async fn deliver(&self, delivery: &Delivery, trace: &[(String, String)]) -> Outcome {
        let deadline = Instant::now() + self.timeout;
        let fired_at = self.clock.now();
        let context = self.templates.context(delivery, fired_at);
        let routing_key = match self.templates.render("routing_key", &context) {
            Ok(key) if key.len() > SHORT_STRING_MAX => {
                return Outcome::fail(format!("the routing key is {} bytes long; AMQP allows at most 255", key.len()));
            }
            Ok(key) => key,
            Err(e) => return Outcome::fail(e),
        };
        let (body, content_type) = if self.templated_body {
            match self.templates.render("body", &context) {
                Ok(body) => (body.into_bytes(), None),
                Err(e) => return Outcome::fail(e),
            }
        } else {
            match standard_body(delivery, fired_at) {
                Ok(body) => (body, Some("application/json")),
                Err(outcome) => return outcome,
            }
        };
        let lent = match tokio::time::timeout_at(deadline, self.link.get(|| self.connect())).await {
            Ok(Ok(lent)) => lent,
            Ok(Err(error)) => return self.connect_failure(error),
            Err(_) => {
                return Outcome::retry(format!(
                    "{}: no connection within the timeout of {} ms",
                    self.broker,
                    self.timeout.as_millis()
                ));
            }
        };
        let message = Message { routing_key: &routing_key, body: &body, content_type, delivery, trace };
        match self.publish(&lent.connection, message, deadline).await {
            Ok(()) => Outcome::Done,
            Err(Trouble::Refused(reason)) => {
                // A refusal closes the channel (a 404) or the connection (a 403 may):
                // the next delivery needs a fresh one.
                self.link.broken(&lent).await;
                Outcome::fail(reason)
            }
            Err(Trouble::Transient { error, broken }) => {
                if broken {
                    self.link.broken(&lent).await;
                }
                Outcome::retry(error)
            }
        }
    }

    /// Publishes `message` on `publisher`'s channel and waits for its confirmation
    /// until `deadline`.
    async fn publish(&self, publisher: &Publisher, message: Message<'_>, deadline: Instant) -> Result<(), Trouble> {
        let delivery = message.delivery;
        let id = delivery.delivery_id.as_str();
        let options = BasicPublishOptions { mandatory: self.mandatory, immediate: false };
        let properties = self.properties(&message);
        let publish = publisher.channel.basic_publish(
            ShortString::from(self.exchange.as_str()),
            ShortString::from(message.routing_key),
            options,
            message.body,
            properties,
        );
        let mut publish = pin!(publish);
        // The first poll registers the message's delivery tag with the channel; taking
        // the ticket in the same critical section keeps tickets in delivery-tag order.
        let (first, mut ticket) = publisher.order.take_ticket(|| {
            let mut context = Context::from_waker(Waker::noop());
            publish.as_mut().poll(&mut context)
        });
        let sent = match first {
            Poll::Ready(result) => result,
            Poll::Pending => match tokio::time::timeout_at(deadline, publish).await {
                Ok(result) => result,
                Err(_) => return Err(self.timed_out("sending the message")),
            },
        };
        let confirm = sent.map_err(|e| self.trouble(&e))?;
        let confirmation = match tokio::time::timeout_at(deadline, confirm).await {
            Ok(result) => result.map_err(|e| self.trouble(&e))?,
            Err(_) => return Err(self.timed_out("waiting for the broker's confirmation")),
        };
        let (acked, returned) = match confirmation {
            Confirmation::Ack(returned) => (true, returned),
            Confirmation::Nack(returned) => (false, returned),
            Confirmation::NotRequested => {
                return Err(Trouble::Transient {
                    error: format!("{}: the channel is not in confirm mode; reconnecting", self.broker),
                    broken: true,
                });
            }
        };
        let returned = returned.and_then(|message| {
            let owner = message.delivery.properties.message_id().as_ref()?.as_str().to_owned();
            Some((owner, Returned { code: message.reply_code, text: message.reply_text.as_str().to_owned() }))
        });
        ticket.settle(returned);
        match publisher.order.verdict(&ticket, id, deadline).await {
            Verdict::Returned(returned) => Err(Trouble::Refused(format!(
                "{}: unroutable: exchange \"{}\" has no queue bound for routing key \"{}\" ({} {})",
                self.broker, self.exchange, message.routing_key, returned.code, returned.text
            ))),
            Verdict::Delivered if acked => Ok(()),
            Verdict::Delivered => Err(Trouble::Transient {
                error: format!("{}: the broker refused the message (nack); it will be published again", self.broker),
                broken: false,
            }),
            Verdict::Unknown => Err(Trouble::Transient {
                error: format!(
                    "{}: the broker confirmed the message, but an earlier publish on the channel gave up \
                     before its confirmation, so a return of this message may have been missed; \
                     it will be published again",
                    self.broker
                ),
                broken: true,
            }),
            Verdict::TimedOut => Err(self.timed_out("waiting for the confirmations of earlier messages")),
        }
    }

    /// A persistent message with its delivery's identity in the properties and headers.
    fn properties(&self, message: &Message<'_>) -> BasicProperties {
        let delivery = message.delivery;
        let task = &delivery.task;
        let mut headers = FieldTable::default();
        let text = |value: &str| AMQPValue::LongString(LongString::from(value));
        headers.insert("delivery_id".into(), text(&delivery.delivery_id));
        headers.insert("attempt".into(), AMQPValue::LongUInt(delivery.attempt));
        headers.insert("due_at".into(), text(&task.due_at.to_string()));
        headers.insert("queue".into(), text(task.queue.as_str()));
        headers.insert("key".into(), text(task.key.as_str()));
        for (name, value) in message.trace {
            headers.insert(name.as_str().into(), text(value));
        }
        let seconds = u64::try_from(self.clock.now().as_millis() / 1000).unwrap_or(0);
        let mut properties = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(ShortString::from(delivery.delivery_id.as_str()))
            .with_timestamp(seconds)
            .with_headers(headers);
        if let Some(content_type) = message.content_type {
            properties = properties.with_content_type(content_type.into());
        }
        properties
    }

    /// Opens a connection to the screened addresses of the URL's host and a confirm
    /// channel on it. The error is a sentence for `last_error`; a refusal retrying
    /// cannot cure is also kept in `refusal`.
    async fn connect(&self) -> Result<Publisher, String> {
        let result = self.open().await;
        let refusal = match &result {
            Err(Trouble::Refused(reason)) => Some(reason.clone()),
            _ => None,
        };
        *lock(&self.refusal) = refusal;
        result.map_err(|trouble| match trouble {
            Trouble::Refused(error) | Trouble::Transient { error, .. } => error,
        })
    }

    async fn open(&self) -> Result<Publisher, Trouble> {
        let (host, port) = self.host_and_port();
        let addresses = screened_addresses(&host, port, &self.egress).await.map_err(|error| {
            let error = format!("{}: {error}", self.broker);
            if error.contains("refused:") {
                Trouble::Refused(error)
            } else {
                Trouble::Transient { error, broken: true }
            }
        })?;
        let tls = (self.uri.scheme == AMQPScheme::AMQPS).then_some(host);
        let runtime = lapin::runtime::default_runtime().map_err(|e| self.trouble(&e))?;
        let connect = async move |_uri, runtime| {
            let stream = AsyncTcpStream::connect(&runtime, addresses.clone()).await?;
            match &tls {
                // The certificate is checked against the URL's host, not the address.
                Some(host) => Ok(stream.into_tls(host, OwnedTLSConfig::default().as_ref()).await?),
                None => Ok(stream),
            }
        };
        let properties = ConnectionProperties::default().with_connection_name("punctual".into());
        let connection = lapin::Connection::connector((*self.uri).clone(), runtime, connect, properties)
            .await
            .map_err(|e| match self.trouble(&e) {
                Trouble::Transient { error, broken } => Trouble::Transient {
                    error: format!("{error} (cannot connect; check that the broker runs and url points to it)"),
                    broken,
                },
                refused => refused,
            })?;
        let channel = connection.create_channel().await.map_err(|e| self.trouble(&e))?;
        channel.confirm_select(ConfirmSelectOptions::default()).await.map_err(|e| self.trouble(&e))?;
        Ok(Publisher { channel, order: Arc::new(Order::default()) })
    }

    /// The host to resolve (an IPv6 address without brackets) and the port.
    fn host_and_port(&self) -> (String, u16) {
        let host = self.url.host_str().unwrap_or("");
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host).to_owned();
        let default = if self.uri.scheme == AMQPScheme::AMQPS { 5671 } else { 5672 };
        (host, self.url.port().unwrap_or(default))
    }

    /// The outcome of a failed [`Link::get`].
    fn connect_failure(&self, error: String) -> Outcome {
        let refused = lock(&self.refusal).as_ref().is_some_and(|refusal| error.starts_with(refusal.as_str()));
        if refused { Outcome::fail(error) } else { Outcome::retry(error) }
    }

    fn timed_out(&self, what: &str) -> Trouble {
        Trouble::Transient {
            error: format!("{}: timed out after {} ms {what}", self.broker, self.timeout.as_millis()),
            broken: true,
        }
    }

    /// Sorts a client error into a refusal or transient trouble.
    fn trouble(&self, error: &lapin::Error) -> Trouble {
        match error.kind() {
            ErrorKind::ProtocolError(amqp) => protocol_trouble(&self.broker, amqp),
            // Lapin keeps the broker's close reason in the channel or connection state.
            ErrorKind::InvalidChannelState(..) | ErrorKind::InvalidConnectionState(_) => Trouble::Transient {
                error: format!("{}: the link to the broker is closed ({error}); reconnecting", self.broker),
                broken: true,
            },
            _ => Trouble::Transient { error: format!("{}: {error}", self.broker), broken: true },
        }
    }
}

/// What [`Rabbitmq::publish`] sends.
struct Message<'a> {
    routing_key: &'a str,
    body: &'a [u8],
    content_type: Option<&'static str>,
    delivery: &'a Delivery,
    /// The delivery's trace headers (`traceparent`, …), added to the message's.
    trace: &'a [(String, String)],
}

/// A broker's channel or connection close: refused when retrying cannot cure it.
fn protocol_trouble(broker: &str, amqp: &AMQPError) -> Trouble {
    let code = amqp.get_id();
    let reason = amqp.get_message().as_str();
    let advice = match code {
        403 => " (check the user and password in url or url_env, and the user's permissions on the vhost)",
        404 => " (declare the exchange, or fix the action's exchange)",
        406 => " (the message is larger than the broker allows, or the exchange's settings differ)",
        530 => " (check the vhost in the url and the user's access to it)",
        _ => "",
    };
    let error = format!("{broker} refused: {code} {reason}{advice}");
    if is_final(code) { Trouble::Refused(error) } else { Trouble::Transient { error, broken: true } }
}

/// The AMQP reply codes that publishing again cannot change: access refused, no such
/// exchange or vhost, a precondition of the message (its size), a message too large
/// for a frame, the broker not implementing what is asked.
fn is_final(code: u16) -> bool {
    matches!(code, 311 | 312 | 402 | 403 | 404 | 406 | 501 | 502 | 503 | 530 | 540)
}

/// Locks `mutex`, whose data stays consistent even if a holder panicked (every
/// change under it is a single step).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a message came back.
#[derive(Debug, Clone)]
struct Returned {
    code: u16,
    text: String,
}

/// The publishes of one channel, in delivery-tag order, and the returns their
/// confirmations carried, by message id.
#[derive(Default)]
struct Order {
    state: Mutex<OrderState>,
    settled: tokio::sync::Notify,
}

#[derive(Default)]
struct OrderState {
    next: u64,
    /// Tickets whose confirmation is not recorded yet.
    open: BTreeSet<u64>,
    /// Returns not yet claimed by their delivery, by message id.
    returned: HashMap<String, Returned>,
    /// The first ticket given up before its confirmation was recorded.
    abandoned: Option<u64>,
}

/// What a delivery's own confirmation, with those before it, says about its message.
enum Verdict {
    Delivered,
    Returned(Returned),
    /// An earlier publish gave up: a return for this one may have gone with it.
    Unknown,
    TimedOut,
}

/// A publish's place in its channel's order; given up when dropped unsettled.
struct Ticket<'a> {
    order: &'a Order,
    seq: u64,
    settled: bool,
}

impl Order {
    /// Runs `first_poll` (the publish's first poll, which takes its delivery tag) and
    /// takes the next ticket, in one critical section.
    fn take_ticket<T>(&self, first_poll: impl FnOnce() -> T) -> (T, Ticket<'_>) {
        let mut state = lock(&self.state);
        let polled = first_poll();
        let seq = state.next;
        state.next += 1;
        state.open.insert(seq);
        (polled, Ticket { order: self, seq, settled: false })
    }

    /// Waits until every ticket before `ticket` is settled, then claims the return of
    /// message `id`, if one came back.
    async fn verdict(&self, ticket: &Ticket<'_>, id: &str, deadline: Instant) -> Verdict {
        debug_assert!(ticket.settled, "a ticket is settled before its verdict");
        loop {
            let mut notified = pin!(self.settled.notified());
            notified.as_mut().enable();
            {
                let mut state = lock(&self.state);
                if state.open.range(..ticket.seq).next().is_none() {
                    if let Some(returned) = state.returned.remove(id) {
                        return Verdict::Returned(returned);
                    }
                    return match state.abandoned {
                        Some(first) if first < ticket.seq => Verdict::Unknown,
                        _ => Verdict::Delivered,
                    };
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Verdict::TimedOut;
            }
        }
    }
}

impl Ticket<'_> {
    /// Records the confirmation: the return it carried (for whichever message it is).
    fn settle(&mut self, returned: Option<(String, Returned)>) {
        let mut state = lock(&self.order.state);
        if let Some((owner, returned)) = returned {
            state.returned.insert(owner, returned);
        }
        state.open.remove(&self.seq);
        self.settled = true;
        drop(state);
        self.order.settled.notify_waiters();
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let mut state = lock(&self.order.state);
        state.open.remove(&self.seq);
        state.abandoned = Some(state.abandoned.map_or(self.seq, |first| first.min(self.seq)));
        drop(state);
        self.order.settled.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_that_retrying_cannot_cure_are_final() {
        for code in [403, 404, 406, 501, 530] {
            assert!(is_final(code), "{code}");
        }
        for code in [320, 405, 504, 505, 506, 541] {
            assert!(!is_final(code), "{code}");
        }
    }

    #[tokio::test]
    async fn a_return_handed_to_another_confirm_reaches_its_own_delivery() {
        let order = Order::default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let (_, mut first) = order.take_ticket(|| ());
        let (_, mut second) = order.take_ticket(|| ());
        // The client library attached the second message's return to the first
        // message's confirm.
        let returned = Returned { code: 312, text: "NO_ROUTE".into() };
        first.settle(Some(("id-2".into(), returned)));
        second.settle(None);
        assert!(matches!(order.verdict(&second, "id-2", deadline).await, Verdict::Returned(r) if r.code == 312));
        assert!(matches!(order.verdict(&first, "id-1", deadline).await, Verdict::Delivered));
    }

    #[tokio::test]
    async fn a_delivery_waits_for_the_confirms_before_it_and_distrusts_one_given_up() {
        let order = Order::default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let (_, first) = order.take_ticket(|| ());
        let (_, mut second) = order.take_ticket(|| ());
        second.settle(None);
        let short = Instant::now() + Duration::from_millis(20);
        assert!(matches!(order.verdict(&second, "id-2", short).await, Verdict::TimedOut));
        drop(first);
        assert!(matches!(order.verdict(&second, "id-2", deadline).await, Verdict::Unknown));
        let (_, mut third) = order.take_ticket(|| ());
        third.settle(None);
        assert!(matches!(order.verdict(&third, "id-3", deadline).await, Verdict::Unknown));
    }
}
