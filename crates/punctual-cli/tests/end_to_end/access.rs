//! Scoped tokens (`[[access]]`) through the real binary. Guards against a route that
//! forgets its permission (a read-only token that can cancel, a worker token that can
//! purge), a permission checked after the change it guards (a refused call that still
//! acked, extended or paused), a queue pattern that lets other queues through, a token
//! that shows in the server's log, and a CLI that prints a 403 like any other error.
//!
//! The table test runs every route of [`ROUTES`] with every kind of token, on a queue
//! the token's pattern matches and on one it does not, each case on a fresh queue
//! prepared with a scheduled task, a live lease, a dead task and settings; a refused
//! case must leave the queue exactly as it was. [`ROUTES`] must list every
//! operation of the served `/openapi.json`, so a new route cannot be left out.

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::run::run_env;
use common::{Api, Resp, enc, server_builder, start};
use reqwest::Method;
use serde_json::{Value, json};

const ROOT: &str = "root-token-0001";
/// Read on every queue: the one scoped token `/metrics` lets through.
const READ_EVERYWHERE: &str = "read-everywhere-0002";

/// The scoped tokens of the table: one permission each, on `allowed.*`.
const SCOPED: [(&str, &str); 4] = [
    ("read", "scoped-read-0003"),
    ("schedule", "scoped-schedule-0004"),
    ("work", "scoped-work-0005"),
    ("admin", "scoped-admin-0006"),
];

