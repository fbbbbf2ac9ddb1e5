//! `rediss://`, `rediss-cluster://` and `rediss-sentinel://`: the server reaches a
//! Redis, a Redis Cluster, or the Sentinels and the primary they name, over TLS,
//! trusting the certificate authorities of the system or of `SSL_CERT_FILE`.
//! Guards against docs/redis.md offering `rediss://` while the binary answered "the
//! feature is not enabled", against a Cluster client (or the wake-up follower) falling
//! back to plain ports, and against a certificate no authority vouches for being
//! accepted, or hanging the start-up.
//!
//! The tests make their own authority and server certificate with `openssl` and start
//! private `redis-server`s with TLS on one port (and plain on another, for the test's
//! own look at what was stored and who is connected).

#![allow(clippy::disallowed_methods, reason = "timing a real process's start-up takes real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use common::certs::{authority, certificate};
use common::*;
use punctual_testkit::redis::{self, Persistence, RedisSentinels, RedisServer, TlsFiles, TlsRedisCluster};
use serde_json::json;

/// A private redis-server answering TLS on the returned port.
fn tls_redis(dir: &Path) -> (RedisServer, u16) {
    let tls_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let args = TlsFiles::in_dir(dir).server_args(tls_port);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (redis::server_with(Persistence::None, &args), tls_port)
}

/// A directory with the authority `ca`, the server certificate it signed (`server`,
/// for 127.0.0.1) and another authority, `other`, that signed nothing the servers use.
fn certificates() -> tempfile::TempDir {
    let certs = tempfile::tempdir().unwrap();
    authority(certs.path(), "ca");
    authority(certs.path(), "other");
    certificate(certs.path(), "server");
    certs
}

