//! Malformed requests, table-driven: each answers API.md's error body with the expected
//! status, `code` and `field`, and none of them harms the server or what it stores.
//!
//! Guards against input that panics a handler (a 500, or a dead connection), is
//! silently accepted (a typo'd duration scheduling a task due now), is refused without
//! naming the field, gets a framework's own error body instead of API.md's, or changes
//! stored tasks or live leases on its way to being refused. Also checks the edges that
//! are valid (a key of exactly 512 bytes, a `/` in a key sent as `%2F`).

mod common;

use punctual_testkit::server::ServerProcess;

use common::{Api, enc, parse_time, server_builder, start, start_server, tamper, task_path};
use reqwest::Method;
use serde_json::{Value, json};

enum Body {
    None,
    Json(Value),
    Raw(&'static str),
}

struct Case {
    name: &'static str,
    method: Method,
    path: String,
    body: Body,
    status: u16,
    code: &'static str,
    /// The fields the error may name; empty when it need not name one.
    fields: &'static [&'static str],
}

fn case(name: &'static str, method: Method, path: impl Into<String>, body: Body) -> Case {
    Case { name, method, path: path.into(), body, status: 400, code: "invalid_argument", fields: &[] }
}

impl Case {
    fn field(mut self, fields: &'static [&'static str]) -> Case {
        self.fields = fields;
        self
    }

    fn status(mut self, status: u16, code: &'static str) -> Case {
        self.status = status;
        self.code = code;
        self
    }
}

