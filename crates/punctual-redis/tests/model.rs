//! Random operation sequences against the Redis store (a private `redis-server`),
//! checked against the model.

mod support;

async fn fresh_store() -> (punctual_redis::RedisStore, ()) {
    (support::on_server().await, ())
}

punctual_testkit::store_model_test!(fresh_store);
