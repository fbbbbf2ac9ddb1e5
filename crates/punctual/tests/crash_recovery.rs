//! Crash safety with real processes and a real `kill -9`.
//!
//! Guards against losing acknowledged work when the process dies at an arbitrary
//! moment: a schedule call answered before its transaction was durable, a batch
//! written half (not atomically), a group commit that answers early, a leased task
//! deleted before its handler ran, leases of a dead process that are never reaped
//! after restart, or a directory lock that outlives its process.
//!
//! The binary is its own child (`harness = false`): with `PUNCTUAL_CRASH_CHILD` set
//! it runs one scenario against the data directory named by its argument and prints a
//! line per acknowledged write; otherwise it is the parent, which spawns itself, reads
//! those lines, sends SIGKILL at a random moment, reopens the directory and checks that
//! everything acknowledged is there. Scenarios:
//!
//! - `singles`: 32 tokio tasks each call `engine.schedule` in a loop; every printed key
//!   must be found after the kill, payload intact.
//! - `batches`: 4 loops call `engine.schedule_many` with 1,000 tasks each; every
//!   acknowledged batch is wholly present, the batch in flight is all or nothing.
//! - `handlers`: a worker runs tasks due now and is killed mid-run; after restart the
//!   parent's worker fires the rest. Every task's handler runs to completion at least
//!   once (one cut short by the kill runs again), the store ends empty, and tasks
//!   fired by both processes number at most the child's concurrency.
//!
//! Run: `cargo test -p punctual --test crash_recovery`.

// Measuring elapsed time and choosing random kill moments needs the real clock; the
// engine under test still takes all its time from its own clock.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use punctual::store::ListRequest;
use punctual::{
    BoxError, Delivery, Engine, EngineConfig, Outcome, QueueName, SqliteStore, Store, Task, TaskSpec, Worker,
};
use punctual_testkit::child::{self, ChildProcess};
use serde_json::{Value, json};

/// Set (to the scenario's name) in the environment of a child process.
const CHILD_ENV: &str = "PUNCTUAL_CRASH_CHILD";

const SINGLES_QUEUE: &str = "crash.singles";
const SINGLES_WRITERS: usize = 32;
const SINGLES_ROUNDS: usize = 5;

const BATCHES_QUEUE: &str = "crash.batches";
const BATCH_LOOPS: usize = 4;
const BATCH_SIZE: usize = 1_000;
const BATCHES_ROUNDS: usize = 5;

const HANDLERS_QUEUE: &str = "crash.handlers";
const HANDLER_TASKS: usize = 2_000;
const HANDLER_CONCURRENCY: usize = 16;
/// Short, so the dead child's leases come back quickly after the restart.
const HANDLER_LEASE: Duration = Duration::from_secs(1);
/// Each handler's pretend work; long enough that the child is killed mid-run
/// (2,000 tasks / 16 slots × 10 ms ≥ 1.25 s, the kill comes ≤ 0.8 s after the first).
const HANDLER_WORK: Duration = Duration::from_millis(10);
const HANDLERS_ROUNDS: usize = 4;

/// The kill comes this long after the child's first acknowledged write.
const KILL_AFTER_MS: std::ops::RangeInclusive<u64> = 100..=800;
/// How long a child may take to acknowledge its first write.
const FIRST_LINE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the parent's worker may take to fire every task left after a kill.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

const HOUR: Duration = Duration::from_secs(3600);

/// A parent-side scenario: runs its rounds, `Err` on any loss.
type Scenario = fn() -> Result<()>;

fn main() -> ExitCode {
    if let Some(code) = child::run_unless_parent("crash_recovery", CHILD_ENV, child_main) {
        return code;
    }
    let started = Instant::now();
    let scenarios: [(&str, Scenario); 3] =
        [("singles", parent_singles), ("batches", parent_batches), ("handlers", parent_handlers)];
    let mut failures = Vec::new();
    for (name, scenario) in scenarios {
        if let Err(e) = scenario() {
            println!("crash_recovery {name}: FAILED: {e:#}");
            failures.push(format!("{name}: {e:#}"));
        }
    }
    if failures.is_empty() {
        println!("crash_recovery: all scenarios passed in {:.1} s", started.elapsed().as_secs_f64());
        ExitCode::SUCCESS
    } else {
        eprintln!("crash_recovery: {} scenario(s) failed:", failures.len());
        for failure in &failures {
            eprintln!("  - {failure}");
        }
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------------------------
// The child side: run a scenario until killed.
// ---------------------------------------------------------------------------------

fn child_main(scenario: &str) -> Result<()> {
    child::exit_when_stdin_closes();
    let dir = child::dir_argument()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let store = SqliteStore::open(&dir).with_context(|| format!("opening {}", dir.display()))?;
        let engine = Engine::start(store, EngineConfig::default());
        match scenario {
            "singles" => child_singles(engine).await,
            "batches" => child_batches(engine).await,
            "handlers" => child_handlers(engine).await,
            other => bail!("unknown scenario '{other}'"),
        }
    })
}

