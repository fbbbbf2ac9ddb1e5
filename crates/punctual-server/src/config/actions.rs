//! `[queues."name".action]` tables of the configuration file: read as written (every
//! key optional to serde, unknown keys refused), then validated per kind into a
//! [`punctual_actions::ActionSpec`] — keys that do not apply to the kind, bad URLs,
//! template syntax errors, unknown time zones and secrets whose environment variable is
//! unset are errors naming the line of the value at fault. A key the kind needs
//! ([`Kind::needs`]) that the table lacks is an error on the line of `kind` that names
//! the key, which the settings API reports as the field at fault (`action.subject`).
//!
//! `final_statuses` (webhook and chat kinds) lists the HTTP answers that send a task to
//! dead at once; each must be from 400 to 599 and not 410, else the error names its
//! line. Email has no such key: an SMTP reply decides (5xx dead, 4xx retried).
//!
//! An action whose host is an IP address the egress policy (`[egress]`, see `queues`)
//! refuses is an error on the line of its `url` (or `url_env`), saying how to allow it:
//! such a host bypasses the resolver that checks host names when connecting.
//!
//! Broker kinds (`rabbitmq`, `nats`, `redis-stream`) take the broker's `url` (or
//! `url_env`) and where to publish: `exchange` (default `""`, the default exchange),
//! `routing_key` and `mandatory` (default true); `subject`; `stream`, `maxlen` and a
//! `fields` table. `routing_key`, `subject`, `stream`, `body` and each field are
//! templates; without `body` (or `fields`) a message is the standard delivery body.
//!
//! Secrets (`secret`, `smtp.password`) may be written in the file or, better, named by
//! an environment variable (`secret_env`, `smtp.password_env`); a chat robot's URL and
//! a broker's URL, which carry credentials, may come from the environment too
//! (`url_env`). They are
//! wrapped in [`Secret`] at once, so they never reach a log.

use std::collections::BTreeMap;
use std::ops::Range;

use punctual_actions::{
    ActionError, ActionKind, ActionSpec, ChatConfig, EgressPolicy, EmailConfig, FinalStatuses, NatsConfig, Platform,
    RabbitmqConfig, Rate, RedisStreamConfig, Secret, SmtpConfig, SmtpSecurity, WebhookConfig,
};
use serde::Deserialize;
use toml::Spanned;

use crate::extract::ApiDuration;

/// An error at a span of the file.
pub(crate) type SpanError = (Option<Range<usize>>, String);

/// Why an action table was refused: where, and what.
#[derive(Debug)]
pub(crate) struct TableError {
    /// The span of the value at fault, or of `kind` when the table lacks a key it needs
    /// (no line holds that key).
    pub(crate) span: Option<Range<usize>>,
    pub(crate) message: String,
    /// The key the table lacks, when that is the fault (the settings API names it as
    /// the field at fault: `action.url`, `action.subject`).
    pub(crate) missing: Option<&'static str>,
}

/// Every key of an action table besides `kind`.
pub(crate) const KEYS: [&str; 28] = [
    "url",
    "url_env",
    "secret",
    "secret_env",
    "previous_secret",
    "previous_secret_env",
    "timeout",
    "concurrency",
    "rate",
    "final_statuses",
    "timezone",
    "text",
    "mention",
    "mention_mobiles",
    "mention_all",
    "smtp",
    "from",
    "to",
    "cc",
    "subject",
    "html",
    "exchange",
    "routing_key",
    "mandatory",
    "body",
    "stream",
    "maxlen",
    "fields",
];

/// A key a kind of action cannot do without.
#[derive(Debug)]
pub(crate) struct Needed {
    pub(crate) key: &'static str,
    /// Keys that give it instead (`url_env` for `url`).
    pub(crate) or: &'static [&'static str],
    /// What a table without it is told.
    pub(crate) says: &'static str,
}

