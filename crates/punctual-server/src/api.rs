//! The API's request and response bodies (API.md), and the validation that turns raw
//! requests into core types.
//!
//! Two stages, like the config: serde reads a request into a raw struct here
//! (`deny_unknown_fields`, so a misspelt field is an error, not a silently ignored
//! option); `into_*` methods then check what serde cannot (exactly one of `delay` and
//! `due_at`, an ack's fields matching its outcome) and build the core type. Every
//! error names its field. The engine checks the rest (names, limits, policies).
//!
//! Response structs serialize to exactly API.md's objects; the core [`Task`] already
//! does. Each type also describes itself for `/openapi.json`.

use std::time::Duration;

use punctual_core::MAX_LIST_LIMIT;
use punctual_core::store::{QueueStats, ScheduleOutcome};
use punctual_core::time::format_duration;
use punctual_core::{Backoff, DeadSelection, IfExists, Outcome, Repeat, Tag, Task, TaskKey, TaskSpec, Timestamp, When};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorDetail};
use crate::extract::{ApiCount, ApiDuration, ApiTime};
use crate::schema;

/// The longest `error` text kept from an ack; longer ones are cut at a character
/// boundary (a worker's ack must not fail because its stack trace is long).
pub(crate) const MAX_ERROR_BYTES: usize = 4096;

/// `PUT /v1/queues/{queue}/tasks/{key}`, and each item of a batch (which adds `key`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskBody {
    /// Required in a batch item; in a PUT the path gives it (if present it must match).
    #[serde(default)]
    pub(crate) key: Option<String>,
    /// Due this long from now. Exactly one of `delay` and `due_at`; neither: due now.
    #[serde(default)]
    pub(crate) delay: Option<ApiDuration>,
    /// Due at this instant (in the past: due now).
    #[serde(default)]
    pub(crate) due_at: Option<ApiTime>,
    /// Any JSON; at most 64 KiB serialized (by default).
    #[serde(default)]
    pub(crate) payload: Value,
    /// At least 1; the queue's default when absent.
    #[serde(default)]
    pub(crate) max_attempts: Option<ApiCount>,
    /// The queue's default when absent.
    #[serde(default)]
    pub(crate) backoff: Option<BackoffBody>,
    #[serde(default)]
    pub(crate) repeat: Option<RepeatBody>,
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// `replace` (default), `keep` or `error`.
    #[serde(default)]
    pub(crate) if_exists: IfExists,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BackoffBody {
    initial: ApiDuration,
    factor: f64,
    max: ApiDuration,
}

impl BackoffBody {
    pub(crate) fn into_backoff(self) -> Result<Backoff, ApiError> {
        Ok(Backoff::new(self.initial.0, self.factor, self.max.0)?)
    }
}

/// The shortest `repeat.every` a request or the config file may give: a bare number is
/// milliseconds, so `"every": 60` meant as seconds would fire every 60 ms.
pub(crate) const MIN_EVERY: Duration = Duration::from_secs(1);

/// `{"every": "24h", "times": 3, "until": …}` or `{"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RepeatBody {
    #[serde(default)]
    every: Option<ApiDuration>,
    #[serde(default)]
    cron: Option<String>,
    /// IANA zone of `cron` (default UTC).
    #[serde(default)]
    tz: Option<String>,
    /// Occurrences in all.
    #[serde(default)]
    times: Option<ApiCount>,
    /// No occurrence due after this instant.
    #[serde(default)]
    until: Option<ApiTime>,
}

impl RepeatBody {
    pub(crate) fn into_repeat(self) -> Result<Repeat, ApiError> {
        let mut repeat = match (self.every, self.cron) {
            (Some(every), None) => {
                if self.tz.is_some() {
                    return Err(ApiError::invalid("repeat.tz", "tz applies to cron only"));
                }
                if every.0 < MIN_EVERY {
                    return Err(ApiError::invalid(
                        "repeat.every",
                        format!(
                            "{} is shorter than 1s; a bare number is milliseconds (60 is 60ms): \
                             write \"60s\" or \"PT60S\" for a minute",
                            format_duration(every.0)
                        ),
                    ));
                }
                Repeat::every(every.0)?
            }
            (None, Some(cron)) => Repeat::cron(&cron, self.tz.as_deref().unwrap_or("UTC"))?,
            (Some(_), Some(_)) => return Err(ApiError::invalid("repeat", "give either every or cron, not both")),
            (None, None) => {
                return Err(ApiError::invalid(
                    "repeat",
                    "give every (e.g. \"24h\") or cron (e.g. \"0 9 * * MON-FRI\")",
                ));
            }
        };
        if let Some(ApiCount(n)) = self.times {
            repeat = repeat.times(n)?;
        }
        if let Some(until) = self.until {
            repeat = repeat.until(until.0);
        }
        Ok(repeat)
    }
}

