//! Memory stays small however many tasks wait on disk.
//!
//! Guards against the embedded store or the engine holding per-task state in memory
//! (an in-memory index of every pending task, a page cache without a cap, a dispatcher
//! or reaper that loads the whole queue, a restart that reads every task back), and
//! against a restart whose cost grows with the number of tasks on disk.
//!
//! The binary is its own child (`harness = false`), so what is measured is a fresh
//! process's own resident memory (`VmRSS`, and the peak `VmHWM`, from
//! `/proc/self/status`):
//!
//! 1. `fill` opens a store in a temporary directory, schedules 1,000,000 tasks due in
//!    30 days with `schedule_many` in batches of 10,000, starts a worker on that queue,
//!    waits for a probe task due now to fire (so the timer and dispatcher have run),
//!    prints its memory and is killed with SIGKILL.
//! 2. `reopen` opens the same directory (1,000,000 tasks on disk, after a kill),
//!    starts engine and worker, schedules one task due in 200 ms, waits for it to
//!    fire, prints its memory and the time from process start to that fire, and shuts
//!    down cleanly.
//!
//! The parent checks both processes stay under their bounds ([`FILL_BOUND_KIB`],
//! [`REOPEN_BOUND_KIB`]), that the inserting process's peak does not grow from 100,000
//! to 1,000,000 pending tasks ([`FILL_GROWTH_BOUND_KIB`]), that the million tasks are
//! all still there after the kill, and prints the figures for BENCHMARKS.md.
//!
//! Run: `cargo test -p punctual --test memory_bound`.

// Measuring elapsed time is what this test does; the engine under test still takes all
// its time from its own clock.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use punctual::{BoxError, Delivery, Engine, EngineConfig, Event, Outcome, SqliteStore, Store, TaskSpec, Worker};
use punctual_testkit::child::{self, ChildProcess};
use serde_json::json;

/// Set (to the child's role) in the environment of a child process.
const CHILD_ENV: &str = "PUNCTUAL_MEMORY_CHILD";

const QUEUE: &str = "memory.far";
const TASKS: usize = 1_000_000;
const BATCH: usize = 10_000;
/// Far enough that none of the million falls due while the test runs.
const FAR: Duration = Duration::from_secs(30 * 24 * 3600);
/// The task the reopened process waits for.
const FIRST_FIRE_AFTER: Duration = Duration::from_millis(200);

/// The inserting process's peak resident memory must stay under this. Measured on a
/// 2-core Linux box in the dev profile: 34 MiB (any number of tokio workers), flat
/// from 100,000 pending tasks on. It is the cost of one batch of 10,000 in flight (the
/// caller's items and the answers, each JSON payload a `BTreeMap` node of ~640 bytes)
/// plus SQLite's page cache, capped at 8 MiB per connection. Before the store stopped
/// reading every written row back it was 46–52 MiB, which this bound also admits: it
/// is meant to catch per-task state (a million tasks in memory take hundreds of MiB),
/// not a few MiB more per batch. ~1.9× margin.
const FILL_BOUND_KIB: u64 = 64 * 1024;
/// How much the inserting process's peak may grow between 100,000 and 1,000,000 tasks
/// pending: measured under 0.1 MiB. Holding even 10 bytes per pending task in memory
/// would add 9 MiB.
const FILL_GROWTH_BOUND_KIB: u64 = 8 * 1024;
/// The reopened process's peak (1,000,000 tasks on disk, one fired): measured ~7 MiB.
/// ~4.5× margin, room for SQLite's 8 MiB cache to fill; an engine or store that loaded
/// the pending tasks at start would need far more.
const REOPEN_BOUND_KIB: u64 = 32 * 1024;
/// Tasks pending when the inserting process takes its first memory reading.
const EARLY_READING_AT: usize = 100_000;

/// How long each child may take to report: a guard against a hang, not a speed bound
/// (in the dev profile on a 2-core machine that other builds loaded to 9, the fill
/// took 98 s, and one such run passed 110 s).
const FILL_TIMEOUT: Duration = Duration::from_secs(300);
const REOPEN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a probe task may take to fire once due.
const FIRE_TIMEOUT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    if let Some(code) = child::run_unless_parent("memory_bound", CHILD_ENV, child_main) {
        return code;
    }
    match parent() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memory_bound FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------
// The children.
// ---------------------------------------------------------------------------------

fn child_main(role: &str) -> Result<()> {
    let started = Instant::now();
    child::exit_when_stdin_closes();
    let dir = child::dir_argument()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        match role {
            "fill" => child_fill(&dir).await,
            "reopen" => child_reopen(&dir, started).await,
            other => bail!("unknown role '{other}'"),
        }
    })
}

/// A worker on [`QUEUE`] whose handler reports each fired key on the channel.
fn start_worker(
    engine: &Engine<SqliteStore>,
) -> Result<(punctual::RunningWorker, tokio::sync::mpsc::UnboundedReceiver<String>)> {
    let (sender, fired) = tokio::sync::mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle(QUEUE, move |delivery: Delivery| {
            let sender = sender.clone();
            async move {
                let _ = sender.send(delivery.task.key.to_string());
                Ok::<_, BoxError>(Outcome::Done)
            }
        })
        .start()?;
    Ok((worker, fired))
}

