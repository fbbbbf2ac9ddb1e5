//! Runs the store conformance suite, unchanged, against a private 3-master Redis
//! Cluster with every queue split into 4 shards spread over the nodes: leasing,
//! listing, stats, tags and reaping must see one queue across its shards.

use crate::support;

punctual_testkit::store_conformance!(|| async { (support::on_cluster(4).await, ()) });
