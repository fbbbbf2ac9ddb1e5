//! A Redis Cluster of private servers ([`RedisCluster`]): what the Redis store's tests
//! run on (through `punctual-testkit`, which adds failover helpers and a Cluster over
//! TLS built from [`free_port_with_bus`], [`node_args`] and [`create_cluster`]) and
//! what `punctual bench scale` measures on.
//!
//! The Cluster is formed by hand, as `redis-cli --cluster create` forms one, but for
//! any number of primaries (that command refuses fewer than three): each node gets a
//! distinct config epoch, each primary an equal run of the 16384 slots (`CLUSTER
//! ADDSLOTS`, which every Redis with Cluster support knows), every node meets the first,
//! and once each knows all the others every replica follows its primary (`CLUSTER
//! REPLICATE`). So no `redis-cli` is needed, only `redis-server`.
//!
//! Invariants once [`create_cluster`] (and so [`RedisCluster::start`]) has returned:
//! every node knows every other, says `cluster_state:ok` (every slot served by a
//! primary it knows), and every replica's link to its primary is up.

use std::io;
use std::net::TcpListener;
use std::time::Duration;

use crate::{Persistence, RedisServer, START_TIMEOUT, poll_until};

/// The slots of a Redis Cluster, shared out among its primaries.
const SLOTS: usize = 16_384;

/// A Cluster node's default `cluster-node-timeout`: how long a peer may go unanswered
/// before it is counted failed.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(5_000);

/// A Redis Cluster on loopback ports: `primaries` primaries, each with `replicas`
/// replicas. Nodes keep nothing on disk: a killed node is not started again (a replica
/// takes over, where there is one). Every node is killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    /// The primaries first, in the order of their slots, then the replicas.
    nodes: Vec<RedisServer>,
    node_timeout: Duration,
}

impl RedisCluster {
    /// Starts `primaries` primaries (at least one) with `replicas` replicas each, whose
    /// nodes count a peer failed after `node_timeout` unanswered, and forms them into a
    /// Cluster (see [`create_cluster`]).
    ///
    /// A missing `redis-server` is [`io::ErrorKind::NotFound`], as for
    /// [`RedisServer::start`].
    pub fn start(primaries: usize, replicas: usize, node_timeout: Duration) -> io::Result<RedisCluster> {
        if primaries == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a Redis Cluster needs at least one primary"));
        }
        let args = node_args(node_timeout);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let nodes = (0..primaries * (1 + replicas))
            .map(|_| RedisServer::start_on(free_port_with_bus()?, Persistence::None, &args))
            .collect::<io::Result<Vec<RedisServer>>>()?;
        let ports: Vec<u16> = nodes.iter().map(RedisServer::port).collect();
        create_cluster(&nodes, &ports, replicas)?;
        Ok(RedisCluster { nodes, node_timeout })
    }

    /// `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,…`, every node, replicas included.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())).collect();
        format!("redis-cluster://{}", nodes.join(","))
    }

    /// Each node: the primaries first, in the order of their slots, then the replicas
    /// (as started; a failover changes who is primary).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Its `cluster-node-timeout`.
    pub fn node_timeout(&self) -> Duration {
        self.node_timeout
    }

    /// Kills node `i` with SIGKILL, as a crash; it is not started again.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }
}

/// The `redis-server` arguments of every Cluster node, `node_timeout` its
/// `cluster-node-timeout`.
pub fn node_args(node_timeout: Duration) -> Vec<String> {
    let timeout = node_timeout.as_millis().to_string();
    ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", &timeout]
        .map(str::to_owned)
        .to_vec()
}

/// A port free on 127.0.0.1 whose Cluster bus port (+ 10000) is free too.
pub fn free_port_with_bus() -> io::Result<u16> {
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    Err(io::Error::new(io::ErrorKind::AddrInUse, "no free port pair for a Redis Cluster node"))
}

