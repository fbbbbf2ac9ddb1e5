//! The layout version in Redis (`punctual:layout`): a new store records this punctual's;
//! a store written before versions were recorded gets it and keeps its tasks; a store
//! of a newer layout is refused at connect with both versions named, and nothing is
//! written to it; a Redis found emptied records it again.
//!
//! Guards against a punctual that works on keys a newer one wrote in a way it cannot
//! read (tasks lost or misread after a downgrade), and against a store that loses its
//! version with a flush and then takes any punctual.

use punctual_core::{Error, NewTask, QueueName, Store, TaskKey};
use punctual_redis::{LAYOUT, RedisConfig, RedisStore, Target};
use punctual_testkit::redis::RedisServer;

async fn connect(redis: &RedisServer) -> punctual_core::Result<RedisStore> {
    RedisStore::connect(RedisConfig::new(Target::parse(&redis.url()).expect("the server's URL"))).await
}

fn layout_in(redis: &RedisServer) -> String {
    redis.command(&["GET", "punctual:layout"]).expect("GET punctual:layout")
}

#[tokio::test]
async fn a_store_records_its_layout_and_one_from_before_versions_keeps_its_tasks() {
    let redis = punctual_testkit::redis::server();
    let store = connect(&redis).await.expect("connect");
    assert_eq!(layout_in(&redis), LAYOUT.to_string(), "a new store records its layout");
    let queue = QueueName::new("order.cancel").expect("a queue name");
    let key = TaskKey::new("order-1").expect("a key");
    let now = store.clock().now();
    let due = now.saturating_add(std::time::Duration::from_secs(3600));
    store.schedule(vec![NewTask::new(queue.clone(), key.clone(), due)], now).await.expect("schedule");
    store.close().await.expect("close");

    // As a punctual from before the version was recorded left it.
    redis.command(&["DEL", "punctual:layout"]).expect("DEL");
    let store = connect(&redis).await.expect("a store from before versions opens");
    assert_eq!(layout_in(&redis), LAYOUT.to_string(), "and gets the version");
    let task = store.get(&queue, &key).await.expect("get").expect("its task is kept");
    assert_eq!(task.due_at, due);

    // Emptied while in use: the identity check records the layout again.
    redis.command(&["FLUSHALL"]).expect("FLUSHALL");
    store.check_identity().await.expect("check");
    assert_eq!(layout_in(&redis), LAYOUT.to_string(), "recorded again after the flush");
    store.close().await.expect("close");
}

#[tokio::test]
async fn a_store_of_a_newer_layout_is_refused_naming_both_versions() {
    let redis = punctual_testkit::redis::server();
    let newer = (LAYOUT + 1).to_string();
    redis.command(&["SET", "punctual:layout", &newer]).expect("SET");
    let refused = connect(&redis).await.map(|_| ()).expect_err("a newer layout is refused");
    match refused {
        Error::Unavailable(why) => {
            let names = format!("layout {newer}, this one reads {LAYOUT}");
            assert!(why.contains(&names) && why.contains("upgrade punctual"), "{why}");
        }
        other => panic!("refused as {other:?}"),
    }
    assert_eq!(layout_in(&redis), newer, "the newer version is left as it was");
    let keys = redis.command(&["KEYS", "*"]).expect("KEYS");
    assert_eq!(keys, "punctual:layout", "nothing was written to the newer store");
}
