//! The model test: random operation sequences applied both to a real [`Store`] and to a
//! plain in-memory model of the contracts written in `punctual_core::store`, comparing
//! every answer and, after every step, everything a caller can observe.
//!
//! It guards against a backend drifting from its contract in ways hand-written cases
//! miss because they need an unlucky order of events: a stale lease token that still
//! completes after its task was reaped, replaced, or deleted and created again; an id
//! reused after a re-creation; attempts miscounted on reap; a `next_due` or
//! `next_expiry` that forgets a task; a paging cursor that skips or repeats a task among
//! equal due times; counts in `stats` that disagree with the tasks.
//!
//! How it works:
//! - The universe is small so collisions are frequent: 2 queues × 6 keys × 3 tags. Time
//!   is a virtual clock that only [`Op::Advance`] moves (whole half-seconds, so due
//!   times, expiries and `now` often coincide exactly).
//! - The model is a `BTreeMap` keyed by (queue, key) holding the task each contract
//!   says must be stored. `updated_at` is the `now` of the last call that wrote the
//!   task; `lease_expires_at` is set exactly while the task is `leased`.
//! - After each step every (queue, key) is read with `get`, `stats` is asked for every
//!   queue and for all, and each queue is listed page by page, in all and by each tag
//!   (a listing by tag keeps the full listing's order).
//! - [`Op::ListPage`] pages through a queue one page per step, with other operations in
//!   between: every task nobody wrote or deleted meanwhile must be visited exactly once.
//! - [`Op::RetryDeadMany`] runs a whole bulk retry (every batch, following the cursor)
//!   in one step; [`Op::SweepDead`] one retention sweep.
//! - At the end the store is closed; a later call must fail with `Unavailable`.
//!
//! What the model cannot know is still checked strictly:
//! - `meta.store`, the store's identity, is learned from the first task the store
//!   returns: every task after must carry the same one (so every delivery id names
//!   the store).
//! - `meta.id` and the first fence are learned from the store's answer when a task is
//!   created; an id must never repeat for the life of the store. Each lease must raise
//!   the fence (by one, or further: a store may start fences at an epoch), and nothing
//!   else may change it.
//! - The text `reap` writes to `last_error` is learned on first sight; it must say the
//!   lease expired, and stays exact from then on (`retry_dead` keeps it).
//! - The tie order among equal due times is store-defined: the order of the full listing
//!   after each step is taken as the store's order, must not change for tasks nobody
//!   wrote meanwhile, and `lease` must hand out tasks in exactly that order.
//! - Among leases expiring at the same instant, `reap` may pick any, but exactly as many
//!   as `limit` allows, earliest first; so may `sweep_dead` among tasks that died at the
//!   same instant.
//!
//! Durability across closing and reopening a store is not checked here: the crash tests
//! cover it with a real `kill -9` of a real process.
//!
//! Use [`store_model_test!`](crate::store_model_test). A failure prints the minimal
//! sequence as Rust; paste it into [`replay`] for a regression test.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use punctual_core::engine::completion_for;
use punctual_core::store::{
    CompleteRequest, Completion, DeadSelection, LeaseRequest, ListRequest, QueueStats, RetryDeadRequest,
    ScheduleOutcome, SweepRequest,
};
use punctual_core::{
    Backoff, Error, IfExists, Lease, LeaseToken, NewTask, Outcome, QueueName, Repeat, Store, StoreId, Tag, Task,
    TaskKey, TaskMeta, TaskState, Timestamp,
};
use serde_json::{Value, json};

/// Expands to a `#[test]` that runs random operation sequences against the store made
/// by `factory` and checks them against the model. `factory()` must return a future
/// resolving to `(store, guard)`; the guard (e.g. a `tempfile::TempDir`) is dropped after
/// the store. Each case gets a fresh store. `PROPTEST_CASES` overrides the number of
/// cases (64 by default).
#[macro_export]
macro_rules! store_model_test {
    ($factory:expr) => {
        #[test]
        fn random_operations_agree_with_the_model() {
            $crate::model::check_store_against_model($factory);
        }
    };
}

/// The queues operations use, by index.
const QUEUES: [&str; 2] = ["order.cancel", "flow.express-return.chief-reminder"];
/// A queue no operation writes to: `stats` must answer zero counts for it.
const QUEUE_NEVER_USED: &str = "never.used";
/// Keys, by index; some with characters a naive store might mangle.
const KEYS: [&str; 6] = ["order-1234", "order-1235", "task-77@pi-9@zhang.wei", "订单/42", "with space", "k"];
/// Tags, by bit of [`ScheduleItem::tags`].
const TAGS: [&str; 3] = ["flow-1", "flow-2", "instance:3"];
/// Where the virtual clock starts: 2026-01-01T00:00:00Z.
const START: Timestamp = Timestamp::from_millis(1_767_225_600_000);

const DEFAULT_CASES: u32 = 64;
const MAX_OPS: usize = 40;
const MAX_SHRINK_ITERS: u32 = 4096;
const MAX_SHRINK_MILLIS: u32 = 30_000;
/// Page size of the full listings done after each step; small, so paging is exercised.
const OBSERVE_PAGE_LIMIT: u32 = 2;
/// A paging session longer than this does not end.
const MAX_PAGES: usize = 64;
/// A case taking longer than this means the store hangs.
const CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// One step of a sequence. Queues, keys, tags and tokens are indices, so that any
/// sequence is meaningful whatever came before it (and shrinks well).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// One `schedule` call writing 1–3 tasks.
    Schedule(Vec<ScheduleItem>),
    Get(TaskPick),
    Cancel(TaskPick),
    CancelTag {
        queue: usize,
        tag: usize,
    },
    Lease {
        queue: usize,
        max: u32,
        lease_secs: u64,
    },
    Complete {
        token: TokenPick,
        completion: CompletionSpec,
    },
    /// One `complete_many` call.
    CompleteMany(Vec<(TokenPick, CompletionSpec)>),
    Extend {
        token: TokenPick,
        lease_secs: u64,
    },
    Release {
        token: TokenPick,
    },
    Reap {
        limit: u32,
    },
    RetryDead(TaskPick),
    DeleteDead(TaskPick),
    /// Leases up to `max` due tasks of the queue and completes each as dead at once: a
    /// handler that fails for good. (So that queues hold dead tasks, often with
    /// different times of death, for the bulk retry and the sweep.)
    FailDue {
        queue: usize,
        max: u32,
    },
    /// A bulk retry of a queue's dead tasks: every batch of `retry_dead_batch`, `limit`
    /// per batch, following the cursor to the end.
    RetryDeadMany {
        queue: usize,
        which: DeadPick,
        limit: u32,
    },
    /// One `sweep_dead` of the queue's dead tasks that died `age_ms` or longer ago.
    SweepDead {
        queue: usize,
        age_ms: u64,
        limit: u32,
    },
    /// The next page of the open paging session, or the first page of a new one with
    /// these parameters when none is open. Sessions interleave with other operations.
    ListPage {
        queue: usize,
        state: StateFilter,
        /// Only tasks carrying `TAGS[i]`.
        tag: Option<usize>,
        limit: u32,
    },
    /// `stats` of one queue (index 2 is a queue never written to), or of all.
    Stats {
        queue: Option<usize>,
    },
    /// Moves the virtual clock forward.
    Advance {
        ms: u64,
    },
}

/// One task of an [`Op::Schedule`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleItem {
    pub queue: usize,
    pub key: usize,
    /// Due this long after the virtual now; negative is in the past.
    pub due_ms: i64,
    /// Index into [`payload`].
    pub payload: usize,
    pub max_attempts: u32,
    /// Bit `i` set: the task carries `TAGS[i]`.
    pub tags: u8,
    pub repeat: Option<RepeatSpec>,
    pub if_exists: Exists,
    /// A backoff other than the default, to see policies stored as given.
    pub custom_backoff: bool,
}

impl ScheduleItem {
    /// A task with one attempt, due `due_ms` from now, with no tags, no repeat, the
    /// default payload and backoff, replacing what is there: regression tests' usual.
    pub fn once(queue: usize, key: usize, due_ms: i64) -> ScheduleItem {
        ScheduleItem {
            queue,
            key,
            due_ms,
            payload: 0,
            max_attempts: 1,
            tags: 0,
            repeat: None,
            if_exists: Exists::Replace,
            custom_backoff: false,
        }
    }
}

/// [`IfExists`], with variant names that do not clash when imported with `ops::*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exists {
    Replace,
    Keep,
    Refuse,
}

