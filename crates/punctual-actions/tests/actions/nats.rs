//! The `nats` action against the machine's NATS server with JetStream (127.0.0.1:4222),
//! each test on a stream of its own (a unique name and subjects, deleted afterwards),
//! run by the core worker on an engine, read back with async-nats as a consumer.
//!
//! Guards against: a task counted done before JetStream stored it; a redelivered try
//! stored twice (the delivery id must be the `Nats-Msg-Id`, so the stream's duplicate
//! window drops it); a subject no stream captures retried for ever instead of going
//! dead with the reason; a connection cut mid-run losing tasks, leaking the password
//! into `last_error`, or never recovering; a cancelled task published anyway; and,
//! under 10,000 tasks due at once, any task lost or stored twice, with or without a cut.
//!
//! The engine's clock is manual: retries and the connection's pauses pass when a test
//! advances it; tests wait on the engine's completion events and the stream's
//! contents, never on time.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use punctual_actions::{Action, ActionKind, ActionSpec, NatsConfig, Secret};
use punctual_core::{
    BoxError, Delivery, Engine, EngineConfig, Event, ManualClock, Outcome, Stopwatch, TaskSpec, TaskState, Timestamp,
    TryEnd, Worker,
};
use punctual_sqlite::SqliteStore;
use punctual_testkit::proxy::TcpProxy;
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::{self, START_MS, WAIT};

/// The machine's NATS server.
const NATS: &str = "127.0.0.1:4222";
const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// How a try ended, from the engine's events.
#[derive(Debug, Clone)]
struct End {
    key: String,
    ended: TryEnd,
    error: Option<String>,
}

/// An engine on a fresh embedded store and a manual clock, reporting each try's end.
struct Setup {
    engine: Engine<SqliteStore>,
    clock: ManualClock,
    ends: mpsc::UnboundedReceiver<End>,
    /// Ends [`Setup::end_of`] passed over, for a later call to find.
    passed: Vec<End>,
    _dir: tempfile::TempDir,
}

impl Setup {
    fn start() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(Timestamp::from_millis(START_MS));
        let (tx, ends) = mpsc::unbounded_channel();
        let observer = move |event: &Event| {
            if let Event::Completed { key, ended, error, .. } = event {
                let _ = tx.send(End { key: key.to_string(), ended: *ended, error: error.clone() });
            }
        };
        let config = EngineConfig::default().clock(Arc::new(clock.clone())).observe(observer);
        let engine = Engine::start(SqliteStore::open(dir.path()).unwrap(), config);
        Setup { engine, clock, ends, passed: Vec::new(), _dir: dir }
    }

    /// A `nats` action on this engine's clock, allowed to reach loopback.
    fn action(&self, config: NatsConfig, timeout: Duration) -> Action {
        let spec = ActionSpec::new(ActionKind::Nats(config)).timeout(timeout);
        Action::build(&spec, &common::loopback_runtime(Arc::new(self.clock.clone()))).unwrap()
    }

    /// The next try's end (those [`Setup::end_of`] passed over first).
    async fn end(&mut self) -> End {
        if !self.passed.is_empty() {
            return self.passed.remove(0);
        }
        common::next(&mut self.ends, "a try's end").await
    }

    /// The end of `key`'s next try; other keys' ends seen first are kept for later.
    async fn end_of(&mut self, key: &str) -> End {
        if let Some(i) = self.passed.iter().position(|end| end.key == key) {
            return self.passed.remove(i);
        }
        loop {
            let end = common::next(&mut self.ends, "a try's end").await;
            if end.key == key {
                return end;
            }
            self.passed.push(end);
        }
    }
}

/// A stream of this test's own, capturing `<prefix>.>`; deleted on drop.
struct TestStream {
    name: String,
    prefix: String,
    jetstream: jetstream::Context,
}

