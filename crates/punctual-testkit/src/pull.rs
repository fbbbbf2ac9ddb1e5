//! Pull loops over HTTP, as a user's worker runs them: the one load harness of the
//! end-to-end tests and of `punctual-bench`. A loop leases a batch of a queue (`POST
//! /v1/queues/{queue}/lease`, a long poll) and acknowledges it done: one `POST /v1/acks`
//! per answer, or one `POST /v1/leases/{id}/ack` per task, in turn.
//!
//! What a run counts (fire lag, leases per key, acks left unconfirmed at a kill, the
//! server's refusals) is its [`Tally`]'s; the loop itself is written here once. Its
//! invariants:
//!
//! - Each lease answer that holds leases goes to [`Tally::leased`] before any of its
//!   acks is sent, then to [`Tally::acked`] with how each ack ended, in the answer's
//!   order: [`AckEnd::Confirmed`] only on `204`, [`AckEnd::Refused`] on another status
//!   the server gave that ack, [`AckEnd::Unanswered`] when the call carrying it failed.
//! - A call that fails (a refusal of the whole call, no answer, an answer that is not
//!   the API's) goes to [`Tally::failed`], which says whether the loop backs off and
//!   goes on, or ends with that error.
//! - A loop ends only once its [`Stop`] was asked for, as its [`StopWhen`] says.
//!
//! The calls go through `punctual-client`, at a [`Target`] that can be moved to a
//! server restarted on another port. Loops are async (the bench runs a thousand of
//! them); [`PullLoop::on_thread`] runs one on a thread of its own, for a test without a
//! runtime. [`Stop`] serves both worlds, and the tests' own client threads too.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use punctual_client::{ApiError, Client, ClientError, Json};
use punctual_core::{Clock as _, Stopwatch, SystemClock, Timestamp};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// One pull loop's settings.
#[derive(Debug, Clone)]
pub struct PullLoop {
    pub queue: String,
    /// Tasks one lease call asks for (`max`).
    pub max: u32,
    /// How long a lease lasts (`lease`); `None`: the queue's default.
    pub lease: Option<Duration>,
    /// How long a lease call waits for a task to fall due (`wait`).
    pub wait: Duration,
    pub acks: Acks,
    pub stop_when: StopWhen,
}

/// How a loop acknowledges the leases of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// One `POST /v1/acks` for all the leases of an answer.
    Batch,
    /// One `POST /v1/leases/{id}/ack` per lease, one after the other.
    Each,
}

/// When a loop ends, once its [`Stop`] was asked for.
#[derive(Clone)]
pub enum StopWhen {
    /// At once: before the next lease call, and a lease call in flight is dropped (the
    /// server releases what it leased to it).
    Asked,
    /// At the first lease answer that comes back empty: nothing is left to lease.
    Empty,
    /// Before the next lease call, once this says so (every task expected was leased,
    /// or a deadline passed).
    Drained(Arc<dyn Fn() -> bool + Send + Sync>),
}

impl std::fmt::Debug for StopWhen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopWhen::Asked => "Asked",
            StopWhen::Empty => "Empty",
            StopWhen::Drained(_) => "Drained(..)",
        })
    }
}

/// One lease of an answer.
#[derive(Debug, Clone)]
pub struct Lease {
    pub key: String,
    pub lease_id: String,
    /// The occurrence of the task: the same on a second lease of it.
    pub delivery_id: String,
    /// The task's due time and when the answer was received, epoch ms (this machine's
    /// wall clock).
    pub due_ms: i64,
    pub received_ms: i64,
}

/// How one ack ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckEnd {
    /// `204`: the task is done.
    Confirmed,
    /// The server answered this ack with another status (`409`: the lease expired or
    /// the task was cancelled; `404`: unknown lease).
    Refused(u16),
    /// The call carrying it failed: the ack may or may not have been applied.
    Unanswered,
}

/// Which call of the loop failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Lease,
    Ack,
}

/// What a loop does after a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Waits this long (cut short by the stop) and goes on.
    BackOff(Duration),
    /// Ends the loop with the call's error.
    Stop,
}

/// What a run counts of its loops' calls; shared by all its loops.
pub trait Tally: Send + Sync {
    /// An answer's leases (never none), before they are acknowledged.
    fn leased(&self, _leases: &[Lease]) {}

    /// How the acks of `leases` ended (`ends[i]` is `leases[i]`'s), the last ack call
    /// over at `acked_ms` (epoch ms).
    fn acked(&self, _leases: &[Lease], _ends: &[AckEnd], _acked_ms: i64) {}

    /// A call failed after `took`; its leases, for an ack, are then reported
    /// [`AckEnd::Unanswered`].
    fn failed(&self, call: Call, error: &ClientError, took: Duration) -> Next;
}

/// The server the loops call. Cloned into each loop; [`Target::point_at`] moves every
/// one of them to a server restarted elsewhere.
#[derive(Debug, Clone)]
pub struct Target(Arc<Mutex<Client>>);

