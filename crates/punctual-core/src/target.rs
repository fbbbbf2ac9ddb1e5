//! HTTP targets: a task that names where the server delivers it, like a queue's
//! webhook action but per task (API.md, "HTTP targets").
//!
//! Invariants: a [`Target`] that exists is valid by the contract's rules (an http or
//! https URL with a host and no credentials, a method the contract allows, at most
//! [`Target::MAX_HEADERS`] headers none of them forbidden, a timeout within
//! [`Target::MIN_TIMEOUT`]..=[`Target::MAX_TIMEOUT`]), so stores and the server never
//! check it again. Whether its host may be reached is the egress policy's call, made
//! by the server, not here. Which tasks a lease may take is a [`Lane`]: a task with a
//! target is only ever leased by the server that delivers it, never by a pull worker.
//!
//! Stores keep a target as [`Target::to_stored`]: compact JSON with short names, the
//! defaults left out. [`Target::from_stored`] reads it back (and checks it again, since
//! the bytes came from outside the process).

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::time::{format_duration, parse_duration};

/// Which of a queue's scheduled tasks a lease takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Lane {
    /// Tasks without a target: run by the queue's handler (pull workers, a push
    /// action, a [`Worker`](crate::Worker)).
    #[default]
    Handler,
    /// Tasks carrying an HTTP target: delivered by the server to that target.
    Target,
}

impl Lane {
    /// Both lanes.
    pub const ALL: [Lane; 2] = [Lane::Handler, Lane::Target];

    /// The lane's name in logs and store keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Handler => "handler",
            Lane::Target => "target",
        }
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The HTTP method of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TargetMethod {
    #[default]
    Post,
    Put,
    Patch,
    Get,
    Delete,
}

impl TargetMethod {
    /// The method's name, upper case.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetMethod::Post => "POST",
            TargetMethod::Put => "PUT",
            TargetMethod::Patch => "PATCH",
            TargetMethod::Get => "GET",
            TargetMethod::Delete => "DELETE",
        }
    }

    /// Parses a method name in any case.
    pub fn parse(text: &str) -> Result<TargetMethod> {
        match text.to_ascii_uppercase().as_str() {
            "POST" => Ok(TargetMethod::Post),
            "PUT" => Ok(TargetMethod::Put),
            "PATCH" => Ok(TargetMethod::Patch),
            "GET" => Ok(TargetMethod::Get),
            "DELETE" => Ok(TargetMethod::Delete),
            _ => Err(Error::invalid(
                "target.method",
                format!("'{text}' is not a target method: use POST, PUT, PATCH, GET or DELETE"),
            )),
        }
    }
}

impl fmt::Display for TargetMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where and how one task is delivered when due. Build with [`Target::new`] and the
/// setters, or parse the API's form with [`Target::from_json`].
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    url: String,
    method: TargetMethod,
    /// In the order given; names unique ignoring case.
    headers: Vec<(String, String)>,
    timeout: Duration,
    /// Sent as the request body instead of the standard delivery body.
    body: Option<Value>,
}

impl Target {
    /// The most headers a target may carry.
    pub const MAX_HEADERS: usize = 32;
    /// The most bytes its headers' names and values may hold together.
    pub const MAX_HEADER_BYTES: usize = 1024;
    /// The longest URL, in bytes.
    pub const MAX_URL_BYTES: usize = 2048;
    pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// A `POST` to `url` with no extra headers, a 10 s timeout and the standard body.
    pub fn new(url: impl Into<String>) -> Result<Target> {
        let url = check_url(&url.into())?;
        Ok(Target { url, method: TargetMethod::Post, headers: Vec::new(), timeout: Self::DEFAULT_TIMEOUT, body: None })
    }

    /// The method to use.
    pub fn method(mut self, method: TargetMethod) -> Target {
        self.method = method;
        self
    }

