//! Reading many tasks at once, cancelling (one task, or every task of a queue carrying
//! a tag), listing in due order with cursors, per-queue counts, the store's secret, and
//! closing the store.

use std::collections::BTreeSet;

use punctual_core::calendar::CalendarChange;
use punctual_core::store::{Completion, ExtendRequest, QueueStats};
use punctual_core::{Error, Repeat, Store, TaskState, Timestamp};

use super::support::*;

/// The `get_many` contract: each `(queue, key)` read as `get` reads it, in the order
/// asked, in every state, `None` for a key or a queue that holds no such task, and the
/// same key twice answered twice.
pub async fn get_many_reads_each_key_as_get_does<S: Store>(store: S) {
    create(&store, new_task("orders", "waiting", at_secs(10)), T0).await;
    create(&store, new_task("orders", "leased", T0), T0).await;
    create(&store, new_task("mail", "waiting", at_secs(20)), T0).await;
    let leased = lease_one(&store, "orders", secs(30), T0).await;
    assert_eq!(leased.token.key.as_str(), "leased");
    let asked = [
        ("orders", "leased"),
        ("mail", "waiting"),
        ("orders", "missing"),
        ("nowhere", "waiting"),
        ("orders", "waiting"),
        ("orders", "leased"),
    ];
    let many = store.get_many(asked.iter().map(|(q, k)| (queue(q), key(k))).collect()).await.expect("get_many");
    assert_eq!(many.len(), asked.len(), "one answer per key asked");
    for ((queue_name, key_name), task) in asked.iter().zip(&many) {
        assert_eq!(task, &get(&store, queue_name, key_name).await, "get_many of {queue_name}/{key_name}");
    }
    assert_eq!(many[0].as_ref().map(|t| t.state), Some(TaskState::Leased));
    assert!(many[2].is_none() && many[3].is_none(), "a missing key or queue read as a task");
    assert!(store.get_many(Vec::new()).await.expect("get_many of nothing").is_empty());
}

/// Guarantee 4 (a cancelled scheduled task never fires) and the `cancel` contract:
/// `true` and gone; `false` when there is no such task; other tasks untouched.
pub async fn cancel_removes_a_scheduled_task_so_it_never_fires<S: Store>(store: S) {
    create(&store, new_task("orders", "cancelled", at_secs(10)), T0).await;
    create(&store, new_task("orders", "kept", at_secs(20)), T0).await;
    create(&store, new_task("mail", "cancelled", at_secs(10)), T0).await;
    assert!(store.cancel(&queue("orders"), &key("cancelled"), None).await.expect("cancel"), "the task existed");
    assert_eq!(get(&store, "orders", "cancelled").await, None);
    assert!(!store.cancel(&queue("orders"), &key("cancelled"), None).await.expect("cancel"), "already cancelled");
    assert!(!store.cancel(&queue("orders"), &key("missing"), None).await.expect("cancel"));

    let batch = lease(&store, "orders", 10, secs(30), at_secs(3600)).await;
    assert_eq!(keys_of(&batch.leases), ["kept"], "the cancelled task fired");
    assert!(get(&store, "mail", "cancelled").await.is_some(), "the same key in another queue was cancelled");
}

/// Guarantee 4 ("cancelling a leased task stops its retries and repeats") and the
/// `cancel` contract: the lease can no longer complete, extend or release, so the task
/// neither retries nor repeats.
pub async fn cancel_of_a_leased_task_refuses_its_ack_and_stops_retries_and_repeats<S: Store>(store: S) {
    let mut repeating = new_task("orders", "repeating", T0);
    repeating.repeat = Some(Repeat::every(secs(60)).expect("repeat"));
    create(&store, repeating, T0).await;
    create(&store, new_task("orders", "failing", T0), T0).await;
    let leases = lease(&store, "orders", 2, secs(30), T0).await.leases;
    assert_eq!(leases.len(), 2);
    for lease in &leases {
        assert!(
            store.cancel(&lease.token.queue, &lease.token.key, None).await.expect("cancel"),
            "a leased task exists"
        );
    }
    let now = at_secs(1);
    for lease in &leases {
        let name = lease.token.key.as_str();
        let rearm = Completion::Reschedule { at: at_secs(60), anchor: at_secs(60) };
        assert_lease_lost(complete(&store, &lease.token, rearm, now).await, &format!("repeat of cancelled {name}"));
        let retry = Completion::Retry { at: now, error: "boom".into() };
        assert_lease_lost(complete(&store, &lease.token, retry, now).await, &format!("retry of cancelled {name}"));
        assert_lease_lost(complete(&store, &lease.token, Completion::Done, now).await, &format!("ack of {name}"));
        assert_lease_lost(
            store.extend(ExtendRequest::new(lease.token.clone(), secs(30), now)).await,
            &format!("extend of cancelled {name}"),
        );
        assert_lease_lost(store.release(&lease.token, now).await, &format!("release of cancelled {name}"));
    }
    assert!(list_all(&store, "orders", None).await.is_empty(), "a cancelled task came back");
    assert!(lease(&store, "orders", 10, secs(30), at_secs(86_400)).await.leases.is_empty());
    assert!(reap(&store, at_secs(86_400), 100).await.reaped.is_empty(), "a cancelled lease was reaped");
}

