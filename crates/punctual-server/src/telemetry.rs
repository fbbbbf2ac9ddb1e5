//! Traces over OpenTelemetry (`[telemetry]`, docs/operations.md "OpenTelemetry"): the
//! spans of the requests that move a task (schedule, lease, ack, extend, cancel) and of
//! each push delivery (`punctual_actions::trace`), exported over OTLP/HTTP.
//!
//! The spans are `tracing` spans of the target [`TARGET`]: the logs leave them out, and
//! only the OpenTelemetry layer this module builds ([`Traces::start`]) takes them. With
//! traces off there is no such layer, nothing is interested in them, and their call
//! sites are disabled: a request pays one check ([`request_span`] answers a disabled
//! span, and the router's middleware goes straight on).
//!
//! Context propagation is W3C Trace Context only: a request's `traceparent` (and
//! `tracestate`) header makes its span a child of the caller's ([`continue_trace`]).
//! A task keeps the trace context of the request that scheduled it ([`task_trace`]):
//! its schedule span's when traces are on, so that span is in the trace, else the
//! request's `traceparent` as given (an invalid one is ignored, as W3C says). Each push
//! delivery's span is a child of that context, and a webhook, a task's HTTP target or
//! a broker's message receives the `traceparent` of the delivery's span
//! ([`trace_headers`]). A pull worker's lease answer shows the stored context; the
//! `ack` and `extend` spans stay children of the worker's request (its `traceparent`),
//! which a worker that continued the task's trace sends.
//!
//! Exporting: the SDK's batch processor (a thread of its own) hands each batch to
//! [`Exporter`], which sends it on the server's tokio runtime with the workspace's
//! reqwest client (rustls on ring, so an `https://` collector works), `export_interval`
//! apart at most. A receiver that fails is logged once, and again when it answers
//! again; spans it missed are dropped, never held up or retried without end. At a stop,
//! [`Traces::shutdown`] sends the spans not yet sent, after everything else stopped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use axum::http::{HeaderMap, Method, StatusCode};
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_http::{Bytes, HeaderExtractor, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use punctual_actions::TraceHeaders;
pub(crate) use punctual_actions::trace::TARGET;
use punctual_core::TraceContext;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

use crate::config::telemetry::TelemetrySettings;

/// The longest one export may take before it counts as failed.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the stop waits for the last spans to be sent.
const FLUSH_AT_STOP: Duration = Duration::from_secs(5);

/// The layer of the process's subscriber that turns spans into OpenTelemetry spans.
pub(crate) type TraceLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Traces being exported; [`Traces::shutdown`] sends the last ones.
#[derive(Debug)]
pub(crate) struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts exporting as `settings` say, on the current tokio runtime: the traces and
    /// the layer to add to the subscriber (it takes the spans of [`TARGET`] only).
    pub(crate) fn start(settings: &TelemetrySettings) -> anyhow::Result<(Traces, TraceLayer)> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .user_agent(concat!("punctual/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot set up the HTTP client of the traces")?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(Exporter {
                client,
                runtime: tokio::runtime::Handle::current(),
                url: settings.traces_url.clone(),
                failing: Arc::new(AtomicBool::new(false)),
            })
            .with_endpoint(settings.traces_url.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .with_context(|| format!("cannot export traces to {}", settings.traces_url))?;
        let batches = BatchConfigBuilder::default().with_scheduled_delay(settings.export_interval).build();
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(exporter).with_batch_config(batches).build())
            .with_resource(resource)
            .build();
        let layer = layer(&provider);
        Ok((Traces { provider }, layer))
    }

    /// Sends the spans not sent yet (waiting at most a few seconds), then stops
    /// exporting. Call it last, once requests and deliveries have ended.
    pub(crate) async fn shutdown(self) {
        let provider = self.provider;
        // The batch processor's thread sends on this runtime, so wait off its workers.
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(FLUSH_AT_STOP)).await;
        match flushed {
            Ok(Ok(())) => tracing::info!("traces flushed"),
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot send the last traces"),
            Err(e) => tracing::warn!(error = %e, "cannot send the last traces"),
        }
    }
}

/// The layer that turns the spans of [`TARGET`], and only them, into spans of
/// `provider`.
pub(crate) fn layer(provider: &SdkTracerProvider) -> TraceLayer {
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("punctual"))
        // The attributes are the ones docs/operations.md lists, no more.
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO));
    Box::new(layer)
}

/// Sends OTLP requests for the SDK on the server's tokio runtime.
#[derive(Debug)]
struct Exporter {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// The traces URL, for the log.
    url: String,
    /// Whether the last export failed (logged once until one succeeds).
    failing: Arc<AtomicBool>,
}

