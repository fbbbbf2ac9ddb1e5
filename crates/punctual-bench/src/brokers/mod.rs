//! `brokers`: punctual publishing due tasks into RabbitMQ and NATS JetStream through
//! its push actions, and the seeds' RabbitMQ delay (per-message TTL + dead letter)
//! beside punctual on the same delays.
//!
//! The run starts its own `punctual serve` (on `--store`, see [`super::serve`]) with a
//! config file holding three queues' actions and `[egress] allow` for the brokers'
//! hosts, then, one after the other:
//!
//! 1. **RabbitMQ burst**: N tasks (`--tasks`, default 100,000) due at one instant in
//!    `bench.rabbitmq`, whose `rabbitmq` action publishes to the run's exchange, bound
//!    to the run's queue; one consumer here reads every message (auto-ack) and records
//!    lag = receipt − the `due_at` header.
//! 2. **NATS burst**: the same in `bench.nats`, whose `nats` action publishes to the
//!    run's subject, captured by the run's JetStream stream; an ephemeral pull consumer
//!    reads it, lag from the `Punctual-Due-At` header.
//! 3. **Delays**: M messages (`--delays`, default 10,000) with delays uniform over
//!    `--window` (20 s), in random order. First the seeds' way ([`rabbitmq::ttl_dead_letter`]):
//!    each published with that delay as its `expiration` into a holding queue whose
//!    dead-letter exchange routes expired messages to a work queue. Then punctual: the
//!    same delays as tasks of `bench.rabbitmq.delays`, published by its action when due.
//!    Lateness = receipt − intended due (submission + delay).
//!
//! Each message is counted once by its delivery id (`delivery_id` header, or
//! `Nats-Msg-Id`; the same for every try of a task), so a second publish of a task is
//! a duplicate, not a hidden loss; lost = expected − distinct received. Before counting,
//! the run waits until punctual holds none of the queue's tasks (every publish
//! confirmed) and the broker has handed over all it holds.
//!
//! `--broker rabbitmq` runs 1 and 3, `--broker nats` 2 alone.
//!
//! Everything the run declares is named `punctual-bench-<pid>-<ms>…` and deleted at the
//! end, also on an error or Ctrl-C ([`run`] handles Ctrl-C itself so it can). Should
//! the process be killed outright, RabbitMQ still removes the queues (`x-expires`: a
//! minute unused; the holding queue `--window` + 10 minutes) and then the exchanges
//! (auto-delete); a NATS stream stays, its messages expiring after an hour (`max_age`).

mod nats;
mod rabbitmq;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use indicatif::ProgressBar;
use punctual_client::Url;
use serde::Serialize;
use tokio::sync::Notify;

use crate::args::BenchArgs;
use crate::driver::{BenchTask, Driver, HttpDriver, PullLoops};
use crate::poll::{self, Look};
use crate::report::{Progress, figures, millis, rate, table, thousands, times};
use crate::serve::toml_string;
use crate::stats::{LagStats, per_second, ratio};
use crate::{DEFAULT_TASKS, ServedTarget};

/// The queue whose action publishes the RabbitMQ burst.
const RABBITMQ_QUEUE: &str = "bench.rabbitmq";
/// The queue whose action publishes the NATS burst.
const NATS_QUEUE: &str = "bench.nats";
/// The queue whose action publishes punctual's side of the delays.
const DELAYS_QUEUE: &str = "bench.rabbitmq.delays";
const BATCH: usize = 1_000;
/// How long after the due instant (or the last due time) the last message may take.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);
/// How long to wait, once every message arrived, for punctual and the broker to settle.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
/// How often to look whether they settled.
const SETTLE_CHECK: Duration = Duration::from_millis(20);
/// A message this much later than due counts as late in the delays' comparison.
const LATE_MS: i64 = 1_000;

/// The names this run declares on the brokers, all under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    prefix: String,
}

impl Names {
    fn new() -> Names {
        Names { prefix: crate::run_prefix() }
    }

    /// `<prefix>.<what>`.
    pub(crate) fn name(&self, what: &str) -> String {
        format!("{}.{what}", self.prefix)
    }

    /// The JetStream stream's name (no dots allowed).
    pub(crate) fn stream(&self) -> String {
        self.prefix.clone()
    }
}