async fn wait_fired(fired: &mut tokio::sync::mpsc::UnboundedReceiver<String>, key: &str) -> Result<()> {
    match tokio::time::timeout(FIRE_TIMEOUT, fired.recv()).await {
        Ok(Some(got)) if got == key => Ok(()),
        Ok(Some(other)) => bail!("'{other}' fired, but only '{key}' was due"),
        Ok(None) => bail!("the worker stopped"),
        Err(_) => bail!("'{key}' did not fire within {FIRE_TIMEOUT:?}"),
    }
}

async fn child_fill(dir: &Path) -> Result<()> {
    let engine = Engine::start(SqliteStore::open(dir)?, EngineConfig::default());
    let inserting = Instant::now();
    let mut early = None;
    for first in (0..TASKS).step_by(BATCH) {
        let items = (first..first + BATCH)
            .map(|n| (format!("order-{n:07}"), TaskSpec::after(FAR).payload(json!({ "order_id": n }))))
            .collect();
        for result in engine.schedule_many(QUEUE, items).await? {
            result?;
        }
        if first + BATCH == EARLY_READING_AT {
            early = Some(Memory::read()?);
        }
    }
    let early = early.context("no early memory reading")?;
    let insert_ms = inserting.elapsed().as_millis();
    let (_worker, mut fired) = start_worker(&engine)?;
    let mut events = engine.subscribe();
    engine.schedule(QUEUE, "probe-fill", TaskSpec::now()).await?;
    wait_fired(&mut fired, "probe-fill").await?;
    // Measured once the probe's ack committed, so the reading includes no work in flight.
    events
        .wait_for(FIRE_TIMEOUT, |event| match event {
            Event::Completed { key, .. } if key.as_str() == "probe-fill" => Some(()),
            _ => None,
        })
        .await
        .context("the probe's ack did not commit")?;
    let memory = Memory::read()?;
    println!(
        "fill rss_kib={} hwm_kib={} early_hwm_kib={} insert_ms={insert_ms}",
        memory.rss_kib, memory.hwm_kib, early.hwm_kib
    );
    // Killed here by the parent.
    std::future::pending::<()>().await;
    Ok(())
}

async fn child_reopen(dir: &Path, started: Instant) -> Result<()> {
    let engine = Engine::start(SqliteStore::open(dir)?, EngineConfig::default());
    let (worker, mut fired) = start_worker(&engine)?;
    let open_ms = started.elapsed().as_millis();
    engine.schedule(QUEUE, "probe-reopen", TaskSpec::after(FIRST_FIRE_AFTER)).await?;
    wait_fired(&mut fired, "probe-reopen").await?;
    let first_fire_ms = started.elapsed().as_millis();
    let memory = Memory::read()?;
    println!(
        "reopen rss_kib={} hwm_kib={} open_ms={open_ms} first_fire_ms={first_fire_ms}",
        memory.rss_kib, memory.hwm_kib
    );
    worker.shutdown().await;
    engine.shutdown().await?;
    Ok(())
}

/// This process's resident memory, from `/proc/self/status`.
struct Memory {
    rss_kib: u64,
    hwm_kib: u64,
}

impl Memory {
    fn read() -> Result<Memory> {
        let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
        let field = |name: &str| -> Result<u64> {
            let line = status.lines().find(|line| line.starts_with(name)).with_context(|| format!("no {name}"))?;
            let kib = line[name.len()..].trim().trim_end_matches("kB").trim();
            kib.parse().with_context(|| format!("cannot read '{line}'"))
        };
        Ok(Memory { rss_kib: field("VmRSS:")?, hwm_kib: field("VmHWM:")? })
    }
}

// ---------------------------------------------------------------------------------
// The parent.
// ---------------------------------------------------------------------------------

/// The child's report: the `key=value` pairs of its first line starting with `role`.
fn report(child: &mut ChildProcess, role: &str, timeout: Duration) -> Result<HashMap<String, u64>> {
    let line = match child.recv_line(timeout) {
        Ok(line) => line,
        Err(_) => bail!("the {role} child did not report within {timeout:?}: {}", child.status()),
    };
    let fields = line.strip_prefix(role).with_context(|| format!("unexpected line from the child: '{line}'"))?;
    fields
        .split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=').with_context(|| format!("bad field '{pair}'"))?;
            Ok((name.to_owned(), value.parse().with_context(|| format!("bad value in '{pair}'"))?))
        })
        .collect()
}

fn field(report: &HashMap<String, u64>, name: &str) -> Result<u64> {
    report.get(name).copied().with_context(|| format!("the child's report has no {name}"))
}

fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        total += entry?.metadata()?.len();
    }
    Ok(total)
}

