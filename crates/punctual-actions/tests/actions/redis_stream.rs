//! The `redis-stream` action against private `redis-server` processes (never the
//! machine's Redis), run by the core worker on an engine over the embedded store.
//!
//! Guards against: an entry missing its fields or holding the wrong ones; a try whose
//! answer was lost appending a second entry when it is retried; a key of another type
//! retried for ever instead of failing with Redis's reason (and poisoning the
//! connection for the deliveries after it); a Redis that went away making tasks
//! vanish or fail for good instead of waiting for it; a cancelled task appended
//! anyway; a burst of due tasks losing or doubling entries.
//!
//! The engine's clock is manual: retries become due when a test advances it. Tests
//! wait on the engine's completion events, with deadlines, never on sleeps.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]
#![allow(clippy::disallowed_methods, reason = "deadlines and the drain rate are on real time")]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{START_MS, WAIT};
use punctual_actions::{Action, ActionKind, ActionSpec, RedisStreamConfig, Secret};
use punctual_core::{
    Delivery, Engine, EngineConfig, Event, Handler, ManualClock, Outcome, TaskSpec, TaskState, Timestamp, TryEnd,
    Worker,
};
use punctual_sqlite::SqliteStore;
use punctual_testkit::redis::{Persistence, RedisServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const QUEUE: &str = "order.cancel";

/// A try's end as the engine applied it.
#[derive(Debug, Clone)]
struct End {
    queue: String,
    key: String,
    delivery_id: String,
    ended: TryEnd,
    error: Option<String>,
}

/// An engine on the embedded store in a temp dir, on a manual clock, reporting every
/// completion.
struct Setup {
    engine: Engine<SqliteStore>,
    clock: ManualClock,
    ends: mpsc::UnboundedReceiver<End>,
    _dir: tempfile::TempDir,
}

impl Setup {
    fn start() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let clock = ManualClock::new(Timestamp::from_millis(START_MS));
        let (tx, ends) = mpsc::unbounded_channel();
        let observer = move |event: &Event| {
            if let Event::Completed { queue, key, delivery_id, ended, error, .. } = event {
                let end = End {
                    queue: queue.to_string(),
                    key: key.to_string(),
                    delivery_id: delivery_id.clone(),
                    ended: *ended,
                    error: error.clone(),
                };
                let _ = tx.send(end);
            }
        };
        let engine = Engine::start(store, EngineConfig::default().clock(Arc::new(clock.clone())).observe(observer));
        Setup { engine, clock, ends, _dir: dir }
    }

    /// The next completion, or a panic after `WAIT`.
    async fn next_end(&mut self) -> End {
        common::next(&mut self.ends, "a completion").await
    }

    /// The next completion within `within`, if any.
    async fn end_within(&mut self, within: Duration) -> Option<End> {
        tokio::time::timeout(within, self.ends.recv()).await.ok().flatten()
    }

    /// A redis-stream action built on this engine's clock, allowed to reach loopback.
    fn action(&self, config: RedisStreamConfig, concurrency: usize) -> Action {
        let spec =
            ActionSpec::new(ActionKind::RedisStream(config)).timeout(Duration::from_secs(2)).concurrency(concurrency);
        Action::build(&spec, &common::loopback_runtime(Arc::new(self.clock.clone()))).unwrap()
    }

    fn now(&self) -> Timestamp {
        punctual_core::Clock::now(&self.clock)
    }
}

fn redis(persistence: Persistence, extra: &[&str]) -> RedisServer {
    punctual_testkit::redis::server_with(persistence, extra)
}

fn stream_config(server: &RedisServer, stream: &str) -> RedisStreamConfig {
    RedisStreamConfig::new(Secret::new(server.url()), stream)
}

