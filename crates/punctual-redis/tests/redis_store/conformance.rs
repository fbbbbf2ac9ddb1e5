//! Runs the store conformance suite, unchanged, against a private `redis-server`.

use crate::support;

punctual_testkit::store_conformance!(|| async { (support::on_server().await, ()) });
