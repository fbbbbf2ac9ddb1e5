//! `scale`: how the sustained schedule + fire + ack rate grows with the primaries of a
//! Redis Cluster (issue P's scale-out benchmark).
//!
//! For each K of `--primaries`, one after the other: a private Redis Cluster of K
//! primaries without replicas ([`punctual_private_redis::RedisCluster`]); `--servers`
//! (default K) punctual servers on it ([`Served`]), each under its own
//! key prefix with its own queue split into `--shards` shards (default
//! [`DEFAULT_SHARDS`]); and on every server at once `throughput`'s sustained load
//! ([`SustainedLoad`]: producers scheduling due-now tasks, `--loops` pull loops firing
//! and acknowledging them). After [`WARM_UP`], a window of `--duration` is measured:
//! tries acknowledged per second, per server and in total; each node's CPU (`INFO
//! cpu`, system + user, over the window, in % of one core) and its keys (`DBSIZE`, at
//! the end of the window), and the nodes' CPU per task acknowledged. Then every load
//! drains, and every task scheduled must have fired once: lost and duplicated are
//! counted as `throughput` counts them. The servers are stopped before their Cluster,
//! and both before the next K.
//!
//! Efficiency at K = total at K ÷ (K × total at 1 primary in the same run): 1 when
//! each primary adds what one carries alone. Only when 1 is in `--primaries`.
//!
//! Each server has its own queue (`bench.scale.<n>`), not only its own prefix: a
//! shard's hash tag is its queue's name and shard number without the prefix
//! (`punctual-redis`'s `keys.rs`), so servers sharing a queue name would share its
//! `--shards` slots, and the K nodes would split only those between them.
//!
//! The nodes, the servers and this process's load all run on this machine and share
//! its cores; the report says how many there are. Where they are too few, the rate
//! stops growing with K for want of cores, not of Redis; the CPU per task then still
//! shows whether more primaries cost Redis more work per task.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures_util::future::try_join_all;
use punctual_private_redis::RedisCluster;
use punctual_private_redis::cluster::NODE_TIMEOUT;
use serde::Serialize;

use crate::args::{BenchArgs, BenchStore};
use crate::driver::{ConsumerSettings, HttpDriver, PullLoops};
use crate::redis_cpu::RedisCpu;
use crate::report::{Progress, rate, table, thousands};
use crate::serve::{ServeStore, Served, toml_string};
use crate::stats::per_second;
use crate::throughput::{Counts, PRODUCERS, SustainedLoad};

/// Shards of each server's queue unless `--shards` says otherwise: enough hash tags to
/// spread one queue over every primary of the Clusters measured by default.
const DEFAULT_SHARDS: u32 = 16;
/// The Cluster sizes measured unless `--primaries` says otherwise.
const DEFAULT_PRIMARIES: [u32; 4] = [1, 2, 4, 8];
/// Load before the measured window: connections opened, shard heads learnt.
const WARM_UP: Duration = Duration::from_secs(2);

#[derive(Debug, Serialize)]
pub(crate) struct ScaleReport {
    pub(crate) workload: &'static str,
    /// This machine's cores, shared by the nodes, the servers and the load.
    pub(crate) cores: usize,
    pub(crate) shards: u32,
    pub(crate) producers_per_server: usize,
    /// Each server's consumer.
    pub(crate) consumer: ConsumerSettings,
    pub(crate) warm_up_ms: u64,
    pub(crate) duration_ms: u64,
    /// One per K of `--primaries`, in its order.
    pub(crate) clusters: Vec<ClusterRun>,
    pub(crate) notes: Vec<String>,
}

