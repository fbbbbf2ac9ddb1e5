//! `/openapi.json` documents every route of API.md, with its method. Guards against a
//! route served but missing from the document (or documented under another path).

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use common::{API_ROUTES, TestServer};

/// Routes named in API.md itself (`METHOD /path` in backticks), when the shared copy is
/// beside the repository.
fn routes_in_api_md() -> Option<Vec<(String, String)>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/API.md");
    let text = std::fs::read_to_string(path).ok()?;
    let mut routes = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        let Some((method, rest)) = quoted.split_once(' ') else { continue };
        if !["GET", "PUT", "POST", "DELETE"].contains(&method) || !rest.starts_with('/') {
            continue;
        }
        let path = rest.split(['?', ' ']).next().unwrap_or(rest);
        routes.push((method.to_owned(), path.to_owned()));
    }
    Some(routes)
}

/// Routes API.md already gives for work not built yet, and the issue that builds them.
/// None may be served yet: one that lands moves to `API_ROUTES`, so this list only
/// shrinks, and a route API.md adds is in one of the two.
const NOT_YET_SERVED: &[(&str, &str, &str)] = &[];

#[tokio::test]
async fn every_route_of_api_md_is_documented() {
    let s = TestServer::start().await;
    let (status, doc) = s.get("/openapi.json").await;
    assert_eq!(status, 200);
    let mut routes: Vec<(String, String)> =
        API_ROUTES.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
    if let Some(from_doc) = routes_in_api_md() {
        assert!(from_doc.len() >= 20, "API.md lists too few routes: {from_doc:?}");
        let (pending, built): (Vec<_>, Vec<_>) = from_doc
            .into_iter()
            .partition(|(method, path)| NOT_YET_SERVED.iter().any(|(m, p, _)| m == method && p == path));
        for (method, path) in &pending {
            let issue = NOT_YET_SERVED.iter().find(|(m, p, _)| m == method && p == path).map(|(_, _, i)| i);
            assert!(
                doc["paths"][path][method.to_lowercase()].is_null(),
                "{method} {path} ({issue:?}) is served now: move it to API_ROUTES"
            );
        }
        for route in &built {
            assert!(routes.contains(route), "API.md has {route:?}, missing from this test's table");
        }
        routes.extend(built);
    }
    for (method, path) in routes {
        let operation = &doc["paths"][&path][method.to_lowercase()];
        assert!(operation.is_object(), "{method} {path} is not in /openapi.json");
        assert!(operation["responses"].is_object(), "{method} {path} documents no responses");
    }
}

#[tokio::test]
async fn documented_task_has_the_members_the_server_sends() {
    let s = TestServer::start().await;
    // With a trace context, so that the one field left out when there is none is sent too.
    let req = axum::http::Request::builder()
        .method(axum::http::Method::PUT)
        .uri("/v1/queues/q/tasks/k")
        .header("content-type", "application/json")
        .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let (_, body) = s.call(req).await;
    let mut sent: Vec<String> = body["task"].as_object().unwrap().keys().cloned().collect();
    let (_, doc) = s.get("/openapi.json").await;
    let mut documented: Vec<String> =
        doc["components"]["schemas"]["Task"]["properties"].as_object().unwrap().keys().cloned().collect();
    sent.sort();
    documented.sort();
    assert_eq!(sent, documented);
}