/// What a route needs (the README's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// No token at all.
    Open,
    /// Any valid token.
    AnyToken,
    /// The permission on the queue of the path (or of the lease named).
    OnQueue(&'static str),
    /// The permission on some queue; the answer lists only the queues it covers.
    Listing(&'static str),
    /// The permission on every queue.
    Everywhere(&'static str),
}

/// One route: method, template, what it needs, the body sent and the status when
/// allowed.
struct Route {
    method: &'static str,
    path: &'static str,
    needs: Needs,
    body: Option<fn(&Case) -> Value>,
    ok: u16,
}

const fn route(method: &'static str, path: &'static str, needs: Needs, ok: u16) -> Route {
    Route { method, path, needs, body: None, ok }
}

const fn with_body(method: &'static str, path: &'static str, needs: Needs, ok: u16, body: fn(&Case) -> Value) -> Route {
    Route { method, path, needs, body: Some(body), ok }
}

use Needs::{AnyToken, Everywhere, Listing, OnQueue, Open};

/// Every route the server serves, with its permission. Kept equal to the operations of
/// `/openapi.json` by the table test.
const ROUTES: &[Route] = &[
    with_body("PUT", "/v1/queues/{queue}/tasks/{key}", OnQueue("schedule"), 200, |_| json!({"delay": "2h"})),
    with_body(
        "POST",
        "/v1/queues/{queue}/tasks",
        OnQueue("schedule"),
        200,
        |_| json!({"tasks": [{"key": "batched", "delay": "1h"}]}),
    ),
    route("GET", "/v1/queues/{queue}/tasks/{key}", OnQueue("read"), 200),
    route("GET", "/v1/queues/{queue}/tasks/{key}/history", OnQueue("read"), 200),
    route("DELETE", "/v1/queues/{queue}/tasks/{key}", OnQueue("schedule"), 204),
    route("DELETE", "/v1/queues/{queue}/tags/{tag}", OnQueue("schedule"), 200),
    route("GET", "/v1/queues/{queue}/tasks", OnQueue("read"), 200),
    route("GET", "/v1/queues", Listing("read"), 200),
    route("GET", "/v1/queues/{queue}", OnQueue("read"), 200),
    route("GET", "/v1/queues/{queue}/activity", OnQueue("read"), 200),
    route("GET", "/v1/queues/{queue}/groups", OnQueue("read"), 200),
    with_body("POST", "/v1/queues/{queue}/lease", OnQueue("work"), 200, |_| json!({"max": 1})),
    with_body("POST", "/v1/leases/{lease_id}/ack", OnQueue("work"), 204, |_| json!({"outcome": "done"})),
    with_body(
        "POST",
        "/v1/acks",
        OnQueue("work"),
        200,
        |case| json!({"acks": [{"lease_id": case.lease_id, "outcome": "done"}]}),
    ),
    with_body("POST", "/v1/leases/{lease_id}/extend", OnQueue("work"), 200, |_| json!({"lease": "2h"})),
    route("GET", "/v1/queues/{queue}/dead", OnQueue("admin"), 200),
    route("POST", "/v1/queues/{queue}/dead/{dead}/retry", OnQueue("admin"), 200),
    with_body("POST", "/v1/queues/{queue}/dead/retry", OnQueue("admin"), 200, |_| json!({})),
    route("DELETE", "/v1/queues/{queue}/dead/{dead}", OnQueue("admin"), 204),
    route("GET", "/v1/queues/{queue}/settings", OnQueue("admin"), 200),
    with_body("PUT", "/v1/queues/{queue}/settings", OnQueue("admin"), 200, |_| json!({"concurrency": 3})),
    with_body("PATCH", "/v1/queues/{queue}/settings", OnQueue("admin"), 200, |_| json!({"concurrency": 4})),
    route("DELETE", "/v1/queues/{queue}/settings", OnQueue("admin"), 204),
    route("POST", "/v1/queues/{queue}/pause", OnQueue("admin"), 200),
    route("POST", "/v1/queues/{queue}/resume", OnQueue("admin"), 200),
    route("DELETE", "/v1/queues/{queue}/tasks", OnQueue("admin"), 200),
    route("GET", "/v1/calendars", Everywhere("admin"), 200),
    route("GET", "/v1/calendars/{name}", Everywhere("admin"), 200),
    with_body("PUT", "/v1/calendars/{name}", Everywhere("admin"), 200, |_| CALENDAR.clone()),
    route("DELETE", "/v1/calendars/{name}", Everywhere("admin"), 204),
    route("GET", "/v1/audit", Everywhere("admin"), 200),
    route("GET", "/healthz", Open, 200),
    route("GET", "/readyz", Open, 200),
    route("GET", "/metrics", Everywhere("read"), 200),
    route("GET", "/", Open, 200),
    route("GET", "/openapi.json", AnyToken, 200),
    route("GET", "/v1/access", AnyToken, 200),
];

/// The calendar each case makes, named as its queue.
static CALENDAR: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| json!({"tz": "UTC", "hours": {"mon": ["09:00-17:00"]}}));

/// The fresh queue of one case and what was prepared in it.
struct Case {
    queue: String,
    lease_id: String,
}

impl Case {
    /// A queue with a task `k` (tag `t`, due in 1 h), a live lease on `leased`, a dead
    /// task `dead` and settings; and a calendar named as the queue.
    fn prepare(root: &Api, queue: String) -> Case {
        root.create(&queue, "dead", json!({"max_attempts": 1}));
        let lease = root.lease_one(&queue);
        root.ack(lease["lease_id"].as_str().unwrap(), json!({"outcome": "fail", "error": "x"}))
            .expect(204, "the dead task dies");
        root.create(&queue, "leased", json!({}));
        let lease = root.lease(&queue, json!({"max": 1, "lease": "1h", "wait": "5s"}));
        assert_eq!(lease.len(), 1, "{lease:?}");
        root.create(&queue, "k", json!({"delay": "1h", "tags": ["t"]}));
        root.put(&format!("/v1/queues/{}/settings", enc(&queue)), json!({})).expect(201, "settings");
        root.put(&format!("/v1/calendars/{}", enc(&queue)), CALENDAR.clone()).expect(201, "a calendar");
        Case { queue, lease_id: lease[0]["lease_id"].as_str().unwrap().to_owned() }
    }

    fn path(&self, template: &str) -> String {
        template
            .replace("{queue}", &enc(&self.queue))
            .replace("{key}", "k")
            .replace("{tag}", "t")
            .replace("{dead}", "dead")
            .replace("{lease_id}", &enc(&self.lease_id))
            .replace("{name}", &enc(&self.queue))
    }

    /// Everything a call could change in the queue, as the root token reads it.
    fn state(&self, root: &Api) -> Value {
        let q = enc(&self.queue);
        let tasks = root.get(&format!("/v1/queues/{q}/tasks?limit=1000")).expect(200, "tasks").clone();
        let settings = root.get(&format!("/v1/queues/{q}/settings")).json;
        let detail = root.get(&format!("/v1/queues/{q}")).expect(200, "queue").clone();
        json!({"tasks": tasks["tasks"], "settings": settings,
               "counts": [detail["scheduled"], detail["leased"], detail["dead"], detail["paused"]]})
    }
}

fn write_config(dir: &tempfile::TempDir) -> PathBuf {
    let mut text =
        format!("tokens = [\"{ROOT}\"]\n\n[[access]]\ntoken = \"{READ_EVERYWHERE}\"\npermissions = [\"read\"]\n");
    for (permission, token) in SCOPED {
        text.push_str(&format!(
            "\n[[access]]\nname = \"scoped-{permission}\"\ntoken = \"{token}\"\npermissions = [\"{permission}\"]\n\
             queues = [\"allowed.*\"]\n"
        ));
    }
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn send(api: &Api, method: &str, path: &str, body: Option<Value>) -> Resp {
    api.call(method.parse::<Method>().unwrap(), path, body.as_ref())
}

#[test]
fn every_route_with_every_permission_on_a_matching_and_another_queue() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(server_builder().arg("--config").arg(write_config(&dir)));
    let api = Api::of(&server);
    let root = api.token(ROOT);

    // The list covers every operation the server documents, and nothing else.
    let doc = root.get("/openapi.json").expect(200, "the document").clone();
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(|m| (m.to_uppercase(), path.clone())))
        .collect();
    let listed: BTreeSet<(String, String)> =
        ROUTES.iter().map(|r| (r.method.to_owned(), r.path.replace("{dead}", "{key}"))).collect();
    assert_eq!(listed, documented, "ROUTES and the operations of /openapi.json differ");

    let mut tokens: Vec<(&str, Option<&str>)> = SCOPED.iter().map(|(p, t)| (*t, Some(*p))).collect();
    tokens.push((ROOT, None));
    let (mut cases, mut refused) = (0, 0);
    for (n, route) in ROUTES.iter().enumerate() {
        for (t, (token, permission)) in tokens.iter().enumerate() {
            let caller = api.token(token);
            for matching in [true, false] {
                let prefix = if matching { "allowed" } else { "other" };
                let case = Case::prepare(&root, format!("{prefix}.r{n}-t{t}"));
                let before = case.state(&root);
                let what = format!("{} {} with {permission:?} on {}", route.method, route.path, case.queue);
                let resp = send(&caller, route.method, &case.path(route.path), route.body.map(|b| b(&case)));
                let allowed = match (route.needs, permission) {
                    (_, None) | (Open | AnyToken, _) => true,
                    (OnQueue(p), Some(held)) => p == *held && matching,
                    (Listing(p), Some(held)) => p == *held,
                    (Everywhere(_), Some(_)) => false,
                };
                if allowed {
                    resp.expect(route.ok, &what);
                } else {
                    resp.expect_error(403, "forbidden", None, &what);
                    let message = resp.json["error"]["message"].as_str().unwrap();
                    let needed = match route.needs {
                        OnQueue(p) | Listing(p) | Everywhere(p) => p,
                        Open | AnyToken => unreachable!("never refused"),
                    };
                    assert!(message.contains(&format!("the {needed} permission")), "{what}: {message}");
                    if let OnQueue(_) = route.needs {
                        assert!(message.contains(&format!("'{}'", case.queue)), "{what}: names the queue: {message}");
                    }
                    assert_eq!(case.state(&root), before, "{what}: a refusal changed nothing");
                    refused += 1;
                }
                if route.path == "/v1/queues" && allowed {
                    let names: Vec<&str> =
                        resp.json["queues"].as_array().unwrap().iter().map(|q| q["name"].as_str().unwrap()).collect();
                    assert_eq!(names.contains(&case.queue.as_str()), matching || permission.is_none(), "{what}");
                    if permission.is_some() {
                        assert!(names.iter().all(|q| q.starts_with("allowed.")), "{what}: only its queues: {names:?}");
                    }
                }
                if route.path == "/v1/acks" && allowed {
                    assert_eq!(resp.json["results"][0]["status"], 204, "{what}: {}", resp.text);
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, ROUTES.len() * 5 * 2);
    println!(
        "{} routes × 5 tokens × 2 queues: {cases} cases, {refused} refused with 403 and nothing changed, {} allowed",
        ROUTES.len(),
        cases - refused
    );

    // /metrics shows every queue: a token that reads every queue may see it.
    api.token(READ_EVERYWHERE).get("/metrics").expect(200, "read on every queue");
    api.token(READ_EVERYWHERE).put("/v1/queues/allowed.x/tasks/k", json!({})).expect_error(
        403,
        "forbidden",
        None,
        "read only",
    );
    // The grant as the token asks for it.
    let (_, reader) = SCOPED[0];
    let grant = api.token(reader).get("/v1/access").expect(200, "the grant").clone();
    assert_eq!(grant, json!({"name": "scoped-read", "permissions": ["read"], "queues": ["allowed.*"]}));
    let grant = root.get("/v1/access").expect(200, "the grant").clone();
    let everything = json!({"name": "tokens.1", "permissions": ["read", "schedule", "work", "admin"], "queues": ["*"]});
    assert_eq!(grant, everything, "a token of tokens goes by its place in the list");
    let grant = api.token(READ_EVERYWHERE).get("/v1/access").expect(200, "the grant").clone();
    assert_eq!(grant["name"], "access.1", "a table without a name goes by its place in the file");
    // Logs name the token that made a change, never the token itself.
    let (_, admin) = SCOPED[3];
    api.token(admin).post("/v1/queues/allowed.named/pause", json!({})).expect(200, "a pause");
    let logs = server.wait_for_log("queue paused", std::time::Duration::from_secs(10)).unwrap();
    let line = logs.lines().find(|line| line.contains("queue paused")).unwrap();
    assert!(line.contains("by=scoped-admin") && !line.contains(admin), "the log names the token: {line}");
    // Unknown tokens stay 401, before routing.
    for path in ["/v1/access", "/v1/queues/allowed.x/tasks/k", "/v1/nothing"] {
        api.token("nobody").get(path).expect_error(401, "unauthorized", None, path);
    }
}

#[test]
fn a_batch_of_acks_with_one_lease_of_another_queue_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(server_builder().arg("--config").arg(write_config(&dir)));
    let api = Api::of(&server);
    let root = api.token(ROOT);
    let mine = Case::prepare(&root, "allowed.acks".into());
    let theirs = Case::prepare(&root, "other.acks".into());
    let before = (mine.state(&root), theirs.state(&root));
    let (_, worker) = SCOPED[2];
    let resp = api.token(worker).post(
        "/v1/acks",
        json!({"acks": [{"lease_id": mine.lease_id, "outcome": "done"}, {"lease_id": theirs.lease_id, "outcome": "done"}]}),
    );
    resp.expect_error(403, "forbidden", None, "one lease of another queue");
    let message = resp.json["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("acks[1]: ") && message.contains("'other.acks'"), "{message}");
    assert_eq!((mine.state(&root), theirs.state(&root)), before, "no ack was applied");
    // A malformed lease id names no queue: the item's own 404, as without scopes.
    let resp = api.token(worker).post(
        "/v1/acks",
        json!({"acks": [{"lease_id": "not-a-lease", "outcome": "done"}, {"lease_id": mine.lease_id, "outcome": "done"}]}),
    );
    resp.expect(200, "its own queue");
    assert_eq!(resp.json["results"][0]["status"], 404, "{}", resp.text);
    assert_eq!(resp.json["results"][1]["status"], 204, "{}", resp.text);
}

#[test]
fn the_cli_prints_a_refusal_as_forbidden_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(server_builder().arg("--config").arg(write_config(&dir)));
    let (_, reader) = SCOPED[0];
    let url = server.url();
    let out = run_env(&["schedule", "other.q", "k", "--delay", "1h", "--server", &url, "--token", reader], &[]);
    out.expect_code(1, "a refused schedule");
    assert!(
        out.stderr.contains("error: forbidden: this token lacks the schedule permission on queue 'other.q'"),
        "{}",
        out.stderr
    );
    let out = run_env(&["ls", "allowed.q", "--server", &url, "--token", reader], &[]);
    out.expect_code(0, "a read it may do");
}

#[test]
fn tokens_never_show_in_the_servers_log() {
    let dir = tempfile::tempdir().unwrap();
    let secret_env = "scoped-from-env-0007";
    let text = format!(
        "{}\n[[access]]\ntoken_env = \"PUNCTUAL_TEST_ACCESS_TOKEN\"\npermissions = [\"read\"]\n",
        std::fs::read_to_string(write_config(&dir)).unwrap()
    );
    let config = dir.path().join("logged.toml");
    std::fs::write(&config, text).unwrap();
    let mut server = start(
        server_builder()
            .arg("--config")
            .arg(&config)
            .env("PUNCTUAL_TEST_ACCESS_TOKEN", secret_env)
            .env("RUST_LOG", "debug"),
    );
    let api = Api::of(&server);
    let (_, reader) = SCOPED[0];
    api.token(secret_env).get("/v1/queues").expect(200, "the token from the environment");
    api.token(reader).put("/v1/queues/other.q/tasks/k", json!({})).expect_error(403, "forbidden", None, "refused");
    api.token("wrong-token-0008").get("/v1/queues").expect_error(401, "unauthorized", None, "unknown");
    api.token(ROOT).create("allowed.q", "k", json!({}));
    let status = server.terminate().unwrap();
    assert!(status.success(), "{status}");
    let logs = server.logs();
    assert!(logs.contains("scoped"), "the start line says some tokens are scoped: {logs}");
    for token in [ROOT, READ_EVERYWHERE, reader, secret_env, "wrong-token-0008"] {
        assert!(!logs.contains(token), "the log shows the token {token}:\n{logs}");
    }
}

#[test]
fn bad_access_tables_stop_start_up_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("[[access]]\ntoken = \"a\"\npermissions = [\"write\"]\n", 3, "'write' is not a permission"),
        ("[[access]]\ntoken = \"a\"\nqueues = [\"order/*\"]\n", 3, "holds '/'"),
        ("[[access]]\ntoken = \"a\"\ntoken_env = \"PUNCTUAL_TEST_SET\"\n", 3, "not both"),
        ("[[access]]\ntoken_env = \"PUNCTUAL_TEST_SURELY_UNSET\"\n", 2, "PUNCTUAL_TEST_SURELY_UNSET is not set"),
        ("tokens = [\"dup-token\"]\n[[access]]\ntoken = \"dup-token\"\n", 3, "already given on line 1"),
        (
            "[[access]]\nname = \"ci\"\ntoken = \"a\"\n[[access]]\nname = \"ci\"\ntoken = \"b\"\n",
            5,
            "already given on line 2",
        ),
        ("[[access]]\nname = \"billing service\"\ntoken = \"a\"\n", 2, "' ' is not allowed in a token name"),
    ];
    for (text, line, needle) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let error = match server_builder().arg("--config").arg(&path).env("PUNCTUAL_TEST_SET", "x").start() {
            Ok(_) => panic!("the server started with {text:?}"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains(needle), "{text:?}: the error says {needle:?}:\n{error}");
        assert!(error.contains(&format!("line {line}")), "{text:?}: the error names line {line}:\n{error}");
        if needle.starts_with("already") {
            assert!(!error.contains("dup-token"), "the error does not show the token: {error}");
        }
        let out = run_env(&["check-config", path.to_str().unwrap()], &[]);
        out.expect_code(1, "check-config refuses it too");
        assert!(out.stderr.contains(&format!("line {line}")), "{}", out.stderr);
    }
}
