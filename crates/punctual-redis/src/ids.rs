//! Task ids, reserved from Redis' counter (`<p>:ids`, `lua/ids.lua`) in blocks of
//! [`ID_BLOCK`], so creating tasks costs no extra round trip.
//!
//! Invariants: an id is handed out at most once by any process (each block is the
//! counter's own increment); ids of one process increase; a process that gives up
//! waiting mid-refill only skips ids, it never repeats one.

use punctual_core::{Error, Result};

use crate::Shared;

/// Ids reserved per round trip (more when one batch needs more).
const ID_BLOCK: u64 = 4096;

/// The ids this process reserved and has not handed out yet: `next..end`.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    block: tokio::sync::Mutex<IdBlock>,
}

#[derive(Debug, Default)]
struct IdBlock {
    next: u64,
    end: u64,
}

impl Shared {
    /// `n` fresh task ids, within the operation timeout. Waiting for the block's lock
    /// counts against it: callers queued behind a refill that Redis does not answer
    /// each fail within the timeout, instead of each waiting out the timeouts of the
    /// callers before them (with Redis frozen, the k-th of a burst of schedules waited
    /// k timeouts, past the request timeout). Giving up mid-refill only skips ids.
    pub(crate) async fn reserve_ids(&self, n: usize) -> Result<Vec<u64>> {
        let timeout = self.config.op_timeout;
        tokio::time::timeout(timeout, self.reserve_ids_waiting(n)).await.unwrap_or_else(|_| {
            Err(Error::Unavailable(format!("Redis did not answer within {timeout:?} (reserving task ids)")))
        })
    }

    /// [`Shared::reserve_ids`] without the overall time limit.
    async fn reserve_ids_waiting(&self, n: usize) -> Result<Vec<u64>> {
        let mut block = self.ids.block.lock().await;
        let mut ids = Vec::with_capacity(n);
        while ids.len() < n {
            if block.next >= block.end {
                let want = ID_BLOCK.max((n - ids.len()) as u64);
                let end = self.reserve_id_block(want).await?;
                block.next = end - want + 1;
                block.end = end + 1;
            }
            ids.push(block.next);
            block.next += 1;
        }
        Ok(ids)
    }
}