#[test]
fn rediss_schedules_and_fires_over_tls_and_refuses_an_unknown_authority() {
    let certs = certificates();
    let (redis, tls_port) = tls_redis(certs.path());
    let store = format!("rediss://127.0.0.1:{tls_port}");

    let server = start(server_builder().store(&store).env("SSL_CERT_FILE", certs.path().join("ca.pem")));
    let api = Api::of(&server);
    api.put("/v1/queues/tls.q/tasks/k", json!({"payload": {"over": "tls"}})).expect(201, "schedule over TLS");
    let leased = api.post("/v1/queues/tls.q/lease", json!({"wait": "5s"}));
    let leases = leased.expect(200, "lease over TLS")["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(leases[0]["task"]["payload"], json!({"over": "tls"}));
    // The same Redis, read on its plain port: the task went there.
    let keys = redis.command(&["DBSIZE"]).unwrap();
    assert_ne!(keys.trim(), "0", "the TLS port's Redis holds punctual's keys");
    drop(server);

    // A certificate signed by an authority the server does not trust: no start.
    refused_for_an_unknown_authority(&store, certs.path());
}

/// Starts a server on `store` trusting only the authority `other` of `certs`, which
/// signed none of Redis' certificates: it must not start, and must say why and what to
/// do. Answers how long the refusal took.
fn refused_for_an_unknown_authority(store: &str, certs: &Path) -> Duration {
    let started = Instant::now();
    let refused = server_builder().store(store).env("SSL_CERT_FILE", certs.join("other.pem")).start();
    let error = refused.expect_err("a server must not start on a Redis whose certificate it cannot verify");
    let text = error.to_string();
    assert!(text.contains("not signed by an authority this machine trusts"), "the error says why: {error}");
    assert!(text.contains("SSL_CERT_FILE"), "the error says what to do: {error}");
    started.elapsed()
}

/// The local port of each client connected to `node` (`laddr` of `CLIENT LIST`), but
/// for this inspection's own connection; `subscriber` marks the clients subscribed to a
/// channel (the wake-up follower).
fn client_ports(node: &RedisServer) -> Vec<(u16, bool)> {
    let list = node.command(&["CLIENT", "LIST"]).unwrap();
    let field = |line: &str, name: &str| {
        line.split(' ').find_map(|f| f.strip_prefix(name)).map(str::to_owned).unwrap_or_default()
    };
    list.lines()
        .filter(|line| !line.contains("cmd=client|list"))
        .map(|line| {
            let port = field(line, "laddr=").rsplit(':').next().unwrap().parse().unwrap();
            (port, field(line, "sub=") != "0")
        })
        .collect()
}

#[test]
fn rediss_cluster_fires_over_tls_on_every_node_and_refuses_an_unknown_authority() {
    let certs = certificates();
    let files = TlsFiles::in_dir(certs.path());
    let cluster = TlsRedisCluster::start(3, &files);
    let store = cluster.url();
    assert!(store.starts_with("rediss-cluster://"), "{store}");

    let started = Instant::now();
    let server = start(server_builder().store(&store).env("SSL_CERT_FILE", &files.ca));
    println!("rediss-cluster: server ready in {} ms", started.elapsed().as_millis());
    let api = Api::of(&server);
    // Queues spread over the nodes' slots, each task due a moment later: the timer fires it.
    let queues = ["tls.a", "tls.b", "tls.c", "tls.d", "tls.e", "tls.f"];
    for queue in queues {
        let body = json!({"delay": "200ms", "payload": {"over": "tls", "queue": queue}});
        api.put(&format!("/v1/queues/{queue}/tasks/k"), body).expect(201, "schedule over TLS");
    }
    for queue in queues {
        let leased = api.post(&format!("/v1/queues/{queue}/lease"), json!({"wait": "10s"}));
        let leases = leased.expect(200, "lease over TLS")["leases"].as_array().unwrap().clone();
        assert_eq!(leases.len(), 1, "{queue}: {leases:?}");
        assert_eq!(leases[0]["task"]["payload"], json!({"over": "tls", "queue": queue}));
        let acks = json!({"acks": [{"lease_id": leases[0]["lease_id"], "outcome": "done"}]});
        let acked = api.post("/v1/acks", acks);
        assert_eq!(acked.expect(200, "ack over TLS")["results"][0]["status"], 204, "{}", acked.text);
        api.get(&format!("/v1/queues/{queue}/tasks/k")).expect_error(404, "not_found", None, "done is deleted");
    }

    // Read on the plain ports: the tasks' keys went to more than one node, and every
    // connection the server made (its Cluster client and its wake-up follower) is on a
    // TLS port: the Cluster told it the TLS ports of its nodes.
    let holding = cluster.nodes().iter().filter(|n| n.command(&["DBSIZE"]).unwrap().trim() != "0").count();
    assert!(holding >= 2, "the queues' keys spread over the nodes ({holding} hold keys)");
    let subscribed_over_tls = punctual_testkit::poll_until(Duration::from_secs(20), || {
        let mut subscriber = false;
        for (node, tls_port) in cluster.nodes().iter().zip(cluster.tls_ports()) {
            for (port, subscribed) in client_ports(node) {
                assert_eq!(port, *tls_port, "every client of the node on {} uses TLS", node.port());
                subscriber |= subscribed;
            }
        }
        subscriber.then_some(())
    });
    assert!(subscribed_over_tls.is_some(), "the wake-up follower is subscribed, over TLS");
    drop(server);

    // A certificate signed by an authority the server does not trust: no start, at once.
    let refused_in = refused_for_an_unknown_authority(&store, certs.path());
    println!("rediss-cluster: unknown authority refused in {} ms", refused_in.as_millis());
    assert!(refused_in < Duration::from_secs(20), "refused, not hung: {refused_in:?}");
}

/// Schedules a task due now into `queue` and leases and acks it: the store answers.
fn fires(api: &Api, queue: &str) {
    api.put(&format!("/v1/queues/{queue}/tasks/k"), json!({"payload": {"over": "tls"}})).expect(201, "schedule");
    let leased = api.post(&format!("/v1/queues/{queue}/lease"), json!({"wait": "10s"}));
    let leases = leased.expect(200, "lease")["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 1, "{queue}: {leases:?}");
    let acks = json!({"acks": [{"lease_id": leases[0]["lease_id"], "outcome": "done"}]});
    assert_eq!(api.post("/v1/acks", acks).expect(200, "ack")["results"][0]["status"], 204);
}

#[test]
fn rediss_sentinel_follows_a_failover_over_tls_and_refuses_an_unknown_authority() {
    let certs = certificates();
    let files = TlsFiles::in_dir(certs.path());
    let mut redis = RedisSentinels::start_tls(2, Duration::from_secs(1), &files);
    let store = redis.url();
    assert!(store.starts_with("rediss-sentinel://"), "{store}");

    let server = start(server_builder().store(&store).env("SSL_CERT_FILE", &files.ca));
    let api = Api::of(&server);
    fires(&api, "tls.before");
    // Every client of the primary, punctual's included, came in on its TLS port.
    let primary = redis.primary().expect("the Sentinels name a primary");
    let clients = client_ports(&redis.nodes()[primary]);
    assert!(clients.len() >= 2, "punctual and the Sentinels are connected: {clients:?}");
    assert!(clients.iter().all(|(port, _)| *port == redis.node_ports()[primary]), "all over TLS: {clients:?}");

    // The primary dies: the server asks the Sentinels, over TLS, for the new one.
    redis.kill(primary);
    let promoted = redis.wait_until_promoted(primary, Duration::from_secs(30));
    assert!(promoted.is_some(), "Sentinel did not promote a replica within 30 s");
    let served = punctual_testkit::poll_until(Duration::from_secs(20), || {
        let resp = api.put("/v1/queues/tls.probe/tasks/k", json!({"delay": "1h"}));
        (resp.status == 201).then_some(())
    });
    assert!(served.is_some(), "the server did not reach the promoted primary:\n{}", server.logs());
    fires(&api, "tls.after");
    let now = redis.primary().unwrap();
    assert!(client_ports(&redis.nodes()[now]).iter().all(|(port, _)| *port == redis.node_ports()[now]));
    drop(server);

    refused_for_an_unknown_authority(&store, certs.path());
}
