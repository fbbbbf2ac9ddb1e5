//! The command line of `punctual bench` (the `punctual-bench` binary, which `punctual
//! bench` runs), as clap reads it: the workload, its target and sizes. [`AFTER_HELP`]
//! goes under its flags, so `punctual bench --help` is written here, beside the
//! workloads it describes.
//!
//! Checks that need nothing running happen here, as usage errors (exit 2): a store is
//! `embedded`, `redis://…`, `private-redis` or `private-cluster` (an existing Cluster is
//! benched through `--server`),
//! `--server` an http(s) URL (and not with `--serve`), sizes and durations above zero,
//! the pull loops' settings within what the server accepts (`--lease-max` up to the
//! core's [`MAX_LEASE_BATCH`], `--long-poll` up to its [`MAX_WAIT`]) and given only
//! where pull loops run (`--server` or `--serve`), `scale`'s `--primaries` a list of
//! counts from 1 to [`MAX_NODES`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, ValueEnum};
use punctual_client::{Url, parse_server_url};
use punctual_core::{MAX_LEASE_BATCH, MAX_WAIT};
use serde::Serialize;

/// The most pull loops `--loops` starts (each holds one connection to the server).
pub const MAX_LOOPS: u32 = 1_000;

/// The most primaries (`--primaries`) and servers (`--servers`) `scale` starts at once
/// on this machine.
pub const MAX_NODES: u32 = 64;

/// What `punctual bench --help` shows after the flags.
pub const AFTER_HELP: &str = "\
Workloads:
  spread       N tasks (--tasks, default 100,000) due uniformly over --window (20s): fire
               lag (handler start, or lease receipt over HTTP, - due) p50/p90/p99/p99.9/max,
               beside Redis keyspace notifications (key expiry events) and a ZSet polled
               every second, the two approaches teams build by hand, and BullMQ
  burst        N tasks (default 100,000) due at one instant: time to drain, tasks/s, lag
  throughput   for --duration (10s) each: schedule + fire + ack sustained (producers
               scheduling due-now tasks while a worker fires and acks them), then single
               schedule calls from 64 clients and batches of 1,000; on the embedded store
               beside one durable SQLite commit per task
               (spread, burst and throughput on Redis, in process or --serve: Redis CPU
               per task, from INFO cpu, for scheduling, lease + ack and the two together)
  pending      N tasks (default 1,000,000) due in 30 days: memory and disk (or Redis memory)
               per task; embedded: a real punctual serve killed with kill -9 and restarted,
               process start -> first fire. --store private-cluster: a private Redis
               Cluster of --primaries primaries (one count, default 3), the queue in
               --shards shards (default 16 there): Redis used_memory per task summed over
               the nodes and per node, then a new punctual serve started on the Cluster
               with the tasks stored, process start -> lease of a task due now
  all          the four, in that order
  brokers      punctual publishing into RabbitMQ and NATS JetStream through its push
               actions (a punctual serve started for the run on --store, whatever the
               target flags): N tasks (default 100,000) due at one instant in a queue
               whose rabbitmq action publishes to the run's exchange and queue, then the
               same through a nats action into the run's stream; a consumer here reads
               every message: drain time, messages/s, lag (receipt - the due_at or
               Punctual-Due-At header) p50/p99/max, duplicates (by delivery id), lost.
               Then --delays messages (10,000) with random delays over --window (20s),
               RabbitMQ's TTL + dead-letter delay, the usual hand-built approach
               (per-message TTL into a holding queue, dead-lettered to a work queue:
               head-of-line blocking makes later-due messages late) beside
               punctual's rabbitmq action: lateness p50/p99/max, how many > 1 s
               late, and the ratio TTL / punctual. Needs RabbitMQ
               (--rabbitmq) and NATS with JetStream (--nats), or one of them with
               --broker rabbitmq|nats; their exchanges, queues and stream are named
               punctual-bench-<pid>-<ms>... and deleted after
  soak         a punctual serve started for the run on --store (private-redis: AOF with
               appendfsync always) under steady load for --duration (give it: 30m): a
               producer scheduling --rate (100) one-off tasks a second (90% due within
               5 s in batches, 10% due 10-90 s out one by one, a third of those
               cancelled), 10 tasks repeating every 5 s, and 4 pull loops leasing (10 s
               leases) and acknowledging over HTTP. Every --kill-every (2m) the server is
               killed with kill -9 and restarted on the same store; a private redis-server
               is also killed and restarted once, mid-run, while the server stays up.
               After a drain it checks every acknowledged task: lost (acknowledged, not
               cancelled, never delivered and no longer stored: must be 0, else the run
               fails), duplicates (a delivery id leased twice; each is explained by an
               ack left unconfirmed at a kill or the Redis restart, or counted as
               unexplained), fired after a confirmed cancel (must be 0); and per minute
               the lag (lease received - due) p50/p99/max and the server's resident
               memory, the memory just before each kill, and the growth of that memory
               after the first 5 minutes (goal: at most 5%). One line a minute on
               stderr; with --json the table also goes to stderr, the JSON to stdout
  scale        how schedule + fire + ack grows as a Redis Cluster gets more primaries.
               For each K of --primaries (default 1,2,4,8): a private Redis Cluster of K
               primaries (no replicas, loopback ports, killed after), --servers punctual
               serve on it (default K), each with its own key prefix and its own queue of
               --shards shards (default 16 here), and on every server at once the
               sustained load of throughput (4 producers, --loops pull loops each). After
               a 2 s warm-up, --duration (10s) is measured: tries acknowledged per
               second, in total and per server; each node's CPU (INFO cpu, system + user,
               in % of one core) and keys (DBSIZE), and their CPU per task acknowledged
               (what one task costs Redis, the same at every K when the Cluster adds no
               work per task); and the efficiency, the total at K /
               (K x the total at 1 primary in the same run): 1.00 means each primary adds
               what one carries alone, 0.50 at K=4 that 4 primaries carry twice what one
               does (shown when 1 is in --primaries). Then every task must fire once: lost
               and duplicated are counted. Needs redis-server. Nodes, servers and the load
               share this machine's cores: the efficiency shows how the Cluster scales
               only where the cores outnumber them

