//! The soak's load, as users run it, and what its clients saw ([`Record`]).
//!
//! A producer schedules `--rate` one-off tasks a second ([`NEAR_SHARE`] of them due
//! within [`NEAR_MAX_MS`], in one batch call per tick; the rest due
//! [`FAR_MIN_MS`]–[`FAR_MAX_MS`] out, one `PUT` each, never later than the end of the
//! load, a third of those cancelled [`CANCEL_AFTER`] later), [`REPEATING`] tasks repeat
//! every [`REPEAT_EVERY`] (two of them cancelled at half time), and [`PULL_LOOPS`] pull
//! loops (`punctual_testkit::pull`) lease and acknowledge. A call that fails (the server
//! is down, or its Redis) is not retried with the same keys: only what the server
//! acknowledged is recorded as scheduled ([`super::accounting::Record`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use punctual_client::{Client, ClientError};
use punctual_testkit::pull::{self, AckEnd, Call, Lease, Next, PullLoop, Stop, StopWhen, Tally, Target};
use serde_json::json;
use tokio::task::JoinHandle;

use super::accounting::{Delivery, Record, lock};
use crate::poll::{self, Look};
use crate::stats::now_millis;

/// The one queue of the run (pull workers: no action).
pub(super) const QUEUE: &str = "soak";
pub(super) const PULL_LOOPS: usize = 4;
/// A pull loop's lease call: `max`, `lease`, `wait`.
pub(super) const LEASE_MAX: u32 = 100;
pub(super) const LEASE: Duration = Duration::from_secs(10);
pub(super) const LONG_POLL: Duration = Duration::from_secs(2);
pub(super) const REPEATING: usize = 10;
pub(super) const REPEAT_EVERY: &str = "5s";
/// Repeating tasks cancelled at half time (the first ones).
const REPEATING_CANCELLED: usize = 2;
/// Share of one-off tasks due soon, scheduled in batches.
pub(super) const NEAR_SHARE: f64 = 0.9;
pub(super) const NEAR_MAX_MS: i64 = 5_000;
pub(super) const FAR_MIN_MS: i64 = 10_000;
pub(super) const FAR_MAX_MS: i64 = 90_000;
/// Share of the far tasks cancelled, [`CANCEL_AFTER`] after they were acknowledged.
pub(super) const CANCEL_SHARE: f64 = 1.0 / 3.0;
const CANCEL_AFTER: Duration = Duration::from_secs(2);
/// The producer's tick: one batch call per tick.
const TICK: Duration = Duration::from_millis(100);
/// Pause after a failed call (the server or its Redis is down) before the next one.
pub(super) const RETRY: Duration = Duration::from_millis(50);
/// Longest wait for the server to serve again (after a restart, or its Redis').
pub(super) const SERVING_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait, after the load, for every acknowledged task to be leased.
pub(super) const DRAIN_TIMEOUT: Duration = Duration::from_secs(180);
/// How often the drain looks whether every acknowledged task was leased.
const DRAIN_CHECK: Duration = Duration::from_millis(250);

/// The running load: the producer and the pull loops.
#[derive(Debug)]
pub(super) struct Load {
    record: Arc<Mutex<Record>>,
    producing: Stop,
    producer: JoinHandle<()>,
    working: Stop,
    pull_loops: Vec<JoinHandle<Result<(), ClientError>>>,
}

impl Load {
    /// Schedules the repeating tasks, then starts the producer (`rate` a second, the
    /// repeating tasks cancelled at `half_ms`, nothing due after `end_ms`) and the pull
    /// loops.
    pub(super) async fn start(client: &Client, rate: u32, half_ms: i64, end_ms: i64) -> Result<Load> {
        let record = Arc::new(Mutex::new(Record::default()));
        schedule_repeating(client, &record).await?;
        let (producing, working) = (Stop::default(), Stop::default());
        let producer =
            tokio::spawn(producer(client.clone(), Arc::clone(&record), producing.clone(), rate, half_ms, end_ms));
        let target = Target::new(client.clone());
        let pull_loops = (0..PULL_LOOPS)
            .map(|_| {
                let (target, stop, pulled) = (target.clone(), working.clone(), Pulled(Arc::clone(&record)));
                tokio::spawn(async move { pull_loop().run(&target, &stop, &pulled).await })
            })
            .collect();
        Ok(Load { record, producing, producer, working, pull_loops })
    }

