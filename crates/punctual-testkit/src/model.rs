//! The model test: random operation sequences applied side by side to a real [`Store`]
//! and to a fresh [`MemoryStore`], the reference store built on the pure transitions of
//! `punctual_core::transitions`, comparing every answer and, after every step,
//! everything a caller can observe. The expected behaviour is the reference's: this
//! module holds no model of its own, only the comparison.
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
//! - Each operation goes to both stores with the same arguments (lease tokens are kept
//!   in pairs, one per store); their answers must agree.
//! - After each step every (queue, key) is read from both with `get`, `stats` is asked
//!   for every queue and for all, and each queue is listed page by page in both, in all
//!   and by each tag (a listing by tag keeps the full listing's order).
//! - [`Op::ListPage`] pages through a queue of the real store one page per step, with
//!   other operations in between: every task nobody wrote or deleted meanwhile must be
//!   visited exactly once.
//! - [`Op::RetryDeadMany`] runs a whole bulk retry (every batch, following the cursor)
//!   in one step; [`Op::SweepDead`] one retention sweep; [`Op::Purge`] a whole purge
//!   (every batch until one cancels none: which tasks a batch takes is the store's
//!   choice, what the whole purge leaves is not).
//! - At the end both stores are closed; a later call must fail with `Unavailable`.
//!
//! What the contract leaves to each store is still checked strictly (`compare`):
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
//!   same instant, and `lease` among tasks due at the same instant. The reference is
//!   told the store's choice ([`MemoryStore::prefer_among_ties`]) before it answers, so
//!   both go on holding the same tasks.
//!
//! Durability across closing and reopening a store is not checked here: the crash tests
//! cover it with a real `kill -9` of a real process.
//!
//! Use [`store_model_test!`](crate::store_model_test). A failure prints the minimal
//! sequence as Rust; paste it into [`replay`] for a regression test.

mod compare;
mod twin;

use std::future::Future;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use punctual_core::{Error, Group, MemoryStore, QueueName, Store, Tag, TaskKey, Timestamp};
use serde_json::{Value, json};

