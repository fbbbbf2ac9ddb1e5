//! `punctual bench` end to end: the real `punctual-bench` binary (which `punctual bench`
//! runs) through every workload at a tiny size, on the embedded store, on a private
//! redis-server with the hand-built baselines and BullMQ's, against a real server over
//! HTTP (`punctual-bench serve`, the server's own code), and against one it starts
//! itself (`--serve`) with the pull loops' flags; `brokers` into the RabbitMQ and NATS
//! this machine runs (CI starts them); `scale` on the Redis Clusters it starts, and
//! `pending` on one (`--store private-cluster`).
//!
//! Guards against the benchmark command rotting: a workload that no longer runs, a
//! target that no longer connects, a figure missing from `--json`, settings that are
//! not the ones asked for, a served server left running, or a run that loses or
//! double-counts tasks (punctual's or BullMQ's). It asserts correctness (every task
//! scheduled fired once, nothing left behind, lags not negative), never speed:
//! benchmarks are not timed tests.
//!
//! The BullMQ baseline needs `node` and `npm ci --prefix bench/bullmq`; its tests run
//! when `bench/bullmq/node_modules` exists, and always in CI (`.ci/run` installs it).

use std::path::Path;
use std::process::{Command, Output};

use punctual_testkit::server::ServerProcess;
use serde_json::Value;

/// The binary built by this package.
const BIN: &str = env!("CARGO_BIN_EXE_punctual-bench");

const TASKS: u64 = 200;
/// The BullMQ program of the source tree, which the binary falls back to.
const BULLMQ_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/bullmq");
const TINY: &[&str] = &["--tasks", "200", "--window", "1s", "--duration", "1s", "--json", "--quiet"];

fn bench(args: &[&str]) -> Output {
    let output = Command::new(BIN)
        .args(args)
        .env_remove("PUNCTUAL_TOKEN")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    assert!(
        output.status.success(),
        "punctual bench {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The reports of a `--json` run, by workload name.
fn reports(args: &[&str]) -> Vec<Value> {
    let output = bench(args);
    let text = String::from_utf8_lossy(&output.stdout);
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("--json is not JSON ({e}):\n{text}"));
    json.as_array().unwrap_or_else(|| panic!("--json is not an array:\n{text}")).clone()
}

fn find<'a>(reports: &'a [Value], workload: &str) -> &'a Value {
    reports.iter().find(|r| r["workload"] == workload).unwrap_or_else(|| panic!("no {workload} in {reports:#?}"))
}

fn number(report: &Value, path: &str) -> f64 {
    let mut value = report;
    for part in path.split('.') {
        value = &value[part];
    }
    value.as_f64().unwrap_or_else(|| panic!("{path} is not a number in {report:#}"))
}

/// Every task fired exactly once, with a sane lag.
fn assert_all_fired_once(report: &Value) {
    assert_eq!(number(report, "fired"), TASKS as f64, "{report:#}");
    assert_eq!(number(report, "lost"), 0.0, "{report:#}");
    assert_eq!(number(report, "duplicates"), 0.0, "{report:#}");
    let lag = &report["lag_ms"];
    assert_eq!(number(lag, "count"), TASKS as f64, "{report:#}");
    assert!(number(lag, "min") >= 0.0, "a task fired before it was due: {report:#}");
    for (lower, higher) in [("min", "p50"), ("p50", "p90"), ("p90", "p99"), ("p99", "p99_9"), ("p99_9", "max")] {
        assert!(number(lag, lower) <= number(lag, higher), "{lower} > {higher}: {report:#}");
    }
}