impl Target {
    pub fn new(client: Client) -> Target {
        Target(Arc::new(Mutex::new(client)))
    }

    /// From the next call on, the loops call `client`'s server.
    pub fn point_at(&self, client: Client) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = client;
    }

    fn client(&self) -> Client {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A stop signal for loops, async or on threads: [`Stop::stop`] wakes every one that
/// backs off or waits for it.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<StopState>);

#[derive(Debug, Default)]
struct StopState {
    stopped: Mutex<bool>,
    /// Wakes threads in [`Stop::back_off`].
    changed: Condvar,
    /// Wakes tasks in [`Stop::stopped`].
    notify: Notify,
}

impl Stop {
    /// Tells every loop to stop, waking those that back off.
    pub fn stop(&self) {
        *self.0.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.0.changed.notify_all();
        self.0.notify.notify_waiters();
    }

    /// Whether [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.0.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A thread's back-off after a refused or failed call: returns when told to stop, or
    /// after `at_most` so the loop tries again (a refusal is answered at once, and a
    /// client that retried without pause would only measure its own loop).
    pub fn back_off(&self, at_most: Duration) {
        let guard = self.0.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self.0.changed.wait_timeout_while(guard, at_most, |stopped| !*stopped);
    }

    /// Resolves once [`Stop::stop`] was called.
    pub async fn stopped(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a stop between the two is not missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }

    /// [`Stop::back_off`] for a task.
    async fn backed_off(&self, at_most: Duration) {
        let _stopped_early = tokio::time::timeout(at_most, self.stopped()).await;
    }
}

impl PullLoop {
    /// Leases and acknowledges until `stop` and [`PullLoop::stop_when`] end it, or
    /// [`Tally::failed`] answers [`Next::Stop`] (then with that call's error).
    pub async fn run(&self, target: &Target, stop: &Stop, tally: &impl Tally) -> Result<(), ClientError> {
        let mut request = json!({ "max": self.max, "wait": self.wait.as_millis() as u64 });
        if let Some(lease) = self.lease {
            request["lease"] = json!(lease.as_millis() as u64);
        }
        let path = ["v1", "queues", self.queue.as_str(), "lease"];
        loop {
            if stop.is_stopped() && self.ends_before_leasing() {
                return Ok(());
            }
            let client = target.client();
            let started = Stopwatch::start();
            let answer = match self.stop_when {
                StopWhen::Asked => tokio::select! {
                    () = stop.stopped() => return Ok(()),
                    answer = client.post_json(&path, &request) => answer,
                },
                StopWhen::Empty | StopWhen::Drained(_) => client.post_json(&path, &request).await,
            };
            let leases = match answer.and_then(|answer| leases_of(answer.json()?)) {
                Ok(leases) => leases,
                Err(error) => {
                    match tally.failed(Call::Lease, &error, started.elapsed()) {
                        Next::BackOff(pause) => stop.backed_off(pause).await,
                        Next::Stop => return Err(error),
                    }
                    continue;
                }
            };
            if leases.is_empty() {
                if stop.is_stopped() && matches!(self.stop_when, StopWhen::Empty) {
                    return Ok(());
                }
                continue;
            }
            tally.leased(&leases);
            let (ends, failure) = match self.acks {
                Acks::Batch => ack_batch(&client, &leases).await,
                Acks::Each => ack_each(&client, &leases).await,
            };
            tally.acked(&leases, &ends, now_millis());
            if let Some((error, took)) = failure {
                match tally.failed(Call::Ack, &error, took) {
                    Next::BackOff(pause) => stop.backed_off(pause).await,
                    Next::Stop => return Err(error),
                }
            }
        }
    }

    /// [`PullLoop::run`] on a thread of its own, in a runtime of its own: for a test
    /// without one. The thread panics if the loop ends with an error.
    pub fn on_thread<T: Tally + 'static>(
        self,
        target: Target,
        stop: Stop,
        tally: Arc<T>,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("cannot start a runtime for a pull loop: {e}"));
            if let Err(e) = runtime.block_on(self.run(&target, &stop, &*tally)) {
                panic!("the pull loop of {} ended: {e}", self.queue);
            }
        })
    }

    /// Whether, once asked to stop, the loop ends before its next lease call.
    fn ends_before_leasing(&self) -> bool {
        match &self.stop_when {
            StopWhen::Asked => true,
            StopWhen::Empty => false,
            StopWhen::Drained(drained) => drained(),
        }
    }
}

