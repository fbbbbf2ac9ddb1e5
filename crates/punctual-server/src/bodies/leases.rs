//! The bodies of the lease routes (API.md "Pull workers"): leasing, acks one by one or in a
//! batch (each ack's fields checked against its outcome), and extending a lease.

use std::time::Duration;

use punctual_core::{Outcome, Task, Timestamp, When};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::MAX_ERROR_BYTES;
use super::schema;
use crate::error::{ApiError, ErrorDetail};
use crate::extract::{ApiCount, ApiDuration, ApiTime};

/// `POST /v1/queues/{queue}/lease`; every field is optional (an empty body works).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LeaseBody {
    /// 1–1,000, default 1.
    #[serde(default)]
    max: Option<ApiCount>,
    /// 1 s–12 h, default 30 s.
    #[serde(default)]
    lease: Option<ApiDuration>,
    /// 0–60 s, default 0: how long to hold the request open for a task to fall due.
    #[serde(default)]
    wait: Option<ApiDuration>,
}

impl LeaseBody {
    pub(crate) fn into_options(self) -> punctual_core::LeaseOptions {
        let mut options = punctual_core::LeaseOptions::default();
        if let Some(ApiCount(max)) = self.max {
            options = options.max(max);
        }
        if let Some(lease) = self.lease {
            options = options.lease_for(lease.0);
        }
        if let Some(wait) = self.wait {
            options = options.wait(wait.0);
        }
        options
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LeaseItem {
    /// Opaque; pass it to ack and extend.
    pub(crate) lease_id: String,
    #[schema(value_type = schema::Timestamp)]
    pub(crate) expires_at: Timestamp,
    /// This try's ordinal, 1 for the first.
    pub(crate) attempt: u32,
    /// The same for every try of one occurrence.
    pub(crate) delivery_id: String,
    /// The time the occurrence this lease delivers was scheduled for (before jitter,
    /// retries and misfires).
    #[schema(value_type = schema::Timestamp)]
    pub(crate) scheduled_for: Timestamp,
    /// How many later occurrences of a repeat were already due when it was leased and
    /// will not fire of their own: this firing stands in for them (0 when on time).
    pub(crate) missed: u32,
    #[schema(value_type = schema::Task)]
    pub(crate) task: Task,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LeaseResponse {
    pub(crate) leases: Vec<LeaseItem>,
}

/// What a worker reports.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub(crate) enum OutcomeName {
    Done,
    Retry,
    Reschedule,
    Fail,
}

impl TryFrom<String> for OutcomeName {
    type Error = String;
    fn try_from(text: String) -> Result<OutcomeName, String> {
        match text.as_str() {
            "done" => Ok(OutcomeName::Done),
            "retry" => Ok(OutcomeName::Retry),
            "reschedule" => Ok(OutcomeName::Reschedule),
            "fail" => Ok(OutcomeName::Fail),
            _ => Err(format!("'{text}' is not an outcome: use done, retry, reschedule or fail")),
        }
    }
}

/// `POST /v1/leases/{lease_id}/ack`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AckBody {
    pub(crate) outcome: OutcomeName,
    /// `retry` (default: the task's backoff) or `reschedule`.
    #[serde(default)]
    delay: Option<ApiDuration>,
    /// `reschedule` only, instead of `delay`.
    #[serde(default)]
    due_at: Option<ApiTime>,
    /// `retry` and `fail`: what went wrong (kept as `last_error`, cut to 4 KiB).
    #[serde(default)]
    error: Option<String>,
}

impl AckBody {
    pub(crate) fn into_outcome(self) -> Result<Outcome, ApiError> {
        let refuse = |field: &str, outcome: &str| {
            ApiError::invalid(field, format!("{field} does not apply to the outcome {outcome}"))
        };
        let error = self.error.map(truncate_error);
        match self.outcome {
            OutcomeName::Done => {
                if self.delay.is_some() {
                    return Err(refuse("delay", "done"));
                }
                if self.due_at.is_some() {
                    return Err(refuse("due_at", "done"));
                }
                if error.is_some() {
                    return Err(refuse("error", "done"));
                }
                Ok(Outcome::Done)
            }
            OutcomeName::Retry => {
                if self.due_at.is_some() {
                    return Err(refuse("due_at", "retry"));
                }
                let error = error.unwrap_or_else(|| "the worker asked for a retry".into());
                Ok(match self.delay {
                    Some(delay) => Outcome::retry_in(delay.0, error),
                    None => Outcome::retry(error),
                })
            }
            OutcomeName::Reschedule => {
                if error.is_some() {
                    return Err(refuse("error", "reschedule"));
                }
                Ok(Outcome::Reschedule(match (self.delay, self.due_at) {
                    (None, None) => When::Now,
                    (Some(delay), None) => When::After(delay.0),
                    (None, Some(at)) => When::At(at.0),
                    (Some(_), Some(_)) => return Err(ApiError::invalid("due_at", "give delay or due_at, not both")),
                }))
            }
            OutcomeName::Fail => {
                if self.delay.is_some() {
                    return Err(refuse("delay", "fail"));
                }
                if self.due_at.is_some() {
                    return Err(refuse("due_at", "fail"));
                }
                Ok(Outcome::fail(error.unwrap_or_else(|| "the worker reported a failure".into())))
            }
        }
    }
}

fn truncate_error(mut text: String) -> String {
    if text.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// One item of `POST /v1/acks`: an ack body plus its `lease_id`. (The fields are
/// repeated rather than flattened: serde's `flatten` loses the path of errors and
/// cannot deny unknown fields.)
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AckItem {
    pub(crate) lease_id: String,
    outcome: OutcomeName,
    #[serde(default)]
    delay: Option<ApiDuration>,
    #[serde(default)]
    due_at: Option<ApiTime>,
    #[serde(default)]
    error: Option<String>,
}

impl AckItem {
    pub(crate) fn into_outcome(self) -> Result<Outcome, ApiError> {
        AckBody { outcome: self.outcome, delay: self.delay, due_at: self.due_at, error: self.error }.into_outcome()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcksBody {
    /// At most 10,000 (by default).
    pub(crate) acks: Vec<Value>,
}

#[derive(Debug, Serialize)]
pub(crate) struct AckResult {
    /// The item's lease id; null when it had none or it was not a string.
    pub(crate) lease_id: Option<String>,
    /// 204 applied, 400 invalid, 404 unknown lease, 409 lease no longer live.
    pub(crate) status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ErrorDetail>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AcksResponse {
    #[schema(value_type = Vec<schema::AckResult>)]
    pub(crate) results: Vec<AckResult>,
}

/// `POST /v1/leases/{lease_id}/extend`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExtendBody {
    /// The new length from now, 1 s–12 h (default 30 s).
    #[serde(default)]
    lease: Option<ApiDuration>,
}

impl ExtendBody {
    pub(crate) fn lease_for(&self) -> Duration {
        self.lease.map_or(punctual_core::LeaseOptions::default().lease_for, |d| d.0)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ExtendResponse {
    pub(crate) lease_id: String,
    #[schema(value_type = schema::Timestamp)]
    pub(crate) expires_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bodies::testing::field_of;
    use crate::extract::parse_json;

    fn outcome(json: &str) -> Result<Outcome, ApiError> {
        parse_json::<AckBody>(json.as_bytes())?.into_outcome()
    }

    #[test]
    fn ack_bodies_match_their_outcome() {
        assert_eq!(outcome(r#"{"outcome": "done"}"#).unwrap(), Outcome::Done);
        assert_eq!(
            outcome(r#"{"outcome": "retry", "delay": "5m", "error": "smtp"}"#).unwrap(),
            Outcome::retry_in(Duration::from_secs(300), "smtp")
        );
        assert_eq!(
            outcome(r#"{"outcome": "reschedule", "delay": "24h"}"#).unwrap(),
            Outcome::reschedule_in(Duration::from_secs(86400))
        );
        assert_eq!(outcome(r#"{"outcome": "fail", "error": "gone"}"#).unwrap(), Outcome::fail("gone"));
        assert_eq!(field_of(outcome(r#"{"outcome": "maybe"}"#)).as_deref(), Some("outcome"));
        assert_eq!(field_of(outcome(r#"{}"#)).as_deref(), Some("outcome"));
        assert_eq!(field_of(outcome(r#"{"outcome": "done", "delay": "1s"}"#)).as_deref(), Some("delay"));
        let long = format!(r#"{{"outcome": "fail", "error": "{}"}}"#, "é".repeat(5000));
        match outcome(&long).unwrap() {
            Outcome::Fail(e) => assert!(e.len() <= MAX_ERROR_BYTES && e.len() > MAX_ERROR_BYTES - 2),
            other => panic!("{other:?}"),
        }
    }
}
