//! Cron repeats through a real re-arm: a task scheduled on a manual clock near a
//! daylight-saving change, leased when due, acked `done`, its new `due_at` read back
//! from the embedded store, occurrence after occurrence, each compared with the
//! reference model (punctual-testkit's `cron_model`). Guards against the path users
//! take diverging from `CronRule::next_after` (the core's differential test covers that
//! function alone): a re-arm computed from the due time instead of the ack's now, a
//! first occurrence at once instead of at the next matching time, and issue 14's
//! findings (`0 1-3 * * *` firing 01:00 twice when New York falls back, `0 1,2 * * *`
//! dropping the skipped 02:00) coming back on this path.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::sync::Arc;
use std::time::Duration;

use jiff::SignedDuration;
use jiff::tz::TimeZone;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use punctual::{
    Clock, Engine, EngineConfig, LeaseOptions, ManualClock, Outcome, Repeat, SqliteStore, TaskSpec, Timestamp,
};
use punctual_testkit::cron_gen;
use punctual_testkit::cron_model::Cron;

/// Occurrences acked per case.
const OCCURRENCES: usize = 5;

/// Generated cases on top of the issue's.
const GENERATED: usize = 24;

/// One case: `expr` in `zone`, scheduled at `start`; each occurrence leased `lag` after
/// it falls due and acked `work` later.
#[derive(Debug, Clone)]
struct Case {
    expr: String,
    zone: &'static str,
    start: jiff::Timestamp,
    lag: Duration,
    work: Duration,
}

fn issue_case(expr: &str, zone: &'static str, start: &str) -> Case {
    Case { expr: expr.into(), zone, start: start.parse().unwrap(), lag: Duration::ZERO, work: Duration::from_secs(1) }
}

/// The issue's reports, then generated expressions from instants near transitions.
fn cases() -> Vec<Case> {
    let mut cases = vec![
        issue_case("0 1-3 * * *", "America/New_York", "2026-11-01T05:10:00Z"),
        issue_case("0 1,2 * * *", "America/New_York", "2026-03-08T06:10:00Z"),
        issue_case("0,30 1-2 * * *", "America/New_York", "2026-03-08T06:10:00Z"),
        issue_case("*/30 * * * *", "America/New_York", "2026-11-01T05:10:00Z"),
        issue_case("0 0 1 * */1", "UTC", "2026-12-01T00:00:00Z"),
        issue_case("0 0 */1 * 1", "UTC", "2026-12-01T00:00:00Z"),
        issue_case("0 1-23/2 * * *", "Europe/London", "2026-03-28T23:10:00Z"),
        issue_case("0 1-23/2 * * *", "Europe/London", "2026-10-24T23:10:00Z"),
        issue_case("0,30 1-2 * * *", "Australia/Lord_Howe", "2026-10-03T14:00:00Z"),
        issue_case("0,30 1-2 * * *", "Australia/Lord_Howe", "2026-04-04T13:50:00Z"),
    ];
    // Deterministic: the same cases every run, so a failure reproduces.
    let mut runner = TestRunner::deterministic();
    let strategy = (
        cron_gen::expression().prop_filter("matches some date", |e| e.meaning.is_some()),
        cron_gen::zone_and_start(),
        0u64..2_000,
        0u64..3_000,
    );
    for _ in 0..GENERATED {
        let (expr, (zone, start), lag, work) = strategy.new_tree(&mut runner).unwrap().current();
        let (lag, work) = (Duration::from_millis(lag), Duration::from_millis(work));
        cases.push(Case { expr: expr.text, zone, start, lag, work });
    }
    cases
}

fn to_punctual(t: jiff::Timestamp) -> Timestamp {
    Timestamp::from_millis(t.as_millisecond())
}

fn model_next(cron: &Cron, tz: &TimeZone, t: Timestamp) -> Option<Timestamp> {
    let t = t.to_jiff();
    cron.next_after(tz, t, t + SignedDuration::from_hours(24 * 366 * 60)).map(to_punctual)
}

fn show(t: Timestamp, tz: &TimeZone) -> String {
    format!("{t} ({})", t.to_jiff().to_zoned(tz.clone()).datetime())
}

/// Runs one case on its own engine and store (the clock only moves forward); the first
/// disagreement, described.
async fn run(case: &Case) -> Result<(), String> {
    let what = format!("{:?} in {} from {}", case.expr, case.zone, case.start);
    let cron = Cron::parse(&case.expr).unwrap();
    let tz = TimeZone::get(case.zone).unwrap();
    let repeat = Repeat::cron(&case.expr, case.zone).map_err(|e| format!("{what}: refused: {e}"))?;
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(to_punctual(case.start));
    let mut config = EngineConfig::default().clock(Arc::new(clock.clone()));
    config.watchdog = None;
    let engine = Engine::start(SqliteStore::open(dir.path()).unwrap(), config);

    let scheduled = engine.schedule("cron", "k", TaskSpec::now().repeat(repeat)).await.unwrap().task.unwrap();
    let mut now = to_punctual(case.start);
    let mut due = scheduled.due_at;
    let mut result = Ok(());
    for occurrence in 1..=OCCURRENCES {
        let Some(expected) = model_next(&cron, &tz, now) else { break };
        if due != expected {
            let step = if occurrence == 1 { "first due".to_string() } else { format!("re-arm #{}", occurrence - 1) };
            result = Err(format!(
                "{what}: {step} from {}: engine {}, model {}",
                show(now, &tz),
                show(due, &tz),
                show(expected, &tz)
            ));
            break;
        }
        clock.set(due.saturating_add(case.lag));
        let leases = engine.lease("cron", LeaseOptions::default()).await.unwrap();
        assert_eq!(leases.len(), 1, "{what}: occurrence {occurrence} due at {due} is leased");
        clock.advance(case.work);
        now = clock.now();
        engine.ack(&leases[0].token, Outcome::Done).await.unwrap();
        let task = engine.get("cron", "k").await.unwrap();
        due = task.unwrap_or_else(|| panic!("{what}: the repeat ended after occurrence {occurrence}")).due_at;
    }
    engine.shutdown().await.unwrap();
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_task_is_re_armed_as_the_model_says() {
    let mut failures = Vec::new();
    for case in cases() {
        if let Err(disagreement) = run(&case).await {
            failures.push(disagreement);
        }
    }
    assert!(failures.is_empty(), "{} case(s) disagree:\n{}", failures.len(), failures.join("\n"));
}
