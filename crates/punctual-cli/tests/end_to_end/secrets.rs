//! Secrets never reach the logs: a real `punctual serve` on a password-protected Redis,
//! with API tokens and a signed webhook action, logging at `trace` (every crate, every
//! level). After requests with the right and a wrong token, a webhook delivery and a
//! shutdown, its whole output holds none of the Redis password, the tokens or the
//! webhook secret, while it does hold the lines about each of those things.
//!
//! Guards against: the store URL logged with its password (it was, at start-up), an
//! `Authorization` header or a configured token in a trace line, a signing secret in
//! the action's debug output.

use crate::common;

use std::net::TcpListener;
use std::time::Duration;

use common::receiver::{read_request, write_response};
use common::{Api, server_builder, start, task_path};
use serde_json::json;

const REDIS_PASSWORD: &str = "redis-pw-7f3a9c";
const TOKEN: &str = "api-token-51d0e2";
const WEBHOOK_SECRET: &str = "whsec-8b44c1";

/// Answers every request with 204 and reports it once its body was read.
fn receiver() -> (std::net::SocketAddr, std::sync::mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    let addr = listener.local_addr().expect("the receiver's address");
    let (delivered, deliveries) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            if read_request(&stream).is_some() {
                write_response(&mut stream, 204, "");
                let _ = delivered.send(());
            }
        }
    });
    (addr, deliveries)
}

#[test]
fn no_secret_appears_in_the_logs_even_at_trace_level() {
    let redis = punctual_testkit::redis::server();
    // Set after start: the launcher's readiness probe does not authenticate.
    redis.command(&["CONFIG", "SET", "requirepass", REDIS_PASSWORD]).expect("set the Redis password");
    let (addr, deliveries) = receiver();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("punctual.toml");
    std::fs::write(
        &config,
        format!(
            r#"tokens = ["{TOKEN}"]

[egress]
allow = ["127.0.0.1"]

[queues.hooks.action]
kind = "webhook"
url = "http://{addr}/hook"
secret_env = "PUNCTUAL_TEST_WEBHOOK_SECRET"
"#
        ),
    )
    .expect("write the config file");
    let mut server = start(
        server_builder()
            .store(format!("redis://:{REDIS_PASSWORD}@127.0.0.1:{}", redis.port()))
            .arg("--config")
            .arg(&config)
            .env("PUNCTUAL_TEST_WEBHOOK_SECRET", WEBHOOK_SECRET)
            .env("RUST_LOG", "trace"),
    );

    let api = Api::new(server.url()).token(TOKEN);
    api.put(&task_path("hooks", "h1"), json!({"payload": {"n": 1}})).expect(201, "scheduled with the token");
    deliveries.recv_timeout(Duration::from_secs(10)).expect("the webhook was delivered");
    Api::new(server.url()).token("wrong-token-c0ffee").get("/v1/queues").expect(401, "a wrong token");
    api.get("/v1/queues").expect(200, "the right token");
    let status = server.terminate().expect("the server stops on SIGTERM");
    assert!(status.success(), "{status}");

    let logs = server.logs();
    // The lines about each secret's use are there, so their absence means something.
    for expected in ["Redis store connected", "redis://:***@127.0.0.1", "push action ready", "task completed"] {
        assert!(logs.to_lowercase().contains(&expected.to_lowercase()), "no {expected:?} in the logs:\n{logs}");
    }
    for secret in [REDIS_PASSWORD, TOKEN, WEBHOOK_SECRET] {
        let line = logs.lines().find(|line| line.contains(secret));
        assert!(line.is_none(), "{secret:?} is in the logs: {}", line.unwrap_or_default());
    }
}

/// The store URL can come from `PUNCTUAL_STORE` (so its password is not in `ps`), and
/// a server that cannot reach it says so without showing the password.
#[test]
fn a_store_url_from_the_environment_is_used_and_its_password_never_shown() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut child = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("PUNCTUAL_STORE", format!("redis://:{REDIS_PASSWORD}@127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run punctual serve");
    // A server that ignored the variable would serve the embedded store: stop it.
    if punctual_testkit::poll_until(Duration::from_secs(30), || child.try_wait().expect("poll the server")).is_none() {
        let _ = child.kill();
        panic!("punctual serve still runs 30 s later: PUNCTUAL_STORE was not used");
    }
    let out = child.wait_with_output().expect("the server's output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "no Redis there, yet it started: {stderr}");
    assert!(stderr.contains(&format!("cannot connect to redis://:***@127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains(REDIS_PASSWORD), "{stderr}");
}
