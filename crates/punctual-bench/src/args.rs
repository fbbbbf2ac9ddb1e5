//! The command line of `punctual bench`, as clap reads it: the workload, its target
//! and sizes. The `punctual` binary embeds [`BenchArgs`] as its `bench` subcommand,
//! with [`AFTER_HELP`] under its flags, so `punctual bench --help` is written here,
//! beside the workloads it describes.
//!
//! Checks that need nothing running happen here, as usage errors (exit 2): a store is
//! `embedded`, `redis://…` or `private-redis` (a Cluster is benched through `--server`),
//! `--server` an http(s) URL, sizes and durations above zero.

use clap::{Args, ValueEnum};
use punctual_client::{Url, parse_server_url};

/// What `punctual bench --help` shows after the flags.
pub const AFTER_HELP: &str = "\
Workloads:
  spread       N tasks (--tasks, default 100,000) due uniformly over --window (20s): fire
               lag (handler start, or lease receipt over HTTP, - due) p50/p90/p99/p99.9/max,
               beside Redis keyspace notifications (key expiry events) and a ZSet polled
               every second, the two approaches teams build by hand
  burst        N tasks (default 100,000) due at one instant: time to drain, tasks/s
  throughput   for --duration (10s) each: schedule + fire + ack sustained (producers
               scheduling due-now tasks while a worker fires and acks them), then single
               schedule calls from 64 clients and batches of 1,000; on the embedded store
               beside one durable SQLite commit per task
  pending      N tasks (default 1,000,000) due in 30 days: memory and disk (or Redis memory)
               per task; embedded: a real punctual serve killed with kill -9 and restarted,
               process start -> first fire
  all          the four, in that order

Examples:
  punctual bench spread                                # embedded store in a temp dir
  punctual bench all --store private-redis             # a redis-server started for the run
  punctual bench burst --store redis://127.0.0.1:6379  # an existing Redis (keys removed after)
  punctual bench pending --tasks 10000000 --data /var/tmp/pb   # 10 million, kept in /var/tmp/pb
  punctual bench throughput --server http://127.0.0.1:7575 --token s3cret
  punctual bench all --tasks 200 --window 1s --duration 1s --json   # tiny, for CI

Targets: the engine runs in this process on a fresh store per workload (--store embedded
in --data DIR/<workload> or a temporary directory; --store redis://HOST:PORT under a key
prefix of its own; --store private-redis), or --server runs spread, burst and throughput
against a running punctual serve over HTTP (pull workers: long-poll leases, batch acks).
The baselines run on a Redis: the target's, else a private redis-server when one is
installed (--baselines demands them, --baselines=false skips them).

Progress bars go to stderr (not with --quiet or when it is not a terminal); results to
stdout as a table per workload, or with --json as an array of one object per workload.
Build with --release for figures worth quoting (cargo run --release -- bench ...).";

/// `punctual bench WORKLOAD`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure
    #[arg(value_enum)]
    pub workload: Workload,
    /// Where tasks live: embedded, redis://HOST:PORT (an existing Redis) or private-redis (one started for the run)
    #[arg(long, value_name = "STORE", default_value = "embedded", value_parser = parse_bench_store)]
    pub store: BenchStore,
    /// The embedded store's directory; each workload uses DIR/<workload>, kept after the run [default: a temporary directory]
    #[arg(long, value_name = "DIR")]
    pub data: Option<std::path::PathBuf>,
    /// Run spread, burst and throughput against this running punctual serve over HTTP
    #[arg(long, value_name = "URL", value_parser = parse_server_url, conflicts_with = "store")]
    pub server: Option<Url>,
    /// Bearer token, for a --server started with --token
    #[arg(long, env = "PUNCTUAL_TOKEN", value_name = "T", hide_env_values = true)]
    pub token: Option<String>,
    /// Tasks of spread, burst and pending [default: 100000; pending 1000000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub tasks: Option<u64>,
    /// spread: the window the due times are spread over
    #[arg(long, value_name = "D", default_value = "20s", value_parser = parse_bench_duration)]
    pub window: std::time::Duration,
    /// throughput: how long each phase runs
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_bench_duration)]
    pub duration: std::time::Duration,
    /// Run Redis keyspace notifications and a 1-second ZSet poller beside spread (default: when a Redis is at hand)
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
        }
    }
}

/// `punctual bench --store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchStore {
    Embedded,
    Redis(String),
    PrivateRedis,
}

impl std::fmt::Display for BenchStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchStore::Embedded => f.write_str("embedded"),
            BenchStore::Redis(url) => f.write_str(url),
            BenchStore::PrivateRedis => f.write_str("private-redis"),
        }
    }
}

fn parse_bench_store(text: &str) -> Result<BenchStore, String> {
    match text.trim() {
        "embedded" => Ok(BenchStore::Embedded),
        "private-redis" => Ok(BenchStore::PrivateRedis),
        url if url.starts_with("redis-cluster://") => Err(
            "punctual bench runs on one Redis; to measure a Cluster, run punctual serve --store redis-cluster://... \
             and bench it with --server URL"
                .into(),
        ),
        url if url.starts_with("redis://") || url.starts_with("rediss://") => Ok(BenchStore::Redis(url.to_owned())),
        other => Err(format!("'{other}' is not a store: use embedded, redis://HOST:PORT or private-redis")),
    }
}

fn parse_bench_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = punctual_core::parse_duration(text)?;
    if d.is_zero() { Err("must be longer than 0".into()) } else { Ok(d) }
}
