//! One connection handle for a single Redis, a Redis Cluster or a primary watched by
//! Redis Sentinel: opening it on a [`Target`], a time limit on every call, and the
//! mapping of Redis errors to the store's.
//!
//! Invariant: no call waits longer than the configured operation timeout; past it the
//! caller gets [`Error::Unavailable`]. Reachability changes are logged once per change,
//! not once per failed call, and Redis becoming reachable again is signalled
//! ([`Conn::reconnected`]) so the store can check at once what Redis still holds.
//!
//! Invariant (Cluster): when every call has failed as unavailable for [`stall`] in a
//! row, a new Cluster connection is opened beside the old one and replaces it once it
//! is up; calls go on through the old one until then. The client's own recovery after
//! a primary is killed can stay stuck on the dead node long after the Cluster promoted
//! its replica; a new connection reads the slots afresh.
//!
//! Invariant (Sentinel): calls go to the node the Sentinels name primary, asked again
//! whenever a call finds Redis unavailable or the node refuses as a replica (the old
//! primary demoted), so a failover is followed without a restart.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use punctual_core::{Error, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Cmd, ConnectionInfo, ErrorKind, FromRedisValue, RedisError, ScriptInvocation, ServerErrorKind, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::target::{Target, info, redacted};

#[derive(Clone)]
enum Handle {
    Single(ConnectionManager),
    Cluster(Arc<ClusterHandle>),
    Sentinel(Arc<SentinelPrimary>),
}

/// A Cluster connection that is replaced when calls through it have failed for too
/// long (see the module's invariants).
struct ClusterHandle {
    client: ClusterClient,
    connection: Mutex<ClusterConnection>,
    /// When the calls began to fail, in milliseconds after `opened` plus one; 0 while
    /// they answer. An atomic: every answered call reads it, on the lease path.
    failing_since: AtomicU64,
    opened: Instant,
    replacing: AtomicBool,
    stall: Duration,
}

impl ClusterHandle {
    fn connection(&self) -> ClusterConnection {
        locked(&self.connection).clone()
    }

    fn answered(&self) {
        if self.failing_since.load(Ordering::Relaxed) != 0 {
            self.failing_since.store(0, Ordering::Relaxed);
        }
    }

    /// Counts a call that found Redis unavailable; past `stall` of those in a row,
    /// opens a replacement connection (one at a time).
    fn failed(self: &Arc<Self>) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
        let began = match self.failing_since.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => now,
            Err(began) => began,
        };
        if Duration::from_millis(now.saturating_sub(began)) < self.stall || self.replacing.swap(true, Ordering::SeqCst)
        {
            return;
        }
        self.failing_since.store(0, Ordering::Relaxed);
        let handle = Arc::clone(self);
        tokio::spawn(async move {
            match tokio::time::timeout(handle.stall, handle.client.get_async_connection()).await {
                Ok(Ok(connection)) => {
                    *locked(&handle.connection) = connection;
                    tracing::warn!(
                        stalled = ?handle.stall,
                        "every Redis Cluster call failed for too long; a new Cluster connection replaced the old one"
                    );
                }
                Ok(Err(e)) => tracing::debug!(error = %e, "a replacement Cluster connection could not be opened"),
                Err(_) => tracing::debug!("a replacement Cluster connection did not open in time"),
            }
            handle.replacing.store(false, Ordering::SeqCst);
        });
    }
}

/// The Cluster client's shortest pause before trying a command again, in milliseconds;
/// the longest is four times that.
const CLUSTER_RETRY_PAUSE_MS: u64 = 50;

/// How long Cluster calls may all fail before the connection is replaced: three
/// operation timeouts, at least three seconds (a failover the client follows by itself
/// takes about that).
fn stall(op_timeout: Duration) -> Duration {
    (op_timeout * 3).max(Duration::from_secs(3))
}

/// The primary the Sentinels name, and a connection to it while it answers.
struct SentinelPrimary {
    sentinel: tokio::sync::Mutex<SentinelClient>,
    current: Mutex<Option<ConnectionManager>>,
    config: ConnectionManagerConfig,
}

impl SentinelPrimary {
    /// The connection to the primary, asking the Sentinels where it is when there is
    /// none (one asker at a time; the others take its answer).
    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        if let Some(connection) = locked(&self.current).clone() {
            return Ok(connection);
        }
        let mut sentinel = self.sentinel.lock().await;
        if let Some(connection) = locked(&self.current).clone() {
            return Ok(connection);
        }
        let client = sentinel.async_get_client().await?;
        let connection = ConnectionManager::new_with_config(client, self.config.clone()).await?;
        *locked(&self.current) = Some(connection.clone());
        Ok(connection)
    }

    /// Drops the connection, so the next call asks the Sentinels again.
    fn forget(&self) {
        locked(&self.current).take();
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A cheap-to-clone handle on the store's Redis.
#[derive(Clone)]
pub(crate) struct Conn {
    handle: Handle,
    timeout: Duration,
    reachable: Arc<AtomicBool>,
    reconnected: Arc<Notify>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.handle {
            Handle::Single(_) => "single",
            Handle::Cluster(_) => "cluster",
            Handle::Sentinel(_) => "sentinel",
        };
        f.debug_struct("Conn").field("kind", &kind).field("timeout", &self.timeout).finish()
    }
}

