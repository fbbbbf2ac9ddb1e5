//! Moving a deployment onto Redis and off it: `import` writes each task's record with
//! every field as given, in the sets of its state, and wakes other processes for the
//! scheduled ones; `completions` pages a queue's completion records by key, however
//! they were written, walking the record keys with `SCAN` over as many calls as a
//! Redis full of other keys takes.
//!
//! Guards against a field the record holds lost on the way in (the debounce bound, the
//! dedupe window, the group, the timing, an empty last error, a target, the
//! occurrence), a lease token of the other store left live (its fence), a grouped task
//! imported outside its group's shard on a queue split into shards (its limit counted
//! where no lease looks) or a refusal that leaves the call's other tasks written, other
//! processes not woken for imported work, a paging that misses or repeats a record when
//! its walk spans calls, records an earlier punctual wrote (no index entry) left out,
//! and an index that keeps entries of records gone.

use punctual_core::transitions::as_moved;
use std::time::Duration;

use punctual_core::store::{CompleteRequest, Completion, CompletionsRequest, ImportRequest, Imported, LeaseRequest};
use punctual_core::{
    Completed, Error, Group, Lane, MemoryStore, NewTask, Priority, QueueName, Store, Target, Task, TaskKey, TaskState,
    Timestamp, Unique,
};
use punctual_redis::{RedisConfig, RedisStore, TimeSource};

use crate::lanes::{next_wakeup, until_subscribed};
use crate::support;

const NOW: i64 = 1_700_000_000_000;
const HOUR: Duration = Duration::from_secs(3600);

fn at_secs(s: i64) -> Timestamp {
    Timestamp::from_millis(NOW + s * 1000)
}

fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("a queue name")
}

fn key(name: &str) -> TaskKey {
    TaskKey::new(name).expect("a key")
}

/// Tasks as a reference store holds them after scheduling `keys` in `queue_name`, due at
/// 1 s, in the order given.
async fn held_elsewhere(queue_name: &str, keys: &[&str]) -> Vec<Task> {
    let source = MemoryStore::new();
    let tasks = keys.iter().map(|k| NewTask::new(queue(queue_name), key(k), at_secs(1))).collect();
    let written = source.schedule(tasks, at_secs(0)).await.expect("schedule in the reference store");
    written.into_iter().map(|w| w.expect("scheduled").task.expect("written")).collect()
}

async fn import(store: &RedisStore, tasks: Vec<Task>, completions: Vec<Completed>, now: Timestamp) -> Vec<Imported> {
    store.import(ImportRequest::new(tasks, completions, now)).await.expect("import")
}

async fn stored(store: &RedisStore, queue_name: &str, name: &str) -> Task {
    store.get(&queue(queue_name), &key(name)).await.expect("get").unwrap_or_else(|| panic!("{name} is stored"))
}

