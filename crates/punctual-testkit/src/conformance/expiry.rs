//! Lease liveness: a lease is live only while its task is `leased` under the same id,
//! version and fence and `now < lease_expires_at`. Anything else — an expired lease, a
//! superseded one, a forged or mistaken token — is refused with `LeaseLost` and changes
//! nothing (guarantee 3). Also the ways a lease ends without an ack: `reap`, `extend`,
//! `release`.

use punctual_core::store::{Completion, ExtendRequest, Reaped};
use punctual_core::{LeaseToken, Store, TaskState};

use super::support::*;

/// Every completion, as a refused ack would try it.
fn every_completion() -> Vec<Completion> {
    vec![
        Completion::Done,
        Completion::Retry { at: at_secs(1000), error: "stale retry".into() },
        Completion::Reschedule { at: at_secs(1000), anchor: at_secs(1000) },
        Completion::Dead { error: "stale dead".into() },
    ]
}

/// Tries every completion, `extend` and `release` with `token`; each must be
/// `LeaseLost`.
async fn assert_token_refused<S: Store>(store: &S, token: &LeaseToken, now: punctual_core::Timestamp, what: &str) {
    for completion in every_completion() {
        let tried = format!("{what}: complete {completion:?}");
        assert_lease_lost(complete(store, token, completion, now).await, &tried);
    }
    assert_lease_lost(store.extend(ExtendRequest::new(token.clone(), secs(30), now)).await, &format!("{what}: extend"));
    assert_lease_lost(store.release(token, now).await, &format!("{what}: release"));
}

/// Store rules: a lease is live only while `now < lease_expires_at` — at its expiry
/// instant it can no longer complete, extend or release, even before any reap; just
/// before, it can.
pub async fn lease_is_not_live_at_or_after_its_expiry<S: Store>(store: S) {
    create(&store, new_task("orders", "on-time", T0), T0).await;
    create(&store, new_task("orders", "too-late", T0), T0).await;
    let leases = lease(&store, "orders", 2, secs(30), T0).await.leases;
    let token_of =
        |name: &str| leases.iter().find(|l| l.token.key == key(name)).map(|l| &l.token).expect("both tasks were due");
    let (on_time, too_late) = (token_of("on-time"), token_of("too-late"));

    complete_ok(&store, on_time, Completion::Done, at_ms(29_999)).await;
    let before = contents(&store, &["orders"]).await;
    assert_token_refused(&store, too_late, at_secs(30), "a lease at its expiry instant").await;
    assert_eq!(contents(&store, &["orders"]).await, before, "a refused ack changed the store");
    assert_eq!(stored(&store, "orders", "too-late").await.state, TaskState::Leased, "still leased until reaped");
}

/// Guarantee 3 ("an ack from an expired lease is refused"): after expiry, reap and a
/// new lease, the first token's complete, extend and release are `LeaseLost` and
/// change nothing; the new lease is attempt 2 of the same delivery and completes.
pub async fn stale_lease_after_reap_and_re_lease_changes_nothing<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    let first = lease_one(&store, "orders", secs(30), T0).await;
    let reaped = reap(&store, at_secs(30), 100).await;
    assert_eq!(reaped.reaped, [Reaped::new(queue("orders"), key("order-1"), TaskState::Scheduled)]);
    let second = lease_one(&store, "orders", secs(30), at_secs(30)).await;
    assert!(second.token.fence > first.token.fence, "each lease takes a newer fence");
    assert_eq!(second.attempt, 2, "the expired try counted");
    assert_eq!(second.delivery_id, first.delivery_id, "a retry of one occurrence keeps its delivery id");

    let before = contents(&store, &["orders"]).await;
    assert_token_refused(&store, &first.token, at_secs(31), "the superseded lease").await;
    assert_eq!(contents(&store, &["orders"]).await, before, "a stale token changed the store");

    complete_ok(&store, &second.token, Completion::Done, at_secs(32)).await;
    assert_eq!(get(&store, "orders", "order-1").await, None);
}

