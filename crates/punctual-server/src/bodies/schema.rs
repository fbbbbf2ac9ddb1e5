//! Types that exist only to describe the API in `/openapi.json`: values whose Rust
//! types live in the core (which knows nothing of OpenAPI), values that accept several
//! JSON forms, and the request bodies, whose rules need JSON Schema keywords utoipa's
//! derive cannot write (`not`, `if`/`then`, `const`).
//!
//! Each is written as the JSON Schema it is, so that what the document says can be
//! read beside what the bodies accept: a request body's schema lists exactly the fields its
//! raw struct takes (`additionalProperties: false`, as `deny_unknown_fields`), each with
//! the bounds the server checks, and its `examples` are requests the server accepts.
//! Bounds of values written as text (a duration's, an instant's) are patterns (see
//! `patterns`), which never take more than the server does. What JSON Schema cannot say
//! (a key's length in bytes, `backoff.max` at least `backoff.initial`, a cron
//! expression's fields, a cursor the store issued) is said in the description.
//! `tests/http/openapi_contract.rs` holds the document to the server: every example is
//! accepted, every violation of a schema refused, every answer matches its schema.
//!
//! Request and response forms differ where the server is lenient in what it takes:
//! a [`Time`] in a request is RFC 3339 or epoch milliseconds, a [`Timestamp`] in an
//! answer is always RFC 3339 UTC with three fractional digits.

use std::borrow::Cow;

use punctual_core::{
    Group as CoreGroup, Limits, MAX_LEASE, MAX_LEASE_BATCH, MIN_LEASE, Priority as CorePriority,
    QueueName as CoreQueueName, Tag, TaskKey as CoreTaskKey, Timestamp as CoreTimestamp,
};
use serde_json::{Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType};
use utoipa::{PartialSchema, ToSchema};

use super::{MAX_ERROR_BYTES, patterns};
use crate::extract::MIN_EPOCH_MS;

/// A duration in whole milliseconds, as the schema's bounds are written.
fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A schema given as JSON. (utoipa's schema types have no `not`, `if` or `const`; an
/// untyped object whose members are all "extensions" serializes to exactly `value`.)
fn json_schema(value: Value) -> RefOr<Schema> {
    let Value::Object(members) = value else { unreachable!("every schema here is a JSON object") };
    let members: Extensions = members.into_iter().collect();
    ObjectBuilder::new().schema_type(SchemaType::AnyValue).extensions(Some(members)).into()
}

/// Declares doc-only types, each with its component name and JSON Schema.
macro_rules! schemas {
    ($($(#[$doc:meta])* $name:ident => $schema:expr;)*) => {$(
        $(#[$doc])*
        pub(crate) struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                json_schema($schema)
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )*};
}

mod calendars;

pub(crate) use calendars::{Calendar, CalendarBody, CalendarList, CalendarName};

/// `#/components/schemas/<name>`.
fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `schema`, or null (serde reads a null optional field as absent).
pub(crate) fn nullable(schema: Value) -> Value {
    json!({"anyOf": [{"type": "null"}, schema]})
}

/// The field is given and not null.
pub(crate) fn present(field: &str) -> Value {
    json!({"required": [field], "properties": {field: {"not": {"type": "null"}}}})
}

/// A duration from `min` to `max` milliseconds (no more than a `u64` holds): integer
/// milliseconds, or text of the forms the pattern lists (see [`patterns::duration`]).
pub(crate) fn duration_within(min: u64, max: Option<u64>, description: &str) -> Value {
    let mut integer = json!({"type": "integer", "minimum": min, "description": "milliseconds"});
    if let Some(max) = max {
        integer["maximum"] = json!(max);
    }
    let text = json!({"type": "string", "pattern": patterns::duration(min, max.unwrap_or(u64::MAX))});
    json!({"description": format!("{description} {DURATION_FORMS}"), "oneOf": [text, integer]})
}

/// How the text of a duration is written, for the description of each.
const DURATION_FORMS: &str = "Text: <number><unit> parts from the largest unit down (ms, s, m, h, d: \"1500ms\", \
    \"30s\", \"1h 30m\", \"7d\"; each part after the first below its unit, \"1h 90m\" is written \"2h 30m\"), \
    ISO 8601 alike (\"PT30M\", \"P1DT2H\", \"PT1.5S\"; weeks and days of 24 hours, no years or months), or \
    whole milliseconds (\"1500\").";

/// A whole number from `min` to the largest a 32-bit count holds.
pub(crate) fn count(min: u32, max: u32, description: &str) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max, "description": description})
}

