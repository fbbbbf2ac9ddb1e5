//! HTTPS on the server (`--tls-cert`, `--tls-key`): guards against a TLS server that
//! speaks only one HTTP version, a certificate reload on SIGHUP that drops open
//! connections, keeps serving the old certificate, or dies on a bad file, and
//! unusable files that let the server start (or fail without naming the file).
//!
//! The tests make their own authority and certificates with `openssl` in a temp dir,
//! and start the real binary themselves: the testkit's helper probes plain HTTP.

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::common::certs::{authority, certificate};

/// How long anything waited on here may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Polls `check` until it gives a value, failing the test after [`DEADLINE`].
fn wait_for<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    punctual_testkit::poll_until(DEADLINE, check).unwrap_or_else(|| panic!("{what}: not within {DEADLINE:?}"))
}

/// A `punctual serve` with TLS, killed on drop.
struct TlsServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _data: tempfile::TempDir,
}

impl TlsServer {
    /// Starts the server on `cert` and `key`, waiting until HTTPS /healthz answers.
    fn start(dir: &Path, cert: &Path, key: &Path) -> TlsServer {
        let data = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = data.path().join("stderr.log");
        let child = Command::new(common::BIN)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(data.path().join("store"))
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut server = TlsServer { child, port, log, _data: data };
        let client = client(dir, false);
        wait_for("HTTPS /healthz after start", || {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited with {status}: {}", server.logs());
            }
            let r = client.get(server.url("/healthz")).send().ok()?;
            (r.status() == 200).then_some(())
        });
        server
    }

    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn hangup(&self) {
        let ok = Command::new("kill").args(["-HUP", &self.child.id().to_string()]).status().unwrap();
        assert!(ok.success(), "kill -HUP");
    }

    /// Waits until the log holds `needle` `count` times.
    fn wait_for_log(&self, needle: &str, count: usize) {
        wait_for(&format!("{count} x '{needle}' in the log"), || {
            (self.logs().matches(needle).count() >= count).then_some(())
        });
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client trusting the test authority; HTTP/2 by prior knowledge or HTTP/1.1 only.
fn client(dir: &Path, http2: bool) -> Client {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(dir.join("ca.pem")).unwrap()).unwrap();
    let builder = Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .use_rustls_tls()
        .tls_info(true)
        .timeout(Duration::from_secs(10));
    let builder = if http2 { builder.http2_prior_knowledge() } else { builder.http1_only() };
    builder.build().unwrap()
}

/// The subject name (`one`, `two`) of the certificate the connection of `response` got.
fn served(response: &reqwest::blocking::Response) -> &'static str {
    let info = response.extensions().get::<reqwest::tls::TlsInfo>().expect("tls_info(true)");
    let der = info.peer_certificate().expect("a peer certificate");
    let has = |name: &str| der.windows(name.len()).any(|w| w == name.as_bytes());
    match (has("punctual tls one"), has("punctual tls two")) {
        (true, false) => "one",
        (false, true) => "two",
        other => panic!("an unexpected certificate: {other:?}"),
    }
}

fn get(client: &Client, url: &str) -> (reqwest::blocking::Response, &'static str) {
    let response = client.get(url).send().unwrap();
    let name = served(&response);
    (response, name)
}

fn certificates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    authority(dir.path(), "ca");
    certificate(dir.path(), "one");
    certificate(dir.path(), "two");
    dir
}

#[test]
fn https_answers_http1_and_http2() {
    let dir = certificates();
    let d = dir.path();
    let server = TlsServer::start(d, &d.join("one.pem"), &d.join("one.key"));
    assert!(server.logs().contains("TLS on, certificate"), "{}", server.logs());
    for (http2, version) in [(false, reqwest::Version::HTTP_11), (true, reqwest::Version::HTTP_2)] {
        let client = client(d, http2);
        let (health, name) = get(&client, &server.url("/healthz"));
        assert_eq!((health.status().as_u16(), health.version(), name), (200, version, "one"));
        let key = format!("k{}", u8::from(http2));
        let put = client
            .put(server.url(&common::task_path("q", &key)))
            .json(&json!({"delay": "1h", "payload": [1]}))
            .send()
            .unwrap();
        assert_eq!((put.status().as_u16(), put.version()), (201, version));
        let task = client.get(server.url(&common::task_path("q", &key))).send().unwrap();
        assert_eq!(task.status(), 200);
        let body: Value = task.json().unwrap();
        assert_eq!((&body["key"], &body["payload"]), (&json!(key), &json!([1])), "{body}");
    }
    // ALPN: a client that offers both gets HTTP/2.
    let ca = reqwest::Certificate::from_pem(&std::fs::read(d.join("ca.pem")).unwrap()).unwrap();
    let alpn = Client::builder().add_root_certificate(ca).use_rustls_tls().build().unwrap();
    let r = alpn.get(server.url("/healthz")).send().unwrap();
    assert_eq!((r.status().as_u16(), r.version()), (200, reqwest::Version::HTTP_2));
}

#[test]
fn sighup_reloads_the_certificate_without_dropping_connections() {
    let dir = certificates();
    let d = dir.path();
    let (cert, key) = (d.join("live.pem"), d.join("live.key"));
    std::fs::copy(d.join("one.pem"), &cert).unwrap();
    std::fs::copy(d.join("one.key"), &key).unwrap();
    let server = TlsServer::start(d, &cert, &key);

    // A keep-alive HTTP/1.1 connection opened before the reload.
    let kept = client(d, false);
    assert_eq!(get(&kept, &server.url("/healthz")).1, "one");

    std::fs::copy(d.join("two.pem"), &cert).unwrap();
    std::fs::copy(d.join("two.key"), &key).unwrap();
    server.hangup();
    server.wait_for_log("TLS certificate reloaded", 1);

    let (fresh, name) = get(&client(d, false), &server.url("/healthz"));
    assert_eq!((fresh.status().as_u16(), name), (200, "two"), "a new connection gets the new certificate");
    let (old, name) = get(&kept, &server.url("/healthz"));
    assert_eq!((old.status().as_u16(), name), (200, "one"), "the open connection still answers, on its session");

    // A file that does not load: logged, the certificate before it kept.
    std::fs::write(&cert, "not a certificate\n").unwrap();
    server.hangup();
    server.wait_for_log("TLS certificate not reloaded", 1);
    let (after, name) = get(&client(d, true), &server.url("/healthz"));
    assert_eq!((after.status().as_u16(), name), (200, "two"));
    assert!(server.logs().contains("live.pem"), "the error names the file: {}", server.logs());
}

/// Runs `punctual serve` expecting it to fail at start; returns its stderr.
fn fails_to_start(cert: &Path, key: &Path) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .arg("--tls-cert")
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for("the server to exit", || child.try_wait().unwrap());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "exit {status}: {stderr}");
    stderr
}

#[test]
fn unusable_files_stop_start_up_naming_the_file() {
    let dir = certificates();
    let d = dir.path();
    let missing = d.join("missing.key");
    let stderr = fails_to_start(&d.join("one.pem"), &missing);
    assert!(stderr.contains(&missing.display().to_string()) && stderr.contains("cannot read"), "{stderr}");

    let stderr = fails_to_start(&d.join("one.pem"), &d.join("two.key"));
    assert!(stderr.contains("two.key") && stderr.contains("does not belong"), "{stderr}");

    let only_cert = Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(d.join("one.pem"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&only_cert.stderr);
    assert!(!only_cert.status.success() && stderr.contains("tls_key is not"), "{stderr}");
}
