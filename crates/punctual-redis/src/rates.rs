//! Rate-limit slots kept in Redis ([`RedisRates`], `lua/rate.lua`), shared by every
//! process using the store.
//!
//! Invariant: at most `count` slots of a queue start in any window of `per`, counted
//! across every process on the same Redis, on Redis' clock (or the caller's, with
//! [`TimeSource::Caller`](crate::TimeSource::Caller)).

use std::sync::Arc;
use std::time::Duration;

use punctual_core::policy::Rate;
use punctual_core::{QueueName, Result, Timestamp};

use crate::Shared;

/// The rate-limit slots of a store's queues, kept in Redis: at most `count` slots of a
/// queue start in any window of `per`, counted across every process using the store
/// (a sliding log per queue, `lua/rate.lua`). Cheap to clone; calls after the store
/// closed fail with `Unavailable`.
#[derive(Debug, Clone)]
pub struct RedisRates {
    pub(crate) shared: Arc<Shared>,
}

impl RedisRates {
    /// Atomically takes a slot of `queue`'s `rate` when fewer than `rate.count` started
    /// in the window of `rate.per` before now: `None`. Otherwise takes nothing and
    /// answers how long until the window's oldest slot frees. Now is Redis' `TIME`
    /// ([`TimeSource::Redis`](crate::TimeSource::Redis)) or `now`
    /// ([`TimeSource::Caller`](crate::TimeSource::Caller)).
    pub async fn take(&self, queue: &QueueName, rate: Rate, now: Timestamp) -> Result<Option<Duration>> {
        self.shared.check_open()?;
        let wait = self.shared.take_rate_slot(queue, rate, now).await?;
        Ok((wait > 0).then(|| Duration::from_millis(wait)))
    }
}