/// Store rules: a token is live only if its task id, version, fence, queue and key all
/// match the live lease; any single mismatch is `LeaseLost` and changes nothing.
pub async fn tokens_not_matching_the_live_lease_are_refused<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    create(&store, new_task("orders", "order-2", at_secs(600)), T0).await;
    create(&store, new_task("mail", "order-1", at_secs(600)), T0).await;
    let real = lease_one(&store, "orders", secs(30), T0).await.token;

    let mut forged = Vec::new();
    let mut token = real.clone();
    token.fence += 1;
    forged.push(("fence + 1", token));
    let mut token = real.clone();
    token.fence -= 1;
    forged.push(("fence - 1", token));
    let mut token = real.clone();
    token.version += 1;
    forged.push(("version + 1", token));
    let mut token = real.clone();
    token.task_id = token.task_id.wrapping_add(1);
    forged.push(("another task id", token));
    let mut token = real.clone();
    token.key = key("order-2");
    forged.push(("another key", token));
    let mut token = real.clone();
    token.queue = queue("mail");
    forged.push(("another queue", token));

    let before = contents(&store, &["orders", "mail"]).await;
    for (what, token) in &forged {
        assert_token_refused(&store, token, at_secs(1), what).await;
    }
    assert_eq!(contents(&store, &["orders", "mail"]).await, before, "a mismatched token changed the store");
    complete_ok(&store, &real, Completion::Done, at_secs(1)).await;
}

/// `TaskMeta::id` contract ("a task that is deleted and created again gets a new id")
/// and guarantee 3: a lease of the deleted task cannot complete the new one — even
/// though both are version 1 with one lease each — and the new task is a new delivery.
pub async fn re_created_task_gets_a_new_id_and_delivery_id<S: Store>(store: S) {
    let first = create(&store, new_task("orders", "order-1", T0), T0).await;
    let old = lease_one(&store, "orders", secs(60), T0).await;
    assert!(store.cancel(&queue("orders"), &key("order-1"), None).await.expect("cancel"));

    let second = create(&store, new_task("orders", "order-1", T0), at_secs(1)).await;
    assert_ne!(second.meta.id, first.meta.id, "a re-created task must get a new id");
    let new = lease_one(&store, "orders", secs(60), at_secs(1)).await;
    assert_ne!(new.delivery_id, old.delivery_id, "a re-created task is a new delivery");

    let before = contents(&store, &["orders"]).await;
    assert_token_refused(&store, &old.token, at_secs(2), "a lease of the deleted task").await;
    assert_eq!(contents(&store, &["orders"]).await, before, "the old task's lease changed the new task");
    complete_ok(&store, &new.token, Completion::Done, at_secs(2)).await;
}

/// `reap` contract and DESIGN.md retry rules: an expired lease counts as a failed try —
/// `attempts + 1`, `last_error` says so — and the task is due again at once
/// (`due_at = now`, no backoff); `next_expiry` reports live leases; nothing is reaped
/// before its expiry.
pub async fn reap_ends_an_expired_lease_as_a_failed_try_due_at_once<S: Store>(store: S) {
    let mut task = new_task("orders", "order-1", T0);
    task.max_attempts = 3;
    let created = create(&store, task, T0).await;
    let first = lease_one(&store, "orders", secs(30), T0).await;

    let early = reap(&store, at_ms(29_999), 100).await;
    assert!(early.reaped.is_empty(), "reaped a live lease: {:?}", early.reaped);
    assert_eq!(early.next_expiry, Some(at_secs(30)), "the live lease expires at 30 s");
    assert_eq!(stored(&store, "orders", "order-1").await.state, TaskState::Leased);

    let result = reap(&store, at_secs(45), 100).await;
    assert_eq!(result.reaped, [Reaped::new(queue("orders"), key("order-1"), TaskState::Scheduled)]);
    assert_eq!(result.next_expiry, None, "no lease is left");
    let task = stored(&store, "orders", "order-1").await;
    assert_eq!(task.state, TaskState::Scheduled);
    assert_eq!(task.attempts, 1, "an expired lease counts as a failed try");
    assert_eq!(task.due_at, at_secs(45), "due again at once, without backoff");
    assert!(task.last_error.as_deref().is_some_and(|e| !e.is_empty()), "last_error says the lease expired");
    assert_eq!(task.version, created.version, "a reap is not a caller's write");

    let second = lease_one(&store, "orders", secs(30), at_secs(45)).await;
    assert_eq!(second.attempt, 2);
    assert_eq!(second.delivery_id, first.delivery_id);
}

/// `reap` contract: when `attempts` reaches `max_attempts` the task goes `dead`
/// instead of coming back.
pub async fn reaping_the_last_attempt_makes_the_task_dead<S: Store>(store: S) {
    let mut task = new_task("orders", "order-1", T0);
    task.max_attempts = 2;
    create(&store, task, T0).await;
    lease_one(&store, "orders", secs(10), T0).await;
    let first = reap(&store, at_secs(10), 100).await;
    assert_eq!(first.reaped, [Reaped::new(queue("orders"), key("order-1"), TaskState::Scheduled)]);
    lease_one(&store, "orders", secs(10), at_secs(10)).await;
    let last = reap(&store, at_secs(20), 100).await;
    assert_eq!(last.reaped, [Reaped::new(queue("orders"), key("order-1"), TaskState::Dead)]);

    let task = stored(&store, "orders", "order-1").await;
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 2));
    assert!(task.last_error.is_some());
    assert!(lease(&store, "orders", 10, secs(10), at_secs(1000)).await.leases.is_empty(), "a dead task was leased");
    let dead = list_all(&store, "orders", Some(TaskState::Dead)).await;
    assert_eq!(dead.len(), 1);
}

