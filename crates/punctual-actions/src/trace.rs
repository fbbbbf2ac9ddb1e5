//! The span of each delivery, for traces exported over OpenTelemetry (the server's
//! `[telemetry]`), and the headers that let an HTTP receiver continue the trace.
//!
//! Spans of [`TARGET`] are for traces only: the server's logs leave them out, and when
//! no trace exporter listens nothing is interested in them, so their call sites are
//! disabled and cost a check each. This crate only names the span and its fields
//! (`tracing`); whoever exports the traces turns them into OpenTelemetry spans, and
//! gives, through [`TraceHeaders`], the W3C `traceparent` (and `tracestate`) of the
//! span being delivered, and makes that span a child of the trace context its task was
//! scheduled with (`Task::traceparent`), so one trace runs from the scheduler's request
//! to the receiver.
//!
//! What a receiver is sent ([`TraceHeaders::for_task`]): with traces exported, the
//! delivery span's own `traceparent`; without, the task's stored `traceparent` as it
//! is, so a receiver still joins the scheduler's trace; none when the task has none and
//! traces are off. Webhooks and tasks' HTTP targets send it as HTTP headers, the brokers
//! in their messages' headers (a Redis stream entry as a field); chat robots and email
//! are not told of traces.
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

use punctual_core::{Delivery, Outcome, Task, TraceContext};
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of the spans meant for traces (and of no log line).
pub const TARGET: &str = "punctual::trace";

/// How deliveries join their tasks' traces: the server sets this when it exports
/// traces ([`Runtime::trace_headers`](crate::Runtime::trace_headers)); by default
/// (traces off) a delivery sends its task's stored `traceparent` as it is.
#[derive(Clone, Default)]
pub struct TraceHeaders(Option<Arc<Hooks>>);

/// What the exporter of the traces does for deliveries.
struct Hooks {
    current: Box<CurrentHeaders>,
    adopt: Box<Adopt>,
}

/// Gives the names and values of the headers of the current span's context.
type CurrentHeaders = dyn Fn() -> Vec<(String, String)> + Send + Sync;

/// Makes a span not yet entered a child of the span a trace context names.
type Adopt = dyn Fn(&Span, &TraceContext) + Send + Sync;

impl TraceHeaders {
    /// Headers given by `current`, called in the delivery's span for each request sent:
    /// the names and values to add (`traceparent`, `tracestate`); `adopt` is called on
    /// each delivery's span, before it is entered, with its task's trace context, to make
    /// the span a child of it.
    pub fn new(
        current: impl Fn() -> Vec<(String, String)> + Send + Sync + 'static,
        adopt: impl Fn(&Span, &TraceContext) + Send + Sync + 'static,
    ) -> TraceHeaders {
        TraceHeaders(Some(Arc::new(Hooks { current: Box::new(current), adopt: Box::new(adopt) })))
    }

    /// The headers of the current span, for a request sent now (none when traces are
    /// off).
    pub fn current(&self) -> Vec<(String, String)> {
        self.0.as_ref().map(|hooks| (hooks.current)()).unwrap_or_default()
    }

    /// The trace headers of a delivery of `task` sent now, in its delivery's span: the
    /// span's own when traces are on, else the task's stored `traceparent` as it is
    /// (none when it has none).
    pub fn for_task(&self, task: &Task) -> Vec<(String, String)> {
        match &self.0 {
            Some(hooks) => (hooks.current)(),
            None => {
                task.traceparent.iter().map(|trace| ("traceparent".to_owned(), trace.as_str().to_owned())).collect()
            }
        }
    }

    /// Makes `span` (a delivery's, not yet entered) a child of `task`'s trace context,
    /// when traces are on and the task has one.
    fn adopt(&self, span: &Span, task: &Task) {
        if let (Some(hooks), Some(trace)) = (&self.0, &task.traceparent)
            && !span.is_disabled()
        {
            (hooks.adopt)(span, trace);
        }
    }
}

impl fmt::Debug for TraceHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "TraceHeaders(on)" } else { "TraceHeaders(off)" })
    }
}

/// The span of one try of `delivery` by an action of `kind`: a child of its task's
/// trace context when traces are on (`trace`) and the task has one, else a root.
pub(crate) fn delivery_span(delivery: &Delivery, kind: &str, trace: &TraceHeaders) -> Span {
    let span = new_delivery_span(delivery, kind);
    trace.adopt(&span, &delivery.task);
    span
}

fn new_delivery_span(delivery: &Delivery, kind: &str) -> Span {
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

#[cfg(test)]
mod tests {
    use punctual_core::{NewTask, QueueName, StoreId, TaskKey, TaskMeta, Timestamp};

    use super::*;

    fn task(traceparent: Option<&str>) -> Task {
        let mut new = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new("k").unwrap(), Timestamp::EPOCH);
        new.traceparent = traceparent.map(|text| TraceContext::new(text).unwrap());
        Task::from_new(new, TaskMeta::new(StoreId::from_bits(1), 1, 1, 1, Timestamp::EPOCH), Timestamp::EPOCH)
    }

    #[test]
    fn with_traces_off_a_delivery_sends_its_tasks_traceparent_as_stored() {
        let stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let off = TraceHeaders::default();
        assert_eq!(off.for_task(&task(Some(stored))), [("traceparent".to_owned(), stored.to_owned())]);
        assert!(off.for_task(&task(None)).is_empty());
        assert!(off.current().is_empty());
    }

    #[test]
    fn with_traces_on_a_delivery_sends_its_spans_headers() {
        let on = TraceHeaders::new(|| vec![("traceparent".to_owned(), "the span's".to_owned())], |_, _| {});
        let stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(on.for_task(&task(Some(stored))), [("traceparent".to_owned(), "the span's".to_owned())]);
        assert_eq!(on.for_task(&task(None)), [("traceparent".to_owned(), "the span's".to_owned())]);
    }
}
