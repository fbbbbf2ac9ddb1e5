//! The drain against the machine's real PostgreSQL and MariaDB, each test in a
//! database of its own: committed rows are applied once and deleted, rolled-back ones
//! never seen; a key's rows apply in id order; refused rows go to the failed table and
//! hold nothing up; rows the store cannot take now stay for later; two drains of one
//! table apply each row once; PostgreSQL's notification wakes the drain long before
//! its poll.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_outbox::drain::run;
use punctual_outbox::{
    Applied, Applier, Dialect, DrainConfig, DrainStatus, Row, TableName, execute, init, query_texts,
};
use punctual_testkit::databases::TestDatabase;
use tokio_util::sync::CancellationToken;

/// Every row it applied, in the order applied, keeping marks as a store does (a row
/// seen before is a replay: a drain may read a row again after a batch was undone);
/// refuses op `bad`; answers key `down` as unavailable while `down` is set.
#[derive(Default)]
struct Recorder {
    applied: Mutex<Vec<Row>>,
    replays: std::sync::atomic::AtomicU64,
    down: std::sync::atomic::AtomicBool,
}

impl Applier for Recorder {
    async fn apply(&self, rows: &[Row]) -> Vec<Applied> {
        rows.iter().map(|row| self.apply_one(row)).collect()
    }
}

impl Recorder {
    fn apply_one(&self, row: &Row) -> Applied {
        if row.op == "bad" {
            return Applied::Refused(format!("unknown op '{}'", row.op));
        }
        if row.key == "down" && self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Applied::Unavailable("the store did not answer".into());
        }
        let mut applied = self.applied.lock().expect("recorder");
        if applied.iter().any(|seen| seen.id == row.id) {
            self.replays.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Applied::Replayed;
        }
        applied.push(row.clone());
        Applied::Applied
    }
}

impl Recorder {
    fn ids(&self) -> Vec<i64> {
        self.applied.lock().expect("recorder").iter().map(|r| r.id).collect()
    }
}

struct Draining {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    status: Arc<DrainStatus>,
}

fn start(url: &str, applier: &Arc<Recorder>, poll: Duration, batch: u32) -> Draining {
    let config = DrainConfig { url: url.to_owned(), table: TableName::default(), batch, poll };
    let (stop, status) = (CancellationToken::new(), Arc::new(DrainStatus::default()));
    let task = tokio::spawn(run(config, Arc::clone(applier), Arc::clone(&status), stop.clone()));
    Draining { stop, task, status }
}

impl Draining {
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.expect("the drain ends");
    }

    /// Waits until `done` holds, looking again at the end of each of the drain's
    /// batches (it ends one at least every poll), at most 20 s.
    async fn until(&self, what: &str, mut done: impl AsyncFnMut() -> bool) {
        let mut batches = self.status.batches();
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            while !done().await {
                batches.changed().await.expect("the drain runs");
            }
        });
        waited.await.unwrap_or_else(|_| panic!("{what}: not within 20 s"));
    }

    /// Waits until the outbox at `url` is empty.
    async fn until_empty(&self, url: &str) {
        self.until("the outbox emptied", async || count(url, "punctual_outbox").await == 0).await;
    }
}

fn insert(dialect: Dialect, queue: &str, key: &str, op: &str, body: Option<&str>) -> String {
    let key_column = if dialect == Dialect::MySql { "`key`" } else { "key" };
    let body = body.map_or("NULL".to_owned(), |b| format!("'{b}'"));
    format!("INSERT INTO punctual_outbox (queue, {key_column}, op, body) VALUES ('{queue}', '{key}', '{op}', {body})")
}

async fn count(url: &str, table: &str) -> u64 {
    let counted = query_texts(url, &format!("SELECT CAST(count(*) AS CHAR(20)) FROM {table}")).await.expect("count");
    counted[0].as_deref().unwrap_or("0").trim().parse().expect("a count")
}

