//! The server's TOML configuration file (`punctual serve --config`) and its flags.
//!
//! Guards against a config file whose settings are read but not applied (tokens that
//! do not guard, queue defaults that tasks do not get), flags that do not override the
//! file, a typo'd key that is silently ignored instead of stopping start-up with its
//! line, and flags that `punctual serve --help` does not document.

use crate::common;

use std::path::PathBuf;

use common::{Api, BIN, parse_duration, server_builder, start};
use serde_json::json;

fn write_config(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).expect("write the config file");
    path
}

#[test]
fn a_config_file_sets_tokens_and_queue_defaults_and_flags_override_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file_data = dir.path().join("data-from-the-file");
    let config = write_config(
        &dir,
        &format!(
            r#"listen = "127.0.0.1:9"
data = "{}"
tokens = ["s3cret"]

[queues."order.cancel"]
max_attempts = 10
backoff = {{ initial = "2s", factor = 3.0, max = "30m" }}
"#,
            file_data.display()
        ),
    );
    // The helper passes --listen and --data: they must win over the file.
    let server = start(server_builder().arg("--config").arg(&config));
    assert!(server.data_dir().is_dir(), "--data overrides the file's data");
    assert!(!file_data.exists(), "the file's data directory is not used when --data is given");

    let api = Api::new(server.url());
    api.task("order.cancel", "k").expect_error(401, "unauthorized", None, "tokens from the file guard /v1");
    let api = api.token("s3cret");
    let task = api.create("order.cancel", "k", json!({"delay": "1h"}));
    assert_eq!(task["max_attempts"], 10, "the queue's default from the file: {task}");
    assert_eq!(parse_duration(&task["backoff"]["initial"]), 2_000, "{task}");
    assert_eq!(task["backoff"]["factor"].as_f64(), Some(3.0), "{task}");
    assert_eq!(parse_duration(&task["backoff"]["max"]), 30 * 60_000, "{task}");
    let task = api.create("order.cancel", "k2", json!({"delay": "1h", "max_attempts": 3}));
    assert_eq!(task["max_attempts"], 3, "a task's own policy wins over the queue's: {task}");
    let task = api.create("other.q", "k", json!({"delay": "1h"}));
    assert_eq!(task["max_attempts"], 20, "other queues keep the built-in default: {task}");

    // A --token flag replaces the file's tokens.
    let server = start(server_builder().arg("--config").arg(&config).args(["--token", "flag-token"]));
    let api = Api::new(server.url());
    api.token("flag-token").get("/v1/queues").expect(200, "the flag's token");
    api.token("s3cret").get("/v1/queues").expect_error(401, "unauthorized", None, "the file's token, overridden");
}

#[test]
fn unknown_keys_stop_start_up_with_their_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (text, key, line) in [
        ("tokens = [\"s3cret\"]\n\ncolour = \"blue\"\n", "colour", 3),
        ("[queues.\"q\"]\nmax_attempts = 3\n\n\nmax_attempt = 4\n", "max_attempt", 5),
    ] {
        let config = write_config(&dir, text);
        let error = match server_builder().arg("--config").arg(&config).start() {
            Ok(_) => panic!("the server started with the unknown key `{key}` in its config file"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains(key), "the start-up error names `{key}`:\n{error}");
        assert!(error.contains(&format!("line {line}")), "the start-up error names line {line}:\n{error}");
    }
}

#[test]
fn serve_help_documents_every_flag() {
    let out = std::process::Command::new(BIN).args(["serve", "--help"]).output().expect("run punctual serve --help");
    assert!(out.status.success(), "punctual serve --help: {out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--listen", "--data", "--store", "--config", "--token", "PUNCTUAL_TOKENS"] {
        assert!(help.contains(flag), "punctual serve --help documents {flag}:\n{help}");
    }
}

#[test]
fn the_limit_flags_set_the_limits() {
    let server = start(server_builder().args(["--max-payload-bytes", "100", "--max-batch", "3"]));
    let api = Api::new(server.url());
    // 98 characters and two quotes: 100 bytes of JSON.
    api.create("q", "fits", json!({"payload": "x".repeat(98)}));
    let resp = api.schedule("q", "too-big", json!({"payload": "x".repeat(99)}));
    resp.expect_error(413, "payload_too_large", Some("payload"), "a payload over --max-payload-bytes");
    let items =
        |n: usize| -> serde_json::Value { (0..n).map(|i| json!({"key": format!("b{i}")})).collect::<Vec<_>>().into() };
    api.post("/v1/queues/q/tasks", json!({"tasks": items(3)})).expect(200, "a batch of --max-batch tasks");
    let resp = api.post("/v1/queues/q/tasks", json!({"tasks": items(4)}));
    resp.expect_error(400, "invalid_argument", Some("tasks"), "a batch over --max-batch");
}