/// The connection manager's settings: `op_timeout` per answer, quick reconnects.
fn manager_config(op_timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(op_timeout.min(Duration::from_secs(5))))
        .set_response_timeout(Some(op_timeout))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_secs(1))
}

impl Conn {
    /// Connects to `target`, failing with `Unavailable` when it does not answer within
    /// `op_timeout`; and the nodes to subscribe through (see `wake`).
    pub(crate) async fn open(target: &Target, op_timeout: Duration) -> Result<(Conn, Vec<ConnectionInfo>)> {
        let connect_timeout = op_timeout.min(Duration::from_secs(5));
        match target {
            Target::Single(url) => {
                let client = redis::Client::open(url.as_str()).map_err(map_err)?;
                let manager = tokio::time::timeout(
                    op_timeout,
                    ConnectionManager::new_with_config(client, manager_config(op_timeout)),
                )
                .await
                .map_err(|_| {
                    Error::Unavailable(format!("Redis at {} did not answer within {op_timeout:?}", redacted(url)))
                })?
                .map_err(map_err)?;
                Ok((Conn::new(Handle::Single(manager), op_timeout), vec![info(url)?]))
            }
            Target::Cluster(urls) => {
                let client = redis::cluster::ClusterClientBuilder::new(urls.clone())
                    .connection_timeout(connect_timeout)
                    .response_timeout(op_timeout)
                    .retries(3)
                    // A redirected or failed command is tried again within the call's
                    // time limit: the client's default pause (1.28 s or more) outlasts
                    // a 1 s `[redis] timeout`, so a call that met a failover's MOVED or
                    // a refreshed slot map answered 503 instead of its answer.
                    .min_retry_wait(CLUSTER_RETRY_PAUSE_MS)
                    .max_retry_wait(CLUSTER_RETRY_PAUSE_MS * 4)
                    .build()
                    .map_err(map_err)?;
                let connection = tokio::time::timeout(op_timeout, client.get_async_connection())
                    .await
                    .map_err(|_| Error::Unavailable(format!("Redis Cluster did not answer within {op_timeout:?}")))?
                    .map_err(map_err)?;
                let nodes = urls.iter().map(|u| info(u)).collect::<Result<Vec<_>>>()?;
                let handle = ClusterHandle {
                    client,
                    connection: Mutex::new(connection),
                    failing_since: AtomicU64::new(0),
                    opened: Instant::now(),
                    replacing: AtomicBool::new(false),
                    stall: stall(op_timeout),
                };
                Ok((Conn::new(Handle::Cluster(Arc::new(handle)), op_timeout), nodes))
            }
            Target::Sentinel { sentinels, primary, node } => {
                let asked = |e: Error| {
                    let e = match e {
                        Error::Unavailable(why) | Error::Internal(why) => why,
                        other => other.to_string(),
                    };
                    Error::Unavailable(format!(
                        "Redis Sentinel ({}) asked for the primary named '{primary}': {e}",
                        sentinels.iter().map(|s| redacted(s)).collect::<Vec<_>>().join(", ")
                    ))
                };
                let node = info(node)?;
                let mut nodes_with =
                    SentinelNodeConnectionInfo::default().set_redis_connection_info(node.redis_settings().clone());
                if matches!(node.addr(), redis::ConnectionAddr::TcpTls { .. }) {
                    nodes_with = nodes_with.set_tls_mode(redis::TlsMode::Secure);
                }
                let lookup = async {
                    let mut sentinel = redis::sentinel::Sentinel::build(sentinels.clone()).map_err(map_err)?;
                    let primary_client =
                        sentinel.async_master_for(primary, Some(&nodes_with)).await.map_err(map_err)?;
                    let replicas =
                        sentinel.async_get_replica_clients(primary, Some(&nodes_with)).await.unwrap_or_default();
                    Ok::<_, Error>((primary_client, replicas))
                };
                let (primary_client, replicas) = tokio::time::timeout(op_timeout, lookup)
                    .await
                    .map_err(|_| Error::Unavailable(format!("no answer within {op_timeout:?}")))
                    .and_then(|found| found)
                    .map_err(asked)?;
                let client = SentinelClient::build(
                    sentinels.clone(),
                    primary.as_str(),
                    Some(nodes_with),
                    SentinelServerType::Master,
                )
                .map_err(map_err)?;
                // The primary just found is the first connection's: the Sentinels are
                // asked again only once it stops answering.
                let config = manager_config(op_timeout);
                let first = tokio::time::timeout(
                    op_timeout,
                    ConnectionManager::new_with_config(primary_client.clone(), config.clone()),
                )
                .await
                .map_err(|_| Error::Unavailable(format!("the primary did not answer within {op_timeout:?}")))
                .and_then(|connected| connected.map_err(map_err))
                .map_err(asked)?;
                let handle = SentinelPrimary {
                    sentinel: tokio::sync::Mutex::new(client),
                    current: Mutex::new(Some(first)),
                    config,
                };
                // Wake-ups through the primary and its replicas: each replica gets
                // every publication too, and one of them is the primary after a failover.
                let nodes = std::iter::once(primary_client)
                    .chain(replicas)
                    .map(|client| client.get_connection_info().clone())
                    .collect();
                Ok((Conn::new(Handle::Sentinel(Arc::new(handle)), op_timeout), nodes))
            }
        }
    }