async fn child_singles(engine: Engine<SqliteStore>) -> Result<()> {
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..SINGLES_WRITERS {
        writers.spawn(single_writer(engine.clone(), writer));
    }
    while let Some(joined) = writers.join_next().await {
        joined??;
    }
    bail!("the writers stopped before the kill")
}

async fn single_writer(engine: Engine<SqliteStore>, writer: usize) -> Result<()> {
    let mut n = 0u64;
    loop {
        let key = format!("w{writer:02}-{n:07}");
        engine.schedule(SINGLES_QUEUE, &key, TaskSpec::after(HOUR).payload(payload_for(&key))).await?;
        println!("ok {key}");
        n += 1;
    }
}

async fn child_batches(engine: Engine<SqliteStore>) -> Result<()> {
    let mut loops = tokio::task::JoinSet::new();
    for writer in 0..BATCH_LOOPS {
        loops.spawn(batch_writer(engine.clone(), writer));
    }
    while let Some(joined) = loops.join_next().await {
        joined??;
    }
    bail!("the batch loops stopped before the kill")
}

async fn batch_writer(engine: Engine<SqliteStore>, writer: usize) -> Result<()> {
    let mut n = 0u64;
    loop {
        let batch = format!("{writer}.{n:05}");
        let items = (0..BATCH_SIZE)
            .map(|i| {
                let key = format!("b{batch}-{i:04}");
                let spec = TaskSpec::after(HOUR).payload(payload_for(&key));
                (key, spec)
            })
            .collect();
        let results = engine.schedule_many(BATCHES_QUEUE, items).await?;
        ensure!(results.len() == BATCH_SIZE, "batch {batch}: {} results for {BATCH_SIZE} tasks", results.len());
        for result in results {
            result.with_context(|| format!("batch {batch}"))?;
        }
        println!("ok batch {batch}");
        n += 1;
    }
}

async fn child_handlers(engine: Engine<SqliteStore>) -> Result<()> {
    let worker = Worker::new(engine)
        .handle(HANDLERS_QUEUE, |delivery: Delivery| async move {
            println!("fired {}", delivery.task.key);
            tokio::time::sleep(HANDLER_WORK).await;
            println!("done {}", delivery.task.key);
            Ok::<_, BoxError>(Outcome::Done)
        })
        .concurrency(HANDLERS_QUEUE, HANDLER_CONCURRENCY)
        .lease_for(HANDLER_LEASE)
        .start()?;
    // Run until killed.
    std::future::pending::<()>().await;
    drop(worker);
    Ok(())
}

/// The payload stored with `key`; checked byte for byte after a crash.
fn payload_for(key: &str) -> Value {
    json!({ "key": key, "note": format!("payload of {key}"), "n": key.len() })
}

// ---------------------------------------------------------------------------------
// The parent side: spawn, kill at a random moment, reopen, check.
// ---------------------------------------------------------------------------------

/// Waits for the child's first line, then keeps reading for a random 100–800 ms, sends
/// SIGKILL, and returns every complete line the child wrote before it died (including
/// those still in the pipe).
fn run_and_kill(child: &mut ChildProcess) -> Result<Vec<String>> {
    let first = match child.recv_line(FIRST_LINE_TIMEOUT) {
        Ok(line) => line,
        Err(_) => bail!("the child printed nothing within {FIRST_LINE_TIMEOUT:?}: {}", child.status()),
    };
    let mut lines = vec![first];
    let kill_at = Instant::now() + Duration::from_millis(rand::random_range(KILL_AFTER_MS));
    loop {
        let left = kill_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match child.recv_line(left) {
            Ok(line) => lines.push(line),
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                bail!("the child closed its stdout before the kill: {}", child.status())
            }
        }
    }
    if let Some(status) = child.try_wait()? {
        bail!("the child exited before the kill with {status}");
    }
    // The pipe may still hold lines written just before the kill: they were
    // acknowledged too.
    lines.extend(child.kill()?);
    Ok(lines)
}

