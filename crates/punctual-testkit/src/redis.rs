//! Private `redis-server` processes for tests: one server, a Redis Cluster of several
//! (primaries only or with replicas; in plain text, or over TLS: [`TlsRedisCluster`]),
//! or a primary with replicas watched by three Sentinels ([`RedisSentinels`]), each on
//! free loopback ports in its own temporary directory, never the machine's own Redis.
//! Killed (SIGKILL) and reaped on drop, and never outliving the test process (see
//! [`punctual_private_redis`], which owns the launcher and forms the Clusters; the
//! benchmark command uses the same ones). This module adds what tests want on top:
//! panics instead of errors, and a Cluster's failover helpers.
//!
//! A missing `redis-server` fails the test with a message saying what to install; it
//! is never skipped.

#![allow(clippy::disallowed_methods, reason = "waiting for real processes takes real time, not a Clock's")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use punctual_private_redis::cluster::{self, NODE_TIMEOUT, create_cluster, free_port_with_bus, node_args};
pub use punctual_private_redis::{Persistence, RedisServer, START_TIMEOUT, command};

/// A server keeping nothing on disk. Fails the test when it cannot start.
pub fn server() -> RedisServer {
    server_with(Persistence::None, &[])
}

/// A server with the given persistence and extra `redis-server` arguments. Fails the
/// test when it cannot start.
pub fn server_with(persistence: Persistence, extra: &[&str]) -> RedisServer {
    RedisServer::start(persistence, extra).unwrap_or_else(|e| panic!("{}", start_failure(&e)))
}

fn start_failure(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "redis-server is not installed; install it (Debian: apt-get install redis-server) to run these tests".into()
    } else {
        format!("cannot start a private redis-server: {e}")
    }
}

/// A Redis Cluster ([`punctual_private_redis::RedisCluster`]): primaries only
/// ([`RedisCluster::start`]), or each primary with replicas
/// ([`RedisCluster::start_replicated`]), for failover tests. Nodes keep nothing on
/// disk: a killed node is not started again, a replica takes over.
#[derive(Debug)]
pub struct RedisCluster {
    cluster: cluster::RedisCluster,
}

impl RedisCluster {
    /// `masters` primaries, no replicas. Fails the test when it cannot start.
    pub fn start(masters: usize) -> RedisCluster {
        RedisCluster::start_with(masters, 0, NODE_TIMEOUT)
    }

    /// `masters` primaries with `replicas` replicas each, whose nodes count a peer
    /// failed after `node_timeout` unanswered (`cluster-node-timeout`); returns once
    /// every replica has synchronised with its primary. Fails the test when it cannot
    /// start.
    pub fn start_replicated(masters: usize, replicas: usize, node_timeout: Duration) -> RedisCluster {
        assert!(replicas > 0, "a replicated Cluster has at least one replica per primary");
        RedisCluster::start_with(masters, replicas, node_timeout)
    }

    fn start_with(masters: usize, replicas: usize, node_timeout: Duration) -> RedisCluster {
        let cluster = cluster::RedisCluster::start(masters, replicas, node_timeout)
            .unwrap_or_else(|e| panic!("{}", start_failure(&e)));
        RedisCluster { cluster }
    }

    /// `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,…`, every node, replicas included.
    pub fn url(&self) -> String {
        self.cluster.url()
    }

    /// Each node.
    pub fn nodes(&self) -> &[RedisServer] {
        self.cluster.nodes()
    }

    /// Its `cluster-node-timeout`.
    pub fn node_timeout(&self) -> Duration {
        self.cluster.node_timeout()
    }

    /// The index of each running node that is a primary now.
    pub fn primaries(&self) -> Vec<usize> {
        (0..self.nodes().len()).filter(|&i| self.role(i).is_some_and(|role| role.starts_with("master"))).collect()
    }

    /// The index of a running node replicating `primary`, if any.
    pub fn replica_of(&self, primary: usize) -> Option<usize> {
        let port = self.nodes()[primary].port().to_string();
        (0..self.nodes().len()).find(|&i| {
            self.role(i).is_some_and(|role| {
                let mut lines = role.lines();
                lines.next() == Some("slave") && lines.nth(1) == Some(port.as_str())
            })
        })
    }

