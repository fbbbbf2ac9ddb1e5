//! Follows the wake-up channel: other processes' scripts publish `"<queue>\n<due ms>"`
//! when they make the earliest due time of a queue's handler lane earlier, and
//! `"<queue>\n<due ms>\nt"` for its target lane; this passes each on as a [`Wakeup`]
//! of that lane. A message without a lane (as every message was before lanes) is the
//! handler lane's; one naming a lane this process does not know is dropped, which the
//! safety poll covers. Reconnects by itself; what it misses while disconnected the
//! engine's safety poll covers too.

use std::time::Duration;

use futures_util::StreamExt;
use punctual_core::{Lane, QueueName, Timestamp, Wakeup};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Subscribes through the first of `nodes` that answers (any node of a Cluster
/// receives every publication) until `stop`.
pub(crate) async fn follow(
    nodes: Vec<redis::ConnectionInfo>,
    channel: String,
    sink: broadcast::Sender<Wakeup>,
    stop: CancellationToken,
) {
    let mut attempt = 0usize;
    loop {
        let node = nodes[attempt % nodes.len()].clone();
        attempt += 1;
        let session = async {
            let client = redis::Client::open(node)?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            tracing::debug!(channel = %channel, "following wake-ups");
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                if let Some(wakeup) = parse(message.get_payload_bytes()) {
                    let _ = sink.send(wakeup);
                }
            }
            Ok::<(), redis::RedisError>(())
        };
        tokio::select! {
            _ = session => {}
            _ = stop.cancelled() => return,
        }
        let pause = Duration::from_millis(100u64 << attempt.min(5));
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => return,
        }
    }
}

fn parse(payload: &[u8]) -> Option<Wakeup> {
    let text = std::str::from_utf8(payload).ok()?;
    let (queue, rest) = text.split_once('\n')?;
    let (due, lane) = match rest.split_once('\n') {
        None => (rest, Lane::Handler),
        Some((due, "t")) => (due, Lane::Target),
        Some(_unknown) => return None,
    };
    let wakeup = Wakeup::new(QueueName::new(queue).ok()?, Timestamp::from_millis(due.parse().ok()?));
    Some(wakeup.in_lane(lane))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_messages_parse_and_garbage_is_ignored() {
        let w = parse(b"order.cancel\n1700000000123").unwrap();
        assert_eq!((w.queue.as_str(), w.due_at.as_millis()), ("order.cancel", 1_700_000_000_123));
        assert_eq!(w.lane, Lane::Handler, "a message without a lane, as before lanes, is the handler lane's");
        let w = parse(b"order.cancel\n1700000000123\nt").unwrap();
        assert_eq!((w.queue.as_str(), w.due_at.as_millis(), w.lane), ("order.cancel", 1_700_000_000_123, Lane::Target));
        assert!(parse(b"q\n5\nx").is_none(), "a lane this process does not know");
        assert!(parse(b"q\n5\n").is_none());
        assert!(parse(b"q\n5\nt\n").is_none());
        assert!(parse(b"no-newline").is_none());
        assert!(parse(b"bad queue!\n5").is_none());
        assert!(parse(b"q\nsoon").is_none());
    }
}
