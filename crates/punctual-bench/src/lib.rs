//! `punctual bench`: reproducible measurements of punctual beside the delays teams
//! build by hand (Redis keyspace notifications, a ZSet poller, RabbitMQ's TTL + dead
//! letter) and BullMQ, in the same run on the same machine (see BENCHMARKS.md).
//!
//! The library of the `punctual-bench` binary (`main.rs`), which `punctual bench` runs:
//! the binary parses [`BenchArgs`] (with [`AFTER_HELP`], the help that explains the
//! workloads) and calls [`run`]. The benchmark's dependencies (the baselines' Redis and
//! SQLite clients, the brokers' clients, progress bars, the private redis-server
//! launcher) are this crate's; the `punctual` binary links none of them. Not published:
//! it is a tool, not an API.
//!
//! Workloads, one module each: [`spread`] (fire lag of tasks due over a window),
//! [`burst`] (tasks due at one instant: time to drain), [`throughput`] (sustained
//! schedule + fire + ack, and scheduling alone), [`pending`] (memory and disk per
//! waiting task, restart after `kill -9`), [`brokers`] (punctual's push actions
//! publishing into RabbitMQ and NATS, beside RabbitMQ's TTL + dead letter built by hand;
//! it starts its own server, configured with the actions), [`soak`] (a server it starts
//! under steady load for a long time, killed with `kill -9` and restarted every few
//! minutes: nothing acknowledged lost, duplicates explained, lag and memory per
//! minute), [`scale`] (throughput's sustained load on several servers it starts on
//! private Redis Clusters of growing size: the rate per primary). Each of the first
//! four drives a [`driver::Driver`]: an engine
//! in this process on a fresh store per workload (embedded in `--data DIR/<workload>`
//! or a temporary directory; Redis under a key prefix of its own), or a `punctual
//! serve` over HTTP with pull loops as users run them: one already running
//! (`--server`) or one this binary starts for the run on `--store` ([`serve`],
//! `--serve`). [`baselines`] holds the hand-built delays and [`bullmq`] runs BullMQ on
//! the same workloads (the Node program in `bench/bullmq/`), both on one Redis: the
//! target's, else a private redis-server. [`stats`] holds the arithmetic, [`report`]
//! the progress bars and tables, [`poll`] the one wait on what cannot signal the bench
//! (a server in another process getting ready).
//!
//! `pending` also runs on a private Redis Cluster (`--store private-cluster`): the
//! engine in this process on the Redis store connected to it, its queue sharded so the
//! tasks spread over the primaries, then a new `punctual serve` started on the tasks
//! stored there.
//!
//! Nothing is left behind: temporary directories are removed, a served `punctual
//! serve` and a private redis-server or Cluster are stopped (even when this process is
//! killed),
//! and on an existing Redis every key under the run's prefix is deleted.

#![allow(clippy::disallowed_methods, reason = "a benchmark measures elapsed wall-clock time")]

mod args;
mod baselines;
mod brokers;
mod bullmq;
mod burst;
mod driver;
mod pending;
mod poll;
mod redis_cpu;
mod report;
mod scale;
mod serve;
mod soak;
mod spread;
mod stats;
mod throughput;

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use punctual_core::{Engine, EngineConfig};
use punctual_private_redis::cluster::NODE_TIMEOUT;
use punctual_private_redis::{Persistence, RedisCluster, RedisServer};
use punctual_redis::{RedisConfig, RedisStore};
use punctual_sqlite::SqliteStore;
use serde::Serialize;

pub use args::{AFTER_HELP, Acks, BenchArgs, BenchStore, Broker, MAX_LOOPS, MAX_NODES, Workload};
use bullmq::Bullmq;
use driver::{Driver, EngineDriver, HttpDriver, PullLoops};
use report::Progress;
use serve::{ServeStore, Served};

const DEFAULT_TASKS: usize = 100_000;
const DEFAULT_PENDING: u64 = 1_000_000;
/// `pending`'s Cluster (`--store private-cluster`) unless `--primaries` says otherwise.
const DEFAULT_CLUSTER_PRIMARIES: u32 = 3;
/// Shards of `pending`'s queue on a Cluster unless `--shards` says otherwise: enough
/// hash tags to spread it over every primary of a small Cluster.
const DEFAULT_CLUSTER_SHARDS: u32 = 16;

