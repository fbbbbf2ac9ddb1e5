//! Stores as earlier releases of punctual left them, kept as files
//! (`tests/fixtures/layout-N.db`, written by `examples/write_layout_fixture.rs` when
//! layout N was current): each opens with this punctual, upgraded in place to the
//! current layout, every task as it was — its state, due time, payload, tags, priority,
//! group, repeat, target, lease and last error — and goes on working: the lease of
//! then is found expired and its task leased again, and the repeat is due.
//!
//! Guards against a layout change whose migration misses a store that real users have
//! on disk (the hand-built older layouts of `layout_versions.rs` are what each change
//! was written against; these files are what the code of the day actually wrote).

use std::path::Path;
use std::time::Duration;

use punctual_core::history::EventKind;
use punctual_core::store::{HistoryRequest, LeaseRequest, ListRequest};
use punctual_core::{QueueName, Store, TaskKey, TaskState, Timestamp};
use punctual_sqlite::{DB_FILE, SqliteStore};

/// 2026-11-30T12:00:00Z, the time the fixtures were written at.
const THEN: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn later(secs: u64) -> Timestamp {
    THEN.saturating_add(Duration::from_secs(secs))
}

/// Every fixture file, in layout order.
fn fixtures() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "db"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixture in {}", dir.display());
    files
}

/// The layout of a fixture, from its name (`layout-N.db`).
fn layout_of(name: &str) -> u32 {
    name.trim_start_matches("layout-").trim_end_matches(".db").parse().expect("a fixture's name is layout-N.db")
}

#[tokio::test]
async fn every_kept_store_opens_upgraded_with_its_tasks_as_they_were() {
    for fixture in fixtures() {
        let name = fixture.file_name().expect("a name").to_string_lossy().into_owned();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::copy(&fixture, dir.path().join(DB_FILE)).expect("copy the fixture");
        let store = SqliteStore::open(dir.path()).unwrap_or_else(|e| panic!("{name} does not open: {e}"));
        let queue = QueueName::new("fixture.q").expect("a queue");
        let page = store.list(ListRequest::new(queue.clone(), None, 100, None)).await.expect("list");
        let mut tasks: Vec<_> = page.tasks.iter().map(|t| (t.key.as_str().to_owned(), t)).collect();
        tasks.sort_by(|a, b| a.0.cmp(&b.0));
        let keys: Vec<&str> = tasks.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["dead", "leased", "repeating", "scheduled", "targeted"], "{name}");
        let task = |key: &str| tasks.iter().find(|(k, _)| k == key).expect("listed").1;
        for (key, t) in &tasks {
            assert_eq!(t.payload, serde_json::json!({ "key": key }), "{name}: {key}'s payload");
        }

        let dead = task("dead");
        assert_eq!((dead.state, dead.attempts, dead.last_error.as_deref()), (TaskState::Dead, 1, Some("410 Gone")));
        let leased = task("leased");
        assert_eq!((leased.state, leased.lease_expires_at), (TaskState::Leased, Some(later(3600))), "{name}");
        let scheduled = task("scheduled");
        assert_eq!(
            (scheduled.state, scheduled.due_at, scheduled.max_attempts),
            (TaskState::Scheduled, later(86_400), 5)
        );
        assert_eq!(scheduled.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["pi-9"], "{name}");
        assert_eq!(scheduled.priority.get(), 5, "{name}");
        assert_eq!(scheduled.group.as_ref().map(|g| g.as_str()), Some("customer-42"), "{name}");
        let repeating = task("repeating");
        assert_eq!(repeating.due_at, later(3600), "{name}");
        let every_hour = punctual_core::Repeat::every(Duration::from_secs(3600)).expect("a repeat");
        assert_eq!(repeating.repeat.as_ref(), Some(&every_hour), "{name}");
        let targeted = task("targeted");
        assert_eq!(
            targeted.target.as_ref().map(|t| t.url().to_owned()),
            Some("https://shop.example.com/hooks/cancel".to_owned()),
            "{name}"
        );

        // A done task's history, in the fixtures written since layouts kept one (7 on),
        // reads as it was told; the task itself is gone.
        let done =
            store.history(HistoryRequest::new(queue.clone(), TaskKey::new("done").expect("a key"), Timestamp::EPOCH));
        let kinds: Vec<EventKind> = done.await.expect("history").iter().map(|event| event.kind).collect();
        if layout_of(&name) >= 7 {
            assert_eq!(kinds, [EventKind::Created, EventKind::Leased, EventKind::Acked], "{name}");
        }

        // And it goes on: a day later the reaper finds the lease of before expired, and
        // the tasks for pull workers are leased (the targeted one is the push lane's).
        let next_day = later(86_400 + 60);
        store.reap(next_day, 100).await.expect("reap");
        let batch = store.lease(LeaseRequest::new(queue, 10, Duration::from_secs(60), next_day)).await.expect("lease");
        let mut leased_keys: Vec<&str> = batch.leases.iter().map(|l| l.task.key.as_str()).collect();
        leased_keys.sort_unstable();
        assert_eq!(leased_keys, ["leased", "repeating", "scheduled"], "{name}");
        store.close().await.expect("close");
    }
}
