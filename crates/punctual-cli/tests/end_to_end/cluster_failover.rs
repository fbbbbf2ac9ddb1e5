//! A Redis Cluster with replicas losing a primary under schedule + lease + ack load.
//! Guards against what production Clusters do to a queue: acknowledged schedules or
//! acks lost in a failover (replication is asynchronous), a server that hangs or needs a
//! restart to follow the new topology, and errors other than 503 while the Cluster
//! promotes a replica.
//!
//! Real processes: private `redis-server` Cluster nodes (3 primaries, each with one or
//! two replicas, `cluster-node-timeout` 2 s), killed with SIGKILL or handed over with
//! `CLUSTER FAILOVER`, and the real `punctual` binary. With `wait_replicas = 1` the
//! primaries get two replicas each: after a failover the promoted primary keeps one, so
//! writes can be confirmed by a replica again (with one, it has none until the dead node
//! comes back, and writes to its slots answer 503 until then; docs/redis.md).

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::time::Duration;

use common::failover::{Failover, under_load};
use punctual_testkit::poll_until;
use punctual_testkit::redis::RedisCluster;

const MASTERS: usize = 3;
const NODE_TIMEOUT: Duration = Duration::from_secs(2);

/// [`under_load`] on `cluster`: `fail` once the load is steady, then wait until the
/// Cluster serves every slot with a promoted primary.
fn on_cluster(mut cluster: RedisCluster, wait_replicas: u32, fail: impl FnOnce(&mut RedisCluster)) -> Failover {
    let url = cluster.url();
    under_load(&url, wait_replicas, || {
        fail(&mut cluster);
        let promoted = cluster.wait_until_served(MASTERS, Duration::from_secs(30));
        assert!(promoted, "the Cluster did not promote a replica within 30 s");
    })
}

/// The primary holding the most keys: the one whose loss hurts most.
fn busiest_primary(cluster: &RedisCluster) -> usize {
    let size = |i: usize| cluster.nodes()[i].command(&["DBSIZE"]).unwrap().parse::<u64>().unwrap();
    cluster.primaries().into_iter().max_by_key(|&i| size(i)).unwrap()
}

/// Kills the busiest primary with SIGKILL.
fn kill_busiest(cluster: &mut RedisCluster) {
    let victim = busiest_primary(cluster);
    cluster.kill(victim);
}

#[test]
fn a_primary_killed_under_load_with_wait_replicas_loses_nothing_acknowledged_and_serving_resumes() {
    let cluster = RedisCluster::start_replicated(MASTERS, 2, NODE_TIMEOUT);
    let run = on_cluster(cluster, 1, kill_busiest);
    run.report("SIGKILL, wait_replicas = 1");
    assert!(run.lost.is_empty(), "acknowledged schedules lost: {} (first {:?})", run.lost.len(), run.lost.first());
    assert!(run.completed_twice.is_empty(), "completions undone by the failover: {:?}", run.completed_twice);
    run.assert_serving_soon_after_the_promotion();
}

#[test]
fn a_primary_killed_under_load_without_wait_loses_at_most_what_it_had_not_replicated() {
    let cluster = RedisCluster::start_replicated(MASTERS, 1, NODE_TIMEOUT);
    let run = on_cluster(cluster, 0, kill_busiest);
    run.report("SIGKILL, no WAIT");
    // Replication is asynchronous: only writes acknowledged in the moment before the
    // kill can have missed the replica. On loopback that is well under a second.
    let bound = run.failed_at - Duration::from_secs(1);
    let older: Vec<_> = run.lost.iter().filter(|(_, at)| *at < bound).collect();
    println!("SIGKILL, no WAIT: lost {}, every one acknowledged in the last second before the kill", run.lost.len());
    assert!(
        older.is_empty(),
        "lost writes acknowledged over 1 s before the kill: {} ({:?})",
        older.len(),
        older.first()
    );
    run.assert_serving_soon_after_the_promotion();
}

#[test]
fn a_manual_failover_under_load_loses_nothing_with_or_without_wait() {
    for wait_replicas in [0, 1] {
        let cluster = RedisCluster::start_replicated(MASTERS, 1, NODE_TIMEOUT);
        let run = on_cluster(cluster, wait_replicas, |cluster| {
            let primary = busiest_primary(cluster);
            let replica = cluster.replica_of(primary).expect("the busiest primary has a replica");
            // Redis aborts a manual failover the replica cannot finish in 5 s (it must
            // catch up with the paused primary first; a loaded machine can miss that):
            // ask again, as an operator would.
            let handed_over = (0..3).find_map(|_| {
                cluster.nodes()[replica].command(&["CLUSTER", "FAILOVER"]).unwrap();
                poll_until(Duration::from_secs(8), || cluster.replica_of(replica))
            });
            assert_eq!(handed_over, Some(primary), "the old primary did not become the new one's replica");
        });
        run.report(&format!("CLUSTER FAILOVER, wait_replicas = {wait_replicas}"));
        assert!(run.lost.is_empty(), "lost with wait_replicas = {wait_replicas}: {:?}", run.lost.first());
        assert!(run.completed_twice.is_empty(), "completions undone: {:?}", run.completed_twice);
    }
}