    /// What the clients saw so far.
    pub(super) fn record(&self) -> &Mutex<Record> {
        &self.record
    }

    /// Stops scheduling, lets the pull loops run until every acknowledged task was leased
    /// (or [`DRAIN_TIMEOUT`]), stops them; answers the record, whether it drained, and how
    /// long the drain took.
    pub(super) async fn drain(self) -> Result<(Record, bool, Duration)> {
        let Load { record, producing, producer, working, pull_loops } = self;
        producing.stop();
        producer.await.context("the producer panicked")?;
        let began = Instant::now();
        // Every 250 ms, not on each ack: the check walks the whole record. The look
        // never fails, so an error is time running out.
        let drained = poll::until("every acknowledged task to be leased", DRAIN_TIMEOUT, DRAIN_CHECK, async || {
            let left = lock(&record).undelivered().len();
            Ok(if left == 0 { Look::Ready(()) } else { Look::NotYet(anyhow!("{left} not leased yet")) })
        })
        .await
        .is_ok();
        let took = began.elapsed();
        working.stop();
        for pull_loop in pull_loops {
            pull_loop.await.context("a pull loop panicked")??;
        }
        let record = Arc::into_inner(record).context("a client still holds the record")?;
        Ok((record.into_inner().unwrap_or_else(PoisonError::into_inner), drained, took))
    }
}

/// A pull loop of the run: one batch ack per answer, until stopped.
fn pull_loop() -> PullLoop {
    PullLoop {
        queue: QUEUE.to_owned(),
        max: LEASE_MAX,
        lease: Some(LEASE),
        wait: LONG_POLL,
        acks: pull::Acks::Batch,
        stop_when: StopWhen::Asked,
    }
}

/// The pull loops' record of every delivery. A failed call is counted (lease) or left
/// unanswered (ack); the loops go on, as a worker rides out a restart.
struct Pulled(Arc<Mutex<Record>>);

impl Tally for Pulled {
    fn acked(&self, leases: &[Lease], ends: &[AckEnd], acked_ms: i64) {
        let mut record = lock(&self.0);
        for (lease, end) in leases.iter().zip(ends) {
            record.deliveries.push(Delivery {
                key: lease.key.clone(),
                delivery_id: lease.delivery_id.clone(),
                due_ms: lease.due_ms,
                leased_ms: lease.received_ms,
                ack: *end,
                ack_ms: acked_ms,
            });
        }
    }

    fn failed(&self, call: Call, _error: &ClientError, _took: Duration) -> Next {
        match call {
            Call::Lease => {
                lock(&self.0).lease_calls_failed += 1;
                Next::BackOff(RETRY)
            }
            Call::Ack => Next::BackOff(Duration::ZERO),
        }
    }
}

/// Schedules the repeating tasks, each retried until acknowledged (the server is up).
async fn schedule_repeating(client: &Client, record: &Mutex<Record>) -> Result<()> {
    for i in 0..REPEATING {
        let key = format!("r-{i}");
        let body = json!({"delay": "1s", "repeat": {"every": REPEAT_EVERY}, "payload": {"repeating": i}});
        poll::until("the server to take it", SERVING_TIMEOUT, RETRY, async || {
            match client.put(&["v1", "queues", QUEUE, "tasks", &key], &body).await {
                Ok(_) => Ok(Look::Ready(())),
                Err(e) => Ok(Look::NotYet(e.into())),
            }
        })
        .await
        .with_context(|| format!("cannot schedule the repeating task {key}"))?;
        lock(record).repeating.push(key);
    }
    Ok(())
}

