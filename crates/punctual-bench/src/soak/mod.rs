//! `soak`: a `punctual serve` under steady load for a long time, killed with `kill -9`
//! and restarted on the same store every `--kill-every`, its Redis (when private)
//! killed and restarted once mid-run; then a drain and an account of every task.
//!
//! One module per concern: [`load`] (what users run: a producer of one-off and
//! repeating tasks, some cancelled, and pull loops; what the clients saw),
//! [`supervisor`] (the kills, the Redis restart, a memory reading each minute),
//! [`accounting`] (what is counted of what was seen, pure and unit-tested), [`report`]
//! (the table and the JSON). This file runs them in order: start the server and the
//! load, supervise for `--duration`, drain, ask the server which undelivered tasks it
//! still stores, report.
//!
//! What the run holds as true, and checks at the end:
//! - **lost** = one-off tasks whose schedule was acknowledged (2xx, `created`), not
//!   cancelled (a cancel answered `204`, or one left unanswered: it may have been
//!   applied), never leased, and no longer stored (`GET` answers 404); plus repeating
//!   tasks, not cancelled, no longer stored at the end. Must be 0: the run fails
//!   otherwise.
//! - **fired after cancel**: a lease of a task whose cancel was confirmed before the
//!   task was due. Must be 0: the run fails otherwise.
//! - **duplicates**: a delivery id (one occurrence of a task) leased more than once.
//!   At-least-once allows it only when an earlier lease's ack was not confirmed
//!   (`204`); each is attributed to the kill or Redis restart during which that ack
//!   failed, or to "other" when it failed at another time; one whose every earlier ack
//!   was confirmed is "unexplained" (a bug).
//!
//! Lag is lease received − due, on this machine's clock (the server's and Redis' are
//! the same machine's). Memory is the server's `VmRSS`, read at the end of each minute
//! and just before each kill: the server restarts every `--kill-every`, so the memory
//! before each kill (always after the same uptime) is what shows growth across the run.

mod accounting;
mod load;
mod report;
mod supervisor;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use punctual_client::Client;
use punctual_private_redis::Persistence;

use crate::args::{BenchArgs, BenchStore};
use crate::serve::{ServeStore, Served};
use crate::stats::now_millis;
use load::{DRAIN_TIMEOUT, Load, REPEATING};
use report::{ReportInput, SoakReport};
use supervisor::{Plan, SoakRedis, Supervised};

/// Longest wait for one call to the server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the soak and emits its report (a table, or `--json` a one-element array with
/// the table on stderr); fails when anything acknowledged was lost.
pub(crate) async fn run(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.server.is_some() {
        bail!(
            "soak kills and restarts the server it starts, so it cannot run against --server; \
             pass --store embedded, private-redis or redis://HOST:PORT instead"
        );
    }
    let prefix = crate::run_prefix();
    let mut redis = match &args.store {
        BenchStore::Embedded => None,
        BenchStore::Redis(url) => Some(SoakRedis::External(url.clone())),
        // AOF fsynced before each write is answered: nothing acknowledged may be lost.
        BenchStore::PrivateRedis => Some(SoakRedis::Private(crate::private_redis(Persistence::AofAlways)?)),
        BenchStore::PrivateCluster => bail!(crate::PRIVATE_CLUSTER_IS_FOR_PENDING),
    };
    let (redis_url, store_name) = match &redis {
        None => (None, "embedded store".to_owned()),
        Some(SoakRedis::Private(server)) => {
            (Some(server.url()), format!("private redis-server at {} (AOF, appendfsync always)", server.url()))
        }
        Some(SoakRedis::External(url)) => (Some(url.clone()), format!("Redis at {url}")),
    };
    let store = match &redis_url {
        None => ServeStore::Embedded,
        Some(url) => ServeStore::Redis { url, prefix: &prefix },
    };
    let mut served = Served::start(store, args.data.as_deref(), None).await.context("soak")?;
    let target = format!(
        "punctual serve at {} (started for the run, on the {store_name})",
        served.url().as_str().trim_end_matches('/')
    );
    let client = Client::with_timeout(served.url(), None, REQUEST_TIMEOUT)?;
    let (duration_ms, kill_every_ms) = (args.duration.as_millis() as i64, args.kill_every.as_millis() as i64);
    if !args.quiet {
        eprintln!(
            "soak: {}s on {target}, {}/s one-off tasks, {REPEATING} repeating, kill -9 every {}s",
            args.duration.as_secs_f64(),
            args.rate,
            args.kill_every.as_secs_f64()
        );
    }

    let plan = Plan { start: Instant::now(), start_ms: now_millis(), duration_ms, kill_every_ms, quiet: args.quiet };
    let load = Load::start(&client, args.rate, plan.start_ms + duration_ms / 2, plan.start_ms + duration_ms).await?;
    let Supervised { kills, redis_restart, samples } =
        supervisor::supervise(plan, &mut served, &mut redis, &client, load.record()).await?;
    let (record, drained, drain) = load.drain().await?;

    // Whatever was not leased: still stored (late), or lost.
    let mut notes = Vec::new();
    if !drained {
        notes.push(format!(
            "the drain ended after {}s with tasks not leased; those still stored are counted as still present",
            DRAIN_TIMEOUT.as_secs()
        ));
    }
    let (mut still_present, mut lost_keys) = (0, Vec::new());
    for key in record.undelivered() {
        if load::stored(&client, &key).await? {
            still_present += 1;
        } else {
            lost_keys.push(key);
        }
    }
    let repeating_live = record.repeating_live();
    for key in &repeating_live {
        if !load::stored(&client, key).await? {
            lost_keys.push(key.clone());
        }
    }
    drop(served);
    match redis {
        Some(SoakRedis::External(url)) => crate::delete_prefix(&url, &prefix).await?,
        Some(SoakRedis::Private(server)) => drop(server),
        None => {}
    }

    let report = SoakReport::build(ReportInput {
        record,
        target,
        store: args.store.to_string(),
        duration_ms,
        kill_every_ms,
        rate: args.rate,
        start_ms: plan.start_ms,
        kills,
        redis_restart,
        samples,
        drain_ms: drain.as_millis() as u64,
        still_present,
        lost_keys,
        repeating_live,
        notes,
    });
    if args.json {
        eprintln!("{}", report.table());
        emit(&serde_json::to_string_pretty(&[&report])?)?;
    } else {
        emit(&report.table())?;
    }
    if report.lost > 0 || report.fired_after_cancel > 0 {
        bail!(
            "the soak lost {} acknowledged task(s) and fired {} cancelled one(s): a broken guarantee; \
             the keys are in the report (lost_keys), the server's log in its data directory (run with --data DIR to keep it)",
            report.lost,
            report.fired_after_cancel
        );
    }
    Ok(())
}
