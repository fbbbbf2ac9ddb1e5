//! The email action: one message per delivery, over SMTP with lettre.
//!
//! Subject, text body, optional HTML body (escaped) and recipients are templates (see
//! `template`). The transport is lettre's pooled async tokio transport: connections are
//! reused across deliveries, at most the action's concurrency of them.
//!
//! The SMTP host is under the egress policy like every other action's: an IP literal
//! is checked when the action is built, and a name is resolved here before every send
//! and screened ([`EgressPolicy::resolve`]); lettre is then pointed at the first
//! allowed address, never at the name (TLS still verifies the certificate against the
//! name). A name that resolves only to refused addresses fails the delivery (dead,
//! with the refusal). The pool belongs to the address it connects to: when the name
//! resolves elsewhere, a new pool is made for the new address. Security is
//! `plain` (no TLS: a local relay), `starttls` (upgrade required; nothing is sent if
//! the server cannot) or `tls` (implicit TLS, "SMTPS"); AUTH happens when a username
//! is set.
//!
//! Outcomes: the server accepted the message → done; a permanent SMTP refusal (5xx,
//! e.g. an unknown mailbox) → dead with the server's answer; anything else (4xx,
//! timeout, connection or TLS trouble) → retry. A template that fails to render, or a
//! recipient that is not an address → dead. The `Message-ID` is
//! `<delivery_id@punctual>`, the same for every try of one occurrence, so receiving
//! systems can drop duplicates.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use punctual_core::{Clock, Delivery, Outcome};

use crate::egress::{EgressPolicy, Resolved};
use crate::error::ActionError;
use crate::http::chain;
use crate::secret::Secret;
use crate::template::Templates;

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SmtpSecurity {
    /// No TLS (port 25 by default): for a relay on the same host or network.
    Plain,
    /// Plain connection upgraded with STARTTLS, required (port 587 by default).
    #[default]
    StartTls,
    /// TLS from the first byte (port 465 by default).
    Tls,
}

impl SmtpSecurity {
    /// Parses `plain`, `starttls` or `tls`.
    pub fn parse(text: &str) -> Result<SmtpSecurity, String> {
        match text {
            "plain" => Ok(SmtpSecurity::Plain),
            "starttls" => Ok(SmtpSecurity::StartTls),
            "tls" => Ok(SmtpSecurity::Tls),
            other => Err(format!("'{other}' is not an SMTP security: use plain, starttls or tls")),
        }
    }

    fn default_port(self) -> u16 {
        match self {
            SmtpSecurity::Plain => 25,
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
        }
    }
}

/// Where and how to send.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmtpConfig {
    pub host: String,
    /// Defaults by security: 25, 587 or 465.
    pub port: Option<u16>,
    pub security: SmtpSecurity,
    /// AUTH (PLAIN or LOGIN, whichever the server offers) when set.
    pub username: Option<String>,
    pub password: Option<Secret>,
}

impl SmtpConfig {
    /// A server at `host` with `security`, default port, no AUTH.
    pub fn new(host: impl Into<String>, security: SmtpSecurity) -> SmtpConfig {
        SmtpConfig { host: host.into(), port: None, security, username: None, password: None }
    }
}

/// An email action's settings. Everything but `smtp` and `from` is a template.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmailConfig {
    pub smtp: SmtpConfig,
    /// The sender, `Name <address>` or `address`.
    pub from: String,
    /// Recipients; each may render to several addresses separated by commas.
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
}

impl EmailConfig {
    /// A message from `from` to `to` with `subject` and `text`.
    pub fn new(smtp: SmtpConfig, from: impl Into<String>, to: Vec<String>, subject: &str, text: &str) -> EmailConfig {
        EmailConfig {
            smtp,
            from: from.into(),
            to,
            cc: Vec::new(),
            subject: subject.to_owned(),
            text: text.to_owned(),
            html: None,
        }
    }
}

/// How the connection to the server's address is protected: TLS verifies the
/// certificate against the configured host name, whatever address it resolved to.
fn tls_parameters(smtp: &SmtpConfig) -> Result<Option<Tls>, ActionError> {
    let parameters = || {
        TlsParameters::new(smtp.host.clone())
            .map_err(|e| ActionError::invalid("smtp.host", format!("cannot set up TLS for '{}': {e}", smtp.host)))
    };
    Ok(match smtp.security {
        SmtpSecurity::Plain => None,
        SmtpSecurity::StartTls => Some(Tls::Required(parameters()?)),
        SmtpSecurity::Tls => Some(Tls::Wrapper(parameters()?)),
    })
}

/// An email action without its transport: what [`crate::ActionSpec::check`] builds.
pub(crate) struct Prepared {
    from: Mailbox,
    to: usize,
    cc: usize,
    html: bool,
    templates: Templates,
}

pub(crate) fn prepare(config: &EmailConfig, mut templates: Templates) -> Result<Prepared, ActionError> {
    if config.smtp.host.trim().is_empty() {
        return Err(ActionError::invalid("smtp.host", "the SMTP host cannot be empty"));
    }
    if config.smtp.password.is_some() && config.smtp.username.is_none() {
        return Err(ActionError::invalid("smtp.password", "a password needs a username"));
    }
    let from: Mailbox = config
        .from
        .parse()
        .map_err(|e| ActionError::invalid("from", format!("'{}' is not an email address ({e})", config.from)))?;
    if config.to.is_empty() {
        return Err(ActionError::invalid("to", "an email needs at least one recipient"));
    }
    templates.add("subject", &config.subject)?;
    templates.add("text", &config.text)?;
    if let Some(html) = &config.html {
        templates.add("html", html)?;
    }
    for (i, to) in config.to.iter().enumerate() {
        templates.add(&format!("to[{i}]"), to)?;
    }
    for (i, cc) in config.cc.iter().enumerate() {
        templates.add(&format!("cc[{i}]"), cc)?;
    }
    Ok(Prepared { from, to: config.to.len(), cc: config.cc.len(), html: config.html.is_some(), templates })
}

