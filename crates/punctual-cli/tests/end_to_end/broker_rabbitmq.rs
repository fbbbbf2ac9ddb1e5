//! The `rabbitmq` action through the real binary and the machine's RabbitMQ
//! (127.0.0.1:5672, guest/guest): a queue declared in the config file publishes its
//! due tasks to a test exchange, and one added through the settings API does too, its
//! broker URL named by an environment variable of the server, never sent in the API
//! call.
//!
//! Guards against: a broker action that is parsed but never run, a task left undone
//! after the broker confirmed it, a password accepted through the API (where it would
//! be stored with the settings and shown to readers of them).

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::{Api, server_builder, start, task_path};
use lapin::options::{
    BasicConsumeOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties, ExchangeKind};
use serde_json::{Value, json};

const URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// A message as the consumer received it.
struct Got {
    routing_key: String,
    body: Value,
    key_header: String,
}

/// A test exchange and queue on the machine's RabbitMQ with a consumer, deleted on
/// drop (the queue also expires a minute after its last use, should the drop not run).
struct Rabbit {
    runtime: tokio::runtime::Runtime,
    connection: Option<Connection>,
    exchange: String,
    queue: String,
    got: mpsc::Receiver<Got>,
}

impl Rabbit {
    fn start(test: &str, binding: &str) -> Rabbit {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let name = format!("punctual-test-{test}-{}-{}", std::process::id(), common::now_ms());
        let (tx, got) = mpsc::channel();
        let connection = runtime.block_on(async {
            let connect = Connection::connect(URL, ConnectionProperties::default());
            let connection = match tokio::time::timeout(Duration::from_secs(5), connect).await {
                Ok(Ok(connection)) => connection,
                Ok(Err(e)) => {
                    panic!(
                        "RabbitMQ is not reachable at 127.0.0.1:5672 ({e}): start it with `rabbitmq-server -detached`"
                    )
                }
                Err(_) => panic!(
                    "RabbitMQ at 127.0.0.1:5672 did not answer within 5 s: start it with `rabbitmq-server -detached`"
                ),
            };
            let channel = connection.create_channel().await.unwrap();
            let kind = ExchangeKind::Direct;
            let options = ExchangeDeclareOptions::default();
            channel.exchange_declare(name.as_str().into(), kind, options, FieldTable::default()).await.unwrap();
            let mut arguments = FieldTable::default();
            arguments.insert("x-expires".into(), AMQPValue::LongUInt(60_000));
            channel.queue_declare(name.as_str().into(), QueueDeclareOptions::default(), arguments).await.unwrap();
            let (queue, exchange) = (name.as_str().into(), name.as_str().into());
            let options = QueueBindOptions::default();
            channel.queue_bind(queue, exchange, binding.into(), options, FieldTable::default()).await.unwrap();
            let options = BasicConsumeOptions { no_ack: true, ..BasicConsumeOptions::default() };
            let consumer =
                channel.basic_consume(name.as_str().into(), "".into(), options, FieldTable::default()).await.unwrap();
            tokio::spawn(async move {
                use futures_util::StreamExt;
                let mut consumer = consumer;
                while let Some(Ok(delivery)) = consumer.next().await {
                    let headers = delivery.properties.headers().clone().unwrap_or_default();
                    let key_header = match headers.inner().get("key") {
                        Some(AMQPValue::LongString(key)) => key.to_string(),
                        _ => String::new(),
                    };
                    let body = serde_json::from_slice(&delivery.data).unwrap_or(Value::Null);
                    let got = Got { routing_key: delivery.routing_key.to_string(), body, key_header };
                    if tx.send(got).is_err() {
                        return;
                    }
                }
            });
            connection
        });
        Rabbit { runtime, connection: Some(connection), exchange: name.clone(), queue: name, got }
    }

    fn next(&self) -> Got {
        self.got.recv_timeout(Duration::from_secs(15)).expect("a message on the test queue within 15 s")
    }
}

impl Drop for Rabbit {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else { return };
        let (exchange, queue) = (self.exchange.clone(), self.queue.clone());
        let _ = self.runtime.block_on(async move {
            let channel = connection.create_channel().await?;
            channel.queue_delete(queue.as_str().into(), QueueDeleteOptions::default()).await?;
            channel.exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default()).await?;
            connection.close(200, "OK".into()).await
        });
    }
}

fn config_file(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).expect("write the config file");
    path
}

/// Waits until the task is gone (done and deleted).
fn done(api: &Api, queue: &str, key: &str) {
    api.get_until(&task_path(queue, key), &format!("{queue}/{key} done"), |r| r.status == 404);
}

#[test]
fn a_queue_of_the_config_file_publishes_its_due_tasks_to_rabbitmq() {
    let rabbit = Rabbit::start("e2e-config", "orders.eu");
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        &dir,
        &format!(
            r#"[egress]
allow = ["127.0.0.1"]

[queues."order.dispatch".action]
kind = "rabbitmq"
url_env = "PUNCTUAL_E2E_AMQP_URL"
exchange = "{}"
routing_key = "orders.{{{{ region }}}}"
timeout = "5s"
"#,
            rabbit.exchange
        ),
    );
    let server = start(
        server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]).env("PUNCTUAL_E2E_AMQP_URL", URL),
    );
    let api = Api::of(&server);
    api.create("order.dispatch", "order-1", json!({"payload": {"region": "eu", "n": 1}, "delay": "100ms"}));
    let got = rabbit.next();
    assert_eq!(got.routing_key, "orders.eu");
    assert_eq!((got.body["key"].as_str(), got.key_header.as_str()), (Some("order-1"), "order-1"));
    assert_eq!(got.body["payload"], json!({"region": "eu", "n": 1}));
    done(&api, "order.dispatch", "order-1");
}

#[test]
fn the_settings_api_refuses_a_broker_password_and_takes_its_environment_variable() {
    let rabbit = Rabbit::start("e2e-settings", "rk");
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(&dir, "[egress]\nallow = [\"127.0.0.1\"]\n");
    let server = start(
        server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]).env("PUNCTUAL_E2E_AMQP_URL", URL),
    );
    let api = Api::of(&server);
    let settings = "/v1/queues/order.remind/settings";
    let action = |url: Value| {
        let mut action = json!({"kind": "rabbitmq", "exchange": rabbit.exchange, "routing_key": "rk", "timeout": "5s"});
        action.as_object_mut().unwrap().extend(url.as_object().unwrap().clone());
        json!({"action": action})
    };
    let refused = api.put(settings, action(json!({"url": URL})));
    refused.expect_error(400, "invalid_argument", Some("action.url"), "a URL with credentials");
    assert!(!refused.text.contains("guest:guest"), "{}", refused.text);
    api.get(settings).expect_error(404, "not_found", None, "nothing was stored");

    api.put(settings, action(json!({"url_env": "PUNCTUAL_E2E_AMQP_URL"}))).expect(201, "url_env");
    let ready = server.wait_for_log(
        "push action ready (settings from the API) queue=order.remind kind=\"rabbitmq\"",
        Duration::from_secs(10),
    );
    ready.unwrap_or_else(|logs| panic!("the action did not start:\n{logs}"));
    api.create("order.remind", "r-1", json!({"payload": {"step": 2}, "delay": "50ms"}));
    let got = rabbit.next();
    assert_eq!((got.routing_key.as_str(), got.body["key"].as_str()), ("rk", Some("r-1")));
    done(&api, "order.remind", "r-1");
}
