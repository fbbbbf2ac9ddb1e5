//! Outbox marks on disk: a row applied before the store was closed is still applied
//! once after it is opened again, and a mark goes once the retention is over (the
//! next mark written deletes it), so the table does not grow without end.

use punctual_core::outbox::{MARK_RETENTION, OutboxName, OutboxRow};
use punctual_core::store::{ApplyOnceRequest, OnceEffect, OnceOp};
use punctual_core::{QueueName, Store, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn row(id: i64) -> OutboxRow {
    OutboxRow::new(OutboxName::new("shop").expect("a name"), id)
}

fn cancel() -> OnceOp {
    OnceOp::Cancel { queue: QueueName::new("orders").expect("a queue"), key: TaskKey::new("order-1").expect("a key") }
}

async fn apply(store: &SqliteStore, id: i64, now: Timestamp) -> Option<OnceEffect> {
    store.apply_once(ApplyOnceRequest::new(row(id), cancel(), now)).await.expect("apply_once")
}

#[tokio::test]
async fn a_mark_outlives_a_restart_and_goes_after_the_retention() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    assert_eq!(apply(&store, 1, NOW).await, Some(OnceEffect::Cancelled(false)));
    store.close().await.expect("close");
    drop(store);
    let store = SqliteStore::open(dir.path()).expect("open again");
    assert_eq!(apply(&store, 1, NOW).await, None, "the mark is on disk");
    let later = NOW.saturating_add(MARK_RETENTION);
    assert_eq!(apply(&store, 2, later).await, Some(OnceEffect::Cancelled(false)));
    assert_eq!(apply(&store, 1, later).await, None, "kept for the whole retention");
    let past = later.saturating_add(std::time::Duration::from_millis(1));
    assert_eq!(apply(&store, 3, past).await, Some(OnceEffect::Cancelled(false)), "row 3 deletes row 1's mark");
    assert_eq!(apply(&store, 1, past).await, Some(OnceEffect::Cancelled(false)), "row 1's mark is gone");
}