/// The leases of a lease answer, stamped with its receipt.
fn leases_of(answer: Json) -> Result<Vec<Lease>, ClientError> {
    let received_ms = now_millis();
    let protocol = |detail: &str| ClientError::Protocol { detail: format!("{detail}: {}", answer.text) };
    let leases = answer.value["leases"].as_array().ok_or_else(|| protocol("a lease answer without leases"))?;
    leases
        .iter()
        .map(|lease| {
            let text = |value: &Value| value.as_str().map(str::to_owned);
            let task = &lease["task"];
            let due = task["due_at"].as_str().and_then(|t| Timestamp::parse(t).ok());
            match (text(&task["key"]), text(&lease["lease_id"]), text(&lease["delivery_id"]), due) {
                (Some(key), Some(lease_id), Some(delivery_id), Some(due)) => {
                    Ok(Lease { key, lease_id, delivery_id, due_ms: due.as_millis(), received_ms })
                }
                _ => Err(protocol("a lease without its key, lease_id, delivery_id or due_at")),
            }
        })
        .collect()
}

/// `POST /v1/acks` of every lease: each one's end, and the call's error if it failed.
async fn ack_batch(client: &Client, leases: &[Lease]) -> (Vec<AckEnd>, Option<(ClientError, Duration)>) {
    let acks: Vec<Value> = leases.iter().map(|l| json!({ "lease_id": l.lease_id, "outcome": "done" })).collect();
    let started = Stopwatch::start();
    let statuses = client.post_json(&["v1", "acks"], &json!({ "acks": acks })).await.and_then(|answer| {
        let answer = answer.json()?;
        let results = answer.value["results"].as_array().filter(|r| r.len() == leases.len());
        let statuses: Option<Vec<u64>> = results.and_then(|r| r.iter().map(|r| r["status"].as_u64()).collect());
        statuses.ok_or_else(|| ClientError::Protocol {
            detail: format!("an ack answer without a status for each lease: {}", answer.text),
        })
    });
    match statuses {
        Ok(statuses) => (statuses.into_iter().map(ack_end).collect(), None),
        Err(error) => (vec![AckEnd::Unanswered; leases.len()], Some((error, started.elapsed()))),
    }
}

/// `POST /v1/leases/{id}/ack` of each lease in turn; a failed call leaves it and the
/// rest unanswered.
async fn ack_each(client: &Client, leases: &[Lease]) -> (Vec<AckEnd>, Option<(ClientError, Duration)>) {
    let done = json!({ "outcome": "done" });
    let mut ends = Vec::with_capacity(leases.len());
    for lease in leases {
        let started = Stopwatch::start();
        match client.post_json(&["v1", "leases", &lease.lease_id, "ack"], &done).await {
            Ok(answer) => ends.push(ack_end(u64::from(answer.status.as_u16()))),
            Err(ClientError::Api(ApiError { status: status @ (404 | 409), .. })) => ends.push(AckEnd::Refused(status)),
            Err(error) => {
                ends.resize(leases.len(), AckEnd::Unanswered);
                return (ends, Some((error, started.elapsed())));
            }
        }
    }
    (ends, None)
}

fn ack_end(status: u64) -> AckEnd {
    match status {
        204 => AckEnd::Confirmed,
        other => AckEnd::Refused(u16::try_from(other).unwrap_or(u16::MAX)),
    }
}

/// This machine's wall clock, epoch ms: the clock of due times.
fn now_millis() -> i64 {
    SystemClock.now().as_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(value: Value) -> Json {
        Json { text: value.to_string(), value }
    }

    #[test]
    fn a_lease_answer_reads_as_leases_or_as_not_the_api() {
        let lease =
            json!({"lease_id": "l1", "delivery_id": "d1", "task": {"key": "k", "due_at": "2026-11-30T12:00:00.000Z"}});
        let leases = leases_of(answer(json!({ "leases": [lease] }))).unwrap();
        assert_eq!(
            (leases[0].key.as_str(), leases[0].lease_id.as_str(), leases[0].delivery_id.as_str()),
            ("k", "l1", "d1")
        );
        assert_eq!(leases[0].due_ms, Timestamp::parse("2026-11-30T12:00:00.000Z").unwrap().as_millis());
        assert!(leases_of(answer(json!({ "leases": [] }))).unwrap().is_empty());
        for wrong in [json!({}), json!({ "leases": [{"lease_id": "l1", "task": {"key": "k"}}] })] {
            assert!(matches!(leases_of(answer(wrong)), Err(ClientError::Protocol { .. })));
        }
    }

    #[test]
    fn acks_end_confirmed_only_on_204() {
        assert_eq!(
            [ack_end(204), ack_end(409), ack_end(200)],
            [AckEnd::Confirmed, AckEnd::Refused(409), AckEnd::Refused(200)]
        );
    }

    #[tokio::test]
    async fn a_stop_wakes_tasks_and_threads_that_wait_on_it() {
        let stop = Stop::default();
        let waiting = tokio::spawn({
            let stop = stop.clone();
            async move { stop.stopped().await }
        });
        let backing_off = std::thread::spawn({
            let stop = stop.clone();
            move || stop.back_off(Duration::from_secs(3600))
        });
        assert!(!stop.is_stopped());
        stop.stop();
        tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
        backing_off.join().unwrap();
        stop.backed_off(Duration::from_secs(3600)).await;
    }
}
