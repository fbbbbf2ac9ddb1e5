//! Auth over every route: with tokens set, every path but /healthz, /readyz and the
//! dashboard's page and assets needs a valid bearer token, checked before routing; without tokens nothing does. Guards
//! against a route added without auth, and against auth that routing can bypass.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

mod common;

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