    fn new(handle: Handle, timeout: Duration) -> Conn {
        let (reachable, reconnected) = (Arc::new(AtomicBool::new(true)), Arc::new(Notify::new()));
        Conn { handle, timeout, reachable, reconnected }
    }

    /// Notified (one waiter, or the next to wait) each time Redis answers again after
    /// it was unreachable.
    pub(crate) fn reconnected(&self) -> &Notify {
        &self.reconnected
    }

    /// Runs a command on the one Redis, or on every primary of a Cluster: each node's
    /// address (`""` for the one Redis) with its answer, a refusal (such as a managed
    /// Redis refusing `CONFIG`) as [`Value::ServerError`].
    pub(crate) async fn on_every_primary(&self, cmd: &Cmd) -> Result<Vec<(String, Value)>> {
        let call = async {
            match &self.handle {
                Handle::Single(_) | Handle::Sentinel(_) => {
                    match cmd.query_async::<Value>(&mut self.one_redis().await?).await {
                        Ok(value) => Ok(vec![(String::new(), value)]),
                        Err(e) => match e.try_into() {
                            Ok(refused) => Ok(vec![(String::new(), Value::ServerError(refused))]),
                            Err(e) => Err(e),
                        },
                    }
                }
                Handle::Cluster(c) => {
                    use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
                    let route = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                    let answers = c.connection().route_command(cmd.clone(), route).await?;
                    // Without a response policy, the answers come as a map of node → answer.
                    match answers {
                        Value::Map(pairs) => Ok(pairs
                            .into_iter()
                            .map(|(node, answer)| (String::from_redis_value(node).unwrap_or_default(), answer))
                            .collect()),
                        other => Ok(vec![(String::new(), other)]),
                    }
                }
            }
        };
        self.limited(call).await
    }

