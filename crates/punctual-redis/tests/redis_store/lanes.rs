//! The lanes as Redis keeps them: each lane's scheduled set holds exactly its tasks,
//! even when one schedule call moves a key between lanes and back; and wake-ups name
//! their lane: a script that makes the earliest due time of a queue's target lane
//! earlier says so on the wake-up channel, and one of its handler lane says that (as
//! every wake-up did before lanes).
//!
//! Guards against a key left in both sets by a batch that writes it twice (the set of
//! its first write would lease a task the other lane owns, or a replaced version of
//! it), against a server whose target-lane consumers are not woken by another server's
//! schedule or release of a task with a target (they would wait for the safety poll),
//! and against handler consumers woken for work they may not take. A store hears every
//! message on the channel, its own included, so one store hears what every other
//! process would.

use std::time::Duration;

use punctual_core::store::LeaseRequest;
use punctual_core::{Lane, NewTask, QueueName, Store, TaskKey, Timestamp, Wakeup};
use tokio::sync::broadcast;

use crate::support;

const NOW: i64 = 1_700_000_000_000;
const WAIT: Duration = Duration::from_secs(10);

fn at_secs(s: i64) -> Timestamp {
    Timestamp::from_millis(NOW + s * 1000)
}

fn task(queue: &str, key: &str, due: Timestamp, target: bool) -> NewTask {
    let mut task = NewTask::new(QueueName::new(queue).expect("a queue"), TaskKey::new(key).expect("a key"), due);
    if target {
        task.target = Some(punctual_core::Target::new("http://127.0.0.1:9/hook").expect("a target"));
    }
    task
}

async fn schedule(store: &impl Store, task: NewTask) {
    store.schedule(vec![task], at_secs(0)).await.expect("schedule").remove(0).expect("scheduled");
}

/// The next wake-up heard, within [`WAIT`].
pub(crate) async fn next_wakeup(wakeups: &mut broadcast::Receiver<Wakeup>, after: &str) -> Wakeup {
    tokio::time::timeout(WAIT, wakeups.recv())
        .await
        .unwrap_or_else(|_| panic!("no wake-up within {WAIT:?} after {after}"))
        .expect("the wake-up channel")
}

/// Schedules a task in a fresh queue until its wake-up is heard: the store subscribes
/// to the channel on its own time, and what it misses before is not heard.
pub(crate) async fn until_subscribed(store: &impl Store, wakeups: &mut broadcast::Receiver<Wakeup>) {
    for probe in 0.. {
        let queue = format!("probe-{probe}");
        schedule(store, task(&queue, "k", at_secs(0), false)).await;
        let heard = tokio::time::timeout(Duration::from_millis(200), async {
            while wakeups.recv().await.expect("the wake-up channel").queue.as_str() != queue {}
        });
        if heard.await.is_ok() {
            return;
        }
        assert!(probe < 50, "the store never heard its own wake-ups");
    }
}

#[tokio::test]
async fn a_key_written_twice_in_one_call_is_in_the_set_of_its_last_write_only() {
    let prefix = "lanes-batch";
    let store = support::on_server_under(prefix).await;
    let scheduled = |set: &str| {
        let members = support::server()
            .command(&["ZRANGE", &format!("{prefix}:{{batch}}:{set}"), "0", "-1", "WITHSCORES"])
            .expect("ZRANGE");
        members.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let due = |s: i64| at_secs(s).as_millis().to_string();
    let writes = [("a", 1, false), ("a", 2, true), ("b", 3, true), ("b", 4, false), ("c", 5, false), ("c", 6, true)];
    let mut tasks: Vec<NewTask> = writes.iter().map(|&(k, s, target)| task("batch", k, at_secs(s), target)).collect();
    tasks.push(task("batch", "c", at_secs(7), false));
    for result in store.schedule(tasks, at_secs(0)).await.expect("schedule") {
        result.expect("each write applies");
    }
    assert_eq!(scheduled("scheduled"), ["b", &due(4), "c", &due(7)], "the handler lane");
    assert_eq!(scheduled("scheduled:target"), ["a", &due(2)], "the target lane");
    let batch = LeaseRequest::new(QueueName::new("batch").expect("a queue"), 10, Duration::from_secs(30), at_secs(9));
    let leased = store.lease(batch.in_lane(Lane::Target)).await.expect("lease");
    let keys: Vec<&str> = leased.leases.iter().map(|l| l.task.key.as_str()).collect();
    assert_eq!((keys, leased.next_due), (vec!["a"], None));
}

#[tokio::test]
async fn each_lanes_wake_ups_name_their_lane() {
    let store = support::on_server().await;
    let mut wakeups = store.peers().expect("a shared store has peers").wakeups;
    until_subscribed(&store, &mut wakeups).await;
    let heard = |w: Wakeup| (w.queue.as_str().to_owned(), w.lane, w.due_at);
    let lanes = || "lanes".to_owned();

    schedule(&store, task("lanes", "t1", at_secs(10), true)).await;
    let expected = (lanes(), Lane::Target, at_secs(10));
    assert_eq!(heard(next_wakeup(&mut wakeups, "a task with a target").await), expected);
    schedule(&store, task("lanes", "h1", at_secs(20), false)).await;
    let expected = (lanes(), Lane::Handler, at_secs(20));
    assert_eq!(heard(next_wakeup(&mut wakeups, "a task without one").await), expected, "the handler lane was empty");
    schedule(&store, task("lanes", "t2", at_secs(5), true)).await;
    let expected = (lanes(), Lane::Target, at_secs(5));
    assert_eq!(
        heard(next_wakeup(&mut wakeups, "an earlier target task").await),
        expected,
        "the handler lane's head is not moved"
    );

    let lease = LeaseRequest::new(QueueName::new("lanes").expect("a queue"), 10, Duration::from_secs(30), at_secs(30));
    let batch = store.lease(lease.in_lane(Lane::Target)).await.expect("lease");
    assert_eq!(batch.leases.len(), 2, "t2 and t1");
    store.release(&batch.leases[0].token, at_secs(31)).await.expect("release");
    let expected = (lanes(), Lane::Target, at_secs(5));
    assert_eq!(
        heard(next_wakeup(&mut wakeups, "a release").await),
        expected,
        "the released task is due again in its lane"
    );
}
