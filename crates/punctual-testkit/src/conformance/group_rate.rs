//! Group rates: a queue's `group_rate = count/per` hands out at most `count` leases of
//! a group's tasks in any window of `per`, whatever becomes of them, kept while the
//! group's tasks come and go; other groups and the ungrouped tasks are not held up;
//! `next_due` names the instant a held group has room again, and a waiting consumer
//! gets the group's next task then.
//!
//! Guards against a rate counted per call, per lane or per live lease (a release or an
//! ack giving a slot back), slots lost when a group empties, a rate read once and not
//! per call, a slot counted beyond its own window, and a `next_due` that names a held
//! group's due time (a consumer spinning) or none (a consumer sleeping through).

use punctual_core::policy::Rate;
use punctual_core::store::{Completion, LeaseBatch, LeaseRequest};
use punctual_core::{EngineConfig, Group, LeaseOptions, ManualClock, NewTask, QueueDefaults, Store, TaskSpec};
use punctual_core::{Lane, Target, Timestamp};
use std::sync::Arc;

use super::support::*;

fn in_group(key_name: &str, due: Timestamp, group: &str) -> NewTask {
    let mut task = new_task("orders", key_name, due);
    task.group = Some(Group::new(group).expect("the suite uses valid groups"));
    task
}

fn rate(count: u32, per_secs: u64) -> Rate {
    Rate::parse(&format!("{count}/{per_secs}s")).expect("the suite writes valid rates")
}

async fn lease_rated<S: Store>(store: &S, max: u32, group_rate: Rate, now: Timestamp) -> LeaseBatch {
    let request = LeaseRequest::new(queue("orders"), max, secs(30), now).group_rate(Some(group_rate));
    store.lease(request).await.unwrap_or_else(|e| panic!("lease failed: {e}"))
}

/// `lease` contract: under `group_rate = 2/60s` a group gets two leases a minute, in
/// either lane, across calls; a release gives no slot back; the other group and the
/// ungrouped tasks are not held up; `next_due` is when the held group has room.
pub async fn a_group_rate_hands_out_at_most_count_leases_of_a_group_per_window<S: Store>(store: S) {
    let mut tasks: Vec<NewTask> = (1..=4).map(|i| in_group(&format!("g-{i}"), at_secs(i), "g")).collect();
    let mut in_target_lane = in_group("g-target", at_secs(5), "g");
    in_target_lane.target = Some(Target::new("https://hooks.example.com/orders").expect("a valid target"));
    tasks.extend([in_target_lane, in_group("h-1", at_secs(1), "h"), new_task("orders", "u-1", at_secs(1))]);
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    let per = rate(2, 60);
    let now = at_secs(100);
    let first = lease_rated(&store, 10, per, now).await;
    assert_eq!(keys_of(&first.leases), ["u-1", "g-1", "h-1", "g-2"], "two of g, then g waits; the others are not held");
    assert_eq!(first.next_due, Some(at_secs(160)), "g has room again when its first slot leaves the window");
    let target_lane = LeaseRequest::new(queue("orders"), 10, secs(30), now).group_rate(Some(per)).in_lane(Lane::Target);
    let target = store.lease(target_lane.clone()).await.expect("lease");
    assert!(target.leases.is_empty(), "the other lane's leases count too: {:?}", keys_of(&target.leases));
    assert_eq!(target.next_due, Some(at_secs(160)));

    // The slots stay taken whatever becomes of the leases.
    let g1 = first.leases.iter().find(|l| l.token.key.as_str() == "g-1").expect("g-1");
    complete_ok(&store, &g1.token, Completion::Done, now).await;
    let g2 = first.leases.iter().find(|l| l.token.key.as_str() == "g-2").expect("g-2");
    store.release(&g2.token, now).await.expect("release");
    let held = lease_rated(&store, 10, per, at_ms(159_999)).await;
    assert!(held.leases.is_empty(), "1 ms before the window has room: {:?}", keys_of(&held.leases));
    assert_eq!(held.next_due, Some(at_secs(160)));
    let after = lease_rated(&store, 10, per, at_secs(160)).await;
    assert_eq!(keys_of(&after.leases), ["g-2", "g-3"], "two more a minute later, in due order");
    assert_eq!(after.next_due, Some(at_secs(220)));
    let unrated = store.lease(LeaseRequest::new(queue("orders"), 10, secs(30), at_secs(160))).await.expect("lease");
    assert_eq!(keys_of(&unrated.leases), ["g-4"], "without a rate, the group's next at once");
}

/// `lease` contract: a group's slots outlive its tasks; each call applies the rate it
/// is given; a slot stops counting when its own window ends, even under a longer one.
pub async fn a_group_rate_holds_while_the_groups_tasks_come_and_go<S: Store>(store: S) {
    create(&store, in_group("first", at_secs(1), "g"), T0).await;
    let now = at_secs(100);
    let first = lease_rated(&store, 10, rate(1, 60), now).await;
    assert_eq!(keys_of(&first.leases), ["first"]);
    complete_ok(&store, &first.leases[0].token, Completion::Done, now).await;

    // g had no task for a moment; its slot is still taken.
    create(&store, in_group("second", at_secs(101), "g"), now).await;
    let held = lease_rated(&store, 10, rate(1, 60), at_secs(110)).await;
    assert!(held.leases.is_empty(), "the slot of 100 s holds g until 160 s");
    assert_eq!(held.next_due, Some(at_secs(160)));
    let wider = lease_rated(&store, 10, rate(2, 60), at_secs(110)).await;
    assert_eq!(keys_of(&wider.leases), ["second"], "a rate of 2 a minute, read at this call, has room");

    create(&store, in_group("third", at_secs(111), "g"), at_secs(111)).await;
    let longer = lease_rated(&store, 10, rate(1, 3_600), at_secs(120)).await;
    assert!(longer.leases.is_empty(), "the slot of 110 s counts until its own window ends at 170 s");
    assert_eq!(longer.next_due, Some(at_secs(170)), "the slot of 100 s ended at 160 s under its own window");
}

/// The engine leases under the queue's `group_rate`, and a consumer waiting on a held
/// group gets the group's next task when its window has room, not at the wait's end.
pub async fn engine_holds_the_group_rate_and_wakes_a_consumer_when_the_window_has_room<S: Store>(store: S) {
    let clock = ManualClock::new(T0);
    let mut defaults = QueueDefaults::default();
    defaults.group_rate = Some(rate(1, 10));
    let config = EngineConfig::default().clock(Arc::new(clock.clone())).queue(queue("orders"), defaults);
    let engine = punctual_core::Engine::start(store, config);
    for name in ["first", "second"] {
        engine.schedule("orders", name, TaskSpec::now().group("customer-42")).await.expect("schedule");
    }
    let first = engine_lease(&engine, "orders", 10, secs(30)).await;
    assert_eq!(keys_of(&first), ["first"], "one lease of customer-42 per 10 s");
    engine.complete(&first[0], punctual_core::Outcome::Done).await.expect("ack");
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.lease("orders", LeaseOptions::default().max(10).wait(secs(30))).await })
    };
    clock.advance(millis(9_999));
    assert!(engine_lease(&engine, "orders", 10, secs(30)).await.is_empty(), "leased 1 ms before the window had room");
    clock.advance(millis(1));
    let second = within("the waiting consumer's lease", waiting).await.expect("join").expect("lease");
    assert_eq!(keys_of(&second), ["second"], "woken when the window had room, not at the wait's end");
    engine.shutdown().await.expect("shutdown");
}
