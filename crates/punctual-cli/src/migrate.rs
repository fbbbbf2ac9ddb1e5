//! `punctual migrate`: copies a deployment from one store to another (the embedded store,
//! Redis, a Cluster), then compares them.
//!
//! What moves, in this order: calendars, queue records (settings and pauses), then for
//! each queue its task histories page by page through [`Store::import_histories`], its
//! tasks page by page in due order through [`Store::import`] (each tells `imported`
//! after the history it brought), then its dedupe records that still hold. Invariants:
//! - nothing in the destination is overwritten: a task, calendar or queue record already
//!   there stays, and a history gains only the source's events older than its own, so
//!   running it again resumes an interrupted run and writes nothing twice; a calendar or
//!   record that differs from the source's is reported by the check;
//! - the check reads every task of the source and the destination's task of its key, and
//!   passes only when each is there with every field equal but the store's own identity,
//!   id and fence (see [`transitions::imported`](punctual_core::transitions::imported));
//! - the source is only read.

use std::path::Path;

use anyhow::{Context, Result, bail};
use punctual_core::calendar::{CalendarChange, CalendarChangeRequest};
use punctual_core::store::{
    CompletionsRequest, HistoriesRequest, ImportRequest, Imported, ListRequest, QueueChangeRequest,
};
use punctual_core::transitions::as_moved;
use punctual_core::{Clock, QueueChange, QueueName, Stopwatch, Store, SystemClock, Task, Timestamp};
use punctual_server::OpenedStore;
use serde::Serialize;
use serde_json::json;

use crate::cli::migrate::{BATCH, MigrateArgs};

/// Examples of differing tasks the report names.
const EXAMPLES: usize = 10;

/// Progress is printed every this many tasks of a queue.
const PROGRESS_EVERY: u64 = 10_000;

pub(crate) async fn run(args: &MigrateArgs) -> Result<String> {
    let from = open(&args.from).await.with_context(|| format!("cannot open the source {}", args.from))?;
    let to = open(&args.to).await.with_context(|| format!("cannot open the destination {}", args.to))?;
    if let OpenedStore::Redis(source) = &from {
        let live = source.nodes().live(source.clock().now()).await?;
        if !live.is_empty() {
            eprintln!(
                "warning: {} server(s) run on the source ({}): what they change during the copy may be missed, \
                 and the check will name it; stop them for a move",
                live.len(),
                live.join(", ")
            );
        }
    }
    use OpenedStore::{Embedded, Redis};
    match (from, to) {
        (Embedded(from), Embedded(to)) => migrate(&from, &to, args).await,
        (Embedded(from), Redis(to)) => migrate(&from, &to, args).await,
        (Redis(from), Embedded(to)) => migrate(&from, &to, args).await,
        (Redis(from), Redis(to)) => migrate(&from, &to, args).await,
    }
}

/// A side given as a server's config file (`*.toml`, a file) or a store's location.
async fn open(side: &str) -> Result<OpenedStore> {
    let path = Path::new(side);
    if side.ends_with(".toml") && path.is_file() {
        punctual_server::open_configured_store(Some(path), None).await
    } else {
        punctual_server::open_configured_store(None, Some(side)).await
    }
}

/// What was copied of one queue.
#[derive(Debug, Default, Serialize)]
struct QueueReport {
    queue: String,
    /// Tasks written into the destination.
    written: u64,
    /// Tasks whose key the destination held already (left as they are).
    present: u64,
    /// Dedupe records read from the source (those whose key had none are written).
    records: u64,
    /// History events written into the destination.
    history_events: u64,
}

/// Calendars or queue records: copied, already there alike, already there different.
#[derive(Debug, Default, Serialize)]
struct RecordsReport {
    copied: Vec<String>,
    same: u64,
    differ: Vec<String>,
}

/// The comparison of every task of the source with the destination.
#[derive(Debug, Default, Serialize)]
struct CheckReport {
    same: u64,
    missing: u64,
    differ: u64,
    /// Up to [`EXAMPLES`] `queue/key: what` lines.
    examples: Vec<String>,
}

impl CheckReport {
    fn passed(&self, calendars: &RecordsReport, settings: &RecordsReport) -> bool {
        self.missing == 0 && self.differ == 0 && calendars.differ.is_empty() && settings.differ.is_empty()
    }

    fn example(&mut self, line: String) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(line);
        }
    }
}

/// What a copy moved.
#[derive(Debug, Default)]
struct Copied {
    calendars: RecordsReport,
    settings: RecordsReport,
    queues: Vec<QueueReport>,
}

