//! Writing and reading tasks by key, and cancelling many: schedule (a batch, grouped
//! by shard), get, cancel, cancel_tag, purge.
//!
//! Invariants: a batch is applied one script per shard and [`SCRIPT_BATCH`] tasks, in
//! the batch's order within each shard (one key is always in one shard, so a key
//! given twice sees its first write); every write waits for replicas when so
//! configured before it is answered. On a queue split into shards a group's counts,
//! turn and slots live in one shard, so a task with a group is written only where its
//! key carries the group as hash tag (`{customer-42}order-1`, which places it in the
//! group's shard); any other is refused ([`Error::Invalid`] on `group`) and changes
//! nothing.

use std::collections::BTreeMap;

use punctual_core::store::{PurgeRequest, ScheduleOutcome, Scheduled};
use punctual_core::{Actor, Error, Group, Lane, NewTask, Priority, QueueName, Result, Tag, Task, TaskKey, Timestamp};

use crate::heads::lane_slot;
use crate::keys::{self, ShardKeys};
use crate::scripts::{DeleteIf, RowMark};
use crate::shards::Sharding;
use crate::{SCRIPT_BATCH, Shared, record};

impl Shared {
    pub(crate) async fn schedule(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        let mut ids = self.reserve_ids(tasks.len()).await?.into_iter();
        let mut results: Vec<Option<Result<Scheduled>>> = (0..tasks.len()).map(|_| None).collect();
        // Group by shard, keeping each group's order.
        let mut groups: BTreeMap<(QueueName, u32), Vec<usize>> = BTreeMap::new();
        for (i, task) in tasks.iter().enumerate() {
            let sharding = self.sharding(&task.queue, true).await?;
            if let Err(refused) = placed_with_its_group(task, sharding) {
                results[i] = Some(Err(refused));
                continue;
            }
            groups.entry((task.queue.clone(), sharding.shard_of(&task.key))).or_default().push(i);
        }
        // Ids in the order of the call, then the shards concurrently (each shard's
        // scripts in order): a batch spread over k shards waits for the slowest
        // shard, not for k scripts in a row.
        let groups: Vec<_> = groups
            .into_iter()
            .map(|(place, indices)| {
                let numbered: Vec<(usize, u64)> =
                    indices.into_iter().map(|i| (i, ids.next().unwrap_or_default())).collect();
                (place, numbered)
            })
            .collect();
        let tasks = &tasks;
        let writes = groups.iter().map(|((queue, shard), numbered)| async move {
            let mut answered = Vec::with_capacity(numbered.len());
            for chunk in numbered.chunks(SCRIPT_BATCH) {
                let batch: Vec<(&NewTask, u64)> = chunk.iter().map(|&(i, id)| (&tasks[i], id)).collect();
                // Without a row, never `None`: a task without an answer is an error below.
                let answers = self.schedule_in_shard(queue, *shard, &batch, now, None).await?.unwrap_or_default();
                answered.extend(chunk.iter().map(|&(i, _)| i).zip(answers));
            }
            self.replicate(queue, *shard).await?;
            Ok::<_, Error>(answered)
        });
        for (i, answer) in futures_util::future::try_join_all(writes).await?.into_iter().flatten() {
            results[i] = Some(answer);
        }
        results.into_iter().map(|r| r.ok_or_else(|| Error::Internal("a task got no answer".into()))).collect()
    }

