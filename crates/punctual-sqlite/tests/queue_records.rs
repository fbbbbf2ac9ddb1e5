//! Queue records on disk: a store written before queue records existed gains their
//! table at its next open and keeps its tasks, and records survive reopening.
//!
//! Guards against an upgrade that cannot open an older store (or refuses it as a
//! newer layout), loses its tasks, or a change that is answered but not kept (the
//! conformance suite sees one open store only).

use punctual_core::store::{QueueChange, QueueChangeRequest, QueueRecord};
use punctual_core::{NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_sqlite::{DB_FILE, SqliteStore};

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn queue() -> QueueName {
    QueueName::new("order.cancel").expect("a queue name")
}

async fn pause(store: &SqliteStore) -> QueueRecord {
    let request = QueueChangeRequest::new(queue(), QueueChange::Paused(true), NOW);
    store.change_queue(request).await.expect("change_queue")
}

fn tables(dir: &std::path::Path) -> Vec<String> {
    let db = rusqlite::Connection::open(dir.join(DB_FILE)).expect("open the database");
    let mut names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").expect("prepare");
    names.query_map([], |row| row.get(0)).expect("query").collect::<rusqlite::Result<_>>().expect("table names")
}

#[tokio::test]
async fn a_store_from_before_queue_records_gains_their_table_and_keeps_its_tasks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let task = NewTask::new(queue(), TaskKey::new("order-1").expect("a key"), NOW);
    store.schedule(vec![task], NOW).await.expect("schedule").pop().expect("one result").expect("scheduled");
    store.close().await.expect("close");
    drop(store);
    // As an earlier punctual left it: no queue_records table, layout 1.
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    db.execute_batch("DROP TABLE queue_records").expect("drop the table");
    drop(db);
    assert!(!tables(dir.path()).contains(&"queue_records".to_owned()), "set-up: the old layout");

    let upgraded = SqliteStore::open(dir.path()).expect("open the old store");
    assert_eq!(upgraded.queue_records().await.expect("queue_records"), Vec::new());
    let task = upgraded.get(&queue(), &TaskKey::new("order-1").expect("a key")).await.expect("get");
    assert!(task.is_some(), "the old store's task is kept");
    let paused = pause(&upgraded).await;
    assert_eq!((paused.version, paused.paused), (1, true));
    upgraded.close().await.expect("close");
    drop(upgraded);
    assert!(tables(dir.path()).contains(&"queue_records".to_owned()));
}

#[tokio::test]
async fn queue_records_are_kept_across_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    pause(&store).await;
    let request = QueueChangeRequest::new(queue(), QueueChange::Settings("{\"rate\":\"20/1m\"}".into()), NOW);
    let written = store.change_queue(request).await.expect("change_queue");
    store.close().await.expect("close");
    drop(store);

    let again = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(again.queue_records().await.expect("queue_records"), vec![written.clone()]);
    assert_eq!(pause(&again).await.version, written.version + 1, "versions go on from the stored one");
}
