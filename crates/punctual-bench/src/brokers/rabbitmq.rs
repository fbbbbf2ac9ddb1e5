//! RabbitMQ's side of `brokers`: the run's topology, the consumer that reads what
//! punctual published, and the seeds' delay by per-message TTL and dead letter.
//!
//! Topology, every name under the run's prefix:
//!
//! - `<prefix>.out`, a direct exchange punctual's actions publish to, with
//!   `<prefix>.burst` bound by `burst` and `<prefix>.delays` by `delays`;
//! - `<prefix>.ttl.holding`, where the seeds' messages wait (published through the
//!   default exchange, each with its delay as `expiration`), dead-lettering into
//!   `<prefix>.ttl.dlx`, a direct exchange that routes them to `<prefix>.ttl.work`.
//!
//! Queues are durable (punctual publishes persistent messages, and a broker writes
//! those to disk only for a durable queue, so its confirms mean what they do in
//! production) and carry `x-expires`, so a killed run's queues go away on their own;
//! the exchanges are auto-delete, going with their last queue.
//!
//! RabbitMQ expires a message only when it reaches the head of its queue: a message
//! with a short TTL published behind one with a long TTL waits for it. That is the
//! head-of-line blocking the delays' comparison shows.

use std::time::Duration;

use anyhow::{Context as _, Result};
use futures_util::StreamExt as _;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use tokio::task::JoinHandle;

use super::{DRAIN_LIMIT, Message, Names, Received, Source, redact};
use crate::report::Progress;
use crate::stats::now_millis;

/// The exchange punctual publishes to.
pub(crate) const EXCHANGE: &str = "out";
/// Routing keys (and queue suffixes) of the burst and of punctual's delays.
pub(crate) const BURST: &str = "burst";
pub(crate) const DELAYS: &str = "delays";
/// How long a queue of the run may stay unused (no consumer) before RabbitMQ deletes it.
const QUEUE_EXPIRES: Duration = Duration::from_secs(60);
/// Persistent, as punctual publishes.
const PERSISTENT: u8 = 2;

/// A connection to RabbitMQ with the run's topology declared.
pub(crate) struct Rabbit {
    connection: Connection,
    channel: Channel,
    names: Names,
    url: String,
}

impl Rabbit {
    /// Connects to `url` and declares the run's exchanges and queues (the holding
    /// queue expiring `window` + 10 minutes after its last use).
    pub(crate) async fn connect(url: &str, names: &Names, window: Duration) -> Result<Rabbit> {
        let connection = Connection::connect(url, ConnectionProperties::default()).await.with_context(|| {
            format!("cannot connect to RabbitMQ at {} (pass --rabbitmq amqp://USER:PASS@HOST:PORT/VHOST)", redact(url))
        })?;
        let channel = connection.create_channel().await.context("cannot open a RabbitMQ channel")?;
        let rabbit = Rabbit { connection, channel, names: names.clone(), url: redact(url) };
        if let Err(e) = rabbit.declare(window).await {
            rabbit.delete().await;
            return Err(e.context("cannot declare the run's exchanges and queues on RabbitMQ"));
        }
        Ok(rabbit)
    }

