//! The bodies of the task routes (API.md "Scheduling" and "Dead tasks"): scheduling one or a
//! batch, listing, cancelling, and retrying dead tasks; with the checks that build a
//! core `TaskSpec`, `Repeat` or `DeadSelection` from them.

use std::time::Duration;

use punctual_core::MAX_LIST_LIMIT;
use punctual_core::calendar::CalendarName;
use punctual_core::history::{AckOutcome, HistoryEvent};
use punctual_core::policy::{Misfire, Overlap, Timing};
use punctual_core::store::{Completed, ScheduleOutcome, Scheduled};
use punctual_core::time::format_duration;
use punctual_core::{
    Backoff, CronSyntax, DeadSelection, Group, IfExists, Priority, QueueName, Repeat, Tag, Target, Task, TaskKey,
    TaskSpec, TaskState, Timestamp, Unique,
};
use serde::de::{self, Deserializer, IntoDeserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::schema;
use crate::error::{ApiError, ErrorDetail};
use crate::extract::{ApiCount, ApiDuration, ApiTime};

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
    /// 0 (default) to 9: among the queue's due tasks, the higher are handed out first.
    #[serde(default)]
    pub(crate) priority: Option<ApiCount>,
    /// The task's group (the rules of a key, up to 256 bytes): the queue's
    /// `group_concurrency` and turns apply; null: none.
    #[serde(default)]
    pub(crate) group: Option<String>,
    /// `replace` (default), `keep` or `error`.
    #[serde(default)]
    pub(crate) if_exists: IfExists,
    /// Where the server delivers the task (API.md "HTTP targets"); null: none.
    #[serde(default)]
    pub(crate) target: Option<Value>,
    /// `{"max_wait": D}`: a burst of schedules of the key fires once, no later than `D`
    /// after the burst's first.
    #[serde(default)]
    pub(crate) debounce: Option<DebounceBody>,
    /// `"1h"` or `{"window": "1h", "dead": true}`: a schedule of the key within the
    /// window after the task completed (or died, with `dead`) is kept, creating nothing.
    #[serde(default)]
    pub(crate) unique_for: Option<UniqueBody>,
    /// A working-time calendar: `delay` counts its working time (whole days: working
    /// days), `due_at` with `align` moves to its next opening; neither: its next
    /// opening; a repeat runs in its working time. Resolved by the engine.
    #[serde(default)]
    pub(crate) calendar: Option<String>,
    /// `"next_open"`: with `calendar` and `due_at`, a time outside working hours moves
    /// to the next opening.
    #[serde(default)]
    pub(crate) align: Option<Align>,
    /// `fire_once` (default), `fire_all` or `skip`: what becomes of occurrences missed
    /// while no node ran or the queue was paused.
    #[serde(default)]
    pub(crate) misfire: Option<Misfire>,
    /// Under `skip`: a first try leased later than this past its due time does not
    /// fire (default 1m).
    #[serde(default)]
    pub(crate) misfire_after: Option<ApiDuration>,
    /// Under `fire_all`: at most this many missed occurrences fire (default 10, up to
    /// 1000).
    #[serde(default)]
    pub(crate) catch_up_max: Option<ApiCount>,
    /// `skip` (default), `queue` or `allow`: what becomes of occurrences of a repeat
    /// that fall due while its firing is leased.
    #[serde(default)]
    pub(crate) overlap: Option<Overlap>,
    /// Each due time moves later by a uniform draw in `[0, jitter)` (at most 12h).
    #[serde(default)]
    pub(crate) jitter: Option<ApiDuration>,
}

/// `align`: how a `due_at` meets a calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Align {
    /// A time outside working hours moves to the next opening.
    NextOpen,
}

/// A dedupe window: a duration (`"1h"`, or ms), or `{"window": D, "dead": bool}`.
#[derive(Debug)]
pub(crate) struct UniqueBody(Unique);

/// The object form of [`UniqueBody`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UniqueObject {
    window: ApiDuration,
    #[serde(default)]
    dead: bool,
}

