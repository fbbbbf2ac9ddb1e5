//! The client subcommands of `punctual` against a running server: what they send (checked
//! over HTTP afterwards), what they print (human and `--json`), and their exit codes.
//!
//! Guards against a flag that is parsed but not sent (a `--tag` or `--max-attempts`
//! silently dropped), `--json` output that is not JSON, a refusal or a missing task
//! that exits 0 or hides the server's message, a usage error that is not exit 2, an
//! unreachable server reported as something else, and `PUNCTUAL_SERVER` /
//! `PUNCTUAL_TOKEN` being ignored.

use crate::common;

use std::net::{Ipv4Addr, TcpListener};

use common::run::{run, run_env, server_message};
use common::{Api, assert_near, now_ms, parse_duration, parse_time, server_builder, start, start_server};
use serde_json::{Value, json};

/// Every JSON object (depth first, arrays in order) with a string `key`: tasks.
fn objects_with_key(value: &Value) -> Vec<&Value> {
    let mut found = Vec::new();
    fn walk<'a>(value: &'a Value, found: &mut Vec<&'a Value>) {
        match value {
            Value::Object(map) => {
                if map.get("key").is_some_and(Value::is_string) {
                    found.push(value);
                }
                map.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    walk(value, &mut found);
    found
}

/// Whether `value` holds the string `needle` anywhere.
fn holds_string(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(s) => s == needle,
        Value::Array(items) => items.iter().any(|v| holds_string(v, needle)),
        Value::Object(map) => map.values().any(|v| holds_string(v, needle)),
        _ => false,
    }
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

#[test]
fn schedule_sends_every_flag() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));

    let out = run(
        &url,
        &[
            "schedule",
            "order.cancel",
            "k1",
            "--delay",
            "30m",
            "--payload",
            r#"{"order_id": 1}"#,
            "--tag",
            "a",
            "--tag",
            "b",
            "--max-attempts",
            "5",
        ],
    );
    out.expect_code(0, "schedule with --delay, --payload, --tag, --max-attempts");
    out.expect_contains(&["created"], "schedule of a new task");
    let task = api.task("order.cancel", "k1").json;
    assert_eq!(task["payload"], json!({"order_id": 1}), "{task}");
    assert_eq!(task["tags"], json!(["a", "b"]), "{task}");
    assert_eq!(task["max_attempts"], 5, "{task}");
    assert_near(parse_time(&task["due_at"]), now_ms() + 30 * 60_000, 60_000, "--delay 30m");

    let out = run(&url, &["schedule", "order.cancel", "k2", "--at", "2099-01-01T00:00:00Z", "--repeat-every", "24h"]);
    out.expect_code(0, "schedule with --at and --repeat-every");
    let task = api.task("order.cancel", "k2").json;
    assert_eq!(task["due_at"], "2099-01-01T00:00:00.000Z", "{task}");
    assert_eq!(parse_duration(&task["repeat"]["every"]), 86_400_000, "{task}");

    let out = run(&url, &["schedule", "order.cancel", "k1", "--delay", "1h", "--if-exists", "keep"]);
    out.expect_code(0, "schedule --if-exists keep of an existing task");
    out.expect_contains(&["kept"], "keep");
    assert_eq!(api.task("order.cancel", "k1").json["payload"], json!({"order_id": 1}), "kept: untouched");

    let out = run(&url, &["schedule", "order.cancel", "k1", "--if-exists", "error"]);
    let refused = api.schedule("order.cancel", "k1", json!({"if_exists": "error"}));
    out.expect_code(1, "schedule --if-exists error of an existing task");
    out.expect_contains(&[&server_message(&refused)], "the server's message");

    let out = run(&url, &["schedule", "order.cancel", "k1", "--delay", "2h", "--payload", "[2]"]);
    out.expect_code(0, "schedule of an existing task: replace");
    out.expect_contains(&["replaced"], "replace");
    assert_eq!(api.task("order.cancel", "k1").json["payload"], json!([2]));

    let out = run(&url, &["schedule", "order.cancel", "k3", "--delay", "1m", "--json"]);
    out.expect_code(0, "schedule --json");
    let doc = out.json();
    assert!(holds_string(&doc, "created"), "--json names the outcome: {doc}");
    assert!(holds_string(&doc, "k3"), "--json names the task: {doc}");

    // Without --delay or --at: due now.
    run(&url, &["schedule", "order.cancel", "k4"]).expect_code(0, "schedule without a time");
    assert_near(parse_time(&api.task("order.cancel", "k4").json["due_at"]), now_ms(), 10_000, "due now");

    // A bad duration is a usage error, as a bad --payload is (it was exit 1).
    let out = run(&url, &["schedule", "order.cancel", "k5", "--delay", "30 seconds"]);
    assert_eq!(out.code, 2, "a bad duration is a usage error: {out:?}");
    assert!(!out.all().trim().is_empty(), "a refusal says why: {out:?}");
    api.task("order.cancel", "k5").expect_error(404, "not_found", None, "nothing scheduled");
}

