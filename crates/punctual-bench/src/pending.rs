//! `pending`: what N tasks waiting far in the future cost, and how fast a crashed
//! embedded server fires again with them all on disk.
//!
//! In process (the engine this process holds, either store):
//!
//! 1. Resident memory (`VmRSS` of this process) and the store's size are read.
//! 2. N tasks due in 30 days, payload `{"n": i}`, are scheduled in batches of 10,000
//!    (fewer when N < 100,000, so there are at least ten); the insert rate is reported,
//!    and `VmRSS` is read again once a tenth of them are in.
//! 3. A worker starts on the queue and a probe task due now fires, so the timer and
//!    the dispatcher have run with the N tasks waiting.
//! 4. Resident memory and the store's size are read again: memory per task is the
//!    growth of this process's `VmRSS` from the first tenth to the end, divided by the
//!    tasks added meanwhile (what each more pending task costs, without the engine's
//!    fixed cost: its threads, SQLite's page cache); disk per task (embedded) the growth of the
//!    files in the store's directory (database + WAL) / N, with the engine running and
//!    again after its clean shutdown; Redis memory per task the growth of `INFO memory`
//!    `used_memory` / N (on a shared Redis, other clients' writes count too).
//!
//! Recovery (embedded store only), with the real server (`punctual-bench serve`, the
//! server's own code in this binary: see [`super::serve`]):
//!
//! 5. `punctual serve --data DIR` starts on the directory holding the N tasks, takes one
//!    more task due now in a pull queue (so nothing fires it) over HTTP, and is killed
//!    with SIGKILL (`kill -9`).
//! 6. The clock starts just before `punctual serve --data DIR` is spawned again. The
//!    bench asks it for a lease on that queue (`POST …/lease`, retried every 2 ms
//!    while the port refuses connections); **start → first fire** is the time until
//!    the answer holding that task arrived: process start, opening the store after the
//!    crash, the HTTP listener, and one lease. The reopened server's own `VmRSS` is
//!    read then.
//!
//! On a private Redis Cluster (`--store private-cluster`), its queue split into
//! `--shards` shards so that the tasks spread over the primaries:
//!
//! - Redis memory per task (step 4) is the growth of `used_memory` summed over every
//!   node, / N; each node's growth / N is reported too (the nodes' figures add up to
//!   the total), which shows how the tasks spread.
//! - Before this process's engine shuts down, one more task due now goes into the same
//!   queue, where nothing leases it. The clock starts just before a new `punctual serve`
//!   is spawned on the Cluster (the same key prefix, the queue's shards in its config),
//!   and the bench asks it for a lease on that queue as in step 6: **start → first
//!   fire** with the N tasks stored (process start, connecting to every node, the HTTP
//!   listener, and one lease among the N). Its `VmRSS` is read then.
//!
//! BullMQ then adds the same N jobs, delayed by 30 days with the same payload, on the
//! baselines' Redis: its `used_memory` growth per job (see [`super::bullmq`]), compared
//! with punctual's Redis `used_memory` per task, or on the embedded store with its
//! resident memory + disk per task while running.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use punctual_private_redis::RedisServer;
use serde::Serialize;
use serde_json::json;

use super::bullmq::{BullmqPending, PendingRatios, over};
use super::driver::{BenchTask, Driver, Recorder};
use super::poll::{self, Look};
use super::report::{Figure, figures_beside, mib, millis, rate, thousands, times, with_footer};
use super::serve::{ServeStore, Served, toml_string};
use super::stats::{dir_bytes, per_second, rss_kib};
use super::{Context, Side};
use punctual_client::{Client, ClientError};

const QUEUE: &str = "bench.pending";
const BATCH: u64 = 10_000;
const FAR_MS: i64 = 30 * 86_400_000;
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a `punctual serve` child may take to answer.
const SERVE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often to ask a starting `punctual serve` again: short, as the time to its first
/// answer is measured.
const RETRY: Duration = Duration::from_millis(2);

