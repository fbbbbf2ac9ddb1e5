//! NATS JetStream: a due task is published to a subject and is done when JetStream
//! acknowledged it (the stream stored it); `Nats-Msg-Id` is the delivery id, so the
//! stream's duplicate window drops a second copy of a try whose acknowledgement was
//! lost, and the task counts it as done.
//!
//! A message carries the rendered `subject` and `body` (default: the standard delivery
//! body as JSON, with `Content-Type: application/json`) and the headers `Nats-Msg-Id`,
//! `Punctual-Queue`, `Punctual-Key`, `Punctual-Attempt` and `Punctual-Due-At`, and the
//! delivery's `traceparent` (see `trace`) when it has one.
//!
//! Outcomes:
//!
//! | what happened | outcome |
//! |---|---|
//! | JetStream's ack (also one marked `duplicate`: an earlier try landed) | done |
//! | no ack within the timeout, the connection lost, the server unreachable, a stream out of space | retry |
//! | the address refused by the egress policy, credentials rejected | dead |
//! | no stream captures the subject, a permissions violation, the message over the server's or the stream's maximum, a subject that is not a valid one to publish to, a template that does not render | dead |
//!
//! Every `last_error` names the server as `NATS nats://host:port`, never its
//! credentials.
//!
//! Connections. One client per action, opened on the first delivery through
//! [`Link`] (one attempt at a time, growing pauses after failures) and shared by every
//! delivery of the action. At each connection the host is resolved and screened by
//! the egress policy ([`screened_addresses`]); the client is given the screened
//! addresses, never the name, so it cannot reach an address the policy refuses.
//! (Except for `tls://` with a host name: the certificate is checked against the name,
//! so the client is given the name and resolves it again itself, a moment after the
//! screen.) Servers a cluster advertises are ignored: they were not screened.
//!
//! Reconnection belongs to [`Link`], not to async-nats: the client may reconnect in
//! the background at most once per screened address, at once (async-nats cannot be
//! told to never reconnect); after that it closes itself. A delivery that finds the
//! client disconnected, or whose publish ended in a disconnection, reports it broken
//! (`Link::broken`) and the next delivery opens a new client through [`Link`], screened
//! again and paced by its pauses. A delivery that finds the client disconnected before
//! it published asks [`Link`] once more at once, so the first delivery after a server
//! restart goes through without a needless retry.
//!
//! Invariants: a delivery publishes at most one message; it is done only on an ack
//! from JetStream; every failure is an [`Outcome`] with a sentence that says what to
//! do; the server's URL is shown through [`shown`] only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{self, ErrorCode};
use async_nats::{ConnectErrorKind, ConnectOptions, Event, HeaderMap, ServerAddr};
use punctual_core::{Clock, Delivery, Outcome};
use reqwest::Url;

use crate::broker::{Lent, Link, parse_url, screened_addresses, shown};
use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;
use crate::webhook::standard_body;

/// The port of a URL without one.
const DEFAULT_PORT: u16 = 4222;
/// How many of the server's recent `-ERR` lines a client keeps, to explain a publish
/// that got no ack.
const KEPT_SERVER_ERRORS: usize = 16;
/// In a connection failure: the egress policy refused the address (see
/// [`screened_addresses`]). A failure with it is final.
const REFUSED: &str = ": refused: ";
/// In a connection failure: the server rejected the credentials. Final too.
const BAD_CREDENTIALS: &str = " rejected the credentials";

/// A `nats` action's settings. `subject` and `body` are templates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NatsConfig {
    /// `nats://host:4222` (`nats://user:pass@host:4222`, `nats://token@host`, `tls://…`;
    /// a secret).
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
pub(crate) struct Nats {
    url: Url,
    /// `NATS nats://host:port`, the server as every message names it.
    server: String,
    templates: Templates,
    custom_body: bool,
    timeout: Duration,
    egress: Arc<EgressPolicy>,
    clock: Arc<dyn Clock>,
    /// Boxed: a client is large, and the action's enum holds one deliverer of each kind.
    link: Box<Link<Client>>,
}

