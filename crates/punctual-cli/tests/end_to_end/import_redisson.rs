//! `punctual import redisson` against a private `redis-server` and a real server, with
//! elements written the way Redisson's `RDelayedQueue.offer` writes them (the member
//! packed by Redis' own `struct.pack`, in the timeout set and at the list's tail).
//! `tests/redisson/run.sh` does the same with elements written by real Redisson.
//!
//! Guards against a migration that loses or doubles delayed elements: a task due at the
//! wrong time, under a key that changes between runs, or with a payload that still
//! carries Jackson's type hints; a dry run that writes; a re-run that imports twice or
//! fails to finish what a run cut short left; an element removed from Redis whose task
//! punctual does not hold; an element Redisson delivered meanwhile that punctual fires
//! too; a value that does not decode, lost instead of left; a binary codec read as if
//! it were text.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use std::collections::BTreeMap;

use crate::common;

use common::run::{Out, run, run_env};
use common::*;
use punctual_testkit::proxy::TcpProxy;
use punctual_testkit::redis::{RedisServer, server};
use punctual_testkit::server::ServerProcess;
use serde_json::{Value, json};

/// Redisson's offer, as a test writes it: pack the random id and the codec's bytes,
/// add the member to the timeout set with its due time and to the list's tail.
const OFFER: &str = "local member = struct.pack('Bc0Lc0', string.len(ARGV[2]), ARGV[2], string.len(ARGV[3]), ARGV[3]) \
     redis.call('zadd', KEYS[1], ARGV[1], member) redis.call('rpush', KEYS[2], member) return member";

/// Redisson's transfer of one element that came due: its value to the destination
/// queue, its member out of both keys.
const TRANSFER: &str = "redis.call('rpush', KEYS[3], ARGV[2]) redis.call('zrem', KEYS[1], ARGV[1]) \
     redis.call('lrem', KEYS[2], 1, ARGV[1])";

/// A private redis-server, a punctual server, and a client of its API.
fn started() -> (RedisServer, ServerProcess, Api) {
    let punctual = start_server();
    let api = Api::of(&punctual);
    (server(), punctual, api)
}

fn connection(redis: &RedisServer) -> redis::Connection {
    redis::Client::open(redis.url()).unwrap().get_connection().unwrap()
}

/// The keys of the delayed queue in front of `name` (no `{` in the names used here).
fn keys(name: &str) -> [String; 3] {
    [format!("redisson_delay_queue_timeout:{{{name}}}"), format!("redisson_delay_queue:{{{name}}}"), name.to_owned()]
}

/// One element offered: its random id, the codec's bytes, its due time (epoch ms).
#[derive(Debug, Clone)]
struct Offered {
    id: [u8; 8],
    value: Vec<u8>,
    due_at: i64,
    member: Vec<u8>,
}

impl Offered {
    fn key(&self) -> String {
        format!("redisson-{}", self.id.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

fn offer(redis: &RedisServer, name: &str, id: u64, value: &[u8], due_at: i64) -> Offered {
    let [timeout_set, list, _] = keys(name);
    let id = id.to_be_bytes();
    let member: Vec<u8> = redis::cmd("EVAL")
        .arg(OFFER)
        .arg(2)
        .arg(timeout_set)
        .arg(list)
        .arg(due_at)
        .arg(&id[..])
        .arg(value)
        .query(&mut connection(redis))
        .unwrap();
    Offered { id, value: value.to_vec(), due_at, member }
}

/// (By URL: the proxy's hook runs it on a thread of its own.)
fn transfer(redis_url: &str, name: &str, element: &Offered) {
    let mut conn = redis::Client::open(redis_url).unwrap().get_connection().unwrap();
    let [timeout_set, list, destination] = keys(name);
    redis::cmd("EVAL")
        .arg(TRANSFER)
        .arg(3)
        .arg(timeout_set)
        .arg(list)
        .arg(destination)
        .arg(&element.member)
        .arg(&element.value)
        .exec(&mut conn)
        .unwrap();
}

/// Every key with its type and content, to compare before and after.
fn snapshot(redis: &RedisServer) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut conn = connection(redis);
    let names: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    names
        .into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
            let content: Vec<Vec<u8>> = match kind.as_str() {
                "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").query(&mut conn).unwrap(),
                "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query(&mut conn).unwrap(),
                _ => vec![redis::cmd("GET").arg(&key).query(&mut conn).unwrap()],
            };
            (key, content)
        })
        .collect()
}