#[derive(Debug, Serialize)]
pub(crate) struct PendingReport {
    pub(crate) workload: &'static str,
    pub(crate) target: String,
    pub(crate) tasks: u64,
    pub(crate) insert_per_second: f64,
    /// Before the engine started.
    pub(crate) rss_before_kib: u64,
    /// Once the first tenth of the tasks were scheduled.
    pub(crate) rss_early_kib: u64,
    pub(crate) rss_after_kib: u64,
    pub(crate) rss_bytes_per_task: f64,
    /// Embedded: the store's files with the engine running (database + WAL).
    pub(crate) disk_bytes: Option<u64>,
    pub(crate) disk_bytes_per_task: Option<f64>,
    /// Embedded: the same after the engine's clean shutdown (WAL checkpointed).
    pub(crate) disk_bytes_closed: Option<u64>,
    pub(crate) disk_bytes_per_task_closed: Option<f64>,
    /// Redis: growth of `used_memory` per task (on a Cluster, every node's summed).
    pub(crate) redis_bytes_per_task: Option<f64>,
    /// On a Cluster: each node's growth, in the order of the nodes' slots.
    pub(crate) cluster_nodes: Option<Vec<NodeMemory>>,
    pub(crate) recovery: Option<Recovery>,
    /// The same pending jobs on BullMQ, when it ran.
    pub(crate) bullmq: Option<BullmqPending>,
    pub(crate) notes: Vec<String>,
}

/// One Cluster node's `used_memory` growth over the run.
#[derive(Debug, Serialize)]
pub(crate) struct NodeMemory {
    pub(crate) port: u16,
    pub(crate) used_memory_growth: u64,
    /// `used_memory_growth` / N: the nodes' figures add up to `redis_bytes_per_task`.
    pub(crate) bytes_per_task: f64,
}

/// How the server of [`Recovery`] started.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ServerStart {
    /// Embedded: the same store after `kill -9` of the server holding it.
    RestartAfterKill,
    /// Cluster: a server that never ran on it, on the tasks stored there.
    New,
}

/// A `punctual serve` started with every task stored: after `kill -9` on the embedded
/// store, or a new one on the Cluster.
#[derive(Debug, Serialize)]
pub(crate) struct Recovery {
    pub(crate) server: ServerStart,
    /// Spawn → the lease of the task due before it started received.
    pub(crate) start_to_first_fire_ms: u64,
    /// The server's resident memory then.
    pub(crate) rss_kib: u64,
}

/// Figures read before the tasks are scheduled.
#[derive(Debug, Clone)]
pub(crate) struct Before {
    rss_kib: u64,
    disk: Option<u64>,
    /// `used_memory` of the Redis, or of each Cluster node; empty on the embedded store.
    redis: Vec<u64>,
}

pub(crate) async fn before(cx: &Context<'_>) -> Result<Before> {
    Ok(Before {
        rss_kib: rss_kib(None)?,
        disk: match cx.side {
            Side::Embedded { dir } => Some(dir_bytes(dir)?),
            _ => None,
        },
        redis: used_memories(cx.side).await?,
    })
}

/// `used_memory` of the Redis, or of each node of the Cluster; none on other sides.
async fn used_memories(side: &Side<'_>) -> Result<Vec<u64>> {
    let urls = match side {
        Side::Redis { url, .. } => vec![(*url).to_owned()],
        Side::Cluster { nodes, .. } => nodes.iter().map(RedisServer::url).collect(),
        Side::Embedded { .. } | Side::Http => Vec::new(),
    };
    let mut bytes = Vec::new();
    for url in urls {
        bytes.push(used_memory(&url).await?);
    }
    Ok(bytes)
}