/// A repeat policy to store (the store keeps it; the engine interprets it).
#[derive(Debug, Clone, PartialEq)]
pub enum RepeatSpec {
    Every { every_ms: u64, times: Option<u32>, until_ms: Option<u64> },
    WeekdayMornings,
}

/// Which (queue, key) an operation names.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskPick {
    /// One of the tasks the model holds (any slot when there are none).
    Existing(usize),
    /// One of the dead tasks (an existing one when none is dead).
    DeadOne(usize),
    /// Queue and key by index, whether or not a task is there.
    Slot { queue: usize, key: usize },
}

/// Which lease token an operation uses.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenPick {
    /// One of the live leases (any issued token when none is live).
    Live(usize),
    /// Any token ever issued, live or not.
    Issued(usize),
    /// A live token with its fence bumped: never live.
    ForgedFence(usize),
    /// A live token with its version bumped: never live.
    ForgedVersion(usize),
}

/// How a completion ends the leased try.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionSpec {
    Done,
    RetryAfter {
        ms: u64,
    },
    RescheduleAfter {
        ms: u64,
    },
    GiveUp,
    /// What the engine sends when the handler says done: a repeat re-armed, or done.
    DoneByPolicy,
    /// What the engine sends when the handler fails: retry with backoff, or dead.
    FailedByPolicy,
}

/// Which dead tasks a bulk retry selects.
#[derive(Debug, Clone, PartialEq)]
pub enum DeadPick {
    EveryDead,
    /// Those carrying `TAGS[i]`.
    DeadWithTag(usize),
    /// Those among the keys of the tasks these name (in either queue; repeats allowed).
    DeadKeys(Vec<TaskPick>),
}

/// Which tasks a paging session lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    AnyState,
    OnlyScheduled,
    OnlyLeased,
    OnlyDead,
}

/// Every variant, for pasting a printed failing sequence into a regression test:
/// `use punctual_testkit::model::ops::*;`.
pub mod ops {
    pub use super::CompletionSpec::*;
    pub use super::DeadPick::*;
    pub use super::Exists::*;
    pub use super::Op::*;
    pub use super::RepeatSpec::*;
    pub use super::StateFilter::*;
    pub use super::TaskPick::*;
    pub use super::TokenPick::*;
    pub use super::{Op, ScheduleItem};
}

/// The payloads tasks carry, by index: JSON a store must give back exactly, including
/// an integer beyond `f64` precision and text outside ASCII.
pub fn payload(index: usize) -> Value {
    match index % 5 {
        0 => Value::Null,
        1 => json!({"order": 1234, "items": [1, 2, 3]}),
        2 => json!("提醒 ✓ \"quoted\""),
        3 => json!({"nested": {"deep": [true, null, 1.5]}}),
        _ => json!(9_007_199_254_740_993_u64),
    }
}

/// Random operation sequences, 1 to 40 long.
pub fn operations() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(operation(), 1..=MAX_OPS)
}

fn operation() -> impl Strategy<Value = Op> {
    let queue = 0..QUEUES.len();
    prop_oneof![
        7 => proptest::collection::vec(schedule_item(), 1..=3).prop_map(Op::Schedule),
        1 => task_pick().prop_map(Op::Get),
        1 => task_pick().prop_map(Op::Cancel),
        1 => (queue.clone(), 0..TAGS.len()).prop_map(|(queue, tag)| Op::CancelTag { queue, tag }),
        5 => (queue.clone(), 1u32..=3, 1u64..=5).prop_map(|(queue, max, lease_secs)| Op::Lease { queue, max, lease_secs }),
        5 => (token_pick(), completion_spec()).prop_map(|(token, completion)| Op::Complete { token, completion }),
        1 => proptest::collection::vec((token_pick(), completion_spec()), 1..=3).prop_map(Op::CompleteMany),
        2 => (token_pick(), 1u64..=5).prop_map(|(token, lease_secs)| Op::Extend { token, lease_secs }),
        1 => token_pick().prop_map(|token| Op::Release { token }),
        2 => (1u32..=3).prop_map(|limit| Op::Reap { limit }),
        2 => task_pick().prop_map(Op::RetryDead),
        1 => task_pick().prop_map(Op::DeleteDead),
        5 => (queue.clone(), 1u32..=3).prop_map(|(queue, max)| Op::FailDue { queue, max }),
        2 => (queue.clone(), dead_pick(), 1u32..=3).prop_map(|(queue, which, limit)| Op::RetryDeadMany { queue, which, limit }),
        3 => (queue.clone(), (0u64..=8).prop_map(|halves| halves * 500), 1u32..=3)
            .prop_map(|(queue, age_ms, limit)| Op::SweepDead { queue, age_ms, limit }),
        2 => (queue, state_filter(), proptest::option::weighted(0.4, 0..TAGS.len()), 1u32..=3)
            .prop_map(|(queue, state, tag, limit)| Op::ListPage { queue, state, tag, limit }),
        1 => proptest::option::of(0..=QUEUES.len()).prop_map(|queue| Op::Stats { queue }),
        5 => (0u64..=20).prop_map(|halves| Op::Advance { ms: halves * 500 }),
    ]
}

fn schedule_item() -> impl Strategy<Value = ScheduleItem> {
    let if_exists = prop_oneof![3 => Just(Exists::Replace), 1 => Just(Exists::Keep), 1 => Just(Exists::Refuse)];
    (
        0..QUEUES.len(),
        0..KEYS.len(),
        due_offset(),
        0usize..5,
        1u32..=3,
        0u8..(1 << TAGS.len()),
        proptest::option::weighted(0.3, repeat_spec()),
        if_exists,
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(queue, key, due_ms, payload, max_attempts, tags, repeat, if_exists, custom_backoff)| {
            ScheduleItem { queue, key, due_ms, payload, max_attempts, tags, repeat, if_exists, custom_backoff }
        })
}

/// Due offsets from now in ms: few distinct values, so equal due times are common.
fn due_offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => (-4i64..=-1).prop_map(|halves| halves * 500),
        3 => Just(0),
        3 => (1i64..=6).prop_map(|secs| secs * 1000),
    ]
}

fn repeat_spec() -> impl Strategy<Value = RepeatSpec> {
    prop_oneof![
        4 => (1u64..=5, proptest::option::of(1u32..=3), proptest::option::weighted(0.3, 0u64..=20)).prop_map(
            |(secs, times, until_secs)| RepeatSpec::Every {
                every_ms: secs * 1000,
                times,
                until_ms: until_secs.map(|secs| secs * 1000),
            }
        ),
        1 => Just(RepeatSpec::WeekdayMornings),
    ]
}

fn task_pick() -> impl Strategy<Value = TaskPick> {
    prop_oneof![
        2 => any::<usize>().prop_map(TaskPick::Existing),
        2 => any::<usize>().prop_map(TaskPick::DeadOne),
        1 => (0..QUEUES.len(), 0..KEYS.len()).prop_map(|(queue, key)| TaskPick::Slot { queue, key }),
    ]
}

fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        6 => any::<usize>().prop_map(TokenPick::Live),
        3 => any::<usize>().prop_map(TokenPick::Issued),
        1 => any::<usize>().prop_map(TokenPick::ForgedFence),
        1 => any::<usize>().prop_map(TokenPick::ForgedVersion),
    ]
}

fn completion_spec() -> impl Strategy<Value = CompletionSpec> {
    prop_oneof![
        3 => Just(CompletionSpec::Done),
        2 => (0u64..=20).prop_map(|halves| CompletionSpec::RetryAfter { ms: halves * 500 }),
        2 => (0u64..=20).prop_map(|halves| CompletionSpec::RescheduleAfter { ms: halves * 500 }),
        1 => Just(CompletionSpec::GiveUp),
        2 => Just(CompletionSpec::DoneByPolicy),
        2 => Just(CompletionSpec::FailedByPolicy),
    ]
}

fn dead_pick() -> impl Strategy<Value = DeadPick> {
    prop_oneof![
        Just(DeadPick::EveryDead),
        (0..TAGS.len()).prop_map(DeadPick::DeadWithTag),
        proptest::collection::vec(task_pick(), 0..=4).prop_map(DeadPick::DeadKeys),
    ]
}

fn state_filter() -> impl Strategy<Value = StateFilter> {
    prop_oneof![
        Just(StateFilter::AnyState),
        Just(StateFilter::OnlyScheduled),
        Just(StateFilter::OnlyLeased),
        Just(StateFilter::OnlyDead),
    ]
}