impl HttpClient for Exporter {
    // The trait is declared with `async_trait`: this is the signature it expands to.
    fn send_bytes<'client, 'future>(
        &'client self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'future>>
    where
        'client: 'future,
        Self: 'future,
    {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.execute(reqwest::Request::try_from(request)?).await?;
            let (status, headers) = (response.status(), response.headers().clone());
            let mut answer = Response::new(response.bytes().await?);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            Ok::<_, reqwest::Error>(answer)
        });
        let (url, failing) = (self.url.clone(), Arc::clone(&self.failing));
        Box::pin(async move {
            let answer: Result<Response<Bytes>, HttpError> = match sent.await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => Err(Box::new(e)),
                Err(e) => Err(Box::new(e)),
            };
            let problem = match &answer {
                Ok(answer) if answer.status().is_success() => None,
                Ok(answer) => Some(format!("it answered {}", answer.status())),
                Err(e) => Some(e.to_string()),
            };
            match problem {
                Some(problem) if !failing.swap(true, Ordering::Relaxed) => {
                    tracing::warn!(url = %url, error = %problem, "cannot export traces; spans are dropped until it answers");
                }
                None if failing.swap(false, Ordering::Relaxed) => {
                    tracing::info!(url = %url, "traces are exported again")
                }
                _ => {}
            }
            answer
        })
    }
}

/// The span of a request of `operation` (`schedule`, `lease`, …) to `route`; disabled
/// when traces are off.
pub(crate) fn request_span(operation: &'static str, method: &Method, route: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = operation,
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method.as_str(),
        http.route = route,
        http.response.status_code = Empty,
        punctual.queue = Empty,
        punctual.task.key = Empty,
        punctual.tag = Empty,
        punctual.batch.size = Empty,
        punctual.lease.count = Empty,
        punctual.delivery.id = Empty,
        punctual.delivery.attempt = Empty,
    )
}

/// Makes `span` a child of the caller's span named by `headers` (`traceparent`,
/// `tracestate`), if they name one.
pub(crate) fn continue_trace(span: &Span, headers: &HeaderMap) {
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        // Fails only for a span already started or disabled: it then stays a root.
        let _ = span.set_parent(parent);
    }
}

/// Records the answer's status on a request's span; a 5xx marks it as an error.
pub(crate) fn record_response(span: &Span, status: StatusCode) {
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
}

/// Records the task a request is about (an ack's or an extend's lease) on its span.
pub(crate) fn record_task(queue: &str, key: &str) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("punctual.queue", queue);
        span.record("punctual.task.key", key);
    }
}

/// Records the size of a request's batch on its span.
pub(crate) fn record_batch(size: usize) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("punctual.batch.size", size);
    }
}

/// Records on a lease's span how many tasks it leased and, when it is one, which
/// (`key`, `delivery_id`, `attempt`).
pub(crate) fn record_leases(count: usize, single: Option<(&str, &str, u32)>) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    span.record("punctual.lease.count", count);
    if let Some((key, delivery_id, attempt)) = single {
        span.record("punctual.task.key", key);
        span.record("punctual.delivery.id", delivery_id);
        span.record("punctual.delivery.attempt", attempt);
    }
}

/// The trace context a task scheduled by the current request keeps (see the module
/// docs): the current span's when traces are on, else the `traceparent` of `headers`
/// when it is a valid one, else none.
pub(crate) fn task_trace(headers: &HeaderMap) -> Option<TraceContext> {
    let span = Span::current();
    if !span.is_disabled() {
        let mut injected = Pairs(Vec::new());
        TraceContextPropagator::new().inject_context(&span.context(), &mut injected);
        let own = injected.0.into_iter().find(|(name, _)| name == "traceparent");
        if let Some(context) = own.and_then(|(_, value)| TraceContext::new(value).ok()) {
            return Some(context);
        }
    }
    let given = headers.get("traceparent")?.to_str().ok()?;
    TraceContext::new(given.trim()).ok()
}

/// How push deliveries join their tasks' traces, for the push actions' runtime: each
/// delivery's span becomes a child of its task's trace context, and the headers that
/// continue the current span's trace at a receiver are its W3C `traceparent` (and
/// `tracestate`).
pub(crate) fn trace_headers() -> TraceHeaders {
    TraceHeaders::new(
        || {
            let mut headers = Pairs(Vec::new());
            TraceContextPropagator::new().inject_context(&Span::current().context(), &mut headers);
            headers.0
        },
        continue_task_trace,
    )
}

