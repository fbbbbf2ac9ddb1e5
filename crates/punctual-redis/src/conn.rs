//! One connection handle for a single Redis or a Redis Cluster, with a time limit on
//! every call and the mapping of Redis errors to the store's.
//!
//! Invariant: no call waits longer than the configured operation timeout; past it the
//! caller gets [`Error::Unavailable`]. Reachability changes are logged once per change,
//! not once per failed call, and Redis becoming reachable again is signalled
//! ([`Conn::reconnected`]) so the store can check at once what Redis still holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use punctual_core::{Error, Result};
use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisError, ScriptInvocation, ServerErrorKind, Value};
use tokio::sync::Notify;

#[derive(Clone)]
enum Handle {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
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
        };
        f.debug_struct("Conn").field("kind", &kind).field("timeout", &self.timeout).finish()
    }
}

impl Conn {
    pub(crate) fn single(manager: ConnectionManager, timeout: Duration) -> Conn {
        Conn::new(Handle::Single(manager), timeout)
    }

    pub(crate) fn cluster(connection: ClusterConnection, timeout: Duration) -> Conn {
        Conn::new(Handle::Cluster(connection), timeout)
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
                Handle::Single(c) => match cmd.query_async::<Value>(&mut c.clone()).await {
                    Ok(value) => Ok(vec![(String::new(), value)]),
                    Err(e) => match e.try_into() {
                        Ok(refused) => Ok(vec![(String::new(), Value::ServerError(refused))]),
                        Err(e) => Err(e),
                    },
                },
                Handle::Cluster(c) => {
                    use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
                    let route = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                    let answers = c.clone().route_command(cmd.clone(), route).await?;
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
                Handle::Single(c) => cmd.query_async(&mut c.clone()).await,
                Handle::Cluster(c) => cmd.query_async(&mut c.clone()).await,
            }
        };
        self.limited(call).await
    }

    /// Runs a script by SHA, loading it first where the node does not know it.
    pub(crate) async fn invoke<T: FromRedisValue>(&self, invocation: &ScriptInvocation<'_>) -> Result<T> {
        let call = async {
            match &self.handle {
                Handle::Single(c) => invocation.invoke_async(&mut c.clone()).await,
                Handle::Cluster(c) => invocation.invoke_async(&mut c.clone()).await,
            }
        };
        self.limited(call).await
    }

    /// `WAIT replicas timeout_ms` on the node holding `key`: how many replicas have
    /// every write this connection made to that node.
    pub(crate) async fn wait(&self, key: &str, replicas: u32, timeout_ms: u64) -> Result<u32> {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(timeout_ms);
        let call = async {
            match &self.handle {
                Handle::Single(c) => cmd.query_async(&mut c.clone()).await,
                Handle::Cluster(c) => {
                    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
                        key,
                        SlotAddr::Master,
                    )));
                    let value = c.clone().route_command(cmd.clone(), route).await?;
                    redis::from_redis_value(value).map_err(redis::RedisError::from)
                }
            }
        };
        self.limited(call).await
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

    /// Logs a change of reachability, once.
    fn note<T>(&self, result: &Result<T>) {
        match result {
            Err(Error::Unavailable(why)) => {
                if self.reachable.swap(false, Ordering::SeqCst) {
                    tracing::warn!(error = %why, "Redis is unreachable; calls answer 'unavailable' until it returns");
                }
            }
            _ => {
                if !self.reachable.swap(true, Ordering::SeqCst) {
                    tracing::info!("Redis is reachable again");
                    self.reconnected.notify_one();
                }
            }
        }
    }
}

/// Redis errors as store errors: anything that may pass with time (connection lost,
/// cluster reconfiguring, Redis loading its data) is `Unavailable`; the rest is a bug
/// or misconfiguration, `Internal`.
pub(crate) fn map_err(e: RedisError) -> Error {
    let transient = e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::Io
                | ErrorKind::ClusterConnectionNotFound
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
