//! Bearer-token auth, table-driven over every `/v1` route of API.md.
//!
//! Guards against a route that was added without the auth layer (open to anyone), auth
//! checked after routing (so unknown paths leak 404s and route names), a token compared
//! by prefix or accepted without the `Bearer` scheme, tokens from `PUNCTUAL_TOKENS`
//! ignored, `/healthz` locked (load balancers cannot probe it), `/metrics`, the
//! dashboard's data or the OpenAPI document left open, and unauthorized requests that
//! still change something. The dashboard's page and assets are open: they hold no data.

mod common;

use common::{Api, Resp, server_builder, start, task_path};
use reqwest::Method;
use serde_json::{Value, json};

/// Every `/v1` route of API.md with a plausible body, and unknown `/v1` paths.
fn v1_routes() -> Vec<(Method, String, Option<Value>)> {
    let lease = "bm90LWEtcmVhbC1sZWFzZQ";
    vec![
        (Method::PUT, task_path("q", "new"), Some(json!({"delay": "1h"}))),
        (Method::POST, "/v1/queues/q/tasks".into(), Some(json!({"tasks": [{"key": "b", "delay": "1h"}]}))),
        (Method::GET, task_path("q", "k"), None),
        (Method::DELETE, task_path("q", "k"), None),
        (Method::DELETE, "/v1/queues/q/tags/t".into(), None),
        (Method::GET, "/v1/queues/q/tasks?state=scheduled&limit=10".into(), None),
        (Method::GET, "/v1/queues".into(), None),
        (Method::GET, "/v1/queues/q".into(), None),
        (Method::POST, "/v1/queues/q/lease".into(), Some(json!({"max": 1}))),
        (Method::POST, format!("/v1/leases/{lease}/ack"), Some(json!({"outcome": "done"}))),
        (Method::POST, "/v1/acks".into(), Some(json!({"acks": [{"lease_id": lease, "outcome": "done"}]}))),
        (Method::POST, format!("/v1/leases/{lease}/extend"), Some(json!({"lease": "30s"}))),
        (Method::GET, "/v1/queues/q/dead".into(), None),
        (Method::POST, "/v1/queues/q/dead/k/retry".into(), Some(json!({}))),
        (Method::DELETE, "/v1/queues/q/dead/k".into(), None),
        // Unknown paths under /v1: auth comes before routing.
        (Method::GET, "/v1/nope".into(), None),
        (Method::POST, "/v1/queues/q/unknown".into(), Some(json!({}))),
        (Method::GET, "/v1".into(), None),
    ]
}

/// The other paths that need the token when tokens are set.
fn guarded_operations() -> Vec<(Method, String, Option<Value>)> {
    vec![(Method::GET, "/metrics".into(), None), (Method::GET, "/openapi.json".into(), None)]
}

fn send(api: &Api, route: &(Method, String, Option<Value>), authorization: Option<&str>) -> Resp {
    let (method, path, body) = route;
    let body = body.as_ref().map(|b| serde_json::to_vec(b).expect("JSON"));
    api.raw(method.clone(), path, body, Some("application/json"), authorization)
}

fn all_routes() -> Vec<(Method, String, Option<Value>)> {
    v1_routes().into_iter().chain(guarded_operations()).collect()
}

/// Asserts every route refuses each bad `Authorization` header with 401 and the error
/// body.
fn check_refused(api: &Api, bad: &[Option<&str>]) {
    let mut failures = Vec::new();
    for route in &all_routes() {
        for authorization in bad {
            let resp = send(api, route, *authorization);
            if resp.status != 401 || resp.json["error"]["code"] != "unauthorized" {
                failures.push(format!(
                    "{} {} with Authorization {authorization:?}: expected 401 unauthorized, got {} {}",
                    route.0, route.1, resp.status, resp.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} requests not refused:\n{}", failures.len(), failures.join("\n"));
}

/// Asserts every route lets each good token through (any status but 401, and no 5xx).
fn check_accepted(api: &Api, good: &[&str]) {
    let mut failures = Vec::new();
    for route in &all_routes() {
        for token in good {
            let resp = send(api, route, Some(&format!("Bearer {token}")));
            if resp.status == 401 || resp.status >= 500 {
                failures.push(format!(
                    "{} {} with token {token:?}: expected to pass auth, got {} {}",
                    route.0, route.1, resp.status, resp.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} requests not let through:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn tokens_from_the_flag_guard_every_v1_route() {
    let server = start(server_builder().args(["--token", "s3cret", "--token", "other"]));
    let api = Api::new(server.url());
    let authed = api.token("s3cret");
    authed.create("q", "k", json!({"delay": "1h", "payload": {"keep": true}}));
    let before = authed.task("q", "k").json;

    check_refused(
        &api,
        &[
            None,
            Some("Bearer wrong"),
            Some("s3cret"),
            Some("Bearer s3cre"),
            Some("Bearer s3cret2"),
            Some("Bearer "),
            Some("Basic czNjcmV0"),
        ],
    );
    let after = authed.task("q", "k");
    after.expect(200, "the task survives refused requests (DELETE among them)");
    assert_eq!(after.json, before, "refused requests changed nothing");
    authed.task("q", "new").expect_error(404, "not_found", None, "a refused PUT stored nothing");

    check_accepted(&api, &["s3cret", "other"]);
}

#[test]
fn tokens_from_the_environment_guard_every_v1_route() {
    let server = start(server_builder().env("PUNCTUAL_TOKENS", "alpha,beta"));
    let api = Api::new(server.url());
    check_refused(&api, &[None, Some("Bearer s3cret"), Some("Bearer alpha,beta"), Some("Bearer alph")]);
    check_accepted(&api, &["alpha", "beta"]);
}

#[test]
fn healthz_is_open_and_the_rest_needs_the_token() {
    let server = start(server_builder().args(["--token", "s3cret"]));
    let api = Api::new(server.url());
    api.get("/healthz").expect(200, "GET /healthz without a token");
    api.raw(Method::GET, "/healthz", None, None, Some("Bearer wrong")).expect(200, "GET /healthz with a wrong token");
    for (_, path, _) in guarded_operations() {
        api.get(&path).expect_error(401, "unauthorized", None, &format!("GET {path} without a token"));
        let resp = api.token("s3cret").get(&path);
        resp.expect(200, &format!("GET {path} with the token"));
    }
    api.get("/v1/nope").expect_error(401, "unauthorized", None, "an unknown /v1 path without a token");
    api.token("s3cret").get("/v1/nope").expect_error(404, "not_found", None, "an unknown /v1 path with the token");
}

#[test]
fn the_dashboard_page_loads_without_a_token_but_its_data_needs_one() {
    let server = start(server_builder().args(["--token", "s3cret"]));
    let api = Api::new(server.url());
    for path in ["/", "/dashboard/app.js", "/dashboard/style.css"] {
        let resp = api.get(path);
        resp.expect(200, &format!("GET {path} without a token"));
        assert!(!resp.text.contains("s3cret"), "{path} holds no secret");
    }
    for path in ["/v1/queues", "/v1/queues/q/activity", "/v1/queues/q/dead"] {
        api.get(path).expect_error(401, "unauthorized", None, &format!("GET {path} (a data call) without a token"));
        api.token("s3cret").get(path).expect(200, &format!("GET {path} with the token"));
    }
}

#[test]
fn without_tokens_the_api_is_open() {
    let server = common::start_server();
    let api = Api::of(&server);
    api.create("q", "k", json!({"delay": "1h"}));
    api.task("q", "k").expect(200, "GET without any token on a server without tokens");
    api.get("/metrics").expect(200, "GET /metrics on a server without tokens");
}
