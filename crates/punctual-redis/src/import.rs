//! Storing what another store holds (`Store::import`, moving a deployment between
//! stores): its tasks and completion records, grouped by shard, one `lua/import.lua`
//! call per shard and [`SCRIPT_BATCH`] tasks and records, which writes each task in
//! every set of its state (the script's header says how).
//!
//! Invariants: the whole call is refused before anything is written when one task could
//! not have been written by a schedule (a group on a queue split into shards, but in
//! its group's shard by its key's hash tag: [`group_placed`]); every body is encoded
//! before the first script. Each task takes an id of the store's id source as a created
//! one does (one a key already here wastes, as a kept schedule's does), so no id is
//! shared and no lease token of the other store is live here. A shard's heads are
//! forgotten once a script wrote there (an imported task may be due before them; other
//! processes hear the script's wake-ups).

use std::collections::BTreeMap;

use punctual_core::store::{Completed, ImportRequest, Imported};
use punctual_core::{Error, QueueName, Result};

use crate::scripts::ImportedTask;
use crate::tasks::group_placed;
use crate::{SCRIPT_BATCH, Shared, record};

/// The tasks and records of one shard, by their index in the request.
#[derive(Debug, Default)]
struct ShardPart {
    tasks: Vec<usize>,
    records: Vec<usize>,
}

impl Shared {
    pub(crate) async fn import(&self, req: ImportRequest) -> Result<Vec<Imported>> {
        let ImportRequest { tasks, completions, now, .. } = req;
        let mut parts: BTreeMap<(QueueName, u32), ShardPart> = BTreeMap::new();
        let mut bodies = Vec::with_capacity(tasks.len());
        for (i, task) in tasks.iter().enumerate() {
            let sharding = self.sharding(&task.queue, true).await?;
            group_placed(&task.queue, &task.key, task.group.as_ref(), sharding)?;
            let trace = task.traceparent.as_ref();
            bodies.push(record::body(&task.payload, &task.backoff, task.repeat.as_ref(), &task.timing, trace)?);
            parts.entry((task.queue.clone(), sharding.shard_of(&task.key))).or_default().tasks.push(i);
        }
        for (j, done) in completions.iter().enumerate() {
            let shard = self.shard_of(&done.queue, &done.key, true).await?;
            parts.entry((done.queue.clone(), shard)).or_default().records.push(j);
        }
        let mut ids = self.reserve_ids(tasks.len()).await?.into_iter();
        let mut bodies = bodies.into_iter();
        let numbered: Vec<ImportedTask<'_>> = tasks
            .iter()
            .map(|task| ImportedTask {
                task,
                id: ids.next().unwrap_or_default(),
                body: bodies.next().unwrap_or_default(),
            })
            .collect();
        let (numbered, completions) = (&numbered, &completions);
        // The shards concurrently, each shard's scripts in order.
        let writes = parts.iter().map(|((queue, shard), part)| async move {
            let mut answered = Vec::with_capacity(part.tasks.len());
            let batches = part.tasks.len().max(part.records.len()).div_ceil(SCRIPT_BATCH);
            for batch in 0..batches {
                let window = |indices: &[usize]| {
                    let start = (batch * SCRIPT_BATCH).min(indices.len());
                    indices[start..(start + SCRIPT_BATCH).min(indices.len())].to_vec()
                };
                let (task_indices, record_indices) = (window(&part.tasks), window(&part.records));
                let batch_tasks: Vec<&ImportedTask<'_>> = task_indices.iter().map(|&i| &numbered[i]).collect();
                let batch_records: Vec<&Completed> = record_indices.iter().map(|&j| &completions[j]).collect();
                let arming = self.heads.arming(queue, *shard);
                let written = self.on(queue, *shard).import(&batch_tasks, &batch_records, now).await?;
                if written.iter().any(|&w| w) {
                    self.heads.forget(queue, *shard);
                }
                arming.done();
                answered.extend(task_indices.into_iter().zip(written));
            }
            self.replicate(queue, *shard).await?;
            Ok::<_, Error>(answered)
        });
        let mut answers: Vec<Option<Imported>> = vec![None; tasks.len()];
        for (i, written) in futures_util::future::try_join_all(writes).await?.into_iter().flatten() {
            answers[i] = Some(if written { Imported::Written } else { Imported::Present });
        }
        answers.into_iter().map(|a| a.ok_or_else(|| Error::Internal("a task got no answer".into()))).collect()
    }
}