/// Steps 2–4, with the engine of `driver` running; `before` was read before the
/// engine started.
pub(crate) async fn run<D: Driver>(driver: &D, tasks: u64, before: Before, cx: &Context<'_>) -> Result<PendingReport> {
    let bar = cx.progress.bar(tasks, "pending: scheduled");
    let started = Instant::now();
    let due = driver.now_ms() + FAR_MS;
    let batch_size = (tasks / 10).clamp(1, BATCH);
    let mut early = None;
    for first in (0..tasks).step_by(batch_size as usize) {
        let batch: Vec<BenchTask> =
            (first..(first + batch_size).min(tasks)).map(|key| BenchTask::with_payload(key, due)).collect();
        let n = batch.len() as u64;
        driver.schedule(QUEUE, batch).await.context("scheduling the pending tasks")?;
        bar.inc(n);
        if early.is_none() && first + n >= tasks / 10 {
            early = Some((first + n, rss_kib(None)?));
        }
    }
    let (early_tasks, rss_early_kib) = early.context("no tasks were scheduled")?;
    let insert_per_second = per_second(tasks, started.elapsed());
    bar.finish_and_clear();

    let recorder = Recorder::new(1, indicatif::ProgressBar::hidden());
    let consumer = driver.consume(QUEUE, recorder.clone())?;
    driver.schedule(QUEUE, vec![BenchTask::new(tasks, driver.now_ms())]).await?;
    if !recorder.wait_all(PROBE_TIMEOUT).await {
        bail!("the probe task due now did not fire within {PROBE_TIMEOUT:?} with {tasks} tasks pending");
    }
    let rss_after_kib = rss_kib(None)?;
    consumer.stop().await?;
    let per_task = |after: u64, before: u64| after.saturating_sub(before) as f64 / tasks.max(1) as f64;
    let disk_bytes = match cx.side {
        Side::Embedded { dir } => Some(dir_bytes(dir)?),
        _ => None,
    };
    let growth: Vec<u64> = used_memories(cx.side)
        .await?
        .iter()
        .zip(&before.redis)
        .map(|(after, before)| after.saturating_sub(*before))
        .collect();
    let redis_bytes_per_task = (!growth.is_empty()).then(|| growth.iter().sum::<u64>() as f64 / tasks.max(1) as f64);
    let cluster_nodes = match cx.side {
        Side::Cluster { nodes, .. } => Some(
            nodes
                .iter()
                .zip(&growth)
                .map(|(node, &bytes)| NodeMemory {
                    port: node.port(),
                    used_memory_growth: bytes,
                    bytes_per_task: bytes as f64 / tasks.max(1) as f64,
                })
                .collect(),
        ),
        _ => None,
    };
    if let Side::Cluster { .. } = cx.side {
        // For the new server of `new_server` to lease: nothing here consumes it any more.
        driver
            .schedule(QUEUE, vec![BenchTask::new(tasks + 1, driver.now_ms())])
            .await
            .context("scheduling the task the new server is to fire")?;
    }
    let mut notes = Vec::new();
    if let Side::Redis { private: None, .. } = cx.side {
        notes.push("on a shared Redis, other clients' writes during the run count in used_memory".into());
    }
    Ok(PendingReport {
        workload: "pending",
        target: cx.target.clone(),
        tasks,
        insert_per_second,
        rss_before_kib: before.rss_kib,
        rss_early_kib,
        rss_after_kib,
        rss_bytes_per_task: rss_after_kib.saturating_sub(rss_early_kib) as f64 * 1024.0
            / tasks.saturating_sub(early_tasks).max(1) as f64,
        disk_bytes_per_task: disk_bytes.zip(before.disk).map(|(after, before)| per_task(after, before)),
        disk_bytes,
        disk_bytes_closed: None,
        disk_bytes_per_task_closed: None,
        redis_bytes_per_task,
        cluster_nodes,
        recovery: None,
        bullmq: None,
        notes,
    })
}

impl PendingReport {
    /// punctual's memory per pending task, as compared with BullMQ's: Redis
    /// `used_memory`, or on the embedded store resident memory + disk while running.
    fn bytes_per_task(&self) -> f64 {
        self.redis_bytes_per_task.unwrap_or(self.rss_bytes_per_task + self.disk_bytes_per_task.unwrap_or(0.0))
    }

    /// Runs BullMQ beside, once punctual's figures are all in (its engine stopped).
    pub(crate) async fn beside_bullmq(&mut self, cx: &Context<'_>) -> Result<()> {
        let Some((bullmq, redis)) = cx.bullmq() else {
            self.notes.extend(cx.bullmq_skipped.clone());
            return Ok(());
        };
        let mut theirs = bullmq.pending(redis, self.tasks, &cx.progress).await?;
        theirs.punctual_over_bullmq = Some(PendingRatios {
            bytes_per_task: over(self.bytes_per_task(), theirs.redis_bytes_per_task),
            insert_per_second: over(self.insert_per_second, theirs.insert_per_second),
        });
        self.bullmq = Some(theirs);
        Ok(())
    }

    /// The embedded store's size after the engine shut down (`before`: the empty store).
    pub(crate) fn closed(&mut self, dir: &Path, before: &Before) -> Result<()> {
        let bytes = dir_bytes(dir)?;
        self.disk_bytes_closed = Some(bytes);
        self.disk_bytes_per_task_closed =
            before.disk.map(|b| bytes.saturating_sub(b) as f64 / self.tasks.max(1) as f64);
        Ok(())
    }
}

/// `INFO memory` `used_memory` of the Redis at `url`.
async fn used_memory(url: &str) -> Result<u64> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await.with_context(|| format!("cannot reach {url}"))?;
    let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await?;
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .context("INFO memory has no used_memory")
}