impl TestStream {
    async fn create() -> TestStream {
        let client = match tokio::time::timeout(Duration::from_secs(5), async_nats::connect(NATS)).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => panic!("NATS is not reachable at {NATS} ({e}); start it with: {START_NATS}"),
            Err(_) => panic!("NATS does not answer at {NATS}; start it with: {START_NATS}"),
        };
        let jetstream = jetstream::new(client);
        let name = format!("punctual-test-{:016x}", RandomState::new().hash_one(std::process::id()));
        let prefix = name.clone();
        let config = stream::Config {
            name: name.clone(),
            subjects: vec![format!("{prefix}.>")],
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        };
        if let Err(e) = jetstream.create_stream(config).await {
            panic!("cannot create a stream on {NATS} ({e}): is JetStream enabled (-js)? start it with: {START_NATS}");
        }
        TestStream { name, prefix, jetstream }
    }

    /// How many messages the stream holds.
    async fn count(&self) -> u64 {
        self.jetstream.get_stream(&self.name).await.unwrap().cached_info().state.messages
    }

    /// Every message of the stream, in order (the stream must hold exactly `n`).
    async fn messages(&self, n: usize) -> Vec<jetstream::Message> {
        assert_eq!(self.count().await, n as u64, "messages in the stream");
        let stream = self.jetstream.get_stream(&self.name).await.unwrap();
        let config = consumer::pull::Config { ack_policy: consumer::AckPolicy::None, ..Default::default() };
        let consumer = stream.create_consumer(config).await.unwrap();
        let mut messages = consumer.messages().await.unwrap();
        let mut read = Vec::with_capacity(n);
        while read.len() < n {
            match tokio::time::timeout(WAIT, messages.next()).await {
                Ok(Some(Ok(message))) => read.push(message),
                other => panic!("reading message {} of {n}: {other:?}", read.len() + 1),
            }
        }
        read
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        // Drop cannot await: delete the stream from a runtime of its own.
        let name = self.name.clone();
        let deleted = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let client = async_nats::connect(NATS).await?;
                jetstream::new(client).delete_stream(&name).await?;
                Ok::<_, async_nats::Error>(())
            })
        })
        .join();
        if !matches!(deleted, Ok(Ok(()))) {
            eprintln!("could not delete the test stream {}: {deleted:?}", self.name);
        }
    }
}

fn header<'a>(message: &'a jetstream::Message, name: &str) -> &'a str {
    message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str()).unwrap_or_else(|| panic!("no {name}"))
}

fn nats_url() -> Secret {
    Secret::new(format!("nats://{NATS}"))
}

