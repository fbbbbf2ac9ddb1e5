//! `punctual queue …` against a running server: settings set from a file, read back,
//! replaced, refused (a stale `--if-version`, a bad field, a config-file queue), removed;
//! a queue paused and resumed; its tasks purged.
//!
//! Guards against a flag parsed but not sent (`--if-version` without its `If-Match`,
//! `--state` without its query), a pause that the CLI reports but the server does not
//! apply (a due task still leased), a purge that runs without `--yes` from a script, a
//! settings file that is not JSON sent to the server anyway, and refusals that exit 0
//! or hide the server's message.

use crate::common;

use common::run::{Out, run, run_stdin, server_message};
use common::{Api, enc, server_builder, start, start_server};
use serde_json::{Value, json};

/// A file in `dir` holding `text`; its path as the CLI takes it.
fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write a settings file");
    path.to_str().expect("a UTF-8 temporary path").to_owned()
}

/// The entry of `queue` in `queue ls --json`.
#[track_caller]
fn listed(out: &Out, queue: &str) -> Value {
    let doc = out.json();
    let queues = doc["queues"].as_array().unwrap_or_else(|| panic!("queue ls --json has a queues list: {doc}"));
    queues.iter().find(|q| q["name"] == queue).unwrap_or_else(|| panic!("queue ls --json lists {queue}: {doc}")).clone()
}

/// The row of `queue` in the human `queue ls` table.
#[track_caller]
fn row<'a>(out: &'a Out, queue: &str) -> &'a str {
    out.stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(queue))
        .unwrap_or_else(|| panic!("queue ls shows {queue}:\n{}", out.stdout))
}

