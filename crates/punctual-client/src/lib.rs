//! A thin client of the HTTP API (`../shared/API.md`): it builds URLs with every path
//! segment percent-encoded, sends the bearer token, and turns each way a call can fail
//! into a [`ClientError`] that says what a person can do about it.
//!
//! Shared by the `punctual` command's client subcommands and by `punctual-bench`
//! (`--server`, and the servers it starts), so both say the same thing when a server
//! refuses or cannot be reached; [`output`] holds what the two binaries print alike
//! (tables, lines on standard output). A crate of its own because `punctual` and
//! `punctual-bench` are two binaries, neither depending on the other.
//!
//! It deliberately knows nothing of the task model: an answer is its JSON text (what
//! `--json` prints) and that text parsed as a `serde_json::Value` (what tables read), so
//! a newer server's extra fields pass through untouched.

pub mod output;

use std::fmt;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
pub use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

/// Longest wait for one whole request (connect, send, answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for the TCP (and TLS) connection alone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything but RFC 3986's unreserved characters is encoded, so a key with `/`, `?`,
/// `#`, `%`, spaces, `@` or any non-ASCII text stays one path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `segment` percent-encoded as one path segment ([`SEGMENT`]: `/` becomes `%2F`, a
/// control character `%01`, `订` `%E8%AE%A2`). The one encoding of the workspace: the
/// client's URLs, and the paths the tests write by hand.
pub fn path_segment(segment: &str) -> String {
    utf8_percent_encode(segment, SEGMENT).to_string()
}

/// A connection to one punctual server.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The base URL as the user gave it, without a trailing `/` (a path prefix, for a
    /// server behind a proxy, is kept).
    base: String,
    token: Option<String>,
    /// The longest wait for one whole request.
    timeout: Duration,
}

/// An answer with a 2xx status.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    /// The JSON body; `None` when the body is empty (`204`).
    pub body: Option<Json>,
}

/// A JSON body: the text as the server sent it, and the same parsed.
#[derive(Debug, Clone)]
pub struct Json {
    pub text: String,
    pub value: Value,
}

/// One request: a method and a path, and optionally a query, a JSON body and headers
/// of its own (`If-Match: 3`). Start from [`Request::new`] and set the rest by struct
/// update: `Request { body: Some(&body), ..Request::new(Method::PATCH, &segments) }`.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: Method,
    /// Path segments under the base, each percent-encoded when sent.
    pub segments: &'a [&'a str],
    pub query: &'a [(&'a str, &'a str)],
    pub body: Option<&'a Value>,
    /// Sent besides `Accept` and `Authorization`, which the client sets itself.
    pub headers: &'a [(&'a str, &'a str)],
}

impl<'a> Request<'a> {
    /// `method` on `segments`, with no query, body or extra header.
    pub fn new(method: Method, segments: &'a [&'a str]) -> Request<'a> {
        Request { method, segments, query: &[], body: None, headers: &[] }
    }
}

impl Answer {
    /// The JSON body, or an error saying the server sent none.
    pub fn json(self) -> Result<Json, ClientError> {
        self.body.ok_or_else(|| ClientError::Protocol {
            detail: format!("the server answered {} with an empty body where JSON was expected", self.status),
        })
    }
}

/// Why a call did not succeed.
#[derive(Debug)]
pub enum ClientError {
    /// The server answered and refused (any non-2xx status).
    Api(ApiError),
    /// No connection could be made.
    Unreachable { server: String, reason: String },
    /// Connected, but no complete answer within `after` ([`REQUEST_TIMEOUT`] unless the
    /// client was made [`Client::with_timeout`]).
    Timeout { server: String, after: Duration },
    /// The answer is not the API's (another service at that address, a proxy page…).
    Protocol { detail: String },
}

/// The API's error body, `{"error": {"code", "message", "field"}}`, with the status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    /// `invalid_argument`, `not_found`, …; empty when the body was not the API's.
    pub code: String,
    pub message: String,
    pub field: Option<String>,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Api(e) => e.fmt(f),
            ClientError::Unreachable { server, reason } => write!(
                f,
                "cannot reach the punctual server at {server} ({reason}). \
                 Is it running? Start one with: punctual serve"
            ),
            ClientError::Timeout { server, after } => write!(
                f,
                "the punctual server at {server} did not answer within {}s; \
                 it may be overloaded or its store unreachable",
                after.as_secs()
            ),
            ClientError::Protocol { detail } => f.write_str(detail),
        }
    }
}