fn assert_throughput(report: &Value, naive_baseline: bool) {
    let sustained = &report["sustained"];
    let scheduled = number(sustained, "scheduled");
    assert!(scheduled > 0.0, "{report:#}");
    assert_eq!(number(sustained, "fired"), scheduled, "every task scheduled fired: {report:#}");
    assert_eq!(number(sustained, "lost"), 0.0, "{report:#}");
    assert_eq!(number(sustained, "duplicates"), 0.0, "{report:#}");
    assert_eq!(number(sustained, "left_in_store"), 0.0, "every task acknowledged: {report:#}");
    assert!(number(sustained, "completed") > 0.0 && number(sustained, "completed") <= scheduled, "{report:#}");
    for figure in ["sustained.scheduled_per_second", "sustained.completed_per_second"] {
        assert!(number(report, figure) > 0.0, "{figure}: {report:#}");
    }
    assert!(number(report, "schedule_single_per_second") > 0.0, "{report:#}");
    assert!(number(report, "schedule_batch_per_second") > 0.0, "{report:#}");
    let baselines = report["baselines"].as_array().expect("baselines");
    if naive_baseline {
        assert_eq!(baselines.len(), 1, "{report:#}");
        assert!(number(&baselines[0], "per_second") > 0.0, "{report:#}");
    } else {
        assert!(baselines.is_empty(), "{report:#}");
    }
}

#[test]
fn every_workload_runs_on_the_embedded_store() {
    let mut args = vec!["all", "--baselines=false"];
    args.extend(TINY);
    let reports = reports(&args);
    assert_eq!(reports.len(), 4, "{reports:#?}");

    let spread = find(&reports, "spread");
    assert_all_fired_once(spread);
    assert_eq!(number(spread, "window_ms"), 1000.0);
    assert!(spread["baselines"].as_array().is_some_and(Vec::is_empty), "{spread:#}");

    let burst = find(&reports, "burst");
    assert_all_fired_once(burst);
    assert!(number(burst, "tasks_per_second") > 0.0, "{burst:#}");
    assert_eq!(number(burst, "drained_in_ms"), number(&burst["lag_ms"], "max"));

    assert_throughput(find(&reports, "throughput"), true);

    let pending = find(&reports, "pending");
    assert_eq!(number(pending, "tasks"), TASKS as f64);
    assert!(number(pending, "insert_per_second") > 0.0, "{pending:#}");
    assert!(number(pending, "rss_after_kib") > 0.0, "{pending:#}");
    assert!(number(pending, "disk_bytes_per_task") > 0.0, "{pending:#}");
    assert!(number(pending, "disk_bytes_per_task_closed") > 0.0, "{pending:#}");
    assert!(pending["redis_bytes_per_task"].is_null(), "{pending:#}");
    assert!(number(pending, "recovery.start_to_first_fire_ms") > 0.0, "{pending:#}");
    assert!(number(pending, "recovery.rss_kib") > 0.0, "{pending:#}");
}

/// Is the BullMQ baseline installed? Required in CI; elsewhere its tests are skipped
/// with a note when it is not.
fn bullmq_installed() -> bool {
    let installed = Path::new(BULLMQ_DIR).join("node_modules/bullmq").is_dir();
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "{BULLMQ_DIR}/node_modules is missing in CI: .ci/run must run `npm ci` there"
        );
        eprintln!("note: the BullMQ baseline is not installed (npm ci --prefix bench/bullmq): its checks are skipped");
    }
    installed
}

fn assert_redis_server_installed() {
    let installed =
        Command::new("sh").args(["-c", "command -v redis-server"]).output().is_ok_and(|o| o.status.success());
    assert!(
        installed,
        "redis-server is not installed; install it (Debian: apt-get install redis-server) to run this test"
    );
}

