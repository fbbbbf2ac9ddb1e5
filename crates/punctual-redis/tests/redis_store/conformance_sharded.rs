//! Runs the store conformance suite against a private 3-master Redis Cluster with
//! every queue split into 4 shards spread over the nodes: leasing, listing, stats, tags
//! and reaping must see one queue across its shards. On a queue split into shards a
//! task with a group must carry the group as its key's hash tag, which the suite's keys
//! do not: each group check runs as `<check>_is_refused`, which checks that such a task
//! is refused on `group` and leaves nothing behind. `groups_sharded.rs` checks groups
//! whose keys carry their tags: limits, due order and fairness across shards.

use crate::support;

punctual_testkit::store_conformance!(|| async { (support::on_cluster(4).await, ()) }, groups: refused);