/// `cancel_tag` contract: every task of that queue carrying the tag, in any state, is
/// deleted and counted; tasks without it, other queues, and a tag removed by a replace
/// are untouched.
pub async fn cancel_tag_removes_only_that_queues_tasks_with_the_tag<S: Store>(store: S) {
    for task in [
        tagged("flow", "leased", &["wf-1"]),
        tagged("flow", "dead", &["wf-1", "wf-2"]),
        tagged("flow", "scheduled", &["wf-1"]),
        tagged("flow", "other-tag", &["wf-2"]),
        tagged("flow", "no-tags", &[]),
        tagged("flow", "untagged-by-replace", &["wf-1"]),
        tagged("other", "same-tag", &["wf-1"]),
    ] {
        create(&store, task, T0).await;
    }
    upsert(&store, tagged("flow", "untagged-by-replace", &["wf-3"]), T0).await;
    let leases = lease(&store, "flow", 10, secs(300), T0).await.leases;
    let token_of = |name: &str| leases.iter().find(|l| l.token.key == key(name)).expect("leased").token.clone();
    complete_ok(&store, &token_of("dead"), Completion::Dead { error: "gave up".into() }, T0).await;
    for name in ["scheduled", "other-tag", "no-tags", "untagged-by-replace"] {
        store.release(&token_of(name), T0).await.expect("release");
    }
    let leased = token_of("leased");

    let cancelled = store.cancel_tag(&queue("flow"), &tag("wf-1"), None).await.expect("cancel_tag");
    assert_eq!(cancelled, 3, "leased, dead and scheduled carry wf-1 in this queue");
    let left: BTreeSet<String> = list_all(&store, "flow", None).await.iter().map(|t| t.key.to_string()).collect();
    let expected: BTreeSet<String> = ["other-tag", "no-tags", "untagged-by-replace"].map(String::from).into();
    assert_eq!(left, expected);
    assert!(get(&store, "other", "same-tag").await.is_some(), "another queue's task was cancelled");
    assert_lease_lost(complete(&store, &leased, Completion::Done, at_secs(1)).await, "ack of a tag-cancelled task");

    assert_eq!(store.cancel_tag(&queue("flow"), &tag("wf-1"), None).await.expect("cancel_tag"), 0, "nothing left");
    assert_eq!(store.cancel_tag(&queue("flow"), &tag("unknown"), None).await.expect("cancel_tag"), 0);
    assert_eq!(store.cancel_tag(&queue("flow"), &tag("wf-3"), None).await.expect("cancel_tag"), 1, "the replaced tags");
}

