//! The config file's queues over HTTP: guards against issue 15 (9), misspelled queues
//! passing silently. A declared queue must be listed by `GET /v1/queues` before it
//! holds a task (with zero counts), and with `strict_queues` a schedule, each item of a
//! batch, and a lease naming an undeclared queue must be `404 not_found` naming the
//! nearest declared queue — and store nothing. Without `strict_queues` any valid name
//! stays open, as before.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use crate::common;

use axum::http::StatusCode;
use common::{TestServer, code};
use punctual_core::{EngineConfig, QueueName};
use punctual_server::HttpOptions;
use serde_json::{Value, json};

async fn server(strict: bool) -> TestServer {
    let mut options = HttpOptions::default();
    options.queues = ["flow.remind", "flow.escalate"].map(|q| QueueName::new(q).unwrap()).to_vec();
    options.strict_queues = strict;
    TestServer::build(options, EngineConfig::default(), None).await
}

fn names(list: &Value) -> Vec<(&str, u64)> {
    let queues = list["queues"].as_array().unwrap();
    queues.iter().map(|q| (q["name"].as_str().unwrap(), q["scheduled"].as_u64().unwrap())).collect()
}

const TYPO: &str = "no queue 'flow.remnid': did you mean 'flow.remind'?";

#[tokio::test]
async fn declared_queues_are_listed_before_their_first_task() {
    let s = server(false).await;
    let (status, list) = s.get("/v1/queues").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        list["queues"][0],
        json!({"name": "flow.escalate", "scheduled": 0, "leased": 0, "dead": 0, "next_due_at": null, "paused": false})
    );
    assert_eq!(names(&list), [("flow.escalate", 0), ("flow.remind", 0)]);
    assert_eq!(s.put("/v1/queues/flow.remind/tasks/a", json!({"delay": "1h"})).await.0, StatusCode::CREATED);
    assert_eq!(s.put("/v1/queues/adhoc/tasks/a", json!({"delay": "1h"})).await.0, StatusCode::CREATED, "not strict");
    let (_, list) = s.get("/v1/queues").await;
    assert_eq!(names(&list), [("adhoc", 1), ("flow.escalate", 0), ("flow.remind", 1)]);
}

#[tokio::test]
async fn strict_queues_refuses_an_undeclared_queue_naming_the_nearest_and_stores_nothing() {
    let s = server(true).await;
    let (status, body) = s.put("/v1/queues/flow.remnid/tasks/a", json!({"delay": "1h"})).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
    assert_eq!(body["error"]["message"], TYPO);

    let batch = json!({"tasks": [{"key": "a"}, {"key": "b", "delay": "bad"}, {"key": 7}]});
    let (status, body) = s.post("/v1/queues/flow.remnid/tasks", batch).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for (result, key) in results.iter().zip([json!("a"), json!("b"), Value::Null]) {
        assert_eq!(result["key"], key, "{result}");
        assert_eq!(result["error"]["code"], "not_found", "{result}");
        assert_eq!(result["error"]["message"], TYPO, "{result}");
    }

    let (status, body) = s.post("/v1/queues/flow.remnid/lease", json!({})).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
    assert_eq!(body["error"]["message"], TYPO);

    let (status, body) = s.put("/v1/queues/bad%2Fname/tasks/a", json!({})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "invalid_argument"), "an invalid name: {body}");
    let (_, list) = s.get("/v1/queues").await;
    assert_eq!(names(&list), [("flow.escalate", 0), ("flow.remind", 0)], "nothing stored");

    // Declared queues work as ever; reads of others still answer.
    assert_eq!(s.put("/v1/queues/flow.remind/tasks/a", json!({})).await.0, StatusCode::CREATED);
    let (status, body) = s.post("/v1/queues/flow.remind/tasks", json!({"tasks": [{"key": "b"}]})).await;
    assert_eq!((status, &body["results"][0]["outcome"]), (StatusCode::OK, &json!("created")), "{body}");
    assert_eq!(s.lease("flow.remind", json!({"max": 10})).await.len(), 2);
    assert_eq!(s.get("/v1/queues/flow.remnid/tasks/a").await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.get("/v1/queues/flow.remnid").await.0, StatusCode::OK, "an unknown queue's zero counts");
}