impl Needed {
    const fn new(key: &'static str, or: &'static [&'static str], says: &'static str) -> Needed {
        Needed { key, or, says }
    }
}

impl From<SpanError> for TableError {
    /// An error on a value the table holds.
    fn from((span, message): SpanError) -> TableError {
        TableError { span, message, missing: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Webhook,
    Email,
    Wecom,
    Dingtalk,
    Feishu,
    Slack,
    Rabbitmq,
    Nats,
    #[serde(rename = "redis-stream")]
    RedisStream,
}

impl Kind {
    pub(crate) const ALL: [Kind; 9] = [
        Kind::Webhook,
        Kind::Email,
        Kind::Wecom,
        Kind::Dingtalk,
        Kind::Feishu,
        Kind::Slack,
        Kind::Rabbitmq,
        Kind::Nats,
        Kind::RedisStream,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Webhook => "webhook",
            Kind::Email => "email",
            Kind::Wecom => "wecom",
            Kind::Dingtalk => "dingtalk",
            Kind::Feishu => "feishu",
            Kind::Slack => "slack",
            Kind::Rabbitmq => "rabbitmq",
            Kind::Nats => "nats",
            Kind::RedisStream => "redis-stream",
        }
    }

    /// The keys a table of this kind needs, in the order they are checked: the first
    /// one missing is the error. (A wecom robot needs its key too, as `secret_env` or in
    /// the URL of `url_env`, which no one key says: the actions crate checks it.)
    pub(crate) fn needs(self) -> &'static [Needed] {
        const URL: &[&str] = &["url_env"];
        const WEBHOOK: &[Needed] = &[Needed::new("url", URL, "a webhook action needs a url")];
        const EMAIL: &[Needed] = &[
            Needed::new("smtp", &[], "an email action needs an [smtp] table"),
            Needed::new("from", &[], "an email action needs from"),
            Needed::new("subject", &[], "an email action needs a subject"),
            Needed::new("text", &[], "an email action needs a text body"),
            Needed::new("to", &[], "an email needs at least one recipient"),
        ];
        const WECOM: &[Needed] = &[Needed::new("text", &[], "a wecom action needs a text template")];
        const DINGTALK: &[Needed] = &[
            Needed::new("text", &[], "a dingtalk action needs a text template"),
            Needed::new("url", URL, "a dingtalk robot needs its webhook url"),
        ];
        const FEISHU: &[Needed] = &[
            Needed::new("text", &[], "a feishu action needs a text template"),
            Needed::new("url", URL, "a feishu robot needs its webhook url"),
        ];
        const SLACK: &[Needed] = &[
            Needed::new("text", &[], "a slack action needs a text template"),
            Needed::new("url", URL, "a slack robot needs its webhook url"),
        ];
        const RABBITMQ: &[Needed] = &[
            Needed::new("url", URL, "a rabbitmq action needs a url (or url_env)"),
            Needed::new("routing_key", &[], "a rabbitmq action needs a routing_key"),
        ];
        const NATS: &[Needed] = &[
            Needed::new("url", URL, "a nats action needs a url (or url_env)"),
            Needed::new("subject", &[], "a nats action needs a subject"),
        ];
        const REDIS_STREAM: &[Needed] = &[
            Needed::new("url", URL, "a redis-stream action needs a url (or url_env)"),
            Needed::new("stream", &[], "a redis-stream action needs a stream"),
        ];
        match self {
            Kind::Webhook => WEBHOOK,
            Kind::Email => EMAIL,
            Kind::Wecom => WECOM,
            Kind::Dingtalk => DINGTALK,
            Kind::Feishu => FEISHU,
            Kind::Slack => SLACK,
            Kind::Rabbitmq => RABBITMQ,
            Kind::Nats => NATS,
            Kind::RedisStream => REDIS_STREAM,
        }
    }

