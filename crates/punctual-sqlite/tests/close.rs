//! Closing under writes: every write answered `Ok` is in the store when it is opened
//! again, whichever thread answered it (the writer, at commit, for leases; the syncer,
//! after syncing the WAL, for schedules), and every write that was not taken is
//! answered with `Unavailable` — none is left unanswered.

use std::sync::Arc;
use std::time::Duration;

use punctual_core::store::LeaseRequest;
use punctual_core::{Error, NewTask, QueueName, Store, TaskKey, Timestamp};
use punctual_sqlite::SqliteStore;

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const WRITERS: usize = 8;
const PER_WRITER: usize = 200;

fn queue() -> QueueName {
    QueueName::new("order.cancel").expect("a queue name")
}

fn task(key: &str) -> NewTask {
    NewTask::new(queue(), TaskKey::new(key).expect("a key"), NOW)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_answered_before_close_is_there_after_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    store.schedule(vec![task("leased-first")], NOW).await.expect("schedule").pop().expect("one").expect("scheduled");

    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let mut kept = Vec::new();
            for n in 0..PER_WRITER {
                let key = format!("w{writer}-{n}");
                match store.schedule(vec![task(&key)], NOW).await {
                    Ok(mut results) => {
                        results.pop().expect("one result").expect("scheduled");
                        kept.push(key);
                    }
                    Err(Error::Unavailable(_)) => break,
                    Err(other) => panic!("{key}: {other:?}"),
                }
            }
            kept
        });
    }
    // Close once some schedules have been answered, while the rest are in flight.
    let lease = LeaseRequest::new(queue(), 1, Duration::from_secs(60), NOW);
    let leased = store.lease(lease).await.expect("lease").leases.len();
    while store.stats(Some(&queue())).await.expect("stats")[0].scheduled + (leased as u64) < 100 {
        tokio::task::yield_now().await;
    }
    store.close().await.expect("close");

    let mut kept = Vec::new();
    while let Some(joined) = writers.join_next().await {
        kept.extend(joined.expect("a writer panicked"));
    }
    assert!(kept.len() >= 99, "only {} schedules were answered before close", kept.len());
    drop(store);

    let again = SqliteStore::open(dir.path()).expect("reopen");
    for key in &kept {
        let found = again.get(&queue(), &TaskKey::new(key.as_str()).expect("a key")).await.expect("get");
        assert!(found.is_some(), "{key} was answered Ok but is not in the reopened store");
    }
    let leased_task = again.get(&queue(), &TaskKey::new("leased-first").expect("a key")).await.expect("get");
    let state = leased_task.expect("the leased task").state;
    assert_eq!(state, punctual_core::TaskState::Leased, "the lease answered before close was lost");
}