    /// One schedule script on `shard` of `queue` (applying `row` when given), and what
    /// this process's heads learn from it: `None` when the row's mark was there.
    pub(crate) async fn schedule_in_shard(
        &self,
        queue: &QueueName,
        shard: u32,
        batch: &[(&NewTask, u64)],
        now: Timestamp,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<Vec<Result<Scheduled>>>> {
        let arming = self.heads.arming(queue, shard);
        let answers = self.on(queue, shard).schedule(batch, now, row).await?;
        if let Some(answers) = answers.as_deref().filter(|_| self.sharded(queue)) {
            self.note_written(queue, shard, answers);
        }
        arming.done();
        Ok(answers)
    }

    /// Tells this process's shard heads what one schedule script wrote, so its leases
    /// know at once (other processes hear the wake-up): the earliest task created in
    /// each lane and of each priority lowers that lane's head (and band); a replace may
    /// have moved the head later, so the shard's heads are read again.
    fn note_written(&self, queue: &QueueName, shard: u32, answers: &[Result<Scheduled>]) {
        let mut created: BTreeMap<(usize, Priority), Timestamp> = BTreeMap::new();
        let mut replaced = false;
        for (written, task) in answers.iter().flatten().filter_map(|written| Some((written, written.task.as_ref()?))) {
            if written.outcome == ScheduleOutcome::Created {
                let slot = created.entry((lane_slot(task.lane()), task.priority)).or_insert(Timestamp::MAX);
                *slot = (*slot).min(task.due_at);
            } else if written.outcome == ScheduleOutcome::Replaced {
                replaced = true;
            }
        }
        for lane in Lane::ALL {
            for (&(_, priority), &due) in
                created.range((lane_slot(lane), Priority::LOWEST)..=(lane_slot(lane), Priority::HIGHEST))
            {
                self.heads.lower(queue, lane, shard, priority, due);
            }
        }
        if replaced {
            self.heads.forget(queue, shard);
        }
    }

    pub(crate) async fn get(&self, queue: &QueueName, key: &TaskKey) -> Result<Option<Task>> {
        let shard = self.shard_of(queue, key, false).await?;
        let keys = ShardKeys::new(&self.config.prefix, queue, shard);
        let record: Option<Vec<u8>> = self.conn.query(redis::cmd("HGET").arg(&keys.tasks).arg(key.as_str())).await?;
        record.map(|r| record::decode(self.identity.current(), queue, key.as_str(), &r)).transpose()
    }

    /// Each task as [`Shared::get`] reads it, with one `HMGET` per shard (shards
    /// concurrently) instead of a command per key.
    pub(crate) async fn get_many(&self, keys: Vec<(QueueName, TaskKey)>) -> Result<Vec<Option<Task>>> {
        let mut by_shard: BTreeMap<(&QueueName, u32), Vec<usize>> = BTreeMap::new();
        for (i, (queue, key)) in keys.iter().enumerate() {
            by_shard.entry((queue, self.shard_of(queue, key, false).await?)).or_default().push(i);
        }
        let reads = by_shard.into_iter().map(|((queue, shard), indices)| {
            let tasks = ShardKeys::new(&self.config.prefix, queue, shard).tasks;
            let mut hmget = redis::cmd("HMGET");
            hmget.arg(&tasks);
            for &i in &indices {
                hmget.arg(keys[i].1.as_str());
            }
            async move {
                let records: Vec<Option<Vec<u8>>> = self.conn.query(&hmget).await?;
                Ok::<_, Error>((indices, records))
            }
        });
        let mut tasks: Vec<Option<Task>> = keys.iter().map(|_| None).collect();
        for (indices, records) in futures_util::future::try_join_all(reads).await? {
            for (i, record) in indices.into_iter().zip(records) {
                let (queue, key) = &keys[i];
                tasks[i] =
                    record.map(|r| record::decode(self.identity.current(), queue, key.as_str(), &r)).transpose()?;
            }
        }
        Ok(tasks)
    }

    pub(crate) async fn cancel(&self, queue: &QueueName, key: &TaskKey, by: Option<&Actor>) -> Result<bool> {
        self.delete(queue, key, DeleteIf::Any, by).await
    }

    /// Deletes `key` (only if dead, with [`DeleteIf::Dead`]) by `by`; whether it was
    /// there.
    pub(crate) async fn delete(
        &self,
        queue: &QueueName,
        key: &TaskKey,
        only: DeleteIf,
        by: Option<&Actor>,
    ) -> Result<bool> {
        // Without a row, never `None`.
        Ok(self.delete_applying(queue, key, only, by, None).await?.unwrap_or_default())
    }

    /// [`Shared::delete`], applying `row` when given: `None` when its mark was there.
    /// Waits for replicas either way: the mark found may be a write a process that
    /// died left unreplicated, and the row is deleted once this answers.
    pub(crate) async fn delete_applying(
        &self,
        queue: &QueueName,
        key: &TaskKey,
        only: DeleteIf,
        by: Option<&Actor>,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<bool>> {
        let shard = self.shard_of(queue, key, false).await?;
        let deleted = self.on(queue, shard).delete(key, only, by, row).await?;
        if deleted == Some(true) {
            self.heads.forget(queue, shard);
        }
        self.replicate(queue, shard).await?;
        Ok(deleted)
    }

    /// Shard by shard, [`SCRIPT_BATCH`] tasks per script until a script finds fewer.
    pub(crate) async fn cancel_tag(&self, queue: &QueueName, tag: &Tag, by: Option<&Actor>) -> Result<u64> {
        let mut total = 0;
        for shard in 0..self.shard_count(queue, false).await? {
            // Without a row, never `None`.
            total += self.cancel_tag_in_shard(queue, shard, tag, by, None).await?.unwrap_or_default();
        }
        Ok(total)
    }

    /// Deletes the tasks of `shard` carrying `tag`, [`SCRIPT_BATCH`] per script until a
    /// script finds fewer (which, applying `row`, writes its mark); how many. `None`
    /// when `row`'s mark was there at the first script; a later script that finds it
    /// (another process applied the row's part meanwhile) ends the part. Waits for
    /// replicas either way, as [`Shared::delete_applying`].
    pub(crate) async fn cancel_tag_in_shard(
        &self,
        queue: &QueueName,
        shard: u32,
        tag: &Tag,
        by: Option<&Actor>,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<u64>> {
        let mut total = None;
        loop {
            let Some(deleted) = self.on(queue, shard).cancel_tag(tag, SCRIPT_BATCH, by, row).await? else { break };
            if deleted > 0 {
                self.heads.forget(queue, shard);
            }
            total = Some(total.unwrap_or(0) + deleted);
            if deleted < SCRIPT_BATCH as u64 {
                break;
            }
        }
        self.replicate(queue, shard).await?;
        Ok(total)
    }

    /// Shard by shard, in scripts of at most [`SCRIPT_BATCH`], until `limit` tasks are
    /// deleted or no shard holds more of the selection.
    pub(crate) async fn purge(&self, req: &PurgeRequest) -> Result<u64> {
        let mut left = req.limit as usize;
        let mut total = 0;
        for shard in 0..self.shard_count(&req.queue, false).await? {
            let mut deleted = 0;
            while left > 0 {
                let purged =
                    self.on(&req.queue, shard).purge(req.selection, left.min(SCRIPT_BATCH), req.by.as_ref()).await?;
                deleted += purged.deleted;
                left -= purged.deleted as usize;
                if !purged.more {
                    break;
                }
            }
            if deleted > 0 {
                self.heads.forget(&req.queue, shard);
                self.replicate(&req.queue, shard).await?;
            }
            total += deleted;
        }
        Ok(total)
    }
}

/// Whether `task` may be written on its queue, sharded as `sharding`: a task with a
/// group must be placed in its group's shard, by its key's hash tag.
pub(crate) fn placed_with_its_group(task: &NewTask, sharding: Sharding) -> Result<()> {
    group_placed(&task.queue, &task.key, task.group.as_ref(), sharding)
}

/// [`placed_with_its_group`] of the task `key` of `queue` with `group`.
pub(crate) fn group_placed(queue: &QueueName, key: &TaskKey, group: Option<&Group>, sharding: Sharding) -> Result<()> {
    let Some(group) = group.filter(|_| sharding.count > 1) else { return Ok(()) };
    let shards = sharding.count;
    if !sharding.hash_tags {
        return Err(Error::invalid(
            "group",
            format!(
                "queue '{queue}' has {shards} shards and was first written by an earlier punctual, which places \
                 keys without reading hash tags, so a group's tasks cannot share a shard there; schedule grouped \
                 tasks on a queue first written by this version, or on a queue of one shard"
            ),
        ));
    }
    if keys::hash_tag(key.as_str()) != Some(group.as_str()) {
        return Err(Error::invalid(
            "group",
            format!(
                "queue '{queue}' has {shards} shards: a task with a group must carry the group as its key's hash \
                 tag, as in '{{{group}}}{key}', so that the group's tasks share one shard, where its limits are \
                 kept; key '{key}' does not"
            ),
        ));
    }
    Ok(())
}