impl std::fmt::Debug for Nats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nats")
            .field("server", &self.server)
            .field("templates", &self.templates)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A connected client, its JetStream context, and what its server said went wrong.
#[derive(Clone)]
struct Client {
    client: async_nats::Client,
    jetstream: jetstream::Context,
    errors: Arc<ServerErrors>,
}

impl Nats {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &NatsConfig,
        mut templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Nats, ActionError> {
        let mut url = parse_url(config.url.expose(), &["nats", "tls"], "url")?;
        if url.port().is_none() {
            url.set_port(Some(DEFAULT_PORT))
                .map_err(|()| ActionError::invalid("url", "url cannot take a port: give nats://host:4222"))?;
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(ActionError::invalid("url", "url takes no path or query: give nats://host:4222"));
        }
        credentials(&url)?;
        templates.add("subject", &config.subject)?;
        if let Some(body) = &config.body {
            templates.add("body", body)?;
        }
        let server = format!("NATS {}", shown(&url));
        Ok(Nats {
            url,
            server,
            templates,
            custom_body: config.body.is_some(),
            timeout,
            egress,
            link: Box::new(Link::new(Arc::clone(&clock))),
            clock,
        })
    }

    /// Publishes one try, with `trace` (the delivery's `traceparent`, …) among the
    /// message's headers, and waits for JetStream's ack.
    pub(crate) async fn deliver(&self, delivery: &Delivery, trace: &[(String, String)]) -> Outcome {
        let fired_at = self.clock.now();
        let context = self.templates.context(delivery, fired_at);
        let subject = match self.templates.render("subject", &context) {
            Ok(subject) => subject,
            Err(e) => return Outcome::fail(format!("{}: {e}", self.server)),
        };
        if let Err(reason) = check_subject(&subject) {
            return Outcome::fail(format!("{}: subject {subject:?} {reason}", self.server));
        }
        let body = if self.custom_body {
            match self.templates.render("body", &context) {
                Ok(body) => body.into_bytes(),
                Err(e) => return Outcome::fail(format!("{}: {e}", self.server)),
            }
        } else {
            match standard_body(delivery, fired_at) {
                Ok(body) => body,
                Err(outcome) => return outcome,
            }
        };
        let headers = self.headers(delivery, trace);

        let mut lent = match self.client().await {
            Ok(lent) => lent,
            Err(outcome) => return outcome,
        };
        if lent.connection.client.connection_state() != State::Connected {
            // Gone since the last delivery: a new client, at once if no pause is due.
            self.link.broken(&lent).await;
            lent = match self.client().await {
                Ok(lent) => lent,
                Err(outcome) => return outcome,
            };
        }
        let outcome = self.publish(&lent.connection, subject, headers, body).await;
        if !matches!(outcome, Outcome::Done) && lent.connection.client.connection_state() != State::Connected {
            self.link.broken(&lent).await;
        }
        outcome
    }

    fn headers(&self, delivery: &Delivery, trace: &[(String, String)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, delivery.delivery_id.as_str());
        headers.insert("Punctual-Queue", delivery.task.queue.as_str());
        headers.insert("Punctual-Key", delivery.task.key.as_str());
        headers.insert("Punctual-Attempt", delivery.attempt.to_string().as_str());
        headers.insert("Punctual-Due-At", delivery.task.due_at.to_string().as_str());
        for (name, value) in trace {
            headers.insert(name.as_str(), value.as_str());
        }
        if !self.custom_body {
            // NATS header names are case-sensitive: written as HTTP spells them.
            headers.insert("Content-Type", "application/json");
        }
        headers
    }