/// Text of 1 to `max_bytes` bytes of UTF-8 without control characters. JSON Schema
/// counts characters, not bytes: `maxLength` is the bound for ASCII text.
fn text(max_bytes: usize, what: &str, example: &str) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": max_bytes,
        "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        "description": format!("{what}: 1 to {max_bytes} bytes of UTF-8, no control characters."),
        "examples": [example],
    })
}

/// A rate limit, as text.
pub(crate) fn rate() -> Value {
    json!({"type": "string", "pattern": patterns::rate(), "examples": ["20/1m"],
        "description": "At most COUNT deliveries per DURATION (a bare unit is one of it: \"5/s\")."})
}

/// `group_rate` in a settings body.
fn group_rate() -> Value {
    json!({"type": "string", "pattern": patterns::rate(), "examples": ["10/1m"],
        "description": "At most COUNT leases of each group's tasks in any window of DURATION, across every node \
            (a bare unit is one of it: \"1/s\"). Each lease takes a slot, also one released or expired later."})
}

/// A settings' `key` and the same key of its action, not both (a key given twice).
fn not_in_both(key: &str) -> Value {
    let in_action =
        json!({"required": ["action"], "properties": {"action": {"type": "object", "allOf": [present(key)]}}});
    json!({"not": {"allOf": [present(key), in_action]}})
}

/// An ack's body; an item of a batch of acks adds its `lease_id`.
fn ack(with_lease_id: bool) -> Value {
    let only = |outcome: &str, refused: &[&str]| {
        json!({
            "if": {"required": ["outcome"], "properties": {"outcome": {"const": outcome}}},
            "then": {"not": {"anyOf": refused.iter().map(|f| present(f)).collect::<Vec<_>>()}},
        })
    };
    let mut schema = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["outcome"],
        "properties": {
            "outcome": {"enum": ["done", "retry", "reschedule", "fail"]},
            "delay": nullable(json!({"allOf": [r("Duration")],
                "description": "retry (default: the task's backoff) or reschedule: how long from now."})),
            "due_at": nullable(json!({"allOf": [r("Time")], "description": "reschedule only, instead of delay."})),
            "error": nullable(json!({"type": "string", "description": format!(
                "retry and fail: what went wrong, kept as last_error (cut to {MAX_ERROR_BYTES} bytes).")})),
        },
        "allOf": [
            only("done", &["delay", "due_at", "error"]),
            only("retry", &["due_at"]),
            only("reschedule", &["error"]),
            {"if": {"required": ["outcome"], "properties": {"outcome": {"const": "reschedule"}}},
             "then": {"not": {"allOf": [present("delay"), present("due_at")]}}},
            only("fail", &["delay", "due_at"]),
        ],
    });
    let examples = [
        json!({"outcome": "done"}),
        json!({"outcome": "retry", "delay": "5m", "error": "smtp timeout"}),
        json!({"outcome": "retry"}),
        json!({"outcome": "reschedule", "delay": "24h"}),
        json!({"outcome": "reschedule", "due_at": "2030-01-01T09:00:00+08:00"}),
        json!({"outcome": "fail", "error": "order not found"}),
    ];
    if with_lease_id {
        schema["required"] = json!(["lease_id", "outcome"]);
        schema["properties"]["lease_id"] = json!({"type": "string", "description": "As given by lease."});
        schema["description"] = json!(
            "One ack of a batch: an ack body and its lease_id. Each item is applied \
            or refused on its own: a malformed one gets status 400 in its result."
        );
    } else {
        schema["description"] = json!("How a leased try ended.");
        schema["examples"] = json!(examples);
    }
    schema
}

/// A batch request: an array of `item`s under `items`. Any value is taken as an item
/// (API.md): one that is not an `item` is refused in its own result, as an `item` the
/// server refuses is, while the others are applied.
fn batch_of(items: &str, item: &str, description: &str, example: Value) -> Value {
    let other = format!(
        "Any other value is taken too, and refused in its own result (an error naming {items}[i]); \
        the other items are applied."
    );
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": [items],
        "properties": {items: {"type": "array", "items": {"anyOf": [r(item), {"description": other}]},
            "maxItems": Limits::default().max_batch, "description": description}},
        "examples": [example, {items: []}],
    })
}

/// RFC 3339 text of an instant the server keeps: up to 9999-12-28 (whatever the
/// offset, not past its latest, 9999-12-30T22:00:00.999Z), at most nine decimals.
const TIME_TEXT: &str = "^(?:(?:[0-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2}|\
    9999-(?:0[1-9]|1[01])-[0-9]{2}|9999-12-(?:[01][0-9]|2[0-8]))[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?\
    (?:[Zz]|[+-][0-9]{2}:[0-9]{2})$";