/// Spawns `scenario` on `dir`, kills it at a random moment, returns its lines and how
/// long it ran.
fn run_child_until_killed(scenario: &str, dir: &Path) -> Result<(Vec<String>, Duration)> {
    let started = Instant::now();
    let mut child = ChildProcess::spawn(CHILD_ENV, scenario, dir)?;
    let lines = run_and_kill(&mut child)?;
    Ok((lines, started.elapsed()))
}

/// Opens `dir` at once after the kill (the dead child's lock must be gone).
fn reopen(dir: &Path) -> Result<SqliteStore> {
    SqliteStore::open(dir).with_context(|| format!("reopening {} right after the kill", dir.display()))
}

/// Every task of `queue`, any state, by key.
async fn all_tasks(store: &SqliteStore, queue: &str) -> Result<BTreeMap<String, Task>> {
    let queue = QueueName::new(queue)?;
    let mut tasks = BTreeMap::new();
    let mut cursor = None;
    loop {
        let page = store.list(ListRequest::new(queue.clone(), None, 1000, cursor)).await?;
        for task in page.tasks {
            let key = task.key.to_string();
            ensure!(tasks.insert(key.clone(), task).is_none(), "listing returned '{key}' twice");
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let stats = store.stats(Some(&queue)).await?;
    let counted: u64 = stats.iter().map(|s| s.scheduled + s.leased + s.dead).sum();
    ensure!(counted == tasks.len() as u64, "stats count {counted} tasks but listing found {}", tasks.len());
    Ok(tasks)
}

fn acknowledged<'a>(lines: &'a [String], prefix: &str) -> Result<Vec<&'a str>> {
    lines
        .iter()
        .map(|line| line.strip_prefix(prefix).with_context(|| format!("unexpected line from the child: '{line}'")))
        .collect()
}

fn parent_singles() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    for round in 1..=SINGLES_ROUNDS {
        let dir = tempfile::tempdir()?;
        let (lines, ran) = run_child_until_killed("singles", dir.path())?;
        let acked = acknowledged(&lines, "ok ")?;
        let unique: HashSet<&str> = acked.iter().copied().collect();
        let repeated = acked.len() - unique.len();
        let (found, lost, corrupted, extra) = runtime.block_on(async {
            let store = reopen(dir.path())?;
            let tasks = all_tasks(&store, SINGLES_QUEUE).await?;
            store.close().await?;
            let mut lost = Vec::new();
            let mut corrupted = Vec::new();
            for key in &unique {
                match tasks.get(*key) {
                    None => lost.push(key.to_string()),
                    Some(task) if task.payload != payload_for(key) => corrupted.push(key.to_string()),
                    Some(_) => {}
                }
            }
            let extra = tasks.keys().filter(|key| !unique.contains(key.as_str())).count();
            anyhow::Ok((tasks.len(), lost, corrupted, extra))
        })?;
        println!(
            "crash_recovery singles round {round}: killed after {:.2} s; acknowledged {}, found {} \
             (+{extra} in flight at the kill), lost {}, corrupted {}, duplicates {repeated}",
            ran.as_secs_f64(),
            unique.len(),
            found - extra,
            lost.len(),
            corrupted.len()
        );
        ensure!(lost.is_empty(), "round {round}: {} acknowledged task(s) lost, e.g. {:?}", lost.len(), sample(&lost));
        ensure!(
            corrupted.is_empty(),
            "round {round}: {} payload(s) differ from what was acknowledged, e.g. {:?}",
            corrupted.len(),
            sample(&corrupted)
        );
        ensure!(repeated == 0, "round {round}: the child acknowledged {repeated} key(s) twice");
    }
    Ok(())
}