    /// Runs a command.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        let call = async {
            match &self.handle {
                Handle::Single(_) | Handle::Sentinel(_) => cmd.query_async(&mut self.one_redis().await?).await,
                Handle::Cluster(c) => cmd.query_async(&mut c.connection()).await,
            }
        };
        self.limited(call).await
    }

    /// Runs a script by SHA, loading it first where the node does not know it.
    pub(crate) async fn invoke<T: FromRedisValue>(&self, invocation: &ScriptInvocation<'_>) -> Result<T> {
        let call = async {
            let mut tries = 1;
            loop {
                let result = match &self.handle {
                    Handle::Single(_) | Handle::Sentinel(_) => {
                        invocation.invoke_async(&mut self.one_redis().await?).await
                    }
                    Handle::Cluster(c) => invocation.invoke_async(&mut c.connection()).await,
                };
                // The invocation loads a script a node lacks and runs it again; a
                // replica promoted meanwhile (a failover, scripts are not replicated)
                // can lack it once more, if the slot moved between the load and the
                // run. Another try loads it there.
                match result {
                    Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) && tries < 3 => {
                        tries += 1;
                    }
                    other => return other,
                }
            }
        };
        self.limited(call).await
    }

    /// `WAIT replicas timeout_ms` on the node holding `key`: how many replicas have
    /// every write this connection made to that node.
    pub(crate) async fn wait(&self, key: &str, replicas: u32, timeout_ms: u64) -> Result<u32> {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(timeout_ms);
        self.on_node_of(key, &cmd).await
    }

    /// Runs a command that names no key (`WAIT`, `SCAN`) on the node holding `key`:
    /// the one Redis, or the primary of `key`'s slot in a Cluster.
    pub(crate) async fn on_node_of<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> Result<T> {
        let call = async {
            match &self.handle {
                Handle::Single(_) | Handle::Sentinel(_) => cmd.query_async(&mut self.one_redis().await?).await,
                Handle::Cluster(c) => {
                    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
                        key,
                        SlotAddr::Master,
                    )));
                    // A routed command's refusal comes back as a value: raise it as the
                    // error it is (UNBLOCKED when the node was demoted mid-WAIT).
                    let value = c.connection().route_command(cmd.clone(), route).await?.extract_error()?;
                    redis::from_redis_value(value).map_err(redis::RedisError::from)
                }
            }
        };
        self.limited(call).await
    }

    /// The connection to the one Redis: the single one, or the primary the Sentinels
    /// name. Not for a Cluster.
    async fn one_redis(&self) -> redis::RedisResult<ConnectionManager> {
        match &self.handle {
            Handle::Single(c) => Ok(c.clone()),
            Handle::Sentinel(primary) => primary.connection().await,
            Handle::Cluster(_) => unreachable!("a Cluster's calls are routed, never sent to one Redis"),
        }
    }

    async fn limited<T>(&self, call: impl Future<Output = redis::RedisResult<T>>) -> Result<T> {
        let result = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(map_err(e)),
            Err(_) => Err(Error::Unavailable(format!("Redis did not answer within {:?}", self.timeout))),
        };
        self.note(&result);
        result
    }

    /// Logs a change of reachability, once. Any answer but `Unavailable`, an error
    /// included, means Redis answered.
    fn note<T>(&self, result: &Result<T>) {
        let unavailable = matches!(result, Err(Error::Unavailable(_)));
        match &self.handle {
            Handle::Single(_) => {}
            Handle::Cluster(cluster) if unavailable => cluster.failed(),
            Handle::Cluster(cluster) => cluster.answered(),
            Handle::Sentinel(primary) if unavailable => primary.forget(),
            Handle::Sentinel(_) => {}
        }
        if let Err(Error::Unavailable(why)) = result {
            if self.reachable.swap(false, Ordering::SeqCst) {
                tracing::warn!(error = %why, "Redis is unreachable; calls answer 'unavailable' until it returns");
            }
        } else if !self.reachable.swap(true, Ordering::SeqCst) {
            tracing::info!("Redis is reachable again");
            self.reconnected.notify_one();
        }
    }
}

/// Redis errors as store errors: anything that may pass with time (connection lost,
/// cluster reconfiguring, a primary demoted to replica while a call waited on it —
/// `UNBLOCKED` — or before a `WAIT` reached it, Redis loading its data, Sentinel naming
/// no primary while it fails one over) is `Unavailable`; the rest is a bug or
/// misconfiguration, `Internal`.
pub(crate) fn map_err(e: RedisError) -> Error {
    let demoted_before_wait = e.detail().is_some_and(|d| d.starts_with("WAIT cannot be used with replica"));
    let transient = e.is_io_error()
        || e.code() == Some("UNBLOCKED")
        || demoted_before_wait
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::Io
                | ErrorKind::ClusterConnectionNotFound
                | ErrorKind::MasterNameNotFoundBySentinel
                | ErrorKind::NoValidReplicasFoundBySentinel
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::Moved
                        | ServerErrorKind::Ask
                )
        );
    if transient { Error::Unavailable(format!("Redis: {e}")) } else { Error::Internal(format!("Redis: {e}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(reply: &[u8]) -> RedisError {
        let value = redis::parse_redis_value(reply).expect("a RESP error reply parses as a value");
        value.extract_error().expect_err("an error reply is an error")
    }

    #[test]
    fn a_primary_demoted_mid_call_is_unavailable_and_a_bad_command_is_internal() {
        let demoted = refusal(b"-UNBLOCKED force unblock from blocking operation, instance state changed\r\n");
        assert!(matches!(map_err(demoted), Error::Unavailable(_)));
        let readonly = refusal(b"-READONLY You can't write against a read only replica.\r\n");
        assert!(matches!(map_err(readonly), Error::Unavailable(_)));
        let demoted_before_wait = refusal(b"-ERR WAIT cannot be used with replica instances. Please also note\r\n");
        assert!(matches!(map_err(demoted_before_wait), Error::Unavailable(_)));
        let failing_over =
            RedisError::from((ErrorKind::MasterNameNotFoundBySentinel, "Master with given name not found"));
        assert!(matches!(map_err(failing_over), Error::Unavailable(_)));
        let wrong = refusal(b"-ERR unknown command 'WAITT'\r\n");
        assert!(matches!(map_err(wrong), Error::Internal(_)));
    }
}