impl<'de> Deserialize<'de> for UniqueBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UniqueBody, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UniqueBody;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration (\"1h\", or integer milliseconds) or {\"window\": a duration, \"dead\": true}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UniqueBody, E> {
                window(ApiDuration::deserialize(v.into_deserializer())?)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<UniqueBody, E> {
                window(ApiDuration::deserialize(v.into_deserializer())?)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<UniqueBody, E> {
                window(ApiDuration::deserialize(v.into_deserializer())?)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<UniqueBody, E> {
                window(ApiDuration::deserialize(v.into_deserializer())?)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<UniqueBody, A::Error> {
                let UniqueObject { window, dead } =
                    UniqueObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let unique = Unique::new(window.0);
                Ok(UniqueBody(if dead { unique.counting_dead() } else { unique }))
            }
        }
        /// A window held after done only.
        fn window<E>(duration: ApiDuration) -> Result<UniqueBody, E> {
            Ok(UniqueBody(Unique::new(duration.0)))
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DebounceBody {
    max_wait: ApiDuration,
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

/// `{"every": "24h", "times": 3, "until": …}` or `{"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}`
/// (`"cron_syntax": "spring"` or `"quartz"` for the Java teams' six or seven fields).
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
    /// The syntax of `cron`: `vixie` (default, also when null), `spring` or `quartz`.
    #[serde(default)]
    cron_syntax: Option<CronSyntax>,
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
                if self.cron_syntax.is_some() {
                    return Err(ApiError::invalid("repeat.cron_syntax", "cron_syntax applies to cron only"));
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
            (None, Some(cron)) => Repeat::cron_with_syntax(
                &cron,
                self.tz.as_deref().unwrap_or("UTC"),
                self.cron_syntax.unwrap_or_default(),
            )?,
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
    /// The task's timing policies as given.
    fn timing(&self) -> Result<Timing, ApiError> {
        let mut timing = Timing::default();
        timing.calendar = self.calendar.as_deref().map(CalendarName::new).transpose()?;
        timing.misfire = self.misfire.unwrap_or_default();
        timing.misfire_after = self.misfire_after.map(|d| d.0);
        timing.catch_up_max = self.catch_up_max.map(|ApiCount(n)| n);
        timing.overlap = self.overlap.unwrap_or_default();
        timing.jitter = self.jitter.map(|d| d.0);
        Ok(timing)
    }

    /// Validates into a spec (business time is resolved by the engine). Field names
    /// are relative to the task object.
    pub(crate) fn into_spec(self) -> Result<TaskSpec, ApiError> {
        let (delay, due_at) = (self.delay.map(|d| d.0), self.due_at.map(|t| t.0));
        let mut spec = match (delay, due_at) {
            (Some(_), Some(_)) => return Err(ApiError::invalid("due_at", "give delay or due_at, not both")),
            (Some(delay), None) => TaskSpec::after(delay),
            (None, Some(at)) => TaskSpec::at(at),
            (None, None) => TaskSpec::now(),
        };
        spec = spec.timing(self.timing()?);
        if let Some(Align::NextOpen) = self.align {
            spec = spec.align_next_open();
        }
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
        if let Some(ApiCount(level)) = self.priority {
            spec = spec.priority(Priority::new(level)?.get());
        }
        if let Some(group) = self.group {
            Group::new(group.as_str())?;
            spec = spec.group(group);
        }
        spec = spec.if_exists(self.if_exists);
        if let Some(target) = self.target.filter(|t| !t.is_null()) {
            spec = spec.target(Target::from_json(&target)?);
        }
        if let Some(DebounceBody { max_wait }) = self.debounce {
            spec = spec.debounce(max_wait.0);
        }
        if let Some(UniqueBody(unique)) = self.unique_for {
            spec = spec.unique_for(unique);
        }
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

/// The answer to a PUT (documented as `schema::ScheduleResponse`): `{"outcome", "task"}`,
/// or `{"outcome": "kept", "completed"}` when a dedupe window kept it and no task is.
#[derive(Debug, Serialize)]
pub(crate) struct ScheduleResponse {
    pub(crate) outcome: ScheduleOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) completed: Option<CompletedBody>,
}

impl From<Scheduled> for ScheduleResponse {
    fn from(scheduled: Scheduled) -> ScheduleResponse {
        let completed = scheduled.completed.map(CompletedBody::from);
        ScheduleResponse { outcome: scheduled.outcome, task: scheduled.task, completed }
    }
}

/// The completion that kept a schedule: the task that completed under the key within
/// its dedupe window (documented as `schema::Completed`).
#[derive(Debug, Serialize)]
pub(crate) struct CompletedBody {
    queue: QueueName,
    key: TaskKey,
    id: u64,
    /// Always `done`.
    state: &'static str,
    completed_at: Timestamp,
    attempts: u32,
    occurrence: u32,
    unique_until: Timestamp,
}

impl From<Completed> for CompletedBody {
    fn from(done: Completed) -> CompletedBody {
        CompletedBody {
            queue: done.queue,
            key: done.key,
            id: done.id,
            state: "done",
            completed_at: done.completed_at,
            attempts: done.attempts,
            occurrence: done.occurrence,
            unique_until: done.unique_until,
        }
    }
}

/// One item of a batch's answer: `{"key", "outcome"}` (with `completed` when a dedupe
/// window kept it) or `{"key", "error"}`.
#[derive(Debug, Serialize)]
pub(crate) struct BatchResult {
    /// The item's key; null when it had none or it was not a string.
    pub(crate) key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) outcome: Option<ScheduleOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) completed: Option<CompletedBody>,
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
                super::check_batch_size("keys", keys.len(), max_keys)?;
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

#[cfg(test)]
mod tests {
    use punctual_core::When;

    use super::*;
    use crate::bodies::testing::field_of;
    use crate::extract::parse_json;

    fn spec(json: &str) -> Result<TaskSpec, ApiError> {
        parse_json::<TaskBody>(json.as_bytes())?.into_spec()
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
        for bad in [r#"{"priority": 10}"#, r#"{"priority": -1}"#, r#"{"priority": 1.5}"#, r#"{"priority": "high"}"#] {
            assert_eq!(field_of(spec(bad)).as_deref(), Some("priority"), "{bad}");
        }
        assert_eq!(spec(r#"{"priority": 9}"#).map(|spec| spec.priority).ok(), Some(9));
    }

    #[test]
    fn a_dedupe_window_is_a_duration_or_an_object_with_dead() {
        let hour = Duration::from_secs(3600);
        let window = |json: &str| spec(json).map(|spec| spec.unique_for);
        assert_eq!(window(r#"{"unique_for": "1h"}"#).ok(), Some(Some(Unique::new(hour))));
        assert_eq!(window(r#"{"unique_for": 3600000}"#).ok(), Some(Some(Unique::new(hour))));
        assert_eq!(window(r#"{"unique_for": null}"#).ok(), Some(None));
        let dead = window(r#"{"unique_for": {"window": "1h", "dead": true}}"#);
        assert_eq!(dead.ok(), Some(Some(Unique::new(hour).counting_dead())));
        assert_eq!(window(r#"{"unique_for": {"window": "1h"}}"#).ok(), Some(Some(Unique::new(hour))));
        for bad in [r#"{"unique_for": "soon"}"#, r#"{"unique_for": -5}"#, r#"{"unique_for": true}"#] {
            assert_eq!(field_of(spec(bad)).as_deref(), Some("unique_for"), "{bad}");
        }
        let bad_window = spec(r#"{"unique_for": {"window": "soon"}}"#);
        assert_eq!(field_of(bad_window).as_deref(), Some("unique_for.window"));
        for bad in [r#"{"unique_for": {"dead": true}}"#, r#"{"unique_for": {"window": "1h", "x": 1}}"#] {
            assert!(field_of(spec(bad)).is_some_and(|field| field.starts_with("unique_for")), "{bad}");
        }
    }
}

/// `GET /v1/queues/{queue}/tasks/{key}/history`: what happened to the key's tasks.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct HistoryResponse {
    pub(crate) queue: String,
    pub(crate) key: String,
    /// How long the queue keeps a history after its latest event, ms.
    pub(crate) retention_ms: u64,
    /// Oldest first; at most the latest 100.
    pub(crate) events: Vec<HistoryItem>,
}

/// One event of a task's history. Fields that do not apply to the event are left out.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct HistoryItem {
    #[schema(value_type = schema::Timestamp)]
    pub(crate) at: Timestamp,
    /// `created`, `replaced`, `cancelled`, `purged`, `leased`, `extended`, `released`,
    /// `acked`, `expired`, `retried` (a dead task put back by hand), `deleted` (a dead
    /// task deleted by hand or by the dead-task retention) or `imported`.
    #[schema(value_type = schema::HistoryEventKind)]
    pub(crate) event: &'static str,
    /// The name of the access token that made the change (absent for the server's own
    /// work, such as an expiry, and when the server runs without tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) by: Option<String>,
    /// The task's state after the event: `scheduled`, `leased`, `dead` or `gone`.
    #[schema(value_type = schema::HistoryState)]
    pub(crate) state: &'static str,
    /// A lease: the name of the node that handed it out (`host:port (pid N)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
    /// A lease: its delivery id, as the lease answer and each push delivery carry it
    /// (the same for every try of one occurrence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) delivery_id: Option<String>,
    /// The try this event belongs to (leased, acked, expired).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) attempt: Option<u32>,
    /// The lease's number (each lease of the task raises it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lease: Option<u64>,
    /// When the task is due after the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<schema::Timestamp>)]
    pub(crate) due_at: Option<Timestamp>,
    /// When the lease expires (leased, extended).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<schema::Timestamp>)]
    pub(crate) lease_expires_at: Option<Timestamp>,
    /// An ack's outcome: `done`, `retry`, `reschedule` or `dead`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) outcome: Option<&'static str>,
    /// The handler's error, or why the lease expired; at most 200 bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// A replace: the fields that changed (`due_at`, `payload`, `tags`, `priority`,
    /// `group`, `target`, `policies`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) changed: Vec<String>,
    /// A cancel by tag: the tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tag: Option<String>,
    /// A push delivery's ack: how long the delivery took, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) took_ms: Option<u64>,
    /// A push delivery's ack: the HTTP status the far end answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<u16>,
    /// A push delivery's ack: the first bytes (at most 200) of the answer's body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<String>,
}

impl From<HistoryEvent> for HistoryItem {
    fn from(event: HistoryEvent) -> HistoryItem {
        let report = event.report.unwrap_or_default();
        HistoryItem {
            at: event.at,
            event: event.kind.as_str(),
            by: event.by,
            state: event.state.map_or("gone", TaskState::as_str),
            node: event.node,
            delivery_id: event.delivery_id,
            attempt: event.attempt,
            lease: event.lease,
            due_at: event.due_at,
            lease_expires_at: event.until,
            outcome: event.outcome.map(AckOutcome::as_str),
            error: event.error,
            changed: event.changed,
            tag: event.tag,
            took_ms: report.took_ms,
            status: report.status,
            answer: report.answer,
        }
    }
}
