//! Runs the store conformance suite, unchanged, against a private 3-master Redis
//! Cluster: every script must touch only keys of one hash tag, and MOVED/ASK must be
//! followed.

use crate::support;

punctual_testkit::store_conformance!(|| async { (support::on_cluster(1).await, ()) });