#[test]
fn get_and_cancel_print_the_task_or_the_servers_message() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    api.create("order.cancel", "k1", json!({"delay": "1h", "payload": {"order_id": 1234}, "tags": ["pi-9"]}));

    let out = run(&url, &["get", "order.cancel", "k1"]);
    out.expect_code(0, "get");
    out.expect_contains(&["order.cancel", "k1", "scheduled", "order_id", "1234", "pi-9"], "get, human output");
    let out = run(&url, &["get", "order.cancel", "k1", "--json"]);
    out.expect_code(0, "get --json");
    let doc = out.json();
    let task = objects_with_key(&doc).into_iter().find(|t| t["key"] == "k1").expect("--json holds the task");
    assert_eq!(task["state"], "scheduled", "{doc}");
    assert_eq!(task["payload"], json!({"order_id": 1234}), "{doc}");
    assert_eq!(task["queue"], "order.cancel", "{doc}");

    let missing = api.task("order.cancel", "nope");
    let out = run(&url, &["get", "order.cancel", "nope"]);
    out.expect_code(1, "get of an unknown task");
    out.expect_contains(&[&server_message(&missing)], "get of an unknown task shows the server's message");

    let out = run(&url, &["cancel", "order.cancel", "k1"]);
    out.expect_code(0, "cancel");
    api.task("order.cancel", "k1").expect_error(404, "not_found", None, "cancelled over the CLI");
    let out = run(&url, &["cancel", "order.cancel", "k1"]);
    out.expect_code(1, "cancel of an unknown task");
    let missing = api.delete(&common::task_path("order.cancel", "k1"));
    out.expect_contains(&[&server_message(&missing)], "cancel of an unknown task shows the server's message");
}

#[test]
fn ls_lists_queues_and_a_queue_in_due_order_and_stats_counts() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    api.create("ls.q", "third", json!({"delay": "3h"}));
    api.create("ls.q", "first", json!({"delay": "1h"}));
    api.create("ls.q", "second", json!({"delay": "2h"}));
    api.create("other.q", "x", json!({"delay": "1h"}));

    let out = run(&url, &["ls", "ls.q"]);
    out.expect_code(0, "ls QUEUE");
    let at = |key: &str| out.stdout.find(key).unwrap_or_else(|| panic!("ls ls.q lacks {key}:\n{}", out.stdout));
    assert!(at("first") < at("second") && at("second") < at("third"), "due order:\n{}", out.stdout);
    let out = run(&url, &["ls", "ls.q", "--json"]);
    out.expect_code(0, "ls QUEUE --json");
    let doc = out.json();
    let keys: Vec<&str> = objects_with_key(&doc).iter().filter_map(|t| t["key"].as_str()).collect();
    assert_eq!(keys, ["first", "second", "third"], "--json lists the tasks in due order: {doc}");

    let out = run(&url, &["ls"]);
    out.expect_code(0, "ls");
    out.expect_contains(&["ls.q", "other.q"], "ls lists the queues");
    let out = run(&url, &["ls", "--json"]);
    out.expect_code(0, "ls --json");
    let doc = out.json();
    assert!(holds_string(&doc, "ls.q") && holds_string(&doc, "other.q"), "ls --json lists the queues: {doc}");

    let out = run(&url, &["stats"]);
    out.expect_code(0, "stats");
    out.expect_contains(&["ls.q", "other.q", "3", "scheduled"], "stats shows queues and counts");
    let out = run(&url, &["stats", "--json"]);
    out.expect_code(0, "stats --json");
    let doc = out.json();
    let mut found = false;
    let mut stack = vec![&doc];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if map.get("name").is_some_and(|n| n == "ls.q") {
                    assert_eq!(value["scheduled"], 3, "stats --json counts ls.q: {doc}");
                    found = true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(found, "stats --json has an object named ls.q: {doc}");
}