async fn committed_rows_apply_once_in_key_order_and_rolled_back_ones_never(dialect: Dialect) {
    let db = TestDatabase::of(dialect).await;
    let url = db.url();
    init(&url, &TableName::default()).await.expect("init");
    init(&url, &TableName::default()).await.expect("init again changes nothing");
    let body = r#"{"delay": "30m"}"#;
    let statements = [
        "BEGIN".to_owned(),
        insert(dialect, "orders", "order-1", "schedule", Some(body)),
        insert(dialect, "orders", "order-2", "schedule", Some(body)),
        insert(dialect, "orders", "order-1", "cancel", None),
        "COMMIT".to_owned(),
        "BEGIN".to_owned(),
        insert(dialect, "orders", "rolled-back", "schedule", Some(body)),
        "ROLLBACK".to_owned(),
        "BEGIN".to_owned(),
        insert(dialect, "orders", "x", "bad", None),
        insert(dialect, "orders", "order-3", "cancel_tag", None),
        "COMMIT".to_owned(),
    ];
    execute(&url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await.expect("the application's writes");
    let recorder = Arc::new(Recorder::default());
    let drain = start(&url, &recorder, Duration::from_millis(50), 500);
    drain.until("four rows applied", async || recorder.ids().len() == 4).await;
    let applied = recorder.applied.lock().expect("recorder").clone();
    let of_order_1: Vec<&str> = applied.iter().filter(|r| r.key == "order-1").map(|r| r.op.as_str()).collect();
    assert_eq!(of_order_1, ["schedule", "cancel"], "a key's rows in id order");
    assert!(applied.iter().all(|r| r.key != "rolled-back"), "a rolled-back row was applied");
    let schedule = applied.iter().find(|r| r.key == "order-2").expect("order-2");
    let parsed: serde_json::Value = serde_json::from_str(schedule.body.as_deref().expect("a body")).expect("JSON");
    assert_eq!(parsed, serde_json::json!({"delay": "30m"}));
    drain.until_empty(&url).await;
    assert_eq!(count(&url, "punctual_outbox_failed").await, 1, "the bad row moved to the failed table");
    let why = query_texts(&url, "SELECT error FROM punctual_outbox_failed").await.expect("error");
    assert_eq!(why, [Some("unknown op 'bad'".to_owned())]);
    drain.stop().await;
    assert_eq!(recorder.ids().len(), 4, "each row applied once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_committed_rows_apply_once_in_key_order_and_rolled_back_ones_never() {
    committed_rows_apply_once_in_key_order_and_rolled_back_ones_never(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_committed_rows_apply_once_in_key_order_and_rolled_back_ones_never() {
    committed_rows_apply_once_in_key_order_and_rolled_back_ones_never(Dialect::MySql).await;
}

async fn rows_the_store_cannot_take_stay_and_hold_up_only_their_key(dialect: Dialect) {
    let db = TestDatabase::of(dialect).await;
    let url = db.url();
    init(&url, &TableName::default()).await.expect("init");
    let statements = [
        insert(dialect, "orders", "down", "cancel", None),
        insert(dialect, "orders", "down", "schedule", Some("{}")),
        insert(dialect, "orders", "up", "cancel", None),
    ];
    execute(&url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await.expect("rows");
    let recorder = Arc::new(Recorder::default());
    recorder.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let drain = start(&url, &recorder, Duration::from_millis(50), 500);
    drain.until("the other key applied", async || recorder.ids().len() == 1).await;
    assert_eq!(count(&url, "punctual_outbox").await, 2, "the key's rows stay");
    recorder.down.store(false, std::sync::atomic::Ordering::SeqCst);
    drain.until("the key applied once the store answers", async || recorder.ids().len() == 3).await;
    let ops: Vec<String> =
        recorder.applied.lock().expect("recorder").iter().filter(|r| r.key == "down").map(|r| r.op.clone()).collect();
    assert_eq!(ops, ["cancel", "schedule"], "in id order");
    drain.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rows_the_store_cannot_take_stay_and_hold_up_only_their_key() {
    rows_the_store_cannot_take_stay_and_hold_up_only_their_key(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_rows_the_store_cannot_take_stay_and_hold_up_only_their_key() {
    rows_the_store_cannot_take_stay_and_hold_up_only_their_key(Dialect::MySql).await;
}

async fn two_drains_apply_each_row_once_and_each_key_in_order(dialect: Dialect) {
    let db = TestDatabase::of(dialect).await;
    let url = db.url();
    init(&url, &TableName::default()).await.expect("init");
    let recorder = Arc::new(Recorder::default());
    let drains =
        [start(&url, &recorder, Duration::from_millis(20), 50), start(&url, &recorder, Duration::from_millis(20), 50)];
    // 40 transactions of 50 rows over 100 keys, while both drain.
    for batch in 0..40 {
        let mut statements = vec!["BEGIN".to_owned()];
        for i in 0..50 {
            let n = batch * 50 + i;
            statements.push(insert(
                dialect,
                "orders",
                &format!("k{}", n % 100),
                "schedule",
                Some(&format!("{{\"n\": {n}}}")),
            ));
        }
        statements.push("COMMIT".to_owned());
        execute(&url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await.expect("rows");
    }
    drains[0].until("2,000 rows applied", async || recorder.ids().len() >= 2000).await;
    drains[0].until_empty(&url).await;
    for drain in drains {
        drain.stop().await;
    }
    let applied = recorder.applied.lock().expect("recorder").clone();
    assert_eq!(applied.len(), 2000, "every row applied once");
    let replays = recorder.replays.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "{dialect:?}: 2,000 rows by two drains, {replays} read again after an undone batch (marks made them no-ops)"
    );
    let mut by_key: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in &applied {
        by_key.entry(row.key.clone()).or_default().push(row.id);
    }
    for (key, ids) in by_key {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{key}'s rows out of id order: {ids:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_two_drains_apply_each_row_once_and_each_key_in_order() {
    two_drains_apply_each_row_once_and_each_key_in_order(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_two_drains_apply_each_row_once_and_each_key_in_order() {
    two_drains_apply_each_row_once_and_each_key_in_order(Dialect::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_commit_wakes_the_drain_long_before_its_poll() {
    let db = TestDatabase::postgres().await;
    let url = db.url();
    init(&url, &TableName::default()).await.expect("init");
    let recorder = Arc::new(Recorder::default());
    // A poll of a minute: only the notification can bring the row within the wait.
    let drain = start(&url, &recorder, Duration::from_secs(60), 500);
    // The drain's first look finds nothing and waits (its session LISTENs before its
    // first batch); then the commit.
    drain.until("the drain's first look", async || *drain.status.batches().borrow() >= 1).await;
    execute(&url, &[&insert(Dialect::Postgres, "orders", "k", "cancel", None)]).await.expect("row");
    drain.until("the row applied at the notification", async || recorder.ids().len() == 1).await;
    drain.stop().await;
}

/// Ends every other session of the test's database, as a restart of the database ends
/// them: PostgreSQL's `pg_terminate_backend`, MySQL's `KILL`.
async fn end_sessions(url: &str, dialect: Dialect) {
    match dialect {
        Dialect::Postgres => {
            let ended = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE datname = current_database() AND pid <> pg_backend_pid()";
            query_texts(url, ended).await.expect("terminate");
        }
        Dialect::MySql => {
            let ids = query_texts(
                url,
                "SELECT CAST(id AS CHAR) FROM information_schema.processlist \
                 WHERE db = database() AND id <> connection_id()",
            )
            .await
            .expect("sessions");
            for id in ids.into_iter().flatten() {
                let _ = execute(url, &[&format!("KILL {id}")]).await;
            }
        }
    }
}

async fn the_databases_sessions_ended_mid_drain_lose_and_repeat_nothing(dialect: Dialect) {
    let db = TestDatabase::of(dialect).await;
    let url = db.url();
    init(&url, &TableName::default()).await.expect("init");
    for batch in 0..10 {
        let mut statements = vec!["BEGIN".to_owned()];
        for i in 0..300 {
            let n = batch * 300 + i;
            statements.push(insert(dialect, "orders", &format!("k{}", n % 500), "cancel", None));
        }
        statements.push("COMMIT".to_owned());
        execute(&url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await.expect("rows");
    }
    let recorder = Arc::new(Recorder::default());
    let drain = start(&url, &recorder, Duration::from_millis(20), 100);
    for ended in 1..=3 {
        drain.until("rows applied before the sessions end", async || recorder.ids().len() >= ended * 500).await;
        end_sessions(&url, dialect).await;
    }
    drain.until("every row applied", async || recorder.ids().len() == 3000).await;
    drain.until_empty(&url).await;
    drain.stop().await;
    let applied = recorder.applied.lock().expect("recorder").clone();
    let mut by_key: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in &applied {
        by_key.entry(row.key.clone()).or_default().push(row.id);
    }
    for (key, ids) in by_key {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{key}'s rows out of id order: {ids:?}");
    }
    let replays = recorder.replays.load(std::sync::atomic::Ordering::SeqCst);
    println!("{dialect:?}: sessions ended 3 times mid-drain: 3,000 rows applied once, {replays} read again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_databases_sessions_ended_mid_drain_lose_and_repeat_nothing() {
    the_databases_sessions_ended_mid_drain_lose_and_repeat_nothing(Dialect::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_the_databases_sessions_ended_mid_drain_lose_and_repeat_nothing() {
    the_databases_sessions_ended_mid_drain_lose_and_repeat_nothing(Dialect::MySql).await;
}