/// Steps 5–6 on the store in `dir`, which no engine of this process holds any more.
pub(crate) async fn recovery(dir: &Path, cx: &Context<'_>) -> Result<Recovery> {
    let bar = cx.progress.counter("pending: kill -9 and restart");
    let exe = std::env::current_exe().context("cannot find this program's own binary")?;
    let log = dir.with_extension("serve.log");

    wait_released(dir).await?;
    let mut first = Serve::spawn(&exe, dir, &log)?;
    let probed = poll::until("the first punctual serve to take the probe task", SERVE_TIMEOUT, RETRY, async || {
        match first.client.put(&["v1", "queues", "bench.recovery", "tasks", "probe"], &json!({})).await {
            Ok(_) => Ok(Look::Ready(())),
            Err(e @ ClientError::Unreachable { .. }) if first.running()? => Ok(Look::NotYet(e.into())),
            Err(e) => bail!("the first punctual serve did not take the probe task: {e}"),
        }
    })
    .await;
    probed.map_err(|e| anyhow!("{e:#}{}", first.log_tail()))?;
    drop(first); // SIGKILL

    let started = Instant::now();
    let mut second = Serve::spawn(&exe, dir, &log)?;
    let fired = first_fire(&second.client, "bench.recovery", started, || matches!(second.child.try_wait(), Ok(None)))
        .await
        .map_err(|e| anyhow!("the restarted punctual serve: {e:#}{}", second.log_tail()))?;
    let rss_kib = rss_kib(Some(second.child.id()))?;
    bar.finish_and_clear();
    Ok(Recovery { server: ServerStart::RestartAfterKill, start_to_first_fire_ms: fired.as_millis() as u64, rss_kib })
}

/// The Cluster's recovery step: a new `punctual serve` on the tasks stored under `prefix` at
/// `url`, its config giving the queue its `shards`; spawn → the lease of the task due
/// now that [`run`] left in the queue.
pub(crate) async fn new_server(url: &str, prefix: &str, shards: u32, cx: &Context<'_>) -> Result<Recovery> {
    let bar = cx.progress.counter("pending: a new server on the Cluster");
    let config = format!("[queues.{}]\nshards = {shards}\n", toml_string(QUEUE));
    let started = Instant::now();
    let mut served = Served::spawn(ServeStore::Redis { url, prefix }, None, Some(&config))?;
    let client = Client::new(served.url(), None)?;
    let fired = first_fire(&client, QUEUE, started, || served.running())
        .await
        .map_err(|e| anyhow!("the new punctual serve on the Cluster: {e:#}{}", served.log_tail()))?;
    let rss_kib = rss_kib(Some(served.pid()))?;
    bar.finish_and_clear();
    Ok(Recovery { server: ServerStart::New, start_to_first_fire_ms: fired.as_millis() as u64, rss_kib })
}

/// Asks the server behind `client` for one lease of `queue`, again every [`RETRY`]
/// (for at most [`SERVE_TIMEOUT`]) while its port refuses connections and `running`
/// says it has not exited; answers the time from `started` to the answer, which must
/// hold a task.
async fn first_fire(
    client: &Client,
    queue: &str,
    started: Instant,
    mut running: impl FnMut() -> bool,
) -> Result<Duration> {
    let request = json!({ "max": 1, "wait": "10s" });
    poll::until("it to answer", SERVE_TIMEOUT, RETRY, async || {
        match client.post_json(&["v1", "queues", queue, "lease"], &request).await {
            Ok(answer) => {
                let answer = answer.json()?;
                if answer.value["leases"].as_array().is_some_and(|l| !l.is_empty()) {
                    return Ok(Look::Ready(started.elapsed()));
                }
                bail!("it had no due task to lease: the task due now was lost");
            }
            Err(e @ ClientError::Unreachable { .. }) if running() => Ok(Look::NotYet(e.into())),
            Err(ClientError::Unreachable { .. }) => bail!("it exited before it answered"),
            Err(e) => bail!("it did not answer: {e}"),
        }
    })
    .await
}

/// Waits until no engine of this process holds the store in `dir` any more (its last
/// handle is dropped a moment after the engine shut down), by opening it.
async fn wait_released(dir: &Path) -> Result<()> {
    let what = format!("this process's engine to release the store in {}", dir.display());
    poll::until(&what, Duration::from_secs(10), Duration::from_millis(10), async || {
        match punctual_sqlite::SqliteStore::open(dir) {
            Ok(store) => {
                punctual_core::Store::close(&store).await?;
                Ok(Look::Ready(()))
            }
            Err(e) => Ok(Look::NotYet(e.into())),
        }
    })
    .await
}