    /// Adds a header; refused when forbidden, malformed, a repeat, or past the limits.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Result<Target> {
        self.headers.push((name.into(), value.into()));
        check_headers(&self.headers)?;
        Ok(self)
    }

    /// How long one delivery may take.
    pub fn timeout(mut self, timeout: Duration) -> Result<Target> {
        check_timeout(timeout)?;
        self.timeout = timeout;
        Ok(self)
    }

    /// The request body to send instead of the standard delivery body.
    pub fn body(mut self, body: Value) -> Target {
        self.body = Some(body);
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }
    pub fn http_method(&self) -> TargetMethod {
        self.method
    }
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }
    pub fn delivery_timeout(&self) -> Duration {
        self.timeout
    }
    pub fn custom_body(&self) -> Option<&Value> {
        self.body.as_ref()
    }

    /// Parses the API's form, `{"url", "method", "headers", "timeout", "body"}`; errors
    /// name the field (`target.url`, `target.headers`, …). A `body` of `null` is no body.
    pub fn from_json(value: &Value) -> Result<Target> {
        let Value::Object(fields) = value else {
            return Err(Error::invalid("target", "a target is an object such as {\"url\": \"https://…\"}"));
        };
        if let Some(unknown) =
            fields.keys().find(|k| !["url", "method", "headers", "timeout", "body"].contains(&k.as_str()))
        {
            return Err(Error::invalid(
                format!("target.{unknown}"),
                format!("'{unknown}' is not a target field: use url, method, headers, timeout or body"),
            ));
        }
        let url = match fields.get("url") {
            Some(Value::String(url)) => url.clone(),
            Some(_) => return Err(Error::invalid("target.url", "a target's url is a string")),
            None => {
                return Err(Error::invalid("target.url", "a target needs a url, such as \"https://example.com/hook\""));
            }
        };
        let mut target = Target::new(url)?;
        match fields.get("method") {
            None | Some(Value::Null) => {}
            Some(Value::String(method)) => target.method = TargetMethod::parse(method)?,
            Some(_) => return Err(Error::invalid("target.method", "a target's method is a string such as \"POST\"")),
        }
        match fields.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(headers)) => {
                let mut pairs = Vec::with_capacity(headers.len());
                for (name, value) in headers {
                    let Value::String(value) = value else {
                        return Err(Error::invalid("target.headers", format!("header '{name}' needs a string value")));
                    };
                    pairs.push((name.clone(), value.clone()));
                }
                check_headers(&pairs)?;
                target.headers = pairs;
            }
            Some(_) => {
                return Err(Error::invalid(
                    "target.headers",
                    "a target's headers are an object such as {\"X-Tenant\": \"acme\"}",
                ));
            }
        }
        match fields.get("timeout") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                let timeout = parse_duration(text).map_err(|m| Error::invalid("target.timeout", m))?;
                check_timeout(timeout)?;
                target.timeout = timeout;
            }
            // A bare number is milliseconds, as for every duration of the API.
            Some(Value::Number(ms)) => {
                let ms = ms.as_u64().ok_or_else(|| {
                    Error::invalid("target.timeout", format!("{ms} is not a whole number of milliseconds"))
                })?;
                check_timeout(Duration::from_millis(ms))?;
                target.timeout = Duration::from_millis(ms);
            }
            Some(_) => {
                return Err(Error::invalid("target.timeout", "a target's timeout is a duration such as \"10s\""));
            }
        }
        target.body = fields.get("body").filter(|body| !body.is_null()).cloned();
        Ok(target)
    }

    /// The API's form: every field, `headers` as an object, `timeout` as a duration;
    /// `body` only when set.
    pub fn to_json(&self) -> Value {
        let mut fields = Map::new();
        fields.insert("url".into(), Value::String(self.url.clone()));
        fields.insert("method".into(), Value::String(self.method.as_str().into()));
        let headers = self.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        fields.insert("headers".into(), Value::Object(headers));
        fields.insert("timeout".into(), Value::String(format_duration(self.timeout)));
        if let Some(body) = &self.body {
            fields.insert("body".into(), body.clone());
        }
        Value::Object(fields)
    }

    /// The stored form: `{"u": url, "m": method, "h": [[name, value], …], "t": ms,
    /// "b": body}`, leaving out `m` for POST, `h` when empty, `t` for 10 s and `b` when
    /// unset.
    pub fn to_stored(&self) -> String {
        let mut fields = Map::new();
        fields.insert("u".into(), Value::String(self.url.clone()));
        if self.method != TargetMethod::Post {
            fields.insert("m".into(), Value::String(self.method.as_str().into()));
        }
        if !self.headers.is_empty() {
            let pairs = self
                .headers
                .iter()
                .map(|(k, v)| Value::Array(vec![Value::String(k.clone()), Value::String(v.clone())]))
                .collect();
            fields.insert("h".into(), Value::Array(pairs));
        }
        if self.timeout != Self::DEFAULT_TIMEOUT {
            fields.insert("t".into(), Value::from(self.timeout.as_millis() as u64));
        }
        if let Some(body) = &self.body {
            fields.insert("b".into(), body.clone());
        }
        Value::Object(fields).to_string()
    }

    /// Reads [`Target::to_stored`] back; [`Error::Internal`] if the text is not one.
    pub fn from_stored(text: &str) -> Result<Target> {
        let corrupt = |why: String| Error::Internal(format!("a stored target cannot be read ({why}): {text}"));
        let value: Value = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        let url = value.get("u").and_then(Value::as_str).ok_or_else(|| corrupt("no url".into()))?;
        let mut target = Target::new(url).map_err(|e| corrupt(e.to_string()))?;
        if let Some(method) = value.get("m").and_then(Value::as_str) {
            target.method = TargetMethod::parse(method).map_err(|e| corrupt(e.to_string()))?;
        }
        if let Some(pairs) = value.get("h").and_then(Value::as_array) {
            for pair in pairs {
                match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(k), Value::String(v)]) => target.headers.push((k.clone(), v.clone())),
                    _ => return Err(corrupt("a header is not a [name, value] pair".into())),
                }
            }
            check_headers(&target.headers).map_err(|e| corrupt(e.to_string()))?;
        }
        if let Some(ms) = value.get("t").and_then(Value::as_u64) {
            target.timeout = Duration::from_millis(ms);
            check_timeout(target.timeout).map_err(|e| corrupt(e.to_string()))?;
        }
        target.body = value.get("b").cloned();
        Ok(target)
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// The URL as the parser normalises it (what is delivered to, shown and stored), if
/// it is one a target may have.
fn check_url(url: &str) -> Result<String> {
    let invalid = |message: String| Error::invalid("target.url", message);
    if url.len() > Target::MAX_URL_BYTES {
        return Err(invalid(format!(
            "a target url is at most {} bytes, this one has {}",
            Target::MAX_URL_BYTES,
            url.len()
        )));
    }
    let parsed =
        url::Url::parse(url).map_err(|e| invalid(format!("'{url}' is not a URL ({e}): use http://… or https://…")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!("a target url is http or https, not '{}'", parsed.scheme())));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid(format!("'{url}' names no host")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(invalid(
            "a target url cannot carry credentials (they would be shown with the task): send them in a header".into(),
        ));
    }
    Ok(parsed.to_string())
}

