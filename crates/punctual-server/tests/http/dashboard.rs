//! The dashboard's files as a browser loads them: the page, then `app.js` as an ES
//! module and every module it imports, by relative path, in turn.
//!
//! Guards against a module that is not served (the page would stay blank), one served
//! with a content type other than JavaScript (browsers refuse such a module script),
//! and a file cached without revalidation (a new binary's modules mixed with an old
//! one's). The same headers as the page's, with or without a token.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use crate::common;

use std::collections::BTreeSet;

use axum::http::{Request, StatusCode};
use common::TestServer;
use punctual_core::EngineConfig;
use punctual_server::HttpOptions;
use tower::ServiceExt;

/// The status, `Content-Type`, `Cache-Control` and text of `GET path`, without a token.
async fn fetch(s: &TestServer, path: &str) -> (StatusCode, String, String, String) {
    let request = Request::builder().uri(path).body(axum::body::Body::empty()).unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let (content_type, cache_control) = (header("content-type"), header("cache-control"));
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, content_type, cache_control, String::from_utf8(bytes.to_vec()).unwrap())
}

/// The modules a module imports (`from "./x.js"`), as paths.
fn imports(text: &str) -> Vec<String> {
    text.split(" from \"./")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(name, _)| format!("/dashboard/{name}")))
        .collect()
}

#[tokio::test]
async fn every_module_the_page_loads_is_javascript_revalidated_and_needs_no_token() {
    let mut options = HttpOptions::default();
    options.tokens = vec!["s3cret".into()];
    let s = TestServer::build(options, EngineConfig::default(), None).await;
    let (status, content_type, cache_control, page) = fetch(&s, "/").await;
    assert_eq!((status, cache_control.as_str()), (StatusCode::OK, "no-cache"));
    assert!(content_type.starts_with("text/html"), "the page: {content_type}");
    assert!(page.contains(r#"<script type="module" src="/dashboard/app.js">"#), "app.js is loaded as a module");

    let (status, content_type, cache_control, _) = fetch(&s, "/dashboard/style.css").await;
    assert_eq!(
        (status, content_type.as_str(), cache_control.as_str()),
        (StatusCode::OK, "text/css; charset=utf-8", "no-cache")
    );

    let mut loaded = BTreeSet::new();
    let mut pending = vec!["/dashboard/app.js".to_owned()];
    while let Some(path) = pending.pop() {
        if !loaded.insert(path.clone()) {
            continue;
        }
        let (status, content_type, cache_control, text) = fetch(&s, &path).await;
        assert_eq!(status, StatusCode::OK, "GET {path}");
        assert_eq!(content_type, "text/javascript; charset=utf-8", "GET {path}");
        assert_eq!(cache_control, "no-cache", "GET {path}");
        pending.extend(imports(&text));
    }
    for module in ["/dashboard/calendars.js", "/dashboard/queue.js", "/dashboard/dom.js", "/dashboard/history.js"] {
        assert!(loaded.contains(module), "{module} is loaded: {loaded:?}");
    }

    let (status, ..) = fetch(&s, "/dashboard/nowhere.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a file the dashboard has not");
}
