//! Follows the wake-up channel: scripts of every process publish
//! `"<queue>\n<due ms>"` when they make the earliest due time of a queue's handler lane
//! earlier, then `"\nt"` when it is the target lane's; a sharded queue's messages then
//! name the shard and the publishing process, `"\ns<n>\np<process>"`. A sharded
//! queue's scripts also publish when they make the earliest task of one priority above
//! 0 earlier, `"\nu<priority>"` after the lane (an earlier punctual drops these: it
//! knows no priorities), which lowers that priority's band of the shard (`bands`). Each is passed on
//! as a [`Wakeup`] of its lane, and another process's lowers that shard's head
//! (`heads`; this process lowered its own when its call was answered, or forgot them
//! when it was not, and its message arriving later must not lower a head a lease has
//! learnt since). A message without a
//! lane (as every message was before lanes) is the handler lane's; one naming anything
//! this process does not know is dropped, which the safety poll covers (an earlier
//! punctual drops the messages of sharded queues likewise). Reconnects by itself; every
//! (re)subscription forgets the shard heads, since messages may have been missed, and
//! what it misses while disconnected the engine's safety poll covers.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use punctual_core::{Lane, Priority, QueueName, Timestamp, Wakeup};

use crate::{Shared, keys};

/// Subscribes through the first of `nodes` that answers (any node of a Cluster
/// receives every publication) until the store stops; `first_subscription` is told
/// once the first subscription holds (and the heads learnt before it are forgotten).
pub(crate) async fn follow(
    shared: Arc<Shared>,
    nodes: Vec<redis::ConnectionInfo>,
    first_subscription: tokio::sync::oneshot::Sender<()>,
) {
    let mut first_subscription = Some(first_subscription);
    let channel = keys::wake_channel(&shared.config.prefix);
    let stop = shared.stop.clone();
    let mut attempt = 0usize;
    // Sessions in a row that never subscribed: the back-off's exponent, so a
    // subscription that held and then broke starts again from the shortest pause.
    let mut failures = 0u32;
    loop {
        let node = nodes[attempt % nodes.len()].clone();
        attempt += 1;
        let mut subscribed = false;
        let session = async {
            let client = redis::Client::open(node)?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            subscribed = true;
            shared.heads.forget_all();
            if let Some(first) = first_subscription.take() {
                let _ = first.send(());
            }
            tracing::debug!(channel = %channel, "following wake-ups");
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                if let Some(message) = parse(message.get_payload_bytes()) {
                    if let Some(shard) = message.shard.filter(|s| s.from != shared.publisher) {
                        shared.heads.lower(
                            &message.wakeup.queue,
                            message.wakeup.lane,
                            shard.index,
                            message.priority,
                            message.wakeup.due_at,
                        );
                    }
                    let _ = shared.wakeups.send(message.wakeup);
                }
            }
            Ok::<(), redis::RedisError>(())
        };
        tokio::select! {
            _ = session => {}
            _ = stop.cancelled() => return,
        }
        // The subscription broke or its node did not answer: back off before the next
        // node (doubling with each session in a row that did not subscribe, up to
        // 3.2 s), so a Redis that is down is not hammered.
        failures = if subscribed { 0 } else { failures + 1 };
        let pause = Duration::from_millis(100u64 << failures.min(5));
        if tokio::time::timeout(pause, stop.cancelled()).await.is_ok() {
            return;
        }
    }
}

/// What one message says.
#[derive(Debug)]
struct Message<'a> {
    wakeup: Wakeup,
    /// The priority whose earliest task was made earlier; 0: the lane's head was.
    priority: Priority,
    /// A sharded queue's: which shard, and who published it.
    shard: Option<ShardOf<'a>>,
}

#[derive(Debug, PartialEq)]
struct ShardOf<'a> {
    index: u32,
    from: &'a str,
}

fn parse(payload: &[u8]) -> Option<Message<'_>> {
    let text = std::str::from_utf8(payload).ok()?;
    let mut lines = text.split('\n');
    let queue = QueueName::new(lines.next()?).ok()?;
    let due = Timestamp::from_millis(lines.next()?.parse().ok()?);
    let mut rest = lines.peekable();
    let lane = if rest.next_if_eq(&"t").is_some() { Lane::Target } else { Lane::Handler };
    let priority = match rest.next_if(|line| line.starts_with('u')) {
        Some(line) => Priority::new(line[1..].parse().ok()?).ok().filter(|p| *p > Priority::LOWEST)?,
        None => Priority::LOWEST,
    };
    let shard = match (rest.next(), rest.next()) {
        (None, _) => None,
        (Some(shard), Some(from)) => Some(ShardOf {
            index: shard.strip_prefix('s')?.parse().ok()?,
            from: from.strip_prefix('p').filter(|from| !from.is_empty())?,
        }),
        (Some(_), None) => return None,
    };
    if rest.next().is_some() {
        return None;
    }
    Some(Message { wakeup: Wakeup::new(queue, due).in_lane(lane), priority, shard })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_messages_parse_and_garbage_is_ignored() {
        let m = parse(b"order.cancel\n1700000000123").unwrap();
        assert_eq!((m.wakeup.queue.as_str(), m.wakeup.due_at.as_millis()), ("order.cancel", 1_700_000_000_123));
        assert_eq!((m.wakeup.lane, m.shard), (Lane::Handler, None), "a message as before lanes: the handler lane");
        let m = parse(b"order.cancel\n1700000000123\nt").unwrap();
        assert_eq!((m.wakeup.lane, m.shard), (Lane::Target, None));
        let m = parse(b"q\n5\ns12\npab12").unwrap();
        assert_eq!((m.wakeup.lane, m.shard), (Lane::Handler, Some(ShardOf { index: 12, from: "ab12" })));
        let m = parse(b"q\n5\nt\ns0\npx").unwrap();
        assert_eq!((m.wakeup.lane, m.shard), (Lane::Target, Some(ShardOf { index: 0, from: "x" })));
        assert!(parse(b"q\n5\nx").is_none(), "a lane this process does not know");
        assert!(parse(b"q\n5\ns3").is_none(), "a shard without its publisher");
        assert!(parse(b"q\n5\ns3\np").is_none());
        assert!(parse(b"q\n5\ns3\npa\nt").is_none(), "the lane comes first");
        assert!(parse(b"q\n5\nsx\npa").is_none());
        assert!(parse(b"q\n5\n").is_none());
        assert!(parse(b"q\n5\nt\n").is_none());
        assert!(parse(b"no-newline").is_none());
        assert!(parse(b"bad queue!\n5").is_none());
        assert!(parse(b"q\nsoon").is_none());
    }

    #[test]
    fn a_wake_message_may_name_a_priority_after_its_lane() {
        let m = parse(b"q\n5\nu9\ns2\npx").unwrap();
        assert_eq!(
            (m.wakeup.lane, m.priority.get(), m.shard),
            (Lane::Handler, 9, Some(ShardOf { index: 2, from: "x" }))
        );
        let m = parse(b"q\n5\nt\nu3\ns0\npx").unwrap();
        assert_eq!((m.wakeup.lane, m.priority.get()), (Lane::Target, 3));
        assert_eq!(parse(b"q\n5\ns0\npx").unwrap().priority, Priority::LOWEST, "no priority: the head's message");
        for bad in [&b"q\n5\nu0\ns0\npx"[..], b"q\n5\nu10\ns0\npx", b"q\n5\nu\ns0\npx", b"q\n5\nu3\nt\ns0\npx"] {
            assert!(parse(bad).is_none(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