/// Exports the Redis store `store` (a URL or a server's config file) into a new embedded
/// store in `dir`: `punctual backup --store`.
pub(crate) async fn export(store: &str, dir: &Path) -> Result<()> {
    let from = open(store).await.with_context(|| format!("cannot open {}", punctual_redis::redacted(store)))?;
    let OpenedStore::Redis(from) = from else {
        bail!("{store} is an embedded store: back it up with --data DIR, which takes one consistent copy");
    };
    let to = punctual_sqlite::SqliteStore::open(dir)
        .with_context(|| format!("cannot make an embedded store in {}", dir.display()))?;
    copy(&from, &to, &from.queue_names().await?, BATCH, false).await?;
    to.close().await?;
    Ok(())
}

/// Copies calendars, queue records, and the tasks and dedupe records of `queues` (only
/// compares calendars and queue records when `check_only`).
async fn copy<A: Store, B: Store>(
    from: &A,
    to: &B,
    queues: &[QueueName],
    batch: u32,
    check_only: bool,
) -> Result<Copied> {
    if from.secret().await? == to.secret().await? {
        bail!("the source and the destination are the same store; name another destination");
    }
    let clock = SystemClock;
    let calendars = calendars(from, to, check_only, clock.now()).await?;
    let settings = queue_records(from, to, check_only, clock.now()).await?;
    let mut copied = Vec::new();
    if !check_only {
        for queue in queues {
            copied.push(copy_queue(from, to, queue, batch, &clock).await?);
        }
    }
    Ok(Copied { calendars, settings, queues: copied })
}

async fn migrate<A: Store, B: Store>(from: &A, to: &B, args: &MigrateArgs) -> Result<String> {
    let watch = Stopwatch::start();
    // Every queue holding a task or a dedupe record.
    let queues = from.queue_names().await?;
    let Copied { calendars, settings, queues: copied } = copy(from, to, &queues, args.batch, args.check).await?;
    eprintln!("comparing every task of the source with the destination…");
    let mut check = CheckReport::default();
    for queue in &queues {
        compare_queue(from, to, queue, args.batch, &mut check).await?;
    }
    let passed = check.passed(&calendars, &settings);
    let seconds = watch.elapsed().as_secs_f64();
    let text = if args.json {
        json!({
            "queues": copied,
            "calendars": calendars,
            "settings": settings,
            "check": check,
            "passed": passed,
            "seconds": seconds,
        })
        .to_string()
    } else {
        render(&copied, &calendars, &settings, &check, seconds)
    };
    if !passed {
        // The report first, on standard output, then the failure.
        println!("{text}");
        bail!(
            "the destination does not match the source: {} task(s) missing, {} differ, {} calendar(s) and {} queue \
             setting(s) differ; stop the servers on the source and run punctual migrate again, or remove the \
             differing entries from the destination",
            check.missing,
            check.differ,
            calendars.differ.len(),
            settings.differ.len()
        );
    }
    Ok(text)
}

/// Copies the calendars the destination lacks (removed ones are not copied).
async fn calendars<A: Store, B: Store>(from: &A, to: &B, check: bool, now: Timestamp) -> Result<RecordsReport> {
    let theirs = to.calendar_records().await?;
    let mut report = RecordsReport::default();
    for record in from.calendar_records().await? {
        let Some(spec) = record.spec else { continue };
        let name = record.name.to_string();
        match theirs.iter().find(|t| t.name == record.name).and_then(|t| t.spec.as_deref()) {
            Some(other) if same_json(other, &spec) => report.same += 1,
            Some(_) => report.differ.push(name),
            None if check => report.differ.push(name),
            None => {
                let change = CalendarChangeRequest::new(record.name.clone(), CalendarChange::Put(spec), now);
                to.change_calendar(change).await.with_context(|| format!("cannot copy the calendar {name}"))?;
                report.copied.push(name);
            }
        }
    }
    Ok(report)
}

/// Copies the queue records (settings set through the API, pauses) the destination
/// lacks.
async fn queue_records<A: Store, B: Store>(from: &A, to: &B, check: bool, now: Timestamp) -> Result<RecordsReport> {
    let mut report = RecordsReport::default();
    for record in from.queue_records().await? {
        let name = record.queue.to_string();
        match to.queue_record(&record.queue).await? {
            Some(theirs) => {
                let alike = theirs.paused == record.paused
                    && match (&theirs.settings, &record.settings) {
                        (Some(a), Some(b)) => same_json(a, b),
                        (a, b) => a == b,
                    };
                if alike { report.same += 1 } else { report.differ.push(name) }
            }
            None if check => report.differ.push(name),
            None => {
                let mut changes = Vec::new();
                if let Some(settings) = &record.settings {
                    changes.push(QueueChange::Settings(settings.clone()));
                }
                if record.paused {
                    changes.push(QueueChange::Paused(true));
                }
                if changes.is_empty() {
                    // A record of nothing (settings cleared, not paused) is a queue
                    // without one.
                    report.same += 1;
                    continue;
                }
                for change in changes {
                    let request = QueueChangeRequest::new(record.queue.clone(), change, now);
                    to.change_queue(request).await.with_context(|| format!("cannot copy the settings of {name}"))?;
                }
                report.copied.push(name);
            }
        }
    }
    Ok(report)
}