#[test]
fn spread_on_a_private_redis_runs_beside_the_seeds_baselines() {
    assert_redis_server_installed();
    // --baselines demands every baseline, BullMQ's too; without it, those at hand run.
    let mut args = vec!["spread", "--store", "private-redis"];
    let bullmq = bullmq_installed();
    if bullmq {
        args.push("--baselines");
    }
    args.extend(TINY);
    let reports = reports(&args);
    let spread = find(&reports, "spread");
    assert_all_fired_once(spread);
    // Redis' CPU across the scheduling, and across the whole run (more).
    let (schedule, together) =
        (number(spread, "redis_cpu_us_per_task.schedule"), number(spread, "redis_cpu_us_per_task.together"));
    assert!(schedule > 0.0 && together > schedule, "{spread:#}");
    let baselines = spread["baselines"].as_array().expect("baselines");
    let names: Vec<&str> = baselines.iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(names, ["keyspace_notifications", "zset_poller_1s"], "{spread:#}");
    for baseline in baselines {
        let fired = number(&baseline["lag_ms"], "count");
        assert_eq!(fired + number(baseline, "missing"), TASKS as f64, "{baseline:#}");
        assert!(fired > 0.0, "{baseline:#}");
        assert!(number(&baseline["lag_ms"], "min") >= 0.0, "{baseline:#}");
        assert!(number(baseline, "ratio_p50") > 0.0, "{baseline:#}");
    }
    // The poller loses nothing: it only comes late.
    assert_eq!(number(&baselines[1], "missing"), 0.0, "{spread:#}");
    if bullmq {
        assert_bullmq_processed_all(spread);
    } else {
        assert!(spread["notes"].to_string().contains("BullMQ baseline skipped"), "{spread:#}");
    }
}

#[test]
fn spread_burst_and_throughput_run_against_a_server_over_http() {
    let server = start_server();
    let url = server.url();
    let mut args = vec!["all", "--server", &url, "--baselines=false"];
    args.extend(TINY);
    let reports = reports(&args);
    assert_eq!(reports.len(), 3, "pending runs in process only: {reports:#?}");
    assert_all_fired_once(find(&reports, "spread"));
    assert_all_fired_once(find(&reports, "burst"));
    assert_throughput(find(&reports, "throughput"), false);
}

/// A server of this binary (`punctual-bench serve`), as a user's `punctual serve`;
/// panics with its output if it does not start.
fn start_server() -> ServerProcess {
    ServerProcess::start(BIN).unwrap_or_else(|e| panic!("{e}"))
}

/// The `served` server's address, from a report's target ("punctual serve at URL (…").
fn served_url(report: &Value) -> String {
    let target = report["target"].as_str().unwrap_or_default();
    let url = target.strip_prefix("punctual serve at ").and_then(|t| t.split(' ').next());
    url.unwrap_or_else(|| panic!("no served URL in {report:#}")).to_owned()
}

/// Nothing answers at `url` any more: the served server was stopped.
fn assert_stopped(url: &str) {
    let addr = url.trim_start_matches("http://");
    assert!(std::net::TcpStream::connect(addr).is_err(), "punctual serve at {url} is still running after the bench");
}

#[test]
fn burst_over_http_on_a_server_it_starts_is_one_command() {
    let reports = reports(&["burst", "--serve", "--tasks", "200", "--loops", "4", "--json", "--quiet"]);
    let burst = find(&reports, "burst");
    assert_all_fired_once(burst);
    assert!(burst["target"].as_str().is_some_and(|t| t.contains("on the embedded store")), "{burst:#}");
    let consumer = &burst["consumer"];
    assert_eq!(consumer["kind"], "http_pull", "{burst:#}");
    assert_eq!(
        (number(consumer, "loops"), number(consumer, "lease_max"), number(consumer, "long_poll_ms")),
        (4.0, 100.0, 2000.0),
        "the settings used: {burst:#}"
    );
    assert_eq!(consumer["acks"], "batch", "{burst:#}");
    assert_stopped(&served_url(burst));
}

#[test]
fn pull_loops_that_ack_each_task_on_a_served_redis() {
    assert_redis_server_installed();
    let args = [
        "spread",
        "--serve",
        "--store",
        "private-redis",
        "--loops",
        "2",
        "--lease-max",
        "10",
        "--long-poll",
        "500ms",
        "--acks",
        "each",
        "--baselines=false",
    ];
    let mut all = args.to_vec();
    all.extend(TINY);
    let reports = reports(&all);
    let spread = find(&reports, "spread");
    assert_all_fired_once(spread);
    assert!(spread["target"].as_str().is_some_and(|t| t.contains("private redis-server")), "{spread:#}");
    let consumer = &spread["consumer"];
    assert_eq!((number(consumer, "loops"), number(consumer, "lease_max")), (2.0, 10.0), "{spread:#}");
    assert_eq!((number(consumer, "long_poll_ms"), &consumer["acks"]), (500.0, &Value::from("each")), "{spread:#}");
    assert!(spread["bullmq"].is_null(), "--baselines=false: {spread:#}");
    assert_stopped(&served_url(spread));
}