/// `reap` contract: up to `limit` expired leases, earliest expiry first, across queues;
/// `next_expiry` is the earliest expiry of the leases still live (an expired lease the
/// limit left behind is not live).
pub async fn reap_takes_the_earliest_expiries_first_and_reports_the_next<S: Store>(store: S) {
    create(&store, new_task("orders", "first", T0), T0).await;
    create(&store, new_task("mail", "second", T0), T0).await;
    create(&store, new_task("orders", "live", T0), T0).await;
    lease_one(&store, "orders", secs(10), T0).await; // "first", expires at 10 s
    lease_one(&store, "mail", secs(20), T0).await; // "second", expires at 20 s
    lease_one(&store, "orders", secs(60), T0).await; // "live", expires at 60 s

    let one = reap(&store, at_secs(25), 1).await;
    assert_eq!(one.reaped, [Reaped::new(queue("orders"), key("first"), TaskState::Scheduled)], "earliest first");
    assert_eq!(stored(&store, "mail", "second").await.state, TaskState::Leased, "the limit was 1");
    assert_eq!(one.next_expiry, Some(at_secs(60)), "the expired lease the limit left is not live");
    let rest = reap(&store, at_secs(25), 10).await;
    assert_eq!(rest.reaped, [Reaped::new(queue("mail"), key("second"), TaskState::Scheduled)]);
    assert_eq!(rest.next_expiry, Some(at_secs(60)));
    let none = reap(&store, at_secs(25), 10).await;
    assert!(none.reaped.is_empty());
    assert_eq!(none.next_expiry, Some(at_secs(60)));
    let last = reap(&store, at_secs(60), 10).await;
    assert_eq!(last.reaped, [Reaped::new(queue("orders"), key("live"), TaskState::Scheduled)]);
    assert_eq!(last.next_expiry, None);
}

/// `extend` contract: a live lease's expiry moves to `now + lease_for` (returned), the
/// token stays valid, and the task is not reaped before the new expiry.
pub async fn extend_moves_the_expiry_and_the_task_is_not_reaped_before_it<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    let held = lease_one(&store, "orders", secs(10), T0).await;
    let expiry = store
        .extend(ExtendRequest::new(held.token.clone(), secs(10), at_secs(5)))
        .await
        .expect("extend of a live lease");
    assert_eq!(expiry, at_secs(15));
    assert_eq!(stored(&store, "orders", "order-1").await.lease_expires_at, Some(at_secs(15)));

    let result = reap(&store, at_secs(12), 100).await;
    assert!(result.reaped.is_empty(), "reaped a lease extended to 15 s at 12 s: {:?}", result.reaped);
    assert_eq!(result.next_expiry, Some(at_secs(15)));
    assert!(lease(&store, "orders", 10, secs(10), at_secs(12)).await.leases.is_empty(), "leased twice");
    complete_ok(&store, &held.token, Completion::Done, at_secs(14)).await;
    assert_eq!(get(&store, "orders", "order-1").await, None);
}

/// `release` contract: the task is `scheduled` again with its `due_at` and `attempts`
/// unchanged (the try did not happen), the released token is dead, and the next lease
/// is the same attempt of the same delivery.
pub async fn release_gives_the_task_back_untried<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", at_secs(10)), T0).await;
    let token = lease_one(&store, "orders", secs(30), at_secs(10)).await.token;
    complete_ok(&store, &token, Completion::Retry { at: at_secs(20), error: "boom".into() }, at_secs(10)).await;
    let held = lease_one(&store, "orders", secs(30), at_secs(20)).await;
    assert_eq!(held.attempt, 2);

    store.release(&held.token, at_secs(21)).await.expect("release of a live lease");
    let task = stored(&store, "orders", "order-1").await;
    assert_eq!(task.state, TaskState::Scheduled);
    assert_eq!(task.due_at, at_secs(20), "release keeps due_at");
    assert_eq!(task.attempts, 1, "release does not count a try");
    assert_eq!(task.last_error.as_deref(), Some("boom"));
    assert_lease_lost(complete(&store, &held.token, Completion::Done, at_secs(21)).await, "ack after release");

    let again = lease_one(&store, "orders", secs(30), at_secs(21)).await;
    assert_eq!(again.attempt, 2, "the released try is tried again");
    assert_eq!(again.delivery_id, held.delivery_id);
}