/// `PUT` of the settings with `If-Match`, as the CLI sends it, for the server's answer.
fn put_if_match(api: &Api, queue: &str, body: &Value, version: u64) -> common::Resp {
    let client = reqwest::blocking::Client::builder().no_proxy().build().expect("an HTTP client");
    let response = client
        .put(format!("{}/v1/queues/{}/settings", api.base, enc(queue)))
        .header("if-match", version.to_string())
        .json(body)
        .send()
        .expect("an HTTP answer");
    let status = response.status().as_u16();
    let text = response.text().expect("a body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    common::Resp { status, content_type: "application/json".into(), text, json }
}

#[test]
fn settings_are_set_read_replaced_and_removed_and_a_queue_pauses_resumes_and_purges() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let q = "shop.cancel";
    let first = file(&dir, "first.json", r#"{"defaults": {"max_attempts": 7}, "concurrency": 4}"#);
    let second = json!({"defaults": {"max_attempts": 9}, "rate": "10/1s"});
    let second_file = file(&dir, "second.json", &second.to_string());

    let out = run(&url, &["queue", "set", q, "--file", &first]);
    out.expect_code(0, "queue set of a new queue");
    out.expect_contains(&["Created the settings of queue shop.cancel (version 1)"], "set says created");
    let out = run(&url, &["queue", "get", q]);
    out.expect_code(0, "queue get");
    out.expect_contains(&["Source        api", "Max attempts  7", "Concurrency   4", "Version       1"], "get");
    let doc = run(&url, &["queue", "get", q, "--json"]).expect_code(0, "queue get --json").json();
    assert_eq!((doc["defaults"]["max_attempts"].as_u64(), doc["version"].as_u64()), (Some(7), Some(1)), "{doc}");
    assert_eq!(doc, api.get(&format!("/v1/queues/{q}/settings")).json, "--json is the server's settings object");

    // The server lists the queues holding a task and those of its config file; one
    // with settings only is not listed (yet).
    api.create(q, "later-0", json!({"delay": "1h"}));
    let out = run(&url, &["queue", "ls"]);
    out.expect_code(0, "queue ls");
    assert!(row(&out, q).ends_with("no"), "not paused:\n{}", out.stdout);
    let entry = listed(run(&url, &["queue", "ls", "--json"]).expect_code(0, "queue ls --json"), q);
    assert_eq!(entry["paused"], false, "{entry}");

    let out = run(&url, &["queue", "set", q, "--file", &second_file, "--if-version", "1"]);
    out.expect_code(0, "queue set again, at the version read");
    out.expect_contains(&["Replaced the settings of queue shop.cancel (now version 2)", "Rate          10/1s"], "set");
    let out = run(&url, &["queue", "set", q, "--file", &first, "--if-version", "1"]);
    out.expect_code(1, "queue set --if-version with a stale version");
    let refused = put_if_match(&api, q, &second, 1);
    refused.expect_error(409, "conflict", None, "a stale If-Match");
    out.expect_contains(&[&server_message(&refused)], "the server's 409 message");
    assert_eq!(api.get(&format!("/v1/queues/{q}/settings")).json["defaults"]["max_attempts"], 9, "unchanged");

    let out = run(&url, &["queue", "pause", q]);
    out.expect_code(0, "queue pause");
    out.expect_contains(&["Queue shop.cancel is paused"], "pause says so");
    let out = run(&url, &["queue", "ls"]);
    assert!(row(&out, q).ends_with("yes"), "queue ls shows the pause:\n{}", out.stdout);
    assert_eq!(listed(&run(&url, &["queue", "ls", "--json"]), q)["paused"], true);
    api.create(q, "due-now", json!({}));
    let leases = api.lease(q, json!({"max": 1, "wait": "1s"}));
    assert!(leases.is_empty(), "a paused queue hands out nothing, though a task is due: {leases:?}");

    let out = run(&url, &["queue", "resume", q]);
    out.expect_code(0, "queue resume");
    out.expect_contains(&["Queue shop.cancel is running"], "resume says so");
    let lease = api.lease_one(q);
    assert_eq!(lease["task"]["key"], "due-now", "the due task is leased once resumed: {lease}");

    for key in ["later-1", "later-2"] {
        api.create(q, key, json!({"delay": "1h"}));
    }
    let out = run(&url, &["queue", "purge", q, "--state", "scheduled"]);
    out.expect_code(2, "queue purge without --yes and without a terminal");
    out.expect_contains(&["--yes"], "the refusal says to pass --yes");
    assert_eq!(api.task(q, "later-1").json["state"], "scheduled", "nothing purged");
    let out = run(&url, &["queue", "purge", q, "--yes", "--state", "scheduled"]);
    out.expect_code(0, "queue purge --yes --state scheduled");
    out.expect_contains(&["Cancelled 3 scheduled tasks in queue shop.cancel."], "purge counts");
    for key in ["later-0", "later-1", "later-2"] {
        api.task(q, key).expect_error(404, "not_found", None, "purged");
    }
    assert_eq!(api.task(q, "due-now").json["state"], "leased", "--state scheduled keeps the leased task");
    let out = run(&url, &["queue", "purge", q, "--yes", "--state", "dead", "--json"]);
    assert_eq!(out.expect_code(0, "purge --json").json(), json!({"cancelled": 0}));

    let out = run(&url, &["queue", "rm", q, "--if-version", "1"]);
    out.expect_code(1, "queue rm with a stale version");
    run(&url, &["queue", "rm", q]).expect_code(0, "queue rm");
    let missing = api.get(&format!("/v1/queues/{q}/settings"));
    missing.expect_error(404, "not_found", None, "removed");
    let out = run(&url, &["queue", "get", q]);
    out.expect_code(1, "queue get after rm");
    out.expect_contains(&[&server_message(&missing)], "the server's 404 message");
    assert_eq!(api.task(q, "due-now").json["state"], "leased", "removing the settings keeps the tasks");
    run(&url, &["queue", "rm", q]).expect_code(1, "queue rm of a queue without settings");
}

#[test]
fn a_bad_settings_file_is_refused_and_standard_input_and_patch_are_read() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let q = "shop.remind";
    let path = format!("/v1/queues/{q}/settings");

    let zero = json!({"defaults": {"max_attempts": 0}});
    let out = run(&url, &["queue", "set", q, "--file", &file(&dir, "zero.json", &zero.to_string())]);
    out.expect_code(1, "settings the server refuses");
    let refused = api.put(&path, zero);
    refused.expect_error(400, "invalid_argument", Some("defaults.max_attempts"), "max_attempts 0");
    out.expect_contains(&["defaults.max_attempts", &server_message(&refused)], "the field and the server's message");

    let broken = file(&dir, "broken.json", "{\"defaults\": {\"max_attempts\": 3}");
    let out = run(&url, &["queue", "set", q, "--file", &broken]);
    out.expect_code(2, "a settings file that is not JSON");
    out.expect_contains(&[&broken, "not valid JSON", "line 1 column"], "names the file and the position");
    api.get(&path).expect_error(404, "not_found", None, "nothing was sent");

    let out = run_stdin(&url, &["queue", "set", q, "--file", "-"], r#"{"concurrency": 2}"#);
    out.expect_code(0, "settings from standard input");
    out.expect_contains(&["Created"], "created");
    let out = run_stdin(&url, &["queue", "set", q, "--file", "-", "--patch", "--json"], r#"{"rate": "5/1s"}"#);
    let doc = out.expect_code(0, "--patch from standard input").json();
    assert_eq!((doc["concurrency"].as_u64(), doc["rate"].as_str()), (Some(2), Some("5/1s")), "merged: {doc}");
    assert_eq!(doc, api.get(&path).json, "--json is the settings stored");

    // What queue get --json prints is a settings file, read-only fields and all.
    let shown = run(&url, &["queue", "get", q, "--json"]).expect_code(0, "queue get --json").stdout.clone();
    let out = run(&url, &["queue", "set", q, "--file", &file(&dir, "shown.json", &shown)]);
    out.expect_code(0, "queue set of what queue get --json printed");
    out.expect_contains(&["Replaced the settings of queue shop.remind (now version 3)"], "replaced");
    let after = api.get(&path).json;
    assert_eq!((after["concurrency"].as_u64(), after["rate"].as_str()), (Some(2), Some("5/1s")), "the same: {after}");
}

#[test]
fn a_config_file_queue_refuses_set_and_rm_and_still_pauses() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = file(&dir, "punctual.toml", "[queues.\"cfg.remind\"]\nmax_attempts = 5\n");
    let server = start(server_builder().arg("--config").arg(&config));
    let (url, api) = (server.url(), Api::of(&server));
    let q = "cfg.remind";
    let settings = file(&dir, "settings.json", r#"{"defaults": {"max_attempts": 9}}"#);

    let out = run(&url, &["queue", "set", q, "--file", &settings]);
    out.expect_code(1, "queue set of a config-file queue");
    let refused = api.put(&format!("/v1/queues/{q}/settings"), json!({"defaults": {"max_attempts": 9}}));
    refused.expect_error(409, "conflict", None, "PUT of a config-file queue");
    out.expect_contains(&["punctual.toml", &server_message(&refused)], "the refusal names the file");
    run(&url, &["queue", "rm", q]).expect_code(1, "queue rm of a config-file queue");

    let out = run(&url, &["queue", "get", q]);
    out.expect_code(0, "queue get of a config-file queue");
    out.expect_contains(&["Source        config", "Max attempts  5", "Paused        no"], "the file's settings");

    run(&url, &["queue", "pause", q]).expect_code(0, "queue pause of a config-file queue");
    assert_eq!(run(&url, &["queue", "get", q, "--json"]).json()["paused"], true, "paused");
    assert_eq!(listed(&run(&url, &["queue", "ls", "--json"]), q)["paused"], true, "listed as paused");
    api.create(q, "due-now", json!({}));
    assert!(api.lease(q, json!({"max": 1, "wait": "1s"})).is_empty(), "a paused config-file queue hands out nothing");
    run(&url, &["queue", "resume", q]).expect_code(0, "queue resume of a config-file queue");
    assert_eq!(api.lease_one(q)["task"]["key"], "due-now", "leased once resumed");
}
