//! The embedded store's identity: minted when the store is created, kept across opens,
//! and minted at the first open of a store written before stores had one — whose tasks
//! keep working.
//!
//! Guards against delivery ids that repeat across stores: every new embedded store
//! began at `1-1-1`, so a handler de-duplicating on delivery ids would skip the first
//! task of a second store (the conformance suite checks two fresh stores; this file
//! checks what survives a reopen and an upgrade).

use std::time::Duration;

use punctual_core::store::LeaseRequest;
use punctual_core::{NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_sqlite::{DB_FILE, SqliteStore};

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn queue() -> QueueName {
    QueueName::new("order.cancel").expect("a queue name")
}

async fn schedule(store: &SqliteStore, key: &str) {
    let task = NewTask::new(queue(), TaskKey::new(key).expect("a key"), NOW);
    store.schedule(vec![task], NOW).await.expect("schedule").pop().expect("one result").expect("scheduled");
}

async fn lease_delivery_id(store: &SqliteStore) -> String {
    let batch = store.lease(LeaseRequest::new(queue(), 1, Duration::from_secs(30), NOW)).await.expect("lease");
    batch.leases.into_iter().next().expect("a due task").delivery_id
}

#[tokio::test]
async fn the_identity_is_kept_across_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    let id = store.id();
    schedule(&store, "order-1").await;
    store.close().await.expect("close");
    drop(store);

    let again = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(again.id(), id, "the identity changed on reopening");
    let delivery_id = lease_delivery_id(&again).await;
    assert!(delivery_id.starts_with(&format!("{id}-")), "{delivery_id}");
}

#[tokio::test]
async fn a_store_from_before_identities_gets_one_and_keeps_its_tasks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    schedule(&store, "order-1").await;
    store.close().await.expect("close");
    drop(store);
    // As an earlier punctual left it: no identity row.
    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    assert_eq!(db.execute("DELETE FROM meta WHERE name = 'store_id'", []).expect("delete the identity"), 1);
    drop(db);

    let upgraded = SqliteStore::open(dir.path()).expect("open the old store");
    let id = upgraded.id();
    let delivery_id = lease_delivery_id(&upgraded).await;
    assert_eq!(delivery_id, format!("{id}-1-1-1"), "the old task fires under the new identity");
    upgraded.close().await.expect("close");
    drop(upgraded);
    assert_eq!(SqliteStore::open(dir.path()).expect("reopen").id(), id, "the minted identity is kept");
}
