//! An import is one write: when one of its tasks cannot be stored, the call fails and
//! none of its tasks or records is there after, not even the tasks before the one
//! refused.

use std::time::Duration;

use punctual_core::store::{Completed, CompletionsRequest, ImportRequest, ListRequest};
use punctual_core::{MemoryStore, NewTask, QueueName, Store, Task, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn queue() -> QueueName {
    QueueName::new("moved").expect("a queue name")
}

/// Tasks `first` and `second` as the reference store holds them.
async fn their_tasks() -> Vec<Task> {
    let source = MemoryStore::new();
    let tasks = ["first", "second"].map(|key| NewTask::new(queue(), TaskKey::new(key).expect("a key"), NOW));
    for result in source.schedule(tasks.to_vec(), NOW).await.expect("schedule") {
        result.expect("scheduled");
    }
    source.list(ListRequest::new(queue(), None, 10, None)).await.expect("list").tasks
}

#[tokio::test]
async fn an_import_with_a_task_it_cannot_store_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let mut tasks = their_tasks().await;
    assert_eq!(tasks.len(), 2);
    // A version past what the store's column holds: refused after `first` was written.
    tasks[1].version = u64::MAX;
    let until = NOW.saturating_add(Duration::from_secs(60));
    let record = Completed::new(queue(), TaskKey::new("done").expect("a key"), 7, NOW, until);

    let refused = store.import(ImportRequest::new(tasks, vec![record], NOW)).await;
    assert!(refused.is_err(), "a task the store cannot hold fails the import: {refused:?}");
    let page = store.list(ListRequest::new(queue(), None, 10, None)).await.expect("list");
    assert!(page.tasks.is_empty(), "nothing of the import is written: {:?}", page.tasks);
    let stats = store.stats(None).await.expect("stats");
    assert!(stats.is_empty(), "no task in any queue: {stats:?}");
    let records = store.completions(CompletionsRequest::new(queue(), 10, None, NOW)).await.expect("records");
    assert!(records.completions.is_empty(), "no record either: {:?}", records.completions);
}
