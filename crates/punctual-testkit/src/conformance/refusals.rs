//! What a store that does not support a feature where the factory's stores put their
//! tasks must do instead: refuse it plainly and change nothing. Not checks of the
//! suite (each store runs them only in place of the checks it cannot pass, see
//! [`store_conformance!`](crate::store_conformance)).

use punctual_core::store::GroupsRequest;
use punctual_core::{Error, Group, Store};

use super::support::*;

/// A task with a group is refused with [`Error::Invalid`] on `group`, alone in its
/// batch; nothing of it is stored, and the queue lists no group.
pub async fn a_task_with_a_group_is_refused_and_leaves_nothing<S: Store>(store: S) {
    let mut grouped = new_task("orders", "grouped", T0);
    grouped.group = Some(Group::new("customer-42").expect("a valid group"));
    let results = store.schedule(vec![new_task("orders", "plain", T0), grouped], T0).await.expect("schedule");
    assert!(results[0].is_ok(), "the task without a group is scheduled: {:?}", results[0]);
    match &results[1] {
        Err(Error::Invalid { field, reason }) => {
            assert_eq!(field, "group", "refused on its group: {reason}");
            assert!(!reason.is_empty());
        }
        other => panic!("a task with a group was not refused on its group: {other:?}"),
    }
    assert!(get(&store, "orders", "grouped").await.is_none(), "the refused task is not stored");
    let page = store.groups(GroupsRequest::new(queue("orders"), 10, None)).await.expect("groups");
    assert!(page.groups.is_empty() && page.next_cursor.is_none(), "no group is listed: {page:?}");
}