/// RabbitMQ and NATS answer on their default ports (CI starts them; `.ci/run`).
fn assert_brokers_running() {
    for (name, addr) in [("RabbitMQ", "127.0.0.1:5672"), ("NATS", "127.0.0.1:4222")] {
        assert!(
            std::net::TcpStream::connect(addr).is_ok(),
            "{name} is not running on {addr}; start it (see .ci/run) to run this test"
        );
    }
}

/// A lateness of the delays' comparison: every message once, none early.
fn assert_all_received_late_or_on_time(lateness: &Value, messages: f64) {
    assert_eq!(number(lateness, "received"), messages, "{lateness:#}");
    assert_eq!((number(lateness, "lost"), number(lateness, "duplicates")), (0.0, 0.0), "{lateness:#}");
    assert_eq!(number(lateness, "unreadable"), 0.0, "{lateness:#}");
    let l = &lateness["lateness_ms"];
    assert!(number(l, "min") >= 0.0, "a message came out before it was due: {lateness:#}");
    assert!(number(l, "p50") <= number(l, "p99") && number(l, "p99") <= number(l, "max"), "{lateness:#}");
    assert!(number(lateness, "over_1s_late") <= messages, "{lateness:#}");
}

#[test]
fn brokers_receive_every_task_once_from_punctuals_actions() {
    assert_brokers_running();
    let reports = reports(&["brokers", "--tasks", "200", "--delays", "100", "--window", "2s", "--json", "--quiet"]);
    assert_eq!(reports.len(), 1, "{reports:#?}");
    let brokers = find(&reports, "brokers");
    for broker in ["rabbitmq", "nats"] {
        let burst = &brokers[broker];
        assert_eq!(burst["broker"], broker, "{brokers:#}");
        assert_eq!(number(burst, "received"), TASKS as f64, "every task arrived: {brokers:#}");
        assert_eq!((number(burst, "lost"), number(burst, "duplicates")), (0.0, 0.0), "{brokers:#}");
        assert_eq!(number(burst, "unreadable"), 0.0, "every message had its headers: {brokers:#}");
        let lag = &burst["lag_ms"];
        assert!(number(lag, "min") >= 0.0, "a message was published before it was due: {brokers:#}");
        assert_eq!(number(burst, "drained_in_ms"), number(lag, "max"), "{brokers:#}");
        assert!(number(burst, "messages_per_second") > 0.0, "{brokers:#}");
    }
    let delays = &brokers["delays"];
    assert_eq!((number(delays, "messages"), number(delays, "window_ms")), (100.0, 2000.0), "{brokers:#}");
    assert_all_received_late_or_on_time(&delays["ttl_dead_letter"], 100.0);
    assert_all_received_late_or_on_time(&delays["punctual"], 100.0);
    assert!(number(delays, "ttl_over_punctual.p99") > 0.0, "{brokers:#}");
    assert!(brokers["notes"].as_array().is_some_and(Vec::is_empty), "{brokers:#}");
    assert_stopped(&served_url(brokers));
}

/// BullMQ's figures of a report: every job processed once.
fn assert_bullmq_processed_all(report: &Value) -> &Value {
    let bullmq = &report["bullmq"];
    assert_eq!(bullmq["version"], "6.7.0", "{report:#}");
    assert_eq!(number(bullmq, "fired"), TASKS as f64, "{report:#}");
    assert_eq!((number(bullmq, "lost"), number(bullmq, "duplicates")), (0.0, 0.0), "{report:#}");
    assert!(number(bullmq, "lag_ms.min") >= 0.0, "a job ran before it was due: {report:#}");
    bullmq
}

