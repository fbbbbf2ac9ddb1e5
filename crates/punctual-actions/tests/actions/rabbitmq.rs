//! The `rabbitmq` action against the machine's real RabbitMQ (127.0.0.1:5672,
//! guest/guest), driven by a real engine and the core worker, with a lapin consumer on
//! the other side. Guards against: a task counted done before the broker confirmed it
//! (lost when the broker was down or the message had nowhere to go), an unroutable
//! message or a missing exchange retried for ever (or, worse, done), a channel closed
//! by a refusal poisoning every later delivery, a cut connection losing tasks or never
//! coming back, a cancelled task published anyway, and duplicates beyond the tries
//! whose confirmation was lost.
//!
//! Each test declares an exchange and a queue of its own (`punctual-test-<test>-<n>`)
//! and deletes them when it ends, passed or failed (a drop guard; the queue also
//! expires by itself a minute after its last use). The broker is never stopped: a
//! [`TcpProxy`] between the action and RabbitMQ is cut instead.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::{Harness, WAIT, next};
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties, ExchangeKind};
use punctual_actions::{Action, ActionKind, ActionSpec, RabbitmqConfig, Secret};
use punctual_core::{Event, TaskSpec, TaskState, TryEnd, Worker};
use punctual_testkit::proxy::TcpProxy;
use serde_json::json;
use tokio::sync::mpsc;

const BROKER: &str = "127.0.0.1:5672";
const QUEUE: &str = "order.dispatch";

fn url(port: u16) -> String {
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f")
}

/// A connection to the machine's RabbitMQ, or a failure that says how to start it.
async fn broker() -> Connection {
    let url = url(5672);
    let connect = Connection::connect(&url, ConnectionProperties::default());
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(e)) => panic!("RabbitMQ is not reachable at {BROKER} ({e}): start it with `rabbitmq-server -detached`"),
        Err(_) => panic!("RabbitMQ at {BROKER} did not answer within 5 s: start it with `rabbitmq-server -detached`"),
    }
}

/// Names unique to one test run.
fn unique(test: &str) -> String {
    let n: u64 = rand_u64();
    format!("punctual-test-{test}-{n:016x}")
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// A message as the consumer received it.
#[derive(Debug, Clone)]
struct Got {
    routing_key: String,
    body: Vec<u8>,
    properties: lapin::BasicProperties,
}

impl Got {
    fn header(&self, name: &str) -> String {
        let headers = self.properties.headers().as_ref().expect("headers");
        match headers.inner().get(name) {
            Some(AMQPValue::LongString(text)) => text.to_string(),
            Some(AMQPValue::LongUInt(n)) => n.to_string(),
            other => panic!("header {name}: {other:?}"),
        }
    }
    fn message_id(&self) -> String {
        self.properties.message_id().as_ref().expect("message_id").to_string()
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// An exchange and a queue of one test, with a consumer on the queue; both deleted on
/// drop.
struct Topology {
    /// Keeps the consumer's connection open.
    _connection: Connection,
    channel: lapin::Channel,
    exchange: String,
    queue: String,
    got: mpsc::UnboundedReceiver<Got>,
}

impl Topology {
    /// A direct exchange and a queue bound to it with `binding`.
    async fn start(test: &str, binding: &str) -> Topology {
        let name = unique(test);
        let connection = broker().await;
        let channel = connection.create_channel().await.unwrap();
        let topology_exchange = name.clone();
        channel
            .exchange_declare(
                topology_exchange.as_str().into(),
                ExchangeKind::Direct,
                ExchangeDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        let mut arguments = FieldTable::default();
        // A last resort should the guard not run (the process killed): gone a minute
        // after its last use.
        arguments.insert("x-expires".into(), AMQPValue::LongUInt(60_000));
        channel.queue_declare(name.as_str().into(), QueueDeclareOptions::default(), arguments).await.unwrap();
        channel
            .queue_bind(
                name.as_str().into(),
                name.as_str().into(),
                binding.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        let mut consumer = channel
            .basic_consume(
                name.as_str().into(),
                "".into(),
                BasicConsumeOptions { no_ack: true, ..BasicConsumeOptions::default() },
                FieldTable::default(),
            )
            .await
            .unwrap();
        let (tx, got) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(Ok(delivery)) = consumer.next().await {
                let got = Got {
                    routing_key: delivery.routing_key.to_string(),
                    body: delivery.data,
                    properties: delivery.properties,
                };
                if tx.send(got).is_err() {
                    return;
                }
            }
        });
        Topology { _connection: connection, channel, exchange: name.clone(), queue: name, got }
    }

    /// The next message on the queue.
    async fn next(&mut self) -> Got {
        next(&mut self.got, "a message on the test queue").await
    }

    /// Messages on the queue not taken yet (by the consumer or still in the queue).
    async fn left(&mut self) -> usize {
        let passive = QueueDeclareOptions { passive: true, ..QueueDeclareOptions::default() };
        let queue = self.channel.queue_declare(self.queue.as_str().into(), passive, FieldTable::default()).await;
        let waiting = queue.unwrap().message_count() as usize;
        waiting + std::iter::from_fn(|| self.got.try_recv().ok()).count()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let (exchange, queue) = (self.exchange.clone(), self.queue.clone());
        // Async work in drop: on a thread of its own, with its own runtime, so it runs
        // even while the test's runtime unwinds from a panic.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let connection = Connection::connect(&url(5672), ConnectionProperties::default()).await?;
                let channel = connection.create_channel().await?;
                channel.queue_delete(queue.as_str().into(), QueueDeleteOptions::default()).await?;
                channel.exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default()).await?;
                connection.close(200, "OK".into()).await
            })
        });
        let _ = cleanup.join();
    }
}

