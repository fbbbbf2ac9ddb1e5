//! Backup and restore of the embedded store: a backup taken while writers schedule
//! holds every task answered before it began, each as the store holds it, and nothing
//! torn; a restore of it opens as a store with exactly those tasks. A backup never
//! overwrites a file; a restore never runs into a store in use, never replaces a store
//! that holds tasks unless told to, and refuses what is not a punctual store or is of
//! a newer layout, changing nothing. Their counts are of tasks: a done task's history
//! (its kept row) goes with the backup and counts as none.
//!
//! Guards against a copy of the database file taken mid-commit (a torn store), a copy
//! that misses the WAL (tasks answered but not checkpointed), and a restore under a
//! running server.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use punctual_core::history::EventKind;
use punctual_core::store::{CompleteRequest, Completion, HistoryRequest, LeaseRequest, ListRequest};
use punctual_core::{Error, NewTask, QueueName, Store, Task, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;
use punctual_sqlite::backup::{backup, restore};

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const WRITERS: usize = 4;

fn queue(n: usize) -> QueueName {
    QueueName::new(format!("backup.q{n}")).expect("a queue name")
}

fn task(writer: usize, n: usize) -> NewTask {
    let mut task = NewTask::new(queue(writer), TaskKey::new(format!("k{n}")).expect("a key"), NOW);
    task.payload = serde_json::json!({ "writer": writer, "n": n });
    task
}

/// Every task of `store`, by queue and key.
async fn every_task(store: &SqliteStore) -> Vec<Task> {
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let mut cursor = None;
        loop {
            let page = store.list(ListRequest::new(queue(writer), None, 1000, cursor)).await.expect("list");
            tasks.extend(page.tasks);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    tasks
}

fn invalid_field(result: Result<punctual_sqlite::backup::StoreSummary, Error>) -> (String, String) {
    match result {
        Err(Error::Invalid { field, reason }) => (field, reason),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_writes_holds_every_task_answered_before_it_and_restores_as_a_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let stop = Arc::new(AtomicBool::new(false));
    let (answered_tx, mut answered) = tokio::sync::mpsc::unbounded_channel::<(usize, usize)>();
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let (store, stop, answered_tx) = (Arc::clone(&store), Arc::clone(&stop), answered_tx.clone());
        writers.spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let batch: Vec<NewTask> = (n..n + 20).map(|i| task(writer, i)).collect();
                for result in store.schedule(batch, NOW).await.expect("schedule") {
                    result.expect("scheduled");
                }
                for i in n..n + 20 {
                    let _ = answered_tx.send((writer, i));
                }
                n += 20;
            }
        });
    }
    drop(answered_tx);
    // Writes under way, some answered: the backup starts now.
    let mut before = HashSet::new();
    while before.len() < 2_000 {
        before.insert(answered.recv().await.expect("writes answered"));
    }
    while let Ok(key) = answered.try_recv() {
        before.insert(key);
    }
    let backup_dir = tempfile::tempdir().expect("temp dir");
    let file = backup_dir.path().join("punctual.backup");
    let taken = {
        let (data, file) = (dir.path().to_owned(), file.clone());
        tokio::task::spawn_blocking(move || backup(&data, &file)).await.expect("joined").expect("backup")
    };
    stop.store(true, Ordering::Relaxed);
    while writers.join_next().await.is_some() {}
    assert!(taken.tasks >= before.len() as u64, "{taken:?} for {} answered before", before.len());

    let restored_dir = tempfile::tempdir().expect("temp dir");
    let summary = restore(&file, restored_dir.path(), false).expect("restore");
    assert_eq!(summary.tasks, taken.tasks);
    let restored = SqliteStore::open(restored_dir.path()).expect("the restored store opens");
    let restored_tasks = every_task(&restored).await;
    assert_eq!(restored_tasks.len() as u64, taken.tasks, "the restored store lists what the backup counted");
    let keys: HashSet<(usize, usize)> = restored_tasks
        .iter()
        .map(|t| {
            let writer = t.payload["writer"].as_u64().expect("writer") as usize;
            let n = t.payload["n"].as_u64().expect("n") as usize;
            assert_eq!(t.key.as_str(), format!("k{n}"), "a task's payload and key agree");
            (writer, n)
        })
        .collect();
    let missing: Vec<_> = before.difference(&keys).take(5).collect();
    assert!(missing.is_empty(), "answered before the backup began but not in it: {missing:?}…");
    // Each writer's tasks are a prefix of its batches: a commit is in the backup whole.
    for writer in 0..WRITERS {
        let count = keys.iter().filter(|(w, _)| *w == writer).count();
        assert_eq!(count % 20, 0, "writer {writer}: {count} tasks, not whole batches of 20");
        assert!((0..count).all(|n| keys.contains(&(writer, n))), "writer {writer}'s tasks have a hole");
    }
    // As the store held them.
    for t in &restored_tasks {
        let original = store.get(&t.queue, &t.key).await.expect("get").expect("in the original");
        assert_eq!(
            (&original.payload, original.due_at, original.state, original.attempts),
            (&t.payload, t.due_at, t.state, t.attempts)
        );
    }
}

