//! What every HTTP action shares: the pooled client, the reading of an answer's status
//! and `Retry-After`, which statuses are final ([`FinalStatuses`]), and how a
//! transport failure becomes an outcome.
//!
//! Invariants: one [`reqwest::Client`] serves every HTTP action of a process, so
//! connections to a receiver are pooled and reused; it resolves names through the
//! egress policy's resolver, follows no redirects (a `POST` must not turn into a `GET`
//! elsewhere, nor go where the policy did not look) and uses no proxy from the
//! environment (a proxy would resolve names out of the policy's sight); each request
//! carries its action's timeout; a connection the policy refused is a failure (dead),
//! not a transport trouble to retry. Answers are read up to [`MAX_ANSWER_BYTES`];
//! error messages quote at most [`QUOTE_CHARS`] of them.

use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Clock, Outcome, Timestamp};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::egress::{EgressPolicy, PolicyResolver, RefusalNote, refusal_in};
use crate::error::ActionError;
use crate::trace::TraceHeaders;

/// The most of an answer's body that is read.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The most of an answer's body quoted in `last_error`.
const QUOTE_CHARS: usize = 200;

/// How an HTTP action (a webhook, a chat robot) sends: the process's pooled client, the
/// timeout of one request, the answers that are final, the clock that stamps the
/// outcome, the note added to a refusal, and the trace headers of the webhook protocol
/// (`webhook::send`; a chat robot's API is not told of traces).
#[derive(Clone)]
pub(crate) struct Sender {
    pub(crate) client: reqwest::Client,
    pub(crate) timeout: Duration,
    pub(crate) finals: FinalStatuses,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) note: RefusalNote,
    pub(crate) trace: TraceHeaders,
}

/// The answers of a receiver that end a delivery at once (the task goes to dead):
/// trying again would get the same answer until someone changes the request or the
/// receiver. Every other non-2xx answer is retried with backoff (`Retry-After`
/// honoured), so a receiver that is misconfigured for a while (401) or being deployed
/// (404) loses nothing. 410 Gone is never final: a webhook receiver answers it for
/// "done, nothing to do any more".
///
/// Invariant: every status in the set is from 400 to 599 and not 410.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalStatuses(Vec<u16>);

impl FinalStatuses {
    /// The default set: 400 Bad Request, 413 Content Too Large, 415 Unsupported Media
    /// Type, 422 Unprocessable Content — the receiver cannot take this request, and
    /// sending it again will not change that.
    pub const DEFAULT: [u16; 4] = [400, 413, 415, 422];

    /// A set of final statuses; an empty one retries every non-2xx answer. A status
    /// outside 400–599, or 410, is an error whose field is `final_statuses[i]`.
    pub fn new<I>(statuses: I) -> Result<FinalStatuses, ActionError>
    where
        I: IntoIterator,
        I::Item: Into<i64>,
    {
        let mut set = Vec::new();
        for (i, status) in statuses.into_iter().enumerate() {
            let status = status.into();
            let field = format!("final_statuses[{i}]");
            if status == 410 {
                return Err(ActionError::invalid(field, "410 (Gone) always means done and cannot be final"));
            }
            match u16::try_from(status) {
                Ok(status) if (400..=599).contains(&status) => set.push(status),
                _ => {
                    return Err(ActionError::invalid(
                        field,
                        format!("{status} is not a status that can be final: give statuses from 400 to 599"),
                    ));
                }
            }
        }
        set.sort_unstable();
        set.dedup();
        Ok(FinalStatuses(set))
    }

    /// Whether `status` ends a delivery at once.
    pub fn contains(&self, status: StatusCode) -> bool {
        self.0.binary_search(&status.as_u16()).is_ok()
    }

    /// The statuses, in ascending order.
    pub fn as_slice(&self) -> &[u16] {
        &self.0
    }
}

impl Default for FinalStatuses {
    fn default() -> FinalStatuses {
        FinalStatuses(FinalStatuses::DEFAULT.to_vec())
    }
}

/// The HTTP client every action of a process shares (connection pool included),
/// connecting only where `egress` allows.
pub(crate) fn client(egress: Arc<EgressPolicy>) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(PolicyResolver::new(egress)))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("punctual/", env!("CARGO_PKG_VERSION")))
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
}