/// Forms `nodes` (started with [`node_args`], knowing no other node yet) into a Cluster:
/// the first `nodes.len() / (1 + replicas)` are primaries sharing the slots in equal
/// runs, in order; replica `j` after them follows primary `j % primaries`. `ports` are
/// the ports the nodes are known by to each other and to clients, in the order of
/// `nodes` (a TLS Cluster's TLS ports: the Cluster bus listens on that port + 10000);
/// each node is told what to do on its own plain port ([`RedisServer::command`]).
///
/// Returns once the invariants of the module docs hold; an error names the step that
/// failed or did not finish within [`START_TIMEOUT`].
pub fn create_cluster(nodes: &[RedisServer], ports: &[u16], replicas: usize) -> io::Result<()> {
    let count = nodes.len();
    if count == 0 || count != ports.len() || !count.is_multiple_of(1 + replicas) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{count} nodes, {} ports: not primaries with {replicas} replicas each", ports.len()),
        ));
    }
    let primaries = count / (1 + replicas);
    let step = |what: String| move |e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    for (i, node) in nodes.iter().enumerate() {
        // Distinct epochs, so no two primaries claim slots with the same one (what
        // `redis-cli --cluster create` does too); only a node that knows no other
        // takes it.
        let epoch = (i + 1).to_string();
        node.command(&["CLUSTER", "SET-CONFIG-EPOCH", &epoch])
            .map_err(step(format!("CLUSTER SET-CONFIG-EPOCH on port {}", node.port())))?;
    }
    for (i, node) in nodes[..primaries].iter().enumerate() {
        let slots: Vec<String> = (i * SLOTS / primaries..(i + 1) * SLOTS / primaries).map(|s| s.to_string()).collect();
        let mut command = vec!["CLUSTER", "ADDSLOTS"];
        command.extend(slots.iter().map(String::as_str));
        node.command(&command).map_err(step(format!("CLUSTER ADDSLOTS on port {}", node.port())))?;
    }
    let first = ports[0].to_string();
    for node in &nodes[1..] {
        node.command(&["CLUSTER", "MEET", "127.0.0.1", &first])
            .map_err(step(format!("CLUSTER MEET from port {}", node.port())))?;
    }
    wait_for(nodes, "every node did not come to know every other", |node| {
        // One line per node it knows, itself included; none still being met.
        let known = node.command(&["CLUSTER", "NODES"]).unwrap_or_default();
        known.lines().count() == count && !known.contains("handshake") && !known.contains("noaddr")
    })?;
    for (j, replica) in nodes[primaries..].iter().enumerate() {
        let id = nodes[j % primaries].command(&["CLUSTER", "MYID"]).map_err(step("CLUSTER MYID".into()))?;
        replica
            .command(&["CLUSTER", "REPLICATE", &id])
            .map_err(step(format!("CLUSTER REPLICATE on port {}", replica.port())))?;
    }
    wait_for(nodes, "the cluster did not reach state ok", |node| {
        node.command(&["CLUSTER", "INFO"]).is_ok_and(|info| info.contains("cluster_state:ok"))
    })?;
    wait_for(&nodes[primaries..], "the replicas did not synchronise with their primaries", |replica| {
        replica.command(&["INFO", "replication"]).is_ok_and(|info| info.contains("master_link_status:up"))
    })
}

/// Waits until `ready` holds for every node; an error saying `what` (and what each node
/// says of the Cluster) after [`START_TIMEOUT`].
fn wait_for(nodes: &[RedisServer], what: &str, ready: impl Fn(&RedisServer) -> bool) -> io::Result<()> {
    if poll_until(START_TIMEOUT, || nodes.iter().all(&ready).then_some(())).is_some() {
        return Ok(());
    }
    let views: Vec<String> = nodes
        .iter()
        .map(|n| format!("port {}: {}", n.port(), n.command(&["CLUSTER", "INFO"]).unwrap_or_else(|e| e.to_string())))
        .collect();
    Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} within {START_TIMEOUT:?}: {}", views.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `redis-cli --cluster create` refuses fewer than three primaries; one formed by
    /// hand serves every slot with one, and shares them with two.
    #[test]
    fn one_and_two_primaries_serve_every_slot() {
        for primaries in [1, 2] {
            let cluster = RedisCluster::start(primaries, 0, NODE_TIMEOUT).expect("start a Cluster");
            for node in cluster.nodes() {
                let info = node.command(&["CLUSTER", "INFO"]).expect("CLUSTER INFO");
                assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
                assert!(info.contains(&format!("cluster_known_nodes:{primaries}")), "{info}");
                assert!(info.contains(&format!("cluster_size:{primaries}")), "{info}");
            }
        }
    }

    #[test]
    fn each_replica_follows_its_primary() {
        let cluster = RedisCluster::start(2, 1, NODE_TIMEOUT).expect("start a Cluster");
        let nodes = cluster.nodes();
        for (replica, primary) in [(2, 0), (3, 1)] {
            let role = nodes[replica].command(&["ROLE"]).expect("ROLE");
            let mut lines = role.lines();
            assert_eq!(lines.next(), Some("slave"), "{role}");
            assert_eq!(lines.nth(1), Some(nodes[primary].port().to_string().as_str()), "{role}");
        }
        for node in nodes {
            let info = node.command(&["CLUSTER", "INFO"]).expect("CLUSTER INFO");
            assert!(info.contains("cluster_known_nodes:4") && info.contains("cluster_size:2"), "{info}");
        }
    }
}
