//! Random operation sequences against the Redis store (a private `redis-server`),
//! checked against the model.

use crate::support;

async fn fresh_store() -> (punctual_redis::RedisStore, ()) {
    (support::on_server().await, ())
}

punctual_testkit::store_model_test!(fresh_store);

/// Found by the model: two queues' leases expire at 1 s and 2 s; a reap of both must
/// list them earliest expiry first, not in queue order.
#[test]
fn reap_lists_expired_leases_of_several_queues_earliest_first() {
    use punctual_testkit::model::ops::*;
    punctual_testkit::model::replay(
        fresh_store,
        vec![
            Schedule(vec![ScheduleItem::once(1, 0, -500), ScheduleItem::once(0, 0, -1000)]),
            Lease { queue: 0, max: 1, lease_secs: 1, group_limit: None, group_rate: None },
            Lease { queue: 1, max: 1, lease_secs: 2, group_limit: None, group_rate: None },
            Advance { ms: 2000 },
            Reap { limit: 2 },
        ],
    );
}

/// Found by the model on the embedded store, and true of this one before it read each
/// key once: a bulk retry by keys naming one dead task twice counted it twice.
#[test]
fn a_bulk_retry_by_keys_counts_a_key_given_twice_once() {
    use punctual_testkit::model::ops::*;
    punctual_testkit::model::replay(
        fresh_store,
        vec![
            Schedule(vec![ScheduleItem::once(0, 0, -1000)]),
            FailDue { queue: 0, max: 1 },
            RetryDeadMany { queue: 0, which: DeadKeys(vec![Existing(0), Existing(0)]), limit: 2 },
        ],
    );
}

/// Found by the model once it drew groups: a lease that leaves a ready group (one with
/// a due task) answered `next_due` = its own now, not the earliest due time left (here
/// the grouped task's, a second before now).
#[test]
fn a_lease_leaving_a_ready_group_answers_its_earliest_due_time() {
    use punctual_testkit::model::ops::*;
    let grouped = ScheduleItem { group: Some(0), ..ScheduleItem::once(1, 3, -1000) };
    punctual_testkit::model::replay(
        fresh_store,
        vec![
            Schedule(vec![grouped, ScheduleItem::once(1, 0, -1000)]),
            Lease { queue: 1, max: 1, lease_secs: 2, group_limit: Some(2), group_rate: None },
        ],
    );
}

/// Found by the model: a schedule that moves a group's last task to another group and
/// then gives the first group a task, in one call, must forget the first group's turn
/// in between (a group left without tasks is forgotten), so that group, new again,
/// comes before the other by name, as both have turn 0.
#[test]
fn a_group_emptied_and_refilled_by_one_schedule_starts_again_at_turn_0() {
    use punctual_testkit::model::ops::*;
    punctual_testkit::model::replay(
        fresh_store,
        vec![
            Schedule(vec![ScheduleItem { group: Some(0), ..ScheduleItem::once(0, 1, -1000) }]),
            Lease { queue: 0, max: 1, lease_secs: 1, group_limit: None, group_rate: None },
            Schedule(vec![
                ScheduleItem { group: Some(1), ..ScheduleItem::once(0, 1, -1000) },
                ScheduleItem { group: Some(0), ..ScheduleItem::once(0, 2, -1000) },
            ]),
            FailDue { queue: 0, max: 1 },
        ],
    );
}