Examples:
  punctual bench burst --serve                         # over HTTP on the default (embedded) store
  punctual bench all --serve --store private-redis     # the same on a private redis-server
  punctual bench spread                                # the engine in this process, embedded store
  punctual bench burst --store redis://127.0.0.1:6379  # an existing Redis (keys removed after)
  punctual bench pending --tasks 10000000 --data /var/tmp/pb   # 10 million, kept in /var/tmp/pb
  punctual bench pending --store private-cluster --primaries 3 --tasks 10000000
  punctual bench throughput --server http://127.0.0.1:7575 --token s3cret --loops 16
  punctual bench burst --serve --acks each --lease-max 10      # a naive worker's settings
  punctual bench all --tasks 200 --window 1s --duration 1s --json   # tiny, for CI
  punctual bench brokers                               # RabbitMQ and NATS on this machine
  punctual bench soak --duration 30m --store private-redis --json > soak.json   # 15 kills
  punctual bench soak --duration 20s --kill-every 5s  # a quick look
  punctual bench scale                                 # 1, 2, 4 and 8 primaries, 10 s each
  punctual bench scale --primaries 1,2,3 --servers 2 --shards 32 --json
  punctual bench brokers --rabbitmq amqp://u:p@mq:5672/%2f --nats nats://mq:4222 --concurrency 128

Targets: the engine runs in this process on a fresh store per workload (--store embedded
in --data DIR/<workload> or a temporary directory; --store redis://HOST:PORT under a key
prefix of its own; --store private-redis; --store private-cluster, pending only); or
--serve starts a punctual server for the run (the server's own code, built into this
binary; on a free 127.0.0.1 port, on --store, its data in a temporary directory or
DIR/serve, stopped at the end) and --server names one already running: then spread,
burst and throughput run over HTTP as users run pull workers.

Pull loops (over HTTP): --loops (50) loops each long-poll POST /v1/queues/Q/lease for up
to --lease-max (100) tasks, waiting up to --long-poll (2s), then acknowledge them:
--acks batch (one POST /v1/acks per answer) or each (one POST /v1/leases/ID/ack per
task, in turn). In process, a worker of 256 handler slots consumes instead. Each report
states the settings it ran with. scale runs --loops pull loops on each server it starts;
--lease-max, --long-poll and --acks need --serve there too (scale always serves).

