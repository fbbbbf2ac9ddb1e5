//! Guards against queue routes that answer as the document does not say (issue Q,
//! found by schemathesis): a queue whose settings were deleted answering `GET` and
//! `PATCH` as if it still had them, and a purge refusing the empty `?state=` that
//! lists take as none.
//!
//! A queue without settings (never set, or deleted): `GET`, `PATCH` and `DELETE` of its
//! settings answer `404`, paused or not; pause and resume work, answered with the
//! built-in defaults it runs with.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use axum::http::{Method, StatusCode};
use common::{TestServer, code};
use serde_json::json;

const SETTINGS: &str = "/v1/queues/q/settings";

#[tokio::test]
async fn a_queue_without_settings_is_404_to_their_routes_and_pauses_with_the_built_in_defaults() {
    let s = TestServer::start().await;
    for (method, body) in [(Method::GET, None), (Method::PATCH, Some(json!({"rate": "1/1s"}))), (Method::DELETE, None)]
    {
        let (status, answer) = s.send(method.clone(), SETTINGS, body).await;
        assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "{method} before any: {answer}");
    }
    let (status, paused) = s.post("/v1/queues/q/pause", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!((&paused["paused"], &paused["source"], &paused["action"]), (&json!(true), &json!("api"), &json!(null)));
    assert_eq!(paused["defaults"]["max_attempts"], 20, "the built-in defaults: {paused}");
    let (status, _) = s.get(SETTINGS).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "paused, still without settings");
    let (status, _) = s.send(Method::PATCH, SETTINGS, Some(json!({"rate": "1/1s"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing to change while paused either");
    let (status, listed) = s.get("/v1/queues/q").await;
    assert_eq!((status, listed["paused"].clone()), (StatusCode::OK, json!(true)), "the pause shows on the queue");

    let (status, created) = s.put(SETTINGS, json!({"defaults": {"max_attempts": 3}})).await;
    assert_eq!((status, created["paused"].clone()), (StatusCode::CREATED, json!(true)), "{created}");
    let (status, patched) = s.send(Method::PATCH, SETTINGS, Some(json!({"rate": "1/1s"}))).await;
    assert_eq!((status, patched["defaults"]["max_attempts"].clone()), (StatusCode::OK, json!(3)), "{patched}");
    assert_eq!(s.delete(SETTINGS).await.0, StatusCode::NO_CONTENT);
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"rate": "1/1s"}));
        let (status, answer) = s.send(method.clone(), SETTINGS, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} once deleted: {answer}");
    }
    let (status, resumed) = s.post("/v1/queues/q/resume", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!((&resumed["paused"], &resumed["defaults"]["max_attempts"]), (&json!(false), &json!(20)), "{resumed}");
}

#[tokio::test]
async fn an_empty_purge_state_is_none_and_purges_every_state() {
    let s = TestServer::start().await;
    s.create("q", "a", json!({"delay": "1h"})).await;
    s.create("q", "b", json!({})).await;
    let (status, body) = s.delete("/v1/queues/q/tasks?state=").await;
    assert_eq!((status, body), (StatusCode::OK, json!({"cancelled": 2})));
    let (status, body) = s.delete("/v1/queues/q/tasks?state=leased").await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "invalid_argument"), "{body}");
}
