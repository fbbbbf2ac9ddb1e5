//! punctual's core: the task model, policies, the [`Store`] seam, the state machine as
//! pure functions ([`transitions`]), the reference store built on them
//! ([`MemoryStore`]) and the [`Engine`] that fires tasks on time. No disk or network
//! I/O happens here; the durable stores live in their own crates (`punctual-sqlite`,
//! `punctual-redis`). `docs/architecture.md` draws where everything lives.
//!
//! The engine tells what it does as [`Event`]s ([`Engine::observe`],
//! [`Engine::subscribe`]): metrics, dashboards, logs and tests are built from them. It
//! runs a watchdog that restarts a stalled consumer wait or lease reaper
//! ([`WatchdogConfig`]).
//!
//! Guarantees (see `docs/state-machine.md`): a task whose schedule call returned fires
//! at least once at or after its due time unless cancelled before it was leased; at
//! most one lease of a task is live at a time; a replaced or cancelled task's old lease
//! cannot complete; bad input is refused with [`Error::Invalid`] and changes nothing.

pub mod audit;
pub mod calendar;
pub mod clock;
mod cron;
pub mod engine;
mod error;
pub mod events;
mod group_slots;
pub mod history;
mod identity;
mod memory;
mod meta;
mod model;
mod names;
pub mod outbox;
mod outcome;
pub mod policy;
pub mod store;
mod target;
pub mod time;
mod timed;
mod timer;
pub mod token;
mod trace_context;
pub mod transitions;
mod unique;
mod wake;
pub mod wheel;
mod worker;

pub use calendar::Calendar;
pub use clock::{Clock, ManualClock, Stopwatch, SystemClock, TokioClock};
pub use engine::{
    Engine, EngineConfig, LeaseOptions, Limits, ListOptions, MAX_LEASE, MAX_LEASE_BATCH, MAX_LIST_LIMIT, MAX_WAIT,
    MIN_LEASE, QueueDefaults, RECORDS_POLL, WatchdogConfig,
};
pub use error::{Error, Result};
pub use events::{Event, EventStream, Observer, Observers, Restarted, StoreOp};
pub use identity::StoreId;
pub use memory::MemoryStore;
pub use meta::TaskMeta;
pub use model::{Actor, Group, IfExists, NewTask, Priority, QueueName, Tag, Task, TaskKey, TaskSpec, TaskState, When};
pub use names::check_name;
pub use outcome::{Outcome, TryEnd};
pub use policy::{Backoff, CronSyntax, Repeat};
pub use store::Completed;
pub use store::{
    ApplyOnceRequest, CompletionsPage, CompletionsRequest, DeadSelection, GroupCounts, GroupsPage, GroupsRequest,
    HistoriesPage, HistoriesRequest, HistoryRequest, HistorySweepRequest, ImportRequest, Imported, KeyHistory, Lease,
    LeaseToken, OnceEffect, OnceOp, Peers, PurgeSelection, QueueChange, QueueRecord, ScheduleOutcome, Scheduled, Store,
    StoreReset, Wakeup,
};
pub use target::{Lane, Target, TargetMethod};
pub use time::{Timestamp, parse_duration};
pub use token::TokenCodec;
pub use trace_context::TraceContext;
pub use unique::Unique;
pub use worker::{BoxError, Delivery, Handler, RunningWorker, Worker};

#[test]
fn module_graph_has_no_circles() {
    punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
}
