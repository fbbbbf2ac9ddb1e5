//! `rediss://`: the server reaches a Redis over TLS, trusting the certificate
//! authorities of the system or of `SSL_CERT_FILE`. Guards against docs/redis.md
//! offering `rediss://` while the binary answered "the feature is not enabled", and
//! against a certificate no authority vouches for being accepted.
//!
//! The test makes its own authority and server certificate with `openssl` and starts
//! a private `redis-server` with TLS on one port (and plain on another, for the test's
//! own look at what was stored).

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::net::TcpListener;
use std::path::Path;

use common::certs::{authority, certificate};
use common::*;
use punctual_testkit::redis::{self, Persistence, RedisServer};
use serde_json::json;

/// A private redis-server answering TLS on the returned port.
fn tls_redis(dir: &Path) -> (RedisServer, u16) {
    let tls_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let file = |name: &str| dir.join(name).display().to_string();
    let (port, cert, key, ca) = (tls_port.to_string(), file("server.pem"), file("server.key"), file("ca.pem"));
    let args = [
        "--tls-port",
        &port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-auth-clients",
        "no",
    ];
    (redis::server_with(Persistence::None, &args), tls_port)
}

#[test]
fn rediss_schedules_and_fires_over_tls_and_refuses_an_unknown_authority() {
    let certs = tempfile::tempdir().unwrap();
    authority(certs.path(), "ca");
    authority(certs.path(), "other");
    certificate(certs.path(), "server");
    let (redis, tls_port) = tls_redis(certs.path());
    let store = format!("rediss://127.0.0.1:{tls_port}");

    let server = start(server_builder().store(&store).env("SSL_CERT_FILE", certs.path().join("ca.pem")));
    let api = Api::of(&server);
    api.put("/v1/queues/tls.q/tasks/k", json!({"payload": {"over": "tls"}})).expect(201, "schedule over TLS");
    let leased = api.post("/v1/queues/tls.q/lease", json!({"wait": "5s"}));
    let leases = leased.expect(200, "lease over TLS")["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(leases[0]["task"]["payload"], json!({"over": "tls"}));
    // The same Redis, read on its plain port: the task went there.
    let keys = redis.command(&["DBSIZE"]).unwrap();
    assert_ne!(keys.trim(), "0", "the TLS port's Redis holds punctual's keys");
    drop(server);

    // A certificate signed by an authority the server does not trust: no start.
    let refused = server_builder().store(&store).env("SSL_CERT_FILE", certs.path().join("other.pem")).start();
    let error = refused.expect_err("a server must not start on a Redis whose certificate it cannot verify");
    let text = error.to_string();
    assert!(text.contains("not signed by an authority this machine trusts"), "the error says why: {error}");
    assert!(text.contains("SSL_CERT_FILE"), "the error says what to do: {error}");
}
