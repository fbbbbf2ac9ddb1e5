//! The clock of the soak while the load runs: the server killed with `kill -9` and
//! restarted on the same store every `--kill-every`, a private redis-server killed and
//! restarted once mid-run (the server staying up), and a memory reading at the end of
//! every minute (with one line on stderr).
//!
//! Each event happens as soon as it is due, in that order of precedence: a minute's
//! reading, a kill, the Redis restart; the loop sleeps until the next one (at most a
//! second) and returns once `--duration` has passed and every minute has its reading.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use punctual_client::Client;
use punctual_private_redis::RedisServer;

use super::accounting::{Kill, MINUTE_MS, Record, RedisRestart, Sample, lock};
use super::load::{QUEUE, RETRY, SERVING_TIMEOUT};
use super::report::kib;
use crate::poll::{self, Look};
use crate::serve::Served;
use crate::stats::{now_millis, percentile, rss_kib};

/// How long the private redis-server stays down when it is killed mid-run.
const REDIS_DOWN: Duration = Duration::from_secs(5);

/// The Redis a soak runs on.
#[derive(Debug)]
pub(super) enum SoakRedis {
    Private(RedisServer),
    /// An existing one: not restarted; the run's keys deleted after.
    External(String),
}

/// The run's length and rhythm.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) start: Instant,
    /// The same moment, epoch ms.
    pub(super) start_ms: i64,
    pub(super) duration_ms: i64,
    pub(super) kill_every_ms: i64,
    /// No line a minute on stderr.
    pub(super) quiet: bool,
}

/// What happened while the load ran.
#[derive(Debug, Default)]
pub(super) struct Supervised {
    pub(super) kills: Vec<Kill>,
    pub(super) redis_restart: Option<RedisRestart>,
    pub(super) samples: Vec<Sample>,
}

/// Kills and restarts `served` (and a private `redis`), reads the memory each minute,
/// until the plan's duration has passed.
pub(super) async fn supervise(
    plan: Plan,
    served: &mut Served,
    redis: &mut Option<SoakRedis>,
    client: &Client,
    record: &Mutex<Record>,
) -> Result<Supervised> {
    let Plan { start, start_ms, duration_ms, kill_every_ms, quiet } = plan;
    let mut run = Supervised::default();
    let restart_redis_at = match redis {
        Some(SoakRedis::Private(_)) => {
            // Half-way between two kills, near the middle of the run.
            let at = (duration_ms / 2 / kill_every_ms) * kill_every_ms + kill_every_ms / 2;
            Some(if at < duration_ms { at } else { duration_ms / 2 })
        }
        _ => None,
    };
    let minutes_due = (duration_ms as u64).div_ceil(MINUTE_MS as u64) as usize;
    let mut started_at = Instant::now();
    let mut next_kill = kill_every_ms;
    loop {
        let elapsed = start.elapsed().as_millis() as i64;
        let next_minute = (run.samples.len() as i64 + 1) * MINUTE_MS;
        if elapsed >= next_minute || (elapsed >= duration_ms && run.samples.len() < minutes_due) {
            let sample = Sample {
                rss_kib: rss_kib(Some(served.pid())).ok(),
                redis_rss_kib: match redis {
                    Some(SoakRedis::Private(server)) => server.pid().and_then(|pid| rss_kib(Some(pid)).ok()),
                    _ => None,
                },
                uptime_s: started_at.elapsed().as_secs_f64(),
            };
            run.samples.push(sample);
            if !quiet {
                progress_line(record, run.samples.len(), &plan, run.kills.len(), &sample);
            }
            continue;
        }
        if elapsed >= next_kill && next_kill <= duration_ms {
            let rss_before_kib = rss_kib(Some(served.pid())).ok();
            let at_ms = now_millis();
            let began = Instant::now();
            served.kill_and_restart().await.context("cannot restart punctual serve after kill -9")?;
            started_at = Instant::now();
            run.kills.push(Kill {
                at_s: (at_ms - start_ms) as f64 / 1000.0,
                rss_before_kib,
                restart_ms: began.elapsed().as_millis() as u64,
                at_ms,
                back_ms: now_millis(),
            });
            next_kill += kill_every_ms;
            continue;
        }
        if let Some(at) = restart_redis_at
            && run.redis_restart.is_none()
            && elapsed >= at
            && let Some(SoakRedis::Private(server)) = redis.take()
        {
            let (server, restart) = restart_private_redis(server, client, start_ms).await?;
            if !quiet {
                eprintln!(
                    "soak: redis-server killed at {:.0}s, down {} ms, punctual serving again after {} ms",
                    restart.at_s, restart.down_ms, restart.serving_again_ms
                );
            }
            *redis = Some(SoakRedis::Private(server));
            run.redis_restart = Some(restart);
            continue;
        }
        if elapsed >= duration_ms {
            return Ok(run);
        }
        let mut wake = next_minute.min(duration_ms);
        if next_kill <= duration_ms {
            wake = wake.min(next_kill);
        }
        if let Some(at) = restart_redis_at.filter(|_| run.redis_restart.is_none()) {
            wake = wake.min(at);
        }
        // The next event is due at a time, not on a condition: sleep until then.
        tokio::time::sleep(Duration::from_millis((wake - elapsed).clamp(1, 1_000) as u64)).await;
    }
}

