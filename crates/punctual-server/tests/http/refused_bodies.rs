//! Guards against a server that stops reading a refused request body and closes the
//! connection without saying so: HTTP clients pool connections and send their next
//! request on one the server kept open, which then fails.
//!
//! Over a real socket, the server answers the refusal (413 for a body over the limit,
//! 400 for a malformed one, 401 before reading it without a token) and then either says
//! `Connection: close` or serves the next request on the same connection. First checked
//! through the real binary (`crates/punctual-cli/tests/end_to_end/bad_input.rs`); the binary serves
//! with this same `serve_on`.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::TestServer;
use punctual_core::EngineConfig;
use punctual_server::{HttpOptions, serve_on};

/// Serves `s` on a loopback port until the test ends; its address.
async fn serve(s: &TestServer) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_on(listener, s.state.clone(), std::future::pending(), Duration::from_secs(1)));
    addr
}

/// Sends `PUT <path>` with `body` and the `Authorization` header line `auth` on a raw
/// connection and checks the status; then, unless the answer said `Connection: close`,
/// that the connection still serves a request.
fn refusal_leaves_a_usable_connection(
    addr: SocketAddr,
    path: &str,
    body: &str,
    auth: &str,
    status: u16,
) -> Result<(), String> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: test\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // The server may stop reading early; what it answers is what is checked.
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim().is_empty() => break,
            Ok(_) => headers.push(line.trim().to_ascii_lowercase()),
        }
    }
    let what = format!("PUT {path} with a body of {} bytes", body.len());
    let status_line = format!("http/1.1 {status}");
    if !headers.first().is_some_and(|l| l.starts_with(&status_line)) {
        return Err(format!("{what}: expected {status}: {headers:?}"));
    }
    if headers.iter().any(|h| h == "connection: close") {
        return Ok(());
    }
    let length: usize = headers
        .iter()
        .find_map(|h| h.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a content-length");
    let mut rest = vec![0; length];
    reader.read_exact(&mut rest).expect("the error body");
    let next = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n");
    let mut line = String::new();
    let read = reader.read_line(&mut line);
    if next.is_ok() && read.is_ok() && line.starts_with("HTTP/1.1 200") {
        return Ok(());
    }
    Err(format!(
        "{what}: the server closed the connection after its {status} without `Connection: close` \
         (headers {headers:?}), so a keep-alive client's next request fails: write {next:?}, read {read:?} '{line}'"
    ))
}

#[tokio::test]
async fn a_refused_body_never_leaves_a_half_closed_keep_alive_connection() {
    let open = TestServer::start().await;
    let mut options = HttpOptions::default();
    options.tokens = vec!["s3cret".into()];
    let guarded = TestServer::build(options, EngineConfig::default(), None).await;
    let (open_addr, guarded_addr) = (serve(&open).await, serve(&guarded).await);
    // The raw socket is blocking: off the runtime, which serves meanwhile.
    let failures = tokio::task::spawn_blocking(move || {
        let big = format!(r#"{{"payload":"{}"}}"#, "x".repeat(2 << 20));
        let bad = format!(r#"{{"delay":"{}""#, "x".repeat(100_000));
        let body = format!(r#"{{"payload":"{}"}}"#, "x".repeat(60_000));
        let auth = "Authorization: Bearer s3cret\r\n";
        let results = [
            refusal_leaves_a_usable_connection(open_addr, "/v1/queues/q/tasks/k", &big, "", 413),
            refusal_leaves_a_usable_connection(open_addr, "/v1/queues/q/tasks/k", &bad, "", 400),
            refusal_leaves_a_usable_connection(guarded_addr, "/v1/queues/q/tasks/k", &body, "", 401),
            refusal_leaves_a_usable_connection(guarded_addr, "/v1/queues/bad%20queue/tasks/k", &body, auth, 400),
        ];
        results.into_iter().filter_map(Result::err).collect::<Vec<String>>()
    })
    .await
    .unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
