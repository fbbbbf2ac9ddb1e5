//! Request heads too large to read, over a real socket: a request line over the limit
//! answers 414 `uri_too_long`, a head whose headers are too large 431
//! `headers_too_large`, both in the API's error body and with `Connection: close`, and
//! the server then serves the next connection. Guards against issue 14 (9): a 1 MiB
//! path answered 431 (the head as a whole filled hyper's buffer), in hyper's bare form
//! without the error body.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{TestServer, http, within};
use punctual_server::serve_on;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Writes `head` while reading what the server answers until it closes (it answers
/// before it has read everything, as a client still sending would see it).
async fn write_and_read(mut read: OwnedReadHalf, mut write: OwnedWriteHalf, head: String) -> String {
    let writer = tokio::spawn(async move {
        let _ = write.write_all(head.as_bytes()).await;
        write
    });
    let mut answer = Vec::new();
    let _ = within(10, read.read_to_end(&mut answer)).await;
    drop(writer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Sends `head` on a new connection; the answer's status line, headers and body.
async fn send_head(addr: SocketAddr, head: String) -> (String, Vec<String>, Value) {
    let (read, write) = tokio::net::TcpStream::connect(addr).await.unwrap().into_split();
    let text = write_and_read(read, write, head).await;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer head: {text:?}"));
    let mut lines = head.split("\r\n").map(str::to_owned);
    let status = lines.next().unwrap();
    let headers = lines.map(|l| l.to_ascii_lowercase()).collect();
    let body = serde_json::from_str(body).unwrap_or_else(|_| panic!("not the error body: {text:?}"));
    (status, headers, body)
}

async fn serve(s: &TestServer) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_on(listener, s.state.clone(), std::future::pending(), Duration::from_secs(1)));
    addr
}

#[tokio::test]
async fn a_long_request_line_is_414_and_large_headers_are_431() {
    let s = TestServer::start().await;
    let addr = serve(&s).await;
    let long_path = |len: usize| format!("/v1/queues/q/tasks/{}", "k".repeat(len));
    let cases = [
        // Fills hyper's buffer before the request line ends: was 431 without a body.
        (format!("GET {} HTTP/1.1\r\nHost: t\r\n\r\n", long_path(1 << 20)), "414 URI Too Long", "uri_too_long"),
        // Over hyper's longest URI, with the head complete.
        (format!("GET {} HTTP/1.1\r\nHost: t\r\n\r\n", long_path(70_000)), "414 URI Too Long", "uri_too_long"),
        (
            format!("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "v".repeat(1 << 20)),
            "431 Request Header Fields Too Large",
            "headers_too_large",
        ),
    ];
    for (head, status, code) in cases {
        let (got, headers, body) = send_head(addr, head).await;
        assert_eq!(got, format!("HTTP/1.1 {status}"), "{body}");
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
        assert!(headers.contains(&"content-type: application/json".to_owned()), "{headers:?}");
        assert!(headers.contains(&"connection: close".to_owned()), "{headers:?}");
    }
    // A path within the limits still reaches the app, and the server still serves.
    let (status, body) = http(addr, "GET", &long_path(600), "").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(http(addr, "GET", "/healthz", "").await.0, 200);
}

#[tokio::test]
async fn a_long_request_line_after_a_keep_alive_request_is_414_too() {
    let s = TestServer::start().await;
    let addr = serve(&s).await;
    let first = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n".to_owned();
    let second = format!("GET /v1/queues/{} HTTP/1.1\r\nHost: t\r\n\r\n", "q".repeat(1 << 20));
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    write.write_all(first.as_bytes()).await.unwrap();
    // Read the first answer to its end before sending the second request.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !String::from_utf8_lossy(&answer).contains("{\"status\":\"ok\"}") {
        let n = within(10, read.read(&mut chunk)).await.unwrap();
        assert!(n > 0, "closed before the first answer: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&chunk[..n]);
    }
    let text = write_and_read(read, write, second).await;
    assert!(text.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{text}");
    assert!(text.contains("\"code\":\"uri_too_long\""), "{text}");
}