/// The size of SQLite's write-ahead log in `dir` (0 when there is none).
fn wal_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().ends_with("-wal") {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn parent() -> Result<()> {
    let started = Instant::now();
    let dir = tempfile::tempdir()?;

    let mut fill = ChildProcess::spawn(CHILD_ENV, "fill", dir.path())?;
    let filled = report(&mut fill, "fill", FILL_TIMEOUT)?;
    fill.kill()?;
    drop(fill);
    let disk_at_kill = dir_bytes(dir.path())?;
    let wal_at_kill = wal_bytes(dir.path())?;

    let spawned = Instant::now();
    let mut reopen = ChildProcess::spawn(CHILD_ENV, "reopen", dir.path())?;
    let reopened = report(&mut reopen, "reopen", REOPEN_TIMEOUT)?;
    let fire_seen_by_parent = spawned.elapsed();
    reopen.wait_exit(REOPEN_TIMEOUT)?;
    drop(reopen);

    let disk = dir_bytes(dir.path())?;
    let runtime = tokio::runtime::Runtime::new()?;
    let stats = runtime.block_on(async {
        let store = SqliteStore::open(dir.path())?;
        let stats = store.stats(Some(&punctual::QueueName::new(QUEUE)?)).await?;
        store.close().await?;
        anyhow::Ok(stats)
    })?;
    let counts: Vec<(u64, u64, u64)> = stats.iter().map(|s| (s.scheduled, s.leased, s.dead)).collect();

    let insert_ms = field(&filled, "insert_ms")?;
    let (fill_rss, fill_hwm) = (field(&filled, "rss_kib")?, field(&filled, "hwm_kib")?);
    let fill_early_hwm = field(&filled, "early_hwm_kib")?;
    let (reopen_rss, reopen_hwm) = (field(&reopened, "rss_kib")?, field(&reopened, "hwm_kib")?);
    let (open_ms, first_fire_ms) = (field(&reopened, "open_ms")?, field(&reopened, "first_fire_ms")?);
    println!(
        "memory_bound: inserted {TASKS} tasks in {:.1} s ({:.0} tasks/s, batches of {BATCH})",
        insert_ms as f64 / 1000.0,
        TASKS as f64 / (insert_ms.max(1) as f64 / 1000.0)
    );
    println!(
        "memory_bound: disk {:.1} MiB for {TASKS} pending tasks = {:.0} bytes per task (after a clean close; \
         {:.1} MiB at the kill, of which WAL {:.1} MiB)",
        mib(disk / 1024),
        disk as f64 / TASKS as f64,
        mib(disk_at_kill / 1024),
        mib(wal_at_kill / 1024)
    );
    println!(
        "memory_bound: inserting process (1M inserted, worker idle): RSS {:.1} MiB, peak {:.1} MiB \
         (peak {:.1} MiB when {EARLY_READING_AT} were pending)",
        mib(fill_rss),
        mib(fill_hwm),
        mib(fill_early_hwm)
    );
    println!(
        "memory_bound: reopened after kill -9 (1M on disk): RSS {:.1} MiB, peak {:.1} MiB; engine and worker up \
         {open_ms} ms after process start; first fire {first_fire_ms} ms after process start (task due \
         {} ms after it was scheduled; {} ms from spawn as seen by the parent)",
        mib(reopen_rss),
        mib(reopen_hwm),
        FIRST_FIRE_AFTER.as_millis(),
        fire_seen_by_parent.as_millis()
    );
    println!(
        "memory_bound: bounds: inserting {:.0} MiB (growth 100k→1M {:.0} MiB), reopened {:.0} MiB; ran in {:.1} s",
        mib(FILL_BOUND_KIB),
        mib(FILL_GROWTH_BOUND_KIB),
        mib(REOPEN_BOUND_KIB),
        started.elapsed().as_secs_f64()
    );

    ensure!(
        counts == [(TASKS as u64, 0, 0)],
        "after the kill and the restart the queue should hold exactly {TASKS} scheduled tasks; \
         (scheduled, leased, dead) = {counts:?}"
    );
    for (what, kib, bound) in [
        ("the inserting process's RSS", fill_rss, FILL_BOUND_KIB),
        ("the inserting process's peak RSS", fill_hwm, FILL_BOUND_KIB),
        ("the reopened process's RSS", reopen_rss, REOPEN_BOUND_KIB),
        ("the reopened process's peak RSS", reopen_hwm, REOPEN_BOUND_KIB),
    ] {
        ensure!(
            kib < bound,
            "{what} is {:.1} MiB, over the bound of {:.0} MiB: something holds per-task state in memory",
            mib(kib),
            mib(bound)
        );
    }
    let growth = fill_hwm.saturating_sub(fill_early_hwm);
    ensure!(
        growth < FILL_GROWTH_BOUND_KIB,
        "the inserting process's peak RSS grew by {:.1} MiB between {EARLY_READING_AT} and {TASKS} pending tasks \
         (bound {:.0} MiB): memory grows with the number of tasks waiting on disk",
        mib(growth),
        mib(FILL_GROWTH_BOUND_KIB)
    );
    Ok(())
}