fn put(name: &'static str, body: Value, fields: &'static [&'static str]) -> Case {
    case(name, Method::PUT, task_path("q", "k"), Body::Json(body)).field(fields)
}

fn many(n: usize, item: impl Fn(usize) -> Value) -> Value {
    Value::Array((0..n).map(item).collect())
}

fn cases(lease: &str) -> Vec<Case> {
    use Body::{Json, Raw};
    let ack = format!("/v1/leases/{}/ack", enc(lease));
    let extend = format!("/v1/leases/{}/extend", enc(lease));
    let big_payload = "x".repeat(70_000);
    let mut cases = vec![
        // Scheduling one task: the body.
        case("invalid JSON", Method::PUT, task_path("q", "k"), Raw(r#"{"delay":"#)),
        case("a JSON array", Method::PUT, task_path("q", "k"), Raw("[1, 2]")),
        case("a JSON string", Method::PUT, task_path("q", "k"), Raw(r#""due now""#)),
        put("delay of the wrong type", json!({"delay": true}), &["delay"]),
        put("delay \"30 seconds\"", json!({"delay": "30 seconds"}), &["delay"]),
        put("delay -5", json!({"delay": -5}), &["delay"]),
        put("delay \"1.5h\"", json!({"delay": "1.5h"}), &["delay"]),
        put("delay \"\"", json!({"delay": ""}), &["delay"]),
        put("delay \"5 fortnights\"", json!({"delay": "5fortnights"}), &["delay"]),
        put("both delay and due_at", json!({"delay": "1m", "due_at": "2099-01-01T00:00:00Z"}), &["delay", "due_at"]),
        put("due_at \"tomorrow\"", json!({"due_at": "tomorrow"}), &["due_at"]),
        put("due_at on no such date", json!({"due_at": "2026-13-45T00:00:00Z"}), &["due_at"]),
        put("due_at without a zone", json!({"due_at": "2099-01-01 10:00"}), &["due_at"]),
        put("due_at of the wrong type", json!({"due_at": true}), &["due_at"]),
        put("unknown if_exists", json!({"if_exists": "maybe"}), &["if_exists"]),
        put("max_attempts of the wrong type", json!({"max_attempts": "five"}), &["max_attempts"]),
        put("max_attempts -1", json!({"max_attempts": -1}), &["max_attempts"]),
        put("tags not a list", json!({"tags": "pi-9"}), &["tags"]),
        put("tags not strings", json!({"tags": [1]}), &["tags"]),
        put("repeat every \"soon\"", json!({"repeat": {"every": "soon"}}), &["repeat", "repeat.every"]),
        put("repeat every 60 (ms, meant as seconds)", json!({"repeat": {"every": 60}}), &["repeat.every"]),
        put("repeat every 500ms", json!({"repeat": {"every": "500ms"}}), &["repeat.every"]),
        put("delay of a month", json!({"delay": "P1M"}), &["delay"]),
        put("delay negative in ISO 8601", json!({"delay": "-PT5M"}), &["delay"]),
        put("oversized payload", json!({"payload": big_payload}), &["payload"]).status(413, "payload_too_large"),
        put("payload of 65,537 bytes as JSON", json!({"payload": "x".repeat(65_535)}), &["payload"])
            .status(413, "payload_too_large"),
        put("a body of 2 MiB", json!({"payload": "x".repeat(2 << 20)}), &[]).status(413, "payload_too_large"),
        put("repeat with a bad cron", json!({"repeat": {"cron": "61 * * * *"}}), &["repeat", "repeat.cron"]),
        put(
            "repeat with an unknown zone",
            json!({"repeat": {"cron": "0 9 * * *", "tz": "Mars/Olympus"}}),
            &["repeat", "repeat.tz"],
        ),
        // Cron syntax beyond Vixie's, and repeats that would never fire (issue 14).
        put("cron with a year field", json!({"repeat": {"cron": "0 0 0 1 1 * 1999"}}), &["repeat.cron"]),
        put("cron of 7 fields", json!({"repeat": {"cron": "* * * * * * *"}}), &["repeat.cron"]),
        put("cron with an empty list item", json!({"repeat": {"cron": "1,,2 * * * *"}}), &["repeat.cron"]),
        put("cron in Quartz syntax", json!({"repeat": {"cron": "0 0 L * ?"}}), &["repeat.cron"]),
        put("cron on no date", json!({"repeat": {"cron": "0 0 31 4 *"}}), &["repeat.cron"]),
        put(
            "every until a past time",
            json!({"repeat": {"every": "1h", "until": "2020-01-01T00:00:00Z"}}),
            &["repeat.until"],
        ),
        put(
            "cron until a past time",
            json!({"repeat": {"cron": "0 9 * * *", "until": "2020-01-01T00:00:00Z"}}),
            &["repeat.until"],
        ),
        put(
            "a delay past until",
            json!({"delay": "36500d", "repeat": {"every": "1h", "until": "2100-01-01T00:00:00Z"}}),
            &["repeat.until"],
        ),
        // Names in the path.
        case("queue with a space", Method::PUT, task_path("bad queue", "k"), Json(json!({}))).field(&["queue"]),
        case("queue with a slash", Method::PUT, task_path("a/b", "k"), Json(json!({}))).field(&["queue"]),
        case("queue of 129 characters", Method::PUT, task_path(&"q".repeat(129), "k"), Json(json!({})))
            .field(&["queue"]),
        case("queue not ASCII", Method::PUT, task_path("ünïcode", "k"), Json(json!({}))).field(&["queue"]),
        case("key with a control character", Method::PUT, task_path("q", "a\u{1}b"), Json(json!({}))).field(&["key"]),
        case("key with a newline", Method::PUT, task_path("q", "a\nb"), Json(json!({}))).field(&["key"]),
        case("key not UTF-8", Method::PUT, "/v1/queues/q/tasks/%FF%FE", Json(json!({}))).field(&["key"]),
        case("queue not UTF-8", Method::PUT, "/v1/queues/%FF/tasks/k", Json(json!({}))).field(&["queue"]),
        case("queue not UTF-8 in a read", Method::GET, "/v1/queues/%FF", Body::None).field(&["queue"]),
        case("key with DEL", Method::PUT, task_path("q", "a\u{7f}"), Json(json!({}))).field(&["key"]),
        case("key of 513 bytes", Method::PUT, task_path("q", &"k".repeat(513)), Json(json!({}))).field(&["key"]),
        case("key of 513 bytes in 171 characters", Method::PUT, task_path("q", &"€".repeat(171)), Json(json!({})))
            .field(&["key"]),
        // Batches.
        case("batch tasks not a list", Method::POST, "/v1/queues/q/tasks", Json(json!({"tasks": "nope"})))
            .field(&["tasks"]),
        case("batch without tasks", Method::POST, "/v1/queues/q/tasks", Json(json!({}))).field(&["tasks"]),
        case("batch of invalid JSON", Method::POST, "/v1/queues/q/tasks", Raw(r#"{"tasks": [{"key": "a"}"#)),
        case(
            "batch of 10,001 tasks",
            Method::POST,
            "/v1/queues/q/tasks",
            Json(json!({"tasks": many(10_001, |i| json!({"key": format!("b{i}"), "delay": "1h"}))})),
        )
        .field(&["tasks"]),
        case("batch into an invalid queue", Method::POST, "/v1/queues/bad%20queue/tasks", Json(json!({"tasks": []})))
            .field(&["queue"]),
        // Leasing.
        case("lease max 0", Method::POST, "/v1/queues/q/lease", Json(json!({"max": 0}))).field(&["max"]),
        case("lease max 1001", Method::POST, "/v1/queues/q/lease", Json(json!({"max": 1001}))).field(&["max"]),
        case("lease max of the wrong type", Method::POST, "/v1/queues/q/lease", Json(json!({"max": "ten"})))
            .field(&["max"]),
        case("lease of 500ms", Method::POST, "/v1/queues/q/lease", Json(json!({"lease": "500ms"}))).field(&["lease"]),
        case("lease of 13h", Method::POST, "/v1/queues/q/lease", Json(json!({"lease": "13h"}))).field(&["lease"]),
        case("wait of 61s", Method::POST, "/v1/queues/q/lease", Json(json!({"wait": "61s"}))).field(&["wait"]),
        case("wait \"forever\"", Method::POST, "/v1/queues/q/lease", Json(json!({"wait": "forever"}))).field(&["wait"]),
        case("lease from an invalid queue", Method::POST, "/v1/queues/bad%20queue/lease", Json(json!({})))
            .field(&["queue"]),
        // Acks of a live lease: refused before anything changes.
        case("unknown outcome", Method::POST, ack.clone(), Json(json!({"outcome": "maybe"}))).field(&["outcome"]),
        case("ack without outcome", Method::POST, ack.clone(), Json(json!({}))).field(&["outcome"]),
        case("retry delay \"bogus\"", Method::POST, ack.clone(), Json(json!({"outcome": "retry", "delay": "bogus"})))
            .field(&["delay"]),
        case(
            "reschedule due_at \"never\"",
            Method::POST,
            ack.clone(),
            Json(json!({"outcome": "reschedule", "due_at": "never"})),
        )
        .field(&["due_at"]),
        case("ack of invalid JSON", Method::POST, ack.clone(), Raw("{outcome: done}")),
        case("extend by \"forever\"", Method::POST, extend, Json(json!({"lease": "forever"}))).field(&["lease"]),
        case("malformed lease id", Method::POST, "/v1/leases/garbage/ack", Json(json!({"outcome": "done"})))
            .status(404, "not_found"),
        case("acks not a list", Method::POST, "/v1/acks", Json(json!({"acks": "x"}))).field(&["acks"]),
        case(
            "10,001 acks",
            Method::POST,
            "/v1/acks",
            Json(json!({"acks": many(10_001, |_| json!({"lease_id": "garbage", "outcome": "done"}))})),
        )
        .field(&["acks"]),
        // Lists.
        case("list limit 0", Method::GET, "/v1/queues/q/tasks?limit=0", Body::None).field(&["limit"]),
        case("list limit not a number", Method::GET, "/v1/queues/q/tasks?limit=abc", Body::None).field(&["limit"]),
        case("list of an unknown state", Method::GET, "/v1/queues/q/tasks?state=bogus", Body::None).field(&["state"]),
        case("list with a forged cursor", Method::GET, "/v1/queues/q/tasks?cursor=garbage%21%21", Body::None)
            .field(&["cursor"]),
        case("dead list limit 0", Method::GET, "/v1/queues/q/dead?limit=0", Body::None).field(&["limit"]),
    ];
    for tampered in tamper(lease) {
        let path = format!("/v1/leases/{}/ack", enc(&tampered));
        cases.push(
            case("tampered lease id", Method::POST, path, Json(json!({"outcome": "done"}))).status(404, "not_found"),
        );
    }
    cases
}

/// Whether the error's `field` names `expected`, bare or as a path into it (`tags[0]`,
/// `repeat.every`): API.md leaves the form of nested fields open.
fn field_matches(named: &str, expected: &str) -> bool {
    named == expected || named.strip_prefix(expected).is_some_and(|rest| rest.starts_with(['[', '.']))
}

#[test]
fn malformed_requests_are_refused_with_the_right_error_and_harm_nothing() {
    let server = start_server();
    let api = Api::of(&server);
    let stored = api.create("intact.q", "keep", json!({"delay": "1h", "payload": {"order_id": 1}, "tags": ["t"]}));
    api.create("ack.q", "leased", json!({"payload": "work"}));
    let leases = api.lease("ack.q", json!({"lease": "10m"}));
    assert_eq!(leases.len(), 1);
    let lease = leases[0]["lease_id"].as_str().expect("lease_id").to_owned();

    // A fresh connection per case: whether a refused body leaves the connection usable
    // is checked on its own, below.
    let table_api = Api::unpooled(server.url());
    let mut failures = Vec::new();
    for case in cases(&lease) {
        let body = match &case.body {
            Body::None => None,
            Body::Json(value) => Some(serde_json::to_vec(value).expect("JSON")),
            Body::Raw(text) => Some(text.as_bytes().to_vec()),
        };
        let resp = match table_api.try_raw(case.method.clone(), &case.path, body, Some("application/json"), None) {
            Ok(resp) => resp,
            Err(e) => {
                failures.push(format!("{}: no HTTP answer: {e}", case.name));
                continue;
            }
        };
        let error = &resp.json["error"];
        let named = error["field"].as_str().unwrap_or_default();
        let field_ok = case.fields.is_empty() || case.fields.iter().any(|f| field_matches(named, f));
        let message_ok = error["message"].as_str().is_some_and(|m| !m.trim().is_empty());
        if resp.status != case.status || error["code"] != case.code || !field_ok || !message_ok {
            let shown: String = resp.text.chars().take(300).collect();
            failures.push(format!(
                "{} ({} {}): expected {} {} field {:?}, got {} {shown}",
                case.name,
                case.method,
                case.path.chars().take(80).collect::<String>(),
                case.status,
                case.code,
                case.fields,
                resp.status
            ));
        }
    }

    // The server is healthy and nothing stored changed.
    api.get("/healthz").expect(200, "GET /healthz after the malformed requests");
    let after = api.task("intact.q", "keep");
    after.expect(200, "the task stored before");
    assert_eq!(after.json["version"], stored["version"], "same version");
    assert_eq!(after.json["payload"], stored["payload"], "same payload");
    assert_eq!(after.json, stored, "the task is intact");
    for key in ["k", "b0"] {
        let resp = api.task("q", key);
        assert_eq!(resp.status, 404, "a refused request stored q/{key}: {}", resp.text);
    }
    let resp = api.ack(&lease, json!({"outcome": "done"}));
    resp.expect(204, "the live lease survived the refused acks and still acks");
    assert!(failures.is_empty(), "{} malformed requests answered wrongly:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn valid_edge_values_are_accepted() {
    let server = start_server();
    let api = Api::of(&server);

    // A key with `/` travels as %2F and stays one key.
    let task = api.create("q", "a/b", json!({"delay": "1h"}));
    assert_eq!(task["key"], "a/b");
    let resp = api.get("/v1/queues/q/tasks/a%2Fb");
    resp.expect(200, "GET of a key with %2F");
    assert_eq!(resp.json["key"], "a/b");
    let listed = api.get("/v1/queues/q/tasks").json;
    assert_eq!(listed["tasks"][0]["key"], "a/b", "{listed}");
    api.task("q", "a").expect_error(404, "not_found", None, "a/b is not a");
    api.delete("/v1/queues/q/tasks/a%2Fb").expect(204, "DELETE of a key with %2F");

    // Keys of exactly 512 bytes, in ASCII and in 3-byte characters; other printable
    // Unicode and punctuation.
    for key in
        ["k".repeat(512), format!("{}kk", "€".repeat(170)), "task-77@pi-9@zhang.wei".into(), "订单 #1?&=%".into()]
    {
        let task = api.create("q", &key, json!({}));
        assert_eq!(task["key"], key.as_str());
        api.task("q", &key).expect(200, &format!("GET of key {key:?}"));
    }
    // The longest queue name and every allowed character.
    let queue = format!("{}._:-", "Q9".repeat(62));
    assert_eq!(queue.len(), 128);
    api.create(&queue, "k", json!({}));
    api.get(&format!("/v1/queues/{queue}")).expect(200, "the longest queue name");

    // A payload of exactly 64 KiB serialized as JSON (the string and its two quotes).
    let payload = "x".repeat(65_534);
    let task = api.create("q", "big", json!({"payload": payload}));
    assert_eq!(task["payload"].as_str().map(str::len), Some(65_534));
    // ISO 8601 durations, as Jackson writes a java.time.Duration (were refused).
    let task = api.create("q", "iso", json!({"delay": "PT30M", "repeat": {"every": "P1D"}}));
    assert_eq!(task["repeat"]["every"], "1d", "{task}");
    let due = parse_time(&task["due_at"]) - parse_time(&task["created_at"]);
    assert!((due - 1_800_000).abs() < 5_000, "PT30M is 30 minutes: {task}");
    // The shortest repeat: one second.
    api.create("q", "every-second", json!({"repeat": {"every": 1000}}));
    // The bounds of lease: 1 s and 12 h, max 1000, wait 60 s... and 0.
    for body in [json!({"lease": "1s"}), json!({"lease": "12h", "max": 1000}), json!({"wait": 0, "lease": 43_200_000})]
    {
        let resp = api.post("/v1/queues/empty.q/lease", body.clone());
        resp.expect(200, &format!("lease {body}"));
    }
}

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

/// Sends `PUT <path>` with `body` and the `Authorization` header line `auth` on a raw
/// connection and asserts the status; then, unless the answer said `Connection: close`,
/// asserts the connection still serves a request: HTTP clients pool connections and send
/// their next request on one the server kept open.
fn refusal_leaves_a_usable_connection(
    server: &ServerProcess,
    path: &str,
    body: &str,
    auth: &str,
    status: u16,
) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut stream = std::net::TcpStream::connect(server.addr()).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("read timeout");
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: test\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // The server may stop reading early; what it answers is what is checked.
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim().is_empty() => break,
            Ok(_) => headers.push(line.trim().to_ascii_lowercase()),
        }
    }
    let what = format!("PUT {path} with a body of {} bytes", body.len());
    let status_line = format!("http/1.1 {status}");
    if !headers.first().is_some_and(|l| l.starts_with(&status_line)) {
        return Err(format!("{what}: expected {status}: {headers:?}"));
    }
    if headers.iter().any(|h| h == "connection: close") {
        return Ok(());
    }
    let length: usize = headers
        .iter()
        .find_map(|h| h.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a content-length");
    let mut rest = vec![0; length];
    reader.read_exact(&mut rest).expect("the error body");
    let next = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n");
    let mut line = String::new();
    let read = reader.read_line(&mut line);
    if next.is_ok() && read.is_ok() && line.starts_with("HTTP/1.1 200") {
        return Ok(());
    }
    Err(format!(
        "{what}: the server closed the connection after its {status} without `Connection: close` \
         (headers {headers:?}), so a keep-alive client's next request fails: write {next:?}, read {read:?} '{line}'"
    ))
}

#[test]
fn a_refused_body_never_leaves_a_half_closed_keep_alive_connection() {
    let server = start_server();
    let guarded = start(server_builder().args(["--token", "s3cret"]));
    let big = format!(r#"{{"payload":"{}"}}"#, "x".repeat(2 << 20));
    let bad = format!(r#"{{"delay":"{}""#, "x".repeat(100_000));
    let body = format!(r#"{{"payload":"{}"}}"#, "x".repeat(60_000));
    let auth = "Authorization: Bearer s3cret\r\n";
    let results = [
        refusal_leaves_a_usable_connection(&server, "/v1/queues/q/tasks/k", &big, "", 413),
        refusal_leaves_a_usable_connection(&server, "/v1/queues/q/tasks/k", &bad, "", 400),
        refusal_leaves_a_usable_connection(&guarded, "/v1/queues/q/tasks/k", &body, "", 401),
        refusal_leaves_a_usable_connection(&guarded, "/v1/queues/bad%20queue/tasks/k", &body, auth, 400),
    ];
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
