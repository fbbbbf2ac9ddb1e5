//! Redis streams: a due task is appended (`XADD`) to a stream on a Redis the operator
//! names, and is done when Redis answered with the entry's id.
//!
//! An entry is `XADD <stream> [MAXLEN ~ n] * <field> <value> …`: the stream's key and
//! every field's value are templates (see `template`); without fields the entry has one
//! field, `body`, holding the standard delivery body (the webhook's JSON). A delivery
//! with a trace (see `trace`) adds a last field, `traceparent`, unless the action's
//! fields name one.
//!
//! **One entry per delivery.** A try whose answer was lost (the connection broke after
//! Redis appended, a timeout) is retried with the same delivery id, and must not append
//! a second entry. So the append runs in one Lua script ([`APPEND`]) with a marker key,
//! `<stream>:punctual-delivered:<delivery id>`, holding the entry's id for
//! [`MARKER_LIFETIME`] (24 hours): when the marker exists the script answers its entry
//! id and appends nothing. A retry more than 24 hours after the try that appended
//! appends again. The markers are ordinary keys beside the stream (`SCAN` shows them);
//! they expire by themselves.
//!
//! **A single Redis, not a Cluster.** The stream and its marker are two keys that need
//! not hash to the same slot (unless the stream's name carries a `{hash tag}`), so the
//! script is meant for one Redis (a primary, with or without replicas). A Cluster's
//! `MOVED`/`CROSSSLOT` answers fail the task and say so.
//!
//! Invariants: the action holds at most one connection, multiplexed for all its
//! deliveries, opened on first use and again after it broke ([`Link`]: pauses of
//! 100 ms doubling to 10 s between failed attempts); every connection goes only to an
//! address the egress policy allows, checked when the name is resolved, at each
//! connection (the TLS name of `rediss://` stays the URL's host). No try waits longer
//! than the action's timeout (connecting, answering). Every `last_error` names the
//! server as `Redis redis://host:port` and never shows the URL's password.
//!
//! Outcomes:
//!
//! | what happened | outcome |
//! |---|---|
//! | the entry's id (new, or appended before for this delivery id) | done |
//! | connection refused, reset or lost; no answer within the timeout; `READONLY` (a replica after a failover) | retry, and the connection is dropped |
//! | `LOADING`, `BUSY`, `TRYAGAIN`, `MASTERDOWN`, `CLUSTERDOWN`, `OOM`, `ERR max number of clients`, an error code this module does not know | retry |
//! | `WRONGTYPE` (the key holds another type), `NOAUTH`, `WRONGPASS`, `NOPERM`, `MOVED`/`ASK`/`CROSSSLOT`, any other `ERR` (say, an unknown command) | dead, with Redis's message |
//! | a login refused when connecting, an address the egress policy refuses | dead |
//! | a template that does not render, a stream key that renders empty | dead |

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Delivery, Outcome};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ErrorKind, RedisError, Script};
use reqwest::Url;

use crate::broker::{Link, parse_url, screened_addresses, shown};
use crate::egress::EgressPolicy;
use crate::error::ActionError;
use crate::secret::Secret;
use crate::template::Templates;

/// How long a delivery's marker keeps a retry from appending again.
pub(crate) const MARKER_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// Appends one entry unless the delivery's marker says it was appended before.
const APPEND: &str = r"
-- KEYS[1] the stream; KEYS[2] the delivery's marker
-- ARGV[1] the marker's lifetime (ms); ARGV[2] MAXLEN (about), '' for none;
-- ARGV[3..] field, value, field, value, ...
-- Returns the entry's id: the one appended now, or the one appended before for
-- this delivery.
local before = redis.call('GET', KEYS[2])
if before then
  return before
