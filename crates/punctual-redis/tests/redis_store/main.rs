//! The Redis store against real, private `redis-server` processes: the conformance
//! suite (single server, Cluster, sharded Cluster), the model test, rate slots, node
//! announcements, replicas, a frozen server, a server that lost its data, each lane's
//! wake-ups, a sharded queue's order and cost, the stored records' formats, old and
//! new, priorities' urgent sets, groups (their keys, several processes leasing from
//! them, and groups on a queue split into shards), group rates' slots, the
//! completion records of dedupe windows, outbox marks, task histories, and moving a
//! deployment between stores (import, completion records paged).
//!
//! One test binary, one module per concern: linked once, and tests from different
//! modules run side by side. Modules share one private server and one private Cluster
//! (`support`), each test under a key prefix of its own; tests that stop, freeze or
//! restart a server start their own. Run one module with a filter:
//! `cargo test -p punctual-redis --test redis_store model_cluster::`.

mod support;

mod completion_records;
mod conformance;
mod conformance_cluster;
mod conformance_sharded;
mod frozen;
mod group_nodes;
mod group_rates;
mod groups;
mod groups_sharded;
mod histories;
mod lanes;
mod layout_version;
mod model;
mod model_cluster;
mod moving_stores;
mod node_announcements;
mod outbox_marks;
mod priorities;
mod rate_slots;
mod record_formats;
mod replicas;
mod shard_order;
mod store_reset;