/// Schedules `rate` one-off tasks a second until `stop`, and cancels some; cancels the
/// first repeating tasks once `half_ms` has passed.
async fn producer(client: Client, record: Arc<Mutex<Record>>, stop: Stop, rate: u32, half_ms: i64, end_ms: i64) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let per_tick = f64::from(rate) * TICK.as_secs_f64();
    let (mut owed, mut next_id) = (0.0, 0_u64);
    let mut cancels: VecDeque<(Instant, String)> = VecDeque::new();
    let mut repeating_cancelled = false;
    while !stop.is_stopped() {
        ticks.tick().await;
        owed += per_tick;
        let count = owed.floor() as u64;
        owed -= count as f64;
        let now = now_millis();
        let (mut near, mut far) = (Vec::new(), Vec::new());
        for _ in 0..count {
            next_id += 1;
            let key = format!("t-{next_id}");
            let far_due = now + FAR_MIN_MS + (rand::random::<f64>() * (FAR_MAX_MS - FAR_MIN_MS) as f64) as i64;
            if rand::random::<f64>() >= NEAR_SHARE && far_due <= end_ms {
                far.push((key, far_due));
            } else {
                near.push((key, now + (rand::random::<f64>() * NEAR_MAX_MS as f64) as i64));
            }
        }
        if !near.is_empty() {
            schedule_batch(&client, &record, near).await;
        }
        for (key, due) in far {
            let body = json!({"due_at": due, "payload": {"key": key}});
            match client.put(&["v1", "queues", QUEUE, "tasks", &key], &body).await {
                Ok(answer) if answer.status.as_u16() == 201 => {
                    lock(&record).scheduled.insert(key.clone(), due);
                    if rand::random::<f64>() < CANCEL_SHARE {
                        cancels.push_back((Instant::now() + CANCEL_AFTER, key));
                    }
                }
                _ => lock(&record).schedules_failed += 1,
            }
        }
        while cancels.front().is_some_and(|(at, _)| *at <= Instant::now()) {
            if let Some((_, key)) = cancels.pop_front() {
                cancel(&client, &record, &key).await;
            }
        }
        if !repeating_cancelled && now_millis() >= half_ms {
            repeating_cancelled = true;
            for i in 0..REPEATING_CANCELLED {
                cancel(&client, &record, &format!("r-{i}")).await;
            }
        }
    }
}

/// One batch call; the tasks answered `created` are acknowledged.
async fn schedule_batch(client: &Client, record: &Mutex<Record>, tasks: Vec<(String, i64)>) {
    let body = json!({
        "tasks": tasks.iter().map(|(key, due)| json!({"key": key, "due_at": due, "payload": {"key": key}})).collect::<Vec<_>>()
    });
    let answer = client.post_json(&["v1", "queues", QUEUE, "tasks"], &body).await;
    let results = answer.ok().and_then(|a| a.body).and_then(|b| b.value["results"].as_array().cloned());
    let mut record = lock(record);
    match results {
        Some(results) if results.len() == tasks.len() => {
            for ((key, due), result) in tasks.into_iter().zip(results) {
                if result["outcome"] == "created" {
                    record.scheduled.insert(key, due);
                } else {
                    record.schedules_failed += 1;
                }
            }
        }
        _ => record.schedules_failed += tasks.len() as u64,
    }
}

async fn cancel(client: &Client, record: &Mutex<Record>, key: &str) {
    let answer = client.delete(&["v1", "queues", QUEUE, "tasks", key]).await;
    let mut record = lock(record);
    match answer {
        Ok(_) => {
            record.cancelled.insert(key.to_owned(), now_millis());
        }
        Err(ClientError::Api(e)) if e.status == 404 => record.cancels_not_found += 1,
        Err(_) => {
            record.cancels_unconfirmed.insert(key.to_owned());
        }
    }
}

/// Is the task still stored? (`GET` answers it, or 404.)
pub(super) async fn stored(client: &Client, key: &str) -> Result<bool> {
    poll::until("the server to answer", SERVING_TIMEOUT, RETRY, async || {
        match client.get(&["v1", "queues", QUEUE, "tasks", key], &[]).await {
            Ok(_) => Ok(Look::Ready(true)),
            Err(ClientError::Api(e)) if e.status == 404 => Ok(Look::Ready(false)),
            Err(e) => Ok(Look::NotYet(e.into())),
        }
    })
    .await
    .with_context(|| format!("cannot check whether task {key} is still stored"))
}