/// Why a workload other than `pending` refuses `--store private-cluster`.
const PRIVATE_CLUSTER_IS_FOR_PENDING: &str = "--store private-cluster is for pending (scale starts Clusters of its own); \
     to bench an existing Cluster, run punctual serve --store redis-cluster://... and pass --server URL";

/// What a workload runs against, beyond its driver.
#[derive(Debug)]
pub(crate) enum Side<'a> {
    /// The embedded store in this directory.
    Embedded { dir: PathBuf },
    /// A Redis; `private` when this run started it.
    Redis { url: &'a str, private: Option<&'a RedisServer> },
    /// A private Redis Cluster started for the run: its `redis-cluster://` URL, its nodes.
    Cluster { url: &'a str, nodes: &'a [RedisServer] },
    /// A `punctual serve` over HTTP.
    Http,
}

/// The Redis the baselines run on, and the prefix of their keys.
#[derive(Debug)]
pub(crate) struct BaselineRedis {
    url: String,
    prefix: String,
}

/// Everything a workload needs besides its driver and sizes.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    progress: Progress,
    side: &'a Side<'a>,
    /// What the report calls the target.
    target: String,
    baselines: Option<&'a BaselineRedis>,
    /// Why the baselines did not run, when they did not.
    baselines_skipped: Vec<String>,
    /// The BullMQ program, when it can run (on `baselines`).
    bullmq: Option<&'a Bullmq>,
    /// Why BullMQ did not run, when it did not and was not turned off.
    bullmq_skipped: Option<String>,
    /// The Redis of the punctual under test, when the run knows it.
    redis_cpu: Option<redis_cpu::RedisCpu>,
}

impl Context<'_> {
    /// The BullMQ program and the Redis it runs on, when it runs.
    pub(crate) fn bullmq(&self) -> Option<(&Bullmq, &BaselineRedis)> {
        self.bullmq.zip(self.baselines)
    }
}

/// One workload's results.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Report {
    Spread(spread::SpreadReport),
    Burst(burst::BurstReport),
    Throughput(throughput::ThroughputReport),
    Pending(pending::PendingReport),
}

impl Report {
    fn table(&self) -> String {
        match self {
            Report::Spread(r) => r.table(),
            Report::Burst(r) => r.table(),
            Report::Throughput(r) => r.table(),
            Report::Pending(r) => r.table(),
        }
    }
}

/// Where the workloads run.
enum Target {
    Embedded {
        root: PathBuf,
        _temp: Option<tempfile::TempDir>,
    },
    Redis {
        url: String,
        private: Option<RedisServer>,
        prefix: String,
    },
    /// A private Redis Cluster (`pending` only), its queue in `shards` shards.
    Cluster {
        cluster: RedisCluster,
        prefix: String,
        shards: u32,
    },
    /// Over HTTP; `served` when this run started the server (`--serve`).
    Http {
        driver: HttpDriver,
        url: String,
        served: Option<Box<ServedTarget>>,
    },
}

/// A `punctual serve` this run started, and the Redis it runs on (if not embedded).
struct ServedTarget {
    /// Stopped first: fields drop in order, and the server needs its Redis to stop.
    served: Served,
    redis: Option<ServedRedis>,
}

struct ServedRedis {
    url: String,
    prefix: String,
    private: Option<RedisServer>,
}

impl ServedTarget {
    /// Starts the server on `args.store`, with `config` (TOML) in its config file.
    async fn start(args: &BenchArgs, config: Option<&str>) -> Result<ServedTarget> {
        let redis = match &args.store {
            BenchStore::Embedded => None,
            BenchStore::Redis(url) => Some(ServedRedis { url: url.clone(), prefix: run_prefix(), private: None }),
            BenchStore::PrivateRedis => {
                let server = private_redis(Persistence::None)?;
                Some(ServedRedis { url: server.url(), prefix: run_prefix(), private: Some(server) })
            }
            BenchStore::PrivateCluster => bail!(PRIVATE_CLUSTER_IS_FOR_PENDING),
        };
        let store = match &redis {
            None => ServeStore::Embedded,
            Some(r) => ServeStore::Redis { url: &r.url, prefix: &r.prefix },
        };
        let served = Served::start(store, args.data.as_deref(), config).await.context("--serve")?;
        Ok(ServedTarget { served, redis })
    }

