//! The `punctual-bench` binary, which `punctual bench ARGS…` runs with the same
//! arguments: it parses [`BenchArgs`] and runs the workload (the `punctual_bench`
//! library). A binary of its own so that `punctual` links none of the bench's tools.
//!
//! `punctual-bench serve …`, hidden from the help, is `punctual serve …`: it calls
//! exactly `punctual_server::serve(args)`, as the `punctual` binary does. The bench
//! starts the servers it measures that way (`std::env::current_exe()`, see the `serve`
//! module), so they run the code users run, and the bench needs nothing beside it.
//!
//! Exit status: 0 on success; 1 when the run fails (a target that cannot be reached, a
//! workload that lost tasks, flags that do not go together); 2 on a usage error (clap's).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use punctual_bench::{AFTER_HELP, BenchArgs};
use punctual_client::output::emit;

/// mimalloc instead of the system's allocator, as in the `punctual` binary and for the
/// same reason: under a burst of leases and acks over HTTP on the embedded store,
/// glibc's `malloc`, `free` and their consolidation were 12% of the server's samples
/// (`perf record`; see BENCHMARKS.md). The servers the bench starts are this binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `punctual bench WORKLOAD [FLAGS]`, or the hidden `serve`.
#[derive(Debug, Parser)]
#[command(
    name = "punctual-bench",
    version,
    about = "Measure fire lag, bursts, throughput and the cost of pending tasks, in process or over HTTP, \
             beside Redis keyspace notifications, a ZSet polled every second and BullMQ",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(flatten)]
    bench: Option<BenchArgs>,
    #[command(subcommand)]
    internal: Option<Internal>,
}

/// What the bench runs of itself, not for users.
#[derive(Debug, Subcommand)]
enum Internal {
    /// `punctual serve`, for the servers the bench starts
    #[command(hide = true)]
    Serve(punctual_server::ServeArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match Cli::parse() {
        Cli { internal: Some(Internal::Serve(args)), .. } => punctual_server::serve(args).await,
        Cli { bench: Some(args), .. } => punctual_bench::run(args, emit).await,
        Cli { bench: None, internal: None } => unreachable!("clap requires a workload without a subcommand"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the whole chain on one line: "error: context: cause".
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use punctual_bench::{Acks, BenchStore, Workload};

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_is_hidden_and_takes_the_servers_flags() {
        let help = Cli::command().render_long_help().to_string();
        assert!(!help.contains("Commands:") && !help.contains("COMMAND"), "{help}");
        let cli = Cli::try_parse_from(["punctual-bench", "serve", "--listen", "127.0.0.1:1", "--data", "d"]).unwrap();
        assert!(matches!(cli, Cli { internal: Some(Internal::Serve(_)), bench: None }), "{cli:?}");
        assert_eq!(Cli::try_parse_from(["punctual-bench"]).unwrap_err().exit_code(), 2, "a workload is required");
    }

    #[test]
    fn bench_reads_stores_sizes_and_the_baselines_switch() {
        // Each list starts with the program's name: "bench", as in `punctual bench …`.
        let bench = |args: &[&str]| match Cli::try_parse_from(args) {
            Ok(Cli { bench: Some(args), .. }) => Ok(args),
            Ok(other) => panic!("not bench: {other:?}"),
            Err(e) => Err(e),
        };
        let args = bench(&["bench", "spread"]).unwrap();
        assert_eq!(
            (args.workload, &args.store, args.tasks, args.baselines),
            (Workload::Spread, &BenchStore::Embedded, None, None)
        );
        assert_eq!((args.window.as_secs(), args.duration.as_secs()), (20, 10));
        assert_eq!(
            (args.serve, args.loops, args.lease_max, args.long_poll.as_secs(), args.acks),
            (false, 50, 100, 2, Acks::Batch),
            "the pull loops' defaults"
        );
        let args = bench(&[
            "bench",
            "burst",
            "--serve",
            "--store",
            "private-redis",
            "--loops",
            "4",
            "--lease-max",
            "1000",
            "--long-poll",
            "0s",
            "--acks",
            "each",
        ])
        .unwrap();
        assert_eq!(
            (args.serve, &args.store, args.loops, args.lease_max, args.long_poll.is_zero(), args.acks),
            (true, &BenchStore::PrivateRedis, 4, 1000, true, Acks::Each)
        );
        let args = bench(&[
            "bench",
            "all",
            "--store",
            "redis://127.0.0.1:6400",
            "--tasks",
            "200",
            "--window",
            "1s",
            "--baselines",
        ])
        .unwrap();
        assert_eq!(
            (&args.store, args.tasks, args.window.as_millis(), args.baselines),
            (&BenchStore::Redis("redis://127.0.0.1:6400".into()), Some(200), 1000, Some(true))
        );
        assert_eq!(
            bench(&["bench", "burst", "--store", "private-redis", "--baselines=false"]).unwrap().baselines,
            Some(false)
        );
        let args = bench(&["bench", "scale"]).unwrap();
        assert_eq!((args.primaries, args.servers, args.shards), (None, None, None));
        let args = bench(&["bench", "scale", "--primaries", "1,3", "--servers", "2", "--shards", "32"]).unwrap();
        assert_eq!((args.primaries, args.servers, args.shards), (Some(vec![1, 3]), Some(2), Some(32)));
        assert_eq!(
            bench(&["bench", "pending", "--store", "private-cluster"]).unwrap().store,
            BenchStore::PrivateCluster
        );
        for wrong in [
            &["bench", "spread", "--store", "redis-cluster://a:1"][..],
            &["bench", "spread", "--store", "sqlite"],
            &["bench", "spread", "--window", "0s"],
            &["bench", "spread", "--tasks", "0"],
            &["bench", "sprint"],
            &["bench", "spread", "--server", "http://x", "--store", "private-redis"],
            &["bench", "spread", "--server", "http://x", "--serve"],
            &["bench", "burst", "--serve", "--loops", "0"],
            &["bench", "burst", "--serve", "--loops", "1001"],
            &["bench", "burst", "--serve", "--lease-max", "0"],
            &["bench", "burst", "--serve", "--lease-max", "1001"],
            &["bench", "burst", "--serve", "--long-poll", "61s"],
            &["bench", "burst", "--serve", "--acks", "sometimes"],
            // The pull loops' settings apply over HTTP only.
            &["bench", "burst", "--lease-max", "10"],
            &["bench", "burst", "--long-poll", "1s"],
            &["bench", "burst", "--acks", "each"],
        ] {
            assert_eq!(bench(wrong).unwrap_err().exit_code(), 2, "{wrong:?}");
        }
    }
}
