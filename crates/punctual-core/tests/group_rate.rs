//! The reference store's `next_due` under a `group_rate`: a group with room offers its
//! earliest due time, even one before `now`; a group the rate holds, the later of that
//! and the instant its window has room again.
//!
//! Guards against a reference that named `now` for every grouped task due before it
//! (the room instant of a group with room), so that every real store following the
//! contract (`LeaseBatch::next_due`) disagreed with it in the model test.

#![allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]

use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::store::LeaseRequest;
use punctual_core::{Group, MemoryStore, NewTask, QueueName, Store, TaskKey, Timestamp};

const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn grouped(key: &str, due: Timestamp) -> NewTask {
    let mut task = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new(key).unwrap(), due);
    task.group = Some(Group::new("g").unwrap());
    task
}

#[tokio::test]
async fn a_group_with_room_offers_its_earliest_due_time_and_a_held_one_its_room() {
    let store = MemoryStore::new();
    let earlier = Timestamp::from_millis(T0.as_millis() - 1_000);
    store.schedule(vec![grouped("a", earlier), grouped("b", earlier)], T0).await.unwrap();
    let rated = |count| {
        let rate = Rate { count, per: Duration::from_secs(60) };
        LeaseRequest::new(QueueName::new("q").unwrap(), 1, Duration::from_secs(5), T0).group_rate(Some(rate))
    };
    let batch = store.lease(rated(2)).await.unwrap();
    assert_eq!((batch.leases.len(), batch.next_due), (1, Some(earlier)), "one slot of two: b due a second ago");
    let held = store.lease(rated(1)).await.unwrap();
    assert_eq!((held.leases.len(), held.next_due), (0, Some(T0.saturating_add(Duration::from_secs(60)))));
}