    /// What the reports call it.
    fn describe(&self) -> String {
        let store = match &self.redis {
            None => "the embedded store".to_owned(),
            Some(ServedRedis { private: Some(_), url, .. }) => format!("a private redis-server at {url}"),
            Some(ServedRedis { url, .. }) => format!("Redis at {url}"),
        };
        format!(
            "punctual serve at {} (started for the run, on {store})",
            self.served.url().as_str().trim_end_matches('/')
        )
    }
}

/// Starts a private redis-server keeping data as `persistence` says, saying what to do
/// when there is none.
pub(crate) fn private_redis(persistence: Persistence) -> Result<RedisServer> {
    RedisServer::start(persistence, &[]).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!(
                "redis-server not found on PATH: install it (Debian: apt-get install redis-server) \
                 or pass --store redis://HOST:PORT"
            )
        } else {
            anyhow::anyhow!("cannot start a private redis-server: {e}")
        }
    })
}

/// Is `redis-server` on PATH?
fn redis_server_installed() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("redis-server").is_file()))
}

/// A key prefix no other run uses.
fn run_prefix() -> String {
    format!("punctual-bench-{}-{}", std::process::id(), stats::now_millis())
}

/// Runs `punctual bench`: the workloads asked for, each one's table (or, with `--json`,
/// all of them as one JSON array at the end) handed to `emit`, which prints a text and a
/// newline on stdout (the binary's one rule for a closed pipe applies).
///
/// Ctrl-C ends the run as an error after everything it started is dropped: a served
/// server and private redis-servers stopped, temporary directories removed.
pub async fn run(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.workload == Workload::Brokers {
        // It handles Ctrl-C itself, to delete what it declared on the brokers.
        return brokers::run(args, emit).await;
    }
    tokio::select! {
        result = run_workloads(args, emit) => result,
        signal = tokio::signal::ctrl_c() => {
            signal.context("cannot listen for Ctrl-C")?;
            bail!("interrupted: the processes this run started were stopped and its temporary directories removed")
        }
    }
}