/// Kills the private redis-server, keeps it down [`REDIS_DOWN`], starts it again on its
/// port and directory (it reloads its AOF) and waits until the server serves again.
async fn restart_private_redis(
    mut server: RedisServer,
    client: &Client,
    start_ms: i64,
) -> Result<(RedisServer, RedisRestart)> {
    let at_ms = now_millis();
    let began = Instant::now();
    server.kill();
    // The outage is the experiment: Redis stays down this long whatever happens.
    tokio::time::sleep(REDIS_DOWN).await;
    let server = tokio::task::spawn_blocking(move || server.restart().map(|()| server))
        .await
        .context("the redis-server restart panicked")?
        .context("cannot restart the private redis-server")?;
    let down_ms = began.elapsed().as_millis() as u64;
    poll::until(
        "punctual serve to serve again after its Redis restarted",
        SERVING_TIMEOUT,
        RETRY,
        async || match client.get(&["v1", "queues", QUEUE], &[]).await {
            Ok(_) => Ok(Look::Ready(())),
            Err(e) => Ok(Look::NotYet(e.into())),
        },
    )
    .await?;
    let serving_again_ms = began.elapsed().as_millis() as u64;
    let restart = RedisRestart {
        at_s: (at_ms - start_ms) as f64 / 1000.0,
        down_ms,
        serving_again_ms,
        at_ms,
        back_ms: now_millis(),
    };
    Ok((server, restart))
}

/// One line on stderr at the end of each minute.
fn progress_line(record: &Mutex<Record>, minute: usize, plan: &Plan, kills: usize, sample: &Sample) {
    let record = lock(record);
    let from = plan.start_ms + (minute as i64 - 1) * MINUTE_MS;
    let mut lags: Vec<i64> =
        record.deliveries.iter().filter(|d| d.leased_ms >= from).map(|d| d.leased_ms - d.due_ms).collect();
    lags.sort_unstable();
    eprintln!(
        "soak {minute}m/{}m: scheduled {} (failed {}), cancelled {}, leases {}, kills {kills}, \
         lag this minute p50 {} ms p99 {} ms, server RSS {} (up {:.0}s)",
        (plan.duration_ms as u64).div_ceil(MINUTE_MS as u64),
        record.scheduled.len(),
        record.schedules_failed,
        record.cancelled.len(),
        record.deliveries.len(),
        percentile(&lags, 50.0),
        percentile(&lags, 99.0),
        sample.rss_kib.map_or("-".to_owned(), kib),
        sample.uptime_s,
    );
}
