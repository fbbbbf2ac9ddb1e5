//! punctual: durable delayed tasks that fire on time, never get lost, and never fire
//! twice by accident.
//!
//! Open a store, start an [`Engine`] on it, schedule tasks, and run a [`Worker`] that
//! routes each queue to its handler:
//!
//! ```no_run
//! use std::time::Duration;
//! use punctual::{Engine, EngineConfig, Outcome, SqliteStore, TaskSpec, Worker};
//!
//! # async fn demo() -> Result<(), punctual::Error> {
//! let store = SqliteStore::open("./punctual-data")?;
//! let engine = Engine::start(store, EngineConfig::default());
//! engine
//!     .schedule("order.cancel", "order-1234",
//!         TaskSpec::after(Duration::from_secs(30 * 60)).payload(serde_json::json!({"order_id": 1234})))
//!     .await?;
//! let worker = Worker::new(engine.clone())
//!     .handle("order.cancel", |delivery: punctual::Delivery| async move {
//!         println!("cancelling {}", delivery.task.key);
//!         Ok::<_, punctual::BoxError>(Outcome::Done)
//!     })
//!     .start()?;
//! // … later
//! worker.shutdown().await;
//! engine.shutdown().await?;
//! # Ok(()) }
//! ```

pub use punctual_core::*;
pub use punctual_sqlite::SqliteStore;

/// The Redis and Redis Cluster store, for many processes sharing the work.
pub mod redis {
    pub use punctual_redis::{RedisClock, RedisConfig, RedisStore, SCRIPT_BATCH, Target, TimeSource};
}

/// The README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
