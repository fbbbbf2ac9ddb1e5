//! Traces over OTLP through the real binary: `[telemetry] otlp_endpoint` points the
//! server at a small OTLP/HTTP receiver of the test's own, which decodes each
//! `ExportTraceServiceRequest` (protobuf) and hands its spans to the test. A `PUT` with
//! a W3C `traceparent` gets a schedule span in the caller's trace, which the task keeps:
//! a pull worker's lease answer shows it, and a webhook delivery's span is a child of
//! the schedule span, in the caller's trace, whose `traceparent` the webhook receives;
//! a lease and an ack get spans naming their queue and key; the spans of the last
//! requests are sent at a stop; with traces off, a webhook receives the `PUT`'s
//! `traceparent` exactly; a bad endpoint is refused with its line.
//!
//! Guards against: spans that are never exported, a caller's trace that is dropped (at
//! the `PUT`, or between the `PUT` and the delivery), a receiver that cannot continue
//! the trace, spans lost at a stop, spans leaking into the logs, an endpoint accepted
//! that could never be reached.

use crate::common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use common::receiver::{Receiver, read_request, write_response};
use common::{Api, BIN, server_builder, start};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::json;

/// The longest the test waits for a span to be exported.
const EXPORTED_WITHIN: Duration = Duration::from_secs(20);

/// A span as exported, with its resource's `service.name`.
#[derive(Debug, Clone)]
struct Exported {
    service: Option<String>,
    span: Span,
}

impl Exported {
    fn attribute(&self, key: &str) -> Option<String> {
        attribute(&self.span.attributes, key)
    }
}

/// An OTLP/HTTP receiver on loopback: every span posted to `/v1/traces`, in order.
struct Collector {
    addr: std::net::SocketAddr,
    spans: mpsc::Receiver<Exported>,
    /// The spans taken so far that no wait has asked for yet.
    seen: Vec<Exported>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the OTLP receiver");
        let addr = listener.local_addr().expect("the OTLP receiver's address");
        let (sender, spans) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&stream) else { continue };
                assert!(request.head.starts_with("POST /v1/traces HTTP/1.1"), "{}", request.head);
                assert_eq!(request.header("content-type").as_deref(), Some("application/x-protobuf"));
                let export = ExportTraceServiceRequest::decode(request.body.as_slice()).expect("an OTLP export");
                // An empty answer is an ExportTraceServiceResponse without rejections.
                write_response(&mut stream, 200, "");
                for resource in export.resource_spans {
                    let service = resource.resource.as_ref().and_then(|r| attribute(&r.attributes, "service.name"));
                    for span in resource.scope_spans.into_iter().flat_map(|scope| scope.spans) {
                        if sender.send(Exported { service: service.clone(), span }).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Collector { addr, spans, seen: Vec::new() }
    }

    /// The first span exported named `name` whose attribute `key` is `value`, each
    /// span coming within [`EXPORTED_WITHIN`] of the one before (the test makes a
    /// bounded number of requests, so the wait is bounded too); spans that do not match
    /// are kept for later waits.
    #[track_caller]
    fn span(&mut self, name: &str, key: &str, value: &str) -> Exported {
        let matches = |e: &Exported| e.span.name == name && e.attribute(key).as_deref() == Some(value);
        if let Some(i) = self.seen.iter().position(matches) {
            return self.seen.remove(i);
        }
        loop {
            match self.spans.recv_timeout(EXPORTED_WITHIN) {
                Ok(exported) if matches(&exported) => return exported,
                Ok(exported) => self.seen.push(exported),
                Err(_) => panic!(
                    "no span {name} with {key} = {value} exported within {EXPORTED_WITHIN:?}; got: {:#?}",
                    self.seen.iter().map(|e| (&e.span.name, &e.span.attributes)).collect::<Vec<_>>()
                ),
            }
        }
    }
}

/// A string or integer attribute as text.
fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()?;
    match value {
        AnyValue::StringValue(text) => Some(text.clone()),
        AnyValue::IntValue(n) => Some(n.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).expect("write the config file");
    path
}