schemas! {
    /// A queue name.
    QueueName => json!({
        "type": "string",
        "minLength": 1,
        "maxLength": CoreQueueName::MAX_LEN,
        "pattern": format!("^[A-Za-z0-9._:-]{{1,{}}}$", CoreQueueName::MAX_LEN),
        "description": "A queue name: 1 to 128 of A-Z a-z 0-9 . _ : -",
        "examples": ["order.cancel"],
    });

    /// A task's key.
    TaskKey => text(CoreTaskKey::MAX_BYTES, "A task's key, unique in its queue; in a path, \
        percent-encode '/' as %2F", "order-1234");

    /// A tag.
    TagName => text(Tag::MAX_BYTES, "A tag", "pi-9");

    /// A group's name.
    GroupName => {
        let mut group = text(CoreGroup::MAX_BYTES, "A group (a customer, a tenant, a workflow instance)", "customer-42");
        group["description"] = json!("A group of tasks in a queue: at most the queue's group_concurrency of them \
            are leased at once, and due tasks are handed out round robin between groups (the tasks without a group \
            take turns as one more), so one group's backlog never starves another. On a Redis queue split into \
            shards, a task with a group must carry the group as its key's hash tag ({customer-42}order-1), so the \
            group's tasks share one shard; a key without it is refused with a 400 on group.");
        group
    };

    /// A debounced schedule.
    DebounceBody => json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["max_wait"],
        "properties": {"max_wait": duration_within(1, None, "The longest a burst waits: its task is due no \
            later than this after the burst's first schedule.")},
        "description": "Debounces the schedule: over a scheduled task that a debounced schedule wrote and no lease \
            took since, the task is replaced (payload, due time…) but never due later than the burst's first \
            schedule + max_wait; otherwise the schedule starts a burst. Goes with if_exists replace only.",
        "examples": [{"max_wait": "10m"}],
    });

    /// A dedupe window in a request.
    UniqueFor => json!({
        "description": "A dedupe window: within it after the key's task completed (done; with dead, also after it \
            went dead), a PUT of the key creates nothing and answers 200 with outcome kept, whatever its own \
            if_exists and unique_for say: after done, with the completion (no task); while the dead task is in its \
            window, with that task, untouched. A duration (held after done only), or an object.",
        "oneOf": [
            duration_within(1, None, "The window."),
            {"type": "object", "additionalProperties": false, "required": ["window"],
             "properties": {
                "window": duration_within(1, None, "The window."),
                "dead": {"type": "boolean", "default": false,
                    "description": "Whether a task that went dead holds its key too, from when it died."},
             }},
        ],
        "examples": ["1h", {"window": "1h", "dead": true}],
    });

    /// The completion that kept a schedule.
    Completed => json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["queue", "key", "id", "state", "completed_at", "attempts", "occurrence", "unique_until"],
        "description": "The task that completed under the key within its dedupe window.",
        "properties": {
            "queue": r("QueueName"),
            "key": r("TaskKey"),
            "id": {"type": "integer", "minimum": 0, "description": "The task's id (its delivery ids hold it in hex)."},
            "state": {"const": "done"},
            "completed_at": r("Timestamp"),
            "attempts": {"type": "integer", "minimum": 0,
                "description": "Tries of its last occurrence that failed or whose lease expired."},
            "occurrence": {"type": "integer", "minimum": 1, "description": "The occurrence that completed."},
            "unique_until": {"allOf": [r("Timestamp")],
                "description": "completed_at + the window: until then a PUT of the key is kept."},
        },
    });

    /// The answer to a PUT of a task.
    ScheduleResponse => json!({
        "description": "What the PUT did: the task created, replaced or kept; or, kept by the dedupe window of a \
            task of the key that completed, that completion (no task is under the key).",
        "oneOf": [
            {"type": "object", "required": ["outcome", "task"],
             "properties": {"outcome": r("ScheduleOutcome"), "task": r("Task")}},
            {"type": "object", "required": ["outcome", "completed"],
             "properties": {"outcome": {"const": "kept"}, "completed": r("Completed")}},
        ],
    });

    /// A task's priority.
    Priority => count(
        u32::from(CorePriority::LOWEST.get()),
        u32::from(CorePriority::HIGHEST.get()),
        "0 (the default) to 9: among the queue's tasks already due, the higher are handed out first, each \
        priority in due order. A priority never makes a task due before its time.",
    );

    /// A duration in a request or an answer.
    Duration => {
        let mut duration = duration_within(0, None, "A duration.");
        duration["oneOf"][0]["examples"] = json!(["30s", "1h 30m", "PT30M"]);
        duration
    };

    /// An instant in a request.
    Time => json!({
        "description": "An instant: RFC 3339 with any offset, or whole epoch milliseconds (a number below \
            100,000,000,000 can only be seconds and is refused), also as text. A time in the past means now, \
            one before 1970 too. The latest is 9999-12-30T22:00:00.999Z; RFC 3339 text is taken up to \
            9999-12-28, with at most nine decimals.",
        "oneOf": [
            {"type": "string", "format": "date-time", "pattern": TIME_TEXT, "examples": ["2026-11-30T09:00:00+08:00"]},
            {"type": "integer", "minimum": MIN_EPOCH_MS, "maximum": CoreTimestamp::MAX.as_millis(),
             "description": "epoch milliseconds"},
            {"type": "string", "description": "epoch milliseconds as text", "pattern": format!(
                "^{}$", patterns::whole_number(MIN_EPOCH_MS, u64::try_from(CoreTimestamp::MAX.as_millis())
                    .expect("the latest instant is after the epoch"), true))},
        ],
    });

    /// An instant in an answer.
    Timestamp => json!({
        "type": "string",
        "format": "date-time",
        "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
        "description": "RFC 3339 UTC with exactly three fractional digits.",
        "examples": ["2026-11-30T12:00:00.000Z"],
    });

    /// A task's state, in an answer or a list's filter.
    TaskState => json!({"enum": ["scheduled", "leased", "dead"]});

    /// A listing's cursor.
    Cursor => json!({
        "type": "string",
        "description": "Opaque: the next_cursor of the previous page, as given. A cursor this server's store did \
            not issue is refused (400, field cursor): start again without one.",
    });

    /// The tasks a purge cancels.
    PurgeState => json!({"enum": ["scheduled", "dead", "all"], "default": "all"});

    /// How a try ended, in the activity of a queue.
    ActivityOutcome => json!({"enum": ["done", "retried", "rescheduled", "dead", "expired"]});

    /// What an audit entry tells was done.
    AuditAction => json!({"enum": [
        "queue.settings.set", "queue.settings.clear", "queue.pause", "queue.resume", "queue.purge",
        "calendar.set", "calendar.remove", "access.reload"
    ]});

    /// What happened to a task, in its history.
    HistoryEventKind => json!({"enum": [
        "created", "replaced", "cancelled", "purged", "leased", "extended", "released", "acked", "expired",
        "retried", "deleted", "imported"
    ]});

    /// A task's state after an event of its history.
    HistoryState => json!({"enum": ["scheduled", "leased", "dead", "gone"]});

    /// What scheduling did.
    ScheduleOutcome => json!({"enum": ["created", "replaced", "kept"]});

    /// `PUT /v1/queues/{queue}/tasks/{key}`.
    TaskBody => json!({
        "type": "object",
        "additionalProperties": false,
        "description": "A task to create or update. Exactly one of delay and due_at (neither: due now). \
            Policies not given take the queue's defaults.",
        "properties": {
            "key": nullable(json!({"allOf": [r("TaskKey")],
                "description": "Required in a batch item; in a PUT the path gives it, and if given it must match."})),
            "delay": nullable(json!({"allOf": [r("Duration")], "description": "Due this long from now."})),
            "due_at": nullable(json!({"allOf": [r("Time")], "description": "Due at this instant."})),
            "payload": {"description": "Any JSON, at most 65,536 bytes serialized (by default)."},
            "max_attempts": nullable(count(1, u32::MAX, "Tries before the task is dead.")),
            "backoff": nullable(r("BackoffBody")),
            "repeat": nullable(r("RepeatBody")),
            "tags": {"type": "array", "items": r("TagName"), "maxItems": Tag::MAX_PER_TASK},
            "priority": nullable(json!({"allOf": [r("Priority")], "default": 0})),
            "group": nullable(r("GroupName")),
            "if_exists": {"enum": ["replace", "keep", "error"], "default": "replace",
                "description": "When the task exists: replace it, keep it, or refuse (409)."},
            "target": nullable(r("TargetBody")),
            "debounce": nullable(r("DebounceBody")),
            "unique_for": nullable(r("UniqueFor")),
            "calendar": nullable(json!({"allOf": [r("CalendarName")], "description": "A working-time calendar \
                (GET /v1/calendars): delay counts its working time (a whole number of days, \"2d\" or \"48h\", \
                counts working days at the same working-time offset), due_at with align moves to its next \
                opening, neither is its next opening (a repeat's first occurrence in it). A repeat runs in its \
                working time: every counts working time (whole days: working days), cron keeps its times at \
                which the calendar is open. The answer's due_at is the instant resolved. 400 (field calendar) \
                for a calendar this node does not serve (a new one reaches every node within 1 s) or an answer \
                more than 100 years on."})),
            "align": nullable(json!({"enum": ["next_open"], "description": "With calendar and due_at: a time \
                outside working hours moves to the calendar's next opening."})),
            "misfire": nullable(json!({"enum": ["fire_once", "fire_all", "skip"], "default": "fire_once",
                "description": "What becomes of occurrences missed while no node ran or the queue was paused. \
                fire_once: one firing stands in for all of them (its delivery counts them in missed), then the \
                schedule goes on from now. fire_all: each fires, oldest first, at most catch_up_max (the older \
                ones beyond are dropped). skip: a first try leased later than misfire_after past its due time \
                does not fire: a repeat moves to its next occurrence after now, a one-off task ends."})),
            "misfire_after": nullable(duration_within(1, None, "Applies under misfire skip (kept with any): \
                later than this past its due time, a first try is a misfire (default 1m).")),
            "catch_up_max": nullable(json!({"type": "integer", "minimum": 1, "maximum": 1000,
                "description": "Applies under misfire fire_all (kept with any): at most this many \
                missed occurrences fire (default 10)."})),
            "overlap": nullable(json!({"enum": ["skip", "queue", "allow"], "default": "skip",
                "description": "A repeat's occurrences that fall due while its firing is leased. skip: dropped, \
                the next is the first after the firing ends. queue: the latest of them fires as soon as the \
                firing ends. allow: each occurrence fires as a task of its own, keyed <key>@<scheduled_for> \
                (RFC 3339), with the repeat's payload, tags and policies and its own retries, and the repeat \
                moves on at once, so occurrences run side by side (the key may then be at most 487 bytes)."})),
            "jitter": nullable(duration_within(1, Some(43_200_000), "Each due time (a one-off's, each \
                occurrence's) moves later by a uniform draw in [0, jitter), shorter than a repeat's every. \
                Added after business-time arithmetic; deliveries' scheduled_for is the time before it.")),
        },
        "not": {"allOf": [present("delay"), present("due_at")]},
        "allOf": [
            {"if": present("align"), "then": {"allOf": [present("calendar"), {"not": present("delay")}]}},
            {"if": {"allOf": [present("calendar"), present("due_at")]}, "then": present("align")},
        ],
        "examples": [
            {"delay": "30m", "payload": {"order_id": 1234}},
            {"delay": "30m", "payload": {"order_id": 1234},
             "target": {"url": "https://shop.example.com/hooks/cancel", "method": "POST",
                        "headers": {"X-Tenant": "acme"}, "timeout": "10s"}},
            {"due_at": "2026-11-30T09:00:00+08:00", "payload": {"order_id": 1234}, "repeat": {"every": "24h"},
             "tags": ["pi-9"], "max_attempts": 5, "if_exists": "keep", "priority": 5},
            {"delay": 1500, "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"},
             "repeat": {"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai", "times": 3,
                        "until": "9999-01-01T00:00:00Z"}},
            {"repeat": {"cron": "0 0 9 ? * MON-FRI", "tz": "Asia/Shanghai", "cron_syntax": "spring"}},
            {"repeat": {"cron": "0 0 18 L * ?", "tz": "Europe/Berlin", "cron_syntax": "quartz"}},
            {"due_at": 1_924_992_000_000_u64, "payload": null, "key": null},
            {"delay": "16h", "calendar": "office", "payload": {"step": "approve"}},
            {},
        ],
    });

    /// An HTTP target in a request.
    TargetBody => json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["url"],
        "description": "Where the server delivers the task when due, with the webhook protocol (API.md, \
            \"HTTP targets\"). Pull workers never lease a task with a target. A host that is an IP address \
            the egress policy refuses is 400 (field target.url); a name is checked at every connection.",
        "properties": {
            "url": {"type": "string", "maxLength": punctual_core::Target::MAX_URL_BYTES,
                    "description": "http:// or https://, without credentials."},
            "method": nullable(json!({"enum": ["POST", "PUT", "PATCH", "GET", "DELETE"], "default": "POST",
                       "description": "Any case is accepted. Every method carries the body."})),
            "headers": nullable(json!({"type": "object", "maxProperties": punctual_core::Target::MAX_HEADERS,
                        "additionalProperties": {"type": "string"},
                        "description": "At most 32; names and values at most 1 KiB together. Host, \
                            Content-Length, Transfer-Encoding, Connection and Punctual-* are refused."})),
            "timeout": nullable(duration_within(1000, Some(60_000), "1s to 60s; default 10s.")),
            "body": {"description": "Any JSON but null, sent instead of the standard delivery body; null or \
                absent: the standard body (as for every optional field, null is the same as absent)."},
        },
    });

    /// An HTTP target in an answer.
    Target => json!({
        "type": "object",
        "required": ["url", "method", "headers", "timeout"],
        "properties": {
            "url": {"type": "string"},
            "method": {"enum": ["POST", "PUT", "PATCH", "GET", "DELETE"]},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "timeout": r("Duration"),
            "body": {"description": "Present when the task sends its own body."},
        },
    });

    /// An item of `POST /v1/queues/{queue}/tasks`.
    BatchItem => json!({
        "description": "A task of a batch: a TaskBody with its key. Each item is stored or refused on its \
            own: an invalid one gets an error in its result.",
        "allOf": [r("TaskBody")],
        "required": ["key"],
        "properties": {"key": r("TaskKey")},
    });

    /// `POST /v1/queues/{queue}/tasks`.
    BatchBody => batch_of("tasks", "BatchItem", "The tasks, at most the server's batch limit.",
        json!({"tasks": [{"key": "order-1", "delay": "30m"}, {"key": "order-2", "due_at": 1_924_992_000_000_u64}]}));

    /// Exponential backoff in a request.
    BackoffBody => json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["initial", "factor", "max"],
        "description": "The wait before try n+1 is initial × factor^(n−1), at most max (at least initial).",
        "properties": {
            "initial": r("Duration"),
            "factor": {"type": "number", "minimum": 1},
            "max": r("Duration"),
        },
    });

    /// A repeat in a request.
    RepeatBody => json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Fire again: every (fixed rate) or cron (wall-clock times in tz), not both.",
        "properties": {
            "every": nullable(duration_within(1000, None, "The interval, at least 1s (a bare number is milliseconds).")),
            "cron": nullable(json!({"type": "string", "examples": ["0 9 * * MON-FRI", "0 0 9 ? * MON-FRI"],
                "description": "Vixie: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds \
                    first). Spring: 6 fields, seconds first, with ?, L, W and #. Quartz: 6 or 7 (the year last), \
                    Sunday = 1. See cron_syntax."})),
            "tz": nullable(json!({"type": "string", "examples": ["Asia/Shanghai"],
                "description": "The IANA zone of cron (default UTC)."})),
            "cron_syntax": nullable(r("CronSyntax")),
            "times": nullable(count(1, u32::MAX, "Occurrences in all.")),
            "until": nullable(json!({"allOf": [r("Time")], "description":
                "No occurrence after this instant; before the first one is refused."})),
        },
        "oneOf": [present("every"), present("cron")],
        "allOf": [
            {"if": present("tz"), "then": present("cron")},
            {"if": present("cron_syntax"), "then": present("cron")},
        ],
    });

    /// `POST /v1/queues/{queue}/lease`.
    LeaseBody => json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Every field is optional; an empty body takes the defaults.",
        "properties": {
            "max": nullable(count(1, MAX_LEASE_BATCH, "Tasks at most, default 1.")),
            "lease": nullable(duration_within(millis(MIN_LEASE), Some(millis(MAX_LEASE)), "1s to 12h, default 30s.")),
            "wait": nullable(duration_within(0, Some(60_000),
                "0 to 60s, default 0: how long to hold the request open for a task to fall due.")),
        },
        "examples": [{"max": 10, "lease": "30s", "wait": "1s"}, {}],
    });

    /// `POST /v1/leases/{lease_id}/ack`.
    AckBody => ack(false);

    /// An item of `POST /v1/acks`.
    AckItem => ack(true);

    /// `POST /v1/acks`.
    AcksBody => batch_of("acks", "AckItem", "The acks, at most the server's batch limit.",
        json!({"acks": [{"lease_id": "a-lease-id", "outcome": "done"},
                        {"lease_id": "another", "outcome": "retry", "delay": "5m"}]}));

    /// `POST /v1/leases/{lease_id}/extend`.
    ExtendBody => json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {"lease": nullable(duration_within(millis(MIN_LEASE), Some(millis(MAX_LEASE)),
            "The new length from now, 1s to 12h (default 30s)."))},
        "examples": [{"lease": "2m"}, {}],
    });

    /// `POST /v1/queues/{queue}/dead/retry`.
    DeadRetryBody => json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Which dead tasks to retry: {} every one, tag those carrying it, keys those among them \
            (at most the server's batch limit). Not both; neither may be null.",
        "properties": {
            "tag": r("TagName"),
            "keys": {"type": "array", "items": r("TaskKey"), "maxItems": Limits::default().max_batch},
        },
        "not": {"required": ["tag", "keys"]},
        "examples": [{}, {"tag": "pi-9"}, {"keys": ["order-1234", "order-1235"]}],
    });

    /// `PUT` and `PATCH /v1/queues/{queue}/settings`.
    SettingsBody => json!({
        "type": "object",
        "additionalProperties": false,
        "description": "A queue's settings, validated as the config file's [queues.\"name\"] table is (the same \
            messages; field is the JSON path, e.g. action.url). concurrency and rate may be given in action \
            instead, as in the file, not in both. action takes the keys of the file's action table, \
            except that a secret is given only by the name of an environment variable of the server \
            (secret_env, smtp.password_env, url_env for chat robots): a secret value is refused. queue, source, \
            paused, version and updated_at are shown by GET and ignored here, so a GET's answer can be sent back.",
        "properties": {
            "defaults": nullable(json!({
                "type": "object",
                "additionalProperties": false,
                "description": "Policies of the queue's tasks that set none.",
                "properties": {
                    "max_attempts": nullable(count(1, u32::MAX, "Tries before a task goes dead.")),
                    "backoff": nullable(r("BackoffBody")),
                    "repeat": nullable(r("RepeatBody")),
                },
            })),
            "action": nullable(r("ActionBody")),
            "concurrency": nullable(count(1, 10_000, "Push deliveries at once (no action: kept, unused).")),
            "rate": nullable(rate()),
            "shards": nullable(count(1, 1024, "Shards of the queue (Redis stores only).")),
            "targets": nullable(json!({"type": "boolean", "description": "Whether tasks may carry their own HTTP target."})),
            "group_concurrency": nullable(count(1, u32::MAX, "At most this many leased tasks per group, across \
                every node (1: each group's tasks one at a time, in due order).")),
            "group_rate": nullable(group_rate()),
            "queue": {}, "source": {}, "paused": {}, "version": {}, "updated_at": {},
        },
        "allOf": [not_in_both("concurrency"), not_in_both("rate")],
        "examples": [
            {},
            {"defaults": {"max_attempts": 10, "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"}},
             "action": {"kind": "webhook", "url": "https://shop.example.com/hooks/cancel", "timeout": "10s"},
             "concurrency": 16, "rate": "20/1m"},
            {"group_concurrency": 1},
            {"group_concurrency": 2, "group_rate": "10/1m"},
            {"defaults": {"repeat": {"every": "24h", "times": 3}},
             "action": {"kind": "nats", "url": "nats://nats.example.com:4222", "subject": "orders"}},
        ],
    });

    /// The settings of a queue, in an answer.
    QueueSettings => json!({
        "type": "object",
        "required": ["queue", "source", "defaults", "action", "concurrency", "rate", "shards", "targets",
            "group_concurrency", "group_rate", "paused", "version", "updated_at"],
        "properties": {
            "queue": r("QueueName"),
            "source": {"enum": ["api", "config"], "description": "config: set in the server's config file."},
            "defaults": {
                "type": "object",
                "required": ["max_attempts", "backoff", "repeat"],
                "properties": {"max_attempts": {"type": "integer", "minimum": 1}, "backoff": r("Backoff"),
                    "repeat": nullable(r("Repeat"))},
            },
            "action": {"type": ["object", "null"], "description": "As given, with no secret in it."},
            "concurrency": {"type": "integer", "minimum": 1},
            "rate": {"type": ["string", "null"]},
            "shards": {"type": "integer", "minimum": 1},
            "targets": {"type": "boolean"},
            "group_concurrency": {"type": ["integer", "null"], "minimum": 1,
                "description": "At most this many leased tasks per group; null: no limit."},
            "group_rate": {"type": ["string", "null"], "pattern": patterns::rate(),
                "description": "At most COUNT leases of each group's tasks per DURATION; null: no rate."},
            "paused": {"type": "boolean"},
            "version": {"type": "integer", "minimum": 0, "description": "For If-Match (0: never changed)."},
            "updated_at": r("Timestamp"),
        },
    });

    /// One result of a batch of tasks.
    BatchResult => json!({
        "description": "The item's key (null when it had none or it was not a string) and its outcome, \
            or the error that refused it.",
        "oneOf": [
            {"type": "object", "additionalProperties": false, "required": ["key", "outcome"],
             "properties": {"key": {"type": ["string", "null"]}, "outcome": r("ScheduleOutcome")}},
            {"type": "object", "additionalProperties": false, "required": ["key", "outcome", "completed"],
             "description": "Kept by a dedupe window: the completion that kept it.",
             "properties": {"key": {"type": ["string", "null"]}, "outcome": {"const": "kept"},
                            "completed": r("Completed")}},
            {"type": "object", "additionalProperties": false, "required": ["key", "error"],
             "properties": {"key": {"type": ["string", "null"]}, "error": r("ErrorDetail")}},
        ],
    });

    /// One result of a batch of acks.
    AckResult => json!({
        "description": "The item's lease_id (null when it had none or it was not a string) and its status: \
            204 applied, 400 malformed, 404 unknown lease, 409 the lease is no longer live.",
        "oneOf": [
            {"type": "object", "additionalProperties": false, "required": ["lease_id", "status"],
             "properties": {"lease_id": {"type": ["string", "null"]}, "status": {"const": 204}}},
            {"type": "object", "additionalProperties": false, "required": ["lease_id", "status", "error"],
             "properties": {"lease_id": {"type": ["string", "null"]}, "status": {"enum": [400, 404, 409]},
                            "error": r("ErrorDetail")}},
        ],
    });

    /// A task as the API shows it.
    Task => json!({
        "type": "object",
        "required": ["queue", "key", "state", "due_at", "payload", "attempts", "max_attempts", "backoff",
            "repeat", "tags", "priority", "group", "version", "created_at", "updated_at", "lease_expires_at",
            "last_error", "target", "unique_for", "calendar", "misfire", "misfire_after", "catch_up_max",
            "overlap", "jitter"],
        "properties": {
            "queue": r("QueueName"),
            "key": r("TaskKey"),
            "state": r("TaskState"),
            "due_at": r("Timestamp"),
            "payload": {},
            "attempts": {"type": "integer", "minimum": 0, "description": "Tries that failed or whose lease expired."},
            "max_attempts": {"type": "integer", "minimum": 1},
            "backoff": r("Backoff"),
            "repeat": nullable(r("Repeat")),
            "tags": {"type": "array", "items": r("TagName")},
            "priority": r("Priority"),
            "group": nullable(r("GroupName")),
            "version": {"type": "integer", "minimum": 1},
            "created_at": r("Timestamp"),
            "updated_at": r("Timestamp"),
            "lease_expires_at": nullable(r("Timestamp")),
            "last_error": {"type": ["string", "null"]},
            "target": nullable(r("Target")),
            "unique_for": nullable(json!({
                "description": "The task's dedupe window: a duration when held after done only, else \
                    {\"window\", \"dead\": true}.",
                "oneOf": [
                    r("Duration"),
                    {"type": "object", "required": ["window", "dead"],
                     "properties": {"window": r("Duration"), "dead": {"const": true}}},
                ],
            })),
            "calendar": nullable(json!({"allOf": [r("CalendarName")], "description": "The task's working-time \
                calendar."})),
            "misfire": {"enum": ["fire_once", "fire_all", "skip"]},
            "misfire_after": {"allOf": [r("Duration")], "description": "Applies under misfire skip."},
            "catch_up_max": {"type": "integer", "minimum": 1, "maximum": 1000,
                "description": "Applies under misfire fire_all."},
            "overlap": {"enum": ["skip", "queue", "allow"]},
            "jitter": nullable(r("Duration")),
            "traceparent": {"type": "string",
                "pattern": "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$",
                "description": "The W3C trace context the task was scheduled with (its last replace's): the \
                    schedule request's span when the server exports traces, else the request's traceparent \
                    header as given. Each delivery continues this trace. Absent when none."},
        },
    });

    /// Exponential backoff in an answer.
    Backoff => json!({
        "type": "object",
        "required": ["initial", "factor", "max"],
        "properties": {"initial": r("Duration"), "factor": {"type": "number", "minimum": 1}, "max": r("Duration")},
    });

    /// How a cron expression is written.
    CronSyntax => json!({
        "enum": ["vixie", "spring", "quartz"],
        "default": "vixie",
        "description": "vixie (the default; null or absent is vixie): Vixie cron with Debian's daylight-saving \
            rules. spring: Spring's CronExpression (@Scheduled): 6 fields, seconds first, ? L W #, both day \
            fields must match, Sunday 0 or 7. quartz: Quartz's CronExpression: 6 fields or 7 with the year, \
            ? in exactly one day field, Sunday = 1, ranges that wrap. Rules: docs/state-machine.md, \
            \"Cron expressions\".",
    });

    /// A repeat in an answer.
    Repeat => json!({
        "type": "object",
        "properties": {
            "every": r("Duration"),
            "cron": {"type": "string"},
            "tz": {"type": "string"},
            "cron_syntax": {"allOf": [r("CronSyntax")], "description":
                "Shown for spring and quartz; absent means vixie (so repeats stored before it read the same)."},
            "times": {"type": "integer", "minimum": 1},
            "until": r("Timestamp"),
        },
        "oneOf": [{"required": ["every"]}, {"required": ["cron", "tz"]}],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_the_json_written() {
        let written = serde_json::to_value(TaskState::schema()).unwrap();
        assert_eq!(written, json!({"enum": ["scheduled", "leased", "dead"]}));
        let written = serde_json::to_value(Time::schema()).unwrap();
        assert_eq!(written["oneOf"][1]["minimum"], json!(100_000_000_000_u64));
    }
}