/// The figures of one Cluster size.
#[derive(Debug, Serialize)]
pub(crate) struct ClusterRun {
    pub(crate) primaries: u32,
    /// Tries acknowledged done per second over the window, every server together.
    pub(crate) completed_per_second: f64,
    pub(crate) scheduled_per_second: f64,
    /// `completed_per_second` ÷ (primaries × that of 1 primary); none without a run of 1.
    pub(crate) efficiency: Option<f64>,
    /// Every node's CPU time over the window ÷ the tries acknowledged in it, in µs:
    /// what scheduling, leasing and acknowledging one task costs Redis. The same at
    /// every K when spreading over more primaries adds no work per task, whatever
    /// limits the rate on this machine.
    pub(crate) redis_cpu_us_per_task: f64,
    pub(crate) lost: u64,
    pub(crate) duplicates: u64,
    pub(crate) servers: Vec<ServerRun>,
    pub(crate) nodes: Vec<NodeRun>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerRun {
    pub(crate) prefix: String,
    pub(crate) queue: String,
    pub(crate) completed_per_second: f64,
    pub(crate) scheduled_per_second: f64,
    /// Over the whole load, warm-up included.
    pub(crate) scheduled: u64,
    pub(crate) fired: usize,
    pub(crate) lost: u64,
    pub(crate) duplicates: u64,
    pub(crate) left_in_store: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct NodeRun {
    pub(crate) port: u16,
    /// CPU time over the window ÷ its length, in % of one core.
    pub(crate) cpu_percent: f64,
    /// `DBSIZE` at the end of the window.
    pub(crate) keys: u64,
}

/// Runs `scale` and emits its report: a table, or with `--json` a one-element array.
pub(crate) async fn run(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.server.is_some() {
        bail!("scale starts its own servers on the Redis Clusters it starts; run it without --server");
    }
    if args.store != BenchStore::Embedded {
        bail!("scale runs on the Redis Clusters it starts; run it without --store");
    }
    if args.data.is_some() {
        bail!("scale keeps nothing after the run; run it without --data");
    }
    if !crate::redis_server_installed() {
        bail!(
            "scale starts private Redis Clusters, and redis-server is not on PATH: install it \
             (Debian: apt-get install redis-server)"
        );
    }
    let shards = args.shards.unwrap_or(DEFAULT_SHARDS);
    let pull = PullLoops { loops: args.loops, lease_max: args.lease_max, long_poll: args.long_poll, acks: args.acks };
    let progress = Progress::new(args.quiet);
    let mut report = ScaleReport {
        workload: "scale",
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        shards,
        producers_per_server: PRODUCERS,
        consumer: pull.settings(),
        warm_up_ms: WARM_UP.as_millis() as u64,
        duration_ms: args.duration.as_millis() as u64,
        clusters: Vec::new(),
        notes: Vec::new(),
    };
    for primaries in args.primaries.clone().unwrap_or(DEFAULT_PRIMARIES.to_vec()) {
        let servers = args.servers.unwrap_or(primaries);
        let size = Size { primaries, servers, shards, pull, duration: args.duration };
        let run = measure(size, &progress, &mut report.notes).await?;
        report.clusters.push(run);
    }
    report.set_efficiency();
    if args.json { emit(&serde_json::to_string_pretty(&[&report])?) } else { emit(&report.table()) }
}

/// What one Cluster size runs.
#[derive(Debug, Clone, Copy)]
struct Size {
    primaries: u32,
    servers: u32,
    shards: u32,
    pull: PullLoops,
    duration: Duration,
}

/// One server started for a run and the load on it.
struct Loaded {
    /// Dropped before `served`: its pull loops end before their server.
    load: SustainedLoad<HttpDriver>,
    prefix: String,
    queue: String,
    served: Served,
}

/// A reading at one edge of the measured window.
struct Reading {
    at: Instant,
    /// Per server, in order.
    counts: Vec<Counts>,
    /// CPU seconds per node, in order.
    cpu: Vec<f64>,
}

/// Starts a Cluster of `size.primaries` and its servers, loads them, measures the
/// window, drains, and stops them all.
async fn measure(size: Size, progress: &Progress, notes: &mut Vec<String>) -> Result<ClusterRun> {
    let Size { primaries, servers, shards, pull, duration } = size;
    let label = format!("{primaries} {}", if primaries == 1 { "primary" } else { "primaries" });
    let bar = progress.counter(&format!("{label}: starting"));
    let cluster = tokio::task::spawn_blocking(move || RedisCluster::start(primaries as usize, 0, NODE_TIMEOUT))
        .await
        .context("starting the Redis Cluster panicked")?
        .with_context(|| format!("cannot start a Redis Cluster of {primaries} primaries"))?;
    let url = cluster.url();
    let node_cpu: Vec<RedisCpu> =
        cluster.nodes().iter().map(|node| RedisCpu::new(&format!("redis://127.0.0.1:{}", node.port()))).collect();

    let run_prefix = crate::run_prefix();
    let mut loaded = Vec::new();
    for n in 0..servers {
        let (prefix, queue) = (format!("{run_prefix}-{n}"), format!("bench.scale.{n}"));
        let config = format!("[queues.{}]\nshards = {shards}\n", toml_string(&queue));
        let served = Served::start(ServeStore::Redis { url: &url, prefix: &prefix }, None, Some(&config))
            .await
            .with_context(|| format!("cannot start server {} of {servers} on {url}", n + 1))?;
        let driver = HttpDriver::new(served.url(), None, pull)?;
        let load = SustainedLoad::start(&driver, &queue, bar.clone())?;
        loaded.push(Loaded { load, prefix, queue, served });
    }
    // Timed on purpose: the load runs a warm-up, then the measurement window, whatever
    // it does meanwhile; the counts are read at either end of the window.
    bar.set_message(format!("{label}: warm-up"));
    tokio::time::sleep(WARM_UP).await;
    bar.set_message(format!("{label}: measuring"));
    let before = read(&loaded, &node_cpu).await?;
    tokio::time::sleep(duration).await;
    let after = read(&loaded, &node_cpu).await?;
    let mut keys = Vec::new();
    for node in cluster.nodes() {
        keys.push(dbsize(node.port()).await?);
    }
    bar.set_message(format!("{label}: draining"));
    let elapsed = after.at - before.at;
    let (loads, servers): (Vec<_>, Vec<_>) =
        loaded.into_iter().map(|l| (l.load, (l.prefix, l.queue, l.served))).unzip();
    // Every producer stops at once; each consumer goes on until its own tasks fired.
    let drained = try_join_all(loads.into_iter().map(SustainedLoad::drain)).await?;
    let mut server_runs = Vec::new();
    for (i, (drained, (prefix, queue, served))) in drained.into_iter().zip(servers).enumerate() {
        drop(served);
        if let Some(note) = drained.note {
            notes.push(format!("{label}, server {}: {note}", i + 1));
        }
        let (start, end) = (&before.counts[i], &after.counts[i]);
        server_runs.push(ServerRun {
            prefix,
            queue,
            completed_per_second: per_second(end.completed - start.completed, elapsed),
            scheduled_per_second: per_second(end.scheduled - start.scheduled, elapsed),
            scheduled: drained.scheduled,
            fired: drained.fired,
            lost: drained.lost,
            duplicates: drained.duplicates,
            left_in_store: drained.left_in_store,
        });
    }
    bar.finish_and_clear();
    let nodes: Vec<NodeRun> = (cluster.nodes().iter().zip(&keys))
        .enumerate()
        .map(|(i, (node, &keys))| NodeRun {
            port: node.port(),
            cpu_percent: (after.cpu[i] - before.cpu[i]) * 100.0 / elapsed.as_secs_f64(),
            keys,
        })
        .collect();
    drop(cluster);
    let completed_per_second: f64 = server_runs.iter().map(|s| s.completed_per_second).sum();
    let cpu_share: f64 = nodes.iter().map(|n| n.cpu_percent / 100.0).sum();
    Ok(ClusterRun {
        primaries,
        completed_per_second,
        scheduled_per_second: server_runs.iter().map(|s| s.scheduled_per_second).sum(),
        efficiency: None,
        redis_cpu_us_per_task: cpu_share * 1e6 / completed_per_second.max(f64::MIN_POSITIVE),
        lost: server_runs.iter().map(|s| s.lost).sum(),
        duplicates: server_runs.iter().map(|s| s.duplicates).sum(),
        servers: server_runs,
        nodes,
    })
}

/// Every server's counts, then every node's CPU seconds.
async fn read(loaded: &[Loaded], nodes: &[RedisCpu]) -> Result<Reading> {
    let at = Instant::now();
    let counts = loaded.iter().map(|l| l.load.counts()).collect();
    let cpu = try_join_all(nodes.iter().map(RedisCpu::seconds)).await?;
    Ok(Reading { at, counts, cpu })
}

/// `DBSIZE` of the node on `port`: the keys it holds.
async fn dbsize(port: u16) -> Result<u64> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut conn = client.get_multiplexed_async_connection().await.context("connect to read DBSIZE")?;
    redis::cmd("DBSIZE").query_async(&mut conn).await.context("DBSIZE")
}

impl ScaleReport {
    /// Sets each run's efficiency against the first run of 1 primary, if any.
    fn set_efficiency(&mut self) {
        let Some(one) = self.clusters.iter().find(|c| c.primaries == 1).map(|c| c.completed_per_second) else {
            self.notes.push("no efficiency: it compares with 1 primary, which --primaries does not list".into());
            return;
        };
        for run in &mut self.clusters {
            run.efficiency = Some(efficiency(run.completed_per_second, run.primaries, one));
        }
    }

