//! Guarantee 6 at the library boundary: bad input to an [`Engine`] method is refused
//! with a typed error naming the field to fix, and changes nothing — in particular an
//! already stored task with the same key is neither replaced nor damaged.

use std::sync::Arc;

use punctual_core::{Engine, EngineConfig, LeaseOptions, ListOptions, ManualClock, Store, Tag, TaskSpec, TaskState};
use serde_json::json;

use super::support::*;

/// An engine with one stored task, `orders/order-1`, due in a minute.
async fn engine_with_a_task<S: Store>(store: S) -> Engine<S> {
    let (engine, _clock) = start_engine(store, T0);
    let spec = TaskSpec::after(secs(60)).payload(json!({"v": 1})).tag("wf-1").max_attempts(4);
    engine.schedule("orders", "order-1", spec).await.expect("schedule");
    engine
}

/// A JSON string payload that serializes to exactly `bytes` bytes.
fn payload_of_size(bytes: usize) -> serde_json::Value {
    serde_json::Value::String("x".repeat(bytes - 2))
}

/// Invalid queue names, keys and tags are `Error::Invalid` about `queue`, `key`, `tag`
/// or `tags`, and leave the store as it was.
pub async fn schedule_refuses_invalid_names_and_changes_nothing<S: Store>(store: S) {
    let engine = engine_with_a_task(store).await;
    let before = contents(engine.store(), &["orders"]).await;
    let long_queue = "q".repeat(129);
    let long_key = "k".repeat(513);
    let replacement = || TaskSpec::now().payload(json!({"v": 2}));
    let too_many_tags = (0..=Tag::MAX_PER_TASK).fold(replacement(), |spec, i| spec.tag(format!("t{i}")));
    let cases = [
        ("orders/eu", "order-1", replacement(), "queue"),
        ("", "order-1", replacement(), "queue"),
        ("ordérs", "order-1", replacement(), "queue"),
        (long_queue.as_str(), "order-1", replacement(), "queue"),
        ("orders", "", replacement(), "key"),
        ("orders", "order\n1", replacement(), "key"),
        ("orders", long_key.as_str(), replacement(), "key"),
        ("orders", "order-1", replacement().tag(""), "tag"),
        ("orders", "order-1", replacement().tag("wf\t2"), "tag"),
        ("orders", "order-1", too_many_tags, "tags"),
    ];
    for (queue_name, key_name, spec, field) in cases {
        let what = format!("schedule {queue_name:?}/{key_name:?} expecting a bad {field}");
        assert_refused(engine.schedule(queue_name, key_name, spec).await, field, &what);
        assert_eq!(contents(engine.store(), &["orders"]).await, before, "{what} changed the store");
    }
    let items = vec![("order-1".to_owned(), replacement())];
    assert_refused(engine.schedule_many("orders/eu", items).await, "queue", "schedule_many to a bad queue");
    assert_eq!(contents(engine.store(), &["orders"]).await, before, "schedule_many to a bad queue changed the store");
}

/// `max_attempts` 0 is `Error::Invalid` about `max_attempts` and changes nothing.
pub async fn schedule_refuses_bad_policies_and_changes_nothing<S: Store>(store: S) {
    let engine = engine_with_a_task(store).await;
    let before = contents(engine.store(), &["orders"]).await;
    for key_name in ["order-1", "order-2"] {
        let spec = TaskSpec::now().payload(json!({"v": 2})).max_attempts(0);
        let what = format!("max_attempts 0 for {key_name}");
        assert_refused(engine.schedule("orders", key_name, spec).await, "max_attempts", &what);
        assert_eq!(contents(engine.store(), &["orders"]).await, before, "{what} changed the store");
    }
}