/// `list` contract: pages in due order (ties in a stable order), and paging through
/// with `next_cursor` visits every task that stays in place exactly once — even when
/// other tasks are cancelled between pages — with `next_cursor` `None` at the end.
pub async fn list_pages_visit_every_task_once_in_due_order<S: Store>(store: S) {
    // 23 tasks, due times with ties, written out of order; 23 is not a multiple of 5,
    // so the last page is short.
    let mut tasks = Vec::new();
    for i in 0..23 {
        let due = at_secs(((i * 7) % 23) / 2);
        tasks.push(new_task("orders", &format!("task-{i:02}"), due));
    }
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    create(&store, new_task("elsewhere", "not-listed", T0), T0).await;
    let all = list_all(&store, "orders", None).await;
    assert_eq!(all.len(), 23);
    assert!(all.windows(2).all(|w| w[0].due_at <= w[1].due_at), "not in due order: {:?}", due_times(&all));

    let mut visited = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    let mut removed = BTreeSet::new();
    loop {
        let page = list_page(&store, "orders", None, 5, cursor).await;
        pages += 1;
        assert!(page.tasks.len() <= 5, "a page longer than its limit");
        visited.extend(page.tasks.iter().cloned());
        if pages == 2 {
            // Cancel one task already visited and one not yet visited.
            let seen = visited[0].key.clone();
            let unseen = all.iter().find(|t| !visited.iter().any(|v| v.key == t.key)).expect("more to come");
            for gone in [seen, unseen.key.clone()] {
                assert!(store.cancel(&queue("orders"), &gone, None).await.expect("cancel"));
                removed.insert(gone.to_string());
            }
        }
        if page.tasks.len() < 5 {
            assert_eq!(page.next_cursor, None, "a page shorter than its limit is the last");
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages < 20, "paging did not end");
    }
    assert!(visited.windows(2).all(|w| w[0].due_at <= w[1].due_at), "pages out of order: {:?}", due_times(&visited));
    let mut names: Vec<String> = visited.iter().map(|t| t.key.to_string()).collect();
    names.sort();
    let before_dedup = names.len();
    names.dedup();
    assert_eq!(names.len(), before_dedup, "a task was listed twice");
    for task in &all {
        let name = task.key.to_string();
        if !removed.contains(&name) {
            assert!(names.contains(&name), "{name} stayed in place but was never listed");
        }
    }
    assert_eq!(names.len(), 22, "23 tasks, one cancelled before it was reached");
}

fn due_times(tasks: &[punctual_core::Task]) -> Vec<String> {
    tasks.iter().map(|t| format!("{}@{}", t.key, t.due_at)).collect()
}