/// A `rabbitmq` action publishing to `exchange` with `routing_key`, on a runtime
/// allowed to reach loopback.
fn action(h: &Harness, port: u16, exchange: &str, routing_key: &str, body: Option<&str>) -> Action {
    let mut config = RabbitmqConfig::new(Secret::new(url(port)), exchange, routing_key);
    config.body = body.map(str::to_owned);
    let spec = ActionSpec::new(ActionKind::Rabbitmq(config)).timeout(Duration::from_secs(5)).concurrency(64);
    Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap()
}

/// `last_error` names the broker and never the password.
fn check_error(error: &str, port: u16, wanted: &str) {
    println!("last_error: {error}");
    assert!(error.contains(&format!("RabbitMQ amqp://127.0.0.1:{port}")), "{error}");
    assert!(!error.contains("guest:guest") && !error.contains(":guest@"), "{error}");
    assert!(error.contains(wanted), "{wanted:?} not in {error:?}");
}

#[tokio::test]
async fn a_delivery_is_done_once_the_broker_confirmed_it() {
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut h = Harness::start();
    let mut topology = Topology::start("confirm", "orders.eu").await;
    let standard = action(&h, 5672, &topology.exchange, "orders.{{ region }}", None);
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, standard).start().unwrap();
    // In a trace (the server's traces off): the message's headers carry the traceparent.
    let trace = punctual_core::TraceContext::new(TRACEPARENT).unwrap();
    let spec = TaskSpec::now().payload(json!({"region": "eu", "order_id": 1234})).tag("pi-9").traceparent(trace);
    h.engine.schedule(QUEUE, "order-1234", spec).await.unwrap();
    let got = topology.next().await;
    assert_eq!(h.completed(QUEUE, "order-1234").await, None, "done and deleted");
    assert_eq!(got.routing_key, "orders.eu");
    let body = got.json();
    assert_eq!(body["queue"], QUEUE);
    assert_eq!(body["key"], "order-1234");
    assert_eq!(body["payload"], json!({"region": "eu", "order_id": 1234}));
    assert_eq!(body["attempt"], 1);
    assert_eq!(body["tags"], json!(["pi-9"]));
    assert_eq!(body["fired_at"], h.now().to_string());
    let delivery_id = body["delivery_id"].as_str().unwrap().to_owned();
    let properties = &got.properties;
    assert_eq!(properties.delivery_mode(), &Some(2), "persistent");
    assert_eq!(properties.content_type().as_ref().map(|t| t.as_str()), Some("application/json"));
    assert_eq!(got.message_id(), delivery_id);
    assert_eq!(properties.timestamp(), &Some(u64::try_from(h.now().as_millis() / 1000).unwrap()));
    assert_eq!(got.header("delivery_id"), delivery_id);
    assert_eq!(got.header("attempt"), "1");
    assert_eq!(got.header("queue"), QUEUE);
    assert_eq!(got.header("key"), "order-1234");
    assert_eq!(got.header("traceparent"), TRACEPARENT);
    assert_eq!(got.header("due_at"), body["due_at"].as_str().unwrap());
    assert!(got.header("due_at").ends_with('Z'), "RFC 3339 UTC");
    worker.shutdown().await;

    // A templated body, without a content type.
    let templated =
        action(&h, 5672, &topology.exchange, "orders.{{ region }}", Some("order {{ order_id }} ({{ key }})"));
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, templated).start().unwrap();
    let spec = TaskSpec::now().payload(json!({"region": "eu", "order_id": 77}));
    h.engine.schedule(QUEUE, "order-77", spec).await.unwrap();
    let got = topology.next().await;
    assert_eq!(h.completed(QUEUE, "order-77").await, None);
    assert_eq!((got.routing_key.as_str(), got.body.as_slice()), ("orders.eu", b"order 77 (order-77)".as_slice()));
    assert_eq!(got.properties.content_type(), &None);
    assert_eq!(got.header("key"), "order-77");
    assert_eq!(topology.left().await, 0, "each delivery published once");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn refusals_go_dead_with_the_reason_and_the_next_delivery_gets_a_fresh_channel() {
    let mut h = Harness::start();
    let mut topology = Topology::start("refusals", "rk.good").await;
    let missing = unique("refusals-missing");
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, action(&h, 5672, &topology.exchange, "rk.{{ key }}", None))
        .handle("to-missing", action(&h, 5672, &missing, "rk.{{ key }}", None))
        .start()
        .unwrap();

    // Mandatory and no queue bound for the key: the message comes back, the task dies.
    h.engine.schedule(QUEUE, "nobody", TaskSpec::now()).await.unwrap();
    let task = h.completed(QUEUE, "nobody").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1));
    let wanted =
        format!("unroutable: exchange \"{}\" has no queue bound for routing key \"rk.nobody\"", topology.exchange);
    check_error(task.last_error.as_deref().unwrap(), 5672, &wanted);
    // The same action, a routable key: delivered.
    h.engine.schedule(QUEUE, "good", TaskSpec::now()).await.unwrap();
    assert_eq!(h.completed(QUEUE, "good").await, None);
    assert_eq!(topology.next().await.routing_key, "rk.good");

    // No such exchange: the broker closes the channel with 404; the task dies.
    h.engine.schedule("to-missing", "good", TaskSpec::now()).await.unwrap();
    let task = h.completed("to-missing", "good").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1));
    check_error(task.last_error.as_deref().unwrap(), 5672, "404 NOT_FOUND - no exchange");
    // Once the exchange exists, the same action delivers: its next try opened a fresh
    // channel instead of publishing on the closed one.
    let channel = &topology.channel;
    let options = ExchangeDeclareOptions { auto_delete: true, ..ExchangeDeclareOptions::default() };
    channel
        .exchange_declare(missing.as_str().into(), ExchangeKind::Direct, options, FieldTable::default())
        .await
        .unwrap();
    let (queue, options) = (topology.queue.as_str(), QueueBindOptions::default());
    channel
        .queue_bind(queue.into(), missing.as_str().into(), "rk.again".into(), options, FieldTable::default())
        .await
        .unwrap();
    h.engine.schedule("to-missing", "again", TaskSpec::now()).await.unwrap();
    assert_eq!(h.completed("to-missing", "again").await, None);
    assert_eq!(topology.next().await.routing_key, "rk.again");
    assert_eq!(topology.left().await, 0);
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_credentials_and_a_template_error_go_dead() {
    let mut h = Harness::start();
    let topology = Topology::start("credentials", "rk").await;
    let mut config =
        RabbitmqConfig::new(Secret::new("amqp://guest:wrong-s3cret@127.0.0.1:5672/%2f"), &topology.exchange, "rk");
    config.mandatory = true;
    let spec = ActionSpec::new(ActionKind::Rabbitmq(config)).timeout(Duration::from_secs(5));
    let wrong = Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap();
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, wrong)
        .handle("templated", action(&h, 5672, &topology.exchange, "rk.{{ region }}", None))
        .start()
        .unwrap();
    h.engine.schedule(QUEUE, "k", TaskSpec::now()).await.unwrap();
    let task = h.completed(QUEUE, "k").await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    let error = task.last_error.unwrap();
    check_error(&error, 5672, "403 ACCESS_REFUSED");
    assert!(!error.contains("wrong-s3cret"), "{error}");
    // A payload without the field the routing key needs.
    h.engine.schedule("templated", "k", TaskSpec::now().payload(json!({}))).await.unwrap();
    let task = h.completed("templated", "k").await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    assert!(task.last_error.unwrap().contains("template routing_key cannot be rendered"));
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_cut_connection_retries_with_a_clear_error_and_recovers_without_losing_a_task() {
    let mut h = Harness::start();
    let mut topology = Topology::start("cut", "rk").await;
    let proxy = TcpProxy::start(BROKER.parse().unwrap()).unwrap();
    let port = proxy.port();
    let worker =
        Worker::new(h.engine.clone()).handle(QUEUE, action(&h, port, &topology.exchange, "rk", None)).start().unwrap();

    h.engine.schedule(QUEUE, "before", TaskSpec::now()).await.unwrap();
    assert_eq!(h.completed(QUEUE, "before").await, None);
    assert_eq!(topology.next().await.json()["key"], "before");

    proxy.cut();
    h.engine.schedule(QUEUE, "during", TaskSpec::now()).await.unwrap();
    let task = h.completed(QUEUE, "during").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1), "retried, not dead");
    check_error(task.last_error.as_deref().unwrap(), port, "");
    // Still cut: the next try fails too (reconnecting), and is retried again.
    h.clock.advance(Duration::from_secs(60));
    let task = h.completed(QUEUE, "during").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 2));
    let error = task.last_error.unwrap();
    check_error(&error, port, "");
    assert_eq!(topology.left().await, 0, "nothing reached the broker while cut");

    proxy.restore();
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(h.completed(QUEUE, "during").await, None, "delivered once the link is back");
    let got = topology.next().await;
    assert_eq!((got.json()["key"].as_str(), got.header("attempt").as_str()), (Some("during"), "3"));
    h.engine.schedule(QUEUE, "after", TaskSpec::now()).await.unwrap();
    assert_eq!(h.completed(QUEUE, "after").await, None);
    assert_eq!(topology.next().await.json()["key"], "after");
    assert_eq!(topology.left().await, 0, "each task published once");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_task_cancelled_before_it_is_due_is_never_published() {
    let mut h = Harness::start();
    let mut topology = Topology::start("cancel", "rk").await;
    let worker =
        Worker::new(h.engine.clone()).handle(QUEUE, action(&h, 5672, &topology.exchange, "rk", None)).start().unwrap();
    h.engine.schedule(QUEUE, "cancelled", TaskSpec::after(Duration::from_secs(3600))).await.unwrap();
    h.engine.schedule(QUEUE, "by-tag", TaskSpec::after(Duration::from_secs(3600)).tag("wf-1")).await.unwrap();
    assert!(h.engine.cancel(QUEUE, "cancelled").await.unwrap());
    assert_eq!(h.engine.cancel_tag(QUEUE, "wf-1").await.unwrap(), 1);
    h.clock.advance(Duration::from_secs(7200));
    // A task due now after the cancelled ones' due time: once it is through, any
    // firing of theirs would have come first.
    h.engine.schedule(QUEUE, "sentinel", TaskSpec::now()).await.unwrap();
    assert_eq!(h.completed(QUEUE, "sentinel").await, None);
    assert_eq!(topology.next().await.json()["key"], "sentinel");
    let stats = h.engine.stats(Some(QUEUE)).await.unwrap();
    assert!(stats.iter().all(|s| s.scheduled == 0 && s.leased == 0), "{stats:?}");
    assert_eq!(topology.left().await, 0, "the cancelled tasks were never published");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

/// Every try that ended, from the engine's events: (key, attempt, how it ended).
fn watch_tries(h: &Harness) -> mpsc::UnboundedReceiver<(String, u32, TryEnd)> {
    let (tx, rx) = mpsc::unbounded_channel();
    h.engine.observe(move |event: &Event| {
        if let Event::Completed { key, attempt, ended, .. } = event {
            let _ = tx.send((key.as_str().to_owned(), *attempt, *ended));
        }
    });
    rx
}

async fn schedule_now(h: &Harness, n: usize) {
    let keys: Vec<String> = (0..n).map(|i| format!("task-{i:05}")).collect();
    for chunk in keys.chunks(5_000) {
        let items = chunk.iter().map(|key| (key.clone(), TaskSpec::now())).collect();
        for result in h.engine.schedule_many(QUEUE, items).await.unwrap() {
            result.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_due_at_once_are_each_published_exactly_once() {
    const N: usize = 10_000;
    let h = Harness::start();
    let mut topology = Topology::start("drain", "rk").await;
    let mut tries = watch_tries(&h);
    schedule_now(&h, N).await;
    #[allow(clippy::disallowed_methods, reason = "the drain rate is measured on real time")]
    let started = std::time::Instant::now();
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, action(&h, 5672, &topology.exchange, "rk", None))
        .concurrency(QUEUE, 64)
        .start()
        .unwrap();
    let mut done = 0;
    while done < N {
        let (key, attempt, ended) = tokio::time::timeout(Duration::from_secs(30), tries.recv()).await.unwrap().unwrap();
        assert_eq!((ended, attempt), (TryEnd::Done, 1), "{key}");
        done += 1;
    }
    let elapsed = started.elapsed();
    let mut ids: HashMap<String, usize> = HashMap::new();
    while ids.len() < N {
        let got = topology.next().await;
        *ids.entry(got.message_id()).or_default() += 1;
    }
    println!(
        "rabbitmq: {N} tasks due at once drained in {:.2} s: {:.0} tasks/s (done on the broker's confirmation, concurrency 64)",
        elapsed.as_secs_f64(),
        N as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(topology.left().await, 0, "no duplicates");
    assert!(ids.values().all(|&n| n == 1));
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_in_the_middle_of_a_drain_loses_nothing_and_duplicates_only_unconfirmed_tries() {
    const N: usize = 3_000;
    let h = Harness::start();
    let mut topology = Topology::start("drain-cut", "rk").await;
    let proxy = TcpProxy::start(BROKER.parse().unwrap()).unwrap();
    let mut tries = watch_tries(&h);
    schedule_now(&h, N).await;
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, action(&h, proxy.port(), &topology.exchange, "rk", None))
        .concurrency(QUEUE, 64)
        .start()
        .unwrap();

    // Every try's end, by key.
    let mut ended: BTreeMap<String, Vec<(u32, TryEnd)>> = BTreeMap::new();
    let mut record = |(key, attempt, end): (String, u32, TryEnd)| ended.entry(key).or_default().push((attempt, end));
    let mut done = BTreeSet::new();
    // Cut once a third is through, restore at the first retry it caused.
    while done.len() < N / 3 {
        let (key, attempt, end) = next_try(&mut tries).await;
        if end == TryEnd::Done {
            done.insert(key.clone());
        }
        record((key, attempt, end));
    }
    proxy.cut();
    loop {
        let (key, attempt, end) = next_try(&mut tries).await;
        let retried = end == TryEnd::Retried;
        if end == TryEnd::Done {
            done.insert(key.clone());
        }
        record((key, attempt, end));
        if retried {
            break;
        }
    }
    proxy.restore();
    // Retries wait in the store for their backoff: move the clock on until all are done.
    while done.len() < N {
        match tokio::time::timeout(Duration::from_millis(200), tries.recv()).await {
            Ok(Some((key, attempt, end))) => {
                assert_ne!(end, TryEnd::Dead, "{key}");
                if end == TryEnd::Done {
                    done.insert(key.clone());
                }
                record((key, attempt, end));
            }
            Ok(None) => panic!("the engine stopped"),
            // Nothing ended for a while: the rest waits for its retry time.
            Err(_) => h.clock.advance(Duration::from_secs(60)),
        }
    }
    let mut got = BTreeMap::<String, Vec<u32>>::new();
    let take = |got: &mut BTreeMap<String, Vec<u32>>, message: Got| {
        let (key, attempt) = (message.header("key"), message.header("attempt").parse::<u32>().unwrap());
        got.entry(key).or_default().push(attempt);
    };
    while got.len() < N {
        take(&mut got, topology.next().await);
    }
    // Every try has ended, so every copy is on the broker; a retried try's second copy
    // may come after the last task's first: take what else arrives until a quiet second.
    while let Ok(message) = tokio::time::timeout(Duration::from_secs(1), topology.next()).await {
        take(&mut got, message);
    }
    let total: usize = got.values().map(Vec::len).sum();
    let retried: usize = ended.values().filter(|tries| tries.iter().any(|(_, end)| *end == TryEnd::Retried)).count();
    println!("rabbitmq cut mid-drain: {N} tasks, {retried} retried, {} copies on the broker", total);
    // None lost: every task reached the queue and ended done.
    assert_eq!(got.len(), N);
    // Duplicates only where a confirm was lost: each try was published at most once,
    // and a task has a second copy only when an earlier try of it was retried.
    for (key, attempts) in &got {
        let distinct: BTreeSet<u32> = attempts.iter().copied().collect();
        assert_eq!(distinct.len(), attempts.len(), "{key}: a try published twice: {attempts:?}");
        let tries = &ended[key];
        assert_eq!(tries.iter().filter(|(_, end)| *end == TryEnd::Done).count(), 1, "{key}: {tries:?}");
        for attempt in attempts {
            assert!(tries.iter().any(|(a, _)| a == attempt), "{key}: a copy of try {attempt} that never ran");
        }
        if attempts.len() > 1 {
            assert!(tries.iter().any(|(_, end)| *end == TryEnd::Retried), "{key}: copies {attempts:?} without a retry");
        }
    }
    assert!(retried > 0, "the cut made some tries retry");
    assert_eq!(topology.left().await, 0, "nothing left over");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

async fn next_try(tries: &mut mpsc::UnboundedReceiver<(String, u32, TryEnd)>) -> (String, u32, TryEnd) {
    match tokio::time::timeout(WAIT, tries.recv()).await {
        Ok(Some(end)) => end,
        _ => panic!("no try ended within {WAIT:?}"),
    }
}