/// Headers the server sets itself, or that would change how the request is framed.
fn is_forbidden(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(lower.as_str(), "host" | "content-length" | "transfer-encoding" | "connection")
        || lower.starts_with("punctual-")
}

fn check_headers(headers: &[(String, String)]) -> Result<()> {
    let invalid = |message: String| Error::invalid("target.headers", message);
    if headers.len() > Target::MAX_HEADERS {
        return Err(invalid(format!(
            "a target has at most {} headers, this one has {}",
            Target::MAX_HEADERS,
            headers.len()
        )));
    }
    let bytes: usize = headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > Target::MAX_HEADER_BYTES {
        return Err(invalid(format!(
            "a target's header names and values hold at most {} bytes together, these hold {bytes}",
            Target::MAX_HEADER_BYTES
        )));
    }
    for (i, (name, value)) in headers.iter().enumerate() {
        let is_token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(is_token_char) {
            return Err(invalid(format!(
                "'{}' is not a header name: use letters, digits and - (such as X-Tenant)",
                name.escape_default()
            )));
        }
        if is_forbidden(name) {
            return Err(invalid(format!(
                "header '{name}' cannot be set: Host, Content-Length, Transfer-Encoding, Connection and Punctual-* are the server's"
            )));
        }
        if let Some(bad) = value.chars().find(|c| c.is_control() && *c != '\t') {
            return Err(invalid(format!("header '{name}' cannot contain '{}'", bad.escape_default())));
        }
        if headers[..i].iter().any(|(earlier, _)| earlier.eq_ignore_ascii_case(name)) {
            return Err(invalid(format!("header '{name}' is given twice")));
        }
    }
    Ok(())
}

