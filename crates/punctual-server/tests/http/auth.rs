//! Auth over every route: with tokens set, every path but /healthz, /readyz and the
//! dashboard's page and assets needs a valid bearer token, checked before routing; without tokens nothing does. Guards
//! against a route added without auth, and against auth that routing can bypass.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{API_ROUTES, TestServer, code, concrete};
use punctual_core::EngineConfig;
use punctual_server::HttpOptions;

async fn with_tokens() -> TestServer {
    let mut options = HttpOptions::default();
    options.tokens = vec!["s3cret".into(), "second-token".into()];
    TestServer::build(options, EngineConfig::default(), None).await
}

async fn status(
    s: &TestServer,
    method: &str,
    path: &str,
    authorization: Option<&str>,
) -> (StatusCode, serde_json::Value) {
    let mut req = Request::builder().method(method).uri(path).header("content-type", "application/json");
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    s.call(req.body(Body::from("{}")).unwrap()).await
}

#[tokio::test]
async fn every_route_but_health_needs_a_valid_token() {
    let s = with_tokens().await;
    let refused = [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cre"),
        Some("Bearer s3cret2"),
        Some("Basic czNjcmV0"),
        Some("s3cret"),
        Some("Bearer"),
        Some("Bearer "),
    ];
    for (method, template) in API_ROUTES {
        let path = concrete(template);
        // Health, and the dashboard's page (it holds no data; its data calls need the token).
        let open = matches!(*template, "/healthz" | "/readyz" | "/");
        for authorization in refused {
            let (got, body) = status(&s, method, &path, authorization).await;
            if open {
                assert_eq!(got, StatusCode::OK, "{method} {path} {authorization:?}");
            } else {
                assert_eq!(got, StatusCode::UNAUTHORIZED, "{method} {path} {authorization:?}");
                assert_eq!(code(&body), "unauthorized");
            }
        }
        for authorization in ["Bearer s3cret", "bearer second-token", "BEARER  s3cret "] {
            let (got, _) = status(&s, method, &path, Some(authorization)).await;
            assert_ne!(got, StatusCode::UNAUTHORIZED, "{method} {path} {authorization}");
        }
    }
}