/// How many members the timeout set and the list of `name` hold, and the destination.
fn sizes(redis: &RedisServer, name: &str) -> (u64, u64, u64) {
    let [timeout_set, list, destination] = keys(name);
    redis::pipe()
        .cmd("ZCARD")
        .arg(timeout_set)
        .cmd("LLEN")
        .arg(list)
        .cmd("LLEN")
        .arg(destination)
        .query(&mut connection(redis))
        .unwrap()
}

fn import(server: &str, redis: &RedisServer, args: &[&str]) -> Out {
    let url = redis.url();
    let mut all = vec!["import", "redisson", "--redis", url.as_str(), "--json"];
    all.extend(args);
    run(server, &all)
}

fn count(counts: &Value, name: &str) -> u64 {
    counts[name].as_u64().unwrap_or_else(|| panic!("no count {name}: {counts}"))
}

/// An `OrderCancel` as `JsonJacksonCodec` writes it (a POJO that is not final), and the
/// JSON it stands for.
fn order(i: u64) -> (String, Value) {
    let written = format!(
        r#"{{"@class":"com.example.OrderCancel","amountCents":["java.lang.Long",{}],"items":["java.util.ArrayList",["sku-{i}"]],"orderId":{i}}}"#,
        i * 100
    );
    (written, json!({"amountCents": i * 100, "items": [format!("sku-{i}")], "orderId": i}))
}

/// A JSON queue of 1,200 elements (more than a page) due from the past to an hour
/// ahead, three of them moved to the destination by Redisson already: a dry run writes
/// nothing, the import makes each still delayed one task due at its score with the
/// hints stripped and empties the delayed queue, and the destination is left alone.
#[test]
fn a_delayed_queue_becomes_exactly_its_tasks_and_a_re_run_finishes_what_a_cut_left() {
    const N: u64 = 1_200;
    let (redis, punctual, api) = started();
    let now = now_ms();
    let offered: Vec<Offered> = (0..N)
        .map(|i| offer(&redis, "order-cancel", 1_000 + i, order(i).0.as_bytes(), now - 60_000 + i as i64 * 3_000))
        .collect();
    for element in &offered[..3] {
        transfer(&redis.url(), "order-cancel", element);
    }
    let delayed = &offered[3..];

    let before = snapshot(&redis);
    let args = ["--delayed-queue", "order-cancel", "--codec", "json-jackson", "--queue", "order.cancel"];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let out = import(&punctual.url(), &redis, &dry);
    let counts = out.expect_code(0, "dry run").json();
    assert_eq!(counts["dry_run"], true);
    assert_eq!(
        [count(&counts, "delayed_before"), count(&counts, "imported"), count(&counts, "removed")],
        [N - 3, N - 3, N - 3]
    );
    assert_eq!(count(&counts, "in_destination"), 3, "{counts}");
    assert_eq!(snapshot(&redis), before, "a dry run changes nothing in Redis");
    assert!(api.stored_tasks("order.cancel").is_empty(), "nor in punctual");

    let started = now_ms();
    let out = import(&punctual.url(), &redis, &args);
    let ended = now_ms();
    let counts = out.expect_code(0, "import").json();
    assert_eq!(
        [
            count(&counts, "read"),
            count(&counts, "imported"),
            count(&counts, "removed"),
            count(&counts, "delayed_after")
        ],
        [N - 3, N - 3, N - 3, 0],
        "{counts}"
    );
    assert_eq!((count(&counts, "already_present"), count(&counts, "taken_by_redisson")), (0, 0));
    let tasks = api.stored_tasks("order.cancel");
    assert_eq!(tasks.len(), delayed.len());
    for (i, element) in offered.iter().enumerate().skip(3) {
        let task = &tasks[&element.key()];
        // The score, to the millisecond; a score already past is due at once: the
        // server stores its own now, which lies inside the import's run.
        let due = parse_time(&task["due_at"]);
        if element.due_at >= ended {
            assert_eq!(due, element.due_at, "{}", element.key());
        } else {
            assert!((element.due_at.max(started)..=ended).contains(&due), "{}: due {due}", element.key());
        }
        assert_eq!(task["payload"], order(i as u64).1, "{}: the hints stripped", element.key());
    }
    assert_eq!(sizes(&redis, "order-cancel"), (0, 0, 3), "the delayed queue is empty; the destination untouched");

    // A run cut short after storing and before removing: its elements are still in
    // Redis. The re-run finds their tasks, leaves them, and removes the elements.
    for element in &delayed[..50] {
        offer(&redis, "order-cancel", u64::from_be_bytes(element.id), &element.value, element.due_at);
    }
    let out = import(&punctual.url(), &redis, &args);
    let counts = out.expect_code(0, "re-run").json();
    assert_eq!(
        [count(&counts, "imported"), count(&counts, "already_present"), count(&counts, "removed")],
        [0, 50, 50],
        "{counts}"
    );
    let again = api.stored_tasks("order.cancel");
    for (key, task) in &tasks {
        assert_eq!((&again[key]["version"], &again[key]["due_at"]), (&task["version"], &task["due_at"]), "{key}");
    }
    assert_eq!(sizes(&redis, "order-cancel"), (0, 0, 3));
}