    /// `ROLE` of node `i` as text, `None` when it was killed or does not answer.
    fn role(&self, i: usize) -> Option<String> {
        let node = &self.nodes()[i];
        node.pid()?;
        node.command(&["ROLE"]).ok()
    }

    /// Kills node `i` with SIGKILL, as a crash; it is not started again.
    pub fn kill(&mut self, i: usize) {
        self.cluster.kill(i);
    }

    /// Waits until every running node says `cluster_state:ok` with `masters` primaries
    /// running (a killed primary's replica promoted); false when `timeout` passes first.
    pub fn wait_until_served(&self, masters: usize, timeout: Duration) -> bool {
        crate::poll_until(timeout, || {
            let running = self.nodes().iter().filter(|n| n.pid().is_some());
            let ok = running
                .map(|n| n.command(&["CLUSTER", "INFO"]).unwrap_or_default())
                .all(|info| info.contains("cluster_state:ok"));
            (ok && self.primaries().len() == masters).then_some(())
        })
        .is_some()
    }
}

/// The name the Sentinels of [`RedisSentinels`] know the primary by.
pub const SENTINEL_PRIMARY: &str = "punctual";

/// How many Sentinels watch a [`RedisSentinels`] primary, and how many of them must
/// agree it is down (the quorum) before one of them fails it over.
const SENTINELS: usize = 3;
const QUORUM: usize = 2;

/// The Sentinels' `failover-timeout`. Besides bounding each step of a failover (the
/// election, the promotion, moving the other replicas), it spaces attempts: after one
/// fails (split votes, no replica fit to promote) no Sentinel tries again for twice
/// this. Three seconds leaves a 30 s wait room for several attempts, and is ample on
/// loopback, where a promotion takes milliseconds.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(3);

/// One primary with replicas, watched by three Sentinels (quorum 2) that promote a
/// replica when the primary stops answering: a Sentinel deployment of Redis, for
/// failover tests. Nodes keep nothing on disk: a killed node is not started again, a
/// replica takes over.
///
/// Invariants once [`RedisSentinels::start`] has returned: `nodes()[0]` is the primary
/// and every other node a replica of it with its link up, and every Sentinel knows
/// that primary as [`SENTINEL_PRIMARY`], its replicas and the two other Sentinels, so
/// a failover can begin as soon as the primary is counted down.
#[derive(Debug)]
pub struct RedisSentinels {
    nodes: Vec<RedisServer>,
    sentinels: Vec<RedisServer>,
    down_after: Duration,
    /// The port each node is known by to the Sentinels and to clients (its TLS port
    /// over TLS), in the order of `nodes`.
    node_ports: Vec<u16>,
    /// The port clients reach each Sentinel on (its TLS port over TLS).
    sentinel_ports: Vec<u16>,
    tls: bool,
}

impl RedisSentinels {
    /// One primary (`nodes()[0]`) with `replicas` replicas, watched by three Sentinels
    /// (quorum 2) that count it down after `down_after` unanswered
    /// (`down-after-milliseconds`); returns once every replica's link to the primary is
    /// up and every Sentinel sees the replicas and the two other Sentinels. Fails the
    /// test when a step fails or takes longer than [`START_TIMEOUT`].
    pub fn start(replicas: usize, down_after: Duration) -> RedisSentinels {
        RedisSentinels::start_with(replicas, down_after, None, &[])
    }

    /// As [`RedisSentinels::start`], each data node started with `node_args` as well
    /// (such as an ACL user: `--user app on >secret ~* &* +@all`, each word an argument; the default user
    /// stays open, for the Sentinels and the test's own look).
    pub fn start_with_node_args(replicas: usize, down_after: Duration, node_args: &[&str]) -> RedisSentinels {
        RedisSentinels::start_with(replicas, down_after, None, node_args)
    }

    /// As [`RedisSentinels::start`], with every client connection, replication link and
    /// Sentinel link over TLS (`tls-replication yes`: the nodes and Sentinels tell each
    /// other, and clients, their TLS ports); each process keeps a plain port on
    /// 127.0.0.1 for the test's own look ([`RedisServer::command`]).
    pub fn start_tls(replicas: usize, down_after: Duration, files: &TlsFiles) -> RedisSentinels {
        RedisSentinels::start_with(replicas, down_after, Some(files), &[])
    }