async fn run_workloads(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.workload == Workload::Soak {
        return soak::run(args, emit).await;
    }
    if args.workload == Workload::Scale {
        return scale::run(args, emit).await;
    }
    let workloads: Vec<Workload> = match args.workload {
        Workload::All => vec![Workload::Spread, Workload::Burst, Workload::Throughput, Workload::Pending],
        one => vec![one],
    };
    let over_http = if args.serve { Some("--serve") } else { args.server.as_ref().map(|_| "--server") };
    if args.server.is_some() && args.data.is_some() {
        bail!("--data is the embedded store's directory; with --server the server keeps its own data");
    }
    if args.data.is_some() && !args.serve && !matches!(args.store, BenchStore::Embedded) {
        bail!("--data is the embedded store's directory; it does not apply to --store {}", args.store);
    }
    if args.store == BenchStore::PrivateCluster && args.workload != Workload::Pending {
        bail!(PRIVATE_CLUSTER_IS_FOR_PENDING);
    }
    if args.primaries.is_some() && args.store != BenchStore::PrivateCluster {
        bail!("--primaries is for scale, and for pending on --store private-cluster");
    }
    if let Some(flag) = over_http
        && args.workload == Workload::Pending
    {
        bail!(
            "pending measures the memory of the process holding the engine and restarts an embedded server itself; \
             run it without {flag} (e.g. punctual bench pending --store embedded)"
        );
    }
    // BullMQ, unless the baselines are off; demanded with --baselines.
    let bullmq = match args.baselines {
        Some(false) => None,
        _ => Some(bullmq::locate(args.bullmq.as_deref(), args.loops)?),
    };
    if args.baselines == Some(true)
        && let Some(Err(why)) = &bullmq
    {
        bail!("--baselines demands the BullMQ baseline, which cannot run here: {why}");
    }
    let mut bullmq_skipped = match &bullmq {
        Some(Err(why)) => Some(format!("BullMQ baseline skipped: {why}")),
        _ => None,
    };
    let bullmq = bullmq.and_then(Result::ok);
    let progress = Progress::new(args.quiet);
    let pull = PullLoops { loops: args.loops, lease_max: args.lease_max, long_poll: args.long_poll, acks: args.acks };
    let target = match (&args.server, &args.store) {
        (Some(url), _) => Target::Http {
            driver: HttpDriver::new(url, args.token.clone(), pull)?,
            url: url.as_str().trim_end_matches('/').to_owned(),
            served: None,
        },
        (None, _) if args.serve => {
            let config = shards_config(args.shards.unwrap_or(1));
            let served = ServedTarget::start(&args, config.as_deref()).await?;
            Target::Http {
                // The server started for the run has no tokens.
                driver: HttpDriver::new(served.served.url(), None, pull)?,
                url: served.describe(),
                served: Some(Box::new(served)),
            }
        }
        (None, BenchStore::Embedded) => match &args.data {
            Some(dir) => Target::Embedded { root: dir.clone(), _temp: None },
            None => {
                let temp = tempfile::Builder::new().prefix("punctual-bench-").tempdir()?;
                Target::Embedded { root: temp.path().to_owned(), _temp: Some(temp) }
            }
        },
        (None, BenchStore::Redis(url)) => Target::Redis { url: url.clone(), private: None, prefix: run_prefix() },
        (None, BenchStore::PrivateRedis) => {
            let server = private_redis(Persistence::None)?;
            Target::Redis { url: server.url(), private: Some(server), prefix: run_prefix() }
        }
        (None, BenchStore::PrivateCluster) => {
            let primaries = cluster_primaries(&args)?;
            if !redis_server_installed() {
                bail!(
                    "private-cluster starts a Redis Cluster, and redis-server is not on PATH: install it \
                     (Debian: apt-get install redis-server)"
                );
            }
            let cluster = tokio::task::spawn_blocking(move || RedisCluster::start(primaries as usize, 0, NODE_TIMEOUT))
                .await
                .context("starting the Redis Cluster panicked")?
                .with_context(|| format!("cannot start a Redis Cluster of {primaries} primaries"))?;
            let shards = args.shards.unwrap_or(DEFAULT_CLUSTER_SHARDS);
            Target::Cluster { cluster, prefix: run_prefix(), shards }
        }
    };

    // The baselines' Redis: the target's own, else a private one when redis-server is
    // installed (or demanded with --baselines).
    let wants_baselines = args.baselines != Some(false) && (workloads.contains(&Workload::Spread) || bullmq.is_some());
    let mut baselines_skipped = Vec::new();
    let mut _baseline_server = None;
    let baseline_redis = match &target {
        _ if !wants_baselines => None,
        Target::Redis { url, prefix, .. } => Some(BaselineRedis { url: url.clone(), prefix: prefix.clone() }),
        Target::Http { served: Some(served), .. } if served.redis.is_some() => {
            served.redis.as_ref().map(|redis| BaselineRedis { url: redis.url.clone(), prefix: redis.prefix.clone() })
        }
        _ if args.baselines == Some(true) || redis_server_installed() => {
            let server = private_redis(Persistence::None).context("the baselines need a Redis")?;
            let redis = BaselineRedis { url: server.url(), prefix: run_prefix() };
            _baseline_server = Some(server);
            Some(redis)
        }
        _ => {
            baselines_skipped.push(
                "baselines skipped: redis-server not found on PATH; install it (Debian: apt-get install \
                 redis-server) or pass --store redis://HOST:PORT to compare with Redis keyspace notifications and a 1-second ZSet poller"
                    .to_owned(),
            );
            if bullmq.is_some() {
                bullmq_skipped = Some(
                    "BullMQ baseline skipped: it runs on a Redis, and redis-server is not on PATH; install it \
                     (Debian: apt-get install redis-server) or pass --store redis://HOST:PORT"
                        .to_owned(),
                );
            }
            None
        }
    };
    let bullmq = bullmq.filter(|_| baseline_redis.is_some());
    let shared = Shared {
        baselines: &baseline_redis,
        skipped: &baselines_skipped,
        bullmq: bullmq.as_ref(),
        bullmq_skipped: &bullmq_skipped,
    };

    let mut reports = Vec::new();
    let mut notes = Vec::new();
    for workload in workloads {
        if workload == Workload::Pending && matches!(target, Target::Http { .. }) {
            notes.push(format!("pending was skipped: it runs in process, not over {}", over_http.unwrap_or("HTTP")));
            continue;
        }
        let report = match &target {
            Target::Embedded { root, .. } => {
                let dir = root.join(workload.name());
                let side = Side::Embedded { dir: dir.clone() };
                let cx =
                    shared.context(progress.clone(), &side, format!("the embedded store ({})", dir.display()), None);
                run_embedded(workload, &args, &dir, &cx).await?
            }
            Target::Redis { url, private, prefix } => {
                let side = Side::Redis { url, private: private.as_ref() };
                let what = if private.is_some() { "a private redis-server" } else { "Redis" };
                let cx = shared.context(progress.clone(), &side, format!("{what} at {url}"), Some(url));
                run_redis(workload, &args, url, prefix, args.shards.unwrap_or(1), &cx).await?
            }
            Target::Cluster { cluster, prefix, shards } => {
                let url = cluster.url();
                let side = Side::Cluster { url: &url, nodes: cluster.nodes() };
                let what = format!(
                    "a private Redis Cluster of {} primaries, the queue in {shards} shards",
                    cluster.nodes().len()
                );
                let cx = shared.context(progress.clone(), &side, what, None);
                run_redis(workload, &args, &url, prefix, *shards, &cx).await?
            }
            Target::Http { driver, url, served } => {
                let side = Side::Http;
                let what = if served.is_some() { url.clone() } else { format!("punctual serve at {url}") };
                let redis = served.as_ref().and_then(|s| s.redis.as_ref()).map(|r| r.url.as_str());
                let cx = shared.context(progress.clone(), &side, what, redis);
                run_workload(driver, workload, &args, &cx).await?
            }
        };
        if !args.json {
            emit(&format!("{}\n", report.table()))?;
        }
        reports.push(report);
    }
    match target {
        Target::Redis { url, private: None, prefix } => delete_prefix(&url, &prefix).await?,
        Target::Http { served: Some(served), .. } => {
            let ServedTarget { served, redis } = *served;
            drop(served);
            if let Some(ServedRedis { url, prefix, private: None }) = redis {
                delete_prefix(&url, &prefix).await?;
            }
        }
        _ => {}
    }
    if args.json {
        emit(&serde_json::to_string_pretty(&reports)?)?;
    } else {
        for note in &notes {
            emit(&format!("note: {note}"))?;
        }
    }
    Ok(())
}