    /// The action's client, connected now if there is none.
    async fn client(&self) -> Result<Lent<Client>, Outcome> {
        self.link.get(|| self.connect()).await.map_err(|error| {
            if error.contains(REFUSED) || error.contains(BAD_CREDENTIALS) {
                Outcome::fail(error)
            } else {
                Outcome::retry(error)
            }
        })
    }

    /// Resolves and screens the host, then connects to the allowed addresses.
    async fn connect(&self) -> Result<Client, String> {
        let server = &self.server;
        // An IPv6 host comes in brackets.
        let host = self.url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = self.url.port().unwrap_or(DEFAULT_PORT);
        let addresses = tokio::time::timeout(self.timeout, screened_addresses(&host, port, &self.egress))
            .await
            .map_err(|_| format!("{server}: resolving {host} took longer than {} ms", self.timeout.as_millis()))?
            .map_err(|reason| format!("{server}: {reason}"))?;
        let servers = self.server_addrs(&host, port, &addresses)?;

        let errors = Arc::new(ServerErrors::default());
        let mut options = ConnectOptions::new()
            .name("punctual")
            .connection_timeout(self.timeout)
            .request_timeout(Some(self.timeout))
            // The fewest background reconnects async-nats allows (see the module docs).
            .max_reconnects(servers.len())
            .ignore_discovered_servers()
            .retain_servers_order()
            // A connection that went silent is noticed within a few timeouts.
            .ping_interval(self.timeout.clamp(Duration::from_secs(1), Duration::from_secs(60)))
            .event_callback({
                let errors = Arc::clone(&errors);
                move |event| {
                    if let Event::ServerError(error) = &event {
                        errors.push(error.to_string());
                    }
                    async {}
                }
            });
        match credentials(&self.url).map_err(|e| format!("{server}: {e}"))? {
            Credentials::None => {}
            Credentials::Token(token) => options = options.token(token),
            Credentials::UserPassword(user, password) => options = options.user_and_password(user, password),
        }
        if self.url.scheme() == "tls" {
            options = options.require_tls(true);
        }
        let connecting = async_nats::connect_with_options(servers, options);
        // Bounds the whole attempt, not only each address's handshake.
        let attempt = self.timeout.saturating_mul(u32::try_from(addresses.len()).unwrap_or(u32::MAX));
        let client = match tokio::time::timeout(attempt, connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(connect_failure(server, e.kind(), &e.to_string())),
            Err(_) => return Err(format!("{server}: no connection within {} ms", attempt.as_millis())),
        };
        let jetstream = jetstream::ContextBuilder::new().timeout(self.timeout).build(client.clone());
        Ok(Client { client, jetstream, errors })
    }

    /// The addresses the client may connect to: the screened ones, or the name for
    /// `tls://` (see the module docs).
    fn server_addrs(&self, host: &str, port: u16, addresses: &[SocketAddr]) -> Result<Vec<ServerAddr>, String> {
        let scheme = self.url.scheme();
        let texts: Vec<String> = if scheme == "tls" && host.parse::<std::net::IpAddr>().is_err() {
            vec![format!("tls://{host}:{port}")]
        } else {
            addresses.iter().map(|address| format!("{scheme}://{address}")).collect()
        };
        texts
            .iter()
            .map(|text| {
                text.parse::<ServerAddr>().map_err(|e| format!("{}: {text} is not an address ({e})", self.server))
            })
            .collect()
    }