/// Runs the property: random sequences against fresh stores from `factory`, each
/// checked against the model. Panics with the minimal failing sequence.
pub fn check_store_against_model<F, Fut, S, G>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    let from_env = |name: &str| std::env::var(name).ok().and_then(|n| n.parse().ok());
    let config = Config {
        cases: from_env("PROPTEST_CASES").unwrap_or(DEFAULT_CASES),
        // Enough to shrink a 40-step failure to the few steps that matter, within a time
        // a failing CI run can afford (each shrink step runs a case on a fresh store).
        max_shrink_iters: from_env("PROPTEST_MAX_SHRINK_ITERS").unwrap_or(MAX_SHRINK_ITERS),
        max_shrink_time: from_env("PROPTEST_MAX_SHRINK_TIME").unwrap_or(MAX_SHRINK_MILLIS),
        // Failures are kept as plain regression tests calling `replay`, not in files.
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&operations(), |ops| run_case(&factory, &ops).map_err(TestCaseError::fail));
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, ops)) => panic!(
            "the store disagrees with the model: {reason}\n\nminimal failing sequence, for \
             `punctual_testkit::model::replay` (with `use punctual_testkit::model::ops::*;`):\n{}",
            as_rust(&ops)
        ),
        Err(TestError::Abort(reason)) => panic!("the model test gave up: {reason}"),
    }
}

/// Runs one sequence against a fresh store from `factory`; panics with the first
/// disagreement. For regression tests of sequences the property once found.
pub fn replay<F, Fut, S, G>(factory: F, ops: Vec<Op>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    if let Err(reason) = run_case(&factory, &ops) {
        panic!("the store disagrees with the model: {reason}");
    }
}

/// `ops` as a Rust expression.
fn as_rust(ops: &[Op]) -> String {
    let mut text = String::from("vec![\n");
    for op in ops {
        // Debug writes vectors as `[…]`; inside an expression they must be `vec![…]`.
        let op = format!("{op:?}")
            .replace("Schedule([", "Schedule(vec![")
            .replace("CompleteMany([", "CompleteMany(vec![")
            .replace("DeadKeys([", "DeadKeys(vec![");
        text.push_str("    ");
        text.push_str(&op);
        text.push_str(",\n");
    }
    text.push(']');
    text
}

fn run_case<F, Fut, S, G>(factory: &F, ops: &[Op]) -> Result<(), String>
where
    F: Fn() -> Fut,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    // A multi-threaded runtime, so stores that block in place or spawn work run as in
    // production.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"))?;
    runtime.block_on(async {
        let (store, guard) = factory().await;
        let outcome = tokio::time::timeout(CASE_TIMEOUT, async {
            Checker::new(&store).run(ops).await?;
            store.close().await.map_err(|e| format!("close failed: {e:?}"))?;
            let queue = queue_name(0);
            let key = task_key(0);
            match store.get(&queue, &key).await {
                Err(Error::Unavailable(_)) => Ok(()),
                other => Err(format!("get after close must fail with Unavailable, the store answered {other:?}")),
            }
        })
        .await
        .unwrap_or_else(|_| Err(format!("the store stopped answering: the case took over {CASE_TIMEOUT:?}")));
        drop(store);
        drop(guard);
        outcome
    })
}

fn queue_name(index: usize) -> QueueName {
    let name = QUEUES.get(index).copied().unwrap_or(QUEUE_NEVER_USED);
    QueueName::new(name).expect("the model's queue names are valid")
}

fn task_key(index: usize) -> TaskKey {
    TaskKey::new(KEYS[index % KEYS.len()]).expect("the model's keys are valid")
}

fn tag(index: usize) -> Tag {
    Tag::new(TAGS[index % TAGS.len()]).expect("the model's tags are valid")
}

/// What the contracts say one stored task must look like.
#[derive(Debug)]
struct Expected {
    task: Task,
    /// `reap` wrote `last_error`; its text is the store's, learned when next seen.
    expiry_error_unseen: bool,
    /// Written since the last observation (so its place among ties may have changed).
    written: bool,
}

/// A paging session in progress: pages fetched one operation at a time, with other
/// operations in between.
#[derive(Debug)]
struct PagingSession {
    queue: QueueName,
    state: Option<TaskState>,
    tag: Option<Tag>,
    limit: u32,
    cursor: Option<String>,
    pages: usize,
    /// (key, id) of every task returned so far, with how often.
    seen: BTreeMap<(TaskKey, u64), u32>,
    /// Tasks present when the session started and not written or deleted since: each
    /// must be visited exactly once.
    in_place: BTreeSet<(TaskKey, u64)>,
    /// The latest due time among in-place tasks returned so far.
    latest_in_place_due: Option<Timestamp>,
}

type Slot = (QueueName, TaskKey);

/// Applies operations to the store and the model side by side.
struct Checker<'s, S> {
    store: &'s S,
    now: Timestamp,
    tasks: BTreeMap<Slot, Expected>,
    /// The store's identity, once a task showed it.
    store_id: Option<StoreId>,
    /// Every `meta.id` the store has given a creation.
    ids_given: BTreeSet<u64>,
    /// Every lease token the store has issued, in order.
    tokens: Vec<LeaseToken>,
    paging: Option<PagingSession>,
    /// Per queue, its keys in the order of the last full listing: the store's tie order.
    listed_order: BTreeMap<QueueName, Vec<TaskKey>>,
    /// Numbers the error texts handed to the store, so each is distinct.
    errors_written: u32,
}

impl<'s, S: Store> Checker<'s, S> {
    fn new(store: &'s S) -> Self {
        Checker {
            store,
            now: START,
            tasks: BTreeMap::new(),
            store_id: None,
            ids_given: BTreeSet::new(),
            tokens: Vec::new(),
            paging: None,
            listed_order: BTreeMap::new(),
            errors_written: 0,
        }
    }