#[test]
fn dead_ls_retry_and_rm() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    let make_dead = || {
        let lease = api.lease_one("dead.q");
        let id = lease["lease_id"].as_str().expect("lease_id");
        api.ack(id, json!({"outcome": "fail", "error": "order not found"})).expect(204, "fail");
    };
    api.create("dead.q", "d1", json!({"payload": {"n": 1}}));
    make_dead();

    let out = run(&url, &["dead", "ls", "dead.q"]);
    out.expect_code(0, "dead ls");
    out.expect_contains(&["d1"], "dead ls lists the dead task");
    let out = run(&url, &["dead", "ls", "dead.q", "--json"]);
    out.expect_code(0, "dead ls --json");
    let doc = out.json();
    assert!(objects_with_key(&doc).iter().any(|t| t["key"] == "d1"), "dead ls --json: {doc}");

    run(&url, &["dead", "retry", "dead.q", "d1"]).expect_code(0, "dead retry");
    assert_eq!(api.task("dead.q", "d1").json["state"], "scheduled", "retried over the CLI");
    make_dead();
    run(&url, &["dead", "rm", "dead.q", "d1"]).expect_code(0, "dead rm");
    api.task("dead.q", "d1").expect_error(404, "not_found", None, "removed over the CLI");

    let refused = api.post("/v1/queues/dead.q/dead/d1/retry", json!({}));
    let out = run(&url, &["dead", "retry", "dead.q", "d1"]);
    out.expect_code(1, "dead retry of an unknown task");
    out.expect_contains(&[&server_message(&refused)], "dead retry shows the server's message");
    run(&url, &["dead", "rm", "dead.q", "d1"]).expect_code(1, "dead rm of an unknown task");
}

/// Issue 15 (10, 11): `cancel --tag`, `ls --tag`, and `dead retry QUEUE [--tag]` for
/// every dead task (or those with a tag) were missing.
#[test]
fn tags_cancel_and_list_and_dead_tasks_are_retried_in_bulk() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    for (key, delay, tags) in
        [("wf-2", "2h", json!(["pi-9"])), ("wf-1", "1h", json!(["pi-9"])), ("other", "1h", json!(["pi-10"]))]
    {
        api.create("tags.q", key, json!({"delay": delay, "tags": tags}));
    }
    let out = run(&url, &["ls", "tags.q", "--tag", "pi-9"]);
    out.expect_code(0, "ls --tag");
    assert!(!out.stdout.contains("other"), "ls --tag lists only the tagged:\n{}", out.stdout);
    let at = |key: &str| out.stdout.find(key).unwrap_or_else(|| panic!("ls --tag lacks {key}:\n{}", out.stdout));
    assert!(at("wf-1") < at("wf-2"), "due order:\n{}", out.stdout);
    let doc = run(&url, &["ls", "tags.q", "--tag", "pi-9", "--state", "scheduled", "--json"]).json();
    let keys: Vec<&str> = objects_with_key(&doc).iter().filter_map(|t| t["key"].as_str()).collect();
    assert_eq!(keys, ["wf-1", "wf-2"], "{doc}");
    let out = run(&url, &["ls", "tags.q", "--tag", "nobody"]);
    out.expect_code(0, "ls --tag of an unused tag");
    out.expect_contains(&["No tasks tagged 'nobody' in queue tags.q."], "ls --tag says so");

    let out = run(&url, &["cancel", "tags.q", "--tag", "pi-9"]);
    out.expect_code(0, "cancel --tag");
    out.expect_contains(&["Cancelled 2 tasks tagged 'pi-9' in queue tags.q."], "cancel --tag counts");
    api.task("tags.q", "wf-1").expect_error(404, "not_found", None, "cancelled by tag over the CLI");
    assert_eq!(api.task("tags.q", "other").json["state"], "scheduled", "another tag is kept");
    let out = run(&url, &["cancel", "tags.q", "--tag", "pi-9", "--json"]);
    out.expect_code(0, "cancel --tag of a tag nobody carries");
    assert_eq!(out.json(), json!({"cancelled": 0}));

    for (key, tags) in [("d1", json!(["pi-9"])), ("d2", json!(["pi-9"])), ("d3", json!([]))] {
        api.create("dead.bulk", key, json!({"tags": tags, "max_attempts": 1}));
    }
    for lease in api.lease("dead.bulk", json!({"max": 10})) {
        let id = lease["lease_id"].as_str().expect("lease_id");
        api.ack(id, json!({"outcome": "fail", "error": "order not found"})).expect(204, "fail");
    }
    let out = run(&url, &["dead", "retry", "dead.bulk", "--tag", "pi-9"]);
    out.expect_code(0, "dead retry --tag");
    out.expect_contains(&["Retried 2 dead tasks tagged 'pi-9' in queue dead.bulk"], "dead retry --tag counts");
    assert_eq!(api.task("dead.bulk", "d1").json["state"], "scheduled");
    assert_eq!(api.task("dead.bulk", "d3").json["state"], "dead", "not tagged");
    let out = run(&url, &["dead", "retry", "dead.bulk", "--json"]);
    out.expect_code(0, "dead retry QUEUE");
    assert_eq!(out.json(), json!({"retried": 1}), "every dead task: d3");
    assert_eq!(api.task("dead.bulk", "d3").json["state"], "scheduled");
    let out = run(&url, &["dead", "retry", "dead.bulk"]);
    out.expect_code(0, "dead retry QUEUE with none dead");
    out.expect_contains(&["Retried 0 dead tasks in queue dead.bulk"], "none left");
}