    fn start_with(replicas: usize, down_after: Duration, tls: Option<&TlsFiles>, node_args: &[&str]) -> RedisSentinels {
        // A free port for a process's TLS side, and the arguments that serve TLS on it.
        let tls_side = |files: &TlsFiles| {
            let port = free_port_apart_from(0);
            (port, files.server_args(port))
        };
        // A primary waits 5 s (`repl-diskless-sync-delay`) for more replicas before a
        // full synchronisation; none comes later than the first here. Every node gets
        // it, since any may be promoted.
        let node = |replica_of: Option<u16>| {
            let (announced, mut args) = match tls {
                Some(files) => tls_side(files),
                None => (0, Vec::new()),
            };
            args.extend(["--repl-diskless-sync-delay".to_owned(), "0".to_owned()]);
            args.extend(node_args.iter().map(|a| a.to_string()));
            if let Some(port) = replica_of {
                args.extend(["--replicaof".to_owned(), "127.0.0.1".to_owned(), port.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let server = server_with(Persistence::None, &args);
            let announced = if tls.is_some() { announced } else { server.port() };
            (server, announced)
        };
        let (primary, primary_port) = node(None);
        let (mut nodes, mut node_ports) = (vec![primary], vec![primary_port]);
        for _ in 0..replicas {
            let (replica, port) = node(Some(primary_port));
            nodes.push(replica);
            node_ports.push(port);
        }
        // Synchronised before any Sentinel starts: a Sentinel learns the replicas from
        // the primary's `INFO`, which it asks at once and then only every 10 s.
        let synced = crate::poll_until(START_TIMEOUT, || {
            nodes[1..]
                .iter()
                .all(|n| n.command(&["INFO", "replication"]).is_ok_and(|info| info.contains("master_link_status:up")))
                .then_some(())
        });
        assert!(synced.is_some(), "the replicas did not synchronise with the primary");

        let name = SENTINEL_PRIMARY;
        let monitor = [
            format!("sentinel monitor {name} 127.0.0.1 {primary_port} {QUORUM}"),
            format!("sentinel down-after-milliseconds {name} {}", down_after.as_millis()),
            format!("sentinel failover-timeout {name} {}", FAILOVER_TIMEOUT.as_millis()),
            format!("sentinel parallel-syncs {name} 1"),
        ];
        let (mut sentinels, mut sentinel_ports) = (Vec::new(), Vec::new());
        for _ in 0..SENTINELS {
            // In a configuration file, each `--name value` argument is a `name value` line.
            let (tls_port, tls_lines) = match tls {
                Some(files) => {
                    let (port, args) = tls_side(files);
                    let lines = args.chunks(2).map(|pair| format!("{} {}", pair[0].trim_start_matches("--"), pair[1]));
                    (Some(port), lines.collect())
                }
                None => (None, Vec::new()),
            };
            let config = tls_lines.iter().chain(&monitor).cloned().collect::<Vec<_>>().join("\n");
            let sentinel = RedisServer::start_sentinel(&config).unwrap_or_else(|e| panic!("{}", start_failure(&e)));
            sentinel_ports.push(tls_port.unwrap_or(sentinel.port()));
            sentinels.push(sentinel);
        }
        let redis = RedisSentinels { nodes, sentinels, down_after, node_ports, sentinel_ports, tls: tls.is_some() };

        // Sentinels find each other through the hello messages each publishes on the
        // primary and the replicas every 2 s.
        let (others, replicas) = ((SENTINELS - 1).to_string(), replicas.to_string());
        let master = |s: &RedisServer| s.command(&["SENTINEL", "MASTER", name]);
        let ready = crate::poll_until(START_TIMEOUT, || {
            let sees_all = |reply: String| {
                field(&reply, "num-other-sentinels") == Some(&others) && field(&reply, "num-slaves") == Some(&replicas)
            };
            redis.sentinels.iter().all(|s| master(s).is_ok_and(sees_all)).then_some(())
        });
        let seen: Vec<String> = redis.sentinels.iter().map(|s| master(s).unwrap_or_else(|e| e.to_string())).collect();
        assert!(
            ready.is_some(),
            "the Sentinels did not all see {replicas} replicas and {others} other Sentinels: {seen:?}"
        );
        redis
    }

    /// `redis-sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/punctual`: the
    /// Sentinels, and the name they know the primary by; `rediss-sentinel://` and the
    /// Sentinels' TLS ports when started over TLS.
    pub fn url(&self) -> String {
        let sentinels: Vec<String> = self.sentinel_ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let scheme = if self.tls { "rediss-sentinel" } else { "redis-sentinel" };
        format!("{scheme}://{}/{SENTINEL_PRIMARY}", sentinels.join(","))
    }

    /// Each data node: the primary it started with first, then the replicas.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The port each node is known by to the Sentinels and to clients (its TLS port
    /// when started over TLS), in the order of [`RedisSentinels::nodes`].
    pub fn node_ports(&self) -> &[u16] {
        &self.node_ports
    }

    /// The three Sentinels.
    pub fn sentinels(&self) -> &[RedisServer] {
        &self.sentinels
    }

    /// The Sentinels' `down-after-milliseconds`.
    pub fn down_after(&self) -> Duration {
        self.down_after
    }

    /// The index of the node that the first Sentinel to answer names as the primary
    /// now (`SENTINEL GET-MASTER-ADDR-BY-NAME`); `None` when no Sentinel answers or the
    /// one that does names none of these nodes.
    pub fn primary(&self) -> Option<usize> {
        self.named_primaries().into_iter().next().flatten()
    }

    /// Kills node `i` with SIGKILL, as a crash; it is not started again.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Waits until a running node other than `old` is the primary both for the
    /// Sentinels, every one that answers naming it (so a client is told the same
    /// whichever it asks), and for itself (`ROLE` says `master`); answers how long that
    /// took, or `None` when `timeout` passes first.
    ///
    /// It does not wait for the other replicas to follow the new primary.
    pub fn wait_until_promoted(&self, old: usize, timeout: Duration) -> Option<Duration> {
        let started = Instant::now();
        crate::poll_until(timeout, || {
            let named = self.named_primaries();
            let new = (*named.first()?)?;
            let agreed = named.iter().all(|&n| n == Some(new));
            let node = &self.nodes[new];
            let master = || node.command(&["ROLE"]).is_ok_and(|role| role.lines().next() == Some("master"));
            (new != old && agreed && node.pid().is_some() && master()).then_some(())
        })?;
        Some(started.elapsed())
    }

    /// For each Sentinel that answers, in order, the index of the node it names as the
    /// primary; `None` for one that names none of these nodes or does not know the name.
    fn named_primaries(&self) -> Vec<Option<usize>> {
        self.sentinels
            .iter()
            .filter_map(|s| s.command(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_PRIMARY]).ok())
            .map(|address| {
                // Two lines, the IP and the port; empty for an unknown name.
                let port: u16 = address.lines().nth(1)?.parse().ok()?;
                self.node_ports.iter().position(|&p| p == port)
            })
            .collect()
    }
}

/// The value after `key` in a flat key/value reply rendered one item per line, as
/// [`command`] renders `SENTINEL MASTER`.
fn field<'a>(reply: &'a str, key: &str) -> Option<&'a str> {
    let mut items = reply.lines();
    while let Some(item) = items.next() {
        let value = items.next()?;
        if item == key {
            return Some(value);
        }
    }
    None
}

