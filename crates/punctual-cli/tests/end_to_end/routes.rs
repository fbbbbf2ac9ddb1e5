//! Guards against a binary that does not wire the server it is built from: a route
//! family missing from `punctual serve`, answers without API.md's JSON content type or
//! error body, a long poll cut short by the socket layer.
//!
//! One smoke test per route family of API.md through the real binary, over real HTTP.
//! What each route does (every status, field, outcome and refusal) is asserted once, in
//! process, by the server's own tests (`crates/punctual-server/tests/`: `tasks.rs`,
//! `leases.rs`, `routes.rs`, `bad_input.rs`, `long_poll.rs`, `auth.rs`, `openapi.rs`,
//! `observability.rs`): the binary serves that same `app`, so one request per family
//! proves the wiring.

use crate::common;

use common::{Api, assert_task_shape, start_server, task_path};
use serde_json::json;

fn lease_id(lease: &serde_json::Value) -> &str {
    lease["lease_id"].as_str().unwrap_or_else(|| panic!("a lease has a string `lease_id`: {lease}"))
}

#[test]
fn the_task_routes_answer_through_the_binary() {
    let server = start_server();
    let api = Api::of(&server);
    let task = api.create("order.cancel", "order-1234", json!({"delay": "1h", "tags": ["pi-9"]}));
    assert_task_shape(&task);
    let resp = api.post("/v1/queues/order.cancel/tasks", json!({"tasks": [{"key": "b", "delay": "1h"}, {"delay": 1}]}));
    let results = resp.expect(200, "POST a batch")["results"].clone();
    assert_eq!(results[0], json!({"key": "b", "outcome": "created"}), "{results}");
    assert_eq!(results[1]["error"]["code"], "invalid_argument", "{results}");
    let got = api.task("order.cancel", "order-1234");
    assert_eq!(got.expect(200, "GET a task"), &task);
    let list = api.get("/v1/queues/order.cancel/tasks?state=scheduled&limit=1");
    assert_eq!(list.expect(200, "GET a list")["tasks"][0]["key"], "order-1234");
    assert!(list.json["next_cursor"].is_string(), "{}", list.text);
    assert_eq!(api.delete("/v1/queues/order.cancel/tags/pi-9").expect(200, "DELETE a tag"), &json!({"cancelled": 1}));
    api.delete(&task_path("order.cancel", "b")).expect(204, "DELETE a task");
    api.task("order.cancel", "b").expect_error(404, "not_found", None, "GET of a cancelled task");
    api.put(&task_path("q", "k"), json!({"delay": "soon"})).expect_error(400, "invalid_argument", Some("delay"), "PUT");
}

#[test]
fn the_lease_routes_answer_through_the_binary_and_a_long_poll_holds_its_request() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("q", "k", json!({"delay": "300ms"}));
    // Due in 300 ms: the answer comes through the socket once it falls due.
    let leases = api.lease("q", json!({"wait": "10s"}));
    assert_eq!(leases.len(), 1, "the long poll answers with the task once due: {leases:?}");
    let resp = api.extend(lease_id(&leases[0]), json!({"lease": "60s"}));
    let extended = resp.expect(200, "extend a lease").clone();
    api.ack(lease_id(&extended), json!({"outcome": "done"})).expect(204, "ack a lease");
    let resp = api.post("/v1/acks", json!({"acks": [{"lease_id": lease_id(&extended), "outcome": "done"}]}));
    assert_eq!(resp.expect(200, "POST /v1/acks")["results"][0]["status"], 409, "{}", resp.text);
    api.ack("garbage", json!({"outcome": "done"})).expect_error(404, "not_found", None, "ack of no lease");
}

#[test]
fn the_dead_routes_answer_through_the_binary() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("dead.q", "k", json!({"tags": ["t"]}));
    let fail = |api: &Api| {
        let lease = api.lease_one("dead.q");
        api.ack(lease_id(&lease), json!({"outcome": "fail", "error": "no"})).expect(204, "ack fail");
    };
    fail(&api);
    let dead = api.get("/v1/queues/dead.q/dead");
    assert_eq!(dead.expect(200, "GET the dead list")["tasks"][0]["key"], "k", "{}", dead.text);
    // API.md gives retry no body.
    let resp = api.raw(reqwest::Method::POST, "/v1/queues/dead.q/dead/k/retry", None, None, None);
    assert_eq!(resp.expect(200, "retry a dead task")["state"], "scheduled", "{}", resp.text);
    fail(&api);
    let resp = api.post("/v1/queues/dead.q/dead/retry", json!({"tag": "t"}));
    assert_eq!(resp.expect(200, "retry dead tasks in bulk"), &json!({"retried": 1}));
    fail(&api);
    api.delete("/v1/queues/dead.q/dead/k").expect(204, "DELETE a dead task");
    api.task("dead.q", "k").expect_error(404, "not_found", None, "a deleted dead task");
}

#[test]
fn the_queue_and_operations_routes_answer_through_the_binary() {
    let server = start_server();
    let api = Api::of(&server);
    api.create("q", "k", json!({"delay": "1h"}));
    let queues = api.get("/v1/queues");
    assert_eq!(queues.expect(200, "GET /v1/queues")["queues"][0]["name"], "q", "{}", queues.text);
    assert_eq!(api.get("/v1/queues/q").expect(200, "GET a queue")["scheduled"], 1);
    api.get("/v1/queues/q/activity").expect(200, "GET a queue's activity");
    api.get("/healthz").expect(200, "GET /healthz");
    api.get("/readyz").expect(200, "GET /readyz");
    let metrics = api.get("/metrics");
    metrics.expect(200, "GET /metrics");
    assert!(metrics.content_type.starts_with("text/plain"), "Prometheus text: {}", metrics.content_type);
    assert!(metrics.text.contains("punctual_tasks{queue=\"q\",state=\"scheduled\"} 1"), "{}", metrics.text);
    let page = api.get("/");
    page.expect(200, "GET / (dashboard)");
    assert!(page.content_type.starts_with("text/html"), "the dashboard is HTML: {}", page.content_type);
    let doc = api.get("/openapi.json");
    assert!(doc.expect(200, "GET /openapi.json")["openapi"].as_str().is_some_and(|v| v.starts_with('3')));
    api.get("/v1/nothing/here").expect_error(404, "not_found", None, "an unknown route");
}