end
local xadd = {'XADD', KEYS[1]}
if ARGV[2] ~= '' then
  xadd[#xadd + 1] = 'MAXLEN'
  xadd[#xadd + 1] = '~'
  xadd[#xadd + 1] = ARGV[2]
end
xadd[#xadd + 1] = '*'
for i = 3, #ARGV do
  xadd[#xadd + 1] = ARGV[i]
end
local id = redis.call(unpack(xadd))
redis.call('SET', KEYS[2], id, 'PX', ARGV[1])
return id
";

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
pub(crate) struct RedisStream {
    /// Parsed by the redis crate (password and database included); never formatted.
    /// Boxed: it is large, and actions of every kind share one enum.
    client: Box<redis::Client>,
    /// `redis://host:port`, for messages.
    shown: String,
    /// Host and port to resolve and screen at each connection.
    host: String,
    port: u16,
    maxlen: Option<u64>,
    /// The field names, in order; the values are the templates `fields.<name>`.
    fields: Vec<String>,
    templates: Templates,
    script: Script,
    timeout: Duration,
    egress: Arc<EgressPolicy>,
    clock: Arc<dyn Clock>,
    link: Link<MultiplexedConnection>,
}

impl std::fmt::Debug for RedisStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStream")
            .field("redis", &self.shown)
            .field("maxlen", &self.maxlen)
            .field("fields", &self.fields)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// An entry's fields: name and value, in order.
type Fields = Vec<(String, Vec<u8>)>;

/// What to do after a failed try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Try again later on the same connection.
    Retry,
    /// The connection is gone or useless (lost, timed out, now a replica): drop it
    /// and try again later.
    Reconnect,
    /// Trying again cannot succeed until someone changes something.
    Fail,
}

impl RedisStream {
    /// Checks the URL and compiles the templates; opens nothing.
    pub(crate) fn new(
        config: &RedisStreamConfig,
        mut templates: Templates,
        timeout: Duration,
        egress: Arc<EgressPolicy>,
        clock: Arc<dyn Clock>,
    ) -> Result<RedisStream, ActionError> {
        let url = parse_url(config.url.expose(), &["redis", "rediss"], "url")?;
        let shown = format!("Redis {}", shown_with_port(&url));
        // The redis crate reads the password, user and database; its error never
        // repeats the URL.
        let client = redis::Client::open(url.as_str())
            .map_err(|e| ActionError::invalid("url", format!("url is not a Redis URL the client accepts ({e})")))?;
        let client = Box::new(client);
        // An IPv6 host is written in brackets, which the resolver does not take.
        let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_owned();
        if config.maxlen == Some(0) {
            return Err(ActionError::invalid("maxlen", "maxlen must be at least 1 (leave it out to keep every entry)"));
        }
        templates.add("stream", &config.stream)?;
        let mut fields = Vec::with_capacity(config.fields.len());
        for (name, source) in &config.fields {
            let field = format!("fields.{name}");
            if name.is_empty() {
                return Err(ActionError::invalid("fields", "a field's name must not be empty"));
            }
            if fields.contains(name) {
                return Err(ActionError::invalid(field, format!("the field {name} is given twice")));
            }
            templates.add(&field, source)?;
            fields.push(name.clone());
        }
        Ok(RedisStream {
            client,
            shown,
            host,
            port: url.port().unwrap_or(6379),
            maxlen: config.maxlen,
            fields,
            templates,
            script: Script::new(APPEND),
            timeout,
            egress,
            link: Link::new(Arc::clone(&clock)),
            clock,
        })
    }

    /// Appends one try; the entry ends with the fields of `trace` (the delivery's
    /// `traceparent`, …) that its own fields do not name.
    pub(crate) async fn deliver(&self, delivery: &Delivery, trace: &[(String, String)]) -> Outcome {
        let (stream, mut entry) = match self.entry(delivery) {
            Ok(rendered) => rendered,
            Err(outcome) => return outcome,
        };
        for (name, value) in trace {
            if !entry.iter().any(|(field, _)| field == name) {
                entry.push((name.clone(), value.clone().into_bytes()));
            }
        }
        let lent = match self.link.get(|| self.connect()).await {
            Ok(lent) => lent,
            Err(error) if is_final(&error) => return Outcome::fail(error),
            Err(error) => return Outcome::retry(error),
        };
        let marker = format!("{stream}:punctual-delivered:{}", delivery.delivery_id);
        let mut invocation = self.script.key(stream.as_bytes());
        invocation.key(marker.as_bytes());
        invocation.arg(MARKER_LIFETIME.as_millis().to_string());
        invocation.arg(self.maxlen.map(|n| n.to_string()).unwrap_or_default());
        for (name, value) in &entry {
            invocation.arg(name.as_bytes()).arg(value.as_slice());
        }
        let mut connection = lent.connection.clone();
        let answer = tokio::time::timeout(self.timeout, invocation.invoke_async::<String>(&mut connection)).await;
        let (verdict, error) = match answer {
            Ok(Ok(id)) => {
                tracing::debug!(redis = %self.shown, %stream, entry = %id, delivery = %delivery.delivery_id, "appended");
                return Outcome::Done;
            }
            Ok(Err(e)) if e.code().is_none() && verdict_of(&e) == Verdict::Reconnect => (
                Verdict::Reconnect,
                format!(
                    "lost the connection to {} before it confirmed the entry ({}); the next try reconnects, and appends only if this one did not",
                    self.shown,
                    described(&e)
                ),
            ),
            Ok(Err(e)) => {
                let verdict = verdict_of(&e);
                (verdict, format!("{} did not append to {stream}: {}", self.shown, described(&e)))
            }
            Err(_) => (
                Verdict::Reconnect,
                format!(
                    "{} did not answer within {:?} (the entry may be appended: a retry does not append it twice)",
                    self.shown, self.timeout
                ),
            ),
        };
        match verdict {
            Verdict::Retry => Outcome::retry(error),
            Verdict::Reconnect => {
                self.link.broken(&lent).await;
                Outcome::retry(error)
            }
            Verdict::Fail => Outcome::fail(error),
        }
    }

    /// The stream's key and the entry's fields for `delivery`, or the outcome when they
    /// cannot be rendered.
    fn entry(&self, delivery: &Delivery) -> Result<(String, Fields), Outcome> {
        let fired_at = self.clock.now();
        let context = self.templates.context(delivery, fired_at);
        let stream = self.templates.render("stream", &context).map_err(Outcome::fail)?;
        if stream.is_empty() {
            return Err(Outcome::fail("the stream's key rendered empty: check the action's stream template"));
        }
        if self.fields.is_empty() {
            let body = crate::webhook::standard_body(delivery, fired_at)?;
            return Ok((stream, vec![("body".to_owned(), body)]));
        }
        let mut entry = Vec::with_capacity(self.fields.len());
        for name in &self.fields {
            let value = self.templates.render(&format!("fields.{name}"), &context).map_err(Outcome::fail)?;
            entry.push((name.clone(), value.into_bytes()));
        }
        Ok((stream, entry))
    }

    /// Opens the action's connection: resolves the host, keeps the addresses the
    /// egress policy allows, and connects to one of them within the timeout.
    async fn connect(&self) -> Result<MultiplexedConnection, String> {
        let addresses = match screened_addresses(&self.host, self.port, &self.egress).await {
            Ok(addresses) => addresses,
            Err(refusal) if refusal.starts_with("refused") => {
                return Err(format!("{NOT_CONNECTING}{}: {refusal}", self.shown));
            }
            Err(error) => return Err(format!("cannot connect to {}: {error}", self.shown)),
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_dns_resolver(Screened(addresses));
        match tokio::time::timeout(self.timeout, self.client.get_multiplexed_async_connection_with_config(&config))
            .await
        {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(e)) => match connect_verdict(&e) {
                Verdict::Fail => Err(format!("{}{LOGIN_REFUSED}{}", self.shown, described(&e))),
                Verdict::Retry | Verdict::Reconnect => {
                    Err(format!("cannot connect to {}: {}", self.shown, described(&e)))
                }
            },
            Err(_) => Err(format!("cannot connect to {}: no connection within {:?}", self.shown, self.timeout)),
        }
    }
}

/// How the connection errors that cannot pass by themselves begin or read: the
/// [`Link`] hands later deliveries the same sentence (with its pause), so the sentence
/// itself tells [`is_final`] what it was.
const NOT_CONNECTING: &str = "not connecting to ";
const LOGIN_REFUSED: &str = " refused the connection: ";

/// Whether a connection error from the [`Link`] cannot pass without a change of
/// configuration (an address the egress policy refuses, a login Redis refuses).
fn is_final(error: &str) -> bool {
    error.starts_with(NOT_CONNECTING) || error.contains(LOGIN_REFUSED)
}

/// `redis://host:port`, with Redis's default port when the URL has none.
fn shown_with_port(url: &Url) -> String {
    let mut with_port = url.clone();
    if url.port().is_none() {
        // Cannot fail: a redis:// URL with a host takes a port.
        let _ = with_port.set_port(Some(6379));
    }
    shown(&with_port)
}

/// The resolver of one connection attempt: the addresses already screened.
struct Screened(Vec<SocketAddr>);

impl redis::io::AsyncDNSResolver for Screened {
    fn resolve<'a, 'b: 'a>(
        &'a self,
        _host: &'b str,
        _port: u16,
    ) -> redis::RedisFuture<'a, Box<dyn Iterator<Item = SocketAddr> + Send + 'a>> {
        Box::pin(async move { Ok(Box::new(self.0.iter().copied()) as Box<dyn Iterator<Item = SocketAddr> + Send>) })
    }
}

/// The verdict on an error of the append (see the module docs' table).
fn verdict_of(e: &RedisError) -> Verdict {
    if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || e.is_unrecoverable_error() {
        return Verdict::Reconnect;
    }
    match e.code() {
        Some(code) => code_verdict(code, e.detail().unwrap_or("")),
        // Not an answer of Redis (a reply of an unexpected shape, say): nothing is
        // known to be wrong with the task.
        None => Verdict::Retry,
    }
}

/// The verdict on an error code Redis answered.
fn code_verdict(code: &str, detail: &str) -> Verdict {
    match code {
        // A replica after a failover: a new connection may reach the new primary.
        "READONLY" => Verdict::Reconnect,
        "LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN" | "CLUSTERDOWN" | "OOM" | "NOSCRIPT" => Verdict::Retry,
        "ERR" if detail.contains("max number of clients") => Verdict::Retry,
        "WRONGTYPE" | "NOAUTH" | "WRONGPASS" | "NOPERM" | "MOVED" | "ASK" | "CROSSSLOT" | "ERR" | "EXECABORT" => {
            Verdict::Fail
        }
        // A code of a newer Redis or a module: failing for good on it could drop a
        // task over something that passes; retries end in dead if it does not.
        _ => Verdict::Retry,
    }
}

/// The verdict on an error while connecting: a refused login fails; Redis busy,
/// loading or unreachable retries.
fn connect_verdict(e: &RedisError) -> Verdict {
    if e.kind() == ErrorKind::AuthenticationFailed {
        return Verdict::Fail;
    }
    match e.code() {
        Some(code) if !matches!(e.kind(), ErrorKind::Io) => match code_verdict(code, e.detail().unwrap_or("")) {
            Verdict::Fail => Verdict::Fail,
            Verdict::Retry | Verdict::Reconnect => Verdict::Retry,
        },
        _ => Verdict::Retry,
    }
}

/// Redis's message as it sent it (`WRONGTYPE Operation against a key …`), without the
/// script's location, plus what to do where that is not obvious.
fn described(e: &RedisError) -> String {
    let text = match e.code() {
        Some(code) => {
            let detail = e.detail().unwrap_or("");
            // Redis names the script and line of a failed call: noise for the reader.
            let detail = detail.split(" script: ").next().unwrap_or(detail).trim();
            if detail.is_empty() { code.to_owned() } else { format!("{code} {detail}") }
        }
        None => e.to_string(),
    };
    let hint = match e.code() {
        Some("MOVED" | "ASK" | "CROSSSLOT") => " (this action writes to a single Redis, not to a Redis Cluster)",
        Some("WRONGTYPE") => {
            " (the key holds something else than a stream: choose another stream key or delete that key)"
        }
        _ if e.kind() == ErrorKind::AuthenticationFailed => " (check the password in the action's url)",
        _ => "",
    };
    format!("{text}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(config: &RedisStreamConfig) -> Result<RedisStream, ActionError> {
        let templates = Templates::new(jiff::tz::TimeZone::UTC);
        let clock = Arc::new(punctual_core::SystemClock);
        RedisStream::new(config, templates, Duration::from_secs(1), Arc::new(EgressPolicy::public_only()), clock)
    }

    fn config(url: &str) -> RedisStreamConfig {
        RedisStreamConfig::new(Secret::new(url), "events.{{ queue }}")
    }

    #[test]
    fn the_url_and_templates_are_checked_and_the_password_never_shown() {
        let action = build(&config("redis://:s3cret@redis.example/2")).unwrap();
        assert_eq!(action.shown, "Redis redis://redis.example:6379");
        assert!(!format!("{action:?}").contains("s3cret"), "{action:?}");
        assert_eq!(build(&config("rediss://redis.example:6380")).unwrap().shown, "Redis rediss://redis.example:6380");
        assert_eq!(build(&config("http://redis.example")).unwrap_err().field(), "url");

        let mut bad = config("redis://redis.example");
        bad.fields = vec![("order".into(), "{{ payload.order".into())];
        let e = build(&bad).unwrap_err();
        assert_eq!(e.field(), "fields.order");
        assert!(e.to_string().contains("syntax error"), "{e}");

        bad.fields = vec![("a".into(), "1".into()), ("a".into(), "2".into())];
        assert_eq!(build(&bad).unwrap_err().field(), "fields.a");
        bad.fields = vec![(String::new(), "1".into())];
        assert_eq!(build(&bad).unwrap_err().field(), "fields");
        bad.fields.clear();
        bad.maxlen = Some(0);
        assert_eq!(build(&bad).unwrap_err().field(), "maxlen");
        bad.maxlen = None;
        bad.stream = "{% if %}".into();
        assert_eq!(build(&bad).unwrap_err().field(), "stream");
    }

    #[test]
    fn error_codes_map_to_the_table_of_the_module_docs() {
        let cases = [
            ("WRONGTYPE", "", Verdict::Fail),
            ("NOAUTH", "", Verdict::Fail),
            ("WRONGPASS", "", Verdict::Fail),
            ("NOPERM", "", Verdict::Fail),
            ("MOVED", "", Verdict::Fail),
            ("ERR", "unknown command 'XADD'", Verdict::Fail),
            ("ERR", "max number of clients reached", Verdict::Retry),
            ("LOADING", "", Verdict::Retry),
            ("BUSY", "", Verdict::Retry),
            ("TRYAGAIN", "", Verdict::Retry),
            ("MASTERDOWN", "", Verdict::Retry),
            ("OOM", "", Verdict::Retry),
            ("READONLY", "", Verdict::Reconnect),
            ("SOMETHINGNEW", "", Verdict::Retry),
        ];
        for (code, detail, verdict) in cases {
            assert_eq!(code_verdict(code, detail), verdict, "{code} {detail}");
        }
        assert!(is_final("not connecting to Redis redis://10.0.0.1:6379: refused: …"));
        assert!(is_final(
            "Redis redis://h:6379 refused the connection: WRONGPASS … (next connection attempt in 80 ms)"
        ));
        assert!(!is_final("cannot connect to Redis redis://h:6379: Connection refused (os error 111)"));
    }
}
