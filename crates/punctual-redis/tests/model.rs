//! Random operation sequences against the Redis store (a private `redis-server`),
//! checked against the model.

mod support;

async fn fresh_store() -> (punctual_redis::RedisStore, ()) {
    (support::on_server().await, ())
}

punctual_testkit::store_model_test!(fresh_store);

/// Found by the model: two queues' leases expire at 1 s and 2 s; a reap of both must
/// list them earliest expiry first, not in queue order.
#[test]
fn reap_lists_expired_leases_of_several_queues_earliest_first() {
    use punctual_testkit::model::ops::*;
    let item = |queue, due_ms| ScheduleItem {
        queue,
        key: 0,
        due_ms,
        payload: 0,
        max_attempts: 1,
        tags: 0,
        repeat: None,
        if_exists: Replace,
        custom_backoff: false,
    };
    punctual_testkit::model::replay(
        fresh_store,
        vec![
            Schedule(vec![item(1, -500), item(0, -1000)]),
            Lease { queue: 0, max: 1, lease_secs: 1 },
            Lease { queue: 1, max: 1, lease_secs: 2 },
            Advance { ms: 2000 },
            Reap { limit: 2 },
        ],
    );
}