/// One message as read off a broker: its delivery id and due time (epoch ms).
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) id: String,
    pub(crate) due_ms: i64,
}

/// The messages of one phase, each delivery id counted once.
#[derive(Debug)]
pub(crate) struct Received {
    state: Mutex<Tally>,
    expected: usize,
    all: Notify,
    bar: ProgressBar,
}

/// What a [`Received`] counted.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Receipt − due, one per distinct delivery id.
    pub(crate) lags: Vec<i64>,
    seen: HashSet<String>,
    /// Every message, duplicates included.
    pub(crate) messages: u64,
    pub(crate) duplicates: u64,
    /// Messages without a readable delivery id or due time, and why the last was not.
    pub(crate) unreadable: u64,
    pub(crate) unreadable_why: Option<String>,
}

impl Received {
    pub(crate) fn new(expected: usize, bar: ProgressBar) -> Arc<Received> {
        Arc::new(Received { state: Mutex::new(Tally::default()), expected, all: Notify::new(), bar })
    }

    /// Records one message, received at `received_ms`, or why it could not be read.
    pub(crate) fn record(&self, message: Result<Message, String>, received_ms: i64) {
        let distinct = {
            let mut tally = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            tally.messages += 1;
            let message = match message {
                Ok(message) => message,
                Err(why) => {
                    tally.unreadable += 1;
                    tally.unreadable_why = Some(why);
                    return;
                }
            };
            if !tally.seen.insert(message.id) {
                tally.duplicates += 1;
                return;
            }
            tally.lags.push(received_ms - message.due_ms);
            tally.lags.len()
        };
        self.bar.inc(1);
        if distinct == self.expected {
            self.all.notify_one();
        }
    }