#[test]
fn bullmq_runs_beside_every_workload() {
    assert_redis_server_installed();
    if !bullmq_installed() {
        return;
    }
    let mut args = vec!["all", "--store", "private-redis", "--baselines", "--loops", "8"];
    args.extend(TINY);
    let reports = reports(&args);

    let burst = find(&reports, "burst");
    let bullmq = assert_bullmq_processed_all(burst);
    assert_eq!(number(bullmq, "concurrency"), 8.0, "BullMQ's Worker has --loops slots: {burst:#}");
    assert!(number(bullmq, "tasks_per_second") > 0.0, "{burst:#}");
    assert!(number(bullmq, "punctual_over_bullmq.drained_in") > 0.0, "{burst:#}");

    let spread = find(&reports, "spread");
    assert_bullmq_processed_all(spread);
    assert!(number(spread, "bullmq.punctual_over_bullmq.p99") > 0.0, "{spread:#}");

    let throughput = find(&reports, "throughput");
    let bullmq = &throughput["bullmq"];
    let scheduled = number(bullmq, "scheduled");
    assert!(scheduled > 0.0 && number(bullmq, "completed") > 0.0, "{throughput:#}");
    assert_eq!(number(bullmq, "fired"), scheduled, "every job added was processed: {throughput:#}");
    assert_eq!((number(bullmq, "lost"), number(bullmq, "duplicates")), (0.0, 0.0), "{throughput:#}");
    assert_eq!(number(bullmq, "left_in_queue"), 0.0, "{throughput:#}");
    assert!(number(throughput, "bullmq.punctual_over_bullmq.completed_per_second") > 0.0, "{throughput:#}");

    let pending = find(&reports, "pending");
    let bullmq = &pending["bullmq"];
    assert_eq!(number(bullmq, "delayed"), TASKS as f64, "{pending:#}");
    assert!(number(bullmq, "redis_bytes_per_task") > 0.0, "{pending:#}");
    assert!(number(pending, "bullmq.punctual_over_bullmq.bytes_per_task") > 0.0, "{pending:#}");
}

#[test]
fn without_json_each_workload_prints_a_table() {
    let output = bench(&["burst", "--tasks", "50", "--quiet"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("burst: 50 tasks due at one instant"), "{text}");
    assert!(text.contains("drained in (due → last fired)"), "{text}");
    assert!(text.contains("50 of 50"), "{text}");
    if bullmq_installed() {
        assert!(text.contains("BULLMQ 6.7.0") && text.contains("PUNCTUAL / BULLMQ"), "BullMQ's column: {text}");
    } else {
        assert!(text.contains("note: BullMQ baseline skipped"), "{text}");
    }
}

#[test]
fn mistakes_say_what_to_do() {
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    for (args, code, says) in [
        (&["pending", "--server", "http://127.0.0.1:9"][..], 1, "run it without --server"),
        (&["pending", "--serve"], 1, "run it without --serve"),
        (&["spread", "--store", "mysql://x"], 2, "use embedded, redis://HOST:PORT, private-redis or private-cluster"),
        (&["spread", "--store", "private-cluster"], 1, "private-cluster is for pending"),
        (&["pending", "--store", "private-cluster", "--primaries", "1,2"], 1, "give --primaries one count"),
        (&["pending", "--primaries", "2"], 1, "--primaries is for scale, and for pending on --store private-cluster"),
        (&["spread", "--store", "rediss-cluster://h:1"], 2, "run punctual serve --store rediss-cluster://"),
        (&["spread", "--store", "redis-sentinel://h:1/m"], 2, "run punctual serve --store redis-sentinel://"),
        (&["burst", "--serve", "--server", "http://127.0.0.1:9"], 2, "cannot be used with"),
        (&["burst", "--serve", "--loops", "0"], 2, "0 is not in 1..=1000"),
        (&["burst", "--serve", "--loops", "1001"], 2, "1001 is not in 1..=1000"),
        (&["burst", "--serve", "--lease-max", "1001"], 2, "1001 is not in 1..=1000"),
        (&["burst", "--serve", "--long-poll", "61s"], 2, "waits at most 60s"),
        (&["burst", "--serve", "--acks", "sometimes"], 2, "possible values: batch, each"),
        (&["burst", "--lease-max", "10"], 2, "--serve"),
        (&["burst", "--bullmq", "/nonexistent"], 1, "no bench.mjs"),
        (&["brokers", "--server", "http://127.0.0.1:9"], 1, "run it without --server"),
        (&["brokers", "--delays", "0"], 2, "0 is not in 1..=10000000"),
        (&["soak", "--server", "http://127.0.0.1:9"], 1, "cannot run against --server"),
        (&["scale", "--server", "http://127.0.0.1:9"], 1, "run it without --server"),
        (&["scale", "--store", "private-redis"], 1, "run it without --store"),
        (&["scale", "--primaries", "1,0"], 2, "0 is not in 1..=64"),
        (&["scale", "--servers", "65"], 2, "65 is not in 1..=64"),
    ] {
        let output = run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} should say '{says}': {stderr}");
    }
}

