//! The webhook action, exactly as API.md's "Push actions" specifies.
//!
//! A delivery is `POST <url>` with the JSON body `{"queue", "key", "payload",
//! "attempt", "due_at", "fired_at", "delivery_id", "tags", "priority", "scheduled_for",
//! "missed"}`, the header
//! `Punctual-Delivery: <delivery_id>`, and, when a secret is set,
//! `Punctual-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (with a
//! previous secret too, a second `v1` after the first: [`SigningSecrets`]).
//!
//! The answer decides the outcome:
//!
//! | answer | outcome |
//! |---|---|
//! | 2xx, empty (or non-JSON) body, or `{"outcome":"done"}` | done |
//! | 2xx `{"outcome":"reschedule","delay":"24h"}` (or `"due_at"`) | reschedule |
//! | 2xx `{"outcome":"retry","delay"?,"error"?}` / `{"outcome":"fail","error"}` | retry / dead (as a pull worker's ack) |
//! | 410 Gone | done |
//! | a status of the queue's [`FinalStatuses`] (default 400, 413, 415, 422) | dead, with the status and the start of the body as `last_error` |
//! | any other status (3xx too: redirects are not followed), timeout, connection error | retry, after `Retry-After` when given, else the task's backoff |
//!
//! A 2xx whose JSON names an outcome punctual does not understand is retried: the
//! receiver has a bug, and dropping the task would hide it.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use punctual_core::time::parse_duration;
use punctual_core::{Delivery, Outcome, Timestamp};
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::error::ActionError;
use crate::http::{Answer, FinalStatuses, Sender, hex, transport_failure};
use crate::secret::{Secret, SigningSecrets};

/// A webhook's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookConfig {
    /// Where deliveries are posted (http or https).
    pub url: String,
    /// Signs deliveries when set.
    pub secret: Option<Secret>,
    /// Signs deliveries too, after `secret`, while receivers move to it.
    pub previous_secret: Option<Secret>,
}

impl WebhookConfig {
    /// A webhook to `url`, unsigned.
    pub fn new(url: impl Into<String>) -> WebhookConfig {
        WebhookConfig { url: url.into(), secret: None, previous_secret: None }
    }

    /// Signs deliveries with `secret`.
    pub fn secret(mut self, secret: Secret) -> WebhookConfig {
        self.secret = Some(secret);
        self
    }

    /// Signs deliveries with `previous` too, after the secret, while receivers move to
    /// the new one.
    pub fn previous_secret(mut self, previous: Secret) -> WebhookConfig {
        self.previous_secret = Some(previous);
        self
    }
}

/// Checks a webhook's settings without a network, answering its URL: the URL, and a
/// previous secret only beside a current one.
pub(crate) fn check(config: &WebhookConfig) -> Result<reqwest::Url, ActionError> {
    let url = parse_url(&config.url, "url")?;
    if config.previous_secret.is_some() && config.secret.is_none() {
        return Err(ActionError::invalid(
            "previous_secret",
            "a previous secret signs beside the current one: set secret (or secret_env) too",
        ));
    }
    Ok(url)
}

/// The `Punctual-Signature` header value for `body` sent at `t` (unix seconds).
pub fn signature(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", digest(secret, t, body))
}

/// The `Punctual-Signature` header value signed by each of `secrets`, in order.
fn signatures(secrets: &SigningSecrets, t: i64, body: &[u8]) -> String {
    let mut header = format!("t={t}");
    for secret in secrets.each() {
        header.push_str(",v1=");
        header.push_str(&digest(secret.expose().as_bytes(), t, body));
    }
    header
}

/// The hex HMAC-SHA256, keyed with `secret`, of `"<t>.<body>"`.
fn digest(secret: &[u8], t: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex(&mac.finalize().into_bytes())
}

/// The body of a delivery, in API.md's order.
#[derive(Serialize)]
struct Body<'a> {
    queue: &'a str,
    key: &'a str,
    payload: &'a serde_json::Value,
    attempt: u32,
    due_at: Timestamp,
    fired_at: Timestamp,
    delivery_id: &'a str,
    tags: Vec<&'a str>,
    priority: u8,
    scheduled_for: Timestamp,
    missed: u32,
}