/// `Limits::max_payload_bytes` (64 KiB by default): one byte over is
/// `Error::PayloadTooLarge` (field `payload`) and changes nothing; exactly the limit
/// is accepted.
pub async fn schedule_refuses_an_oversized_payload_and_changes_nothing<S: Store>(store: S) {
    let engine = engine_with_a_task(store).await;
    let limit = engine.limits().max_payload_bytes;
    let before = contents(engine.store(), &["orders"]).await;
    for key_name in ["order-1", "order-2"] {
        let spec = TaskSpec::now().payload(payload_of_size(limit + 1));
        match engine.schedule("orders", key_name, spec).await {
            Err(e @ punctual_core::Error::PayloadTooLarge { .. }) => assert_eq!(e.field(), Some("payload")),
            other => panic!("a payload one byte over the limit: expected PayloadTooLarge, got {other:?}"),
        }
        assert_eq!(contents(engine.store(), &["orders"]).await, before, "an oversized payload changed the store");
    }
    let exactly = engine.schedule("orders", "order-2", TaskSpec::now().payload(payload_of_size(limit))).await;
    let stored_payload = exactly.expect("a payload of exactly the limit is accepted").task.map(|t| t.payload);
    assert_eq!(stored_payload, Some(payload_of_size(limit)), "the payload is stored whole");
}

/// `Limits::max_batch`: a batch over it is refused as a whole (`Error::Invalid`,
/// field `tasks`) and writes none of its items.
pub async fn schedule_many_refuses_an_oversized_batch_and_changes_nothing<S: Store>(store: S) {
    let clock = ManualClock::new(T0);
    let mut config = EngineConfig::default().clock(Arc::new(clock));
    config.limits.max_batch = 3;
    let engine = Engine::start(store, config);
    engine.schedule("orders", "order-1", TaskSpec::after(secs(60)).payload(json!({"v": 1}))).await.expect("schedule");
    let before = contents(engine.store(), &["orders"]).await;

    let item = |name: &str| (name.to_owned(), TaskSpec::now().payload(json!({"v": 2})));
    let batch = vec![item("order-1"), item("order-2"), item("order-3"), item("order-4")];
    assert_refused(engine.schedule_many("orders", batch).await, "tasks", "a batch of 4 over a limit of 3");
    assert_eq!(contents(engine.store(), &["orders"]).await, before, "a refused batch wrote some of its items");

    let results = engine.schedule_many("orders", vec![item("order-2"), item("order-3"), item("order-4")]).await;
    assert!(results.expect("a batch at the limit").iter().all(Result::is_ok));
}

/// `Engine::schedule_many`: each bad item is refused on its own with its typed error;
/// the valid items are stored, and a stored task named by a bad item is unchanged.
pub async fn schedule_many_refuses_bad_items_alone<S: Store>(store: S) {
    let engine = engine_with_a_task(store).await;
    let original = stored(engine.store(), "orders", "order-1").await;
    let limit = engine.limits().max_payload_bytes;
    let items = vec![
        ("fresh-1".to_owned(), TaskSpec::after(secs(5))),
        (String::new(), TaskSpec::now()),
        ("order-1".to_owned(), TaskSpec::now().payload(json!({"v": 2})).max_attempts(0)),
        ("order-1".to_owned(), TaskSpec::now().payload(payload_of_size(limit + 1))),
        ("order-1".to_owned(), TaskSpec::now().payload(json!({"v": 3})).tag("bad\u{7}tag")),
        ("fresh-2".to_owned(), TaskSpec::after(secs(5))),
    ];
    let results = engine.schedule_many("orders", items).await.expect("schedule_many");
    assert_eq!(results.len(), 6, "one result per item");
    assert!(results[0].is_ok(), "a valid item: {:?}", results[0]);
    assert_refused(results[1].clone(), "key", "an empty key");
    assert_refused(results[2].clone(), "max_attempts", "max_attempts 0");
    assert_refused(results[3].clone(), "payload", "an oversized payload");
    assert_refused(results[4].clone(), "tag", "a tag with a control character");
    assert!(results[5].is_ok(), "a valid item after bad ones: {:?}", results[5]);
    assert_eq!(stored(engine.store(), "orders", "order-1").await, original, "a refused item changed order-1");
    assert!(get(engine.store(), "orders", "fresh-1").await.is_some());
    assert!(get(engine.store(), "orders", "fresh-2").await.is_some());
}

