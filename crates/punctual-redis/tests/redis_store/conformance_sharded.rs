//! Runs the store conformance suite against a private 3-master Redis Cluster with
//! every queue split into 4 shards spread over the nodes: leasing, listing, stats, tags
//! and reaping must see one queue across its shards. Groups are not yet supported on a
//! queue split into shards: each group check runs as `<check>_is_refused`, which
//! checks that a task with a group is refused on `group` and leaves nothing behind.

use crate::support;

punctual_testkit::store_conformance!(|| async { (support::on_cluster(4).await, ()) }, groups: refused);