    async fn declare(&self, window: Duration) -> Result<()> {
        let names = &self.names;
        let exchange = |name: String| {
            self.channel.exchange_declare(
                name.into(),
                ExchangeKind::Direct,
                ExchangeDeclareOptions { durable: true, auto_delete: true, ..Default::default() },
                FieldTable::default(),
            )
        };
        let queue = |name: String, mut arguments: FieldTable, expires: Duration| {
            arguments.insert("x-expires".into(), AMQPValue::LongInt(expires.as_millis().min(i32::MAX as u128) as i32));
            self.channel.queue_declare(
                name.into(),
                QueueDeclareOptions { durable: true, ..Default::default() },
                arguments,
            )
        };
        let bind = |queue: String, exchange: String, key: &str| {
            self.channel.queue_bind(
                queue.into(),
                exchange.into(),
                key.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
        };
        exchange(names.name(EXCHANGE)).await?;
        for key in [BURST, DELAYS] {
            queue(names.name(key), FieldTable::default(), QUEUE_EXPIRES).await?;
            bind(names.name(key), names.name(EXCHANGE), key).await?;
        }
        exchange(names.name("ttl.dlx")).await?;
        queue(names.name("ttl.work"), FieldTable::default(), QUEUE_EXPIRES).await?;
        bind(names.name("ttl.work"), names.name("ttl.dlx"), "work").await?;
        let mut holding = FieldTable::default();
        holding.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(names.name("ttl.dlx").into()));
        holding.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString("work".into()));
        queue(names.name("ttl.holding"), holding, window + Duration::from_secs(600)).await?;
        Ok(())
    }

    /// How punctual's messages of `key` travel, for the report.
    pub(crate) fn route(&self, key: &str) -> String {
        format!(
            "RabbitMQ {}: exchange {}, routing key {key} → queue {}, one consumer (auto-ack)",
            self.url,
            self.names.name(EXCHANGE),
            self.names.name(key)
        )
    }

    /// Punctual's side of the delays, in a word (the route is the burst's, by `delays`).
    pub(crate) fn delays_route(&self) -> String {
        format!("punctual, rabbitmq action (→ queue {})", self.names.name(DELAYS))
    }

    pub(crate) fn ttl_route(&self) -> String {
        "by hand: TTL + dead letter (holding → DLX → work)".to_owned()
    }

    /// Starts a consumer of queue `<prefix>.<key>` recording into `received`; it stops
    /// when the returned source is dropped.
    pub(crate) async fn consume(&self, key: &str, received: std::sync::Arc<Received>) -> Result<Consuming> {
        let queue = self.names.name(key);
        let channel = self.connection.create_channel().await.context("cannot open a RabbitMQ channel")?;
        let mut consumer = channel
            .basic_consume(
                queue.clone().into(),
                "".into(),
                BasicConsumeOptions { no_ack: true, ..Default::default() },
                FieldTable::default(),
            )
            .await
            .with_context(|| format!("cannot consume {queue}"))?;
        let task = tokio::spawn(async move {
            while let Some(delivery) = consumer.next().await {
                let received_ms = now_millis();
                match delivery {
                    Ok(delivery) => received.record(read(&delivery.properties), received_ms),
                    Err(e) => {
                        received.record(Err(format!("the consumer failed: {e}")), received_ms);
                        return;
                    }
                }
            }
        });
        Ok(Consuming { task, channel: self.channel.clone(), queue })
    }

    /// The seeds' delay: each of `due_in` (ms) published in that order into the
    /// holding queue with that `expiration`, read off the work queue into `received`.
    /// Returns whether every message came out within [`DRAIN_LIMIT`] of the last due
    /// time.
    pub(crate) async fn ttl_dead_letter(
        &self,
        due_in: &[i64],
        received: std::sync::Arc<Received>,
        progress: &Progress,
    ) -> Result<bool> {
        let consuming = self.consume("ttl.work", received.clone()).await?;
        let publisher = self.connection.create_channel().await.context("cannot open a RabbitMQ channel")?;
        publisher.confirm_select(ConfirmSelectOptions::default()).await.context("confirm.select")?;
        let holding = self.names.name("ttl.holding");
        let bar = progress.bar(due_in.len() as u64, "ttl + dead letter: published");
        let mut confirms = Vec::with_capacity(due_in.len());
        let mut last_due = 0;
        for (i, delay) in due_in.iter().enumerate() {
            let due = now_millis() + delay;
            last_due = last_due.max(due);
            let mut headers = FieldTable::default();
            headers.insert("delivery_id".into(), AMQPValue::LongString(i.to_string().into()));
            headers.insert("due_ms".into(), AMQPValue::LongLongInt(due));
            let properties = BasicProperties::default()
                .with_delivery_mode(PERSISTENT)
                .with_expiration(delay.to_string().into())
                .with_headers(headers);
            let confirm = publisher
                .basic_publish("".into(), holding.clone().into(), BasicPublishOptions::default(), b"{}", properties)
                .await
                .context("publishing into the holding queue")?;
            confirms.push(confirm);
            bar.inc(1);
        }
        for confirm in confirms {
            confirm.await.context("the broker did not confirm a message into the holding queue")?;
        }
        bar.finish_and_clear();
        let wait = Duration::from_millis((last_due - now_millis()).max(0) as u64) + DRAIN_LIMIT;
        let all = received.wait_all(wait).await;
        let _ = publisher.close(200, "done".into()).await;
        drop(consuming);
        Ok(all)
    }

    /// Deletes the run's queues and exchanges and closes the connection; failures are
    /// printed, as the queues expire anyway.
    pub(crate) async fn delete(&self) {
        for key in [BURST, DELAYS, "ttl.work", "ttl.holding"] {
            let queue = self.names.name(key);
            if let Err(e) = self.channel.queue_delete(queue.clone().into(), QueueDeleteOptions::default()).await {
                eprintln!("note: cannot delete the RabbitMQ queue {queue}: {e}");
            }
        }
        for name in [EXCHANGE, "ttl.dlx"] {
            let exchange = self.names.name(name);
            // Auto-delete exchanges may be gone with their queues already.
            let _ = self.channel.exchange_delete(exchange.into(), ExchangeDeleteOptions::default()).await;
        }
        let _ = self.connection.close(200, "done".into()).await;
    }
}