    fn platform(self) -> Option<Platform> {
        match self {
            Kind::Wecom => Some(Platform::Wecom),
            Kind::Dingtalk => Some(Platform::Dingtalk),
            Kind::Feishu => Some(Platform::Feishu),
            Kind::Slack => Some(Platform::Slack),
            _ => None,
        }
    }
}

/// An action table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAction {
    pub(crate) kind: Spanned<Kind>,
    url: Option<Spanned<String>>,
    url_env: Option<Spanned<String>>,
    secret: Option<Spanned<String>>,
    secret_env: Option<Spanned<String>>,
    /// A webhook's secret before `secret`, which signs too while receivers move on.
    previous_secret: Option<Spanned<String>>,
    previous_secret_env: Option<Spanned<String>>,
    timeout: Option<Spanned<ApiDuration>>,
    concurrency: Option<Spanned<i64>>,
    rate: Option<Spanned<String>>,
    final_statuses: Option<Vec<Spanned<i64>>>,
    timezone: Option<Spanned<String>>,
    text: Option<Spanned<String>>,
    mention: Option<Vec<Spanned<String>>>,
    mention_mobiles: Option<Vec<Spanned<String>>>,
    mention_all: Option<Spanned<bool>>,
    smtp: Option<Spanned<RawSmtp>>,
    from: Option<Spanned<String>>,
    to: Option<Vec<Spanned<String>>>,
    cc: Option<Vec<Spanned<String>>>,
    subject: Option<Spanned<String>>,
    html: Option<Spanned<String>>,
    exchange: Option<Spanned<String>>,
    routing_key: Option<Spanned<String>>,
    mandatory: Option<Spanned<bool>>,
    body: Option<Spanned<String>>,
    stream: Option<Spanned<String>>,
    maxlen: Option<Spanned<i64>>,
    fields: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: Spanned<String>,
    port: Option<Spanned<i64>>,
    security: Option<Spanned<String>>,
    username: Option<Spanned<String>>,
    password: Option<Spanned<String>>,
    password_env: Option<Spanned<String>>,
}

/// Whether a table of `kind` takes `key` (one of [`KEYS`]).
pub(crate) fn takes(kind: Kind, key: &str) -> bool {
    matches!(key, "timeout" | "concurrency" | "rate") || applies(kind, key)
}

/// Which keys a kind takes besides `kind`, `timeout`, `concurrency` and `rate`.
fn applies(kind: Kind, key: &str) -> bool {
    if key == "final_statuses" {
        // Every HTTP kind has answers with a status; email and brokers have none.
        return kind.platform().is_some() || kind == Kind::Webhook;
    }
    match kind {
        Kind::Webhook => {
            matches!(key, "url" | "url_env" | "secret" | "secret_env" | "previous_secret" | "previous_secret_env")
        }
        Kind::Email => matches!(key, "smtp" | "from" | "to" | "cc" | "subject" | "text" | "html" | "timezone"),
        Kind::Slack => matches!(key, "url" | "url_env" | "text" | "mention" | "mention_all" | "timezone"),
        Kind::Feishu => {
            matches!(key, "url" | "url_env" | "secret" | "secret_env" | "text" | "mention" | "mention_all" | "timezone")
        }
        Kind::Wecom | Kind::Dingtalk => matches!(
            key,
            "url"
                | "url_env"
                | "secret"
                | "secret_env"
                | "text"
                | "mention"
                | "mention_mobiles"
                | "mention_all"
                | "timezone"
        ),
        Kind::Rabbitmq => {
            matches!(key, "url" | "url_env" | "exchange" | "routing_key" | "mandatory" | "body" | "timezone")
        }
        Kind::Nats => matches!(key, "url" | "url_env" | "subject" | "body" | "timezone"),
        Kind::RedisStream => matches!(key, "url" | "url_env" | "stream" | "maxlen" | "fields" | "timezone"),
    }
}

