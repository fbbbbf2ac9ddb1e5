//! The servers sharing a store, each with what it announces ([`RedisNodes`]): one Hash
//! for the store, `<p>:nodes`, a field per node (see `keys`), so that every node can
//! see the others' announcements (the server announces its delivery policy, and
//! reports nodes whose policy differs from its own).
//!
//! Invariants: an announcement holds for the time its node gave from the `now` it
//! gave (a server's clock is Redis' time as it measures it, so nodes agree within
//! milliseconds, on expiries of seconds); a node that stops announcing drops out when
//! it expires, a node that stops cleanly at once ([`RedisNodes::withdraw`]). Expired
//! fields are deleted by the next announcement of any node, so the Hash holds about as
//! many fields as there are live nodes. One Hash rather than a key per node with a TTL
//! for the reason of `queue_records`: reading every node is one call to one node of a
//! Cluster, not a `SCAN` of all of them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use punctual_core::{Result, Timestamp};

use crate::{Shared, keys};

/// What a node announces, and for how long it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// The node's name among those sharing the store; one field of the Hash.
    pub node: String,
    /// Any text.
    pub text: String,
    pub ttl: Duration,
}

/// The nodes serving a store and their announcements, kept in Redis. Cheap to clone;
/// calls after the store closed fail with `Unavailable`.
#[derive(Debug, Clone)]
pub struct RedisNodes {
    pub(crate) shared: Arc<Shared>,
}

impl RedisNodes {
    /// Makes `announcement` hold from `now` until its `ttl` passes (replacing the
    /// node's previous one), and answers the text of every live node's announcement,
    /// this one's included, by node name.
    pub async fn announce(&self, announcement: &Announcement, now: Timestamp) -> Result<BTreeMap<String, String>> {
        self.shared.check_open()?;
        self.shared.announce_node(announcement, now).await
    }

    /// The names of the nodes whose announcement holds at `now`, read without
    /// announcing (a tool looking at the store is no node of it).
    pub async fn live(&self, now: Timestamp) -> Result<Vec<String>> {
        self.shared.check_open()?;
        let key = keys::nodes(&self.shared.config.prefix);
        let all: BTreeMap<String, String> = self.shared.conn.query(redis::cmd("HGETALL").arg(&key)).await?;
        let holds = |value: &str| {
            let expires = value.split_once(',').map_or("", |(expires, _)| expires);
            expires.parse::<i64>().is_ok_and(|expires| expires > now.as_millis())
        };
        Ok(all.into_iter().filter(|(_, value)| holds(value)).map(|(node, _)| node).collect())
    }

    /// Withdraws `node`'s announcement: the other nodes stop seeing it at once.
    pub async fn withdraw(&self, node: &str) -> Result<()> {
        self.shared.check_open()?;
        let key = keys::nodes(&self.shared.config.prefix);
        self.shared.conn.query::<()>(redis::cmd("HDEL").arg(&key).arg(node)).await
    }
}