#[tokio::test]
async fn unknown_paths_are_refused_before_routing() {
    let s = with_tokens().await;
    for path in ["/v1/nothing", "/v1/queues/q/tasks/k/extra", "/elsewhere"] {
        let (got, body) = status(&s, "GET", path, None).await;
        assert_eq!((got, code(&body)), (StatusCode::UNAUTHORIZED, "unauthorized"), "{path}");
        let (got, body) = status(&s, "GET", path, Some("Bearer s3cret")).await;
        assert_eq!((got, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{path}");
    }
    let response = {
        let req = Request::builder().uri("/v1/queues").body(Body::empty()).unwrap();
        tower::ServiceExt::oneshot(s.app.clone(), req).await.unwrap()
    };
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
}

#[tokio::test]
async fn without_tokens_nothing_needs_one() {
    let s = TestServer::start().await;
    for (method, template) in API_ROUTES {
        let path = concrete(template);
        let (got, _) = status(&s, method, &path, None).await;
        assert_ne!(got, StatusCode::UNAUTHORIZED, "{method} {path}");
        let (got, _) = status(&s, method, &path, Some("Bearer anything")).await;
        assert_ne!(got, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}

/// The headers every guarded route refuses (see `every_route_but_health_needs_a_valid_token`).
const REFUSED: [Option<&str>; 7] = [
    None,
    Some("Bearer wrong"),
    Some("s3cret"),
    Some("Bearer s3cre"),
    Some("Bearer s3cret2"),
    Some("Bearer "),
    Some("Basic czNjcmV0"),
];

/// Refused requests change nothing and a valid token never meets a server error.
/// First checked through the real binary (`crates/punctual-cli/tests/end_to_end/auth.rs`).
#[tokio::test]
async fn refused_requests_change_nothing_and_accepted_ones_never_fail_on_the_server() {
    let s = with_tokens().await;
    let bearer = Some("Bearer s3cret");
    let put = |path: &str, body: &str, authorization: Option<&str>| {
        let mut req = Request::builder().method("PUT").uri(path).header("content-type", "application/json");
        if let Some(value) = authorization {
            req = req.header("authorization", value);
        }
        s.call(req.body(Body::from(body.to_owned())).unwrap())
    };
    let (got, created) = put("/v1/queues/q/tasks/k", r#"{"delay": "1h", "payload": {"keep": true}}"#, bearer).await;
    assert_eq!(got, StatusCode::CREATED, "{created}");
    for authorization in REFUSED {
        for (method, template) in API_ROUTES {
            let (got, _) = status(&s, method, &concrete(template), authorization).await;
            let open = matches!(*template, "/healthz" | "/readyz" | "/");
            assert_eq!(got == StatusCode::UNAUTHORIZED, !open, "{method} {template} {authorization:?}");
        }
        let (got, _) = put("/v1/queues/q/tasks/new", r#"{"delay": "1h"}"#, authorization).await;
        assert_eq!(got, StatusCode::UNAUTHORIZED);
    }
    let (got, task) = status(&s, "GET", "/v1/queues/q/tasks/k", bearer).await;
    assert_eq!(
        (got, &task),
        (StatusCode::OK, &created["task"]),
        "refused requests (DELETE among them) changed nothing"
    );
    let (got, _) = status(&s, "GET", "/v1/queues/q/tasks/new", bearer).await;
    assert_eq!(got, StatusCode::NOT_FOUND, "a refused PUT stored nothing");

    for token in ["Bearer s3cret", "Bearer second-token"] {
        for (method, template) in API_ROUTES {
            let (got, body) = status(&s, method, &concrete(template), Some(token)).await;
            assert!(!got.is_server_error(), "{method} {template} with {token}: {got} {body}");
        }
    }
}

/// The dashboard's page and assets load without a token and hold none; its data calls
/// need one. First checked through the real binary (`crates/punctual-cli/tests/end_to_end/auth.rs`).
#[tokio::test]
async fn the_dashboard_page_and_assets_are_open_but_its_data_needs_the_token() {
    let s = with_tokens().await;
    for path in ["/", "/dashboard/app.js", "/dashboard/style.css"] {
        let (got, body) = status(&s, "GET", path, None).await;
        assert_eq!(got, StatusCode::OK, "GET {path} without a token");
        assert!(!body.to_string().contains("s3cret"), "{path} holds no secret");
    }
    for path in ["/v1/queues", "/v1/queues/q/activity", "/v1/queues/q/dead"] {
        let (got, body) = status(&s, "GET", path, None).await;
        assert_eq!((got, code(&body)), (StatusCode::UNAUTHORIZED, "unauthorized"), "GET {path} without a token");
        assert_eq!(status(&s, "GET", path, Some("Bearer s3cret")).await.0, StatusCode::OK, "GET {path} with it");
    }
}

/// `[[access]] rate`: a token past its limit is answered 429 with `Retry-After` and the
/// limit in the message, and nothing it sent is done; other tokens and the open routes
/// are not limited. Guards against a limit shared between tokens, counted after the
/// work, or answered without telling the client when to come back.
#[tokio::test]
async fn a_token_past_its_rate_is_answered_429_with_retry_after() {
    use tower::ServiceExt;

    let mut options = HttpOptions::default();
    options.tokens = vec!["unlimited".into()];
    let rate = punctual_core::policy::Rate::parse("3/1h").unwrap();
    options.access = vec![punctual_server::AccessToken::new("limited", &[], Vec::new()).limited_to(rate)];
    let s = TestServer::build(options, EngineConfig::default(), None).await;
    let put = |token: &str, key: &str| {
        Request::builder()
            .method("PUT")
            .uri(format!("/v1/queues/ingress.q/tasks/{key}"))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::from(r#"{"delay": "1h"}"#))
            .unwrap()
    };
    for n in 0..3 {
        let (status, _) = s.call(put("limited", &format!("k{n}"))).await;
        assert_eq!(status, StatusCode::CREATED, "request {n} within the rate");
    }
    let refused = s.app.clone().oneshot(put("limited", "k3")).await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((3590..=3600).contains(&retry_after), "Retry-After: {retry_after}");
    let body: serde_json::Value =
        serde_json::from_slice(&axum::body::to_bytes(refused.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(code(&body), "too_many_requests");
    assert!(body["error"]["message"].as_str().unwrap().contains("3/1h"), "{body}");

    let (status, _) = s.call(put("unlimited", "k3")).await;
    assert_eq!(status, StatusCode::CREATED, "another token is not limited");
    let (status, _) = status_of(&s, "/healthz").await;
    assert_eq!(status, StatusCode::OK, "the open routes are not limited");
    let (status, page) = s
        .call(
            Request::builder()
                .uri("/v1/queues/ingress.q/tasks")
                .header("authorization", "Bearer unlimited")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let keys: Vec<&str> = page["tasks"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 4, "the refused request did nothing: {keys:?}");
}

async fn status_of(s: &TestServer, path: &str) -> (StatusCode, serde_json::Value) {
    s.call(Request::builder().uri(path).body(Body::empty()).unwrap()).await
}
