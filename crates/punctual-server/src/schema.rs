//! Types that exist only to describe the API in `/openapi.json`: values whose Rust
//! types live in the core (which knows nothing of OpenAPI) or that accept several JSON
//! forms. A test checks that [`Task`] lists exactly the members the core's task
//! serializes to.

#![allow(dead_code, reason = "read by the OpenAPI derive only")]

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{KnownFormat, RefOr, SchemaFormat};
use utoipa::{PartialSchema, ToSchema};

/// A duration: a string of `<number><unit>` parts (`"1500ms"`, `"30s"`, `"1h 30m"`,
/// `"7d"`; units ms, s, m, h, d) or integer milliseconds.
pub(crate) struct Duration;

impl PartialSchema for Duration {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String).examples(["30s", "1h 30m"]))
            .item(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).description(Some("milliseconds")))
            .description(Some("A duration: \"1500ms\", \"30s\", \"1h 30m\", \"7d\", or integer milliseconds."))
            .into()
    }
}

impl ToSchema for Duration {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Duration")
    }
}

/// An instant: RFC 3339 in requests (any offset) or integer epoch milliseconds;
/// responses always give RFC 3339 UTC with three fractional digits.
pub(crate) struct Time;

impl PartialSchema for Time {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                    .examples(["2026-11-30T12:00:00.000Z"]),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0))
                    .description(Some("epoch milliseconds (requests only)")),
            )
            .description(Some(
                "RFC 3339 or epoch milliseconds; responses: RFC 3339 UTC, e.g. 2026-11-30T12:00:00.000Z.",
            ))
            .into()
    }
}

impl ToSchema for Time {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Time")
    }
}

/// A task as the API shows it.
#[derive(ToSchema)]
pub(crate) struct Task {
    #[schema(example = "order.cancel")]
    queue: String,
    #[schema(example = "order-1234")]
    key: String,
    /// `scheduled`, `leased` or `dead`.
    #[schema(example = "scheduled")]
    state: String,
    due_at: Time,
    payload: serde_json::Value,
    /// Tries that failed or whose lease expired.
    attempts: u32,
    max_attempts: u32,
    backoff: Backoff,
    repeat: Option<Repeat>,
    tags: Vec<String>,
    version: u64,
    created_at: Time,
    updated_at: Time,
    lease_expires_at: Option<Time>,
    last_error: Option<String>,
}

/// Exponential backoff between tries.
#[derive(ToSchema)]
pub(crate) struct Backoff {
    initial: Duration,
    factor: f64,
    max: Duration,
}

/// `{"every", "times"?, "until"?}` or `{"cron", "tz"?, "times"?, "until"?}`.
#[derive(ToSchema)]
pub(crate) struct Repeat {
    every: Option<Duration>,
    cron: Option<String>,
    tz: Option<String>,
    times: Option<u32>,
    until: Option<Time>,
}