/// What a receiver may answer in a 2xx body.
#[derive(Deserialize)]
struct Reply {
    outcome: Option<String>,
    delay: Option<serde_json::Value>,
    due_at: Option<Timestamp>,
    error: Option<String>,
}

pub(crate) struct Webhook {
    url: reqwest::Url,
    secret: Option<SigningSecrets>,
    sender: Sender,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url.as_str())
            .field("signed", &self.secret.is_some())
            .field("timeout", &self.sender.timeout)
            .field("final_statuses", &self.sender.finals.as_slice())
            .finish()
    }
}

impl Webhook {
    pub(crate) fn new(config: WebhookConfig, sender: Sender) -> Result<Webhook, ActionError> {
        let url = check(&config)?;
        let secret = config.secret.map(|current| match config.previous_secret {
            Some(previous) => SigningSecrets::new(current).with_previous(previous),
            None => SigningSecrets::new(current),
        });
        Ok(Webhook { url, secret, sender })
    }

    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let fired_at = self.sender.clock.now();
        let body = match standard_body(delivery, fired_at) {
            Ok(body) => body,
            Err(outcome) => return outcome,
        };
        let request = SignedRequest {
            method: reqwest::Method::POST,
            url: &self.url,
            headers: &[],
            body: Some(body),
            secret: self.secret.as_ref(),
            timeout: self.sender.timeout,
            what: format!("webhook {}", self.url),
        };
        send(&self.sender, request, delivery, fired_at).await
    }

    /// The secrets deliveries are signed with, if any.
    pub(crate) fn secret(&self) -> Option<&SigningSecrets> {
        self.secret.as_ref()
    }
}

/// The standard delivery body (API.md's order) of `delivery` fired at `fired_at`, or
/// the outcome when it cannot be encoded.
pub(crate) fn standard_body(delivery: &Delivery, fired_at: Timestamp) -> Result<Vec<u8>, Outcome> {
    let task = &delivery.task;
    let body = Body {
        queue: task.queue.as_str(),
        key: task.key.as_str(),
        payload: &task.payload,
        attempt: delivery.attempt,
        due_at: task.due_at,
        fired_at,
        delivery_id: &delivery.delivery_id,
        tags: task.tags.iter().map(|t| t.as_str()).collect(),
        priority: task.priority.get(),
        scheduled_for: delivery.scheduled_for,
        missed: delivery.missed,
    };
    serde_json::to_vec(&body).map_err(|e| Outcome::fail(format!("cannot encode the delivery as JSON: {e}")))
}

/// One request of the webhook protocol: a JSON body (or none), `Punctual-Delivery`,
/// `Punctual-Signature` over the exact body sent when there is a secret, and the
/// caller's extra headers.
pub(crate) struct SignedRequest<'a> {
    pub(crate) method: reqwest::Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) secret: Option<&'a SigningSecrets>,
    pub(crate) timeout: Duration,
    /// The receiver, for `last_error` ("webhook https://…").
    pub(crate) what: String,
}

