//! The span of each delivery, for traces exported over OpenTelemetry (the server's
//! `[telemetry]`), and the headers that let an HTTP receiver continue the trace.
//!
//! Spans of [`TARGET`] are for traces only: the server's logs leave them out, and when
//! no trace exporter listens nothing is interested in them, so their call sites are
//! disabled and cost a check each. This crate only names the span and its fields
//! (`tracing`); whoever exports the traces turns them into OpenTelemetry spans, and
//! gives, through [`TraceHeaders`], the W3C `traceparent` (and `tracestate`) of the
//! span being delivered, which webhooks and tasks' HTTP targets send along.
//!
//! The delivery span's attributes (docs/operations.md, "OpenTelemetry"):
//! `punctual.queue`, `punctual.task.key`, `punctual.delivery.id`,
//! `punctual.delivery.attempt`, `punctual.action.kind` (the queue's action, or `target`
//! for a task's own HTTP target), `punctual.delivery.outcome` (`done`, `reschedule`,
//! `retry`, `fail`) and, for HTTP deliveries that got an answer,
//! `http.response.status_code`. A retry or a failure marks the span as an error, with
//! the delivery's `last_error` as its description.

use std::fmt;
use std::sync::Arc;

use punctual_core::{Delivery, Outcome};
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of the spans meant for traces (and of no log line).
pub const TARGET: &str = "punctual::trace";

/// The headers that carry the current span's trace context to a receiver: the server
/// sets them when it exports traces ([`Runtime::trace_headers`](crate::Runtime::trace_headers));
/// by default there are none.
#[derive(Clone, Default)]
pub struct TraceHeaders(Option<Arc<CurrentHeaders>>);

/// Gives the names and values of the headers of the current span's context.
type CurrentHeaders = dyn Fn() -> Vec<(String, String)> + Send + Sync;

impl TraceHeaders {
    /// Headers given by `current`, called in the delivery's span for each request sent:
    /// the names and values to add (`traceparent`, `tracestate`).
    pub fn new(current: impl Fn() -> Vec<(String, String)> + Send + Sync + 'static) -> TraceHeaders {
        TraceHeaders(Some(Arc::new(current)))
    }

    /// The headers to add to a request sent now (none when traces are off).
    pub fn current(&self) -> Vec<(String, String)> {
        self.0.as_ref().map(|current| current()).unwrap_or_default()
    }
}

impl fmt::Debug for TraceHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "TraceHeaders(on)" } else { "TraceHeaders(off)" })
    }
}

/// The span of one try of `delivery` by an action of `kind`.
pub(crate) fn delivery_span(delivery: &Delivery, kind: &str) -> Span {
    let task = &delivery.task;
    let kind = if task.target.is_some() { "target" } else { kind };
    // Brokers receive a message to pass on; the others are called.
    let span_kind = if matches!(kind, "rabbitmq" | "nats" | "redis-stream") { "producer" } else { "client" };
    tracing::info_span!(
        target: TARGET,
        "deliver",
        otel.kind = span_kind,
        otel.status_code = Empty,
        otel.status_description = Empty,
        punctual.queue = task.queue.as_str(),
        punctual.task.key = task.key.as_str(),
        punctual.delivery.id = delivery.delivery_id.as_str(),
        punctual.delivery.attempt = delivery.attempt,
        punctual.action.kind = kind,
        punctual.delivery.outcome = Empty,
        http.response.status_code = Empty,
    )
}

/// Records how the try ended on its span: its outcome, and an error status with the
/// reason for a retry or a failure.
pub(crate) fn record_outcome(span: &Span, outcome: &Outcome) {
    if span.is_disabled() {
        return;
    }
    let (name, error) = match outcome {
        Outcome::Done => ("done", None),
        Outcome::Reschedule(_) => ("reschedule", None),
        Outcome::Fail(error) => ("fail", Some(error.as_str())),
        Outcome::Retry { error, .. } => ("retry", Some(error.as_str())),
        // `Outcome` is non-exhaustive: a kind added later counts as a retry, as the
        // worker's log treats it.
        _ => ("retry", None),
    };
    span.record("punctual.delivery.outcome", name);
    if let Some(error) = error {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", error);
    }
}

/// Records the status of an HTTP receiver's answer on the span of the delivery that
/// is being sent (the current span).
pub(crate) fn record_status(status: u16) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("http.response.status_code", status);
    }
}