/// What every workload's [`Context`] shares.
struct Shared<'a> {
    baselines: &'a Option<BaselineRedis>,
    skipped: &'a [String],
    bullmq: Option<&'a Bullmq>,
    bullmq_skipped: &'a Option<String>,
}

impl<'a> Shared<'a> {
    fn context(&self, progress: Progress, side: &'a Side<'a>, target: String, redis: Option<&str>) -> Context<'a> {
        Context {
            progress,
            side,
            target,
            baselines: self.baselines.as_ref(),
            baselines_skipped: self.skipped.to_vec(),
            bullmq: self.bullmq,
            bullmq_skipped: self.bullmq_skipped.clone(),
            redis_cpu: redis.map(redis_cpu::RedisCpu::new),
        }
    }
}

async fn run_embedded(workload: Workload, args: &BenchArgs, dir: &std::path::Path, cx: &Context<'_>) -> Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let open =
        || SqliteStore::open(dir).with_context(|| format!("cannot open the embedded store in {}", dir.display()));
    if workload != Workload::Pending {
        let engine = Engine::start(open()?, EngineConfig::default());
        let report = run_workload(&EngineDriver::new(engine.clone()), workload, args, cx).await;
        engine.shutdown().await?;
        return report;
    }
    let before = pending::before(cx).await?;
    let engine = Engine::start(open()?, EngineConfig::default());
    let report = pending::run(&EngineDriver::new(engine.clone()), pending_tasks(args), before.clone(), cx).await;
    engine.shutdown().await?;
    drop(engine);
    let mut report = report?;
    report.closed(dir, &before)?;
    report.recovery = Some(pending::recovery(dir, cx).await?);
    report.beside_bullmq(cx).await?;
    Ok(Report::Pending(report))
}

