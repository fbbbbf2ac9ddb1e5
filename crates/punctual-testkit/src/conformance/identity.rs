//! The store's identity and the delivery ids built on it: every task a store returns
//! carries the store's identity, every delivery id begins with it, and two stores
//! never share one — so a handler de-duplicating on delivery ids never skips a task of
//! one store because another store (or the same store before it was emptied) once
//! handed out the same id. (It did: every new store began at `1-1-1`.)

use punctual_core::store::Completion;
use punctual_core::{Lease, Store};

use super::support::*;

/// The delivery id of `lease`, as the state machine document writes it:
/// `<store>-<id in hex>-<version>-<occurrence>`.
fn expected_delivery_id(lease: &Lease) -> String {
    let task = &lease.task;
    format!("{}-{:x}-{}-{}", task.meta.store, task.meta.id, task.version, task.meta.occurrence)
}

/// Store rules ("every task a store returns carries the store's identity") and
/// guarantee 3's stable delivery id: every task read from one store, in any queue or
/// shard, by any method, carries one identity, and each lease's delivery id is
/// `<store>-<id>-<version>-<occurrence>`, kept across a retry.
pub async fn every_task_and_delivery_id_carries_the_stores_identity<S: Store>(store: S) {
    let first = create(&store, new_task("orders", "order-1", T0), T0).await;
    let identity = first.meta.store;
    for (queue_name, key_name) in [("orders", "order-2"), ("orders", "order-3"), ("mail", "m-1"), ("mail", "m-2")] {
        let created = create(&store, new_task(queue_name, key_name, T0), T0).await;
        assert_eq!(created.meta.store, identity, "{queue_name}/{key_name} was created in another store");
    }
    let mut leases = lease(&store, "orders", 10, secs(30), T0).await.leases;
    leases.extend(lease(&store, "mail", 10, secs(30), T0).await.leases);
    assert_eq!(leases.len(), 5);
    for lease in &leases {
        assert_eq!(lease.task.meta.store, identity, "a leased task of another store: {lease:?}");
        assert_eq!(lease.delivery_id, expected_delivery_id(lease));
        assert!(lease.delivery_id.starts_with(&format!("{identity}-")), "{}", lease.delivery_id);
    }
    for task in list_all(&store, "orders", None).await.into_iter().chain(list_all(&store, "mail", None).await) {
        assert_eq!(task.meta.store, identity, "a listed task of another store: {task:?}");
    }
    assert_eq!(stored(&store, "mail", "m-1").await.meta.store, identity);

    let retried = leases.iter().find(|l| l.token.key == key("order-1")).expect("order-1 was leased");
    let retry = Completion::Retry { at: at_secs(1), error: "busy".into() };
    complete_ok(&store, &retried.token, retry, at_secs(1)).await;
    let again = lease_one(&store, "orders", secs(30), at_secs(1)).await;
    assert_eq!(again.delivery_id, retried.delivery_id, "a retry keeps the delivery id, store included");
}

/// Delivery ids are unique across stores: two stores made fresh, each given the same
/// first task, have different identities and give that task different delivery ids.
pub async fn two_fresh_stores_never_share_a_delivery_id<S: Store>(first: S, second: S) {
    let one = create(&first, new_task("orders", "order-1", T0), T0).await;
    let two = create(&second, new_task("orders", "order-1", T0), T0).await;
    assert_ne!(one.meta.store, two.meta.store, "two stores got the same identity");
    let (one, two) =
        (lease_one(&first, "orders", secs(30), T0).await, lease_one(&second, "orders", secs(30), T0).await);
    assert_ne!(one.delivery_id, two.delivery_id, "the first task of two stores got the same delivery id");
}
