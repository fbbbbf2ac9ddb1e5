//! `punctual schedule … --target-url` and the task's target in `punctual get`, run as
//! the real binary: the request it sends (seen by a loopback stand-in for the server),
//! what it prints, its exit codes, and the real server's refusal of a target it will
//! not deliver.
//!
//! Guards against a `--target-*` flag parsed but not sent (or sent under another
//! name), a header without `:` or a target flag without `--target-url` reaching the
//! server instead of being a usage error (exit 2) that names the flag, a target the
//! server refuses exiting 0 or hiding the server's message, and `get` hiding the
//! target or `--json` reshaping the server's object.
//!
//! None of these needs a store that keeps targets: what `get` shows is read from the
//! stand-in's answer.

use crate::common;

use std::net::{Ipv4Addr, TcpListener};
use std::sync::mpsc;
use std::time::Duration;

use common::receiver::{read_request, write_response};
use common::run::{run, server_message};
use common::{Api, start_server};
use serde_json::{Value, json};

/// How long a test waits for the stand-in to receive a request.
const PATIENCE: Duration = Duration::from_secs(20);

/// A port nothing listens on (bound, then released): a request to it would fail with
/// exit 1, so exit 2 shows nothing was sent.
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// The task object API.md shows, carrying `target`.
fn task_with(target: &Value) -> Value {
    json!({
        "queue": "order.cancel", "key": "order-1234", "state": "scheduled",
        "due_at": "2099-01-01T00:00:00.000Z", "payload": {"order_id": 1234}, "attempts": 0,
        "max_attempts": 20, "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"}, "repeat": null,
        "tags": [], "version": 1, "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z", "lease_expires_at": null, "last_error": null,
        "target": target
    })
}

/// A stand-in for the server on loopback: answers a `PUT` with `{"outcome": "created",
/// "task": task}` (201) and anything else with `task` (200); each request's first line
/// and JSON body (`Null` when none) come out of the channel in arrival order.
fn stand_in(task: Value) -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the stand-in");
    let url = format!("http://{}", listener.local_addr().expect("the stand-in's address"));
    let (seen, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            let line = request.head.lines().next().unwrap_or_default().to_owned();
            if line.starts_with("PUT ") {
                write_response(&mut stream, 201, &json!({"outcome": "created", "task": task}).to_string());
            } else {
                write_response(&mut stream, 200, &task.to_string());
            }
            let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            if seen.send((line, body)).is_err() {
                return;
            }
        }
    });
    (url, received)
}

#[test]
fn schedule_sends_the_target_flags_and_get_shows_the_target() {
    let target = json!({"url": "https://shop.example.com/hooks/cancel", "method": "PUT",
                        "headers": {"X-Tenant": "acme", "Authorization": "Bearer s3cret"}, "timeout": "15s",
                        "body": {"order_id": 1234}});
    let (url, received) = stand_in(task_with(&target));

    let out = run(
        &url,
        &[
            "schedule",
            "order.cancel",
            "order-1234",
            "--delay",
            "30m",
            "--target-url",
            "https://shop.example.com/hooks/cancel",
            "--target-method",
            "put",
            "--target-header",
            "X-Tenant: acme",
            "--target-header",
            "Authorization: Bearer s3cret",
            "--target-timeout",
            "15s",
            "--target-body",
            r#"{"order_id": 1234}"#,
        ],
    );
    out.expect_code(0, "schedule with every --target-* flag");
    out.expect_contains(
        &["Delivered by the server to PUT https://shop.example.com/hooks/cancel (2 headers, timeout 15s, custom body)"],
        "schedule names the target",
    );
    let (line, body) = received.recv_timeout(PATIENCE).expect("the stand-in received the schedule");
    assert_eq!(line, "PUT /v1/queues/order.cancel/tasks/order-1234 HTTP/1.1");
    assert_eq!(body, json!({"delay": "30m", "target": target}), "the target object of API.md, as given");

    let out = run(&url, &["get", "order.cancel", "order-1234"]);
    out.expect_code(0, "get");
    let line =
        out.stdout.lines().find(|l| l.starts_with("Target")).unwrap_or_else(|| panic!("no Target line: {out:?}"));
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>().join(" "),
        "Target PUT https://shop.example.com/hooks/cancel (2 headers, timeout 15s, custom body)"
    );
    assert!(!out.stdout.contains("s3cret"), "header values are not printed: {}", out.stdout);
    let out = run(&url, &["get", "order.cancel", "order-1234", "--json"]);
    out.expect_code(0, "get --json");
    assert_eq!(out.json(), task_with(&target), "--json prints the server's object as is");

    // Without a target: no Target line.
    let (url, _received) = stand_in(task_with(&Value::Null));
    let out = run(&url, &["get", "order.cancel", "order-1234"]);
    out.expect_code(0, "get of a task without a target");
    assert!(!out.stdout.contains("Target"), "{}", out.stdout);
}

