//! What each server sharing a store announces (`RedisNodes`, `lua/announce.lua`): every
//! process sees every live node's announcement, an announcement holds for the time its
//! node gave and then drops out (and out of the Hash), and a node that withdraws drops
//! out at once. Time is the caller's: these tests give it.
//!
//! Guards against a node that cannot see how the others are configured (issue Q, 10:
//! nodes with different egress policies dead-lettered each other's target tasks
//! unnoticed), and against a store that keeps the name of every node that ever ran.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test")]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use punctual_core::Timestamp;
use punctual_redis::{Announcement, RedisNodes};

const TTL: Duration = Duration::from_millis(10_000);

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_796_040_000_000 + ms)
}

fn live(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(node, text)| ((*node).to_owned(), (*text).to_owned())).collect()
}

fn announcing(node: &str, text: &str) -> Announcement {
    Announcement { node: node.to_owned(), text: text.to_owned(), ttl: TTL }
}

/// Two stores under one prefix stand for two servers sharing one Redis.
async fn two_processes_see_each_other(one: RedisNodes, two: RedisNodes) {
    let (a, c) = (announcing("web-1", "policy a"), announcing("web-1", "policy c"));
    let b = announcing("web-2", "policy b, with, commas");
    assert_eq!(one.announce(&a, at(0)).await.unwrap(), live(&[("web-1", "policy a")]));
    let both = live(&[("web-1", "policy a"), ("web-2", "policy b, with, commas")]);
    assert_eq!(two.announce(&b, at(1_000)).await.unwrap(), both);
    // A new announcement replaces the node's last one and its expiry.
    let both = live(&[("web-1", "policy c"), ("web-2", "policy b, with, commas")]);
    assert_eq!(one.announce(&c, at(9_000)).await.unwrap(), both);
    // web-2 announced nothing since 1 000: it drops out at 11 000, web-1 holds until 19 000.
    assert_eq!(one.announce(&c, at(11_000)).await.unwrap(), live(&[("web-1", "policy c")]));
    assert_eq!(two.announce(&b, at(12_000)).await.unwrap().len(), 2, "announcing again is live again");
    two.withdraw("web-2").await.unwrap();
    assert_eq!(one.announce(&c, at(12_500)).await.unwrap(), live(&[("web-1", "policy c")]));
}

#[tokio::test]
async fn processes_on_one_redis_see_each_others_announcements_while_they_hold() {
    let prefix = "nodes-single";
    let (one, two) = (support::on_server_under(prefix).await, support::on_server_under(prefix).await);
    two_processes_see_each_other(one.nodes(), two.nodes()).await;
    // The expired node was deleted, not only left out.
    let fields = support::server().command(&["HKEYS", &format!("{prefix}:nodes")]).unwrap();
    assert_eq!(fields.trim(), "web-1");
}

#[tokio::test]
async fn announcements_work_on_a_cluster() {
    let url = support::cluster().url();
    let connect = || {
        let mut config = punctual_redis::RedisConfig::new(punctual_redis::Target::parse(&url).unwrap());
        config.time = punctual_redis::TimeSource::Caller;
        config.prefix = "nodes-cluster".to_owned();
        punctual_redis::RedisStore::connect(config)
    };
    two_processes_see_each_other(connect().await.unwrap().nodes(), connect().await.unwrap().nodes()).await;
}