impl std::error::Error for ClientError {}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A refusal for lack of permission says so first: the message alone ("this token
        // lacks …") reads like any other refusal.
        if self.code == "forbidden" {
            f.write_str("forbidden: ")?;
        }
        match &self.field {
            Some(field) if !field.is_empty() => write!(f, "{field}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl ApiError {
    /// Reads an error answer. A body that is not the API's error object (a proxy's
    /// page, an older server) still gives a sentence naming the status.
    pub fn from_answer(status: StatusCode, body: &[u8], server: &str) -> ApiError {
        #[derive(serde::Deserialize)]
        struct Body {
            error: Inner,
        }
        #[derive(serde::Deserialize)]
        struct Inner {
            #[serde(default)]
            code: String,
            message: String,
            #[serde(default)]
            field: Option<String>,
        }
        match serde_json::from_slice::<Body>(body) {
            Ok(Body { error }) => {
                ApiError { status: status.as_u16(), code: error.code, message: error.message, field: error.field }
            }
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let snippet: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(200).collect();
                let mut message = format!("the server at {server} answered {status}");
                if snippet.is_empty() {
                    message.push_str(" with no error message");
                } else {
                    message.push_str(&format!(": {snippet}"));
                }
                if status == StatusCode::NOT_FOUND {
                    message.push_str(" (is --server the address of a punctual server?)");
                }
                ApiError { status: status.as_u16(), code: String::new(), message, field: None }
            }
        }
    }
}

impl Client {
    /// A client of the server at `base` (an `http` or `https` URL, see
    /// [`parse_server_url`]) sending `token` as a bearer token when given.
    pub fn new(base: &Url, token: Option<String>) -> anyhow::Result<Client> {
        Client::with_timeout(base, token, REQUEST_TIMEOUT)
    }

    /// As [`Client::new`], waiting up to `timeout` for each whole request instead of
    /// [`REQUEST_TIMEOUT`]: a long poll holds its request open for its wait.
    pub fn with_timeout(base: &Url, token: Option<String>, timeout: Duration) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("punctual-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(timeout)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot set up the HTTP client: {e}"))?;
        let base = base.as_str().trim_end_matches('/').to_owned();
        Ok(Client { http, base, token: token.filter(|t| !t.is_empty()), timeout })
    }

    /// The URL of `segments` (each percent-encoded) under the base, with `query` pairs.
    pub fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Url, ClientError> {
        let mut text = self.base.clone();
        for segment in segments {
            text.push('/');
            text.push_str(&path_segment(segment));
        }
        let mut url = Url::parse(&text)
            .map_err(|e| ClientError::Protocol { detail: format!("cannot build a URL from '{text}': {e}") })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// `GET` expecting a JSON body.
    pub async fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Json, ClientError> {
        self.request(Request { query, ..Request::new(Method::GET, segments) }).await?.json()
    }

    /// `PUT` a JSON body.
    pub async fn put(&self, segments: &[&str], body: &Value) -> Result<Answer, ClientError> {
        self.request(Request { body: Some(body), ..Request::new(Method::PUT, segments) }).await
    }

    /// `POST` without a body, expecting a JSON answer.
    pub async fn post(&self, segments: &[&str]) -> Result<Json, ClientError> {
        self.request(Request::new(Method::POST, segments)).await?.json()
    }

    /// `POST` a JSON body.
    pub async fn post_json(&self, segments: &[&str], body: &Value) -> Result<Answer, ClientError> {
        self.request(Request { body: Some(body), ..Request::new(Method::POST, segments) }).await
    }

    /// `DELETE`; success is any 2xx (the API answers `204`).
    pub async fn delete(&self, segments: &[&str]) -> Result<Answer, ClientError> {
        self.request(Request::new(Method::DELETE, segments)).await
    }

    /// Any request: the shorthands above are this with fewer parts.
    pub async fn request(&self, request: Request<'_>) -> Result<Answer, ClientError> {
        let url = self.url(request.segments, request.query)?;
        let mut builder = self.http.request(request.method, url).header(reqwest::header::ACCEPT, "application/json");
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token);
        }
        for (name, value) in request.headers {
            builder = builder.header(*name, *value);
        }
        if let Some(body) = request.body {
            builder = builder.json(body);
        }
        let response = builder.send().await.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| self.transport_error(&e))?;
        if !status.is_success() {
            let mut error = ApiError::from_answer(status, &bytes, &self.base);
            if status == StatusCode::UNAUTHORIZED && self.token.is_none() {
                error.message.push_str(" (this server requires a token: pass --token or set PUNCTUAL_TOKEN)");
            }
            return Err(ClientError::Api(error));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Answer { status, body: None });
        }
        let value = serde_json::from_slice(&bytes).map_err(|e| ClientError::Protocol {
            detail: format!(
                "the server at {} answered {status} with something that is not JSON ({e}); \
                 is --server the address of a punctual server?",
                self.base
            ),
        })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(Answer { status, body: Some(Json { text, value }) })
    }

    fn transport_error(&self, error: &reqwest::Error) -> ClientError {
        let server = self.base.clone();
        if error.is_connect() {
            let reason = if error.is_timeout() {
                format!("no connection within {}s", CONNECT_TIMEOUT.as_secs())
            } else {
                connect_reason(error)
            };
            ClientError::Unreachable { server, reason }
        } else if error.is_timeout() {
            ClientError::Timeout { server, after: self.timeout }
        } else {
            ClientError::Protocol { detail: format!("the call to the server at {server} failed: {}", innermost(error)) }
        }
    }
}

