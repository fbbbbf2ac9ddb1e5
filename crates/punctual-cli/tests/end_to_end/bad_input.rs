//! Guards against a `--request-timeout` flag that is parsed but not applied to the
//! socket the real binary serves, so one slow client holds a connection and a request
//! slot for ever: with `--request-timeout 1s` a body that stalls mid-way is cut within
//! seconds (a 4xx, or the connection closed), stores nothing, and the server stays
//! healthy.
//!
//! Which malformed requests get which status, code and field is asserted in process by
//! the server's own tests (`crates/punctual-server/tests/http/bad_input.rs`, the keep-alive
//! behaviour after a refused body in `refused_bodies.rs`).

use crate::common;

use common::{Api, server_builder, start};

#[test]
fn a_request_that_stalls_mid_body_times_out() {
    use std::io::{Read, Write};
    let server = start(server_builder().args(["--request-timeout", "1s"]));
    let mut stream = std::net::TcpStream::connect(server.addr()).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(15))).expect("read timeout");
    let head = "PUT /v1/queues/q/tasks/slow HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
                Content-Length: 100\r\n\r\n{\"delay\":";
    stream.write_all(head.as_bytes()).expect("send the start of a request");
    let started = common::now_ms();
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    let waited = common::now_ms() - started;
    assert!(waited < 5_000, "a request stalled mid-body was cut after {waited} ms, beyond --request-timeout 1s");
    if read.is_ok() && !answer.is_empty() {
        let answer = String::from_utf8_lossy(&answer);
        let status: u16 = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        assert!((400..500).contains(&status), "a stalled request is answered with a 4xx or closed: {answer}");
    }
    let api = Api::of(&server);
    api.get("/healthz").expect(200, "healthy after the stalled request");
    api.task("q", "slow").expect_error(404, "not_found", None, "the stalled request stored nothing");
}