/// The PEM files a TLS Redis serves with, made by the test (`openssl`): the server's
/// certificate for 127.0.0.1 and its key, and the authority that signed it, which the
/// nodes also trust for the Cluster bus and between replicas and primaries.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

impl TlsFiles {
    /// `server.pem`, `server.key` and `ca.pem` of `dir`.
    pub fn in_dir(dir: &Path) -> TlsFiles {
        TlsFiles { cert: dir.join("server.pem"), key: dir.join("server.key"), ca: dir.join("ca.pem") }
    }

    /// The `redis-server` arguments that serve TLS with these files on `tls_port`,
    /// clients not asked for certificates; a Cluster's bus and replication over TLS too.
    pub fn server_args(&self, tls_port: u16) -> Vec<String> {
        let path = |p: &PathBuf| p.display().to_string();
        let mut args = vec!["--tls-port".to_owned(), tls_port.to_string()];
        for (name, value) in [
            ("--tls-cert-file", path(&self.cert)),
            ("--tls-key-file", path(&self.key)),
            ("--tls-ca-cert-file", path(&self.ca)),
            ("--tls-auth-clients", "no".into()),
            ("--tls-cluster", "yes".into()),
            ("--tls-replication", "yes".into()),
        ] {
            args.extend([name.to_owned(), value]);
        }
        args
    }
}