impl TaskBody {
    /// Validates into a spec. Field names are relative to the task object.
    pub(crate) fn into_spec(self) -> Result<TaskSpec, ApiError> {
        let mut spec = match (self.delay, self.due_at) {
            (None, None) => TaskSpec::now(),
            (Some(delay), None) => TaskSpec::after(delay.0),
            (None, Some(at)) => TaskSpec::at(at.0),
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid("due_at", "give delay or due_at, not both"));
            }
        };
        spec = spec.payload(self.payload);
        if let Some(ApiCount(n)) = self.max_attempts {
            spec = spec.max_attempts(n);
        }
        if let Some(backoff) = self.backoff {
            spec = spec.backoff(backoff.into_backoff()?);
        }
        if let Some(repeat) = self.repeat {
            spec = spec.repeat(repeat.into_repeat()?);
        }
        for (i, tag) in self.tags.into_iter().enumerate() {
            Tag::new(tag.as_str()).map_err(|e| ApiError::from(e).within_field(&format!("tags[{i}]")))?;
            spec = spec.tag(tag);
        }
        spec = spec.if_exists(self.if_exists);
        Ok(spec)
    }
}

/// `POST /v1/queues/{queue}/tasks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchBody {
    /// At most 10,000 (by default) task objects, each with its `key`.
    pub(crate) tasks: Vec<Value>,
}

/// The answer to a PUT.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ScheduleResponse {
    #[schema(value_type = schema::ScheduleOutcome)]
    pub(crate) outcome: ScheduleOutcome,
    #[schema(value_type = schema::Task)]
    pub(crate) task: Task,
}

/// One item of a batch's answer: `{"key", "outcome"}` or `{"key", "error"}`.
#[derive(Debug, Serialize)]
pub(crate) struct BatchResult {
    /// The item's key; null when it had none or it was not a string.
    pub(crate) key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) outcome: Option<ScheduleOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ErrorDetail>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchResponse {
    #[schema(value_type = Vec<schema::BatchResult>)]
    pub(crate) results: Vec<BatchResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CancelledResponse {
    pub(crate) cancelled: u64,
}

/// A page of tasks in due order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TaskList {
    #[schema(value_type = Vec<schema::Task>)]
    pub(crate) tasks: Vec<Task>,
    /// Pass back as `cursor` for the next page; null at the end.
    pub(crate) next_cursor: Option<String>,
}

/// `?state=&tag=&limit=&cursor=`; empty values mean "not given".
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    pub(crate) state: Option<String>,
    #[serde(default)]
    pub(crate) tag: Option<String>,
    #[serde(default)]
    pub(crate) limit: Option<String>,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

impl ListQuery {
    /// Default 100, 1–1,000.
    pub(crate) fn limit(&self) -> Result<u32, ApiError> {
        match self.limit.as_deref().filter(|l| !l.is_empty()) {
            None => Ok(100),
            Some(text) => text.parse::<u32>().ok().filter(|n| (1..=MAX_LIST_LIMIT).contains(n)).ok_or_else(|| {
                ApiError::invalid("limit", format!("'{text}' is not a number from 1 to {MAX_LIST_LIMIT}"))
            }),
        }
    }

    pub(crate) fn cursor(&self) -> Option<String> {
        self.cursor.clone().filter(|c| !c.is_empty())
    }

    pub(crate) fn tag(&self) -> Option<String> {
        self.tag.clone().filter(|t| !t.is_empty())
    }
}

/// `POST /v1/queues/{queue}/dead/retry`: `{}` (every dead task), `{"tag"}` or
/// `{"keys"}`. A null `tag` or `keys` is refused, not read as absent (as elsewhere): a
/// client whose list came out null would otherwise retry every dead task.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeadRetryBody {
    #[serde(default, deserialize_with = "not_null")]
    tag: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    keys: Option<Vec<String>>,
}

/// A field that, when given, is not null.
fn not_null<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    match Option::<T>::deserialize(d)? {
        Some(value) => Ok(Some(value)),
        None => Err(serde::de::Error::custom("null is not allowed here: leave the field out instead")),
    }
}

