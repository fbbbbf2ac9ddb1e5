//! The `redis-stream` action through the real binary: `punctual serve --config` with
//! `kind = "redis-stream"` appends a task scheduled over HTTP to a stream on a private
//! `redis-server` when it is due, with the fields of the config file, and the task
//! ends done; a field whose template does not compile stops `check-config` and
//! start-up with the line of that field.
//!
//! Guards against: a broker action that is parsed but never run, `fields` read in the
//! library but dropped by the server's config, a template error reported without the
//! line it is on.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Api, BIN, server_builder, start, task_path};
use serde_json::json;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the config file");
    path
}

#[test]
fn a_due_task_is_appended_to_the_stream_and_ends_done() {
    let redis = punctual_testkit::redis::server();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "punctual.toml",
        &format!(
            r#"[egress]
allow = ["127.0.0.1"]

[queues."order.cancel".action]
kind = "redis-stream"
url = "{}"
stream = "events.{{{{ queue }}}}"
maxlen = 1000
timeout = "2s"

[queues."order.cancel".action.fields]
order = "{{{{ order_id }}}}"
task = "{{{{ key }}}}#{{{{ attempt }}}}"
"#,
            redis.url()
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config));
    let api = Api::new(server.url());
    api.create("order.cancel", "o-1234", json!({"payload": {"order_id": 1234}, "delay": "200ms"}));

    let entry = punctual_testkit::poll_until(Duration::from_secs(20), || {
        let entries = redis.command(&["XRANGE", "events.order.cancel", "-", "+"]).ok()?;
        (!entries.is_empty()).then_some(entries)
    })
    .expect("an entry within 20 s");
    // One entry: its id, then field, value, field, value (the config's table, by name).
    let lines: Vec<&str> = entry.lines().collect();
    assert_eq!(lines.len(), 5, "{entry}");
    assert_eq!(&lines[1..], ["order", "1234", "task", "o-1234#1"], "{entry}");

    let gone = api.get_until(&task_path("order.cancel", "o-1234"), "done and deleted", |resp| resp.status == 404);
    assert_eq!(gone.status, 404);
}

#[test]
fn a_field_template_that_does_not_compile_names_its_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write(
        &dir,
        "broken.toml",
        r#"[egress]
allow = ["127.0.0.1"]

[queues."order.cancel".action]
kind = "redis-stream"
url = "redis://127.0.0.1:6390"
stream = "events"

[queues."order.cancel".action.fields]
order = "{{ order_id }}"
who = "{{ assignee "
"#,
    );
    let out = std::process::Command::new(BIN).arg("check-config").arg(&config).output().expect("run check-config");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.toml, line 11:"), "check-config names the field's line: {stderr}");
    assert!(stderr.contains("fields.who") && stderr.contains("syntax error"), "{stderr}");

    let error = match server_builder().arg("--config").arg(&config).start() {
        Ok(_) => panic!("the server started with a broken template"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("line 11") && error.contains("syntax error"), "start-up names the line: {error}");
}