/// `LeaseOptions` bounds (max 1–1,000, lease 1 s–12 h, wait ≤ 60 s) and a bad queue
/// name: refused with the right field, and nothing is leased.
pub async fn lease_refuses_bad_options_and_leases_nothing<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    engine.schedule("orders", "order-1", TaskSpec::now()).await.expect("schedule");
    let before = contents(engine.store(), &["orders"]).await;
    let ok = LeaseOptions::default();
    let cases = [
        ("orders", ok.max(0), "max"),
        ("orders", ok.max(1001), "max"),
        ("orders", ok.lease_for(millis(999)), "lease"),
        ("orders", ok.lease_for(secs(12 * 3600 + 1)), "lease"),
        ("orders", ok.wait(secs(61)), "wait"),
        ("orders here", ok, "queue"),
    ];
    for (queue_name, options, field) in cases {
        let what = format!("lease {queue_name:?} with {options:?}");
        assert_refused(within(&what, engine.lease(queue_name, options)).await, field, &what);
        assert_eq!(contents(engine.store(), &["orders"]).await, before, "{what} changed the store");
    }
    let widest = ok.max(1000).lease_for(secs(12 * 3600));
    let leased = within("the widest lease", engine.lease("orders", widest)).await.expect("the widest options");
    assert_eq!(keys_of(&leased), ["order-1"]);
}

/// Every other `Engine` method that takes a name or a bound refuses a bad one with the
/// right field and changes nothing — including `extend` of a live lease.
pub async fn other_engine_calls_refuse_invalid_input_and_change_nothing<S: Store>(store: S) {
    let (engine, _clock) = start_engine(store, T0);
    engine.schedule("orders", "order-1", TaskSpec::now().tag("wf-1")).await.expect("schedule");
    engine.schedule("orders", "order-2", TaskSpec::after(secs(60)).tag("wf-1")).await.expect("schedule");
    let lease = engine_lease_one(&engine, "orders", secs(30)).await;
    let before = contents(engine.store(), &["orders"]).await;
    let unchanged = |what: &str| format!("{what} changed the store");

    assert_refused(engine.get("orders/eu", "order-1").await, "queue", "get with a bad queue");
    assert_refused(engine.get("orders", "").await, "key", "get with an empty key");
    assert_refused(engine.cancel("orders", "order-2\r").await, "key", "cancel with a bad key");
    assert_eq!(contents(engine.store(), &["orders"]).await, before, "{}", unchanged("cancel with a bad key"));
    assert_refused(engine.cancel_tag("orders", "").await, "tag", "cancel_tag with an empty tag");
    assert_refused(engine.cancel_tag("orders/eu", "wf-1").await, "queue", "cancel_tag with a bad queue");
    assert_eq!(contents(engine.store(), &["orders"]).await, before, "{}", unchanged("cancel_tag with bad input"));
    assert_refused(engine.list("orders", ListOptions::default().limit(0)).await, "limit", "list with limit 0");
    assert_refused(engine.list("orders", ListOptions::default().limit(1001)).await, "limit", "list with limit 1001");
    let empty_tag = ListOptions::default().tag(Some(String::new()));
    assert_refused(engine.list("orders", empty_tag).await, "tag", "list with an empty tag");
    assert_refused(engine.stats(Some("orders/eu")).await, "queue", "stats of a bad queue");
    assert_refused(engine.retry_dead("orders", "").await, "key", "retry_dead with an empty key");
    assert_refused(engine.delete_dead("", "order-1").await, "queue", "delete_dead with an empty queue");
    assert_refused(engine.extend(&lease.token, millis(500)).await, "lease", "extend by less than 1 s");
    assert_refused(engine.extend(&lease.token, secs(13 * 3600)).await, "lease", "extend by more than 12 h");
    assert_eq!(contents(engine.store(), &["orders"]).await, before, "{}", unchanged("a refused call"));
    let task = stored(engine.store(), "orders", "order-1").await;
    assert_eq!((task.state, task.lease_expires_at), (TaskState::Leased, Some(at_secs(30))), "the lease is as it was");
}