/// Runs `workload` in process on the Redis (or Cluster) at `url`, its queues in `shards`
/// shards; on a Cluster, `pending` then starts a new server on the tasks stored.
async fn run_redis(
    workload: Workload,
    args: &BenchArgs,
    url: &str,
    prefix: &str,
    shards: u32,
    cx: &Context<'_>,
) -> Result<Report> {
    let before = if workload == Workload::Pending { Some(pending::before(cx).await?) } else { None };
    let mut config = RedisConfig::new(punctual_redis::Target::parse(url)?);
    config.prefix = prefix.to_owned();
    config.default_shards = shards;
    let store = RedisStore::connect(config).await.with_context(|| format!("cannot connect to Redis at {url}"))?;
    let clock = store.clock();
    let engine = Engine::start(store, EngineConfig::default().clock(clock));
    let driver = EngineDriver::new(engine.clone());
    let report = match before {
        Some(before) => pending::run(&driver, pending_tasks(args), before, cx).await.map(Report::Pending),
        None => run_workload(&driver, workload, args, cx).await,
    };
    engine.shutdown().await?;
    match report? {
        Report::Pending(mut report) => {
            if let Side::Cluster { url, .. } = cx.side {
                report.recovery = Some(pending::new_server(url, prefix, shards, cx).await?);
            }
            report.beside_bullmq(cx).await?;
            Ok(Report::Pending(report))
        }
        other => Ok(other),
    }
}

/// The config file of a served punctual splitting the benchmark queues into `shards`.
fn shards_config(shards: u32) -> Option<String> {
    (shards > 1).then(|| {
        let queues =
            ["bench.spread", "bench.burst", "bench.throughput", "bench.throughput.single", "bench.throughput.batch"];
        queues.iter().map(|queue| format!("[queues.\"{queue}\"]\nshards = {shards}\n")).collect()
    })
}

/// Runs `spread`, `burst` or `throughput` on `driver`.
async fn run_workload<D: Driver>(driver: &D, workload: Workload, args: &BenchArgs, cx: &Context<'_>) -> Result<Report> {
    let tasks = args.tasks.map_or(DEFAULT_TASKS, |n| n as usize);
    Ok(match workload {
        Workload::Spread => Report::Spread(spread::run(driver, tasks, args.window, cx).await?),
        Workload::Burst => Report::Burst(burst::run(driver, tasks, args.groups, cx).await?),
        Workload::Throughput => Report::Throughput(throughput::run(driver, args.duration, cx).await?),
        Workload::Pending | Workload::All | Workload::Brokers | Workload::Soak | Workload::Scale => {
            unreachable!("pending, all, brokers, soak and scale are dispatched before")
        }
    })
}

/// The primaries of `pending`'s Cluster: `--primaries`, which must be one count here.
fn cluster_primaries(args: &BenchArgs) -> Result<u32> {
    match args.primaries.as_deref() {
        None => Ok(DEFAULT_CLUSTER_PRIMARIES),
        Some(&[primaries]) => Ok(primaries),
        Some(_) => bail!("pending starts one Cluster: give --primaries one count (e.g. --primaries 3), not a list"),
    }
}

fn pending_tasks(args: &BenchArgs) -> u64 {
    args.tasks.unwrap_or(DEFAULT_PENDING)
}

/// Deletes every key under `prefix` on the Redis at `url` (what this run wrote there).
pub(crate) async fn delete_prefix(url: &str, prefix: &str) -> Result<()> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .context("SCAN for the run's keys")?;
        if !keys.is_empty() {
            redis::cmd("UNLINK").arg(&keys).query_async::<()>(&mut conn).await.context("UNLINK the run's keys")?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