    async fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        self.observe().await.map_err(|e| format!("before the first step: {e}"))?;
        for (step, op) in ops.iter().enumerate() {
            let at = self.clock();
            self.apply(op).await.map_err(|e| format!("step {step} {op:?} at {at}: {e}"))?;
            self.observe().await.map_err(|e| format!("after step {step} {op:?} at {at}: {e}"))?;
        }
        Ok(())
    }

    /// The virtual time, relative to the start, for messages.
    fn clock(&self) -> String {
        format!("t+{}ms", self.now.as_millis() - START.as_millis())
    }

    async fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Schedule(items) => self.schedule(items).await,
            Op::Get(pick) => self.get(&self.pick_task(pick)).await,
            Op::Cancel(pick) => self.cancel(&self.pick_task(pick)).await,
            Op::CancelTag { queue, tag: index } => self.cancel_tag(queue_name(*queue), tag(*index)).await,
            Op::Lease { queue, max, lease_secs } => {
                self.lease(queue_name(*queue), *max, Duration::from_secs(*lease_secs)).await
            }
            Op::Complete { token, completion } => self.complete(token, completion).await,
            Op::CompleteMany(items) => self.complete_many(items).await,
            Op::Extend { token, lease_secs } => self.extend(token, Duration::from_secs(*lease_secs)).await,
            Op::Release { token } => self.release(token).await,
            Op::Reap { limit } => self.reap(*limit).await,
            Op::RetryDead(pick) => self.retry_dead(&self.pick_task(pick)).await,
            Op::DeleteDead(pick) => self.delete_dead(&self.pick_task(pick)).await,
            Op::FailDue { queue, max } => self.fail_due(queue_name(*queue), *max).await,
            Op::RetryDeadMany { queue, which, limit } => self.retry_dead_many(queue_name(*queue), which, *limit).await,
            Op::SweepDead { queue, age_ms, limit } => {
                self.sweep_dead(queue_name(*queue), Duration::from_millis(*age_ms), *limit).await
            }
            Op::ListPage { queue, state, tag: index, limit } => {
                self.list_page(queue_name(*queue), *state, index.map(tag), *limit).await
            }
            Op::Stats { queue } => self.stats(queue.map(queue_name)).await,
            Op::Advance { ms } => {
                self.now = self.now.saturating_add(Duration::from_millis(*ms));
                Ok(())
            }
        }
    }

    // ---- The model's bookkeeping ----

    /// Marks the task in `slot` as written now (before it changes or goes away): its
    /// place among ties may change and a paging session no longer counts on it.
    fn touch(&mut self, slot: &Slot) {
        let Some(expected) = self.tasks.get_mut(slot) else { return };
        expected.written = true;
        let id = expected.task.meta.id;
        if let Some(session) = self.paging.as_mut().filter(|session| session.queue == slot.0) {
            session.in_place.remove(&(slot.1.clone(), id));
        }
    }

    fn remove(&mut self, slot: &Slot) -> Option<Expected> {
        self.touch(slot);
        self.tasks.remove(slot)
    }

    /// The model's task in `slot`, which the caller has just touched, for changing.
    fn task_mut(&mut self, slot: &Slot) -> &mut Task {
        &mut self.tasks.get_mut(slot).expect("the caller checked the model holds the task").task
    }

    /// Compares a task the store returned with the model's task in the same slot.
    fn check(&mut self, actual: &Task) -> Result<(), String> {
        let slot = (actual.queue.clone(), actual.key.clone());
        let Some(expected) = self.tasks.get_mut(&slot) else {
            return Err(format!("the store returned {}/{} which the model does not hold: {actual:?}", slot.0, slot.1));
        };
        if expected.expiry_error_unseen {
            match &actual.last_error {
                Some(text) if text.to_lowercase().contains("expire") => {
                    expected.task.last_error = Some(text.clone());
                    expected.expiry_error_unseen = false;
                }
                other => {
                    return Err(format!(
                        "{}/{}: after reap, last_error must say the lease expired, the store has {other:?}",
                        slot.0, slot.1
                    ));
                }
            }
        }
        let differences = differences(actual, &expected.task);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(format!("{}/{} differs from the model: {}", slot.0, slot.1, differences.join("; ")))
        }
    }

    fn is_live(&self, token: &LeaseToken) -> bool {
        let slot = (token.queue.clone(), token.key.clone());
        self.tasks.get(&slot).is_some_and(|expected| token.is_live_for(&expected.task, self.now))
    }

    fn next_error_text(&mut self) -> String {
        self.errors_written += 1;
        format!("handler failed (#{})", self.errors_written)
    }

    // ---- Operations ----

    fn new_task(&self, item: &ScheduleItem) -> NewTask {
        let due_at = Timestamp::from_millis(self.now.as_millis() + item.due_ms);
        let mut task = NewTask::new(queue_name(item.queue % QUEUES.len()), task_key(item.key), due_at);
        task.payload = payload(item.payload);
        task.max_attempts = item.max_attempts.max(1);
        if item.custom_backoff {
            task.backoff = Backoff::new(Duration::from_millis(500), 3.0, Duration::from_secs(10))
                .expect("the model's backoff is valid");
        }
        task.repeat = item.repeat.as_ref().map(|spec| match spec {
            RepeatSpec::Every { every_ms, times, until_ms } => {
                let mut repeat = Repeat::every(Duration::from_millis((*every_ms).max(1))).expect("interval ≥ 1 ms");
                if let Some(times) = times {
                    repeat = repeat.times((*times).max(1)).expect("times ≥ 1");
                }
                if let Some(until_ms) = until_ms {
                    repeat = repeat.until(self.now.saturating_add(Duration::from_millis(*until_ms)));
                }
                repeat
            }
            RepeatSpec::WeekdayMornings => {
                Repeat::cron("0 9 * * MON-FRI", "Asia/Shanghai").expect("the model's cron rule is valid")
            }
        });
        // As the engine hands them over: sorted, without duplicates.
        task.tags = (0..TAGS.len()).filter(|bit| item.tags & (1 << bit) != 0).map(tag).collect();
        task.tags.sort();
        task.if_exists = match item.if_exists {
            Exists::Replace => IfExists::Replace,
            Exists::Keep => IfExists::Keep,
            Exists::Refuse => IfExists::Error,
        };
        task
    }

    async fn schedule(&mut self, items: &[ScheduleItem]) -> Result<(), String> {
        let tasks: Vec<NewTask> = items.iter().map(|item| self.new_task(item)).collect();
        let answers = self
            .store
            .schedule(tasks.clone(), self.now)
            .await
            .map_err(|e| format!("schedule failed as a whole for valid tasks: {e:?}"))?;
        if answers.len() != tasks.len() {
            return Err(format!("schedule of {} tasks answered {} results", tasks.len(), answers.len()));
        }
        for (index, (new, answer)) in tasks.iter().zip(answers).enumerate() {
            let slot = (new.queue.clone(), new.key.clone());
            let exists = self.tasks.contains_key(&slot);
            let what = format!("task {index} ({}/{}, if_exists {:?})", slot.0, slot.1, new.if_exists);
            match (exists, new.if_exists, answer) {
                (false, _, Ok(scheduled)) if scheduled.outcome == ScheduleOutcome::Created => {
                    self.create(new, &scheduled.task).map_err(|e| format!("{what}: {e}"))?;
                }
                (true, IfExists::Replace, Ok(scheduled)) if scheduled.outcome == ScheduleOutcome::Replaced => {
                    self.replace(&slot, new);
                    self.check(&scheduled.task).map_err(|e| format!("{what}, replaced: {e}"))?;
                }
                (true, IfExists::Keep, Ok(scheduled)) if scheduled.outcome == ScheduleOutcome::Kept => {
                    self.check(&scheduled.task).map_err(|e| format!("{what}, kept: {e}"))?;
                }
                (true, IfExists::Error, Err(Error::Conflict(_))) => {}
                (_, _, answer) => {
                    let expected = match (exists, new.if_exists) {
                        (false, _) => "Created",
                        (true, IfExists::Replace) => "Replaced",
                        (true, IfExists::Keep) => "Kept",
                        (true, _) => "Err(Conflict)",
                    };
                    return Err(format!(
                        "{what}: the task {} so the contract says {expected}, the store answered {answer:?}",
                        if exists { "exists" } else { "is absent" }
                    ));
                }
            }
        }
        Ok(())
    }

    /// Adds a task the store has just created, learning its id and first fence (and
    /// the store's identity, from the first task).
    fn create(&mut self, new: &NewTask, answered: &Task) -> Result<(), String> {
        let store = *self.store_id.get_or_insert(answered.meta.store);
        let id = answered.meta.id;
        if !self.ids_given.insert(id) {
            return Err(format!(
                "the new task got id {id}, which an earlier creation already had: a re-created task must get a \
                 new id, or leases of the old one could complete it"
            ));
        }
        let mut task = answered.clone();
        task.queue = new.queue.clone();
        task.key = new.key.clone();
        task.state = TaskState::Scheduled;
        task.due_at = new.due_at;
        task.payload = new.payload.clone();
        task.attempts = 0;
        task.max_attempts = new.max_attempts;
        task.backoff = new.backoff;
        task.repeat = new.repeat.clone();
        task.tags = new.tags.clone();
        task.version = 1;
        task.created_at = self.now;
        task.updated_at = self.now;
        task.lease_expires_at = None;
        task.last_error = None;
        task.meta = TaskMeta::new(store, id, answered.meta.fence, 1, new.due_at);
        let slot = (new.queue.clone(), new.key.clone());
        self.tasks.insert(slot, Expected { task, expiry_error_unseen: false, written: true });
        self.check(answered)
    }

    fn replace(&mut self, slot: &Slot, new: &NewTask) {
        self.touch(slot);
        let now = self.now;
        let expected = self.tasks.get_mut(slot).expect("the caller checked the model holds the task");
        expected.expiry_error_unseen = false;
        let task = &mut expected.task;
        task.state = TaskState::Scheduled;
        task.due_at = new.due_at;
        task.payload = new.payload.clone();
        task.attempts = 0;
        task.max_attempts = new.max_attempts;
        task.backoff = new.backoff;
        task.repeat = new.repeat.clone();
        task.tags = new.tags.clone();
        task.version += 1;
        task.updated_at = now;
        task.lease_expires_at = None;
        task.last_error = None;
        task.meta.occurrence = 1;
        task.meta.anchor = new.due_at;
    }

    async fn get(&mut self, slot: &Slot) -> Result<(), String> {
        let answer = self.store.get(&slot.0, &slot.1).await.map_err(|e| format!("get failed: {e:?}"))?;
        match (answer, self.tasks.contains_key(slot)) {
            (Some(task), true) => self.check(&task),
            (None, false) => Ok(()),
            (Some(task), false) => {
                Err(format!("get {}/{}: the model has no such task, the store has {task:?}", slot.0, slot.1))
            }
            (None, true) => {
                Err(format!("get {}/{}: the store lost the task {:?}", slot.0, slot.1, self.tasks[slot].task))
            }
        }
    }

    async fn cancel(&mut self, slot: &Slot) -> Result<(), String> {
        let answer = self.store.cancel(&slot.0, &slot.1).await.map_err(|e| format!("cancel failed: {e:?}"))?;
        let expected = self.remove(slot).is_some();
        if answer == expected { Ok(()) } else { Err(format!("cancel answered {answer}, the model says {expected}")) }
    }

    async fn cancel_tag(&mut self, queue: QueueName, tag: Tag) -> Result<(), String> {
        let answer = self.store.cancel_tag(&queue, &tag).await.map_err(|e| format!("cancel_tag failed: {e:?}"))?;
        let carrying: Vec<Slot> = self
            .tasks
            .iter()
            .filter(|(slot, expected)| slot.0 == queue && expected.task.tags.contains(&tag))
            .map(|(slot, _)| slot.clone())
            .collect();
        for slot in &carrying {
            self.remove(slot);
        }
        let expected = carrying.len() as u64;
        if answer == expected {
            Ok(())
        } else {
            Err(format!("cancel_tag answered {answer}, the model says {expected} tasks carry the tag"))
        }
    }

    async fn lease(&mut self, queue: QueueName, max: u32, lease_for: Duration) -> Result<(), String> {
        let now = self.now;
        let batch = self
            .store
            .lease(LeaseRequest::new(queue.clone(), max, lease_for, now))
            .await
            .map_err(|e| format!("lease failed: {e:?}"))?;
        // The earliest due scheduled tasks, ties in the store's order as last listed.
        let order = self.listed_order.get(&queue).cloned().unwrap_or_default();
        let place = |key: &TaskKey| order.iter().position(|listed| listed == key).unwrap_or(usize::MAX);
        let mut due: Vec<(Timestamp, usize, TaskKey)> = self
            .tasks
            .iter()
            .filter(|(slot, expected)| {
                slot.0 == queue && expected.task.state == TaskState::Scheduled && expected.task.due_at <= now
            })
            .map(|(slot, expected)| (expected.task.due_at, place(&slot.1), slot.1.clone()))
            .collect();
        due.sort();
        let expected_keys: Vec<&TaskKey> = due.iter().take(max as usize).map(|(_, _, key)| key).collect();
        let leased_keys: Vec<&TaskKey> = batch.leases.iter().map(|lease| &lease.token.key).collect();
        if leased_keys != expected_keys {
            let due: Vec<String> = due.iter().map(|(at, _, key)| format!("{key} due {at}")).collect();
            return Err(format!(
                "lease (max {max}) handed out {leased_keys:?}; due, in the store's listed order: [{}], so the \
                 contract says {expected_keys:?}",
                due.join(", ")
            ));
        }
        for lease in &batch.leases {
            let slot = (queue.clone(), lease.token.key.clone());
            if lease.token.queue != queue {
                return Err(format!("a lease of queue {queue} names queue {}", lease.token.queue));
            }
            self.touch(&slot);
            let task = self.task_mut(&slot);
            // "Fence incremented": it must grow, so no earlier token can match again;
            // a store may jump further (the embedded one starts each open at an epoch).
            if lease.task.meta.fence <= task.meta.fence {
                return Err(format!(
                    "leasing {} moved its fence from {} to {}: it must grow with every lease",
                    slot.1, task.meta.fence, lease.task.meta.fence
                ));
            }
            task.meta.fence = lease.task.meta.fence;
            task.state = TaskState::Leased;
            task.lease_expires_at = Some(now.saturating_add(lease_for));
            task.updated_at = now;
            self.check_lease(lease)?;
            self.tokens.push(lease.token.clone());
        }
        let next_due = self.next_due(&queue);
        if batch.next_due != next_due {
            return Err(format!("lease answered next_due {:?}, the model says {next_due:?}", batch.next_due));
        }
        Ok(())
    }

    fn check_lease(&mut self, lease: &Lease) -> Result<(), String> {
        self.check(&lease.task).map_err(|e| format!("the leased task: {e}"))?;
        let task = &self.tasks[&(lease.token.queue.clone(), lease.token.key.clone())].task;
        let token = LeaseToken::new(task.queue.clone(), task.key.clone(), task.meta.id, task.version, task.meta.fence);
        let mut wrong = Vec::new();
        if lease.token != token {
            wrong.push(format!("token {:?}, the model says {token:?}", lease.token));
        }
        if Some(lease.expires_at) != task.lease_expires_at {
            wrong.push(format!("expires_at {}, the model says {:?}", lease.expires_at, task.lease_expires_at));
        }
        if lease.attempt != task.attempts + 1 {
            wrong.push(format!("attempt {}, the model says {}", lease.attempt, task.attempts + 1));
        }
        if lease.delivery_id != task.delivery_id() {
            wrong.push(format!("delivery_id {}, the model says {}", lease.delivery_id, task.delivery_id()));
        }
        if wrong.is_empty() { Ok(()) } else { Err(format!("lease of {}: {}", task.key, wrong.join("; "))) }
    }

    fn next_due(&self, queue: &QueueName) -> Option<Timestamp> {
        self.tasks
            .iter()
            .filter(|(slot, expected)| &slot.0 == queue && expected.task.state == TaskState::Scheduled)
            .map(|(_, expected)| expected.task.due_at)
            .min()
    }

    /// The (queue, key) an operation names.
    fn pick_task(&self, pick: &TaskPick) -> Slot {
        let nth = |index: usize, dead_only: bool| {
            let slots: Vec<&Slot> = self
                .tasks
                .iter()
                .filter(|(_, expected)| !dead_only || expected.task.state == TaskState::Dead)
                .map(|(slot, _)| slot)
                .collect();
            slots.get(index % slots.len().max(1)).map(|slot| (*slot).clone())
        };
        let by_index = |queue: usize, key: usize| (queue_name(queue % QUEUES.len()), task_key(key));
        match pick {
            TaskPick::Existing(index) => nth(*index, false).unwrap_or_else(|| by_index(*index, *index)),
            TaskPick::DeadOne(index) => {
                nth(*index, true).or_else(|| nth(*index, false)).unwrap_or_else(|| by_index(*index, *index))
            }
            TaskPick::Slot { queue, key } => by_index(*queue, *key),
        }
    }

    /// The token an operation uses; `None` when no lease was ever issued.
    fn pick_token(&self, pick: &TokenPick) -> Option<LeaseToken> {
        let live: Vec<&LeaseToken> = self.tokens.iter().filter(|token| self.is_live(token)).collect();
        let any_live = |index: usize| live.get(index % live.len().max(1)).map(|token| (*token).clone());
        let any_issued = |index: usize| self.tokens.get(index % self.tokens.len().max(1)).cloned();
        match pick {
            TokenPick::Live(index) => any_live(*index).or_else(|| any_issued(*index)),
            TokenPick::Issued(index) => any_issued(*index),
            TokenPick::ForgedFence(index) => any_live(*index).or_else(|| any_issued(*index)).map(|mut token| {
                token.fence += 1;
                token
            }),
            TokenPick::ForgedVersion(index) => any_live(*index).or_else(|| any_issued(*index)).map(|mut token| {
                token.version += 1;
                token
            }),
        }
    }

    fn completion(&mut self, spec: &CompletionSpec, token: &LeaseToken) -> Completion {
        let now = self.now;
        let task = self.tasks.get(&(token.queue.clone(), token.key.clone())).map(|expected| expected.task.clone());
        match spec {
            CompletionSpec::Done => Completion::Done,
            CompletionSpec::RetryAfter { ms } => {
                Completion::Retry { at: now.saturating_add(Duration::from_millis(*ms)), error: self.next_error_text() }
            }
            CompletionSpec::RescheduleAfter { ms } => {
                Completion::Reschedule { at: now.saturating_add(Duration::from_millis(*ms)) }
            }
            CompletionSpec::GiveUp => Completion::Dead { error: self.next_error_text() },
            CompletionSpec::DoneByPolicy => match task {
                Some(task) => completion_for(&task, Outcome::Done, now, 0.0),
                None => Completion::Done,
            },
            CompletionSpec::FailedByPolicy => {
                let error = self.next_error_text();
                match task {
                    Some(task) => completion_for(&task, Outcome::retry(&error), now, 0.0),
                    None => Completion::Dead { error },
                }
            }
        }
    }

    /// Checks a store's answer to completing `token` with `completion`, and applies it
    /// to the model when the lease is live.
    fn expect_completion(
        &mut self,
        token: &LeaseToken,
        completion: &Completion,
        answer: punctual_core::Result<()>,
    ) -> Result<(), String> {
        let live = self.is_live(token);
        match (live, answer) {
            (true, Ok(())) => {}
            (false, Err(Error::LeaseLost)) => return Ok(()),
            (live, answer) => {
                return Err(format!(
                    "completing {completion:?} with {token:?} answered {answer:?}; the lease is {}, so the \
                     contract says {}",
                    if live { "live" } else { "not live" },
                    if live { "Ok" } else { "Err(LeaseLost)" },
                ));
            }
        }
        let slot = (token.queue.clone(), token.key.clone());
        self.touch(&slot);
        let now = self.now;
        if *completion == Completion::Done {
            self.tasks.remove(&slot);
            return Ok(());
        }
        let expected = self.tasks.get_mut(&slot).expect("a live lease has its task in the model");
        expected.expiry_error_unseen = false;
        let task = &mut expected.task;
        task.lease_expires_at = None;
        task.updated_at = now;
        match completion {
            Completion::Retry { at, error } => {
                task.attempts += 1;
                task.last_error = Some(error.clone());
                task.state = TaskState::Scheduled;
                task.due_at = *at;
            }
            Completion::Reschedule { at } => {
                task.meta.occurrence += 1;
                task.attempts = 0;
                task.last_error = None;
                task.state = TaskState::Scheduled;
                task.due_at = *at;
            }
            Completion::Dead { error } => {
                task.attempts += 1;
                task.last_error = Some(error.clone());
                task.state = TaskState::Dead;
            }
            other => return Err(format!("the model does not know the completion {other:?}")),
        }
        Ok(())
    }

    async fn complete(&mut self, pick: &TokenPick, spec: &CompletionSpec) -> Result<(), String> {
        let Some(token) = self.pick_token(pick) else { return Ok(()) };
        let completion = self.completion(spec, &token);
        let answer = self.store.complete(CompleteRequest::new(token.clone(), completion.clone(), self.now)).await;
        self.expect_completion(&token, &completion, answer)
    }

    async fn complete_many(&mut self, items: &[(TokenPick, CompletionSpec)]) -> Result<(), String> {
        let mut requests = Vec::new();
        for (pick, spec) in items {
            if let Some(token) = self.pick_token(pick) {
                let completion = self.completion(spec, &token);
                requests.push(CompleteRequest::new(token, completion, self.now));
            }
        }
        if requests.is_empty() {
            return Ok(());
        }
        let answers =
            self.store.complete_many(requests.clone()).await.map_err(|e| format!("complete_many failed: {e:?}"))?;
        if answers.len() != requests.len() {
            return Err(format!("complete_many of {} answered {} results", requests.len(), answers.len()));
        }
        // Applied in order: a later completion sees what an earlier one did.
        for (index, (request, answer)) in requests.iter().zip(answers).enumerate() {
            self.expect_completion(&request.token, &request.completion, answer)
                .map_err(|e| format!("completion {index}: {e}"))?;
        }
        Ok(())
    }

    async fn extend(&mut self, pick: &TokenPick, lease_for: Duration) -> Result<(), String> {
        let Some(token) = self.pick_token(pick) else { return Ok(()) };
        let answer = self.store.extend(&token, lease_for, self.now).await;
        let new_expiry = self.now.saturating_add(lease_for);
        match (self.is_live(&token), answer) {
            (true, Ok(expiry)) if expiry == new_expiry => {
                let slot = (token.queue.clone(), token.key.clone());
                self.touch(&slot);
                let now = self.now;
                let task = self.task_mut(&slot);
                task.lease_expires_at = Some(new_expiry);
                task.updated_at = now;
                Ok(())
            }
            (false, Err(Error::LeaseLost)) => Ok(()),
            (live, answer) => Err(format!(
                "extend of {token:?} answered {answer:?}; the lease is {}",
                if live { format!("live, so the contract says Ok({new_expiry})") } else { "not live".into() }
            )),
        }
    }

    async fn release(&mut self, pick: &TokenPick) -> Result<(), String> {
        let Some(token) = self.pick_token(pick) else { return Ok(()) };
        let answer = self.store.release(&token, self.now).await;
        match (self.is_live(&token), answer) {
            (true, Ok(())) => {
                let slot = (token.queue.clone(), token.key.clone());
                self.touch(&slot);
                let now = self.now;
                let task = self.task_mut(&slot);
                task.state = TaskState::Scheduled;
                task.lease_expires_at = None;
                task.updated_at = now;
                Ok(())
            }
            (false, Err(Error::LeaseLost)) => Ok(()),
            (live, answer) => Err(format!(
                "release of {token:?} answered {answer:?}; the lease is {}",
                if live { "live, so the contract says Ok" } else { "not live, so the contract says LeaseLost" }
            )),
        }
    }

    async fn reap(&mut self, limit: u32) -> Result<(), String> {
        let now = self.now;
        let answer = self.store.reap(now, limit).await.map_err(|e| format!("reap failed: {e:?}"))?;
        let mut expired: Vec<(Timestamp, Slot)> = self
            .tasks
            .iter()
            .filter(|(_, expected)| expected.task.state == TaskState::Leased)
            .filter_map(|(slot, expected)| {
                expected.task.lease_expires_at.filter(|expiry| *expiry <= now).map(|expiry| (expiry, slot.clone()))
            })
            .collect();
        expired.sort();
        let count = expired.len().min(limit as usize);
        // Any of the leases expiring at the same instant may go first, so compare the
        // expiries handed out with the earliest `count` ones.
        let expiry_of: BTreeMap<&Slot, Timestamp> = expired.iter().map(|(at, slot)| (slot, *at)).collect();
        let mut reaped_expiries = Vec::new();
        let mut reaped_slots = BTreeSet::new();
        for reaped in &answer.reaped {
            let slot = (reaped.queue.clone(), reaped.key.clone());
            let Some(expiry) = expiry_of.get(&slot) else {
                return Err(format!("reap ended the lease of {}/{}, which has not expired", slot.0, slot.1));
            };
            if !reaped_slots.insert(slot.clone()) {
                return Err(format!("reap named {}/{} twice", slot.0, slot.1));
            }
            reaped_expiries.push(*expiry);
        }
        let earliest: Vec<Timestamp> = expired.iter().take(count).map(|(at, _)| *at).collect();
        if reaped_expiries != earliest {
            let reaped: Vec<String> = answer.reaped.iter().map(|r| format!("{}/{}", r.queue, r.key)).collect();
            let expired: Vec<String> =
                expired.iter().map(|(at, slot)| format!("{}/{} at {at}", slot.0, slot.1)).collect();
            return Err(format!(
                "reap (limit {limit}) ended [{}] (expiries {reaped_expiries:?}); expired leases: [{}], so the \
                 contract says the earliest {count}, earliest first",
                reaped.join(", "),
                expired.join(", ")
            ));
        }
        for reaped in &answer.reaped {
            let slot = (reaped.queue.clone(), reaped.key.clone());
            self.touch(&slot);
            let expected = self.tasks.get_mut(&slot).expect("reaped tasks were checked to be in the model");
            expected.expiry_error_unseen = true;
            let task = &mut expected.task;
            task.attempts += 1;
            task.last_error = None;
            task.lease_expires_at = None;
            task.updated_at = now;
            if task.attempts >= task.max_attempts {
                task.state = TaskState::Dead;
            } else {
                task.state = TaskState::Scheduled;
                task.due_at = now;
            }
            if reaped.state != task.state {
                return Err(format!(
                    "reap left {}/{} {}; with attempts {} of {} the contract says {}",
                    slot.0, slot.1, reaped.state, task.attempts, task.max_attempts, task.state
                ));
            }
        }
        let next_expiry = self
            .tasks
            .values()
            .filter(|expected| expected.task.state == TaskState::Leased)
            .filter_map(|expected| expected.task.lease_expires_at.filter(|expiry| *expiry > now))
            .min();
        if answer.next_expiry != next_expiry {
            return Err(format!(
                "reap answered next_expiry {:?}; the earliest live lease expires at {next_expiry:?}",
                answer.next_expiry
            ));
        }
        Ok(())
    }

    async fn retry_dead(&mut self, slot: &Slot) -> Result<(), String> {
        let answer =
            self.store.retry_dead(&slot.0, &slot.1, self.now).await.map_err(|e| format!("retry_dead failed: {e:?}"))?;
        let dead = self.tasks.get(slot).is_some_and(|expected| expected.task.state == TaskState::Dead);
        match (dead, answer) {
            (true, Some(task)) => {
                self.revive(slot);
                self.check(&task)
            }
            (false, None) => Ok(()),
            (dead, answer) => Err(format!(
                "retry_dead answered {answer:?}; the model {}",
                if dead { "has it dead, so the contract says Some(task)" } else { "has no such dead task" }
            )),
        }
    }

    async fn delete_dead(&mut self, slot: &Slot) -> Result<(), String> {
        let answer =
            self.store.delete_dead(&slot.0, &slot.1).await.map_err(|e| format!("delete_dead failed: {e:?}"))?;
        let dead = self.tasks.get(slot).is_some_and(|expected| expected.task.state == TaskState::Dead);
        if dead {
            self.remove(slot);
        }
        if answer == dead { Ok(()) } else { Err(format!("delete_dead answered {answer}, the model says {dead}")) }
    }

    async fn fail_due(&mut self, queue: QueueName, max: u32) -> Result<(), String> {
        let issued = self.tokens.len();
        self.lease(queue, max, Duration::from_secs(5)).await?;
        let leased: Vec<LeaseToken> = self.tokens.iter().skip(issued).cloned().collect();
        for token in leased {
            let completion = Completion::Dead { error: self.next_error_text() };
            let answer = self.store.complete(CompleteRequest::new(token.clone(), completion.clone(), self.now)).await;
            self.expect_completion(&token, &completion, answer)?;
        }
        Ok(())
    }

    /// The queue's dead tasks in the model.
    fn dead_in<'a>(&'a self, queue: &'a QueueName) -> impl Iterator<Item = (&'a Slot, &'a Task)> + 'a {
        self.tasks
            .iter()
            .filter(move |(slot, expected)| slot.0 == *queue && expected.task.state == TaskState::Dead)
            .map(|(slot, expected)| (slot, &expected.task))
    }

    /// Revives the dead task in `slot` in the model, as `retry_dead` does.
    fn revive(&mut self, slot: &Slot) {
        self.touch(slot);
        let now = self.now;
        let expected = self.task_mut(slot);
        expected.state = TaskState::Scheduled;
        expected.due_at = now;
        expected.attempts = 0;
        expected.updated_at = now;
    }

    async fn retry_dead_many(&mut self, queue: QueueName, which: &DeadPick, limit: u32) -> Result<(), String> {
        let selection = match which {
            DeadPick::EveryDead => DeadSelection::All,
            DeadPick::DeadWithTag(index) => DeadSelection::Tagged(tag(*index)),
            DeadPick::DeadKeys(picks) => DeadSelection::Keys(picks.iter().map(|pick| self.pick_task(pick).1).collect()),
        };
        let selected: Vec<Slot> = self
            .dead_in(&queue)
            .filter(|(slot, task)| match &selection {
                DeadSelection::All => true,
                DeadSelection::Tagged(tag) => task.tags.contains(tag),
                DeadSelection::Keys(keys) => keys.contains(&slot.1),
            })
            .map(|(slot, _)| slot.clone())
            .collect();
        // Keys go at most `limit` per call, as the contract asks of callers.
        let walks = match selection {
            DeadSelection::Keys(keys) => {
                keys.chunks(limit.max(1) as usize).map(|chunk| DeadSelection::Keys(chunk.to_vec())).collect()
            }
            other => vec![other],
        };
        let mut retried = 0;
        for selection in walks {
            let mut request = RetryDeadRequest::new(queue.clone(), selection, limit, self.now);
            for batch_number in 1.. {
                if batch_number > MAX_PAGES * 4 {
                    return Err(format!("the bulk retry did not end after {} batches", MAX_PAGES * 4));
                }
                let batch = self
                    .store
                    .retry_dead_batch(request.clone())
                    .await
                    .map_err(|e| format!("retry_dead_batch {batch_number} of {request:?} failed: {e:?}"))?;
                retried += batch.retried;
                match batch.next_cursor {
                    Some(cursor) => request = request.after(cursor),
                    None => break,
                }
            }
        }
        for slot in &selected {
            self.revive(slot);
        }
        if retried == selected.len() as u64 {
            Ok(())
        } else {
            let names: Vec<String> = selected.iter().map(|slot| slot.1.to_string()).collect();
            Err(format!("the bulk retry retried {retried} tasks; the model has {names:?} dead and selected"))
        }
    }

    async fn sweep_dead(&mut self, queue: QueueName, age: Duration, limit: u32) -> Result<(), String> {
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        let died_by = Timestamp::from_millis(self.now.as_millis() - age_ms);
        let answer = self
            .store
            .sweep_dead(SweepRequest::new(queue.clone(), died_by, limit))
            .await
            .map_err(|e| format!("sweep_dead failed: {e:?}"))?;
        let death_of: BTreeMap<Slot, Timestamp> =
            self.dead_in(&queue).map(|(slot, task)| (slot.clone(), task.updated_at)).collect();
        let mut due: Vec<Timestamp> = death_of.values().copied().filter(|died| *died <= died_by).collect();
        due.sort();
        let count = due.len().min(limit as usize);
        // Which tasks went: every dead one the store no longer has.
        let mut gone = Vec::new();
        for slot in death_of.keys() {
            if self.store.get(&slot.0, &slot.1).await.map_err(|e| format!("get failed: {e:?}"))?.is_none() {
                gone.push(slot.clone());
            }
        }
        let mut deaths: Vec<Timestamp> = gone.iter().map(|slot| death_of[slot]).collect();
        deaths.sort();
        if answer.deleted != count as u64 || deaths != due[..count] {
            return Err(format!(
                "sweep_dead (died by {died_by}, limit {limit}) answered {} deleted and deleted tasks that died at                  {deaths:?}; dead tasks died at {:?}, so the contract says the first {count} of {due:?}",
                answer.deleted,
                death_of.values().collect::<Vec<_>>()
            ));
        }
        for slot in &gone {
            self.remove(slot);
        }
        let oldest = self.dead_in(&queue).map(|(_, task)| task.updated_at).min();
        if answer.oldest_death == oldest {
            Ok(())
        } else {
            Err(format!("sweep_dead answered oldest_death {:?}; the model says {oldest:?}", answer.oldest_death))
        }
    }

    async fn list_page(
        &mut self,
        queue: QueueName,
        filter: StateFilter,
        tag: Option<Tag>,
        limit: u32,
    ) -> Result<(), String> {
        let mut session = match self.paging.take() {
            Some(session) => session,
            None => {
                let state = match filter {
                    StateFilter::AnyState => None,
                    StateFilter::OnlyScheduled => Some(TaskState::Scheduled),
                    StateFilter::OnlyLeased => Some(TaskState::Leased),
                    StateFilter::OnlyDead => Some(TaskState::Dead),
                };
                let in_place = self
                    .tasks
                    .iter()
                    .filter(|(slot, expected)| slot.0 == queue && state.is_none_or(|s| expected.task.state == s))
                    .filter(|(_, expected)| tag.as_ref().is_none_or(|tag| expected.task.tags.contains(tag)))
                    .map(|(slot, expected)| (slot.1.clone(), expected.task.meta.id))
                    .collect();
                PagingSession {
                    queue,
                    state,
                    tag,
                    limit,
                    cursor: None,
                    pages: 0,
                    seen: BTreeMap::new(),
                    in_place,
                    latest_in_place_due: None,
                }
            }
        };
        let mut request = ListRequest::new(session.queue.clone(), session.state, session.limit, session.cursor.clone());
        if let Some(tag) = &session.tag {
            request = request.tagged(tag.clone());
        }
        let page = self.store.list(request).await.map_err(|e| format!("list failed: {e:?}"))?;
        session.pages += 1;
        let what = format!(
            "page {} of {} ({:?}, tag {:?}, limit {})",
            session.pages, session.queue, session.state, session.tag, session.limit
        );
        if page.tasks.len() > session.limit as usize {
            return Err(format!("{what} has {} tasks", page.tasks.len()));
        }
        let mut previous_due = None;
        for task in &page.tasks {
            if task.queue != session.queue || session.state.is_some_and(|state| task.state != state) {
                return Err(format!("{what} returned {}/{} in state {}", task.queue, task.key, task.state));
            }
            if session.tag.as_ref().is_some_and(|tag| !task.tags.contains(tag)) {
                return Err(format!("{what} returned {} with tags {:?}", task.key, task.tags));
            }
            self.check(task).map_err(|e| format!("{what}: {e}"))?;
            if previous_due.is_some_and(|due| task.due_at < due) {
                return Err(format!("{what} is not in due order: {} due {} comes later", task.key, task.due_at));
            }
            previous_due = Some(task.due_at);
            let identity = (task.key.clone(), task.meta.id);
            let times_seen = session.seen.entry(identity.clone()).or_default();
            *times_seen += 1;
            if session.in_place.contains(&identity) {
                if *times_seen > 1 {
                    return Err(format!("{what} returned {} again, though it stayed in place", task.key));
                }
                if session.latest_in_place_due.is_some_and(|due| task.due_at < due) {
                    return Err(format!("{what}: {} due {} comes after a later task", task.key, task.due_at));
                }
                session.latest_in_place_due = Some(task.due_at);
            }
        }
        match page.next_cursor {
            Some(cursor) if session.pages < MAX_PAGES => {
                session.cursor = Some(cursor);
                self.paging = Some(session);
                Ok(())
            }
            Some(_) => Err(format!("paging did not end after {MAX_PAGES} pages")),
            None => {
                let missed: Vec<String> = session
                    .in_place
                    .iter()
                    .filter(|identity| !session.seen.contains_key(*identity))
                    .map(|(key, _)| key.to_string())
                    .collect();
                if missed.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{what} ended the listing without {missed:?}, which stayed in place"))
                }
            }
        }
    }

    async fn stats(&mut self, queue: Option<QueueName>) -> Result<(), String> {
        let answer = self.store.stats(queue.as_ref()).await.map_err(|e| format!("stats failed: {e:?}"))?;
        let expected = self.expected_stats(queue.as_ref());
        if answer == expected {
            Ok(())
        } else {
            Err(format!("stats({queue:?}) answered {answer:?}, the model says {expected:?}"))
        }
    }

    fn expected_stats(&self, queue: Option<&QueueName>) -> Vec<QueueStats> {
        let names: BTreeSet<QueueName> = match queue {
            Some(queue) => BTreeSet::from([queue.clone()]),
            None => self.tasks.keys().map(|slot| slot.0.clone()).collect(),
        };
        names
            .into_iter()
            .map(|name| {
                let tasks: Vec<&Task> =
                    self.tasks.iter().filter(|(slot, _)| slot.0 == name).map(|(_, expected)| &expected.task).collect();
                let count = |state| tasks.iter().filter(|task| task.state == state).count() as u64;
                let next_due_at = self.next_due(&name);
                QueueStats::new(
                    name,
                    count(TaskState::Scheduled),
                    count(TaskState::Leased),
                    count(TaskState::Dead),
                    next_due_at,
                )
            })
            .collect()
    }

    // ---- Observation after each step ----

    async fn observe(&mut self) -> Result<(), String> {
        for queue in 0..QUEUES.len() {
            for key in 0..KEYS.len() {
                self.get(&(queue_name(queue), task_key(key))).await?;
            }
        }
        self.stats(None).await?;
        for queue in 0..=QUEUES.len() {
            self.stats(Some(queue_name(queue))).await?;
        }
        for queue in 0..QUEUES.len() {
            self.list_everything(queue_name(queue)).await?;
            for index in 0..TAGS.len() {
                self.list_tagged_everything(queue_name(queue), tag(index)).await?;
            }
        }
        for expected in self.tasks.values_mut() {
            expected.written = false;
        }
        Ok(())
    }

    /// Lists the queue page by page with nothing in between: exactly the model's tasks,
    /// in due order, ties in a stable order. Remembers that order.
    async fn list_everything(&mut self, queue: QueueName) -> Result<(), String> {
        let expected_count = self.tasks.keys().filter(|slot| slot.0 == queue).count();
        let most_pages = expected_count / OBSERVE_PAGE_LIMIT as usize + 2;
        let mut listed: Vec<Task> = Vec::new();
        let mut cursor = None;
        for page_number in 1.. {
            if page_number > most_pages {
                return Err(format!("listing {queue}: {expected_count} tasks took over {most_pages} pages"));
            }
            let request = ListRequest::new(queue.clone(), None, OBSERVE_PAGE_LIMIT, cursor.take());
            let page = self.store.list(request).await.map_err(|e| format!("list failed: {e:?}"))?;
            if page.tasks.len() > OBSERVE_PAGE_LIMIT as usize {
                return Err(format!("listing {queue}: page {page_number} has {} tasks", page.tasks.len()));
            }
            listed.extend(page.tasks);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        for task in &listed {
            self.check(task).map_err(|e| format!("listing {queue}: {e}"))?;
        }
        let keys: Vec<TaskKey> = listed.iter().map(|task| task.key.clone()).collect();
        let distinct: BTreeSet<&TaskKey> = keys.iter().collect();
        let model_keys: BTreeSet<&TaskKey> =
            self.tasks.keys().filter(|slot| slot.0 == queue).map(|slot| &slot.1).collect();
        if distinct.len() != keys.len() || distinct != model_keys {
            return Err(format!("listing {queue} gave {keys:?}; the model holds {model_keys:?}"));
        }
        if let Some(pair) = listed.windows(2).find(|pair| pair[1].due_at < pair[0].due_at) {
            return Err(format!(
                "listing {queue} is not in due order: {} due {} before {} due {}",
                pair[0].key, pair[0].due_at, pair[1].key, pair[1].due_at
            ));
        }
        // Tasks nobody wrote since the last listing keep their due times, so their
        // relative order may differ only among ties — where the order must be stable.
        let unwritten =
            |key: &TaskKey| self.tasks.get(&(queue.clone(), key.clone())).is_some_and(|expected| !expected.written);
        let before: Vec<&TaskKey> =
            self.listed_order.get(&queue).into_iter().flatten().filter(|key| unwritten(key)).collect();
        let now_listed: Vec<&TaskKey> = keys.iter().filter(|key| unwritten(key)).collect();
        if before != now_listed {
            return Err(format!(
                "listing {queue}: tasks nobody wrote changed order among equal due times, from {before:?} to \
                 {now_listed:?}; ties must be broken by a stable order"
            ));
        }
        self.listed_order.insert(queue, keys);
        Ok(())
    }
}

