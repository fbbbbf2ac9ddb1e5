//! A queue's `rate` across every server sharing one Redis: the Redis store's slots
//! ([`RedisRates`], one script call per slot on Redis' clock) behind the actions'
//! [`RateSlots`] seam. With the embedded store there is one process, and its actions
//! count their slots in memory.

use punctual_actions::{Rate, RateSlots, Slot, SlotFuture};
use punctual_core::{QueueName, Timestamp};
use punctual_redis::RedisRates;

/// Rate-limit slots in Redis, for the push actions.
#[derive(Debug)]
pub(crate) struct SharedRates(pub(crate) RedisRates);

impl RateSlots for SharedRates {
    fn take<'a>(&'a self, queue: &'a QueueName, rate: Rate, now: Timestamp) -> SlotFuture<'a> {
        Box::pin(async move {
            Ok(match self.0.take(queue, rate, now).await? {
                None => Slot::Taken,
                Some(wait) => Slot::Full(wait),
            })
        })
    }
}