fn check_timeout(timeout: Duration) -> Result<()> {
    if timeout < Target::MIN_TIMEOUT || timeout > Target::MAX_TIMEOUT {
        return Err(Error::invalid(
            "target.timeout",
            format!("a target's timeout is 1s to 60s, not {}", format_duration(timeout)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(result: Result<Target>) -> String {
        result.unwrap_err().field().unwrap_or("none").to_owned()
    }

    #[test]
    fn the_api_form_round_trips_with_defaults_filled_in() {
        let target = Target::from_json(&json!({"url": "https://shop.example.com/hooks/cancel"})).unwrap();
        assert_eq!(
            target.to_json(),
            json!({"url": "https://shop.example.com/hooks/cancel", "method": "POST", "headers": {}, "timeout": "10s"})
        );
        let full = json!({"url": "http://h:8080/x?y=1", "method": "put", "headers": {"X-Tenant": "acme"},
                          "timeout": "30s", "body": {"a": [1, 2]}});
        let target = Target::from_json(&full).unwrap();
        assert_eq!(target.http_method(), TargetMethod::Put);
        assert_eq!(Target::from_json(&target.to_json()).unwrap(), target);
    }

    #[test]
    fn a_url_is_kept_as_the_parser_normalises_it() {
        let target = Target::new("HTTPS://Shop.Example.COM/a b\t?x=1").unwrap();
        assert_eq!(target.url(), "https://shop.example.com/a%20b?x=1", "what is delivered to is what is shown");
    }

    #[test]
    fn the_stored_form_is_compact_and_reads_back() {
        let plain = Target::new("https://a.example/h").unwrap();
        assert_eq!(plain.to_stored(), r#"{"u":"https://a.example/h"}"#);
        assert_eq!(Target::from_stored(&plain.to_stored()).unwrap(), plain);
        let full = Target::new("https://a.example/h")
            .unwrap()
            .method(TargetMethod::Delete)
            .header("X-A", "1")
            .unwrap()
            .timeout(Duration::from_secs(3))
            .unwrap()
            .body(json!("text"));
        assert_eq!(Target::from_stored(&full.to_stored()).unwrap(), full);
        assert!(matches!(Target::from_stored("{}"), Err(Error::Internal(_))));
    }

    #[test]
    fn each_rule_names_its_field() {
        assert_eq!(field(Target::from_json(&json!({}))), "target.url");
        assert_eq!(field(Target::from_json(&json!({"url": "ftp://h/x"}))), "target.url");
        assert_eq!(field(Target::from_json(&json!({"url": "not a url"}))), "target.url");
        assert_eq!(field(Target::from_json(&json!({"url": "https://u:p@h/x"}))), "target.url");
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "method": "TRACE"}))), "target.method");
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "timeout": "61s"}))), "target.timeout");
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "timeout": "500ms"}))), "target.timeout");
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "timeout": 500}))), "target.timeout");
        let in_ms = Target::from_json(&json!({"url": "https://h/x", "timeout": 5000})).unwrap();
        assert_eq!(in_ms.delivery_timeout(), Duration::from_secs(5), "a bare number is milliseconds");
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "colour": 1}))), "target.colour");
        assert_eq!(field(Target::from_json(&json!("https://h/x"))), "target");
        for forbidden in ["Host", "content-length", "Transfer-Encoding", "CONNECTION", "Punctual-Signature"] {
            let body = json!({"url": "https://h/x", "headers": {forbidden: "v"}});
            assert_eq!(field(Target::from_json(&body)), "target.headers", "{forbidden}");
        }
        let bad_name = json!({"url": "https://h/x", "headers": {"X Bad": "v"}});
        assert_eq!(field(Target::from_json(&bad_name)), "target.headers");
        let newline = json!({"url": "https://h/x", "headers": {"X-A": "a\r\nHost: evil"}});
        assert_eq!(field(Target::from_json(&newline)), "target.headers");
    }

    #[test]
    fn header_limits_are_thirty_two_and_one_kibibyte() {
        let many: Map<String, Value> = (0..33).map(|i| (format!("X-{i}"), json!("v"))).collect();
        assert_eq!(field(Target::from_json(&json!({"url": "https://h/x", "headers": many}))), "target.headers");
        let fine: Map<String, Value> = (0..32).map(|i| (format!("X-{i:02}"), json!("v"))).collect();
        assert!(Target::from_json(&json!({"url": "https://h/x", "headers": fine})).is_ok());
        let big = json!({"url": "https://h/x", "headers": {"X-Big": "v".repeat(1020)}});
        assert_eq!(field(Target::from_json(&big)), "target.headers");
        let at_limit = json!({"url": "https://h/x", "headers": {"X-Big": "v".repeat(1019)}});
        assert!(Target::from_json(&at_limit).is_ok());
    }
}