pub(crate) struct Email {
    prepared: Prepared,
    smtp: SmtpConfig,
    port: u16,
    timeout: Duration,
    pool_size: u32,
    egress: Arc<EgressPolicy>,
    /// The pooled transport to the address the host last resolved to.
    transport: Mutex<Option<(IpAddr, AsyncSmtpTransport<Tokio1Executor>)>>,
    server: String,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Email").field("server", &self.server).field("from", &self.prepared.from.to_string()).finish()
    }
}

impl Email {
    /// Needs a tokio runtime (the connection pool runs a cleanup task).
    pub(crate) fn new(
        config: &EmailConfig,
        templates: Templates,
        timeout: Duration,
        concurrency: usize,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<Email, ActionError> {
        let prepared = prepare(config, templates)?;
        let mut smtp = config.smtp.clone();
        smtp.host = smtp.host.trim().to_owned();
        let port = smtp.port.unwrap_or(smtp.security.default_port());
        // Checked now, so a bad name is a start-up error rather than a dead task.
        tls_parameters(&smtp)?;
        let server = format!("{}:{port}", smtp.host);
        let pool_size = u32::try_from(concurrency).unwrap_or(u32::MAX).max(1);
        Ok(Email { prepared, smtp, port, timeout, pool_size, egress, transport: Mutex::new(None), server, clock })
    }

    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let message = match self.message(delivery) {
            Ok(message) => message,
            Err(e) => return Outcome::fail(e),
        };
        let address = match self.egress.resolve(&self.smtp.host, self.port).await {
            Resolved::Allowed(addresses) => match addresses.first() {
                Some(address) => address.ip(),
                None => return Outcome::retry(format!("SMTP server {}: the name resolved to no address", self.server)),
            },
            Resolved::Refused(refusal) => {
                tracing::warn!(target: "punctual_actions::egress", "SMTP server {}: refused: {refusal}", self.server);
                return Outcome::fail(format!("SMTP server {}: refused: {refusal}", self.server));
            }
            Resolved::Failed(e) => {
                return Outcome::retry(format!("SMTP server {}: cannot resolve the host: {e}", self.server));
            }
        };
        let transport = match self.transport_to(address) {
            Ok(transport) => transport,
            Err(e) => return Outcome::fail(format!("SMTP server {}: {e}", self.server)),
        };
        match transport.send(message).await {
            Ok(_) => Outcome::Done,
            Err(e) if e.is_permanent() => {
                Outcome::fail(format!("SMTP server {} refused the message: {e}", self.server))
            }
            Err(e) if e.is_timeout() => Outcome::retry(format!("SMTP server {} timed out: {e}", self.server)),
            Err(e) => Outcome::retry(format!("cannot send through SMTP server {}: {}", self.server, chain(&e))),
        }
    }

    /// The pooled transport to `address`, made when the host resolved elsewhere before.
    fn transport_to(&self, address: IpAddr) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
        let mut current = self.transport.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((ip, transport)) = current.as_ref()
            && *ip == address
        {
            return Ok(transport.clone());
        }
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(address.to_string())
            .port(self.port)
            .timeout(Some(self.timeout))
            .pool_config(PoolConfig::new().max_size(self.pool_size));
        if let Some(tls) = tls_parameters(&self.smtp).map_err(|e| e.to_string())? {
            builder = builder.tls(tls);
        }
        if let Some(user) = &self.smtp.username {
            let password = self.smtp.password.as_ref().map(|p| p.expose().to_owned()).unwrap_or_default();
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        let transport = builder.build();
        *current = Some((address, transport.clone()));
        Ok(transport)
    }

    /// The message for `delivery`, or why there is none.
    fn message(&self, delivery: &Delivery) -> Result<Message, String> {
        let p = &self.prepared;
        let now = self.clock.now();
        let context = p.templates.context(delivery, now);
        let subject = p.templates.render("subject", &context)?;
        let text = p.templates.render("text", &context)?;
        let html = if p.html { Some(p.templates.render("html", &context)?) } else { None };
        let mut builder = Message::builder()
            .from(p.from.clone())
            .subject(subject.trim())
            .date(std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(now.as_millis()).unwrap_or(0)))
            .message_id(Some(format!("<{}@punctual>", delivery.delivery_id)));
        let mut recipients = 0;
        for (field, count) in [("to", p.to), ("cc", p.cc)] {
            for i in 0..count {
                let name = format!("{field}[{i}]");
                let rendered = p.templates.render(&name, &context)?;
                for address in rendered.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                    let mailbox: Mailbox = address
                        .parse()
                        .map_err(|e| format!("{name} rendered '{address}', which is not an email address ({e})"))?;
                    builder = if field == "to" { builder.to(mailbox) } else { builder.cc(mailbox) };
                    if field == "to" {
                        recipients += 1;
                    }
                }
            }
        }
        if recipients == 0 {
            return Err("the to templates rendered no recipient".to_owned());
        }
        let built = match html {
            Some(html) => builder.multipart(MultiPart::alternative_plain_html(text, html)),
            None => builder.singlepart(SinglePart::plain(text)),
        };
        built.map_err(|e| format!("cannot build the message: {e}"))
    }
}