/// Sends `request` and turns the answer into the outcome of the module docs' table.
pub(crate) async fn send(
    sender: &Sender,
    request: SignedRequest<'_>,
    delivery: &Delivery,
    fired_at: Timestamp,
) -> Outcome {
    let SignedRequest { method, url, headers, body, secret, timeout, what } = request;
    let mut builder = sender.client.request(method, url.clone()).timeout(timeout);
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder = builder.header("Punctual-Delivery", &delivery.delivery_id);
    // The delivery's trace, continued by the receiver (`traceparent`).
    for (name, value) in sender.trace.for_task(&delivery.task) {
        builder = builder.header(name, value);
    }
    let body = body.unwrap_or_default();
    // A caller's own Content-Type (a target's header) wins over the default.
    if !body.is_empty() && !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        builder = builder.header(CONTENT_TYPE, "application/json");
    }
    if let Some(secret) = secret {
        let t = fired_at.as_millis() / 1000;
        builder = builder.header("Punctual-Signature", signatures(secret, t, &body));
    }
    let response = match builder.body(body).send().await {
        Ok(response) => response,
        Err(e) => return transport_failure(&what, &e, timeout, &sender.note),
    };
    crate::trace::record_status(response.status().as_u16());
    match Answer::read(response).await {
        Ok(answer) => {
            // The task's history keeps what the receiver answered with this try.
            delivery.note_answer(Some(answer.status.as_u16()), String::from_utf8_lossy(&answer.body).trim());
            outcome_of(&answer, &what, sender.clock.now(), &sender.finals)
        }
        Err(e) => transport_failure(&what, &e, timeout, &sender.note),
    }
}