/// A Redis Cluster of `masters` nodes with no replicas whose clients, Cluster bus and
/// replication all speak TLS (`--tls-cluster yes`, `--tls-replication yes`; client
/// certificates not required).
///
/// Invariant: a TLS client asking where the slots are (`CLUSTER SLOTS`, `CLUSTER
/// SHARDS`) is told the TLS ports, so a client given [`TlsRedisCluster::url`] never
/// reaches a plain port. Each node also keeps a plain port on 127.0.0.1, for the
/// launcher's PING and the test's own look ([`RedisServer::command`]); a plain client
/// is told the plain ports.
#[derive(Debug)]
pub struct TlsRedisCluster {
    nodes: Vec<RedisServer>,
    tls_ports: Vec<u16>,
}

impl TlsRedisCluster {
    /// Starts the nodes and forms them into a Cluster known by their TLS ports (see
    /// [`create_cluster`]); fails the test when any step fails.
    pub fn start(masters: usize, files: &TlsFiles) -> TlsRedisCluster {
        let (mut nodes, mut tls_ports) = (Vec::with_capacity(masters), Vec::with_capacity(masters));
        for _ in 0..masters {
            // With `tls-cluster yes` the bus listens on the TLS port + 10000.
            let tls_port = free_port_with_bus().unwrap_or_else(|e| panic!("{e}"));
            let plain_port = free_port_apart_from(tls_port);
            let extra: Vec<String> = node_args(NODE_TIMEOUT).into_iter().chain(files.server_args(tls_port)).collect();
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            let node = RedisServer::start_on(plain_port, Persistence::None, &extra)
                .unwrap_or_else(|e| panic!("{}", start_failure(&e)));
            nodes.push(node);
            tls_ports.push(tls_port);
        }
        create_cluster(&nodes, &tls_ports, 0).unwrap_or_else(|e| panic!("cannot form a TLS Redis Cluster: {e}"));
        TlsRedisCluster { nodes, tls_ports }
    }

    /// `rediss-cluster://127.0.0.1:t1,127.0.0.1:t2,…`, the nodes' TLS ports.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.tls_ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        format!("rediss-cluster://{}", nodes.join(","))
    }

    /// Each node; [`RedisServer::port`] and [`RedisServer::command`] are its plain port.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Each node's TLS port, in the order of [`TlsRedisCluster::nodes`].
    pub fn tls_ports(&self) -> &[u16] {
        &self.tls_ports
    }
}

/// A port free on 127.0.0.1 other than `taken` and its bus port.
fn free_port_apart_from(taken: u16) -> u16 {
    for _ in 0..100 {
        let port =
            TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("local address").port();
        if port != taken && port != taken + 10_000 {
            return port;
        }
    }
    panic!("no free port for a Redis Cluster node's plain port");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_reads_a_flat_key_value_reply() {
        let reply = "name\npunctual\nnum-slaves\n2\nnum-other-sentinels\n2";
        assert_eq!(field(reply, "num-slaves"), Some("2"));
        assert_eq!(field(reply, "punctual"), None, "a value is not a key");
        assert_eq!(field(reply, "quorum"), None);
    }

    /// What the Sentinel failover tests stand on: if the Sentinels never promoted a
    /// replica, or `wait_until_promoted` could not tell, those tests would fail for a
    /// reason that is not the store's.
    #[test]
    fn sentinels_promote_a_replica_when_the_primary_is_killed() {
        let started = Instant::now();
        let mut redis = RedisSentinels::start(2, Duration::from_secs(1));
        println!("a primary, 2 replicas and 3 Sentinels ready in {:?}", started.elapsed());
        assert_eq!(redis.primary(), Some(0), "the Sentinels name the first node the primary");
        redis.kill(0);
        let took = redis.wait_until_promoted(0, Duration::from_secs(30));
        let logs: Vec<String> = redis
            .sentinels()
            .iter()
            .map(|s| std::fs::read_to_string(s.dir().join("redis.log")).unwrap_or_default())
            .collect();
        let took = took.unwrap_or_else(|| panic!("no replica promoted within 30 s; the Sentinels' logs: {logs:#?}"));
        let now = redis.primary();
        assert!(matches!(now, Some(1 | 2)), "a replica is the primary now, not {now:?}");
        println!("node {} promoted {took:?} after the primary was killed", now.unwrap_or_default());
    }
}