fn same_json(a: &str, b: &str) -> bool {
    match (serde_json::from_str::<serde_json::Value>(a), serde_json::from_str::<serde_json::Value>(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

async fn copy_queue<A: Store, B: Store>(
    from: &A,
    to: &B,
    queue: &QueueName,
    batch: u32,
    clock: &SystemClock,
) -> Result<QueueReport> {
    let mut report = QueueReport { queue: queue.to_string(), ..QueueReport::default() };
    let mut cursor = None;
    loop {
        let page = from.histories(HistoriesRequest::new(queue.clone(), batch, cursor, Timestamp::EPOCH)).await?;
        report.history_events += to.import_histories(queue, page.histories).await?;
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let total: u64 = from.stats(Some(queue)).await?.iter().map(|s| s.scheduled + s.leased + s.dead).sum();
    eprintln!("{queue}: copying {total} task(s)…");
    let mut cursor = None;
    let mut next_progress = PROGRESS_EVERY;
    loop {
        let page = from.list(ListRequest::new(queue.clone(), None, batch, cursor)).await?;
        let answers = to.import(ImportRequest::new(page.tasks, Vec::new(), clock.now())).await?;
        report.written += answers.iter().filter(|a| **a == Imported::Written).count() as u64;
        report.present += answers.iter().filter(|a| **a == Imported::Present).count() as u64;
        let done = report.written + report.present;
        if done >= next_progress {
            eprintln!("{queue}: {done} of {total} task(s)");
            next_progress = done + PROGRESS_EVERY;
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let mut cursor = None;
    loop {
        let page = from.completions(CompletionsRequest::new(queue.clone(), batch, cursor, clock.now())).await?;
        report.records += page.completions.len() as u64;
        to.import(ImportRequest::new(Vec::new(), page.completions, clock.now())).await?;
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    eprintln!(
        "{queue}: {} written, {} already there, {} dedupe record(s), {} history event(s)",
        report.written, report.present, report.records, report.history_events
    );
    Ok(report)
}

/// Compares every task of `queue` in the source with the destination's.
async fn compare_queue<A: Store, B: Store>(
    from: &A,
    to: &B,
    queue: &QueueName,
    batch: u32,
    check: &mut CheckReport,
) -> Result<()> {
    let mut cursor = None;
    loop {
        let page = from.list(ListRequest::new(queue.clone(), None, batch, cursor)).await?;
        let keys = page.tasks.iter().map(|task| (task.queue.clone(), task.key.clone())).collect();
        let theirs = to.get_many(keys).await?;
        for (ours, theirs) in page.tasks.iter().zip(theirs) {
            match theirs {
                None => {
                    check.missing += 1;
                    check.example(format!("{}/{}: missing", ours.queue, ours.key));
                }
                Some(theirs) if as_moved(&theirs) == as_moved(ours) => check.same += 1,
                Some(theirs) => {
                    check.differ += 1;
                    check.example(format!("{}/{}: {}", ours.queue, ours.key, difference(ours, &theirs)));
                }
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(());
        }
    }
}

/// The first field that tells two tasks of one key apart, for the report.
fn difference(ours: &Task, theirs: &Task) -> String {
    let (a, b) = (serde_json::to_value(ours).unwrap_or_default(), serde_json::to_value(theirs).unwrap_or_default());
    if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
        for (field, value) in a {
            if b.get(field) != Some(value) {
                let theirs = b.get(field).map_or_else(|| "absent".to_owned(), ToString::to_string);
                return format!("{field} is {value} in the source, {theirs} in the destination");
            }
        }
    }
    "its bookkeeping (occurrence, anchor or debounce bound) differs".to_owned()
}

fn render(
    copied: &[QueueReport],
    calendars: &RecordsReport,
    settings: &RecordsReport,
    check: &CheckReport,
    seconds: f64,
) -> String {
    let mut lines = Vec::new();
    for queue in copied {
        lines.push(format!(
            "{}: {} task(s) written, {} already there, {} dedupe record(s), {} history event(s)",
            queue.queue, queue.written, queue.present, queue.records, queue.history_events
        ));
    }
    let written: u64 = copied.iter().map(|q| q.written).sum();
    for (what, report) in [("calendar(s)", calendars), ("queue setting(s)", settings)] {
        let mut line = format!("{what}: {} copied, {} already there alike", report.copied.len(), report.same);
        if !report.differ.is_empty() {
            line.push_str(&format!(", differ in the destination: {}", report.differ.join(", ")));
        }
        lines.push(line);
    }
    lines.push(format!(
        "check: {} task(s) alike, {} missing, {} differ{}",
        check.same,
        check.missing,
        check.differ,
        if check.examples.is_empty() { String::new() } else { format!(":\n  {}", check.examples.join("\n  ")) }
    ));
    lines.push(format!("{written} task(s) copied in {seconds:.2} s"));
    lines.join("\n")
}