/// A `punctual serve --data DIR` child on a free port; SIGKILLed on drop.
struct Serve {
    child: Child,
    client: Client,
    log: PathBuf,
}

impl Serve {
    fn spawn(exe: &Path, dir: &Path, log: &Path) -> Result<Serve> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        let mut command = Command::new(exe);
        command
            .arg("serve")
            .arg("--data")
            .arg(dir)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        // The bench's own environment must not configure the server (a config file,
        // tokens, another store).
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PUNCTUAL_") {
                command.env_remove(name);
            }
        }
        let child = command.spawn().with_context(|| format!("cannot run {} serve", exe.display()))?;
        let url = punctual_client::parse_server_url(&format!("http://127.0.0.1:{port}")).map_err(anyhow::Error::msg)?;
        Ok(Serve { child, client: Client::new(&url, None)?, log: log.to_owned() })
    }

    /// Still running? An error says how it exited (its log not included).
    fn running(&mut self) -> Result<bool> {
        match self.child.try_wait()? {
            None => Ok(true),
            Some(status) => bail!("punctual serve exited ({status})"),
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("; its log ({}):\n{}", self.log.display(), tail.join("\n"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PendingReport {
    pub(crate) fn table(&self) -> String {
        let n = self.tasks as f64;
        let theirs = self.bullmq.as_ref();
        let ratios = theirs.and_then(|t| t.punctual_over_bullmq.as_ref());
        let mut rows = vec![
            Figure::beside(
                "insert rate (batches of up to 10,000; BullMQ 1,000)",
                rate(self.insert_per_second),
                theirs.map(|t| rate(t.insert_per_second)),
                ratios.map(|r| times(r.insert_per_second)),
            ),
            Figure::ours(
                "this process's memory: no engine → 10% in → all in",
                format!(
                    "{} → {} → {}",
                    mib(self.rss_before_kib * 1024),
                    mib(self.rss_early_kib * 1024),
                    mib(self.rss_after_kib * 1024)
                ),
            ),
            Figure::ours("memory per pending task (growth after 10%)", format!("{:.1} bytes", self.rss_bytes_per_task)),
        ];
        if let (Some(bytes), Some(per_task)) = (self.disk_bytes, self.disk_bytes_per_task) {
            rows.push(Figure::ours(
                "disk, engine running (db + WAL)",
                format!("{} = {per_task:.0} bytes/task", mib(bytes)),
            ));
        }
        if let (Some(bytes), Some(per_task)) = (self.disk_bytes_closed, self.disk_bytes_per_task_closed) {
            rows.push(Figure::ours(
                "disk after a clean shutdown",
                format!("{} = {per_task:.0} bytes/task", mib(bytes)),
            ));
        }
        if let Some(per_task) = self.redis_bytes_per_task {
            let what = if self.cluster_nodes.is_some() {
                "Redis used_memory per pending task, every node"
            } else {
                "Redis used_memory per pending task"
            };
            rows.push(Figure::ours(what, format!("{per_task:.0} bytes")));
        }
        for (i, node) in self.cluster_nodes.iter().flatten().enumerate() {
            rows.push(Figure::ours(
                format!("  node {} (port {})", i + 1, node.port),
                format!("{:.0} bytes/task = {}", node.bytes_per_task, mib(node.used_memory_growth)),
            ));
        }
        if let Some(t) = theirs {
            let what = if self.redis_bytes_per_task.is_some() {
                "per task: Redis used_memory"
            } else {
                "per task: memory + disk (BullMQ: Redis used_memory)"
            };
            rows.push(Figure::beside(
                what,
                format!("{:.0} bytes", self.bytes_per_task()),
                Some(format!("{:.0} bytes", t.redis_bytes_per_task)),
                ratios.map(|r| times(r.bytes_per_task)),
            ));
        }
        if let Some(recovery) = &self.recovery {
            let (what, memory) = match recovery.server {
                ServerStart::RestartAfterKill => {
                    ("kill -9, restart: process start → first fire", "  restarted server's resident memory")
                }
                ServerStart::New => {
                    ("new punctual serve on them: process start → first fire", "  new server's resident memory")
                }
            };
            rows.push(Figure::ours(what, millis(recovery.start_to_first_fire_ms)));
            rows.push(Figure::ours(memory, mib(recovery.rss_kib * 1024)));
        }
        let text = figures_beside(
            &format!("pending: {} tasks due in 30 days on {}", thousands(n), self.target),
            rows,
            theirs.map(|t| t.version.as_str()),
        );
        with_footer(text, theirs.map(|t| t.approach.as_str()), &self.notes)
    }
}
