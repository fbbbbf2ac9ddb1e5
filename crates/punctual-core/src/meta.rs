//! A task's store bookkeeping ([`TaskMeta`]): what fences its leases and identifies its
//! deliveries. Its own module below `model` and `policy`, which both read it (a
//! repeat's next occurrence counts from its anchor), so neither imports the other back.

use crate::identity::StoreId;
use crate::time::Timestamp;

/// Bookkeeping every store keeps per task, so leases can be fenced and deliveries
/// identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TaskMeta {
    /// The store holding the task (stamped by the store on every task it returns):
    /// delivery ids of different stores, or of one store before and after it was
    /// emptied, never meet.
    pub store: StoreId,
    /// Unique per creation of (queue, key) for the life of the store: a task that is
    /// deleted and created again gets a new id.
    pub id: u64,
    /// Raised at each lease of this task (never repeats, even across restarts); a lease
    /// is live only while it holds the newest.
    pub fence: u64,
    /// The current occurrence, from 1: bumped by a reschedule or a repeat, reset by a
    /// replace.
    pub occurrence: u32,
    /// The due time of the first occurrence: repeats are fixed-rate from here.
    pub anchor: Timestamp,
    /// While a debounce burst lasts (see [`NewTask::debounce`](crate::NewTask::debounce)):
    /// the latest due time a debounced schedule may give the task, its first
    /// debounced schedule's time plus `max_wait`. Set only on a `scheduled` task that
    /// has not been leased since that schedule; `None` otherwise.
    pub debounce_until: Option<Timestamp>,
}

impl TaskMeta {
    /// Bookkeeping from its parts (for stores).
    pub fn new(store: StoreId, id: u64, fence: u64, occurrence: u32, anchor: Timestamp) -> TaskMeta {
        TaskMeta { store, id, fence, occurrence, anchor, debounce_until: None }
    }
}