#[test]
fn one_trace_runs_from_the_callers_put_and_the_webhook_receives_its_delivery_span() {
    let mut collector = Collector::start();
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        &format!(
            r#"[egress]
allow = ["127.0.0.1"]

[telemetry]
otlp_endpoint = "http://{}"
service_name = "punctual-e2e"
export_interval = "100ms"

[queues."flow.hook".action]
kind = "webhook"
url = "http://{}/hook"
"#,
            collector.addr, receiver.addr
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config));
    let api = Api::of(&server);

    // The caller's span: its trace and span ids, as a client library sends them.
    let (trace_id, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let put = reqwest::blocking::Client::new()
        .put(format!("{}/v1/queues/flow.pull/tasks/t-1", server.url()))
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&json!({"payload": {"step": 1}}))
        .send()
        .expect("PUT a task");
    assert_eq!(put.status().as_u16(), 201);
    let schedule = collector.span("schedule", "punctual.task.key", "t-1");
    assert_eq!(hex(&schedule.span.trace_id), trace_id, "the caller's trace");
    assert_eq!(hex(&schedule.span.parent_span_id), caller_span, "a child of the caller's span");
    assert_ne!(hex(&schedule.span.span_id), caller_span);
    assert_eq!(schedule.span.kind, SpanKind::Server as i32);
    assert_eq!(schedule.service.as_deref(), Some("punctual-e2e"));
    assert_eq!(schedule.attribute("punctual.queue").as_deref(), Some("flow.pull"));
    assert_eq!(schedule.attribute("http.route").as_deref(), Some("/v1/queues/{queue}/tasks/{key}"));
    assert_eq!(schedule.attribute("http.request.method").as_deref(), Some("PUT"));
    assert_eq!(schedule.attribute("http.response.status_code").as_deref(), Some("201"));

    // A pull worker's lease and ack: their own traces, naming the queue and the key.
    // The lease answer carries the task's trace: the schedule span's context.
    let lease = api.lease_one("flow.pull");
    let stored = format!("00-{trace_id}-{}-01", hex(&schedule.span.span_id));
    assert_eq!(lease["task"]["traceparent"].as_str(), Some(stored.as_str()), "{lease}");
    let lease_id = lease["lease_id"].as_str().expect("a lease id");
    api.ack(lease_id, json!({"outcome": "done"})).expect(204, "ack");
    let leased = collector.span("lease", "punctual.queue", "flow.pull");
    assert_eq!(leased.attribute("punctual.task.key").as_deref(), Some("t-1"));
    assert_eq!(leased.attribute("punctual.lease.count").as_deref(), Some("1"));
    assert_eq!(leased.attribute("punctual.delivery.id").as_deref(), lease["delivery_id"].as_str());
    assert_eq!(leased.attribute("punctual.delivery.attempt").as_deref(), Some("1"));
    assert!(leased.span.parent_span_id.is_empty(), "no traceparent: a trace of its own");
    let acked = collector.span("ack", "punctual.task.key", "t-1");
    assert_eq!(acked.attribute("punctual.queue").as_deref(), Some("flow.pull"));
    assert_eq!(acked.attribute("http.response.status_code").as_deref(), Some("204"));

    // A webhook delivery: one trace from the caller's PUT through the schedule span and
    // the delivery's span to the receiver, which gets the delivery span's traceparent.
    let (hook_trace, hook_caller) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let put = reqwest::blocking::Client::new()
        .put(format!("{}/v1/queues/flow.hook/tasks/h-1", server.url()))
        .header("traceparent", format!("00-{hook_trace}-{hook_caller}-01"))
        .json(&json!({"payload": {"step": 2}}))
        .send()
        .expect("PUT a task");
    assert_eq!(put.status().as_u16(), 201);
    let delivery = receiver.next();
    let traceparent = delivery.header("traceparent").expect("the delivery carries a traceparent");
    receiver.answer(200, "");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!((parts.len(), parts[0], parts[3]), (4, "00", "01"), "a sampled W3C traceparent: {traceparent}");
    assert_eq!(parts[1], hook_trace, "the receiver continues the scheduler's trace");
    let hook_schedule = collector.span("schedule", "punctual.task.key", "h-1");
    assert_eq!(hex(&hook_schedule.span.trace_id), hook_trace);
    assert_eq!(hex(&hook_schedule.span.parent_span_id), hook_caller);
    let deliver = collector.span("deliver", "punctual.task.key", "h-1");
    assert_eq!(hex(&deliver.span.trace_id), hook_trace, "the delivery is in the scheduler's trace");
    assert_eq!(
        hex(&deliver.span.parent_span_id),
        hex(&hook_schedule.span.span_id),
        "the delivery's span is a child of the schedule span"
    );
    assert_eq!(hex(&deliver.span.span_id), parts[2], "the receiver is a child of the delivery's span");
    assert_eq!(deliver.span.kind, SpanKind::Client as i32);
    assert_eq!(deliver.attribute("punctual.queue").as_deref(), Some("flow.hook"));
    assert_eq!(deliver.attribute("punctual.action.kind").as_deref(), Some("webhook"));
    assert_eq!(deliver.attribute("punctual.delivery.id"), delivery.header("punctual-delivery"));
    assert_eq!(deliver.attribute("punctual.delivery.attempt").as_deref(), Some("1"));
    assert_eq!(deliver.attribute("http.response.status_code").as_deref(), Some("200"));
    assert_eq!(deliver.attribute("punctual.delivery.outcome").as_deref(), Some("done"));

    let logs = server.logs();
    assert!(logs.contains("traces are exported over OTLP"), "{logs}");
    assert!(!logs.contains("punctual.task.key"), "the spans of traces stay out of the logs:\n{logs}");
}

