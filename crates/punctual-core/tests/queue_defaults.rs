//! A queue's default policies apply to tasks that set none, and only to those: a
//! reminder queue whose tasks repeat every day unless a task says otherwise.

use std::time::Duration;

use punctual_core::{Engine, EngineConfig, MemoryStore, QueueDefaults, QueueName, Repeat, TaskSpec};

#[tokio::test]
async fn a_queue_default_repeat_applies_to_tasks_without_their_own() {
    let store = MemoryStore::new();
    let daily = Repeat::every(Duration::from_secs(86_400)).expect("a valid repeat");
    let mut defaults = QueueDefaults::default();
    defaults.repeat = Some(daily.clone());
    let config = EngineConfig::default().queue(QueueName::new("flow.remind").expect("a valid queue"), defaults);
    let engine = Engine::start(store, config);

    let plain = engine.schedule("flow.remind", "step-1", TaskSpec::after(Duration::from_secs(60))).await.expect("ok");
    let plain = plain.task.expect("a task is written");
    assert_eq!(plain.repeat, Some(daily), "the queue's repeat");
    let hourly = Repeat::every(Duration::from_secs(3600)).expect("a valid repeat");
    let own = TaskSpec::after(Duration::from_secs(60)).repeat(hourly.clone());
    let own = engine.schedule("flow.remind", "step-2", own).await.expect("ok").task.expect("a task is written");
    assert_eq!(own.repeat, Some(hourly), "a task's own repeat wins");
    let other = engine.schedule("order.cancel", "order-1", TaskSpec::after(Duration::from_secs(60))).await.expect("ok");
    let other = other.task.expect("a task is written");
    assert_eq!(other.repeat, None, "other queues keep no repeat");
    engine.shutdown().await.expect("shutdown");
}