    pub(crate) fn table(&self) -> String {
        let sizes: Vec<String> = self.clusters.iter().map(|c| c.primaries.to_string()).collect();
        let title = format!(
            "scale: schedule + fire + ack on Redis Clusters of K primaries (K = {}), {} s measured after a {} s warm-up\n\
             each server: its own prefix and queue of {} shards, {} producers; {}\n\
             on this machine's {} cores, shared by the nodes, the servers and the load",
            sizes.join(", "),
            self.duration_ms as f64 / 1000.0,
            self.warm_up_ms as f64 / 1000.0,
            self.shards,
            self.producers_per_server,
            self.consumer.describe(),
            self.cores,
        );
        let totals = self
            .clusters
            .iter()
            .map(|c| {
                let per_server: Vec<String> = c.servers.iter().map(|s| rate(s.completed_per_second)).collect();
                vec![
                    c.primaries.to_string(),
                    c.servers.len().to_string(),
                    rate(c.completed_per_second),
                    per_server.join(" + "),
                    c.efficiency.map_or("-".into(), |e| format!("{e:.2}")),
                    format!("{:.1} µs", c.redis_cpu_us_per_task),
                    thousands(c.lost as f64),
                    thousands(c.duplicates as f64),
                ]
            })
            .collect();
        let nodes = self
            .clusters
            .iter()
            .flat_map(|c| {
                c.nodes.iter().enumerate().map(move |(i, node)| {
                    vec![
                        c.primaries.to_string(),
                        format!("{} (port {})", i + 1, node.port),
                        format!("{:.0}%", node.cpu_percent),
                        thousands(node.keys as f64),
                    ]
                })
            })
            .collect();
        let mut text = format!(
            "{title}\n{}\n\n{}",
            table(
                &[
                    "PRIMARIES",
                    "SERVERS",
                    "ACKED/S",
                    "PER SERVER",
                    "EFFICIENCY",
                    "REDIS CPU/TASK",
                    "LOST",
                    "DUPLICATES"
                ],
                totals,
                &[1, 2, 4, 5, 6, 7]
            ),
            table(&["PRIMARIES", "NODE", "CPU", "KEYS"], nodes, &[2, 3])
        );
        for note in &self.notes {
            text.push_str(&format!("\nnote: {note}"));
        }
        text
    }
}

/// `total` at `primaries` ÷ (`primaries` × `one`, the total at 1 primary).
fn efficiency(total: f64, primaries: u32, one: f64) -> f64 {
    total / (f64::from(primaries) * one).max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_is_the_rate_per_primary_over_that_of_one() {
        assert_eq!(efficiency(10_000.0, 1, 10_000.0), 1.0);
        assert_eq!(efficiency(20_000.0, 4, 10_000.0), 0.5);
        assert_eq!(efficiency(0.0, 2, 0.0), 0.0);
    }
}
