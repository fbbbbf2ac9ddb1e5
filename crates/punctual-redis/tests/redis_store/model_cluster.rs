//! Random operation sequences against the Redis store on a private 3-master Redis
//! Cluster, every queue in 3 shards spread over the nodes, checked against the model.

use crate::support;

async fn fresh_store() -> (punctual_redis::RedisStore, ()) {
    (support::on_cluster(3).await, ())
}

punctual_testkit::store_model_test!(fresh_store, groups: refused);