    fn distinct(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).lags.len()
    }

    /// Every message so far, duplicates and unreadable ones included.
    pub(crate) fn messages(&self) -> u64 {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).messages
    }

    /// Waits until every expected message arrived; false after `timeout`.
    async fn wait_all(&self, timeout: Duration) -> bool {
        if self.distinct() >= self.expected {
            return true;
        }
        tokio::time::timeout(timeout, self.all.notified()).await.is_ok() || self.distinct() >= self.expected
    }

    fn take(&self) -> Tally {
        self.bar.finish_and_clear();
        std::mem::take(&mut *self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Where a phase's messages are read from, to ask whether it has handed over all.
pub(crate) trait Source {
    /// True when the broker holds nothing more for the consumer than `received` has.
    fn settled(&self, received: &Received) -> impl Future<Output = Result<bool>> + Send;
}

/// A broker's burst: N tasks due at one instant, published by punctual's action.
#[derive(Debug, Serialize)]
pub(crate) struct BrokerBurst {
    pub(crate) broker: &'static str,
    /// Where punctual published and where the consumer read.
    pub(crate) route: String,
    pub(crate) tasks: usize,
    /// Whether every task was stored before the instant they were due.
    pub(crate) scheduled_before_due: bool,
    pub(crate) received: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    pub(crate) unreadable: u64,
    /// Due instant → the last message received.
    pub(crate) drained_in_ms: u64,
    pub(crate) messages_per_second: f64,
    /// Receipt − due (the message's due time header).
    pub(crate) lag_ms: LagStats,
}

/// One approach's lateness on the delays.
#[derive(Debug, Serialize)]
pub(crate) struct Lateness {
    pub(crate) approach: String,
    pub(crate) messages: usize,
    pub(crate) received: usize,
    pub(crate) duplicates: u64,
    pub(crate) lost: usize,
    pub(crate) unreadable: u64,
    /// Receipt − intended due (submission + delay).
    pub(crate) lateness_ms: LagStats,
    /// Messages more than [`LATE_MS`] late.
    pub(crate) over_1s_late: usize,
}

/// The seeds' TTL + dead letter beside punctual, on the same delays.
#[derive(Debug, Serialize)]
pub(crate) struct Delays {
    pub(crate) messages: usize,
    /// Delays are uniform over 0..window.
    pub(crate) window_ms: u64,
    pub(crate) ttl_dead_letter: Lateness,
    pub(crate) punctual: Lateness,
    /// TTL + dead letter's lateness / punctual's (punctual's floored at 1 ms).
    pub(crate) ttl_over_punctual: LatenessRatios,
}

#[derive(Debug, Serialize)]
pub(crate) struct LatenessRatios {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

/// The `brokers` workload's results.
#[derive(Debug, Serialize)]
pub(crate) struct BrokersReport {
    pub(crate) workload: &'static str,
    pub(crate) target: String,
    /// The push actions' `concurrency` (publishes in flight per queue).
    pub(crate) action_concurrency: u32,
    /// Each part, unless `--broker` left it out (the delays go with RabbitMQ).
    pub(crate) rabbitmq: Option<BrokerBurst>,
    pub(crate) nats: Option<BrokerBurst>,
    pub(crate) delays: Option<Delays>,
    pub(crate) notes: Vec<String>,
}

/// Runs `punctual bench brokers`, emitting its table (or with `--json` an array of its
/// one report). Ctrl-C stops the server and deletes what the run declared, then ends
/// the run as an error.
pub(crate) async fn run(args: BenchArgs, emit: fn(&str) -> Result<()>) -> Result<()> {
    if args.server.is_some() {
        bail!(
            "brokers configures the push actions of the server it runs on, so it starts its own punctual serve: \
             run it without --server (on --store)"
        );
    }
    let names = Names::new();
    let progress = Progress::new(args.quiet);
    let rabbit = match args.broker.rabbitmq() {
        true => Some(rabbitmq::Rabbit::connect(&args.rabbitmq, &names, args.window).await?),
        false => None,
    };
    let nats = match args.broker.nats() {
        true => match nats::Nats::connect(&args.nats, &names).await {
            Ok(nats) => Some(nats),
            Err(e) => {
                if let Some(rabbit) = &rabbit {
                    rabbit.delete().await;
                }
                return Err(e);
            }
        },
        false => None,
    };
    let result = tokio::select! {
        report = measure(&args, &names, rabbit.as_ref(), nats.as_ref(), &progress) => report,
        signal = tokio::signal::ctrl_c() => {
            signal.context("cannot listen for Ctrl-C")?;
            Err(anyhow::anyhow!(
                "interrupted: the server this run started was stopped and its exchanges, queues and stream deleted"
            ))
        }
    };
    // `measure` stopped the server (dropped on every path out of it) before this.
    if let Some(rabbit) = &rabbit {
        rabbit.delete().await;
    }
    if let Some(nats) = &nats {
        nats.delete().await;
    }
    let report = result?;
    if args.json {
        emit(&serde_json::to_string_pretty(&[&report])?)?;
    } else {
        emit(&format!("{}\n", report.table()))?;
    }
    Ok(())
}

/// The config file of the served server: egress to the brokers' hosts and the three
/// queues' actions (all three whatever `--broker` says: an action connects only when
/// it publishes).
fn server_config(args: &BenchArgs, names: &Names) -> Result<String> {
    let mut hosts = Vec::new();
    for url in [&args.rabbitmq, &args.nats] {
        let host = Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned()))
            .with_context(|| format!("no host in {}", redact(url)))?;
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    let allow = hosts.iter().map(|h| toml_string(h)).collect::<Vec<_>>().join(", ");
    let rabbitmq = |queue: &str, routing_key: &str| {
        format!(
            "[queues.{}.action]\nkind = \"rabbitmq\"\nurl = {}\nexchange = {}\nrouting_key = {}\nconcurrency = {}\n",
            toml_string(queue),
            toml_string(&args.rabbitmq),
            toml_string(&names.name(rabbitmq::EXCHANGE)),
            toml_string(routing_key),
            args.concurrency
        )
    };
    Ok(format!(
        "[egress]\nallow = [{allow}]\n\n{}\n{}\n[queues.{}.action]\nkind = \"nats\"\nurl = {}\nsubject = {}\nconcurrency = {}\n",
        rabbitmq(RABBITMQ_QUEUE, rabbitmq::BURST),
        rabbitmq(DELAYS_QUEUE, rabbitmq::DELAYS),
        toml_string(NATS_QUEUE),
        toml_string(&args.nats),
        toml_string(&names.name(nats::BURST)),
        args.concurrency
    ))
}

async fn measure(
    args: &BenchArgs,
    names: &Names,
    rabbit: Option<&rabbitmq::Rabbit>,
    nats: Option<&nats::Nats>,
    progress: &Progress,
) -> Result<BrokersReport> {
    let config = server_config(args, names)?;
    let served = ServedTarget::start(args, Some(&config)).await?;
    let target = served.describe();
    // The pull loops' settings are unused: the actions consume.
    let pull = PullLoops { loops: 1, lease_max: args.lease_max, long_poll: args.long_poll, acks: args.acks };
    let driver = HttpDriver::new(served.served.url(), None, pull)?;
    let tasks = args.tasks.map_or(DEFAULT_TASKS, |n| n as usize);
    let mut notes = Vec::new();

    let rabbitmq = match rabbit {
        Some(rabbit) => {
            let received = Received::new(tasks, progress.bar(tasks as u64, "rabbitmq: received"));
            let source = rabbit.consume(rabbitmq::BURST, received.clone()).await?;
            let burst = burst(&driver, RABBITMQ_QUEUE, &received, &source, progress, &mut notes).await;
            drop(source);
            Some(BrokerBurst { broker: "rabbitmq", route: rabbit.route(rabbitmq::BURST), ..burst.context("rabbitmq")? })
        }
        None => None,
    };
    let nats = match nats {
        Some(nats) => {
            let received = Received::new(tasks, progress.bar(tasks as u64, "nats: received"));
            let source = nats.consume(received.clone()).await?;
            let burst = burst(&driver, NATS_QUEUE, &received, &source, progress, &mut notes).await;
            drop(source);
            Some(BrokerBurst { broker: "nats", route: nats.route(), ..burst.context("nats")? })
        }
        None => None,
    };
    let delays = match rabbit {
        Some(rabbit) => Some(delays(args, rabbit, &driver, progress, &mut notes).await?),
        None => None,
    };
    drop(served);
    Ok(BrokersReport {
        workload: "brokers",
        target,
        action_concurrency: args.concurrency,
        rabbitmq,
        nats,
        delays,
        notes,
    })
}

/// The delays' comparison: the seeds' TTL + dead letter, then punctual's action.
async fn delays(
    args: &BenchArgs,
    rabbit: &rabbitmq::Rabbit,
    driver: &HttpDriver,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> Result<Delays> {
    let delays = args.delays as usize;
    let window = args.window;
    let due_in: Vec<i64> = (0..delays).map(|_| (rand::random::<f64>() * window.as_millis() as f64) as i64).collect();
    let received = Received::new(delays, progress.bar(delays as u64, "ttl + dead letter: received"));
    let ttl = rabbit.ttl_dead_letter(&due_in, received.clone(), progress).await?;
    let ttl_dead_letter = lateness(rabbit.ttl_route(), delays, received.take());
    if !ttl {
        notes.push(format!(
            "only {} of {delays} TTL messages came out within {}s of the last due time",
            ttl_dead_letter.received,
            DRAIN_LIMIT.as_secs()
        ));
    }

    let received = Received::new(delays, progress.bar(delays as u64, "punctual delays: received"));
    let source = rabbit.consume(rabbitmq::DELAYS, received.clone()).await?;
    let ours = delayed(driver, &due_in, &received, &source, progress).await;
    drop(source);
    ours.context("punctual delays")?;
    let punctual = lateness(rabbit.delays_route(), delays, received.take());
    if punctual.lost > 0 {
        notes.push(format!(
            "only {} of {delays} of punctual's delayed messages arrived within {}s of the last due time",
            punctual.received,
            DRAIN_LIMIT.as_secs()
        ));
    }
    let ttl_over_punctual = LatenessRatios {
        p50: ratio(ttl_dead_letter.lateness_ms.p50, punctual.lateness_ms.p50),
        p99: ratio(ttl_dead_letter.lateness_ms.p99, punctual.lateness_ms.p99),
        max: ratio(ttl_dead_letter.lateness_ms.max, punctual.lateness_ms.max),
    };
    Ok(Delays { messages: delays, window_ms: window.as_millis() as u64, ttl_dead_letter, punctual, ttl_over_punctual })
}

/// Schedules `tasks` due at one instant in `queue` and waits until `received` read
/// them all off the broker (or [`DRAIN_LIMIT`] passed), then until punctual and the
/// broker settled.
async fn burst(
    driver: &HttpDriver,
    queue: &str,
    received: &Received,
    source: &impl Source,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> Result<BrokerBurst> {
    let tasks = received.expected;
    // Scheduling over HTTP stores some 20,000 tasks a second here and more elsewhere:
    // the instant is far enough ahead that they are stored before it.
    let at = driver.now_ms() + 3_000 + tasks as i64 / 20;
    let bar = progress.bar(tasks as u64, &format!("{queue}: scheduled"));
    for first in (0..tasks).step_by(BATCH) {
        let batch = (first..(first + BATCH).min(tasks)).map(|i| BenchTask::new(i as u64, at)).collect::<Vec<_>>();
        let n = batch.len() as u64;
        driver.schedule(queue, batch).await.context("scheduling the burst")?;
        bar.inc(n);
    }
    bar.finish_and_clear();
    let scheduled_before_due = driver.now_ms() <= at;
    if !scheduled_before_due {
        notes.push(format!("{queue}: scheduling ended after the due instant: the drain time includes part of it"));
    }
    let wait = Duration::from_millis((at - driver.now_ms()).max(0) as u64) + DRAIN_LIMIT;
    if !received.wait_all(wait).await {
        notes.push(format!(
            "{queue}: only {} of {tasks} arrived within {}s of the due instant",
            received.distinct(),
            DRAIN_LIMIT.as_secs()
        ));
    } else {
        settle(driver, queue, received, source).await?;
    }
    let tally = received.take();
    if let Some(why) = &tally.unreadable_why {
        notes.push(format!("{queue}: {} unreadable messages, the last: {why}", tally.unreadable));
    }
    let lag = LagStats::of(tally.lags);
    let drained_in_ms = lag.max.max(0) as u64;
    Ok(BrokerBurst {
        broker: "",
        route: String::new(),
        tasks,
        scheduled_before_due,
        received: lag.count,
        duplicates: tally.duplicates,
        lost: tasks - lag.count,
        unreadable: tally.unreadable,
        drained_in_ms,
        messages_per_second: per_second(lag.count as u64, Duration::from_millis(drained_in_ms.max(1))),
        lag_ms: lag,
    })
}

/// Waits until punctual holds none of `queue`'s tasks (each publish confirmed, so no
/// try is left to publish a duplicate) and `source` handed over all it holds.
async fn settle(driver: &HttpDriver, queue: &str, received: &Received, source: &impl Source) -> Result<()> {
    let what = format!("punctual and the broker to settle on {queue} after every message arrived");
    poll::until(&what, SETTLE_LIMIT, SETTLE_CHECK, async || {
        let remaining = driver.remaining(queue).await?;
        Ok(if remaining > 0 {
            Look::NotYet(anyhow!("punctual still holds {remaining} of its tasks"))
        } else if !source.settled(received).await? {
            Look::NotYet(anyhow!("the broker still holds messages"))
        } else {
            Look::Ready(())
        })
    })
    .await
}

/// Schedules one task per delay of `due_in` (ms after its batch is sent) in
/// [`DELAYS_QUEUE`] and waits until `received` has them all.
async fn delayed(
    driver: &HttpDriver,
    due_in: &[i64],
    received: &Received,
    source: &impl Source,
    progress: &Progress,
) -> Result<()> {
    let bar = progress.bar(due_in.len() as u64, "punctual delays: scheduled");
    let mut last_due = 0;
    for (n, chunk) in due_in.chunks(BATCH).enumerate() {
        let now = driver.now_ms();
        let batch = chunk
            .iter()
            .enumerate()
            .map(|(i, delay)| BenchTask::new((n * BATCH + i) as u64, now + delay))
            .collect::<Vec<_>>();
        last_due = last_due.max(now + chunk.iter().max().copied().unwrap_or(0));
        driver.schedule(DELAYS_QUEUE, batch).await.context("scheduling the delays")?;
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let wait = Duration::from_millis((last_due - driver.now_ms()).max(0) as u64) + DRAIN_LIMIT;
    if received.wait_all(wait).await {
        settle(driver, DELAYS_QUEUE, received, source).await?;
    }
    Ok(())
}

fn lateness(approach: String, messages: usize, tally: Tally) -> Lateness {
    let over_1s_late = tally.lags.iter().filter(|l| **l > LATE_MS).count();
    let lateness_ms = LagStats::of(tally.lags);
    Lateness {
        approach,
        messages,
        received: lateness_ms.count,
        duplicates: tally.duplicates,
        lost: messages - lateness_ms.count,
        unreadable: tally.unreadable,
        lateness_ms,
        over_1s_late,
    }
}

/// `url` without its password.
pub(crate) fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

impl BrokerBurst {
    fn table(&self) -> String {
        let lag = &self.lag_ms;
        figures(
            &format!(
                "{}: {} tasks due at one instant, published by punctual's action\n{}",
                self.broker,
                thousands(self.tasks as f64),
                self.route
            ),
            vec![
                ("received".into(), format!("{} of {}", thousands(self.received as f64), thousands(self.tasks as f64))),
                ("duplicates".into(), thousands(self.duplicates as f64)),
                ("lost".into(), thousands(self.lost as f64)),
                ("drained in (due → last received)".into(), millis(self.drained_in_ms)),
                ("rate".into(), rate(self.messages_per_second)),
                (
                    "lag p50 / p99 / max".into(),
                    format!(
                        "{} / {} / {} ms",
                        thousands(lag.p50 as f64),
                        thousands(lag.p99 as f64),
                        thousands(lag.max as f64)
                    ),
                ),
            ],
        )
    }
}

impl Delays {
    fn table(&self) -> String {
        let row = |l: &Lateness| {
            vec![
                l.approach.clone(),
                l.lateness_ms.p50.to_string(),
                l.lateness_ms.p99.to_string(),
                l.lateness_ms.max.to_string(),
                thousands(l.over_1s_late as f64),
                format!("{} of {}", thousands(l.received as f64), thousands(l.messages as f64)),
                thousands(l.duplicates as f64),
            ]
        };
        let rows = table(
            &["APPROACH", "P50 MS", "P99 MS", "MAX MS", "> 1 S LATE", "RECEIVED", "DUPLICATES"],
            vec![row(&self.ttl_dead_letter), row(&self.punctual)],
            &[1, 2, 3, 4, 5, 6],
        );
        let r = &self.ttl_over_punctual;
        format!(
            "delays: {} messages, delays uniform over {}, published in random order; lateness = receipt − \
             (submission + delay)\n{rows}\nTTL + dead letter / punctual: p50 {}, p99 {}, max {} (punctual's \
             floored at 1 ms)",
            thousands(self.messages as f64),
            millis(self.window_ms),
            times(r.p50),
            times(r.p99),
            times(r.max),
        )
    }
}

impl BrokersReport {
    pub(crate) fn table(&self) -> String {
        let mut text = format!("brokers: on {}, push actions of concurrency {}", self.target, self.action_concurrency);
        let parts = [
            self.rabbitmq.as_ref().map(BrokerBurst::table),
            self.nats.as_ref().map(BrokerBurst::table),
            self.delays.as_ref().map(Delays::table),
        ];
        for part in parts.into_iter().flatten() {
            text.push_str(&format!("\n\n{part}"));
        }
        for note in &self.notes {
            text.push_str(&format!("\nnote: {note}"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, due_ms: i64) -> Result<Message, String> {
        Ok(Message { id: id.to_owned(), due_ms })
    }

    #[tokio::test]
    async fn a_second_message_of_a_delivery_is_a_duplicate() {
        let received = Received::new(2, ProgressBar::hidden());
        received.record(message("a", 100), 130);
        received.record(message("a", 100), 150);
        received.record(Err("no due_at header".into()), 150);
        assert!(!received.wait_all(Duration::ZERO).await);
        received.record(message("b", 100), 110);
        assert!(received.wait_all(Duration::from_secs(5)).await);
        let tally = received.take();
        assert_eq!((tally.lags, tally.duplicates, tally.unreadable, tally.messages), (vec![30, 10], 1, 1, 4));
    }

    #[test]
    fn lateness_counts_the_late_ones() {
        let tally = Tally { lags: vec![0, 999, 1_000, 1_001, 5_000], ..Tally::default() };
        let l = lateness("ttl".into(), 6, tally);
        assert_eq!((l.received, l.lost, l.over_1s_late, l.lateness_ms.max), (5, 1, 2, 5_000));
    }

    #[test]
    fn passwords_stay_out_of_reports() {
        assert_eq!(redact("amqp://guest:guest@127.0.0.1:5672/%2f"), "amqp://guest:***@127.0.0.1:5672/%2f");
        assert_eq!(redact("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    }
}