impl RawAction {
    /// The keys present with the span of their value.
    fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let mut keys = Vec::new();
        let mut add = |name: &'static str, span: Option<Range<usize>>| {
            if let Some(span) = span {
                keys.push((name, span));
            }
        };
        add("url", self.url.as_ref().map(Spanned::span));
        add("url_env", self.url_env.as_ref().map(Spanned::span));
        add("secret", self.secret.as_ref().map(Spanned::span));
        add("secret_env", self.secret_env.as_ref().map(Spanned::span));
        add("previous_secret", self.previous_secret.as_ref().map(Spanned::span));
        add("previous_secret_env", self.previous_secret_env.as_ref().map(Spanned::span));
        add("timezone", self.timezone.as_ref().map(Spanned::span));
        add("text", self.text.as_ref().map(Spanned::span));
        add("mention", self.mention.as_ref().and_then(|m| m.first()).map(Spanned::span));
        add("mention_mobiles", self.mention_mobiles.as_ref().and_then(|m| m.first()).map(Spanned::span));
        add("mention_all", self.mention_all.as_ref().map(Spanned::span));
        add("smtp", self.smtp.as_ref().map(Spanned::span));
        add("from", self.from.as_ref().map(Spanned::span));
        add("to", self.to.as_ref().and_then(|m| m.first()).map(Spanned::span));
        add("cc", self.cc.as_ref().and_then(|m| m.first()).map(Spanned::span));
        add("subject", self.subject.as_ref().map(Spanned::span));
        add("html", self.html.as_ref().map(Spanned::span));
        add("final_statuses", self.final_statuses.as_ref().and_then(|m| m.first()).map(Spanned::span));
        add("exchange", self.exchange.as_ref().map(Spanned::span));
        add("routing_key", self.routing_key.as_ref().map(Spanned::span));
        add("mandatory", self.mandatory.as_ref().map(Spanned::span));
        add("body", self.body.as_ref().map(Spanned::span));
        add("stream", self.stream.as_ref().map(Spanned::span));
        add("maxlen", self.maxlen.as_ref().map(Spanned::span));
        add("fields", self.fields.as_ref().map(Spanned::span));
        keys
    }

    /// The span of the value a [`ActionError::field`] names, if known.
    fn span_of(&self, field: &str) -> Option<Range<usize>> {
        let smtp = self.smtp.as_ref().map(Spanned::get_ref);
        match field {
            "smtp.host" => smtp.map(|s| s.host.span()),
            "smtp.password" => smtp.and_then(|s| s.password.as_ref().map(Spanned::span)),
            "concurrency" => self.concurrency.as_ref().map(Spanned::span),
            "timeout" => self.timeout.as_ref().map(Spanned::span),
            "url" => self.url.as_ref().or(self.url_env.as_ref()).map(Spanned::span),
            "secret" => self.secret.as_ref().or(self.secret_env.as_ref()).map(Spanned::span),
            "previous_secret" => self.previous_secret.as_ref().or(self.previous_secret_env.as_ref()).map(Spanned::span),
            f if f.starts_with("mention_mobiles[") => item(f, &self.mention_mobiles, "mention_mobiles"),
            f if f.starts_with("mention[") => item(f, &self.mention, "mention"),
            f if f.starts_with("to[") => item(f, &self.to, "to"),
            f if f.starts_with("cc[") => item(f, &self.cc, "cc"),
            f if f.starts_with("final_statuses[") => item(f, &self.final_statuses, "final_statuses"),
            f if f.starts_with("fields.") => {
                let fields = self.fields.as_ref()?.get_ref();
                fields.get(f.strip_prefix("fields.")?).map(Spanned::span)
            }
            other => self.present().into_iter().find(|(name, _)| *name == other).map(|(_, span)| span),
        }
    }

    /// Validates the table into a spec whose host `egress` allows; the error carries
    /// the span of the value at fault (or of `kind`).
    pub(crate) fn to_spec(&self, egress: &EgressPolicy) -> Result<ActionSpec, TableError> {
        let kind = *self.kind.get_ref();
        let kind_span = Some(self.kind.span());
        for (key, span) in self.present() {
            if !applies(kind, key) {
                let article = if kind == Kind::Email { "an" } else { "a" };
                return Err((Some(span), format!("{key} does not apply to {article} {} action", kind.name())).into());
            }
        }
        let url = either(&self.url, &self.url_env, "url")?;
        let secret = either(&self.secret, &self.secret_env, "secret")?.map(Secret::new);
        let previous_secret =
            either(&self.previous_secret, &self.previous_secret_env, "previous_secret")?.map(Secret::new);
        let strings = |list: &Option<Vec<Spanned<String>>>| {
            list.iter().flatten().map(|s| s.get_ref().clone()).collect::<Vec<_>>()
        };
        let action_kind = match kind {
            Kind::Webhook => {
                let url = url.ok_or_else(|| self.lacks("url"))?;
                let mut config = WebhookConfig::new(url);
                config.secret = secret;
                config.previous_secret = previous_secret;
                ActionKind::Webhook(config)
            }
            Kind::Email => {
                let smtp = self.needed(&self.smtp, "smtp")?;
                let from = self.needed(&self.from, "from")?;
                let subject = self.needed(&self.subject, "subject")?;
                let text = self.needed(&self.text, "text")?;
                let mut config = EmailConfig::new(
                    smtp_config(smtp.get_ref())?,
                    from.get_ref().clone(),
                    strings(&self.to),
                    subject.get_ref(),
                    text.get_ref(),
                );
                config.cc = strings(&self.cc);
                config.html = self.html.as_ref().map(|h| h.get_ref().clone());
                ActionKind::Email(config)
            }
            Kind::Rabbitmq => {
                let url = self.broker_url(url)?;
                let routing_key = self.needed(&self.routing_key, "routing_key")?;
                let exchange = self.exchange.as_ref().map(|e| e.get_ref().clone()).unwrap_or_default();
                let mut config = RabbitmqConfig::new(url, exchange, routing_key.get_ref().clone());
                config.body = self.body.as_ref().map(|b| b.get_ref().clone());
                config.mandatory = self.mandatory.as_ref().is_none_or(|m| *m.get_ref());
                ActionKind::Rabbitmq(config)
            }
            Kind::Nats => {
                let url = self.broker_url(url)?;
                let subject = self.needed(&self.subject, "subject")?;
                let mut config = NatsConfig::new(url, subject.get_ref().clone());
                config.body = self.body.as_ref().map(|b| b.get_ref().clone());
                ActionKind::Nats(config)
            }
            Kind::RedisStream => {
                let url = self.broker_url(url)?;
                let stream = self.needed(&self.stream, "stream")?;
                let mut config = RedisStreamConfig::new(url, stream.get_ref().clone());
                if let Some(maxlen) = &self.maxlen {
                    config.maxlen =
                        Some(u64::try_from(*maxlen.get_ref()).ok().filter(|n| *n > 0).ok_or_else(|| {
                            (Some(maxlen.span()), format!("maxlen must be 1 or more, not {}", maxlen.get_ref()))
                        })?);
                }
                for (name, value) in self.fields.iter().flat_map(|f| f.get_ref()) {
                    config.fields.push((name.clone(), value.get_ref().clone()));
                }
                ActionKind::RedisStream(config)
            }
            chat => {
                let platform = chat.platform().ok_or((kind_span.clone(), "not a chat kind".to_owned()))?;
                let text = self.needed(&self.text, "text")?;
                let mut config = ChatConfig::new(platform, url, text.get_ref().clone());
                config.secret = secret;
                config.mention = strings(&self.mention);
                config.mention_mobiles = strings(&self.mention_mobiles);
                config.mention_all = self.mention_all.as_ref().is_some_and(|m| *m.get_ref());
                ActionKind::Chat(config)
            }
        };
        let mut spec = ActionSpec::new(action_kind);
        if let Some(timeout) = &self.timeout {
            spec.timeout = timeout.get_ref().0;
        }
        if let Some(c) = &self.concurrency {
            spec.concurrency = usize::try_from(*c.get_ref())
                .ok()
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| (Some(c.span()), format!("concurrency must be from 1 to 10000, not {}", c.get_ref())))?;
        }
        if let Some(rate) = &self.rate {
            spec.rate = Some(Rate::parse(rate.get_ref()).map_err(|m| (Some(rate.span()), m))?);
        }
        if let Some(statuses) = &self.final_statuses {
            spec.final_statuses =
                FinalStatuses::new(statuses.iter().map(|s| *s.get_ref())).map_err(|e| self.locate(&e))?;
        }
        spec.timezone = self.timezone.as_ref().map(|z| z.get_ref().clone());
        spec.check().map_err(|e| self.locate(&e))?;
        spec.check_egress(egress).map_err(|e| self.locate(&e))?;
        Ok(spec)
    }

    /// A broker kind's URL, which it needs; a secret, since it may carry a password.
    fn broker_url(&self, url: Option<String>) -> Result<Secret, TableError> {
        Ok(Secret::new(url.ok_or_else(|| self.lacks("url"))?))
    }

    /// The value of `key`, one the table's kind needs.
    fn needed<'a, T>(&self, value: &'a Option<Spanned<T>>, key: &'static str) -> Result<&'a Spanned<T>, TableError> {
        value.as_ref().ok_or_else(|| self.lacks(key))
    }

    /// The error of a table that lacks `key`, one its kind [needs](Kind::needs): on the
    /// line of `kind`, naming the key.
    fn lacks(&self, key: &'static str) -> TableError {
        let kind = *self.kind.get_ref();
        let says = kind.needs().iter().find(|needed| needed.key == key).map(|needed| needed.says);
        let message = says.map_or_else(|| format!("a {} action needs {key}", kind.name()), str::to_owned);
        TableError { span: Some(self.kind.span()), message, missing: Some(key) }
    }

    /// An error of the actions crate on the value it names; on a key the table lacks
    /// (a chat robot's url, a wecom robot's key, an email's `to`), on the line of `kind`
    /// naming the key (a secret by the key the settings API takes, `secret_env`).
    fn locate(&self, error: &ActionError) -> TableError {
        if let Some(span) = self.span_of(error.field()) {
            return (Some(span), error.to_string()).into();
        }
        let missing = match error.field() {
            "secret" => Some("secret_env"),
            "previous_secret" => Some("secret_env"),
            field => KEYS.into_iter().find(|key| *key == field),
        };
        TableError { span: Some(self.kind.span()), message: error.to_string(), missing }
    }
}