fn parent_batches() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    for round in 1..=BATCHES_ROUNDS {
        let dir = tempfile::tempdir()?;
        let (lines, ran) = run_child_until_killed("batches", dir.path())?;
        let acked: HashSet<&str> = acknowledged(&lines, "ok batch ")?.into_iter().collect();
        // Each loop writes its batches in order, one at a time: the one after its
        // last acknowledged batch was in flight at the kill.
        let mut next_per_loop: HashMap<&str, u64> = HashMap::new();
        for batch in &acked {
            let (writer, n) = batch.split_once('.').context("batch ids are <loop>.<n>")?;
            let n: u64 = n.parse()?;
            let next = next_per_loop.entry(writer).or_insert(0);
            *next = (*next).max(n + 1);
        }
        let in_flight: HashSet<String> = (0..BATCH_LOOPS)
            .map(|writer| {
                let writer = writer.to_string();
                let next = next_per_loop.get(writer.as_str()).copied().unwrap_or(0);
                format!("{writer}.{next:05}")
            })
            .collect();
        let tasks = runtime.block_on(async {
            let store = reopen(dir.path())?;
            let tasks = all_tasks(&store, BATCHES_QUEUE).await?;
            store.close().await?;
            anyhow::Ok(tasks)
        })?;
        let mut per_batch: HashMap<String, usize> = HashMap::new();
        let mut corrupted = 0;
        for (key, task) in &tasks {
            let batch = key.strip_prefix('b').and_then(|k| k.split_once('-')).map(|(batch, _)| batch);
            let batch = batch.with_context(|| format!("unexpected key '{key}' in the store"))?;
            *per_batch.entry(batch.to_owned()).or_insert(0) += 1;
            if task.payload != payload_for(key) {
                corrupted += 1;
            }
        }
        let mut lost_tasks = 0;
        let mut problems = Vec::new();
        for batch in &acked {
            let found = per_batch.get(*batch).copied().unwrap_or(0);
            if found != BATCH_SIZE {
                lost_tasks += BATCH_SIZE - found.min(BATCH_SIZE);
                problems.push(format!("acknowledged batch {batch} has {found} of {BATCH_SIZE} tasks"));
            }
        }
        let (mut in_flight_present, mut in_flight_absent) = (0, 0);
        for batch in &in_flight {
            match per_batch.get(batch).copied().unwrap_or(0) {
                0 => in_flight_absent += 1,
                BATCH_SIZE => in_flight_present += 1,
                partial => problems
                    .push(format!("batch {batch}, in flight at the kill, is partial: {partial} of {BATCH_SIZE}")),
            }
        }
        for (batch, count) in &per_batch {
            if !acked.contains(batch.as_str()) && !in_flight.contains(batch) {
                problems.push(format!("batch {batch} ({count} tasks) was never sent"));
            }
        }
        if corrupted > 0 {
            problems.push(format!("{corrupted} payload(s) differ from what was written"));
        }
        println!(
            "crash_recovery batches round {round}: killed after {:.2} s; acknowledged {} batches ({} tasks), \
             found {} tasks, lost {lost_tasks}; in flight at the kill: {in_flight_present} wholly present, \
             {in_flight_absent} wholly absent",
            ran.as_secs_f64(),
            acked.len(),
            acked.len() * BATCH_SIZE,
            tasks.len()
        );
        ensure!(problems.is_empty(), "round {round}: {}", problems.join("; "));
    }
    Ok(())
}