/// An answer: status, headers, and the start of the body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// Reads `response`'s body, up to [`MAX_ANSWER_BYTES`].
    pub(crate) async fn read(mut response: reqwest::Response) -> Result<Answer, reqwest::Error> {
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            let room = MAX_ANSWER_BYTES - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_ANSWER_BYTES {
                break;
            }
        }
        Ok(Answer { status, headers, body })
    }

    /// The body as text, cut to a quotable length.
    pub(crate) fn quote(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        if text.is_empty() {
            return "(empty body)".to_owned();
        }
        let mut quoted: String = text.chars().take(QUOTE_CHARS).collect();
        if quoted.len() < text.len() {
            quoted.push('…');
        }
        quoted
    }

    /// The wait `Retry-After` asks for (delay seconds or an HTTP date), measured from
    /// `now`.
    pub(crate) fn retry_after(&self, now: Timestamp) -> Option<Duration> {
        let value = self.headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
        retry_after(value, now)
    }

    /// Whether the status asks to try again later: 408, 429 or 5xx.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self.status, StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS)
            || self.status.is_server_error()
    }

    /// The outcome of an answer that is neither a success nor otherwise understood:
    /// dead when its status is in `finals`, else retried after `Retry-After` (or the
    /// task's backoff). `last_error` says what the receiver answered.
    pub(crate) fn refused(&self, what: &str, now: Timestamp, finals: &FinalStatuses) -> Outcome {
        // Redirects are not followed (see the module docs): say what to change.
        let hint =
            if self.status.is_redirection() { " (redirects are not followed: configure the final URL)" } else { "" };
        let error = format!("{what} answered {}{hint}: {}", self.status, self.quote());
        if finals.contains(self.status) {
            return Outcome::fail(error);
        }
        match self.retry_after(now) {
            Some(after) => Outcome::retry_in(after, error),
            None => Outcome::retry(error),
        }
    }
}

/// Parses a `Retry-After` value: delay seconds or an HTTP date (a date in the past
/// means now).
pub(crate) fn retry_after(value: &str, now: Timestamp) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let at = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    let at = Timestamp::from_millis(i64::try_from(at.as_millis()).ok()?);
    Some(at.saturating_since(now))
}

/// A request that got no answer: timeout, refused or reset connection, TLS failure —
/// all worth another try later — or a connection the egress policy refused, which
/// fails: the policy will refuse it again until the operator allows it (and then
/// retries the dead task), with `note` if it holds one.
pub(crate) fn transport_failure(what: &str, error: &reqwest::Error, timeout: Duration, note: &RefusalNote) -> Outcome {
    if let Some(refusal) = refusal_in(error) {
        return note.refused(what, refusal);
    }
    if error.is_timeout() {
        Outcome::retry(format!("{what} did not answer within {timeout:?}"))
    } else if error.is_connect() {
        Outcome::retry(format!("cannot connect to {what}: {}", chain(error)))
    } else {
        Outcome::retry(format!("request to {what} failed: {}", chain(error)))
    }
}

/// An error and its causes on one line (reqwest's own message omits the cause).
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Lowercase hex of `bytes` (signatures here; the server's delivery-policy fingerprint).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("Mon, 30 Nov 2026 12:05:00 GMT", now), Some(Duration::from_secs(300)));
        assert_eq!(retry_after("Mon, 30 Nov 2026 11:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
    }

    #[test]
    fn final_statuses_are_client_errors_or_server_errors_but_never_gone() {
        assert_eq!(FinalStatuses::default().as_slice(), &[400, 413, 415, 422]);
        let set = FinalStatuses::new([422, 404, 404]).unwrap();
        assert_eq!(set.as_slice(), &[404, 422]);
        assert!(set.contains(StatusCode::NOT_FOUND) && !set.contains(StatusCode::BAD_REQUEST));
        assert_eq!(FinalStatuses::new(Vec::<u16>::new()).unwrap().as_slice(), &[] as &[u16]);
        let error = FinalStatuses::new([404, 410]).unwrap_err();
        assert_eq!(error.to_string(), "final_statuses[1]: 410 (Gone) always means done and cannot be final");
        for bad in [399_i64, 600, 200, 302, -1, 70_000] {
            let error = FinalStatuses::new([bad]).unwrap_err();
            assert_eq!(error.field(), "final_statuses[0]");
            assert!(error.to_string().contains(&bad.to_string()), "{error}");
        }
    }
}