/// Expands to a `#[test]` that runs random operation sequences against the store made
/// by `factory` and compares each with the reference store. `factory()` must return a future
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
    // For stores whose queues refuse groups (a Redis queue split into shards): the
    // sequences schedule no task in a group.
    ($factory:expr, groups: refused) => {
        #[test]
        fn random_operations_without_groups_agree_with_the_model() {
            $crate::model::check_store_against_model_without_groups($factory);
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
/// Groups, by index into [`ScheduleItem::group`].
const GROUPS: [&str; 3] = ["customer-42", "customer-7", "客户 9"];
/// Where the virtual clock starts: 2026-01-01T00:00:00Z.
const START: Timestamp = Timestamp::from_millis(1_767_225_600_000);

const DEFAULT_CASES: u32 = 64;
/// The runners that share the cases out, one thread each: more than this machine's
/// two cores, since a case mostly waits on its store.
const RUNNERS: u32 = 4;
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
        /// The queue's `group_concurrency`, if any.
        group_limit: Option<u32>,
        /// The queue's `group_rate`, if any: a count per so many seconds.
        group_rate: Option<(u32, u64)>,
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
    /// A whole purge of the queue's tasks in the selection: `purge` batches of `limit`
    /// until one cancels none.
    Purge {
        queue: usize,
        which: PurgePick,
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
    /// `import` of the task `from` names, as the reference holds it (in any state), under
    /// the key `key` of its queue: as if it came from another store.
    Import {
        from: TaskPick,
        key: usize,
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
    /// The task's priority, 0–9: a few levels, so that equal priorities are common.
    pub priority: u8,
    /// A debounced schedule's `max_wait`, in ms.
    pub debounce_ms: Option<u64>,
    /// Index into [`GROUPS`]: the task's group, if any.
    pub group: Option<usize>,
    /// A dedupe window in ms, and whether it counts a task that went dead.
    pub unique: Option<(u64, bool)>,
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
            priority: 0,
            debounce_ms: None,
            group: None,
            unique: None,
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
    /// One of the tasks the stores hold (any slot when there are none).
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

/// Which tasks a purge cancels (`PurgeSelection`, named apart for [`ops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgePick {
    PurgeScheduled,
    PurgeDead,
    PurgeAll,
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
    pub use super::PurgePick::*;
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
        5 => (
            queue.clone(),
            1u32..=3,
            1u64..=5,
            proptest::option::weighted(0.5, 1u32..=2),
            proptest::option::weighted(0.3, (1u32..=2, 1u64..=10))
        )
            .prop_map(|(queue, max, lease_secs, group_limit, group_rate)| Op::Lease {
                queue,
                max,
                lease_secs,
                group_limit,
                group_rate
            }),
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
        1 => (queue.clone(), purge_pick(), 1u32..=3).prop_map(|(queue, which, limit)| Op::Purge { queue, which, limit }),
        2 => (queue, state_filter(), proptest::option::weighted(0.4, 0..TAGS.len()), 1u32..=3)
            .prop_map(|(queue, state, tag, limit)| Op::ListPage { queue, state, tag, limit }),
        1 => proptest::option::of(0..=QUEUES.len()).prop_map(|queue| Op::Stats { queue }),
        2 => (task_pick(), 0..KEYS.len()).prop_map(|(from, key)| Op::Import { from, key }),
        5 => (0u64..=20).prop_map(|halves| Op::Advance { ms: halves * 500 }),
    ]
}

prop_compose! {
    fn schedule_item()(
        queue in 0..QUEUES.len(),
        key in 0..KEYS.len(),
        due_ms in due_offset(),
        payload in 0usize..5,
        max_attempts in 1u32..=3,
        tags in 0u8..(1 << TAGS.len()),
        repeat in proptest::option::weighted(0.3, repeat_spec()),
        if_exists in prop_oneof![3 => Just(Exists::Replace), 1 => Just(Exists::Keep), 1 => Just(Exists::Refuse)],
        custom_backoff in proptest::bool::weighted(0.2),
        priority in prop_oneof![4 => Just(0u8), 1 => Just(4u8), 1 => Just(9u8)],
        debounce_ms in proptest::option::weighted(0.25, (1u64..=4).prop_map(|secs| secs * 1000)),
        group in proptest::option::weighted(0.4, 0..GROUPS.len()),
        // Whole 5 s: a window ends within a sequence's few Advances, yet outlasts the
        // real time a sequence takes (a Redis record's key expires by Redis' clock).
        unique in proptest::option::weighted(0.25, ((1u64..=4).prop_map(|n| n * 5000), proptest::bool::ANY)),
    ) -> ScheduleItem {
        ScheduleItem {
            queue, key, due_ms, payload, max_attempts, tags, repeat, if_exists, custom_backoff, priority, debounce_ms, group,
            unique,
        }
    }
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

fn purge_pick() -> impl Strategy<Value = PurgePick> {
    prop_oneof![Just(PurgePick::PurgeScheduled), Just(PurgePick::PurgeDead), Just(PurgePick::PurgeAll)]
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
/// compared with the reference store. Panics with the minimal failing sequence.
pub fn check_store_against_model<F, Fut, S, G>(factory: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    check_sequences(factory, || operations().boxed());
}

/// [`check_store_against_model`] with sequences that put no task in a group.
pub fn check_store_against_model_without_groups<F, Fut, S, G>(factory: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    let ungrouped = || {
        operations()
            .prop_map(|mut ops| {
                for op in &mut ops {
                    if let Op::Schedule(items) = op {
                        items.iter_mut().for_each(|item| item.group = None);
                    }
                }
                ops
            })
            .boxed()
    };
    check_sequences(factory, ungrouped);
}

/// The property over the sequences `sequences` makes (on each runner's thread).
fn check_sequences<F, Fut, S, G>(factory: F, sequences: fn() -> BoxedStrategy<Vec<Op>>)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = (S, G)>,
    S: Store,
{
    let from_env = |name: &str| std::env::var(name).ok().and_then(|n| n.parse().ok());
    let cases: u32 = from_env("PROPTEST_CASES").unwrap_or(DEFAULT_CASES);
    let config = Config {
        // Enough to shrink a 40-step failure to the few steps that matter, within a time
        // a failing CI run can afford (each shrink step runs a case on a fresh store).
        max_shrink_iters: from_env("PROPTEST_MAX_SHRINK_ITERS").unwrap_or(MAX_SHRINK_ITERS),
        max_shrink_time: from_env("PROPTEST_MAX_SHRINK_TIME").unwrap_or(MAX_SHRINK_MILLIS),
        // Failures are kept as plain regression tests calling `replay`, not in files.
        failure_persistence: None,
        ..Config::default()
    };
    // The cases are independent (each on a fresh store), so they are shared out among
    // runners on their own threads, each with its own random seed: a store answering
    // over a socket spends most of a case waiting, and the runners overlap the waits.
    let shares = (0..RUNNERS).map(|runner| cases / RUNNERS + u32::from(runner < cases % RUNNERS));
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = shares
            .filter(|&share| share > 0)
            .map(|share| {
                let (factory, config) = (&factory, config.clone());
                scope.spawn(move || {
                    let mut runner = TestRunner::new(Config { cases: share, ..config });
                    runner.run(&sequences(), |ops| run_case(factory, &ops).map_err(TestCaseError::fail))
                })
            })
            .collect();
        runs.into_iter()
            .filter_map(|run| match run.join() {
                Ok(Ok(())) => None,
                Ok(Err(TestError::Fail(reason, ops))) => Some(format!(
                    "the store disagrees with the reference store: {reason}\n\nminimal failing sequence, for \
                     `punctual_testkit::model::replay` (with `use punctual_testkit::model::ops::*;`):\n{}",
                    as_rust(&ops)
                )),
                Ok(Err(TestError::Abort(reason))) => Some(format!("the model test gave up: {reason}")),
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    if let Some(first) = failures.first() {
        panic!("{first}");
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
        panic!("the store disagrees with the reference store: {reason}");
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
            let reference = MemoryStore::new();
            twin::Twin::new(&store, &reference).run(ops).await?;
            closed(&store).await.map_err(|e| format!("the store: {e}"))?;
            closed(&reference).await.map_err(|e| format!("the reference store: {e}"))
        })
        .await
        .unwrap_or_else(|_| Err(format!("the store stopped answering: the case took over {CASE_TIMEOUT:?}")));
        drop(store);
        drop(guard);
        outcome
    })
}

/// After `close`, a call must fail with `Unavailable`.
async fn closed(store: &impl Store) -> Result<(), String> {
    store.close().await.map_err(|e| format!("close failed: {e:?}"))?;
    match store.get(&queue_name(0), &task_key(0)).await {
        Err(Error::Unavailable(_)) => Ok(()),
        other => Err(format!("get after close must fail with Unavailable, it answered {other:?}")),
    }
}

/// (queue, key): where a task lives.
type Slot = (QueueName, TaskKey);

fn queue_name(index: usize) -> QueueName {
    let name = QUEUES.get(index).copied().unwrap_or(QUEUE_NEVER_USED);
    QueueName::new(name).expect("the model's queue names are valid")
}

fn task_key(index: usize) -> TaskKey {
    TaskKey::new(KEYS[index % KEYS.len()]).expect("the model's keys are valid")
}

fn group(index: usize) -> Group {
    Group::new(GROUPS[index % GROUPS.len()]).expect("the model's groups are valid")
}

fn tag(index: usize) -> Tag {
    Tag::new(TAGS[index % TAGS.len()]).expect("the model's tags are valid")
}