/// StringCodec's text, as a JSON string by default and parsed with `--payload json`,
/// keyed by a field with `--key-field`; the text summary says what was done.
#[test]
fn strings_are_the_payload_and_a_key_field_keys_the_tasks() {
    let (redis, punctual, api) = started();
    let due = now_ms() + 3_600_000;
    let text = offer(&redis, "flow:reminder", 1, "task-7@pi-9@zhang.wei".as_bytes(), due);
    let url = redis.url();
    let out = run(
        &punctual.url(),
        &[
            "import",
            "redisson",
            "--redis",
            &url,
            "--delayed-queue",
            "flow:reminder",
            "--codec",
            "StringCodec",
            "--queue",
            "flow.reminder",
        ],
    );
    out.expect_code(0, "text summary");
    out.expect_contains(
        &["Imported Redisson delayed queue flow:reminder", "1  imported as new tasks", "removed from Redis"],
        "summary",
    );
    let task = &api.stored_tasks("flow.reminder")[&text.key()];
    assert_eq!((&task["payload"], parse_time(&task["due_at"])), (&json!("task-7@pi-9@zhang.wei"), due));

    offer(&redis, "orders", 2, br#"{"orderId": "o-1234", "reason": "unpaid"}"#, due);
    let out = import(
        &punctual.url(),
        &redis,
        &[
            "--delayed-queue",
            "orders",
            "--codec",
            "string",
            "--payload",
            "json",
            "--key-field",
            "orderId",
            "--queue",
            "order.cancel",
        ],
    );
    assert_eq!(count(&out.expect_code(0, "key field").json(), "imported"), 1);
    let task = &api.stored_tasks("order.cancel")["o-1234"];
    assert_eq!(task["payload"], json!({"orderId": "o-1234", "reason": "unpaid"}));
}

/// Between the read and the removal, Redisson moves two elements that came due (the
/// proxy holds the batch request while the test does what Redisson's transfer does):
/// one whose task this run creates, one whose task an earlier run stored (cut before
/// its removal). Redisson delivers both, so both tasks are cancelled and both counted;
/// the rest import.
#[test]
fn elements_redisson_takes_meanwhile_are_left_to_it_and_their_tasks_cancelled() {
    let (redis, punctual, api) = started();
    let now = now_ms();
    let taken = offer(&redis, "orders", 1, b"\"due\"", now - 1_000);
    let earlier = offer(&redis, "orders", 2, b"\"due too\"", now - 500);
    let staying = offer(&redis, "orders", 3, b"\"later\"", now + 3_600_000);
    api.put(&task_path("orders", &earlier.key()), json!({"payload": "due too"})).expect(201, "an earlier run's task");
    let proxy = {
        let (redis_url, moved) = (redis.url(), [taken.clone(), earlier.clone()]);
        TcpProxy::start_with_hook(punctual.addr(), b"POST /v1/queues/", move || {
            for element in &moved {
                transfer(&redis_url, "orders", element);
            }
        })
        .unwrap()
    };
    let out = import(
        &format!("http://{}", proxy.addr()),
        &redis,
        &["--delayed-queue", "orders", "--codec", "json-jackson", "--queue", "orders"],
    );
    let counts = out.expect_code(0, "a race is not an error").json();
    assert_eq!(
        ["imported", "already_present", "removed", "taken_by_redisson"].map(|name| count(&counts, name)),
        [2, 1, 1, 2],
        "{counts}"
    );
    for element in [&taken, &earlier] {
        out.expect_contains(&[&format!("'{}': Redisson moved it", element.key()), "its task was cancelled"], "named");
    }
    let stored: Vec<String> = api.stored_tasks("orders").into_keys().collect();
    assert_eq!(stored, [staying.key()], "no task for what Redisson delivers");
    assert_eq!(sizes(&redis, "orders"), (0, 0, 2));
}

/// Values that are not the codec's, members that are not Redisson's, elements only the
/// list holds, and elements without the key field: each named with why, and left.
#[test]
fn what_cannot_be_imported_is_named_and_left_in_redis() {
    let (redis, punctual, api) = started();
    let due = now_ms() + 600_000;
    let good = offer(&redis, "mixed", 1, br#"{"orderId": 1}"#, due);
    let binary = offer(&redis, "mixed", 2, b"\x01\x00\x8fkryo", due);
    let no_field = offer(&redis, "mixed", 3, br#"{"id": 3}"#, due);
    let [timeout_set, list, _] = keys("mixed");
    let mut conn = connection(&redis);
    redis::cmd("ZADD").arg(&timeout_set).arg(due).arg("not packed").exec(&mut conn).unwrap();
    redis::cmd("RPUSH").arg(&list).arg("not packed").exec(&mut conn).unwrap();
    let list_only = offer(&redis, "other", 4, b"{}", due);
    redis::cmd("RPUSH").arg(&list).arg(&list_only.member).exec(&mut conn).unwrap();

    let out = import(
        &punctual.url(),
        &redis,
        &["--delayed-queue", "mixed", "--codec", "json-jackson", "--key-field", "orderId", "--queue", "mixed"],
    );
    let counts = out.expect_code(0, "skips are counted, not errors").json();
    assert_eq!(
        [
            count(&counts, "imported"),
            count(&counts, "skipped_bad_value"),
            count(&counts, "skipped_invalid_key"),
            count(&counts, "skipped_not_redisson"),
            count(&counts, "left_not_delayed"),
            count(&counts, "delayed_after"),
        ],
        [1, 1, 1, 1, 1, 3],
        "{counts}"
    );
    out.expect_contains(
        &[
            &format!("'{}': its value does not decode (it is not JSON", binary.key()),
            &format!("'{}': no task key (its JSON has no top-level field orderId)", no_field.key()),
            "'not packed': not an element as Redisson packs one",
            "in the list but not the timeout set",
        ],
        "each named with why",
    );
    assert_eq!(api.stored_tasks("mixed").into_keys().collect::<Vec<_>>(), ["1"]);
    let left: Vec<Vec<u8>> = redis::cmd("LRANGE").arg(&list).arg(0).arg(-1).query(&mut conn).unwrap();
    assert!(!left.contains(&good.member) && left.contains(&binary.member) && left.contains(&no_field.member));
    assert_eq!(left.len(), 4, "all but the imported one stay");
}

#[test]
fn codecs_that_store_binary_formats_are_refused_by_name() {
    let redis = server();
    let url = redis.url();
    for codec in [
        "kryo5",
        "Kryo5Codec",
        "marshalling",
        "fst",
        "smile",
        "cbor",
        "msgpack",
        "org.redisson.codec.AvroJacksonCodec",
        "yaml",
    ] {
        let out = run_env(
            &["import", "redisson", "--redis", &url, "--delayed-queue", "q", "--queue", "q", "--codec", codec],
            &[],
        );
        out.expect_code(2, codec);
        out.expect_contains(
            &[&format!("'{codec}'"), "string (StringCodec) and json-jackson (JsonJacksonCodec)"],
            codec,
        );
    }
    let out = run_env(
        &[
            "import",
            "redisson",
            "--redis",
            &url,
            "--delayed-queue",
            "q",
            "--queue",
            "q",
            "--codec",
            "json-jackson",
            "--payload",
            "value",
        ],
        &[],
    );
    out.expect_code(2, "--payload value with json-jackson");
    out.expect_contains(&["--payload value is for --codec string"], "what to write instead");
}

#[test]
fn a_queue_that_is_not_there_is_named_with_those_that_are() {
    let redis = server();
    let punctual = start_server();
    offer(&redis, "order-cancel", 1, b"{}", now_ms() + 60_000);
    let url = redis.url();
    let out = run(
        &punctual.url(),
        &[
            "import",
            "redisson",
            "--redis",
            &url,
            "--delayed-queue",
            "order_cancel",
            "--codec",
            "json-jackson",
            "--queue",
            "q",
            "--dry-run",
        ],
    );
    out.expect_code(0, "nothing to import is not an error");
    out.expect_contains(
        &["holds neither redisson_delay_queue_timeout:{order_cancel}", "It holds: order-cancel."],
        "hint",
    );
}

#[test]
fn import_redisson_help_teaches_by_example() {
    let out = run_env(&["import", "redisson", "--help"], &[]);
    out.expect_code(0, "help");
    out.expect_contains(
        &[
            "Examples:",
            "punctual import redisson --redis redis://",
            "--codec json-jackson",
            "@class",
            "if_exists keep",
            "Exit status",
        ],
        "help",
    );
}