impl DeadRetryBody {
    /// Validates into a selection; more than `max_keys` keys is refused (field `keys`).
    pub(crate) fn into_selection(self, max_keys: usize) -> Result<DeadSelection, ApiError> {
        match (self.tag, self.keys) {
            (None, None) => Ok(DeadSelection::All),
            (Some(tag), None) => Ok(DeadSelection::Tagged(Tag::new(tag)?)),
            (None, Some(keys)) => {
                if keys.len() > max_keys {
                    return Err(ApiError::invalid(
                        "keys",
                        format!("{} keys is over the batch limit of {max_keys}", keys.len()),
                    ));
                }
                let keys = keys
                    .into_iter()
                    .enumerate()
                    .map(|(i, key)| {
                        TaskKey::new(key).map_err(|e| ApiError::from(e).within_field(&format!("keys[{i}]")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(DeadSelection::Keys(keys))
            }
            (Some(_), Some(_)) => {
                Err(ApiError::invalid("keys", "give tag or keys, not both (neither: every dead task)"))
            }
        }
    }
}

/// The answer to a bulk retry of dead tasks.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RetriedResponse {
    /// How many dead tasks are scheduled again, due now.
    pub(crate) retried: u64,
}

/// A queue's counts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueSummary {
    #[schema(example = "order.cancel")]
    pub(crate) name: String,
    pub(crate) scheduled: u64,
    pub(crate) leased: u64,
    pub(crate) dead: u64,
    /// Earliest due time of a scheduled task.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub(crate) next_due_at: Option<Timestamp>,
}

impl From<QueueStats> for QueueSummary {
    fn from(s: QueueStats) -> QueueSummary {
        QueueSummary {
            name: s.name.to_string(),
            scheduled: s.scheduled,
            leased: s.leased,
            dead: s.dead,
            next_due_at: s.next_due_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueListResponse {
    pub(crate) queues: Vec<QueueSummary>,
}

/// `GET /v1/queues/{queue}`: the counts, how overdue the oldest due task is, and the
/// recent fire lag.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueDetail {
    #[serde(flatten)]
    pub(crate) summary: QueueSummary,
    /// How long the earliest scheduled task has been due (0 when none is due).
    pub(crate) oldest_overdue_ms: u64,
    pub(crate) lag_ms: LagMs,
}

/// Fire lag (lease time − due time) of this server's recent leases of the queue;
/// null members when it has leased none yet.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LagMs {
    pub(crate) p50: Option<u64>,
    pub(crate) p99: Option<u64>,
}

/// `GET /v1/queues/{queue}/activity`: a bounded history of recent outcomes and the
/// lease rate, kept in memory for the dashboard.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ActivityResponse {
    /// Newest first; at most 100.
    pub(crate) recent: Vec<RecentOutcome>,
    /// The length of one throughput slot, in milliseconds (10,000).
    pub(crate) slot_ms: u64,
    /// Leases handed out per slot, oldest first; the last slot is the current one.
    pub(crate) fired: Vec<u64>,
}

/// One outcome of a try.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RecentOutcome {
    pub(crate) key: String,
    /// `done`, `retried`, `rescheduled`, `dead` or `expired` (the lease ran out).
    #[schema(value_type = schema::ActivityOutcome)]
    pub(crate) outcome: &'static str,
    /// When the outcome was applied.
    #[schema(value_type = schema::Timestamp)]
    pub(crate) at: Timestamp,
    #[schema(value_type = schema::Timestamp)]
    pub(crate) due_at: Timestamp,
    /// Fire lag of this try: lease time − due time.
    pub(crate) lag_ms: Option<u64>,
    /// Lease → outcome.
    pub(crate) duration_ms: Option<u64>,
    /// This try's ordinal (0 when unknown: an expired lease).
    pub(crate) attempt: u32,
    pub(crate) error: Option<String>,
}

impl From<crate::metrics::QueueActivity> for ActivityResponse {
    fn from(a: crate::metrics::QueueActivity) -> ActivityResponse {
        ActivityResponse {
            recent: a
                .recent
                .into_iter()
                .map(|o| RecentOutcome {
                    key: o.key.to_string(),
                    outcome: o.outcome.as_str(),
                    at: o.at,
                    due_at: o.due_at,
                    lag_ms: o.lag_ms,
                    duration_ms: o.duration_ms,
                    attempt: o.attempt,
                    error: o.error,
                })
                .collect(),
            slot_ms: u64::try_from(crate::metrics::RATE_SLOT.as_millis()).unwrap_or(u64::MAX),
            fired: a.fired_per_slot,
        }
    }
}

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
    use crate::extract::parse_json;

    fn spec(json: &str) -> Result<TaskSpec, ApiError> {
        parse_json::<TaskBody>(json.as_bytes())?.into_spec()
    }

    fn field_of(r: Result<impl std::fmt::Debug, ApiError>) -> Option<String> {
        r.unwrap_err().detail().field
    }

    #[test]
    fn task_bodies_validate_with_field_names() {
        assert_eq!(spec("{}").unwrap().when, When::Now);
        assert_eq!(spec(r#"{"delay": "30m"}"#).unwrap().when, When::After(Duration::from_secs(1800)));
        assert_eq!(field_of(spec(r#"{"delay": "30m", "due_at": 5}"#)).as_deref(), Some("due_at"));
        assert_eq!(field_of(spec(r#"{"repeat": {"every": "0ms"}}"#)).as_deref(), Some("repeat.every"));
        assert_eq!(field_of(spec(r#"{"repeat": {"every": "x"}}"#)).as_deref(), Some("repeat.every"));
        assert_eq!(
            field_of(spec(r#"{"repeat": {"cron": "0 9 * * *", "tz": "Mars/X"}}"#)).as_deref(),
            Some("repeat.tz")
        );
        assert_eq!(field_of(spec(r#"{"repeat": {}}"#)).as_deref(), Some("repeat"));
        assert_eq!(field_of(spec(r#"{"tags": ["ok", ""]}"#)).as_deref(), Some("tags[1]"));
        assert_eq!(field_of(spec(r#"{"if_exists": "never"}"#)).as_deref(), Some("if_exists"));
        assert_eq!(
            field_of(spec(r#"{"backoff": {"initial": "1s", "factor": 0.5, "max": "1h"}}"#)).as_deref(),
            Some("backoff.factor")
        );
        assert_eq!(field_of(spec(r#"{"max_attempts": -1}"#)).as_deref(), Some("max_attempts"));
    }

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