#[tokio::test]
async fn a_restore_refuses_a_store_in_use_or_holding_tasks_and_what_is_not_a_store() {
    let source = tempfile::tempdir().expect("temp dir");
    {
        let store = SqliteStore::open(source.path()).expect("open");
        done(&store, task(0, 3)).await;
        store.schedule(vec![task(0, 1), task(0, 2)], NOW).await.expect("schedule");
        store.close().await.expect("close");
    }
    let files = tempfile::tempdir().expect("temp dir");
    let file = files.path().join("two.backup");
    let summary = backup(source.path(), &file).expect("backup of a closed store");
    assert_eq!((summary.tasks, summary.queues), (2, 1), "a done task's kept history is no task");
    let (field, reason) = invalid_field(backup(source.path(), &file));
    assert_eq!(field, "to", "{reason}");
    assert!(reason.contains("exists"), "{reason}");
    let (field, _) = invalid_field(backup(files.path(), &files.path().join("none.backup")));
    assert_eq!(field, "data");

    // A store in use: refused, and its tasks untouched.
    let target = tempfile::tempdir().expect("temp dir");
    let running = SqliteStore::open(target.path()).expect("open");
    running.schedule(vec![task(1, 1)], NOW).await.expect("schedule");
    done(&running, task(2, 1)).await;
    match restore(&file, target.path(), true) {
        Err(Error::Unavailable(why)) => assert!(why.contains("in use"), "{why}"),
        other => panic!("a restore into a store in use: {other:?}"),
    }
    running.close().await.expect("close");
    drop(running);

    // Holding tasks: refused without --replace, restored with it.
    let (field, reason) = invalid_field(restore(&file, target.path(), false));
    assert_eq!(field, "data");
    assert!(reason.contains("a store of 1 task;") && reason.contains("--replace"), "{reason}");
    assert_eq!(restore(&file, target.path(), true).expect("replace").tasks, 2);
    let restored = SqliteStore::open(target.path()).expect("open");
    assert!(restored.get(&queue(1), &TaskKey::new("k1").expect("a key")).await.expect("get").is_none());
    assert!(restored.get(&queue(0), &TaskKey::new("k2").expect("a key")).await.expect("get").is_some());
    let told = restored.history(HistoryRequest::new(queue(0), TaskKey::new("k3").expect("a key"), Timestamp::EPOCH));
    let kinds: Vec<EventKind> = told.await.expect("history").iter().map(|event| event.kind).collect();
    assert_eq!(kinds, [EventKind::Created, EventKind::Leased, EventKind::Acked], "the done task's history restored");
    restored.close().await.expect("close");

    // Not a store, or a newer one.
    let junk = files.path().join("junk");
    std::fs::write(&junk, b"not a database at all, just text long enough to be read").expect("write");
    let (field, _) = invalid_field(restore(&junk, tempfile::tempdir().expect("temp dir").path(), false));
    assert_eq!(field, "from");
    let newer = files.path().join("newer.backup");
    std::fs::copy(&file, &newer).expect("copy");
    set_layout(&newer, 1_000);
    let empty = tempfile::tempdir().expect("temp dir");
    let (field, reason) = invalid_field(restore(&newer, empty.path(), false));
    assert_eq!(field, "from");
    assert!(reason.contains("layout 1000"), "{reason}");
    assert!(!empty.path().join(punctual_sqlite::DB_FILE).exists(), "a refused restore wrote a store");
}

/// Schedules `new`, leases it and acknowledges it done (the only task due in its
/// queue): its row stays as its history.
async fn done(store: &SqliteStore, new: NewTask) {
    let (queue, new_key) = (new.queue.clone(), new.key.clone());
    store.schedule(vec![new], NOW).await.expect("schedule");
    let mut batch = store.lease(LeaseRequest::new(queue, 1, Duration::from_secs(60), NOW)).await.expect("lease");
    let lease = batch.leases.pop().expect("the task is due");
    assert_eq!(lease.task.key, new_key, "the only task due");
    store.complete(CompleteRequest::new(lease.token, Completion::Done, NOW)).await.expect("done");
}

fn set_layout(file: &Path, layout: i64) {
    let conn = rusqlite::Connection::open(file).expect("open the copy");
    conn.execute("UPDATE meta SET value = ?1 WHERE name = 'schema_version'", [layout]).expect("set the layout");
}
