//! A queue's default policies apply to tasks that set none, and only to those: a
//! reminder queue whose tasks repeat every day unless a task says otherwise. Defaults
//! and history retentions replaced at run time (a config file read again) apply to the
//! next call.

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

/// A server's config file read again (SIGHUP): the new defaults apply to the next
/// schedule, a queue dropped from them takes the built-in ones, and defaults set at run
/// time still win over the config's.
#[tokio::test]
async fn config_defaults_replaced_at_run_time_apply_to_the_next_schedule() {
    let queue = |name: &str| QueueName::new(name).expect("a valid queue");
    let attempts = |n: u32| {
        let mut defaults = QueueDefaults::default();
        defaults.max_attempts = n;
        defaults
    };
    let config =
        EngineConfig::default().queue(queue("flow.remind"), attempts(3)).queue(queue("order.cancel"), attempts(4));
    let engine = Engine::start(MemoryStore::new(), config);
    let max_attempts = |queue: &'static str, key: &'static str| {
        let engine = engine.clone();
        async move {
            let written = engine.schedule(queue, key, TaskSpec::after(Duration::from_secs(60))).await.expect("ok");
            written.task.expect("a task is written").max_attempts
        }
    };
    assert_eq!((max_attempts("flow.remind", "a").await, max_attempts("order.cancel", "a").await), (3, 4));

    engine.set_queue_defaults(&queue("order.cancel"), Some(attempts(9)));
    engine.set_config_queues([(queue("flow.remind"), attempts(7)), (queue("order.cancel"), attempts(5))].into());
    assert_eq!(max_attempts("flow.remind", "b").await, 7, "the config's new defaults");
    assert_eq!(max_attempts("order.cancel", "b").await, 9, "run-time defaults still win");

    engine.set_config_queues([(queue("order.cancel"), attempts(5))].into());
    let built_in = QueueDefaults::default().max_attempts;
    assert_eq!(max_attempts("flow.remind", "c").await, built_in, "a queue dropped from the config");
    engine.set_queue_defaults(&queue("order.cancel"), None);
    assert_eq!(max_attempts("order.cancel", "c").await, 5);
    engine.shutdown().await.expect("shutdown");
}

/// A queue's history retention replaced while the engine runs (a config file read
/// again): a history read at once keeps only the events within the new one, and a
/// queue dropped from it keeps its histories the default 7 days again.
#[tokio::test(start_paused = true)]
async fn a_history_retention_replaced_at_run_time_applies_to_the_next_read() {
    let start = punctual_core::Timestamp::from_millis(1_796_040_000_000);
    let clock = punctual_core::ManualClock::new(start);
    let queue = QueueName::new("flow.remind").expect("a valid queue");
    let day = Duration::from_secs(86_400);
    let config =
        EngineConfig::default().clock(std::sync::Arc::new(clock.clone())).history_retention(queue.clone(), day);
    let engine = Engine::start(MemoryStore::new(), config);
    engine.schedule("flow.remind", "step-1", TaskSpec::after(Duration::from_secs(60))).await.expect("scheduled");
    clock.advance(Duration::from_secs(2 * 3600));
    let told = || async { engine.history("flow.remind", "step-1").await.expect("history").len() };
    assert_eq!((engine.history_retention(&queue), told().await), (day, 1), "created two hours ago, kept a day");

    let hour = Duration::from_secs(3600);
    engine.set_history_retention([(queue.clone(), hour)].into());
    assert_eq!((engine.history_retention(&queue), told().await), (hour, 0), "kept an hour: past it");
    engine.set_history_retention(std::collections::HashMap::new());
    let default = punctual_core::history::DEFAULT_HISTORY_RETENTION;
    assert_eq!((engine.history_retention(&queue), told().await), (default, 1), "the default again");
    engine.shutdown().await.expect("shutdown");
}