/// The span of the list item `field` names (`prefix[i]`).
fn item<T>(field: &str, list: &Option<Vec<Spanned<T>>>, prefix: &str) -> Option<Range<usize>> {
    let index: usize = field.strip_prefix(prefix)?.strip_prefix('[')?.strip_suffix(']')?.parse().ok()?;
    list.as_ref()?.get(index).map(Spanned::span)
}

/// The value of `key` or of the environment variable `key_env` names (not both).
fn either(
    value: &Option<Spanned<String>>,
    env: &Option<Spanned<String>>,
    key: &str,
) -> Result<Option<String>, SpanError> {
    match (value, env) {
        (Some(_), Some(env)) => Err((Some(env.span()), format!("give {key} or {key}_env, not both"))),
        (Some(value), None) => Ok(Some(value.get_ref().clone())),
        (None, Some(env)) => {
            let secret = Secret::from_env(env.get_ref(), &format!("{key}_env"))
                .map_err(|e| (Some(env.span()), e.to_string()))?;
            Ok(Some(secret.expose().to_owned()))
        }
        (None, None) => Ok(None),
    }
}

fn smtp_config(raw: &RawSmtp) -> Result<SmtpConfig, SpanError> {
    let security = match &raw.security {
        Some(s) => SmtpSecurity::parse(s.get_ref()).map_err(|m| (Some(s.span()), m))?,
        None => SmtpSecurity::default(),
    };
    let mut smtp = SmtpConfig::new(raw.host.get_ref().clone(), security);
    if let Some(port) = &raw.port {
        smtp.port = Some(
            u16::try_from(*port.get_ref())
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| (Some(port.span()), format!("port must be from 1 to 65535, not {}", port.get_ref())))?,
        );
    }
    smtp.username = raw.username.as_ref().map(|u| u.get_ref().clone());
    smtp.password = either(&raw.password, &raw.password_env, "password")?.map(Secret::new);
    Ok(smtp)
}