    /// Publishes and waits for JetStream's ack within the timeout.
    async fn publish(&self, client: &Client, subject: String, headers: HeaderMap, body: Vec<u8>) -> Outcome {
        let server = &self.server;
        let seen = client.errors.seen();
        let mut errors = client.errors.subscribe();
        let publishing = async {
            let ack = client.jetstream.publish_with_headers(subject.clone(), headers, body.into()).await?;
            ack.await
        };
        // A permissions violation comes as a server error, not as an answer: the ack
        // would never come.
        let refused = async {
            loop {
                if let Some(reason) = client.errors.violation_since(seen, &subject) {
                    return reason;
                }
                if errors.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        let result = tokio::select! {
            result = tokio::time::timeout(self.timeout, publishing) => result,
            reason = refused => {
                return Outcome::fail(format!("{server} refused to let punctual publish to {subject:?}: {reason}; \
                    grant the user publish permission on it (and subscribe on _INBOX.>)"));
            }
        };
        match result {
            Ok(Ok(_ack)) => Outcome::Done,
            Ok(Err(e)) => {
                if let Some(reason) = client.errors.violation_since(seen, &subject) {
                    return Outcome::fail(format!("{server} refused to let punctual publish to {subject:?}: {reason}"));
                }
                publish_failure(server, &subject, &e, client.client.connection_state())
            }
            Err(_) => {
                if let Some(reason) = client.errors.violation_since(seen, &subject) {
                    return Outcome::fail(format!("{server} refused to let punctual publish to {subject:?}: {reason}"));
                }
                Outcome::retry(format!(
                    "{server}: no acknowledgement from JetStream within {} ms for {subject:?}",
                    self.timeout.as_millis()
                ))
            }
        }
    }
}

/// The outcome of a publish that failed, when the client's state is `state`.
fn publish_failure(server: &str, subject: &str, error: &PublishError, state: State) -> Outcome {
    match error.kind() {
        PublishErrorKind::StreamNotFound => Outcome::fail(format!(
            "{server}: no JetStream stream captures the subject {subject:?} (no responders): \
             add it to a stream's subjects, e.g. nats stream add --subjects '{subject}'"
        )),
        PublishErrorKind::MaxPayloadExceeded => Outcome::fail(format!(
            "{server}: the message to {subject:?} is larger than the server's max_payload ({error}): \
             make the body smaller or raise max_payload"
        )),
        PublishErrorKind::TimedOut => {
            Outcome::retry(format!("{server}: no acknowledgement from JetStream in time for {subject:?}"))
        }
        PublishErrorKind::BrokenPipe => {
            Outcome::retry(format!("{server}: the connection closed before JetStream acknowledged {subject:?}"))
        }
        PublishErrorKind::MaxAckPending => {
            Outcome::retry(format!("{server}: too many publishes wait for their acknowledgement"))
        }
        // Neither is asked for: no expected last id or sequence is sent.
        PublishErrorKind::WrongLastMessageId | PublishErrorKind::WrongLastSequence => {
            Outcome::fail(format!("{server}: JetStream refused the message to {subject:?}: {error}"))
        }
        PublishErrorKind::Other => {
            let api = std::error::Error::source(error).and_then(|source| source.downcast_ref::<jetstream::Error>());
            match api {
                Some(api) => stream_refusal(server, subject, api),
                None if state != State::Connected => {
                    Outcome::retry(format!("{server}: disconnected while publishing to {subject:?} ({error})"))
                }
                None => Outcome::retry(format!("{server}: publishing to {subject:?} failed: {error}")),
            }
        }
    }
}

/// The outcome of JetStream refusing a message with an API error.
fn stream_refusal(server: &str, subject: &str, error: &jetstream::Error) -> Outcome {
    let code = error.error_code();
    let what = format!("{server}: the stream refused the message to {subject:?}: {error}");
    if code == ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM || code == ErrorCode::STREAM_HEADER_EXCEEDS_MAXIMUM {
        Outcome::fail(format!("{what}; make the body smaller or raise the stream's max_msg_size"))
    } else if code == ErrorCode::STREAM_SEALED {
        Outcome::fail(format!("{what}; the stream is sealed: publish to another stream"))
    } else {
        // Out of space, storage trouble, a leader election: may pass.
        Outcome::retry(what)
    }
}

/// The sentence of a failed connection; final ones contain [`REFUSED`] or
/// [`BAD_CREDENTIALS`].
fn connect_failure(server: &str, kind: ConnectErrorKind, error: &str) -> String {
    match kind {
        ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
            format!("{server}{BAD_CREDENTIALS} ({error}): fix the user and password (or token) in the url")
        }
        ConnectErrorKind::TimedOut => format!("{server}: no answer to the connection within the timeout ({error})"),
        ConnectErrorKind::Tls => format!("{server}: TLS failed ({error})"),
        ConnectErrorKind::ServerParse
        | ConnectErrorKind::Dns
        | ConnectErrorKind::Io
        | ConnectErrorKind::MaxReconnects => {
            format!("{server} is unreachable ({error}): is it running, and is the url right?")
        }
    }
}

/// Why `subject` cannot be published to, if it cannot: NATS subjects are tokens
/// separated by dots, without spaces or control characters, and a publish names no
/// wildcard.
fn check_subject(subject: &str) -> Result<(), &'static str> {
    if subject.is_empty() {
        return Err("is not a valid subject to publish to: it is empty");
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("is not a valid subject to publish to: it contains a space or a control character");
    }
    if subject.split('.').any(str::is_empty) {
        return Err("is not a valid subject to publish to: it has an empty token (a dot at an end or two in a row)");
    }
    if subject.split('.').any(|token| token == "*" || token == ">") {
        return Err("is not a valid subject to publish to: it names a wildcard (* or >)");
    }
    Ok(())
}