/// `list` contract: the state filter returns only tasks in that state, all of them,
/// in due order; `None` returns all states.
pub async fn list_filters_by_state<S: Store>(store: S) {
    for i in 0..9 {
        create(&store, new_task("orders", &format!("task-{i}"), at_secs(i)), T0).await;
    }
    // Lease task-0..5, then kill task-0..2: 3 dead, 3 leased, 3 scheduled.
    let leases = lease(&store, "orders", 6, secs(300), at_secs(100)).await.leases;
    for lease in leases.iter().take(3) {
        complete_ok(&store, &lease.token, Completion::Dead { error: "gave up".into() }, at_secs(100)).await;
    }
    for (state, expected) in [
        (TaskState::Dead, ["task-0", "task-1", "task-2"]),
        (TaskState::Leased, ["task-3", "task-4", "task-5"]),
        (TaskState::Scheduled, ["task-6", "task-7", "task-8"]),
    ] {
        let mut listed = Vec::new();
        let mut cursor = None;
        loop {
            let page = list_page(&store, "orders", Some(state), 2, cursor).await;
            for task in &page.tasks {
                assert_eq!(task.state, state, "listing {state} returned {} in state {}", task.key, task.state);
            }
            listed.extend(page.tasks.iter().map(|t| t.key.to_string()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
            assert!(listed.len() <= 9, "paging {state} did not end");
        }
        assert_eq!(listed, expected, "the {state} tasks in due order");
    }
    assert_eq!(list_all(&store, "orders", None).await.len(), 9);
}

/// `list` contract with a tag: only the queue's tasks carrying it, in due order (ties in
/// a stable order), with the state filter too, and paging through with `next_cursor`
/// visits each one that stays in place exactly once. 520 tasks carry the tag, due in
/// the reverse order of their keys: a store whose tag index is ordered by key (Redis)
/// finds the earliest due last, past one batch of its index walk.
pub async fn list_by_tag_pages_the_tasks_carrying_it_in_due_order<S: Store>(store: S) {
    let mut tasks = Vec::new();
    for i in 0..520 {
        // t-518 and t-519 are due first, together; then t-516 and t-517; and so on.
        let mut task = new_task("flow", &format!("t-{i:03}"), at_secs(1000 - i / 2));
        task.tags = if i % 2 == 0 { vec![tag("even"), tag("wf-1")] } else { vec![tag("wf-1")] };
        tasks.push(task);
    }
    // Due after all of them, so that the leases below take tagged tasks only.
    let mut untagged = new_task("flow", "untagged", at_secs(5000));
    untagged.tags = vec![tag("wf-2")];
    let mut moved_on = new_task("flow", "moved-on", at_secs(5000));
    moved_on.tags = vec![tag("wf-1")];
    let mut elsewhere = new_task("other", "same-tag", at_secs(1));
    elsewhere.tags = vec![tag("wf-1")];
    tasks.extend([untagged, moved_on, elsewhere]);
    for result in schedule(&store, tasks, T0).await {
        result.expect("schedule");
    }
    // A replace drops the tag: the task is no longer listed under it.
    upsert(&store, new_task("flow", "moved-on", at_secs(5000)), T0).await;
    let wf1_due = |i: i64| at_secs(1000 - i / 2);

    let first = list_tagged_page(&store, "flow", "wf-1", None, 5, None).await;
    let dues: Vec<Timestamp> = first.tasks.iter().map(|t| t.due_at).collect();
    assert_eq!(dues, [wf1_due(519), wf1_due(519), wf1_due(517), wf1_due(517), wf1_due(515)], "the earliest due first");
    assert!(first.next_cursor.is_some(), "515 more carry the tag");

    let all = list_all_tagged(&store, "flow", "wf-1", None, 100).await;
    assert_eq!(all.len(), 520, "every task of flow carrying wf-1, and nothing else");
    assert!(all.iter().all(|t| t.queue == queue("flow") && t.tags.contains(&tag("wf-1"))), "only carriers of wf-1");
    assert!(all.windows(2).all(|w| w[0].due_at <= w[1].due_at), "not in due order: {:?}", due_times(&all[..20]));
    let keys: BTreeSet<String> = all.iter().map(|t| t.key.to_string()).collect();
    assert_eq!(keys.len(), 520, "a task was listed twice");
    let again = list_all_tagged(&store, "flow", "wf-1", None, 7).await;
    assert_eq!(
        again.iter().map(|t| &t.key).collect::<Vec<_>>(),
        all.iter().map(|t| &t.key).collect::<Vec<_>>(),
        "another page size, the same stable order"
    );
    assert_eq!(list_all_tagged(&store, "flow", "even", None, 100).await.len(), 260);
    let nobody = list_tagged_page(&store, "flow", "unknown", None, 10, None).await;
    assert_eq!((nobody.tasks.len(), nobody.next_cursor), (0, None), "an unknown tag lists nothing");
    assert_eq!(list_all_tagged(&store, "other", "wf-1", None, 10).await.len(), 1, "the other queue's own");

    // With states: lease the four earliest, kill two of them.
    let leases = lease(&store, "flow", 4, secs(300), wf1_due(517)).await.leases;
    assert_eq!(leases.len(), 4, "t-516 to t-519 are due");
    for lease in leases.iter().filter(|l| ["t-518", "t-519"].contains(&l.token.key.as_str())) {
        complete_ok(&store, &lease.token, Completion::Dead { error: "gave up".into() }, wf1_due(517)).await;
    }
    let names = |tasks: &[punctual_core::Task]| tasks.iter().map(|t| t.key.to_string()).collect::<BTreeSet<_>>();
    let dead = list_all_tagged(&store, "flow", "wf-1", Some(TaskState::Dead), 1).await;
    assert_eq!(names(&dead), ["t-518", "t-519"].map(String::from).into());
    let leased = list_all_tagged(&store, "flow", "wf-1", Some(TaskState::Leased), 1).await;
    assert_eq!(names(&leased), ["t-516", "t-517"].map(String::from).into());
    let even_leased = list_all_tagged(&store, "flow", "even", Some(TaskState::Leased), 10).await;
    assert_eq!(names(&even_leased), ["t-516"].map(String::from).into(), "both filters at once");
    let scheduled = list_all_tagged(&store, "flow", "wf-1", Some(TaskState::Scheduled), 100).await;
    assert_eq!(scheduled.len(), 516);
    assert!(scheduled.iter().all(|t| t.state == TaskState::Scheduled));

    // Paging while tasks go: one not yet listed is cancelled between pages.
    let mut visited = Vec::new();
    let mut cursor = None;
    loop {
        let page = list_tagged_page(&store, "flow", "wf-1", None, 50, cursor).await;
        visited.extend(page.tasks.iter().map(|t| t.key.to_string()));
        if visited.len() == 50 {
            assert!(store.cancel(&queue("flow"), &key("t-000"), None).await.expect("cancel"), "t-000 is due last");
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let seen: BTreeSet<&String> = visited.iter().collect();
    assert_eq!(seen.len(), visited.len(), "a task was listed twice");
    assert_eq!(visited.len(), 519, "every task that stayed, once; not the one cancelled before it was reached");
    assert!(!seen.contains(&"t-000".to_owned()));
}

/// `stats` contract: counts per state and the earliest scheduled `due_at` for one
/// queue; zero counts for an unknown queue; every queue holding a task, sorted by
/// name, for `None`.
pub async fn stats_count_tasks_per_state_and_queue<S: Store>(store: S) {
    for (name, due) in [("leased", 0), ("dead", 0), ("soon", 5), ("later", 10)] {
        create(&store, new_task("zeta", name, at_secs(due)), T0).await;
    }
    create(&store, new_task("alpha", "only", at_secs(7)), T0).await;
    create(&store, new_task("gone", "cancelled", at_secs(1)), T0).await;
    assert!(store.cancel(&queue("gone"), &key("cancelled"), None).await.expect("cancel"));
    let leases = lease(&store, "zeta", 2, secs(300), T0).await.leases;
    let dead = leases.iter().find(|l| l.token.key == key("dead")).expect("leased");
    complete_ok(&store, &dead.token, Completion::Dead { error: "gave up".into() }, T0).await;

    let zeta = QueueStats::new(queue("zeta"), 2, 1, 1, Some(at_secs(5)));
    let alpha = QueueStats::new(queue("alpha"), 1, 0, 0, Some(at_secs(7)));
    assert_eq!(stats(&store, Some("zeta")).await, std::slice::from_ref(&zeta));
    assert_eq!(stats(&store, Some("unknown")).await, [QueueStats::new(queue("unknown"), 0, 0, 0, None)]);
    assert_eq!(stats(&store, None).await, [alpha, zeta], "every queue holding a task, sorted by name");

    let leased = leases.iter().find(|l| l.token.key == key("leased")).expect("leased");
    complete_ok(&store, &leased.token, Completion::Done, at_secs(1)).await;
    let after = stats(&store, Some("zeta")).await;
    assert_eq!(after, [QueueStats::new(queue("zeta"), 2, 0, 1, Some(at_secs(5)))]);
}

/// `secret` contract: 32 random bytes, created on first use and the same ever after —
/// the same answer every time, unchanged by writes, and not a constant such as zeros.
pub async fn secret_is_random_and_stays_the_same<S: Store>(store: S) {
    let first = store.secret().await.expect("secret");
    assert_ne!(first, [0u8; 32], "the secret must be random, not zeros");
    assert!(first.iter().any(|b| *b != first[0]), "the secret must be random, not one repeated byte");
    create(&store, new_task("orders", "order-1", T0), T0).await;
    lease_one(&store, "orders", secs(30), T0).await;
    assert_eq!(store.secret().await.expect("secret"), first, "the secret changed");
}

/// `close` contract: writes made before are kept until then, and later calls fail with
/// `Error::Unavailable`.
pub async fn closed_store_refuses_further_calls<S: Store>(store: S) {
    create(&store, new_task("orders", "order-1", T0), T0).await;
    store.close().await.expect("close");
    let unavailable = |what: &str, result: Result<String, Error>| match result {
        Err(Error::Unavailable(_)) => {}
        other => panic!("{what} after close: expected Error::Unavailable, got {other:?}"),
    };
    let (q, k) = (queue("orders"), key("order-1"));
    unavailable("get", store.get(&q, &k).await.map(|t| format!("{t:?}")));
    unavailable(
        "schedule",
        store.schedule(vec![new_task("orders", "order-2", T0)], T0).await.map(|r| format!("{r:?}")),
    );
    let request = punctual_core::store::LeaseRequest::new(q.clone(), 1, secs(30), T0);
    unavailable("lease", store.lease(request).await.map(|b| format!("{b:?}")));
    unavailable("cancel", store.cancel(&q, &k, None).await.map(|c| c.to_string()));
    unavailable("stats", store.stats(None).await.map(|s| format!("{s:?}")));
    let purge = punctual_core::store::PurgeRequest::new(q.clone(), punctual_core::PurgeSelection::All, 10);
    unavailable("purge", store.purge(purge).await.map(|n| n.to_string()));
    unavailable("queue_record", store.queue_record(&q).await.map(|r| format!("{r:?}")));
    unavailable("queue_records", store.queue_records().await.map(|r| format!("{r:?}")));
    let change = punctual_core::store::QueueChangeRequest::new(q, punctual_core::QueueChange::Paused(true), T0);
    unavailable("change_queue", store.change_queue(change).await.map(|r| format!("{r:?}")));
    unavailable("calendar_records", store.calendar_records().await.map(|r| format!("{r:?}")));
    let name = punctual_core::calendar::CalendarName::new("office").expect("a calendar name");
    let change = punctual_core::calendar::CalendarChangeRequest::new(name, CalendarChange::Put("{}".into()), T0);
    unavailable("change_calendar", store.change_calendar(change).await.map(|r| format!("{r:?}")));
}