/// Makes `span` (not yet entered) a child of the span `trace` names.
fn continue_task_trace(span: &Span, trace: &TraceContext) {
    let carrier = [("traceparent".to_owned(), trace.as_str().to_owned())];
    let parent = TraceContextPropagator::new().extract(&Carrier(&carrier));
    if parent.span().span_context().is_valid() {
        // Fails only for a span already started or disabled: it then stays a root.
        let _ = span.set_parent(parent);
    }
}

/// Header names and values to read a trace context from.
struct Carrier<'a>(&'a [(String, String)]);

impl opentelemetry::propagation::Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(name, _)| name.eq_ignore_ascii_case(key)).map(|(_, value)| value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| name.as_str()).collect()
    }
}

/// Header names and values, as the propagator writes them.
struct Pairs(Vec<(String, String)>);

impl Injector for Pairs {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use opentelemetry::trace::{SpanId, TraceId};
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// A subscriber with the traces layer, exporting nowhere (the spans are only
    /// read back through their context).
    fn with_traces<T>(body: impl FnOnce() -> T) -> T {
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry().with(layer(&provider));
        tracing::subscriber::with_default(subscriber, body)
    }

    #[test]
    fn a_traceparent_becomes_the_parent_and_deliveries_carry_their_own() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let mut headers = HeaderMap::new();
        let parent = format!("00-{trace}-00f067aa0ba902b7-01");
        headers.insert("traceparent", HeaderValue::from_str(&parent).unwrap());
        let (context, sent) = with_traces(|| {
            let span = request_span("schedule", &Method::PUT, "/v1/queues/{queue}/tasks/{key}");
            assert!(!span.is_disabled());
            continue_trace(&span, &headers);
            let _entered = span.enter();
            (Span::current().context(), trace_headers().current())
        });
        let span = context.span();
        let context = span.span_context();
        assert_eq!(context.trace_id(), TraceId::from_hex(trace).unwrap());
        assert_ne!(context.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap(), "a span of its own");
        let traceparent = &sent.iter().find(|(name, _)| name == "traceparent").expect("a traceparent").1;
        assert_eq!(traceparent, &format!("00-{trace}-{}-01", context.span_id()));
    }

    #[test]
    fn a_task_keeps_its_schedule_spans_context_with_traces_on_and_the_header_as_given_without() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let given = format!("00-{trace}-00f067aa0ba902b7-01");
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", HeaderValue::from_str(&given).unwrap());
        let (span_id, kept) = with_traces(|| {
            let span = request_span("schedule", &Method::PUT, "/v1/queues/{queue}/tasks/{key}");
            continue_trace(&span, &headers);
            let _entered = span.enter();
            (Span::current().context().span().span_context().span_id(), task_trace(&headers))
        });
        let kept = kept.expect("a trace context");
        assert_eq!((kept.trace_id(), kept.parent_id()), (trace, span_id.to_string().as_str()), "the schedule span's");
        assert!(kept.sampled());

        // Traces off: no span is enabled, the header is kept as given.
        assert_eq!(task_trace(&headers).map(|kept| kept.as_str().to_owned()), Some(given));
        headers.insert("traceparent", HeaderValue::from_static("00-not-a-trace-01"));
        assert_eq!(task_trace(&headers), None, "an invalid traceparent is ignored");
        assert_eq!(task_trace(&HeaderMap::new()), None);
    }

    #[test]
    fn a_delivery_span_is_a_child_of_its_tasks_context_and_sends_its_own() {
        let stored = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let queue = punctual_core::QueueName::new("q").unwrap();
        let new = punctual_core::NewTask::new(
            queue,
            punctual_core::TaskKey::new("k").unwrap(),
            punctual_core::Timestamp::EPOCH,
        )
        .traceparent(stored.clone());
        let meta = punctual_core::TaskMeta::new(
            punctual_core::StoreId::from_bits(1),
            1,
            1,
            1,
            punctual_core::Timestamp::EPOCH,
        );
        let task = punctual_core::Task::from_new(new, meta, punctual_core::Timestamp::EPOCH);
        let (context, sent) = with_traces(|| {
            let span = tracing::info_span!(target: TARGET, "deliver");
            continue_task_trace(&span, &stored);
            let _entered = span.enter();
            (Span::current().context(), trace_headers().for_task(&task))
        });
        let span = context.span();
        let context = span.span_context();
        assert_eq!(context.trace_id().to_string(), stored.trace_id(), "the task's trace");
        assert_ne!(context.span_id().to_string(), stored.parent_id(), "a span of its own");
        let traceparent = &sent.iter().find(|(name, _)| name == "traceparent").expect("a traceparent").1;
        assert_eq!(traceparent, &format!("00-{}-{}-01", stored.trace_id(), context.span_id()));
    }
}