Baselines, on a Redis (the target's, else a private redis-server when one is installed):
the two delays teams build by hand on Redis, keyspace notifications (key expiry events)
and a ZSet polled every second, beside spread, and BullMQ
beside every workload: the Node program in bench/bullmq (--bullmq DIR; default
./bench/bullmq, else the source tree's) runs the same workload with a Worker of
concurrency --loops, under the run's key prefix, deleted after. Its column shows the
ratio punctual / BullMQ. It needs node on PATH and `npm ci --prefix bench/bullmq` once;
without them it is skipped, and the report says why. --baselines demands every baseline
(a missing one is then an error); --baselines=false skips them all.

Progress bars go to stderr (not with --quiet or when it is not a terminal); results to
stdout as a table per workload, or with --json as an array of one object per workload.
Build with --release for figures worth quoting: cargo build --release, then
target/release/punctual bench ... (or cargo run --release -p punctual-bench -- ...).";

/// `punctual bench WORKLOAD [FLAGS]`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("http").args(["server", "serve"])))]
pub struct BenchArgs {
    /// What to measure
    #[arg(value_enum)]
    pub workload: Workload,
    /// Where tasks live: embedded, redis://HOST:PORT (an existing Redis), private-redis (one started for the run) or private-cluster (a Redis Cluster started for the run; pending only)
    #[arg(long, value_name = "STORE", default_value = "embedded", value_parser = parse_bench_store)]
    pub store: BenchStore,
    /// The embedded store's directory; each workload uses DIR/<workload>, kept after the run [default: a temporary directory]
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Redis: split each benchmark queue into N shards (in process, or the servers --serve and scale start) [default: 1; scale and private-cluster 16]
    #[arg(long, value_name = "N", conflicts_with = "server", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: Option<u32>,
    /// Run spread, burst and throughput against this running punctual serve over HTTP
    #[arg(long, value_name = "URL", value_parser = parse_server_url, conflicts_with_all = ["store", "serve"])]
    pub server: Option<Url>,
    /// Start a punctual server (the server's own code, built into this binary) on --store for the run, and run spread, burst and throughput against it over HTTP
    #[arg(long)]
    pub serve: bool,
    /// Concurrent pull loops over HTTP; also the BullMQ Worker's concurrency
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LOOPS)))]
    pub loops: u32,
    /// Tasks one lease call of a pull loop asks for (the server hands out at most 1000)
    #[arg(long, value_name = "N", default_value_t = 100, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LEASE_BATCH)))]
    pub lease_max: u32,
    /// How long a lease call waits for a task to fall due (0s: it answers at once; at most 60s)
    #[arg(long, value_name = "D", default_value = "2s", requires = "http", value_parser = parse_long_poll)]
    pub long_poll: Duration,
    /// How pull loops acknowledge: batch (one POST /v1/acks per lease answer) or each (one call per task)
    #[arg(long, value_enum, value_name = "HOW", default_value = "batch", requires = "http")]
    pub acks: Acks,
    /// The BullMQ baseline's directory (bench/bullmq of the source tree) [default: ./bench/bullmq, else the source tree's]
    #[arg(long, value_name = "DIR")]
    pub bullmq: Option<PathBuf>,
    /// Bearer token, for a --server started with --token
    #[arg(long, env = "PUNCTUAL_TOKEN", value_name = "T", hide_env_values = true)]
    pub token: Option<String>,
    /// Tasks of spread, burst, pending and brokers' bursts [default: 100000; pending 1000000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub tasks: Option<u64>,
    /// spread: the window the due times are spread over; brokers: the delays' range
    #[arg(long, value_name = "D", default_value = "20s", value_parser = parse_bench_duration)]
    pub window: Duration,
    /// brokers: the RabbitMQ broker (amqp:// or amqps://)
    #[arg(long, value_name = "URL", default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    pub rabbitmq: String,
    /// brokers: which to measure: rabbitmq (its burst and the TTL + dead letter comparison), nats (its burst) or both
    #[arg(long, value_enum, value_name = "WHICH", default_value = "both")]
    pub broker: Broker,
    /// brokers: the NATS server, with JetStream
    #[arg(long, value_name = "URL", default_value = "nats://127.0.0.1:4222")]
    pub nats: String,
    /// brokers: messages of the TTL + dead letter comparison
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub delays: u64,
    /// brokers: the push actions' concurrency (publishes in flight per queue)
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// throughput: how long each phase runs; soak: how long the load runs (give it: 30m for a real soak); scale: the window measured on each Cluster
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_bench_duration)]
    pub duration: Duration,
    /// soak: how often the server is killed with kill -9 and restarted on the same store
    #[arg(long, value_name = "D", default_value = "2m", value_parser = parse_bench_duration)]
    pub kill_every: Duration,
    /// scale: the Redis Cluster sizes to measure, in primaries, comma-separated [default: 1,2,4,8]; pending on private-cluster: the Cluster's primaries, one count [default: 3]
    #[arg(long, value_name = "K,K,…", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_NODES)))]
    pub primaries: Option<Vec<u32>>,
    /// scale: punctual serve processes on each Cluster [default: as many as its primaries]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_NODES)))]
    pub servers: Option<u32>,
    /// burst: spread the tasks over this many groups (task i in group i mod N), to measure what groups cost
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub groups: Option<u32>,
    /// soak: one-off tasks the producer schedules per second (besides 10 repeating tasks)
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rate: u32,
    /// Run the baselines: keyspace notifications and a 1-second ZSet poller beside spread, BullMQ beside each workload (default: those at hand)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub baselines: Option<bool>,
    /// Print the results as JSON (an array, one object per workload) instead of tables
    #[arg(long)]
    pub json: bool,
    /// No progress bars
    #[arg(long, short)]
    pub quiet: bool,
}