enum Credentials {
    None,
    Token(String),
    UserPassword(String, String),
}

/// The URL's credentials, percent-decoded: `user:pass@` or a token alone `token@`.
fn credentials(url: &Url) -> Result<Credentials, ActionError> {
    let decode = |part: &str, what: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .map(|text| text.into_owned())
            .map_err(|_| ActionError::invalid("url", format!("url's {what} is not UTF-8 once percent-decoded")))
    };
    let user = decode(url.username(), "user")?;
    Ok(match url.password() {
        Some(password) => Credentials::UserPassword(user, decode(password, "password")?),
        None if user.is_empty() => Credentials::None,
        None => Credentials::Token(user),
    })
}

/// The server's recent `-ERR` lines on one client, numbered, for the deliveries to
/// look for a permissions violation of their own.
#[derive(Debug)]
struct ServerErrors {
    recent: Mutex<VecDeque<(u64, String)>>,
    count: tokio::sync::watch::Sender<u64>,
}

impl Default for ServerErrors {
    fn default() -> ServerErrors {
        ServerErrors { recent: Mutex::new(VecDeque::new()), count: tokio::sync::watch::Sender::new(0) }
    }
}

impl ServerErrors {
    fn push(&self, error: String) {
        let Ok(mut recent) = self.recent.lock() else { return };
        let n = self.count.borrow().saturating_add(1);
        if recent.len() == KEPT_SERVER_ERRORS {
            recent.pop_front();
        }
        recent.push_back((n, error));
        self.count.send_replace(n);
    }

    /// How many errors came so far.
    fn seen(&self) -> u64 {
        *self.count.borrow()
    }

    fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.count.subscribe()
    }

    /// A permissions violation that came after the first `seen` errors and concerns a
    /// publish to `subject` or the client's reply inbox.
    fn violation_since(&self, seen: u64, subject: &str) -> Option<String> {
        let recent = self.recent.lock().ok()?;
        let publish = format!("publish to \"{}\"", subject.to_lowercase());
        recent.iter().filter(|(n, _)| *n > seen).map(|(_, error)| error).find_map(|error| {
            let lower = error.to_lowercase();
            let concerns =
                lower.contains("permissions violation") && (lower.contains(&publish) || lower.contains("subscription"));
            concerns.then(|| error.trim_start_matches("nats: ").to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(url: &str) -> Result<Nats, ActionError> {
        let config = NatsConfig::new(Secret::new(url), "orders.{{ key }}");
        let templates = Templates::new(jiff::tz::TimeZone::UTC);
        let clock: Arc<dyn Clock> = Arc::new(punctual_core::SystemClock);
        Nats::new(&config, templates, Duration::from_secs(5), Arc::new(EgressPolicy::public_only()), clock)
    }

    #[test]
    fn urls_are_checked_and_shown_without_credentials() {
        let nats = build("nats://punctual:s3cr%40t@nats.example").unwrap();
        assert_eq!(nats.server, "NATS nats://nats.example:4222");
        assert!(
            matches!(credentials(&nats.url).unwrap(), Credentials::UserPassword(u, p) if u == "punctual" && p == "s3cr@t")
        );
        assert!(!format!("{nats:?}").contains("s3cr"));
        assert!(
            matches!(credentials(&build("tls://tok@nats.example:4443").unwrap().url).unwrap(), Credentials::Token(t) if t == "tok")
        );
        assert_eq!(build("http://nats.example").unwrap_err().field(), "url");
        assert_eq!(build("nats://nats.example/orders").unwrap_err().field(), "url");
        let config = NatsConfig::new(Secret::new("nats://nats.example"), "orders.{{ key");
        let clock: Arc<dyn Clock> = Arc::new(punctual_core::SystemClock);
        let templates = Templates::new(jiff::tz::TimeZone::UTC);
        let error = Nats::new(&config, templates, Duration::from_secs(1), Arc::new(EgressPolicy::public_only()), clock)
            .unwrap_err();
        assert_eq!(error.field(), "subject");
    }

    #[test]
    fn subjects_to_publish_to_have_no_wildcards_nor_empty_tokens() {
        assert!(check_subject("orders.created.eu-1").is_ok());
        for bad in ["", "orders..created", ".orders", "orders.", "orders.*", "orders.>", "orders created", "a\tb"] {
            assert!(check_subject(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn failures_map_to_outcomes_that_name_the_server() {
        let server = "NATS nats://nats.example:4222";
        let fail = |kind| matches!(publish_failure(server, "a.b", &PublishError::new(kind), State::Connected), Outcome::Fail(e) if e.contains(server));
        let retry = |kind| matches!(publish_failure(server, "a.b", &PublishError::new(kind), State::Connected), Outcome::Retry { error, .. } if error.contains(server));
        assert!(fail(PublishErrorKind::StreamNotFound));
        assert!(fail(PublishErrorKind::MaxPayloadExceeded));
        assert!(retry(PublishErrorKind::TimedOut));
        assert!(retry(PublishErrorKind::BrokenPipe));
        assert!(retry(PublishErrorKind::Other));
        let Outcome::Fail(error) =
            publish_failure(server, "a.b", &PublishError::new(PublishErrorKind::StreamNotFound), State::Connected)
        else {
            panic!()
        };
        assert!(error.contains("\"a.b\"") && error.contains("stream"), "{error}");

        let bad = connect_failure(server, ConnectErrorKind::AuthorizationViolation, "authorization violation");
        assert!(bad.contains(BAD_CREDENTIALS), "{bad}");
        let down = connect_failure(server, ConnectErrorKind::Io, "connection refused");
        assert!(!down.contains(BAD_CREDENTIALS) && !down.contains(REFUSED), "{down}");
    }

    #[test]
    fn a_permissions_violation_is_matched_to_its_subject() {
        let errors = ServerErrors::default();
        errors.push("nats: Permissions Violation for Publish to \"other.subject\"".to_owned());
        let seen = errors.seen();
        assert_eq!(errors.violation_since(0, "orders.eu"), None);
        errors.push("nats: Permissions Violation for Publish to \"orders.eu\"".to_owned());
        assert_eq!(
            errors.violation_since(seen, "orders.eu").as_deref(),
            Some("Permissions Violation for Publish to \"orders.eu\"")
        );
        assert_eq!(errors.violation_since(errors.seen(), "orders.eu"), None, "only errors after the publish count");
    }
}
