//! NATS's side of `brokers`: the run's JetStream stream, capturing `<prefix>.>`, and an
//! ephemeral pull consumer (no acks) reading what punctual published to
//! `<prefix>.burst`.
//!
//! The stream is file-backed (JetStream's default, what a deployment relies on), its
//! messages kept an hour at most, and deleted at the end of the run.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt as _;
use tokio::task::JoinHandle;

use super::{Message, Names, Received, Source, redact};
use crate::stats::now_millis;

/// The subject suffix punctual publishes the burst to.
pub(crate) const BURST: &str = "burst";
/// How long the stream keeps a message: what is left of a killed run goes away.
const MAX_AGE: Duration = Duration::from_secs(3_600);

/// A JetStream context with the run's stream created.
pub(crate) struct Nats {
    jetstream: jetstream::Context,
    names: Names,
    url: String,
}

impl Nats {
    pub(crate) async fn connect(url: &str, names: &Names) -> Result<Nats> {
        let client = async_nats::connect(url)
            .await
            .with_context(|| format!("cannot connect to NATS at {} (pass --nats nats://HOST:PORT)", redact(url)))?;
        let jetstream = jetstream::new(client);
        jetstream
            .create_stream(stream::Config {
                name: names.stream(),
                subjects: vec![names.name(">")],
                max_age: MAX_AGE,
                ..Default::default()
            })
            .await
            .context("cannot create the run's JetStream stream (is JetStream enabled: nats-server -js?)")?;
        Ok(Nats { jetstream, names: names.clone(), url: redact(url) })
    }

    pub(crate) fn route(&self) -> String {
        format!(
            "NATS {}: subject {} → JetStream stream {}, one pull consumer (no acks)",
            self.url,
            self.names.name(BURST),
            self.names.stream()
        )
    }

    /// Starts an ephemeral consumer of the burst's subject recording into `received`;
    /// it stops when the returned source is dropped.
    pub(crate) async fn consume(&self, received: Arc<Received>) -> Result<Consuming> {
        let stream = self.jetstream.get_stream(self.names.stream()).await.context("cannot open the run's stream")?;
        let consumer = stream
            .create_consumer(consumer::pull::Config {
                filter_subject: self.names.name(BURST),
                ack_policy: consumer::AckPolicy::None,
                ..Default::default()
            })
            .await
            .context("cannot create a JetStream consumer")?;
        let mut messages = consumer.messages().await.context("cannot pull from the JetStream consumer")?;
        let task = tokio::spawn(async move {
            while let Some(message) = messages.next().await {
                let received_ms = now_millis();
                match message {
                    Ok(message) => received.record(read(&message.message), received_ms),
                    Err(e) => {
                        received.record(Err(format!("the consumer failed: {e}")), received_ms);
                        return;
                    }
                }
            }
        });
        Ok(Consuming { task, stream })
    }

    /// Deletes the run's stream; a failure is printed.
    pub(crate) async fn delete(&self) {
        if let Err(e) = self.jetstream.delete_stream(self.names.stream()).await {
            eprintln!("note: cannot delete the JetStream stream {}: {e}", self.names.stream());
        }
    }
}

/// A running consumer, stopped on drop.
pub(crate) struct Consuming {
    task: JoinHandle<()>,
    stream: stream::Stream,
}

impl Drop for Consuming {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Source for Consuming {
    /// The stream holds no more messages than were received (it holds only this run's
    /// burst, as the delays go to RabbitMQ).
    async fn settled(&self, received: &Received) -> Result<bool> {
        let info = self.stream.get_info().await.context("cannot read the stream's state")?;
        Ok(received.messages() >= info.state.messages)
    }
}

/// The delivery id (`Nats-Msg-Id`) and due time (`Punctual-Due-At`, RFC 3339).
fn read(message: &async_nats::Message) -> Result<Message, String> {
    let headers = message.headers.as_ref().ok_or("a message without headers")?;
    let id = headers.get("Nats-Msg-Id").ok_or("no Nats-Msg-Id header")?.as_str().to_owned();
    let due_at = headers.get("Punctual-Due-At").ok_or("no Punctual-Due-At header")?.as_str();
    let due_ms =
        punctual_core::Timestamp::parse(due_at).map_err(|e| format!("Punctual-Due-At {due_at}: {e}"))?.as_millis();
    Ok(Message { id, due_ms })
}