#[tokio::test]
async fn every_field_of_the_record_comes_through_an_import_and_no_fence_of_the_other_store() {
    let store = support::on_server().await;
    let mut tasks = held_elsewhere("moved", &["odd", "running", "broken"]).await;
    let group = Group::new("customer-7").expect("a group");
    {
        let odd = &mut tasks[0];
        odd.target = Some(Target::new("http://127.0.0.1:9/hook").expect("a target"));
        odd.priority = Priority::new(9).expect("a priority");
        odd.group = Some(group.clone());
        odd.meta.debounce_until = Some(at_secs(6));
        odd.unique_for = Some(Unique::new(HOUR).counting_dead());
        odd.timing.jitter = Some(Duration::from_secs(3));
        odd.last_error = Some(String::new());
        odd.payload = serde_json::json!({"lines": ["a", "b"]});
        odd.tags = vec![punctual_core::Tag::new("t").expect("a tag"), punctual_core::Tag::new("u").expect("a tag")];
        (odd.attempts, odd.max_attempts, odd.version, odd.meta.occurrence) = (2, 7, 4, 3);
        (odd.created_at, odd.updated_at, odd.meta.anchor) = (at_secs(-50), at_secs(-20), at_secs(-1));
    }
    {
        let running = &mut tasks[1];
        running.state = TaskState::Leased;
        running.group = Some(group.clone());
        running.lease_expires_at = Some(at_secs(40));
        running.meta.fence = 9;
        running.updated_at = at_secs(10);
    }
    {
        let broken = &mut tasks[2];
        broken.state = TaskState::Dead;
        broken.last_error = Some("no such order".into());
        (broken.attempts, broken.updated_at) = (20, at_secs(12));
    }
    let answers = import(&store, tasks.clone(), Vec::new(), at_secs(13)).await;
    assert_eq!(answers, [Imported::Written; 3]);
    let mut ids = Vec::new();
    for original in &tasks {
        let here = stored(&store, "moved", original.key.as_str()).await;
        assert_eq!(as_moved(&here), as_moved(original), "{} came through unchanged", original.key);
        assert_eq!(here.meta.fence, 0, "{}: no fence of the other store", original.key);
        assert!(!ids.contains(&here.meta.id), "{}: an id of its own", original.key);
        ids.push(here.meta.id);
    }
    let counts = store.groups(punctual_core::GroupsRequest::new(queue("moved"), 10, None)).await.expect("groups");
    let counted: Vec<(String, u64, u64, u64)> =
        counts.groups.iter().map(|g| (g.group.to_string(), g.scheduled, g.leased, g.dead)).collect();
    assert_eq!(counted, [("customer-7".to_owned(), 1, 1, 0)], "the group counts its scheduled and leased task");
}

#[tokio::test]
async fn a_grouped_task_outside_its_groups_shard_refuses_the_whole_import_and_one_inside_holds_its_limit() {
    let store = support::on_cluster(4).await;
    let group = Group::new("c-1").expect("a group");
    let mut refused = held_elsewhere("sharded", &["plain", "grouped"]).await;
    refused[1].group = Some(group.clone());
    match store.import(ImportRequest::new(refused, Vec::new(), at_secs(2))).await {
        Err(Error::Invalid { field, .. }) => assert_eq!(field, "group"),
        other => panic!("a grouped task whose key lacks its group's tag was not refused: {other:?}"),
    }
    assert_eq!(store.get(&queue("sharded"), &key("plain")).await.expect("get"), None, "nothing was written");

    let mut placed = held_elsewhere("sharded", &["{c-1}running", "{c-1}next"]).await;
    for task in &mut placed {
        task.group = Some(group.clone());
    }
    placed[0].state = TaskState::Leased;
    placed[0].lease_expires_at = Some(at_secs(30));
    assert_eq!(import(&store, placed, Vec::new(), at_secs(2)).await, [Imported::Written; 2]);
    let limited = |now| LeaseRequest::new(queue("sharded"), 10, Duration::from_secs(30), now).group_limit(Some(1));
    let held = store.lease(limited(at_secs(10))).await.expect("lease");
    assert!(held.leases.is_empty(), "the imported lease holds c-1 at its limit");
    let reaped = store.reap(at_secs(31), 10).await.expect("reap");
    assert_eq!(reaped.reaped.len(), 1, "the imported lease ends at its expiry");
    let room = store.lease(limited(at_secs(31))).await.expect("lease");
    let keys: Vec<&str> = room.leases.iter().map(|l| l.task.key.as_str()).collect();
    assert_eq!(keys, ["{c-1}next"], "reaped at 31 s, running is due again after next, due at 1 s");
}

#[tokio::test]
async fn an_imported_scheduled_task_wakes_the_consumers_of_its_lane() {
    let store = support::on_server().await;
    let mut wakeups = store.peers().expect("a shared store has peers").wakeups;
    until_subscribed(&store, &mut wakeups).await;
    let mut moved = held_elsewhere("arrivals", &["hooked"]).await;
    moved[0].target = Some(Target::new("http://127.0.0.1:9/hook").expect("a target"));
    moved[0].due_at = at_secs(5);
    import(&store, moved, Vec::new(), at_secs(0)).await;
    let heard = next_wakeup(&mut wakeups, "an import").await;
    assert_eq!((heard.queue.as_str(), heard.lane, heard.due_at), ("arrivals", Lane::Target, at_secs(5)));
}