#[test]
fn usage_errors_exit_2_without_contacting_a_server() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["schedule"],
        &["schedule", "q"],
        &["schedule", "q", "k", "--delay", "1m", "--at", "2099-01-01T00:00:00Z"],
        &["schedule", "q", "k", "--if-exists", "maybe"],
        &["schedule", "q", "k", "--max-attempts", "abc"],
        &["schedule", "q", "k", "--delay", "30 seconds"],
        &["schedule", "q", "k", "--at", "tomorrow"],
        &["schedule", "q", "k", "--repeat-every", "soon"],
        &["schedule", "q", "k", "--repeat-every", "1h", "--repeat-until", "never"],
        &["schedule", "q", "k", "--payload", "{"],
        &["schedule", "q", "k", "--no-such-flag"],
        &["get", "q"],
        &["cancel"],
        &["cancel", "q"],
        &["cancel", "q", "k", "--tag", "pi-9"],
        &["dead"],
        &["dead", "frob", "q"],
        &["dead", "retry", "q", "k", "--tag", "pi-9"],
        &["get", "q", "k", "extra"],
        &["queue"],
        &["queue", "get"],
        &["queue", "set", "q"],
        &["queue", "set", "q", "--file", "/no/such/settings.json"],
        &["queue", "purge", "q", "--state", "leased", "--yes"],
        &["queue", "rm", "q", "--if-version", "three"],
    ];
    for args in cases {
        let mut all = args.to_vec();
        all.extend(["--server", url.as_str()]);
        let out = run_env(&all, &[]);
        assert_eq!(out.code, 2, "punctual {args:?}: a usage error exits 2: {out:?}");
        assert!(!out.stderr.trim().is_empty(), "punctual {args:?}: a usage error says why: {out:?}");
    }
    let subcommands: [&[&str]; 15] = [
        &["schedule"],
        &["get"],
        &["cancel"],
        &["ls"],
        &["stats"],
        &["dead", "ls"],
        &["dead", "retry"],
        &["dead", "rm"],
        &["queue", "ls"],
        &["queue", "get"],
        &["queue", "set"],
        &["queue", "pause"],
        &["queue", "resume"],
        &["queue", "purge"],
        &["queue", "rm"],
    ];
    for sub in subcommands {
        let mut args = sub.to_vec();
        args.push("--help");
        let out = run_env(&args, &[]);
        assert_eq!(out.code, 0, "punctual {sub:?} --help: {out:?}");
        assert!(out.stdout.contains("--server"), "punctual {sub:?} --help documents --server:\n{}", out.stdout);
        assert!(out.stdout.to_lowercase().contains("example"), "punctual {sub:?} --help has examples:\n{}", out.stdout);
    }
}