/// A connection of the test's own, to read what the action wrote.
async fn reader(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// Every entry of `stream`: id and fields, in order.
async fn entries(server: &RedisServer, stream: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let raw: Vec<(String, Vec<String>)> =
        redis::cmd("XRANGE").arg(stream).arg("-").arg("+").query_async(&mut reader(server).await).await.unwrap();
    raw.into_iter()
        .map(|(id, flat)| {
            let fields = flat.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect();
            (id, fields)
        })
        .collect()
}

/// The standard body of an entry of the default shape (`body`, then `traceparent` when
/// the task has a trace).
fn body(fields: &BTreeMap<String, String>) -> Value {
    let shape: Vec<_> = fields.keys().filter(|name| *name != "traceparent").collect();
    assert_eq!(shape, ["body"], "{fields:?}");
    serde_json::from_str(&fields["body"]).unwrap()
}

#[tokio::test]
async fn an_entry_holds_the_rendered_fields_and_maxlen_trims_the_stream() {
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    // Small stream nodes, so that `MAXLEN ~ 10` trims to close to 10 entries.
    let server = redis(Persistence::None, &["--stream-node-max-entries", "5"]);
    let mut setup = Setup::start();
    let standard = setup.action(stream_config(&server, "events.{{ queue }}"), 4);
    let mut templated = stream_config(&server, "reminders");
    templated.maxlen = Some(10);
    templated.fields = vec![
        ("order".into(), "{{ order_id }}".into()),
        ("who".into(), "{{ assignee }} (try {{ attempt }})".into()),
        ("delivery".into(), "{{ delivery_id }}".into()),
    ];
    let templated = setup.action(templated, 4);
    let worker = Worker::new(setup.engine.clone())
        .handle(QUEUE, standard)
        .handle("flow.remind", templated)
        .concurrency("flow.remind", 1)
        .start()
        .unwrap();

    // With a trace (the server's traces off): the entry ends with its traceparent.
    let trace = punctual_core::TraceContext::new(TRACEPARENT).unwrap();
    let spec = TaskSpec::now().payload(json!({"order_id": 1234})).tag("pi-9").traceparent(trace);
    setup.engine.schedule(QUEUE, "o-1", spec).await.unwrap();
    let end = setup.next_end().await;
    assert_eq!((end.key.as_str(), end.ended), ("o-1", TryEnd::Done), "{end:?}");
    assert_eq!(setup.engine.get(QUEUE, "o-1").await.unwrap(), None, "done and deleted");
    let appended = entries(&server, "events.order.cancel").await;
    assert_eq!(appended.len(), 1, "{appended:?}");
    assert_eq!(appended[0].1.get("traceparent").map(String::as_str), Some(TRACEPARENT), "{appended:?}");
    let body = body(&appended[0].1);
    assert_eq!(body["queue"], QUEUE);
    assert_eq!(body["key"], "o-1");
    assert_eq!(body["payload"], json!({"order_id": 1234}));
    assert_eq!(body["attempt"], 1);
    assert_eq!(body["tags"], json!(["pi-9"]));
    assert_eq!(body["fired_at"], setup.now().to_string());
    assert_eq!(body["delivery_id"], end.delivery_id.as_str());
    // The marker of the delivery holds the entry's id, for a day.
    let marker = format!("events.order.cancel:punctual-delivered:{}", end.delivery_id);
    let mut conn = reader(&server).await;
    let held: String = redis::cmd("GET").arg(&marker).query_async(&mut conn).await.unwrap();
    assert_eq!(held, appended[0].0);
    let ttl: i64 = redis::cmd("PTTL").arg(&marker).query_async(&mut conn).await.unwrap();
    assert!(0 < ttl && ttl <= 24 * 3600 * 1000, "{ttl}");

    for i in 0..60 {
        let spec = TaskSpec::now().payload(json!({"order_id": i, "assignee": "zhang.wei"}));
        setup.engine.schedule("flow.remind", &format!("r-{i:02}"), spec).await.unwrap();
    }
    let mut delivery_ids = BTreeMap::new();
    while delivery_ids.len() < 60 {
        let end = setup.next_end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        delivery_ids.insert(end.key, end.delivery_id);
    }
    let appended = entries(&server, "reminders").await;
    assert!((10..=20).contains(&appended.len()), "MAXLEN ~ 10 keeps about 10 of 60 entries: {}", appended.len());
    // Trimming drops the oldest: the last one (concurrency 1, earliest first) is there.
    let (_, last) = appended.last().unwrap();
    let expected: BTreeMap<String, String> = [
        ("order".to_owned(), "59".to_owned()),
        ("who".to_owned(), "zhang.wei (try 1)".to_owned()),
        ("delivery".to_owned(), delivery_ids["r-59"].clone()),
    ]
    .into();
    assert_eq!(last, &expected);

    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

/// Runs `action`, but reports the first try of every task as failed after it ran, as
/// when the answer of Redis is lost on the way back: the worker retries it with the
/// same delivery id.
#[derive(Clone)]
struct AnswerLostOnce(Action);

impl Handler for AnswerLostOnce {
    async fn handle(&self, delivery: Delivery) -> Result<Outcome, punctual_core::BoxError> {
        let first = delivery.attempt == 1;
        let outcome = self.0.handle(delivery).await?;
        if first && outcome == Outcome::Done {
            return Ok(Outcome::retry("the answer was lost"));
        }
        Ok(outcome)
    }
}

#[tokio::test]
async fn a_retried_try_appends_once_and_a_key_of_another_type_fails_with_the_reason() {
    let server = redis(Persistence::None, &[]);
    let mut setup = Setup::start();
    let action = setup.action(stream_config(&server, "{{ stream }}"), 4);
    let worker = Worker::new(setup.engine.clone()).handle(QUEUE, AnswerLostOnce(action)).start().unwrap();

    setup.engine.schedule(QUEUE, "twice", TaskSpec::now().payload(json!({"stream": "orders"}))).await.unwrap();
    let first = setup.next_end().await;
    assert_eq!((first.ended, first.error.as_deref()), (TryEnd::Retried, Some("the answer was lost")), "{first:?}");
    assert_eq!(entries(&server, "orders").await.len(), 1, "the first try appended");
    setup.clock.advance(Duration::from_secs(60));
    let second = setup.next_end().await;
    assert_eq!((second.key.as_str(), second.ended), ("twice", TryEnd::Done), "{second:?}");
    assert_eq!(second.delivery_id, first.delivery_id, "a retry keeps the delivery id");
    let appended = entries(&server, "orders").await;
    assert_eq!(appended.len(), 1, "the retry found the marker and appended nothing: {appended:?}");
    assert_eq!(body(&appended[0].1)["attempt"], 1, "the entry is the first try's");

    server.command(&["SET", "not-a-stream", "a string"]).unwrap();
    setup.engine.schedule(QUEUE, "wrong", TaskSpec::now().payload(json!({"stream": "not-a-stream"}))).await.unwrap();
    let end = setup.next_end().await;
    assert_eq!((end.key.as_str(), end.ended), ("wrong", TryEnd::Dead), "{end:?}");
    let task = setup.engine.get(QUEUE, "wrong").await.unwrap().unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1));
    let error = task.last_error.unwrap();
    let name = format!("Redis redis://127.0.0.1:{}", server.port());
    assert!(error.starts_with(&name) && error.contains("WRONGTYPE"), "{error}");
    println!("a key of another type: {error}");
    assert_eq!(server.command(&["GET", "not-a-stream"]).unwrap(), "a string", "the key is left alone");

    // The connection still serves the next delivery.
    setup.engine.schedule(QUEUE, "good", TaskSpec::now().payload(json!({"stream": "orders"}))).await.unwrap();
    let first = setup.next_end().await;
    assert_eq!((first.key.as_str(), first.ended), ("good", TryEnd::Retried), "{first:?}");
    setup.clock.advance(Duration::from_secs(60));
    let end = setup.next_end().await;
    assert_eq!((end.key.as_str(), end.ended), ("good", TryEnd::Done), "{end:?}");
    let keys: Vec<Value> =
        entries(&server, "orders").await.iter().map(|(_, fields)| body(fields)["key"].clone()).collect();
    assert_eq!(keys, [json!("twice"), json!("good")]);

    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

/// Redis is killed while deliveries run and started again on the same port. It keeps
/// its data (AOF, fsynced before each answer), so the stream must end with exactly one
/// entry per task: none lost, none doubled by a retry of a try whose answer the kill
/// swallowed.
#[tokio::test]
async fn a_killed_redis_makes_deliveries_retry_and_none_is_lost_when_it_is_back() {
    const TASKS: usize = 300;
    let mut server = redis(Persistence::AofAlways, &[]);
    let mut setup = Setup::start();
    let action = setup.action(stream_config(&server, "events"), 8);
    let worker = Worker::new(setup.engine.clone()).handle(QUEUE, action).concurrency(QUEUE, 8).start().unwrap();
    let name = format!("Redis redis://127.0.0.1:{}", server.port());

    let items = (0..TASKS).map(|i| (format!("k-{i:03}"), TaskSpec::now())).collect();
    for result in setup.engine.schedule_many(QUEUE, items).await.unwrap() {
        result.unwrap();
    }
    let mut done = BTreeSet::new();
    while done.len() < 50 {
        let end = setup.next_end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        done.insert(end.key);
    }
    server.kill();
    let before_the_kill = done.len();

    // Every try now fails and is retried (the clock stands still: retries wait).
    let mut retried = 0;
    while retried < 20 {
        let end = setup.next_end().await;
        match end.ended {
            TryEnd::Done => {
                done.insert(end.key);
            }
            TryEnd::Retried => {
                let error = end.error.unwrap_or_default();
                assert!(error.contains(&name), "the error names the server: {error}");
                if retried == 0 {
                    println!("while Redis is down: {error}");
                }
                retried += 1;
            }
            other => panic!("{other:?}: {end:?}"),
        }
    }
    assert!(done.len() < TASKS, "the kill came before the last delivery");

    server.restart().unwrap();
    let deadline = Instant::now() + WAIT;
    while done.len() < TASKS {
        assert!(Instant::now() < deadline, "only {} of {TASKS} done within {WAIT:?} of the restart", done.len());
        // Past every retry's backoff and the connection's pause.
        setup.clock.advance(Duration::from_secs(60));
        while let Some(end) = setup.end_within(Duration::from_millis(200)).await {
            if end.ended == TryEnd::Done {
                done.insert(end.key);
            }
        }
    }
    let appended = entries(&server, "events").await;
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for (_, fields) in &appended {
        *per_key.entry(body(fields)["key"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert_eq!(per_key.len(), TASKS, "every task has its entry");
    let twice: Vec<_> = per_key.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "appended more than once: {twice:?}");
    println!(
        "{before_the_kill} done before the kill, {} after the restart; {} entries",
        TASKS - before_the_kill,
        appended.len()
    );

    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_task_cancelled_before_it_is_due_appends_nothing() {
    let server = redis(Persistence::None, &[]);
    let mut setup = Setup::start();
    let action = setup.action(stream_config(&server, "events"), 1);
    // One at a time, earliest first: once `kept` is done, `cancelled` had its turn.
    let worker = Worker::new(setup.engine.clone()).handle(QUEUE, action).concurrency(QUEUE, 1).start().unwrap();
    let start = setup.now().as_millis();
    setup.engine.schedule(QUEUE, "cancelled", TaskSpec::at(Timestamp::from_millis(start + 60_000))).await.unwrap();
    setup.engine.schedule(QUEUE, "kept", TaskSpec::at(Timestamp::from_millis(start + 120_000))).await.unwrap();
    assert!(setup.engine.cancel(QUEUE, "cancelled").await.unwrap());
    setup.clock.advance(Duration::from_secs(180));
    let end = setup.next_end().await;
    assert_eq!((end.key.as_str(), end.ended), ("kept", TryEnd::Done), "{end:?}");
    let keys: Vec<Value> =
        entries(&server, "events").await.iter().map(|(_, fields)| body(fields)["key"].clone()).collect();
    assert_eq!(keys, [json!("kept")]);
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn ten_thousand_tasks_due_at_once_become_ten_thousand_entries() {
    const TASKS: usize = 10_000;
    let server = redis(Persistence::None, &[]);
    let mut setup = Setup::start();
    let action = setup.action(stream_config(&server, "events"), 64);
    let worker = Worker::new(setup.engine.clone()).handle(QUEUE, action).concurrency(QUEUE, 64).start().unwrap();
    let due = Timestamp::from_millis(setup.now().as_millis() + 60_000);
    for chunk in (0..TASKS).collect::<Vec<_>>().chunks(1000) {
        let items = chunk.iter().map(|i| (format!("k-{i:05}"), TaskSpec::at(due))).collect();
        for result in setup.engine.schedule_many(QUEUE, items).await.unwrap() {
            result.unwrap();
        }
    }

    let started = Instant::now();
    setup.clock.advance(Duration::from_secs(60));
    let mut delivered: BTreeMap<String, String> = BTreeMap::new();
    while delivered.len() < TASKS {
        let end = setup.next_end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        assert!(delivered.insert(end.delivery_id, end.key).is_none(), "one completion per delivery");
    }
    let elapsed = started.elapsed();
    println!(
        "redis-stream drain: {TASKS} tasks in {:.2} s, {:.0} tasks/s",
        elapsed.as_secs_f64(),
        TASKS as f64 / elapsed.as_secs_f64()
    );

    let appended = entries(&server, "events").await;
    assert_eq!(appended.len(), TASKS);
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (_, fields) in &appended {
        let body = body(fields);
        let (id, key) = (body["delivery_id"].as_str().unwrap(), body["key"].as_str().unwrap());
        assert!(seen.insert(id.to_owned(), key.to_owned()).is_none(), "delivery {id} appended twice");
    }
    assert_eq!(seen, delivered, "each delivery id exactly once, with its task");

    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_refused_login_or_address_fails_the_task_and_never_shows_the_password() {
    let server = redis(Persistence::None, &[]);
    // After the start: the launcher waits for an unauthenticated PING.
    server.command(&["CONFIG", "SET", "requirepass", "right-password"]).unwrap();
    let mut setup = Setup::start();
    let port = server.port();
    let wrong =
        setup.action(RedisStreamConfig::new(Secret::new(format!("redis://:hunter2@127.0.0.1:{port}")), "events"), 1);
    let none = setup.action(RedisStreamConfig::new(Secret::new(server.url()), "events"), 1);
    // A name, not an address: checked when it is resolved, at the connection. The
    // default policy refuses loopback.
    let refused = {
        let spec = ActionSpec::new(ActionKind::RedisStream(RedisStreamConfig::new(
            Secret::new(format!("redis://localhost:{port}")),
            "events",
        )));
        Action::build(&spec, &punctual_actions::Runtime::new(Arc::new(setup.clock.clone())).unwrap()).unwrap()
    };
    let worker = Worker::new(setup.engine.clone())
        .handle("wrong", wrong)
        .handle("none", none)
        .handle("refused", refused)
        .start()
        .unwrap();
    for queue in ["wrong", "none", "refused"] {
        setup.engine.schedule(queue, "k", TaskSpec::now()).await.unwrap();
    }
    let mut errors = BTreeMap::new();
    while errors.len() < 3 {
        let end = setup.next_end().await;
        assert_eq!(end.ended, TryEnd::Dead, "the first try fails for good: {end:?}");
        errors.insert(end.queue, end.error.unwrap_or_default());
    }
    println!("{errors:#?}");
    let name = format!("Redis redis://127.0.0.1:{port}");
    assert!(!format!("{errors:?}").contains("hunter2"), "the password is never shown: {errors:?}");
    let wrong = &errors["wrong"];
    assert!(wrong.starts_with(&format!("{name} refused the connection: ")), "{wrong}");
    assert!(wrong.contains("authentication failed") && wrong.contains("check the password"), "{wrong}");
    assert!(errors["none"].starts_with(&format!("{name} did not append to events: NOAUTH")), "{errors:?}");
    let refused = format!("not connecting to Redis redis://localhost:{port}: refused: ");
    assert!(errors["refused"].starts_with(&refused), "{errors:?}");
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}