impl<S: Store> Checker<'_, S> {
    /// Lists the queue's tasks carrying `tag` page by page: exactly the model's, in the
    /// order of the full listing just made.
    async fn list_tagged_everything(&mut self, queue: QueueName, tag: Tag) -> Result<(), String> {
        let mut keys: Vec<TaskKey> = Vec::new();
        let mut cursor = None;
        let most_pages = self.tasks.len() / OBSERVE_PAGE_LIMIT as usize + 2;
        for page_number in 1.. {
            if page_number > most_pages {
                return Err(format!("listing {queue} tagged {tag} took over {most_pages} pages"));
            }
            let request = ListRequest::new(queue.clone(), None, OBSERVE_PAGE_LIMIT, cursor.take()).tagged(tag.clone());
            let page = self.store.list(request).await.map_err(|e| format!("list by tag failed: {e:?}"))?;
            if page.tasks.len() > OBSERVE_PAGE_LIMIT as usize {
                return Err(format!("listing {queue} tagged {tag}: page {page_number} has {} tasks", page.tasks.len()));
            }
            for task in &page.tasks {
                self.check(task).map_err(|e| format!("listing {queue} tagged {tag}: {e}"))?;
            }
            keys.extend(page.tasks.into_iter().map(|task| task.key));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let carrying = |key: &TaskKey| {
            self.tasks.get(&(queue.clone(), key.clone())).is_some_and(|expected| expected.task.tags.contains(&tag))
        };
        let expected: Vec<TaskKey> =
            self.listed_order.get(&queue).into_iter().flatten().filter(|key| carrying(key)).cloned().collect();
        if keys == expected {
            Ok(())
        } else {
            Err(format!(
                "listing {queue} tagged {tag} gave {keys:?}; the model's tasks carrying it, in the order of the                  full listing, are {expected:?}"
            ))
        }
    }
}

/// Every field in which the store's task differs from the model's.
fn differences(actual: &Task, expected: &Task) -> Vec<String> {
    let mut found = Vec::new();
    macro_rules! compare {
        ($($field:ident).+) => {
            if actual.$($field).+ != expected.$($field).+ {
                found.push(format!(
                    "{}: store {:?}, model {:?}",
                    stringify!($($field).+),
                    actual.$($field).+,
                    expected.$($field).+
                ));
            }
        };
    }
    compare!(queue);
    compare!(key);
    compare!(state);
    compare!(due_at);
    compare!(payload);
    compare!(attempts);
    compare!(max_attempts);
    compare!(backoff);
    compare!(repeat);
    compare!(tags);
    compare!(version);
    compare!(created_at);
    compare!(updated_at);
    compare!(lease_expires_at);
    compare!(last_error);
    compare!(meta.store);
    compare!(meta.id);
    compare!(meta.fence);
    compare!(meta.occurrence);
    compare!(meta.anchor);
    if found.is_empty() && actual != expected {
        found.push(format!("store {actual:?}, model {expected:?}"));
    }
    found
}