#[tokio::test]
async fn a_task_is_published_once_with_its_subject_body_and_headers_and_done_on_the_ack() {
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let prefix = &stream.prefix;
    let standard = setup.action(NatsConfig::new(nats_url(), format!("{prefix}.orders.{{{{ queue }}}}")), WAIT);
    let mut config = NatsConfig::new(nats_url(), format!("{prefix}.orders.{{{{ region }}}}"));
    config.body = Some(r#"{"order": {{ order_id }}, "key": "{{ key }}"}"#.to_owned());
    let templated = setup.action(config, WAIT);
    let worker = Worker::new(setup.engine.clone())
        .handle("order.cancel", standard)
        .handle("order.remind", templated)
        .start()
        .unwrap();

    let spec = TaskSpec::now().payload(json!({"order_id": 1234, "region": "eu"})).tag("pi-9");
    // o-1 in a trace (the server's traces off): its message carries the traceparent.
    let trace = punctual_core::TraceContext::new(TRACEPARENT).unwrap();
    setup.engine.schedule("order.cancel", "o-1", spec.clone().traceparent(trace)).await.unwrap();
    setup.engine.schedule("order.remind", "o-2", spec).await.unwrap();
    for (queue, key) in [("order.cancel", "o-1"), ("order.remind", "o-2")] {
        let end = setup.end_of(key).await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        assert_eq!(setup.engine.get(queue, key).await.unwrap(), None, "done and deleted");
    }

    let messages = stream.messages(2).await;
    let by_key: HashMap<&str, &jetstream::Message> = messages.iter().map(|m| (header(m, "Punctual-Key"), m)).collect();
    let standard = by_key["o-1"];
    assert_eq!(standard.subject.as_str(), format!("{prefix}.orders.order.cancel"));
    assert_eq!(header(standard, "Content-Type"), "application/json");
    assert_eq!(header(standard, "Punctual-Queue"), "order.cancel");
    assert_eq!(header(standard, "Punctual-Attempt"), "1");
    assert_eq!(header(standard, "traceparent"), TRACEPARENT);
    let body: serde_json::Value = serde_json::from_slice(&standard.payload).unwrap();
    assert_eq!(body["queue"], "order.cancel");
    assert_eq!(body["key"], "o-1");
    assert_eq!(body["payload"], json!({"order_id": 1234, "region": "eu"}));
    assert_eq!(body["attempt"], 1);
    assert_eq!(body["tags"], json!(["pi-9"]));
    assert_eq!(body["due_at"], header(standard, "Punctual-Due-At"));
    assert_eq!(header(standard, "Nats-Msg-Id"), body["delivery_id"].as_str().unwrap(), "the delivery id");

    let templated = by_key["o-2"];
    assert_eq!(templated.subject.as_str(), format!("{prefix}.orders.eu"));
    assert_eq!(std::str::from_utf8(&templated.payload).unwrap(), r#"{"order": 1234, "key": "o-2"}"#);
    assert_eq!(header(templated, "Punctual-Queue"), "order.remind");
    assert_eq!(header(templated, "Punctual-Due-At"), Timestamp::from_millis(START_MS).to_string());
    assert!(!header(templated, "Nats-Msg-Id").is_empty());
    assert!(templated.headers.as_ref().unwrap().get("traceparent").is_none(), "no trace, no traceparent");
    assert!(templated.headers.as_ref().unwrap().get("Content-Type").is_none(), "a templated body has no known type");
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_same_delivery_published_twice_is_stored_once_and_both_tries_are_done() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let action = setup.action(NatsConfig::new(nats_url(), format!("{}.twice", stream.prefix)), WAIT);
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    // As if the first ack was lost and the try ran again: same delivery, same id.
    let twice = move |delivery: Delivery| {
        let (action, tx) = (action.clone(), tx.clone());
        async move {
            let first = action.deliver(&delivery).await;
            let second = action.deliver(&delivery).await;
            let _ = tx.send((first, second.clone()));
            Ok::<_, BoxError>(second)
        }
    };
    let worker = Worker::new(setup.engine.clone()).handle("order.cancel", twice).start().unwrap();
    setup.engine.schedule("order.cancel", "o-1", TaskSpec::now()).await.unwrap();
    let (first, second) = common::next(&mut outcomes, "both tries").await;
    assert_eq!((first, second), (Outcome::Done, Outcome::Done));
    assert_eq!(setup.end_of("o-1").await.ended, TryEnd::Done);
    let messages = stream.messages(1).await;
    assert_eq!(header(&messages[0], "Punctual-Key"), "o-1");
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_subject_no_stream_captures_sends_the_task_to_dead_with_the_reason() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let action = setup.action(NatsConfig::new(nats_url(), "{{ prefix }}.orders".to_owned()), WAIT);
    let worker = Worker::new(setup.engine.clone()).handle("order.cancel", action).start().unwrap();

    let nowhere = format!("punctual-nowhere-{}", &stream.name["punctual-test-".len()..]);
    let spec = TaskSpec::now().payload(json!({"prefix": nowhere}));
    setup.engine.schedule("order.cancel", "lost", spec).await.unwrap();
    let end = setup.end_of("lost").await;
    assert_eq!(end.ended, TryEnd::Dead, "{end:?}");
    let error = end.error.unwrap();
    assert!(error.starts_with(&format!("NATS nats://{NATS}: ")), "{error}");
    assert!(error.contains(&format!("no JetStream stream captures the subject \"{nowhere}.orders\"")), "{error}");
    let task = setup.engine.get("order.cancel", "lost").await.unwrap().unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1));

    // The action still works for a subject a stream captures.
    let spec = TaskSpec::now().payload(json!({"prefix": stream.prefix}));
    setup.engine.schedule("order.cancel", "found", spec).await.unwrap();
    assert_eq!(setup.end_of("found").await.ended, TryEnd::Done);
    let messages = stream.messages(1).await;
    assert_eq!(messages[0].subject.as_str(), format!("{}.orders", stream.prefix));
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

fn proxy() -> TcpProxy {
    TcpProxy::start(NATS.parse::<SocketAddr>().unwrap()).unwrap()
}

/// A URL through `proxy` with a user and password (a server without auth ignores them).
fn through(proxy: &TcpProxy) -> Secret {
    Secret::new(format!("nats://punctual:s3cret-pw@127.0.0.1:{}", proxy.port()))
}

#[tokio::test]
async fn deliveries_retry_while_the_connection_is_cut_and_go_through_once_it_is_back() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let proxy = proxy();
    let action =
        setup.action(NatsConfig::new(through(&proxy), format!("{}.cut", stream.prefix)), Duration::from_secs(3));
    let worker = Worker::new(setup.engine.clone()).handle("order.cancel", action).start().unwrap();

    setup.engine.schedule("order.cancel", "before", TaskSpec::now()).await.unwrap();
    assert_eq!(setup.end_of("before").await.ended, TryEnd::Done);

    proxy.cut();
    let shown = format!("NATS nats://127.0.0.1:{}", proxy.port());
    for key in ["during-1", "during-2"] {
        setup.engine.schedule("order.cancel", key, TaskSpec::now()).await.unwrap();
        let end = setup.end_of(key).await;
        assert_eq!(end.ended, TryEnd::Retried, "{end:?}");
        let error = end.error.unwrap();
        assert!(error.starts_with(&shown), "{error}");
        assert!(!error.contains("s3cret"), "the password stays out of last_error: {error}");
        let task = setup.engine.get("order.cancel", key).await.unwrap().unwrap();
        assert_eq!((task.state, task.last_error.as_deref()), (TaskState::Scheduled, Some(error.as_str())));
    }

    proxy.restore();
    // Past the retries' backoff and the connection's pause.
    setup.clock.advance(Duration::from_secs(3600));
    let mut again = BTreeSet::new();
    while again.len() < 2 {
        let end = setup.end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        again.insert(end.key);
    }
    let keys: Vec<String> = stream.messages(3).await.iter().map(|m| header(m, "Punctual-Key").to_owned()).collect();
    assert_eq!(BTreeSet::from_iter(keys), BTreeSet::from(["before", "during-1", "during-2"].map(String::from)));
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_task_cancelled_before_it_is_due_is_never_published() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let action = setup.action(NatsConfig::new(nats_url(), format!("{}.{{{{ key }}}}", stream.prefix)), WAIT);
    // One at a time, earliest first: had the cancelled task fired, it would have been
    // published before the sentinel.
    let worker = Worker::new(setup.engine.clone())
        .handle("order.cancel", action)
        .concurrency("order.cancel", 1)
        .start()
        .unwrap();
    setup.engine.schedule("order.cancel", "cancelled", TaskSpec::after(Duration::from_secs(3600))).await.unwrap();
    assert!(setup.engine.cancel("order.cancel", "cancelled").await.unwrap());
    setup.clock.advance(Duration::from_secs(7200));
    setup.engine.schedule("order.cancel", "sentinel", TaskSpec::now()).await.unwrap();
    let end = setup.end().await;
    assert_eq!((end.key.as_str(), end.ended), ("sentinel", TryEnd::Done));
    let messages = stream.messages(1).await;
    assert_eq!(messages[0].subject.as_str(), format!("{}.sentinel", stream.prefix));
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

const TASKS: usize = 10_000;

/// Schedules [`TASKS`] tasks due one second from now, in batches.
async fn schedule_many(setup: &Setup) {
    let keys: Vec<String> = (0..TASKS).map(|i| format!("t-{i:05}")).collect();
    for chunk in keys.chunks(1000) {
        let items = chunk.iter().map(|key| (key.clone(), TaskSpec::after(Duration::from_secs(1)))).collect();
        for result in setup.engine.schedule_many("bulk", items).await.unwrap() {
            result.unwrap();
        }
    }
}

/// Every message holds a distinct delivery id and key, one per task.
async fn exactly_once(stream: &TestStream) {
    let messages = stream.messages(TASKS).await;
    let ids: BTreeSet<&str> = messages.iter().map(|m| header(m, "Nats-Msg-Id")).collect();
    let keys: BTreeSet<&str> = messages.iter().map(|m| header(m, "Punctual-Key")).collect();
    assert_eq!((ids.len(), keys.len()), (TASKS, TASKS), "each task exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_due_at_once_are_each_published_exactly_once() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let action = setup.action(NatsConfig::new(nats_url(), format!("{}.bulk", stream.prefix)), WAIT);
    let worker = Worker::new(setup.engine.clone()).handle("bulk", action).concurrency("bulk", 64).start().unwrap();
    schedule_many(&setup).await;

    let watch = Stopwatch::start();
    setup.clock.advance(Duration::from_secs(1));
    let mut done = BTreeSet::new();
    while done.len() < TASKS {
        let end = setup.end().await;
        assert_eq!(end.ended, TryEnd::Done, "no try fails: {end:?}");
        assert!(done.insert(end.key.clone()), "{} done twice", end.key);
    }
    let elapsed = watch.elapsed();
    println!(
        "nats: {TASKS} tasks drained in {:.2} s: {:.0} tasks/s (concurrency 64)",
        elapsed.as_secs_f64(),
        TASKS as f64 / elapsed.as_secs_f64()
    );
    exactly_once(&stream).await;
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_with_a_cut_midway_are_none_lost_and_none_stored_twice() {
    let mut setup = Setup::start();
    let stream = TestStream::create().await;
    let proxy = proxy();
    let action =
        setup.action(NatsConfig::new(through(&proxy), format!("{}.bulk", stream.prefix)), Duration::from_secs(3));
    let worker = Worker::new(setup.engine.clone()).handle("bulk", action).concurrency("bulk", 64).start().unwrap();
    schedule_many(&setup).await;

    setup.clock.advance(Duration::from_secs(1));
    let (mut done, mut retried) = (BTreeSet::new(), BTreeSet::new());
    while done.len() < TASKS / 4 {
        let end = setup.end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        done.insert(end.key);
    }
    proxy.cut();
    // The clock stands still: every task not done yet fails once and waits for its
    // retry, and none is tried twice meanwhile.
    let mut sample = None;
    while done.len() + retried.len() < TASKS {
        let end = setup.end().await;
        match end.ended {
            TryEnd::Done => assert!(done.insert(end.key.clone()), "{end:?}"),
            TryEnd::Retried => {
                assert!(retried.insert(end.key.clone()), "{end:?}");
                sample.get_or_insert(end.error.unwrap());
            }
            other => panic!("{other:?}: {end:?}"),
        }
    }
    let sample = sample.expect("the cut made some tries fail");
    assert!(sample.starts_with(&format!("NATS nats://127.0.0.1:{}", proxy.port())), "{sample}");
    assert!(!sample.contains("s3cret"), "{sample}");
    println!("nats: cut after {} done; {} retried, e.g. {sample}", done.len(), retried.len());

    proxy.restore();
    setup.clock.advance(Duration::from_secs(3600));
    while done.len() < TASKS {
        let end = setup.end().await;
        assert_eq!(end.ended, TryEnd::Done, "{end:?}");
        assert!(retried.contains(&end.key) && done.insert(end.key.clone()), "{end:?}");
    }
    // A try whose ack the cut lost was stored already: its second copy was dropped.
    exactly_once(&stream).await;
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}

/// A NATS server of the test's own (the machine's has no users to refuse), on a free
/// loopback port, with one user who may not publish to `denied.>`; killed on drop.
struct PrivateNats {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PrivateNats {
    fn start() -> PrivateNats {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = dir.path().join("nats.conf");
        std::fs::write(
            &config,
            format!(
                r#"listen: "127.0.0.1:{port}"
authorization {{
  users = [
    {{ user: punctual, password: right-pw, permissions: {{ publish: {{ deny: ["denied.>"] }} }} }}
  ]
}}
"#
            ),
        )
        .unwrap();
        let child = std::process::Command::new("/usr/sbin/nats-server")
            .arg("-c")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run /usr/sbin/nats-server ({e}): install nats-server"));
        let mut server = PrivateNats { child, port, _dir: dir };
        let up = punctual_testkit::poll_until(WAIT, || std::net::TcpStream::connect(("127.0.0.1", port)).ok());
        if up.is_none() {
            let status = server.child.try_wait();
            panic!("the private nats-server did not listen on {port} within {WAIT:?} ({status:?})");
        }
        server
    }

    fn url(&self, user: &str, password: &str) -> Secret {
        Secret::new(format!("nats://{user}:{password}@127.0.0.1:{}", self.port))
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn rejected_credentials_and_a_permissions_violation_send_the_task_to_dead_with_the_reason() {
    let mut setup = Setup::start();
    let server = PrivateNats::start();
    let shown = format!("NATS nats://127.0.0.1:{}", server.port);
    let wrong = setup.action(NatsConfig::new(server.url("punctual", "wrong-pw"), "allowed.x".to_owned()), WAIT);
    let denied = setup.action(NatsConfig::new(server.url("punctual", "right-pw"), "denied.x".to_owned()), WAIT);
    let worker = Worker::new(setup.engine.clone()).handle("q.wrong", wrong).handle("q.denied", denied).start().unwrap();

    setup.engine.schedule("q.wrong", "k", TaskSpec::now()).await.unwrap();
    let end = setup.end_of("k").await;
    assert_eq!(end.ended, TryEnd::Dead, "{end:?}");
    let error = end.error.unwrap();
    assert!(error.starts_with(&format!("{shown} rejected the credentials")), "{error}");
    assert!(!error.contains("wrong-pw"), "{error}");

    setup.engine.schedule("q.denied", "k", TaskSpec::now()).await.unwrap();
    let end = setup.end_of("k").await;
    assert_eq!(end.ended, TryEnd::Dead, "{end:?}");
    let error = end.error.unwrap();
    assert!(error.starts_with(&shown), "{error}");
    assert!(error.contains(r#"Permissions Violation for Publish to "denied.x""#), "{error}");
    assert!(!error.contains("right-pw"), "{error}");
    worker.shutdown().await;
    setup.engine.shutdown().await.unwrap();
}
