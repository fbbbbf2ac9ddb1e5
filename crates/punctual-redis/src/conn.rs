//! One connection handle for a single Redis or a Redis Cluster: opening it on a
//! [`Target`], a time limit on every call, and the mapping of Redis errors to the
//! store's.
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
use redis::{Cmd, ConnectionInfo, ErrorKind, FromRedisValue, RedisError, ScriptInvocation, ServerErrorKind, Value};
use tokio::sync::Notify;

use crate::target::{Target, info, redacted};

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
    /// Connects to `target`, failing with `Unavailable` when it does not answer within
    /// `op_timeout`; and the nodes to subscribe through (see `wake`).
    pub(crate) async fn open(target: &Target, op_timeout: Duration) -> Result<(Conn, Vec<ConnectionInfo>)> {
        let connect_timeout = op_timeout.min(Duration::from_secs(5));
        match target {
            Target::Single(url) => {
                let client = redis::Client::open(url.as_str()).map_err(map_err)?;
                let manager_config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(op_timeout))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_secs(1));
                let manager =
                    tokio::time::timeout(op_timeout, ConnectionManager::new_with_config(client, manager_config))
                        .await
                        .map_err(|_| {
                            Error::Unavailable(format!(
                                "Redis at {} did not answer within {op_timeout:?}",
                                redacted(url)
                            ))
                        })?
                        .map_err(map_err)?;
                Ok((Conn::new(Handle::Single(manager), op_timeout), vec![info(url)?]))
            }
            Target::Cluster(urls) => {
                let client = redis::cluster::ClusterClientBuilder::new(urls.clone())
                    .connection_timeout(connect_timeout)
                    .response_timeout(op_timeout)
                    .retries(3)
                    .build()
                    .map_err(map_err)?;
                let connection = tokio::time::timeout(op_timeout, client.get_async_connection())
                    .await
                    .map_err(|_| Error::Unavailable(format!("Redis Cluster did not answer within {op_timeout:?}")))?
                    .map_err(map_err)?;
                let nodes = urls.iter().map(|u| info(u)).collect::<Result<Vec<_>>>()?;
                Ok((Conn::new(Handle::Cluster(connection), op_timeout), nodes))
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
                    // A routed command's refusal comes back as a value: raise it as the
                    // error it is (UNBLOCKED when the node was demoted mid-WAIT).
                    let value = c.clone().route_command(cmd.clone(), route).await?.extract_error()?;
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

    /// Logs a change of reachability, once. Any answer but `Unavailable`, an error
    /// included, means Redis answered.
    fn note<T>(&self, result: &Result<T>) {
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
/// `UNBLOCKED` —, Redis loading its data) is `Unavailable`; the rest is a bug or
/// misconfiguration, `Internal`.
pub(crate) fn map_err(e: RedisError) -> Error {
    let transient = e.is_io_error()
        || e.code() == Some("UNBLOCKED")
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
        let wrong = refusal(b"-ERR unknown command 'WAITT'\r\n");
        assert!(matches!(map_err(wrong), Error::Internal(_)));
    }
}