#[test]
fn with_traces_off_the_webhook_receives_the_puts_traceparent_as_it_was_given() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        &format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n[queues.\"flow.hook\".action]\nkind = \"webhook\"\nurl = \"http://{}/hook\"\n",
            receiver.addr
        ),
    );
    // No [telemetry] and no OTEL_* variables: nothing is exported.
    let server = start(server_builder().arg("--config").arg(&config));
    let api = Api::of(&server);
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    for (queue, key) in [("flow.pull", "p-1"), ("flow.hook", "h-1")] {
        let put = reqwest::blocking::Client::new()
            .put(format!("{}/v1/queues/{queue}/tasks/{key}", server.url()))
            .header("traceparent", given)
            .json(&json!({}))
            .send()
            .expect("PUT a task");
        assert_eq!(put.status().as_u16(), 201);
    }
    let lease = api.lease_one("flow.pull");
    assert_eq!(lease["task"]["traceparent"].as_str(), Some(given), "the lease answer carries it: {lease}");
    let delivery = receiver.next();
    receiver.answer(200, "");
    assert_eq!(delivery.header("traceparent").as_deref(), Some(given), "the stored traceparent, as it was given");
}

#[test]
fn the_spans_of_the_last_requests_are_sent_at_a_stop() {
    let mut collector = Collector::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Nothing is sent before the stop: every span waits an hour for its batch.
    let config = write(
        &dir,
        &format!("[telemetry]\notlp_endpoint = \"http://{}/\"\nexport_interval = \"1h\"\n", collector.addr),
    );
    let mut server = start(server_builder().arg("--config").arg(&config));
    Api::of(&server).create("flow.last", "t-9", json!({}));
    let status = server.terminate().expect("stop the server");
    assert!(status.success(), "{status:?}: {}", server.logs());
    let schedule = collector.span("schedule", "punctual.task.key", "t-9");
    assert_eq!(schedule.service.as_deref(), Some("punctual"), "the default service name");
    assert!(server.logs().contains("traces flushed"), "{}", server.logs());
}

#[test]
fn a_bad_otlp_endpoint_is_refused_with_its_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(&dir, "listen = \"127.0.0.1:7575\"\n\n[telemetry]\notlp_endpoint = \"127.0.0.1:4318\"\n");
    let out = std::process::Command::new(BIN).arg("check-config").arg(&config).output().expect("run check-config");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("punctual.toml, line 4:"), "check-config names the line: {stderr}");
    assert!(stderr.contains("http:// or https://"), "{stderr}");
    let error = match server_builder().arg("--config").arg(&config).start() {
        Ok(_) => panic!("the server started with an OTLP endpoint that is no URL"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("line 4") && error.contains("http:// or https://"), "{error}");
}
