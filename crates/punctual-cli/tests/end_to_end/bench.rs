//! `punctual bench` end to end: the real binary through every workload at a tiny size,
//! on the embedded store, on a private redis-server with the seeds' baselines, and
//! against a real `punctual serve` over HTTP.
//!
//! Guards against the benchmark command rotting: a workload that no longer runs, a
//! target that no longer connects, a figure missing from `--json`, or a run that loses
//! or double-counts tasks. It asserts correctness (every task scheduled fired once,
//! nothing left behind, lags not negative), never speed: benchmarks are not timed tests.

use crate::common;

use std::process::{Command, Output};

use common::{BIN, start_server};
use serde_json::Value;

const TASKS: u64 = 200;
const TINY: &[&str] = &["--tasks", "200", "--window", "1s", "--duration", "1s", "--json", "--quiet"];

fn bench(args: &[&str]) -> Output {
    let output = Command::new(BIN)
        .arg("bench")
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

#[test]
fn spread_on_a_private_redis_runs_beside_the_seeds_baselines() {
    let installed =
        Command::new("sh").args(["-c", "command -v redis-server"]).output().is_ok_and(|o| o.status.success());
    assert!(
        installed,
        "redis-server is not installed; install it (Debian: apt-get install redis-server) to run this test"
    );
    let mut args = vec!["spread", "--store", "private-redis", "--baselines"];
    args.extend(TINY);
    let reports = reports(&args);
    let spread = find(&reports, "spread");
    assert_all_fired_once(spread);
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

#[test]
fn without_json_each_workload_prints_a_table() {
    let output = bench(&["burst", "--tasks", "50", "--quiet"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("burst: 50 tasks due at one instant"), "{text}");
    assert!(text.contains("drained in (due → last fired)"), "{text}");
    assert!(text.contains("50 of 50"), "{text}");
}

#[test]
fn mistakes_say_what_to_do() {
    let output = Command::new(BIN).args(["bench", "pending", "--server", "http://127.0.0.1:9"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("run it without --server"), "{output:?}");
    let output = Command::new(BIN).args(["bench", "spread", "--store", "mysql://x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("use embedded, redis://HOST:PORT or private-redis"));
}
