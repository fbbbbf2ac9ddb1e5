//! The OpenAPI document against the server that serves it. For every operation of the
//! served `/openapi.json`, requests are made from the document itself: its examples and
//! minimal bodies, and each field and query parameter at the edges of what it states
//! (bounds, a bound written as text, null, each enum value, an empty query value, the
//! earliest and latest times), kept where the document takes them (valid); one
//! violation of each constraint it states, found by trying values and keeping those the
//! document's own schemas refuse (invalid); and requests without a token or with a
//! wrong one (unauthorized). Every answer's status must be one the document lists for
//! the operation, and its body must match the documented schema, tightened so that an
//! undocumented member fails too; valid requests must succeed (and no item of a valid
//! batch be refused as invalid), invalid ones be refused (a batch's invalid item in its
//! own result). Each kind of edge and of violation must have been tried, so that a
//! constraint the generator stops reading fails the test. A method a path does not
//! take must answer the documented 405 with the documented methods in `Allow`. Guards
//! against issue 14 (7) and issue Q (12): a document looser or stricter than, and
//! different from, the API served (found by schemathesis: bounds of durations as text,
//! a `due_at` before 1970, an empty query value, an action without the keys its kind
//! needs, nullable fields, items of batches), and against the two drifting apart again.
//!
//! Only the resources a request needs (a task to get, a live lease to ack, a dead task
//! to retry) are made by hand, in [`prepare`]; everything sent comes from the document.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use common::{TestServer, enc};
use punctual_core::EngineConfig;
use punctual_server::HttpOptions;
use serde_json::{Value, json};

mod schema;

use schema::{Doc, Reason, candidates, example_of, extremes, variants};

const TOKEN: &str = "s3cret";

/// Operations whose body is a batch: the member holding the items. An invalid item is
/// refused in its own result, not by the request's status.
const BATCHES: &[(&str, &str)] = &[("post_tasks", "tasks"), ("acks", "acks")];

/// One request, as sent.
#[derive(Debug, Clone)]
struct Call {
    method: Method,
    path: String,
    body: Option<Value>,
    token: Option<&'static str>,
}

/// What came back.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

