//! The reference store's `next_due` after a lease in groups: a group with room names its
//! earliest due time, before `now` when more were due than `max`, with or without a
//! `group_rate` (as before rates, and as the other stores answer); only a group its rate
//! holds names the later instant it has room.
//!
//! Guards against a `next_due` raised to `now` for every group under a rate or none,
//! which the model test found as a disagreement with the embedded store.

use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::store::LeaseRequest;
use punctual_core::{Group, MemoryStore, NewTask, QueueName, Store, TaskKey, Timestamp};

const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);

fn at_secs(secs: u64) -> Timestamp {
    T0.saturating_add(Duration::from_secs(secs))
}

fn queue() -> QueueName {
    QueueName::new("orders").expect("a queue")
}

#[tokio::test]
async fn next_due_names_an_open_groups_earliest_due_time_even_before_now() {
    let store = MemoryStore::new();
    let tasks = [("a", T0), ("b", at_secs(1)), ("c", at_secs(1)), ("d", at_secs(1))].map(|(key, due)| {
        let mut task = NewTask::new(queue(), TaskKey::new(key).expect("a key"), due);
        task.group = Some(Group::new("g").expect("a group"));
        task
    });
    for scheduled in store.schedule(tasks.to_vec(), T0).await.expect("schedule") {
        scheduled.expect("created");
    }
    let rate = Rate { count: 2, per: Duration::from_secs(60) };
    let lease = |now, group_rate| LeaseRequest::new(queue(), 1, Duration::from_secs(5), now).group_rate(group_rate);
    for group_rate in [None, Some(rate)] {
        let batch = store.lease(lease(at_secs(10), group_rate)).await.expect("lease");
        assert_eq!(batch.leases.len(), 1);
        assert_eq!(batch.next_due, Some(at_secs(1)), "rate {group_rate:?}: the group has room, its next is due");
    }
    let held = store.lease(lease(at_secs(11), Some(rate))).await.expect("lease");
    assert_eq!(held.leases.len(), 1, "the second slot in the window");
    assert_eq!(held.next_due, Some(at_secs(70)), "room when the first slot, taken at 10 s, ends");
}