/// The workloads of `punctual bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    Spread,
    Burst,
    Throughput,
    Pending,
    All,
    Brokers,
    Soak,
    Scale,
}

impl Workload {
    /// Its name on the command line, and of its directory under `--data`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Spread => "spread",
            Workload::Burst => "burst",
            Workload::Throughput => "throughput",
            Workload::Pending => "pending",
            Workload::All => "all",
            Workload::Brokers => "brokers",
            Workload::Soak => "soak",
            Workload::Scale => "scale",
        }
    }
}

/// `punctual bench brokers --broker`: which brokers the run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Broker {
    Rabbitmq,
    Nats,
    Both,
}

impl Broker {
    pub(crate) fn rabbitmq(self) -> bool {
        matches!(self, Broker::Rabbitmq | Broker::Both)
    }

    pub(crate) fn nats(self) -> bool {
        matches!(self, Broker::Nats | Broker::Both)
    }
}

/// `punctual bench --acks`: how a pull loop acknowledges the tasks of a lease answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Acks {
    /// One `POST /v1/acks` for all the leases of an answer.
    Batch,
    /// One `POST /v1/leases/{id}/ack` per task, one after the other.
    Each,
}

/// `punctual bench --store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchStore {
    Embedded,
    Redis(String),
    PrivateRedis,
    /// A Redis Cluster started for the run (`pending` only).
    PrivateCluster,
}

impl std::fmt::Display for BenchStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchStore::Embedded => f.write_str("embedded"),
            BenchStore::Redis(url) => f.write_str(url),
            BenchStore::PrivateRedis => f.write_str("private-redis"),
            BenchStore::PrivateCluster => f.write_str("private-cluster"),
        }
    }
}

fn parse_bench_store(text: &str) -> Result<BenchStore, String> {
    match text.trim() {
        "embedded" => Ok(BenchStore::Embedded),
        "private-redis" => Ok(BenchStore::PrivateRedis),
        "private-cluster" => Ok(BenchStore::PrivateCluster),
        url if ["redis-cluster", "rediss-cluster", "redis-sentinel", "rediss-sentinel"]
            .iter()
            .any(|scheme| url.strip_prefix(scheme).is_some_and(|rest| rest.starts_with("://"))) =>
        {
            let scheme = url.split_once("://").map_or(url, |(scheme, _)| scheme);
            Err(format!(
                "punctual bench runs on one Redis (pending also on a private-cluster); to measure {scheme}://, \
                 run punctual serve --store {scheme}://... and bench it with --server URL"
            ))
        }
        url if url.starts_with("redis://") || url.starts_with("rediss://") => Ok(BenchStore::Redis(url.to_owned())),
        other => {
            Err(format!("'{other}' is not a store: use embedded, redis://HOST:PORT, private-redis or private-cluster"))
        }
    }
}

fn parse_bench_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = punctual_core::parse_duration(text)?;
    if d.is_zero() { Err("must be longer than 0".into()) } else { Ok(d) }
}

fn parse_long_poll(text: &str) -> Result<Duration, String> {
    let d = punctual_core::parse_duration(text)?;
    if d > MAX_WAIT {
        Err(format!("a lease call waits at most {}s (the server's longest wait)", MAX_WAIT.as_secs()))
    } else {
        Ok(d)
    }
}
