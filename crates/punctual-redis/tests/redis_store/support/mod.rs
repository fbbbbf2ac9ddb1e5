//! Stores for the suites: each test gets its own key prefix on a Redis (or Redis
//! Cluster) private to this test binary, so tests run in parallel and never see each
//! other's keys.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use punctual_redis::{RedisConfig, RedisStore, Target, TimeSource};
use punctual_testkit::redis::{self, RedisCluster, RedisServer};

static SERVER: OnceLock<RedisServer> = OnceLock::new();
static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
static NEXT_PREFIX: AtomicU32 = AtomicU32::new(0);

pub fn server() -> &'static RedisServer {
    SERVER.get_or_init(redis::server)
}

pub fn cluster() -> &'static RedisCluster {
    CLUSTER.get_or_init(|| RedisCluster::start(3))
}

fn fresh_prefix() -> String {
    format!("t{}", NEXT_PREFIX.fetch_add(1, Ordering::Relaxed))
}

/// A store on the private server, time from the caller (the suites drive a manual clock).
pub async fn on_server() -> RedisStore {
    on_server_under(&fresh_prefix()).await
}

/// A store on the private server under `prefix` (for tests that read its keys), time
/// from the caller.
pub async fn on_server_under(prefix: &str) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&server().url()).expect("server url"));
    config.prefix = prefix.into();
    config.time = TimeSource::Caller;
    RedisStore::connect(config).await.expect("connect to the private redis-server")
}

/// A store on the private Cluster, time from the caller, every queue in `shards`
/// shards, leased in strict due order across them (`shard_order_slack` zero: the
/// order the store contract states; `shard_order.rs` tests the default slack's bound).
pub async fn on_cluster(shards: u32) -> RedisStore {
    on_cluster_under(&fresh_prefix(), shards).await
}

/// A store as [`on_cluster`] gives, under `prefix` (for several processes on one
/// store).
pub async fn on_cluster_under(prefix: &str, shards: u32) -> RedisStore {
    let mut config = RedisConfig::new(Target::parse(&cluster().url()).expect("cluster url"));
    config.prefix = prefix.into();
    config.default_shards = shards;
    config.time = TimeSource::Caller;
    config.shard_order_slack = std::time::Duration::ZERO;
    RedisStore::connect(config).await.expect("connect to the private Redis Cluster")
}
