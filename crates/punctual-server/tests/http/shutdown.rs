//! Graceful shutdown over a real socket: on the stop signal the server stops
//! accepting, answers long polls with no leases, lets requests in flight finish, and
//! after the engine's shutdown every acknowledged write is on disk. Guards against a
//! stop that cuts requests off or loses writes.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::time::Duration;

use common::{TestServer, http, within};
use punctual_core::{Engine, EngineConfig};
use punctual_server::{AppState, HttpOptions, serve_on};
use punctual_sqlite::SqliteStore;
use serde_json::{Value, json};

#[tokio::test]
async fn stop_answers_long_polls_finishes_and_keeps_every_write() {
    let s = TestServer::start().await;
    let data = s.dir.path().join("data");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(
        listener,
        s.state.clone(),
        async { stopped.await.unwrap_or(()) },
        Duration::from_secs(10),
    ));

    for i in 0..20 {
        let (status, _) = http(addr, "PUT", &format!("/v1/queues/q/tasks/t{i}"), r#"{"delay": "1h"}"#).await;
        assert_eq!(status, 201);
    }
    let poll = tokio::spawn(http(addr, "POST", "/v1/queues/empty/lease", r#"{"wait": "60s"}"#));
    // The long poll is in flight once the server has answered a request sent after it.
    assert_eq!(http(addr, "GET", "/healthz", "").await.0, 200);
    stop.send(()).unwrap();
    let (status, body) = within(10, poll).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"leases": []}));
    within(15, server).await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "still accepting after the stop");

    s.engine().shutdown().await.unwrap();
    // Every handle of the first store goes; its directory lock with it.
    let TestServer { state, app, dir, .. } = s;
    drop((state, app));
    let engine = Engine::start(SqliteStore::open(&data).unwrap(), EngineConfig::default());
    let state = AppState::new(engine.clone(), HttpOptions::default()).await.unwrap();
    let stats = state.engine().stats(Some("q")).await.unwrap();
    assert_eq!(stats[0].scheduled, 20);
    engine.shutdown().await.unwrap();
    drop(dir);
}