/// A running consumer, stopped on drop.
pub(crate) struct Consuming {
    task: JoinHandle<()>,
    channel: Channel,
    queue: String,
}

impl Drop for Consuming {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Source for Consuming {
    /// The queue is empty: with auto-ack, a message leaves it once handed over.
    async fn settled(&self, _received: &Received) -> Result<bool> {
        let queue = self
            .channel
            .queue_declare(
                self.queue.clone().into(),
                QueueDeclareOptions { passive: true, ..Default::default() },
                FieldTable::default(),
            )
            .await
            .with_context(|| format!("cannot read the depth of {}", self.queue))?;
        Ok(queue.message_count() == 0)
    }
}

/// The delivery id and due time of a message: the headers `delivery_id` and `due_at`
/// (RFC 3339) punctual sets, or `due_ms` (epoch ms) the seeds' messages carry.
fn read(properties: &BasicProperties) -> Result<Message, String> {
    let headers = properties.headers().as_ref().ok_or("a message without headers")?;
    let header = |name: &str| headers.inner().iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v);
    let text = |value: &AMQPValue| match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    };
    let id = header("delivery_id").and_then(text).ok_or("no delivery_id header")?;
    let due_ms = match (header("due_at"), header("due_ms")) {
        (Some(due_at), _) => {
            let due_at = text(due_at).ok_or("a due_at header that is not a string")?;
            punctual_core::Timestamp::parse(&due_at).map_err(|e| format!("due_at {due_at}: {e}"))?.as_millis()
        }
        (None, Some(AMQPValue::LongLongInt(ms))) => *ms,
        _ => return Err("no due_at header".into()),
    };
    Ok(Message { id, due_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(headers: &[(&str, AMQPValue)]) -> BasicProperties {
        let mut table = FieldTable::default();
        for (name, value) in headers {
            table.insert((*name).into(), value.clone());
        }
        BasicProperties::default().with_headers(table)
    }

    #[test]
    fn punctual_messages_are_read_from_their_headers() {
        let properties = with(&[
            ("delivery_id", AMQPValue::LongString("d-1".into())),
            ("due_at", AMQPValue::LongString("1970-01-01T00:00:01.500Z".into())),
        ]);
        let message = read(&properties).unwrap();
        assert_eq!((message.id.as_str(), message.due_ms), ("d-1", 1_500));
        let seeds = with(&[("delivery_id", AMQPValue::LongString("7".into())), ("due_ms", AMQPValue::LongLongInt(42))]);
        assert_eq!(read(&seeds).unwrap().due_ms, 42);
        let no_due = with(&[("delivery_id", AMQPValue::LongString("7".into()))]);
        assert_eq!(read(&no_due).unwrap_err(), "no due_at header");
        assert!(read(&BasicProperties::default()).is_err());
    }
}