#[test]
fn a_target_flag_that_is_wrong_is_a_usage_error_naming_it_and_nothing_is_sent() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    for (args, needles) in [
        (&["--target-method", "PUT"][..], &["--target-method needs --target-url"][..]),
        (&["--target-header", "X-Tenant: acme"], &["--target-header needs --target-url"]),
        (&["--target-timeout", "5s"], &["--target-timeout needs --target-url"]),
        (&["--target-body", "{}"], &["--target-body needs --target-url"]),
        (
            &["--target-url", "https://h.example/x", "--target-header", "X-Tenant"],
            &["--target-header", "'X-Tenant: acme'"],
        ),
        (
            &["--target-url", "https://h.example/x", "--target-header", "Host: evil.example"],
            &["--target-header", "'Host'"],
        ),
        (&["--target-url", "https://h.example/x", "--target-timeout", "2m"], &["--target-timeout", "1s to 60s"]),
        (&["--target-url", "https://h.example/x", "--target-method", "TRACE"], &["--target-method", "POST, PUT"]),
        (&["--target-url", "ftp://h.example/x"], &["--target-url", "http or https"]),
    ] {
        let mut all = vec!["schedule", "order.cancel", "order-1234"];
        all.extend_from_slice(args);
        let out = run(&url, &all);
        out.expect_code(2, &format!("{args:?}"));
        out.expect_contains(needles, &format!("{args:?} says what is wrong"));
    }

    let help = run(&url, &["schedule", "--help"]);
    help.expect_code(0, "schedule --help");
    help.expect_contains(
        &[
            "HTTP target",
            "--target-url <URL>",
            "--target-header 'X-Tenant: acme'",
            "--target-url https://shop.example.com/hooks/cancel",
        ],
        "the help teaches targets by example",
    );
}

#[test]
fn a_target_the_server_refuses_exits_1_with_its_message() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));

    // A loopback address: refused by the default egress policy, at schedule time.
    let refused = api.schedule("order.cancel", "probe", json!({"target": {"url": "http://127.0.0.1:9/hook"}}));
    refused.expect_error(400, "invalid_argument", Some("target.url"), "a target on a refused IP literal");
    let out =
        run(&url, &["schedule", "order.cancel", "k1", "--delay", "1h", "--target-url", "http://127.0.0.1:9/hook"]);
    out.expect_code(1, "schedule to a refused address");
    out.expect_contains(&[&server_message(&refused)], "the server's message");
    api.task("order.cancel", "k1").expect_error(404, "not_found", None, "nothing scheduled");

    // A name is checked when it is resolved, at delivery: the schedule is taken.
    let out = run(
        &url,
        &[
            "schedule",
            "order.cancel",
            "k2",
            "--delay",
            "1h",
            "--target-url",
            "https://shop.example.com/hooks/cancel",
            "--target-header",
            "X-Tenant: acme",
        ],
    );
    out.expect_code(0, "schedule with a target on a host name");
    out.expect_contains(&["Created task 'k2' in queue order.cancel"], "created");
    api.task("order.cancel", "k2").expect(200, "the task exists");
}