fn parent_handlers() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    for round in 1..=HANDLERS_ROUNDS {
        let dir = tempfile::tempdir()?;
        let all_keys: Vec<String> = (0..HANDLER_TASKS).map(|i| format!("t-{i:05}")).collect();
        runtime.block_on(async {
            let engine = Engine::start(SqliteStore::open(dir.path())?, EngineConfig::default());
            for chunk in all_keys.chunks(1000) {
                let items = chunk.iter().map(|key| (key.clone(), TaskSpec::now().payload(payload_for(key))));
                for result in engine.schedule_many(HANDLERS_QUEUE, items.collect()).await? {
                    result?;
                }
            }
            engine.shutdown().await?;
            anyhow::Ok(())
        })?;

        let (lines, ran) = run_child_until_killed("handlers", dir.path())?;
        // "fired <key>" when a handler starts, "done <key>" when it finished its work
        // (its ack follows).
        let mut child_counts: HashMap<&str, usize> = HashMap::new();
        let mut child_done: HashSet<&str> = HashSet::new();
        for line in &lines {
            if let Some(key) = line.strip_prefix("fired ") {
                *child_counts.entry(key).or_insert(0) += 1;
            } else if let Some(key) = line.strip_prefix("done ") {
                child_done.insert(key);
            } else {
                bail!("unexpected line from the child: '{line}'");
            }
        }
        let child_refired = child_counts.values().sum::<usize>() - child_counts.len();

        let (left, parent_counts, end_counts) = runtime.block_on(async {
            let store = reopen(dir.path())?;
            let left: BTreeMap<String, Task> = all_tasks(&store, HANDLERS_QUEUE).await?;
            let engine = Engine::start(store, EngineConfig::default());
            let (sender, mut fired) = tokio::sync::mpsc::unbounded_channel::<String>();
            let worker = Worker::new(engine.clone())
                .handle(HANDLERS_QUEUE, move |delivery: Delivery| {
                    let sender = sender.clone();
                    async move {
                        let _ = sender.send(delivery.task.key.to_string());
                        Ok::<_, BoxError>(Outcome::Done)
                    }
                })
                .concurrency(HANDLERS_QUEUE, HANDLER_CONCURRENCY)
                .lease_for(HANDLER_LEASE)
                .start()?;
            let mut parent_counts: HashMap<String, usize> = HashMap::new();
            let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
            while !left.keys().all(|key| parent_counts.contains_key(key)) {
                match tokio::time::timeout_at(deadline, fired.recv()).await {
                    Ok(Some(key)) => *parent_counts.entry(key).or_insert(0) += 1,
                    Ok(None) => bail!("the parent's worker stopped"),
                    Err(_) => {
                        let missing = left.keys().filter(|key| !parent_counts.contains_key(*key)).count();
                        bail!(
                            "{missing} of the {} tasks left after the kill did not fire within {DRAIN_TIMEOUT:?}",
                            left.len()
                        );
                    }
                }
            }
            // Graceful: waits for the running handlers' acks.
            worker.shutdown().await;
            let end = engine.stats(Some(HANDLERS_QUEUE)).await?;
            engine.shutdown().await?;
            let end_counts: Vec<(u64, u64, u64)> = end.iter().map(|s| (s.scheduled, s.leased, s.dead)).collect();
            anyhow::Ok((left, parent_counts, end_counts))
        })?;

        // Lost: no handler of the task ran to completion, in either process (never
        // fired, or cut short by the kill and never run again).
        let lost: Vec<String> = all_keys
            .iter()
            .filter(|key| !child_done.contains(key.as_str()) && !parent_counts.contains_key(*key))
            .cloned()
            .collect();
        // Gone from the store after the kill although its handler never finished.
        let vanished: Vec<String> = all_keys
            .iter()
            .filter(|key| !child_done.contains(key.as_str()) && !left.contains_key(*key))
            .cloned()
            .collect();
        let duplicates = child_counts.keys().filter(|key| parent_counts.contains_key(**key)).count();
        let leased_at_reopen = left.values().filter(|task| task.state == punctual::TaskState::Leased).count();
        let parent_fires: usize = parent_counts.values().sum();
        println!(
            "crash_recovery handlers round {round}: killed after {:.2} s; {HANDLER_TASKS} tasks, child fired {} \
             ({child_refired} again within the child) and finished {}, left after the kill {} ({leased_at_reopen} \
             leased by the dead child), parent fired {parent_fires}; lost {}, duplicates (fired in both) \
             {duplicates} (bound {HANDLER_CONCURRENCY})",
            ran.as_secs_f64(),
            child_counts.len(),
            child_done.len(),
            left.len(),
            lost.len()
        );
        ensure!(
            lost.is_empty(),
            "round {round}: {} task(s) never had a handler run to completion, e.g. {:?}",
            lost.len(),
            sample(&lost)
        );
        ensure!(
            vanished.is_empty(),
            "round {round}: {} task(s) left the store before a handler of theirs finished, e.g. {:?}",
            vanished.len(),
            sample(&vanished)
        );
        ensure!(
            end_counts.iter().all(|&(scheduled, leased, dead)| scheduled + leased + dead == 0),
            "round {round}: the store is not empty after every task fired and was acknowledged: \
             (scheduled, leased, dead) = {end_counts:?}"
        );
        ensure!(
            duplicates <= HANDLER_CONCURRENCY,
            "round {round}: {duplicates} tasks fired in both processes, more than the child's \
             {HANDLER_CONCURRENCY} handler slots could have had in flight"
        );
    }
    Ok(())
}

fn sample(keys: &[String]) -> &[String] {
    &keys[..keys.len().min(5)]
}
