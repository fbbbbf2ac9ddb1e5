//! punctual's core: the task model, policies, the [`Store`] seam and the [`Engine`]
//! that fires tasks on time. No disk or network I/O happens here; stores live in their
//! own crates (`punctual-sqlite`, later `punctual-redis`).
//!
//! The engine counts what it does ([`metrics`], read with [`Engine::metrics`]) and runs
//! a watchdog that restarts a stalled consumer wait or lease reaper
//! ([`WatchdogConfig`]).
//!
//! Guarantees (see `docs/state-machine.md`): a task whose schedule call returned fires
//! at least once at or after its due time unless cancelled before it was leased; at
//! most one lease of a task is live at a time; a replaced or cancelled task's old lease
//! cannot complete; bad input is refused with [`Error::Invalid`] and changes nothing.

pub mod clock;
mod cron;
pub mod engine;
mod error;
mod identity;
mod memory;
pub mod metrics;
mod model;
pub mod policy;
pub mod store;
pub mod time;
mod timer;
pub mod token;
pub mod transitions;
mod wake;
pub mod wheel;
mod worker;

pub use clock::{Clock, ManualClock, Stopwatch, SystemClock};
pub use engine::{Engine, EngineConfig, LagSummary, LeaseOptions, Limits, ListOptions, QueueDefaults, WatchdogConfig};
pub use error::{Error, Result};
pub use identity::StoreId;
pub use memory::MemoryStore;
pub use model::{IfExists, NewTask, QueueName, Tag, Task, TaskKey, TaskMeta, TaskSpec, TaskState, When};
pub use policy::{Backoff, Repeat};
pub use store::{DeadSelection, Lease, LeaseToken, Peers, ScheduleOutcome, Scheduled, Store, StoreReset, Wakeup};
pub use time::{Timestamp, parse_duration};
pub use token::TokenCodec;
pub use worker::{BoxError, Delivery, Handler, Outcome, RunningWorker, Worker};
