//! Writes the fixture of the embedded store's current layout that `tests/layout_fixtures.rs`
//! opens: a store of one queue holding a task in each state, with the fields each
//! layout added (tags, priority, group, repeat, target, last error), all at fixed times, and
//! a done task's history.
//! Run it once per layout, when the layout changes, and keep every fixture written
//! before: each is a store as that release of punctual left it.
//!
//! ```text
//! cargo run -p punctual-sqlite --example write_layout_fixture -- crates/punctual-sqlite/tests/fixtures/layout-6.db
//! ```

use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, LeaseRequest};
use punctual_core::{Group, NewTask, Priority, QueueName, Repeat, Store, Tag, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

/// 2026-11-30T12:00:00Z.
const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn task(key: &str, due: Timestamp) -> NewTask {
    let mut task = NewTask::new(QueueName::new("fixture.q").expect("a queue"), TaskKey::new(key).expect("a key"), due);
    task.payload = serde_json::json!({ "key": key });
    task
}

#[tokio::main]
async fn main() {
    let out = std::env::args().nth(1).expect("usage: write_layout_fixture FILE");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path()).expect("open");
    let later = |secs| NOW.saturating_add(Duration::from_secs(secs));
    let queue = QueueName::new("fixture.q").expect("a queue");

    // Dead after its one try.
    let mut dead = task("dead", NOW);
    dead.max_attempts = 1;
    store.schedule(vec![dead], NOW).await.expect("schedule").pop().expect("one").expect("scheduled");
    let lease = store.lease(LeaseRequest::new(queue.clone(), 1, Duration::from_secs(60), NOW)).await.expect("lease");
    let token = lease.leases.into_iter().next().expect("dead is due").token;
    let failed = Completion::Dead { error: "410 Gone".into() };
    store.complete(CompleteRequest::new(token, failed, NOW)).await.expect("dead");

    // Done: gone from the tasks, its history kept (created, leased, acked).
    store.schedule(vec![task("done", NOW)], NOW).await.expect("schedule").pop().expect("one").expect("scheduled");
    let lease = store.lease(LeaseRequest::new(queue.clone(), 1, Duration::from_secs(60), NOW)).await.expect("lease");
    let token = lease.leases.into_iter().next().expect("done is due").token;
    store.complete(CompleteRequest::new(token, Completion::Done, NOW)).await.expect("done");

    // Leased for an hour.
    store.schedule(vec![task("leased", NOW)], NOW).await.expect("schedule").pop().expect("one").expect("scheduled");
    let lease = store.lease(LeaseRequest::new(queue, 1, Duration::from_secs(3600), NOW)).await.expect("lease");
    assert_eq!(lease.leases.len(), 1, "leased is due");

    // Scheduled, with what the later layouts added.
    let mut scheduled = task("scheduled", later(86_400));
    scheduled.tags = vec![Tag::new("pi-9").expect("a tag")];
    scheduled.priority = Priority::new(5).expect("a priority");
    scheduled.group = Some(Group::new("customer-42").expect("a group"));
    scheduled.max_attempts = 5;
    let mut repeating = task("repeating", later(3600));
    repeating.repeat = Some(Repeat::every(Duration::from_secs(3600)).expect("a repeat"));
    let mut targeted = task("targeted", later(1800));
    targeted.target = Some(punctual_core::Target::new("https://shop.example.com/hooks/cancel").expect("a target"));
    for result in store.schedule(vec![scheduled, repeating, targeted], NOW).await.expect("schedule") {
        result.expect("scheduled");
    }
    store.close().await.expect("close");
    drop(store);

    let _ = std::fs::remove_file(&out);
    let db = rusqlite::Connection::open(dir.path().join(punctual_sqlite::DB_FILE)).expect("open the database");
    db.execute("VACUUM INTO ?1", [&out]).expect("write the fixture");
    println!("wrote {out}");
}