async fn send(s: &TestServer, call: &Call) -> Answer {
    let mut req = Request::builder().method(call.method.clone()).uri(&call.path);
    if let Some(token) = call.token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let req = match &call.body {
        Some(body) => req.header("content-type", "application/json").body(Body::from(body.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let response = tower::ServiceExt::oneshot(s.app.clone(), req).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec();
    Answer { status, headers, body }
}

/// Checks `answer` against what `operation` documents; the answer's JSON, if any.
fn conforms(doc: &Doc, operation: &Value, call: &Call, answer: &Answer) -> Value {
    let label = format!("{} {} {}", call.method, &call.path[..call.path.len().min(100)], shown(&call.body));
    let status = answer.status.as_str();
    let documented = operation["responses"].get(status).unwrap_or_else(|| {
        panic!(
            "{label}: answered {status}, which the document does not list ({:?}): {}",
            operation["responses"].as_object().unwrap().keys().collect::<Vec<_>>(),
            String::from_utf8_lossy(&answer.body)
        )
    });
    let documented = doc.resolve(documented);
    let Some(content) = documented["content"].as_object() else {
        assert!(answer.body.is_empty(), "{label}: {status} documents no body, got {:?}", answer.body);
        return Value::Null;
    };
    let (media, described) = content.iter().next().unwrap();
    let content_type = answer.headers.get("content-type").map(|v| v.to_str().unwrap()).unwrap_or("");
    assert!(content_type.starts_with(media.as_str()), "{label}: {status} is {media}, got {content_type}");
    if media != "application/json" {
        return Value::Null;
    }
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or_else(|e| panic!("{label}: not JSON: {e}"));
    if let Some(schema) = described.get("schema") {
        let errors: Vec<String> =
            doc.validator(schema, true).iter_errors(&body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{label}: the {status} body does not match its schema: {errors:?}\n{body}");
    }
    body
}

fn shown(body: &Option<Value>) -> String {
    let text = body.as_ref().map(Value::to_string).unwrap_or_default();
    if text.len() > 200 { format!("{}…", &text[..200]) } else { text }
}

/// Makes what a valid call of `operation_id` needs and gives the path parameters it
/// fixes: a task to get, a live lease, a dead task, a calendar.
async fn prepare(s: &TestServer, operation_id: &str, params: &mut HashMap<String, String>) {
    static UNIQUE: AtomicUsize = AtomicUsize::new(0);
    let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
    let queue = params.get("queue").cloned().unwrap_or_else(|| "contract.fixture".into());
    let key = params.get("key").cloned().unwrap_or_else(|| format!("fixture-{n}"));
    let task = format!("/v1/queues/{}/tasks/{}", enc(&queue), enc(&key));
    match operation_id {
        "get_settings" | "patch_settings" | "delete_settings" => {
            let settings = format!("/v1/queues/{}/settings", enc(&queue));
            assert!(s.put(&settings, json!({})).await.0.is_success());
        }
        "get_calendar" | "delete_calendar" => {
            let name = params.get("name").cloned().unwrap_or_else(|| "cn-office".into());
            let (status, body) = s
                .put(&format!("/v1/calendars/{}", enc(&name)), json!({"tz": "UTC", "hours": {"mon": ["09:00-17:00"]}}))
                .await;
            assert!(status.is_success(), "{name}: {status} {body}");
        }
        "get_task" | "delete_task" => {
            assert!(s.put(&task, json!({"delay": "1h"})).await.0.is_success());
        }
        // A due task, so that a long poll (up to the longest wait) answers at once.
        "lease" => {
            let (status, _) = s.put(&format!("/v1/queues/{}/tasks/due-{n}", enc(&queue)), json!({})).await;
            assert!(status.is_success());
        }
        "ack" | "extend" => {
            let queue = format!("contract.lease.{n}");
            let (status, _) = s.put(&format!("/v1/queues/{queue}/tasks/k"), json!({})).await;
            assert!(status.is_success());
            let lease = s.lease(&queue, json!({"lease": "1h"})).await;
            params.insert("lease_id".into(), lease[0]["lease_id"].as_str().unwrap().to_owned());
        }
        "retry_dead" | "delete_dead" => {
            let lane = format!("contract.dead.{n}");
            let (status, _) = s.put(&format!("/v1/queues/{lane}/tasks/{}", enc(&key)), json!({})).await;
            assert!(status.is_success());
            let lease = s.lease(&lane, json!({})).await;
            let id = lease[0]["lease_id"].as_str().unwrap();
            let (status, _) = s.post(&format!("/v1/leases/{id}/ack"), json!({"outcome": "fail"})).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            params.insert("queue".into(), lane);
        }
        _ => {}
    }
}

/// The operation's parameters, resolved: (name, in, schema). A query parameter that
/// takes an empty value (`allowEmptyValue`) has `""` in its schema, as OpenAPI reads it.
fn parameters(doc: &Doc, operation: &Value) -> Vec<(String, String, Value)> {
    operation["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let p = doc.resolve(p);
            let mut schema = p["schema"].clone();
            if p["allowEmptyValue"] == true {
                schema = json!({"anyOf": [schema, {"const": ""}]});
            }
            (p["name"].as_str().unwrap().to_owned(), p["in"].as_str().unwrap().to_owned(), schema)
        })
        .collect()
}

/// A value as a query string carries it: text (a string without its quotes).
fn query_text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// A path's template filled in with `params` (percent-encoded), plus `query`.
fn fill(template: &str, params: &HashMap<String, String>, query: &str) -> String {
    let mut path = template.to_owned();
    for (name, value) in params {
        path = path.replace(&format!("{{{name}}}"), &enc(value));
    }
    if query.is_empty() { path } else { format!("{path}?{query}") }
}

/// Path parameters from the document's examples (an unconstrained one, such as a lease
/// id, is the text `x`).
fn example_params(doc: &Doc, operation: &Value) -> HashMap<String, String> {
    parameters(doc, operation)
        .into_iter()
        .filter(|(_, place, _)| place == "path")
        .map(|(name, _, schema)| {
            let value = example_of(doc, &schema);
            (name, value.as_str().unwrap_or("x").to_owned())
        })
        .collect()
}

/// The request bodies the document calls valid: its examples and the smallest body,
/// then each of their fields at the edges of what the document allows, with why.
fn valid_bodies(doc: &Doc, operation: &Value) -> Vec<(Option<Value>, Reason)> {
    let Some(body) = operation.get("requestBody") else { return vec![(None, "no body")] };
    let schema = &body["content"]["application/json"]["schema"];
    let resolved = doc.resolve(schema);
    let mut bodies: Vec<(Option<Value>, Reason)> =
        resolved["examples"].as_array().into_iter().flatten().map(|e| (Some(e.clone()), "example")).collect();
    let mut bare = resolved.clone();
    bare.as_object_mut().unwrap().remove("examples");
    bodies.push((Some(example_of(doc, &bare)), "example"));
    if body["required"] != true {
        bodies.push((None, "no body"));
    }
    for (body, _) in &bodies {
        let Some(body) = body else { continue };
        assert!(doc.valid(schema, body), "the document's example {body} does not match its own schema {schema}");
    }
    let mut extremes = Vec::new();
    for (base, _) in &bodies {
        let Some(base) = base else { continue };
        variants(doc, schema, base, &[], schema, true, &mut extremes);
    }
    bodies.extend(extremes.into_iter().map(|(body, reason)| (Some(body), reason)));
    bodies
}

/// For a body of a batch that the document refuses only for some of its items (the
/// batch itself is well formed, within its limit): the indexes of those items.
fn invalid_items(doc: &Doc, schema: &Value, items: &str, body: &Value) -> Option<Vec<usize>> {
    let list = body.get(items)?.as_array()?;
    let batch = &doc.resolve(schema)["properties"][items];
    let mut emptied = body.clone();
    emptied[items] = json!([]);
    let within = list.len() as u64 <= batch["maxItems"].as_u64().unwrap_or(u64::MAX);
    if !within || !doc.valid(schema, &emptied) {
        return None;
    }
    Some((0..list.len()).filter(|i| !doc.valid(&batch["items"], &list[*i])).collect())
}

/// Whether a batch's result shows its item refused.
fn item_refused(result: &Value) -> bool {
    result.get("error").is_some_and(Value::is_object)
        && result.get("status").is_none_or(|s| s.as_u64().is_some_and(|s| (400..500).contains(&s)))
}

async fn server(tokens: bool) -> TestServer {
    let mut options = HttpOptions::default();
    if tokens {
        options.tokens = vec![TOKEN.into()];
    }
    // The calendar the document's examples of tasks in business time name.
    let office = json!({"tz": "Asia/Shanghai", "hours": {"mon": ["09:00-18:00"], "tue": ["09:00-18:00"],
        "wed": ["09:00-18:00"], "thu": ["09:00-18:00"], "fri": ["09:00-18:00"]}});
    let spec = serde_json::from_value(office).unwrap();
    let office = punctual_core::Calendar::new(spec).unwrap();
    let config =
        EngineConfig::default().calendar(punctual_core::calendar::CalendarName::new("office").unwrap(), office);
    TestServer::build(options, config, None).await
}

async fn document(s: &TestServer, token: Option<&'static str>) -> Doc {
    let call = Call { method: Method::GET, path: "/openapi.json".into(), body: None, token };
    let answer = send(s, &call).await;
    assert_eq!(answer.status, StatusCode::OK);
    Doc::new(strict_batches(serde_json::from_slice(&answer.body).unwrap()))
}

/// The document with each batch's items read strictly. It documents them as "an item,
/// or any other value, which is refused in its own result" (the `anyOf` of the item's
/// schema and an open one, API.md); the checks take the item's schema as the items'
/// and hold every value it refuses to be refused in its own result ([`invalid_items`]).
fn strict_batches(mut root: Value) -> Value {
    for (id, items) in BATCHES {
        let operation = root["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .find(|operation| operation["operationId"] == *id)
            .unwrap_or_else(|| panic!("no operation {id}"));
        let body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap();
        let pointer = format!("{}/properties/{items}/items", body.trim_start_matches('#'));
        let documented = root.pointer_mut(&pointer).unwrap();
        let branches = documented["anyOf"].as_array().unwrap_or_else(|| panic!("{id}: items {documented}"));
        assert_eq!(branches.len(), 2, "{id}: an item, or any other value");
        assert!(branches[1].get("type").is_none() && branches[1].get("$ref").is_none(), "{id}: open");
        *documented = branches[0].clone();
    }
    root
}

/// Whether the schema itself names a value (an example, an enum, a least value), so
/// that a request may send it: an unconstrained string (a cursor) has none.
fn names_a_value(doc: &Doc, schema: &Value) -> bool {
    let schema = declared(doc, schema);
    ["examples", "example", "enum", "const", "minimum"].iter().any(|k| schema.get(k).is_some())
}

/// A parameter's schema as declared, without the empty value [`parameters`] adds.
fn declared<'a>(doc: &'a Doc, schema: &'a Value) -> &'a Value {
    match schema["anyOf"].as_array() {
        Some(branches) if branches.get(1) == Some(&json!({"const": ""})) => doc.resolve(&branches[0]),
        _ => doc.resolve(schema),
    }
}

/// The kinds of boundary that valid requests must reach (see [`Reason`]): each is
/// tried at least once, so that a document whose constraints the generator no longer
/// reads fails here instead of passing with fewer checks.
const BOUNDARIES: &[Reason] =
    &["example", "minimum", "maximum", "enum value", "null", "date-time", "bound as text", "empty value", "longest"];

/// The kinds of constraint that invalid requests must break.
const BREAKS: &[Reason] = &[
    "type",
    "null",
    "empty",
    "control character",
    "minimum",
    "maximum",
    "bound as text",
    "maxLength",
    "maxItems",
    "enum",
    "item type",
    "date-time",
    "unknown field",
    "required",
    "no body",
    "examples together",
    "batch item",
];

/// Valid query strings for an operation: none; every parameter that names a value at
/// it; and each parameter alone at each of its edges (its bounds, each value of its
/// enum, an empty value where it is allowed).
fn valid_queries(doc: &Doc, operation: &Value) -> Vec<(String, Reason)> {
    let query = parameters(doc, operation)
        .into_iter()
        .filter(|(_, place, schema)| place == "query" && names_a_value(doc, schema))
        .map(|(name, _, schema)| format!("{name}={}", enc(&query_text(&example_of(doc, &schema)))))
        .collect::<Vec<_>>()
        .join("&");
    let mut queries = vec![(String::new(), "example")];
    if !query.is_empty() {
        queries.push((query, "example"));
    }
    for (name, place, schema) in parameters(doc, operation) {
        if place != "query" {
            continue;
        }
        for (value, reason) in extremes(doc, &schema) {
            let text = query_text(&value);
            let reason = if text.is_empty() { "empty value" } else { reason };
            let as_sent = if value.is_number() || text.is_empty() { value.clone() } else { json!(text) };
            if !value.is_null() && doc.valid(&schema, &as_sent) {
                queries.push((format!("{name}={}", enc(&text)), reason));
            }
        }
    }
    queries
}

#[tokio::test]
async fn valid_requests_from_the_document_succeed_and_answer_as_documented() {
    let s = server(false).await;
    let doc = document(&s, None).await;
    let mut checked = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for (template, method, operation) in doc.operations() {
        let id = operation["operationId"].as_str().unwrap().to_owned();
        let queries = valid_queries(&doc, &operation);
        // Path parameters at their longest, too.
        let mut longest = vec![None];
        for (name, place, schema) in parameters(&doc, &operation) {
            if let Some(max) = doc.resolve(&schema)["maxLength"].as_u64().filter(|_| place == "path") {
                longest.push(Some((name, "x".repeat(max as usize))));
            }
        }
        let bodies = valid_bodies(&doc, &operation);
        // Every body with no query, the first body with each query.
        let cases = bodies.iter().enumerate().map(|(i, (b, why))| (i, b, &queries[0].0, None, *why));
        let with_queries = queries.iter().skip(1).map(|(q, why)| (0, &bodies[0].0, q, None, *why));
        let at_length =
            longest.into_iter().flatten().map(|long| (0, &bodies[0].0, &queries[0].0, Some(long), "longest"));
        let batch = BATCHES.iter().find(|(op, _)| *op == id).map(|(_, items)| *items);
        for (i, body, query, long, why) in cases.chain(with_queries).chain(at_length) {
            let mut params = example_params(&doc, &operation);
            if let Some(key) = params.get_mut("key") {
                key.push_str(&format!("-{i}"));
            }
            if let Some((name, value)) = &long {
                params.insert(name.clone(), value.clone());
            }
            prepare(&s, &id, &mut params).await;
            let path = fill(&template, &params, query);
            let call = Call { method: method.clone(), path, body: body.clone(), token: None };
            let answer = send(&s, &call).await;
            let answered = conforms(&doc, &operation, &call, &answer);
            assert!(
                answer.status.is_success(),
                "{method} {} {}: a valid request answered {}: {}",
                call.path,
                shown(&call.body),
                answer.status,
                String::from_utf8_lossy(&answer.body)
            );
            // No item of a valid batch is refused as invalid (an ack of an example's
            // lease, which does not exist, is refused as unknown: 404).
            if batch.is_some() {
                for (n, result) in answered["results"].as_array().unwrap().iter().enumerate() {
                    assert_ne!(
                        result["error"]["code"],
                        "invalid_argument",
                        "{method} {} {}: valid item {n} was refused: {result}",
                        call.path,
                        shown(&call.body)
                    );
                }
            }
            reached.insert(why);
        }
        checked.insert(id);
    }
    assert!(checked.len() >= 21, "too few operations checked: {checked:?}");
    let missed: Vec<_> = BOUNDARIES.iter().filter(|b| !reached.contains(*b)).collect();
    assert!(missed.is_empty(), "no valid request stood at {missed:?}; reached {reached:?}");
}

#[tokio::test]
async fn requests_that_break_the_document_are_refused_as_documented() {
    let s = server(false).await;
    let doc = document(&s, None).await;
    let mut refused = 0;
    let mut broken_by = BTreeSet::new();
    for (template, method, operation) in doc.operations() {
        let id = operation["operationId"].as_str().unwrap().to_owned();
        let mut calls: Vec<(Call, Option<Vec<usize>>, Reason)> = Vec::new();
        let mut params = example_params(&doc, &operation);
        prepare(&s, &id, &mut params).await;
        let valid = valid_bodies(&doc, &operation);
        let valid_body = valid[0].0.clone();

        // Parameters: each value the document refuses (an empty one in a path is
        // another path).
        for (name, place, schema) in parameters(&doc, &operation) {
            let example = example_of(&doc, &schema);
            for (value, reason) in candidates(&doc, &schema, &example) {
                let Some(text) = value.as_str().filter(|t| place == "query" || !t.is_empty()) else { continue };
                // A query value is text; a numeric parameter reads it as a number.
                let numeric = matches!(declared(&doc, &schema)["type"].as_str(), Some("integer" | "number"));
                let as_sent = match text.parse::<f64>() {
                    Ok(n) if numeric && place == "query" => json!(n),
                    _ => json!(text),
                };
                if doc.valid(&schema, &as_sent) {
                    continue;
                }
                let call = if place == "path" {
                    let mut bad = params.clone();
                    bad.insert(name.clone(), text.to_owned());
                    Call {
                        method: method.clone(),
                        path: fill(&template, &bad, ""),
                        body: valid_body.clone(),
                        token: None,
                    }
                } else {
                    let query = format!("{name}={}", enc(text));
                    Call {
                        method: method.clone(),
                        path: fill(&template, &params, &query),
                        body: valid_body.clone(),
                        token: None,
                    }
                };
                calls.push((call, None, reason));
            }
            let numeric = matches!(declared(&doc, &schema)["type"].as_str(), Some("integer" | "number"));
            for number in [-1.0, 0.0, 1001.0, 1e10, 2.5] {
                if place == "query" && numeric && !doc.valid(&schema, &json!(number)) {
                    let query = format!("{name}={number}");
                    let path = fill(&template, &params, &query);
                    let call = Call { method: method.clone(), path, body: valid_body.clone(), token: None };
                    calls.push((call, None, "minimum"));
                }
            }
        }

        // Bodies: each constraint of the body's schema broken once.
        if let Some(body) = operation.get("requestBody") {
            if body["required"] == true {
                let path = fill(&template, &params, "");
                calls.push((Call { method: method.clone(), path, body: None, token: None }, None, "no body"));
            }
            let schema = body["content"]["application/json"]["schema"].clone();
            // From the examples and their fields at their bounds (the other edges would
            // multiply the requests and break nothing new).
            let mut broken = Vec::new();
            for (base, why) in &valid {
                let Some(base) = base.as_ref().filter(|_| ["example", "minimum", "maximum"].contains(why)) else {
                    continue;
                };
                variants(&doc, &schema, base, &[], &schema, false, &mut broken);
            }
            // Two valid examples together may break a rule between fields.
            let examples = doc.resolve(&schema)["examples"].as_array().cloned().unwrap_or_default();
            for a in &examples {
                for b in &examples {
                    let mut merged = a.clone();
                    for (k, v) in b.as_object().unwrap() {
                        merged[k] = v.clone();
                    }
                    if !doc.valid(&schema, &merged) {
                        broken.push((merged, "examples together"));
                    }
                }
            }
            let batch = BATCHES.iter().find(|(op, _)| *op == id).map(|(_, items)| *items);
            for (body, reason) in broken {
                let invalid_items = batch.and_then(|items| invalid_items(&doc, &schema, items, &body));
                let reason = if invalid_items.is_some() { "batch item" } else { reason };
                let path = fill(&template, &params, "");
                calls.push((
                    Call { method: method.clone(), path, body: Some(body), token: None },
                    invalid_items,
                    reason,
                ));
            }
        }

        assert!(
            !calls.is_empty() || (operation.get("parameters").is_none() && operation.get("requestBody").is_none()),
            "{method} {template}: the document states constraints, and no request broke one"
        );
        for (call, invalid_items, reason) in calls {
            let answer = send(&s, &call).await;
            let body = conforms(&doc, &operation, &call, &answer);
            if let Some(invalid_items) = invalid_items {
                assert_eq!(answer.status, StatusCode::OK, "{} {}: a batch answers 200", call.method, shown(&call.body));
                for i in invalid_items {
                    assert!(
                        item_refused(&body["results"][i]),
                        "{} {} {}: invalid item {i} was not refused: {body}",
                        call.method,
                        call.path,
                        shown(&call.body)
                    );
                }
            } else {
                assert!(
                    answer.status.is_client_error(),
                    "{} {} {}: an invalid request ({reason}) answered {}: {}",
                    call.method,
                    &call.path[..call.path.len().min(120)],
                    shown(&call.body),
                    answer.status,
                    String::from_utf8_lossy(&answer.body)
                );
            }
            broken_by.insert(reason);
            refused += 1;
        }
    }
    assert!(refused > 200, "only {refused} invalid requests were made");
    let missed: Vec<_> = BREAKS.iter().filter(|b| !broken_by.contains(*b)).collect();
    assert!(missed.is_empty(), "no invalid request broke {missed:?}; broke {broken_by:?}");
}

#[tokio::test]
async fn auth_is_documented_exactly_when_the_server_has_tokens() {
    let open = server(false).await;
    let doc = document(&open, None).await;
    let text = doc.root.to_string();
    // Security requirements are members of the document and of its operations (a
    // queue's SMTP settings have a `security` member too, which requires nothing).
    let operations = doc.operations().into_iter().map(|(_, _, operation)| operation);
    let required = std::iter::once(doc.root.clone()).chain(operations).any(|o| o.get("security").is_some());
    assert!(!required && !text.contains("securitySchemes"), "no tokens, no security");
    assert!(!text.contains("\"401\""), "no tokens, no 401");

    let guarded = server(true).await;
    let doc = document(&guarded, Some(TOKEN)).await;
    assert_eq!(doc.root["components"]["securitySchemes"]["bearer"], json!({"type": "http", "scheme": "bearer"}));
    assert_eq!(doc.root["security"], json!([{"bearer": []}]));
    for (template, method, operation) in doc.operations() {
        let needs_token = operation.get("security") != Some(&json!([]));
        assert_eq!(needs_token, operation["responses"].get("401").is_some(), "{method} {template}");
        let params = example_params(&doc, &operation);
        let body = valid_bodies(&doc, &operation).into_iter().next().unwrap().0;
        for token in [None, Some("wrong"), Some(TOKEN)] {
            let call = Call { method: method.clone(), path: fill(&template, &params, ""), body: body.clone(), token };
            let answer = send(&guarded, &call).await;
            conforms(&doc, &operation, &call, &answer);
            if needs_token && token != Some(TOKEN) {
                assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {template} with {token:?}");
                assert_eq!(answer.headers["www-authenticate"], "Bearer");
            } else {
                assert_ne!(answer.status, StatusCode::UNAUTHORIZED, "{method} {template} with {token:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_method_a_documented_path_does_not_take_answers_the_documented_405() {
    let s = server(false).await;
    let doc = document(&s, None).await;
    let response = doc.resolve(&doc.root["components"]["responses"]["MethodNotAllowed"]).clone();
    let schema = &response["content"]["application/json"]["schema"];
    for (template, item) in doc.root["paths"].as_object().unwrap() {
        let mut documented: BTreeSet<String> = item.as_object().unwrap().keys().map(|m| m.to_uppercase()).collect();
        if documented.contains("GET") {
            documented.insert("HEAD".into());
        }
        let params: HashMap<String, String> = item
            .as_object()
            .unwrap()
            .values()
            .next()
            .map(|operation| example_params(&doc, operation))
            .unwrap_or_default();
        for method in [Method::GET, Method::PUT, Method::POST, Method::DELETE, Method::PATCH] {
            if documented.contains(method.as_str()) {
                continue;
            }
            let call = Call { method: method.clone(), path: fill(template, &params, ""), body: None, token: None };
            let answer = send(&s, &call).await;
            assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {template}");
            let allowed: BTreeSet<String> =
                answer.headers["allow"].to_str().unwrap().split(',').map(|m| m.trim().to_owned()).collect();
            assert_eq!(allowed, documented, "{method} {template}: Allow");
            let body: Value = serde_json::from_slice(&answer.body).unwrap();
            assert!(doc.validator(schema, true).is_valid(&body), "{method} {template}: {body}");
            assert_eq!(body["error"]["code"], "method_not_allowed");
        }
    }
}