/// `soak` at a tiny size: 20 s of load, the server killed with `kill -9` every 5 s and
/// restarted on the same embedded store. Nothing acknowledged may be lost, nothing
/// cancelled may fire, and every duplicate must be explained by an ack left unconfirmed
/// (at-least-once); the report carries its per-minute rows and the kills.
#[test]
fn soak_kills_the_server_and_loses_nothing_acknowledged() {
    let reports = reports(&["soak", "--duration", "20s", "--kill-every", "5s", "--rate", "50", "--json", "--quiet"]);
    let soak = find(&reports, "soak");
    eprintln!(
        "soak 20s/5s: scheduled {}, leases {}, kills {}, lost {}, duplicates {}, lag p99 {} ms",
        soak["scheduled"],
        soak["leases"],
        soak["kill_count"],
        soak["lost"],
        soak["duplicates"]["total"],
        soak["lag"]["p99"]
    );
    assert_eq!(number(soak, "lost"), 0.0, "{soak:#}");
    assert_eq!(number(soak, "fired_after_cancel"), 0.0, "{soak:#}");
    assert_eq!(number(soak, "duplicates.unexplained"), 0.0, "{soak:#}");
    assert_eq!(number(soak, "kill_count"), 4.0, "kills at 5, 10, 15 and 20 s: {soak:#}");
    let kills = soak["kills"].as_array().expect("kills");
    assert_eq!(kills.len(), 4, "{soak:#}");
    assert!(kills.iter().all(|k| number(k, "rss_before_kib") > 0.0), "memory read before each kill: {soak:#}");
    let scheduled = number(soak, "scheduled");
    assert!(scheduled > 0.0, "{soak:#}");
    assert_eq!(
        number(soak, "delivered") + number(soak, "still_present"),
        scheduled - number(soak, "one_off_cancelled"),
        "every acknowledged one-off task not cancelled was delivered or is still stored: {soak:#}"
    );
    assert!(number(soak, "repeat_occurrences") > number(soak, "repeating"), "repeating tasks fired again: {soak:#}");
    let minutes = soak["minutes"].as_array().expect("minutes");
    assert!(!minutes.is_empty(), "{soak:#}");
    assert_eq!(number(&minutes[0], "minute"), 0.0, "{soak:#}");
    assert!(number(&minutes[0], "rss_kib") > 0.0, "{soak:#}");
    assert_eq!(number(&minutes[0], "kills"), 4.0, "{soak:#}");
    let leases: f64 = minutes.iter().map(|m| number(m, "leases")).sum();
    assert_eq!(leases, number(soak, "leases"), "every lease in one minute's row: {soak:#}");
    assert!(number(&minutes[0], "lag_p50_ms") <= number(&minutes[0], "lag_p99_ms"), "{soak:#}");
}