/// Every record key of `queue_name` paged with `limit`, and how many pages were empty.
async fn page_all(store: &RedisStore, queue_name: &str, limit: u32, now: Timestamp) -> (Vec<Completed>, usize) {
    let (mut records, mut empty, mut cursor) = (Vec::new(), 0, None);
    loop {
        let page = store
            .completions(CompletionsRequest::new(queue(queue_name), limit, cursor, now))
            .await
            .expect("a page of records");
        assert!(page.completions.len() <= limit as usize, "a page holds at most its limit");
        empty += usize::from(page.completions.is_empty());
        records.extend(page.completions);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return (records, empty),
        }
    }
}

#[tokio::test]
async fn records_are_paged_by_key_however_they_were_written_across_a_walk_of_many_calls() {
    // A private server: 40,000 keys of another application, which the walk steps over.
    let server = punctual_testkit::redis::server();
    let redis = |args: &[&str]| server.command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    redis(&["EVAL", "for i = 1, 40000 do redis.call('SET', 'other-app:' .. i, 'x') end", "0"]);
    let mut config = RedisConfig::new(punctual_redis::Target::parse(&server.url()).expect("server url"));
    config.prefix = "moving".into();
    config.time = TimeSource::Caller;
    let store = RedisStore::connect(config).await.expect("connect to the private redis-server");

    // k2: done here; k1: as an earlier punctual left it (no index knows it); k3:
    // imported; k0: ended at 1 s.
    let mut task = NewTask::new(queue("receipts"), key("k2"), at_secs(0));
    task.unique_for = Some(Unique::new(HOUR));
    store.schedule(vec![task], at_secs(0)).await.expect("schedule").remove(0).expect("scheduled");
    let lease = store.lease(LeaseRequest::new(queue("receipts"), 1, Duration::from_secs(30), at_secs(0))).await;
    let token = lease.expect("lease").leases.remove(0).token;
    store.complete(CompleteRequest::new(token, Completion::Done, at_secs(1))).await.expect("done");
    let hour_later = (NOW + 3_600_000).to_string();
    redis(&["SET", "moving:{receipts}:completed:k1", &format!("{NOW},7,0,1,{hour_later}"), "PX", "3600000"]);
    redis(&["SET", "moving:{receipts}:completed:k0", &format!("{NOW},8,0,1,{}", NOW + 1000), "PX", "3600000"]);
    let imported = Completed::new(queue("receipts"), key("k3"), 9, at_secs(0), Timestamp::from_millis(NOW + 3_600_000));
    import(&store, Vec::new(), vec![imported.clone()], at_secs(2)).await;

    let (records, empty) = page_all(&store, "receipts", 1, at_secs(60)).await;
    let keys: Vec<&str> = records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["k1", "k2", "k3"], "by key, each once; k0 ended at 1 s");
    assert!(empty >= 2, "the walk over 40,000 keys spans calls, each answering an empty page: {empty}");
    assert_eq!(records[2], imported, "the imported record as it was given");
    assert_eq!((records[0].id, records[0].unique_until), (7, Timestamp::from_millis(NOW + 3_600_000)));

    let index = "moving:{receipts}:completions";
    let ttl: i64 = redis(&["PTTL", index]).parse().expect("a time to live");
    assert!(ttl > 0 && ttl <= 3_600_000, "the index lives until its latest record ends: {ttl} ms");
    redis(&["DEL", "moving:{receipts}:completed:k2"]);
    let (records, _) = page_all(&store, "receipts", 10, at_secs(60)).await;
    let keys: Vec<&str> = records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["k1", "k3"], "a record gone is not paged");
    assert!(!redis(&["ZRANGE", index, "0", "-1"]).lines().any(|entry| entry == "k2"), "nor kept in the index");
}