#[test]
fn an_unreachable_server_is_exit_1_with_a_message_saying_so() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}");
    for args in [&["get", "q", "k"][..], &["ls"], &["schedule", "q", "k"], &["stats"]] {
        let out = run(&url, args);
        out.expect_code(1, &format!("punctual {args:?} against a closed port"));
        let all = out.all().to_lowercase();
        assert!(
            (all.contains("reach") || all.contains("connect")) && all.contains(&port.to_string()),
            "punctual {args:?}: the message says the server at port {port} cannot be reached: {out:?}"
        );
    }
}

#[test]
fn punctual_server_and_punctual_token_are_honoured() {
    let server = start(server_builder().args(["--token", "s3cret"]));
    let url = server.url();
    let api = Api::new(url.clone()).token("s3cret");
    api.create("q", "k", json!({"delay": "1h"}));

    let out = run_env(&["get", "q", "k"], &[("PUNCTUAL_SERVER", &url), ("PUNCTUAL_TOKEN", "s3cret")]);
    out.expect_code(0, "server and token from the environment");
    out.expect_contains(&["k"], "get");

    // The server's variable works for the client too (was 401).
    let out = run_env(&["get", "q", "k"], &[("PUNCTUAL_SERVER", &url), ("PUNCTUAL_TOKENS", "s3cret,other")]);
    out.expect_code(0, "the token from PUNCTUAL_TOKENS");
    // Times in the zone of TZ (were UTC only).
    let out = run_env(
        &["get", "q", "k"],
        &[("PUNCTUAL_SERVER", &url), ("PUNCTUAL_TOKEN", "s3cret"), ("TZ", "Asia/Shanghai")],
    );
    out.expect_code(0, "get with TZ");
    out.expect_contains(&["+08:00 (in "], "times in Asia/Shanghai");

    let refused = Api::new(url.clone()).task("q", "k");
    let out = run_env(&["get", "q", "k"], &[("PUNCTUAL_SERVER", &url)]);
    out.expect_code(1, "no token for a server that needs one");
    out.expect_contains(&[&server_message(&refused)], "the server's unauthorized message");

    let out = run_env(&["get", "q", "k", "--token", "s3cret"], &[("PUNCTUAL_SERVER", &url)]);
    out.expect_code(0, "--token with the server from the environment");
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let out = run_env(
        &["get", "q", "k", "--server", &url, "--token", "s3cret"],
        &[("PUNCTUAL_SERVER", &closed), ("PUNCTUAL_TOKEN", "wrong")],
    );
    out.expect_code(0, "--server and --token override the environment");
    let out =
        run_env(&["schedule", "q", "k2", "--delay", "1h"], &[("PUNCTUAL_SERVER", &url), ("PUNCTUAL_TOKEN", "s3cret")]);
    out.expect_code(0, "schedule with the environment");
    api.task("q", "k2").expect(200, "scheduled through the environment");
}

#[test]
fn ls_pages_through_a_long_queue() {
    let server = start_server();
    let (url, api) = (server.url(), Api::of(&server));
    let base = now_ms() + 3_600_000;
    let tasks: Vec<Value> =
        (0..150).rev().map(|i| json!({"key": format!("t{i:03}"), "due_at": base + i * 1_000})).collect();
    api.post("/v1/queues/long.q/tasks", json!({"tasks": tasks})).expect(200, "batch");

    let out = run(&url, &["ls", "long.q", "--limit", "1000", "--json"]);
    out.expect_code(0, "ls --limit 1000 --json");
    let doc = out.json();
    let keys: Vec<&str> = objects_with_key(&doc).iter().filter_map(|t| t["key"].as_str()).collect();
    let want: Vec<String> = (0..150).map(|i| format!("t{i:03}")).collect();
    assert_eq!(keys, want, "every task once, in due order, across the server's pages");

    let out = run(&url, &["ls", "long.q", "--limit", "20"]);
    out.expect_code(0, "ls --limit 20");
    assert!(out.stdout.contains("t019") && !out.stdout.contains("t020"), "the first 20 tasks:\n{}", out.stdout);
    out.expect_contains(&["cursor"], "ls says how to continue");
}