/// Parses an http(s) URL; `field` names the key for the error.
pub(crate) fn parse_url(text: &str, field: &str) -> Result<reqwest::Url, ActionError> {
    let url =
        reqwest::Url::parse(text).map_err(|e| ActionError::invalid(field, format!("'{text}' is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(ActionError::invalid(field, format!("'{text}' must be an http:// or https:// URL with a host")));
    }
    Ok(url)
}

/// The outcome of a receiver's answer (the table of the module docs).
pub(crate) fn outcome_of(answer: &Answer, what: &str, now: Timestamp, finals: &FinalStatuses) -> Outcome {
    if answer.status.is_success() {
        return success_outcome(answer, what);
    }
    if answer.status == StatusCode::GONE {
        return Outcome::Done;
    }
    answer.refused(what, now, finals)
}

fn success_outcome(answer: &Answer, what: &str) -> Outcome {
    let text = String::from_utf8_lossy(&answer.body);
    if text.trim().is_empty() {
        return Outcome::Done;
    }
    // A body that is not a JSON object is a plain acknowledgement ("ok").
    let Ok(reply) = serde_json::from_str::<Reply>(&text) else {
        return Outcome::Done;
    };
    let misunderstood = |why: String| Outcome::retry(format!("{what} answered {}: {why}", answer.status));
    let delay = match reply.delay.as_ref().map(duration_of).transpose() {
        Ok(delay) => delay,
        Err(why) => return misunderstood(why),
    };
    match reply.outcome.as_deref() {
        None | Some("done") => Outcome::Done,
        Some("reschedule") => match (delay, reply.due_at) {
            (Some(delay), None) => Outcome::reschedule_in(delay),
            (None, Some(at)) => Outcome::reschedule_at(at),
            _ => misunderstood("a reschedule needs exactly one of delay and due_at".into()),
        },
        Some("retry") => {
            let error = reply.error.unwrap_or_else(|| format!("{what} asked to retry"));
            match delay {
                Some(delay) => Outcome::retry_in(delay, error),
                None => Outcome::retry(error),
            }
        }
        Some("fail") => Outcome::fail(reply.error.unwrap_or_else(|| format!("{what} answered fail"))),
        Some(other) => misunderstood(format!("'{other}' is not an outcome: use done, reschedule, retry or fail")),
    }
}

/// A delay as the API writes it: a duration string or integer milliseconds.
fn duration_of(value: &serde_json::Value) -> Result<Duration, String> {
    match value {
        serde_json::Value::String(text) => parse_duration(text).map_err(|e| format!("delay {e}")),
        serde_json::Value::Number(n) => {
            n.as_u64().map(Duration::from_millis).ok_or_else(|| format!("delay {n} is not a whole number of ms"))
        }
        other => Err(format!("delay {other} is neither a duration string nor milliseconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> Answer {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert(reqwest::header::RETRY_AFTER, value.parse().unwrap());
        }
        Answer { status: StatusCode::from_u16(status).unwrap(), headers, body: body.as_bytes().to_vec() }
    }

    #[test]
    fn the_outcome_table() {
        let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
        let finals = FinalStatuses::default();
        let of = |status, body, retry_after| outcome_of(&answer(status, body, retry_after), "webhook x", now, &finals);
        assert_eq!(of(200, "", None), Outcome::Done);
        assert_eq!(of(204, "", None), Outcome::Done);
        assert_eq!(of(200, "ok", None), Outcome::Done);
        assert_eq!(of(200, r#"{"outcome":"done"}"#, None), Outcome::Done);
        assert_eq!(
            of(200, r#"{"outcome":"reschedule","delay":"24h"}"#, None),
            Outcome::reschedule_in(Duration::from_secs(86_400))
        );
        assert_eq!(
            of(202, r#"{"outcome":"reschedule","delay":1500}"#, None),
            Outcome::reschedule_in(Duration::from_millis(1500))
        );
        assert_eq!(
            of(200, r#"{"outcome":"reschedule","due_at":"2026-12-01T00:00:00Z"}"#, None),
            Outcome::reschedule_at(Timestamp::parse("2026-12-01T00:00:00Z").unwrap())
        );
        assert!(matches!(
            of(200, r#"{"outcome":"reschedule","delay":"soon"}"#, None),
            Outcome::Retry { after: None, .. }
        ));
        assert!(matches!(of(200, r#"{"outcome":"maybe"}"#, None), Outcome::Retry { .. }));
        assert_eq!(of(200, r#"{"outcome":"fail","error":"order gone"}"#, None), Outcome::fail("order gone"));
        assert_eq!(of(410, "gone", None), Outcome::Done);
        // Every status that is not final is retried: a misconfigured receiver (401,
        // 403), one being deployed (404), one that is busy (408, 429, 5xx).
        for status in [401, 403, 404, 405, 408, 409, 429, 500, 502, 503, 504] {
            assert!(matches!(of(status, "", None), Outcome::Retry { after: None, .. }), "{status}");
        }
        for status in [400, 413, 415, 422] {
            assert!(matches!(of(status, "", None), Outcome::Fail(_)), "{status} is final by default");
        }
        let Outcome::Retry { after, error } = of(503, "busy", Some("120")) else { panic!() };
        assert_eq!(after, Some(Duration::from_secs(120)));
        assert!(error.contains("503") && error.contains("busy"), "{error}");
        let Outcome::Retry { after, .. } = of(429, "", Some("Mon, 30 Nov 2026 12:01:00 GMT")) else { panic!() };
        assert_eq!(after, Some(Duration::from_secs(60)));
        let Outcome::Fail(error) = of(422, "no such order", None) else { panic!() };
        assert_eq!(error, "webhook x answered 422 Unprocessable Entity: no such order");
        let Outcome::Retry { after, error } = of(401, "bad token", Some("30")) else { panic!() };
        assert_eq!(
            (after, error.as_str()),
            (Some(Duration::from_secs(30)), "webhook x answered 401 Unauthorized: bad token")
        );
        assert!(
            matches!(of(302, "", None), Outcome::Retry { error, .. } if error.contains("redirects are not followed"))
        );

        // A queue's own set replaces the default.
        let finals = FinalStatuses::new([404]).unwrap();
        let of = |status| outcome_of(&answer(status, "", None), "webhook x", now, &finals);
        assert!(matches!(of(404), Outcome::Fail(_)));
        assert!(matches!(of(422), Outcome::Retry { .. }));
        assert_eq!(of(410), Outcome::Done);
    }

    #[test]
    fn signatures_are_hmac_sha256_of_t_dot_body() {
        // Reference value computed independently:
        // python3 -c 'import hmac,hashlib;print(hmac.new(b"whsec",b"1700000000.{}",hashlib.sha256).hexdigest())'
        let sig = signature(b"whsec", 1_700_000_000, b"{}");
        assert_eq!(sig, "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af");
    }

    #[test]
    fn urls_must_be_http() {
        assert!(parse_url("https://example.com/hook", "url").is_ok());
        assert!(parse_url("ftp://example.com", "url").is_err());
        assert!(parse_url("not a url", "url").is_err());
    }
}