/// `scale` at a tiny size: Clusters of 1 and 2 primaries, 2 s measured on each. A row
/// per size with one server per primary, every server acknowledging tasks and every
/// node working and holding keys, nothing lost or fired twice, and the efficiency
/// measured against 1 primary.
#[test]
fn scale_measures_each_cluster_size_and_loses_nothing() {
    assert_redis_server_installed();
    let reports = reports(&["scale", "--primaries", "1,2", "--duration", "2s", "--json", "--quiet"]);
    let scale = find(&reports, "scale");
    assert_eq!((number(scale, "shards"), number(scale, "duration_ms")), (16.0, 2000.0), "{scale:#}");
    let clusters = scale["clusters"].as_array().expect("clusters");
    let sizes: Vec<f64> = clusters.iter().map(|c| number(c, "primaries")).collect();
    assert_eq!(sizes, [1.0, 2.0], "{scale:#}");
    for cluster in clusters {
        let primaries = number(cluster, "primaries");
        assert!(number(cluster, "completed_per_second") > 0.0, "{scale:#}");
        assert!(number(cluster, "efficiency") > 0.0, "{scale:#}");
        assert!(number(cluster, "redis_cpu_us_per_task") > 0.0, "{scale:#}");
        assert_eq!((number(cluster, "lost"), number(cluster, "duplicates")), (0.0, 0.0), "{scale:#}");
        let servers = cluster["servers"].as_array().expect("servers");
        assert_eq!(servers.len() as f64, primaries, "one server per primary by default: {scale:#}");
        for server in servers {
            assert!(number(server, "completed_per_second") > 0.0, "{scale:#}");
            assert_eq!(number(server, "fired"), number(server, "scheduled"), "every task fired: {scale:#}");
            assert_eq!(number(server, "left_in_store"), 0.0, "every task acknowledged: {scale:#}");
        }
        let nodes = cluster["nodes"].as_array().expect("nodes");
        assert_eq!(nodes.len() as f64, primaries, "{scale:#}");
        for node in nodes {
            assert!(number(node, "cpu_percent") > 0.0 && number(node, "keys") > 0.0, "{scale:#}");
        }
    }
    assert_eq!(number(&clusters[0], "efficiency"), 1.0, "1 primary against itself: {scale:#}");
}

/// `pending` on a private Cluster of 2 primaries: Redis memory per task summed over
/// the nodes and given per node (both holding a share: the queue's shards spread over
/// the primaries), and a new server's start to its first fire with the tasks stored.
#[test]
fn pending_on_a_private_cluster_reports_every_node_and_a_new_servers_first_fire() {
    assert_redis_server_installed();
    let reports = reports(&[
        "pending",
        "--store",
        "private-cluster",
        "--primaries",
        "2",
        "--tasks",
        "20000",
        "--baselines=false",
        "--json",
        "--quiet",
    ]);
    let pending = find(&reports, "pending");
    assert_eq!(number(pending, "tasks"), 20_000.0, "{pending:#}");
    let per_task = number(pending, "redis_bytes_per_task");
    assert!((50.0..=1000.0).contains(&per_task), "implausible bytes per task: {pending:#}");
    let nodes = pending["cluster_nodes"].as_array().expect("cluster_nodes");
    assert_eq!(nodes.len(), 2, "{pending:#}");
    for node in nodes {
        assert!(number(node, "bytes_per_task") > 0.0, "every primary holds tasks: {pending:#}");
    }
    let summed: f64 = nodes.iter().map(|node| number(node, "bytes_per_task")).sum();
    assert!((summed - per_task).abs() < 1e-6 * per_task, "the nodes add up to the total: {pending:#}");
    assert_eq!(pending["recovery"]["server"], "new", "{pending:#}");
    assert!(number(pending, "recovery.start_to_first_fire_ms") > 0.0, "{pending:#}");
}