/// A short reason for a failed connection: the OS's word for it when there is one
/// ("connection refused"), otherwise the innermost error's text (a DNS failure).
fn connect_reason(error: &(dyn std::error::Error + 'static)) -> String {
    use std::io::ErrorKind;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                ErrorKind::ConnectionRefused => "connection refused".into(),
                ErrorKind::ConnectionReset => "connection reset".into(),
                ErrorKind::TimedOut => "connection timed out".into(),
                ErrorKind::AddrNotAvailable => "address not available".into(),
                _ => io.to_string(),
            };
        }
        source = e.source();
    }
    innermost(error)
}

fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut last = error;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// Parses `--server`: an `http` or `https` URL without query or fragment. A bare
/// `host:port` is read as `http://host:port`.
pub fn parse_server_url(text: &str) -> Result<Url, String> {
    let text = text.trim();
    let with_scheme = if text.contains("://") { text.to_owned() } else { format!("http://{text}") };
    let url = Url::parse(&with_scheme)
        .map_err(|e| format!("'{text}' is not a URL ({e}); write e.g. http://127.0.0.1:7575"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("'{text}' is not an http or https URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("'{text}' names no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("'{text}' has a query or fragment; give only the server's base URL"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_graph_has_no_circles() {
        punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
    }

    fn client(base: &str) -> Client {
        Client::new(&parse_server_url(base).unwrap(), None).unwrap()
    }

    #[test]
    fn every_path_segment_is_percent_encoded() {
        let c = client("http://127.0.0.1:7575");
        let url = c.url(&["v1", "queues", "order.cancel", "tasks", "订单/1234 a@b?c#d%e+f~g"], &[]).unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:7575/v1/queues/order.cancel/tasks/\
             %E8%AE%A2%E5%8D%95%2F1234%20a%40b%3Fc%23d%25e%2Bf~g"
        );
    }

    #[test]
    fn a_base_path_and_a_trailing_slash_are_kept_and_dropped() {
        let c = client("https://example.test/punctual/");
        assert_eq!(c.base, "https://example.test/punctual");
        let url = c.url(&["v1", "queues"], &[("limit", "100"), ("cursor", "a+b/c=")]).unwrap();
        assert_eq!(url.as_str(), "https://example.test/punctual/v1/queues?limit=100&cursor=a%2Bb%2Fc%3D");
    }

    #[test]
    fn server_urls_are_checked() {
        assert_eq!(parse_server_url("127.0.0.1:7575").unwrap().as_str(), "http://127.0.0.1:7575/");
        assert!(parse_server_url("ftp://x").unwrap_err().contains("http or https"));
        assert!(parse_server_url("http://x/?a=1").unwrap_err().contains("query"));
        assert!(parse_server_url("http://").is_err());
    }

    #[test]
    fn api_errors_read_the_error_body_and_name_the_field() {
        let body = br#"{"error": {"code": "invalid_argument", "message": "'30 seconds' is not a duration", "field": "delay"}}"#;
        let e = ApiError::from_answer(StatusCode::BAD_REQUEST, body, "http://s");
        assert_eq!(e.code, "invalid_argument");
        assert_eq!(e.to_string(), "delay: '30 seconds' is not a duration");

        let body = br#"{"error": {"code": "not_found", "message": "no task 'k' in queue 'q'"}}"#;
        let e = ApiError::from_answer(StatusCode::NOT_FOUND, body, "http://s");
        assert_eq!(e.to_string(), "no task 'k' in queue 'q'");
    }

    #[test]
    fn answers_that_are_not_the_api_still_say_what_happened() {
        let e = ApiError::from_answer(StatusCode::BAD_GATEWAY, b"<html>\n  Bad   gateway</html>", "http://s");
        assert_eq!(e.to_string(), "the server at http://s answered 502 Bad Gateway: <html> Bad gateway</html>");
        let e = ApiError::from_answer(StatusCode::NOT_FOUND, b"", "http://s");
        assert!(e.to_string().contains("is --server the address of a punctual server?"), "{e}");
    }

    #[test]
    fn unreachable_says_how_to_start_a_server() {
        let e =
            ClientError::Unreachable { server: "http://127.0.0.1:7575".into(), reason: "connection refused".into() };
        assert_eq!(
            e.to_string(),
            "cannot reach the punctual server at http://127.0.0.1:7575 (connection refused). \
             Is it running? Start one with: punctual serve"
        );
    }

    #[tokio::test]
    async fn a_closed_port_is_reported_as_connection_refused() {
        // Bind then drop a listener: the port is free and nothing accepts on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let c = client(&format!("http://127.0.0.1:{port}"));
        let e = c.get(&["v1", "queues"], &[]).await.unwrap_err();
        assert!(matches!(&e, ClientError::Unreachable { reason, .. } if reason == "connection refused"), "{e:?}");
    }
}
