//! Outbox rows applied once ([`Store::apply_once`](punctual_core::Store::apply_once)):
//! a row's effect and its mark are written by one script, in the shard the call it
//! stands for writes, and a script that finds the row's mark there changes nothing and
//! answers so.
//!
//! Invariants: marks live per shard (`…:outbox`, see `keys`), under the shard's hash
//! tag, so the mark and the effect are one atomic script on one node; a row applies
//! through the very paths of its call (`schedule_in_shard`, `delete_applying`,
//! `cancel_tag_in_shard`), so this process's heads, wake-ups and replica waits follow
//! as they follow the call. A schedule the store refuses (a conflict, a group off its
//! shard) writes no mark. A cancel by tag on a queue of several shards applies in parts,
//! one per shard, each with its own mark (written by the shard's last script, see
//! `lua/cancel_tag.lua`): a row read again after some parts applied applies the rest;
//! it answers `None` only when every shard had the mark, else the sum of what the
//! shards cancelled in this call. A shard's part of more than
//! [`SCRIPT_BATCH`](crate::SCRIPT_BATCH) tasks takes several scripts (none holds Redis
//! for long), the last writing the mark: a process that dies between them leaves the
//! part unmarked, and the row read again cancels the tag's tasks the shard then holds,
//! finishing the part, which the mark then closes.

use punctual_core::store::{ApplyOnceRequest, OnceEffect, OnceOp, Scheduled};
use punctual_core::{Error, NewTask, Result};

use crate::Shared;
use crate::scripts::{DeleteIf, RowMark};
use crate::tasks::placed_with_its_group;

impl Shared {
    pub(crate) async fn apply_once(&self, req: ApplyOnceRequest) -> Result<Option<OnceEffect>> {
        let mark = req.row.mark();
        let row = RowMark { mark: &mark, now: req.now };
        match req.op {
            OnceOp::Schedule(task) => Ok(self
                .schedule_applying(*task, row)
                .await?
                .map(|scheduled| OnceEffect::Scheduled(Box::new(scheduled)))),
            OnceOp::Cancel { queue, key } => {
                Ok(self.delete_applying(&queue, &key, DeleteIf::Any, None, Some(row)).await?.map(OnceEffect::Cancelled))
            }
            OnceOp::CancelTag { queue, tag } => {
                let mut cancelled = None;
                for shard in 0..self.shard_count(&queue, false).await? {
                    if let Some(count) = self.cancel_tag_in_shard(&queue, shard, &tag, None, Some(row)).await? {
                        cancelled = Some(cancelled.unwrap_or(0) + count);
                    }
                }
                Ok(cancelled.map(OnceEffect::CancelledTag))
            }
        }
    }

    /// The schedule of one task, as [`Shared::schedule`] writes it, applying `row`.
    /// Waits for replicas even when the mark was there, as `delete_applying` does.
    async fn schedule_applying(&self, task: NewTask, row: RowMark<'_>) -> Result<Option<Scheduled>> {
        let sharding = self.sharding(&task.queue, true).await?;
        placed_with_its_group(&task, sharding)?;
        let shard = sharding.shard_of(&task.key);
        let id = self.reserve_ids(1).await?.pop().ok_or_else(|| Error::Internal("no task id reserved".into()))?;
        let answers = self.schedule_in_shard(&task.queue, shard, &[(&task, id)], row.now, Some(row)).await?;
        self.replicate(&task.queue, shard).await?;
        let Some(answers) = answers else { return Ok(None) };
        let answer = answers.into_iter().next().ok_or_else(|| Error::Internal("the task got no answer".into()))?;
        answer.map(Some)
    }
}
