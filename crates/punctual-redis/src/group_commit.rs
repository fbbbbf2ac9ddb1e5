//! Completions (acks), applied in groups: the committer task takes the first waiting
//! completion and every one queued behind it (up to [`SCRIPT_BATCH`]), applies them
//! together (one `lua/complete.lua` script per shard) and answers each caller. One
//! group is in flight at a time, so completions that arrive meanwhile form the next
//! group: under load one script applies hundreds, and a lone completion waits for
//! nothing.
//!
//! Invariants: each caller is told the truth about its own completion: a shard Redis
//! did not answer for fails its own completions only, however the group spans shards;
//! completions judged at different times (only with
//! [`TimeSource::Caller`](crate::TimeSource::Caller)) never
//! share a script, so each is judged at its own `now`.

use std::collections::BTreeMap;
use std::sync::Arc;

use punctual_core::store::CompleteRequest;
use punctual_core::{Error, QueueName, Result, Timestamp};
use tokio::sync::{mpsc, oneshot};

use crate::{SCRIPT_BATCH, Shared, codes};

/// One caller's completion and where its answer goes.
type PendingCompletion = (CompleteRequest, oneshot::Sender<Result<()>>);

/// Where completions wait for the committer. The committer ends when this is dropped.
#[derive(Debug)]
pub(crate) struct Committer {
    waiting: mpsc::UnboundedSender<PendingCompletion>,
}

impl Committer {
    /// Starts the committer of `shared`'s store.
    pub(crate) fn start(shared: Arc<Shared>) -> Committer {
        let (waiting, queued) = mpsc::unbounded_channel();
        tokio::spawn(commit_completions(shared, queued));
        Committer { waiting }
    }

    /// Applies `req` with the next group.
    pub(crate) async fn complete(&self, req: CompleteRequest) -> Result<()> {
        let (answer, answered) = oneshot::channel();
        self.waiting.send((req, answer)).map_err(|_| Error::Unavailable("the store is closed".into()))?;
        answered.await.map_err(|_| Error::Unavailable("the store closed before the completion was applied".into()))?
    }
}

async fn commit_completions(shared: Arc<Shared>, mut waiting: mpsc::UnboundedReceiver<PendingCompletion>) {
    let mut group = Vec::with_capacity(SCRIPT_BATCH);
    while waiting.recv_many(&mut group, SCRIPT_BATCH).await > 0 {
        let (requests, answers): (Vec<_>, Vec<_>) = group.drain(..).unzip();
        for (answer, result) in answers.into_iter().zip(shared.complete_each(&requests).await) {
            // A caller that stopped waiting needs no answer.
            let _ = answer.send(result);
        }
    }
}

impl Shared {
    /// [`Store::complete_many`](punctual_core::Store::complete_many): a call Redis failed
    /// for any shard answers that error (each shard's script is atomic, the call is
    /// not: see the crate docs), as it always has.
    pub(crate) async fn complete_many(&self, reqs: Vec<CompleteRequest>) -> Result<Vec<Result<()>>> {
        let results = self.complete_each(&reqs).await;
        if let Some(Err(e)) = results.iter().find(|r| matches!(r, Err(e) if *e != Error::LeaseLost)) {
            return Err(e.clone());
        }
        Ok(results)
    }

    /// Applies completions, one script per shard and [`SCRIPT_BATCH`]: each one's
    /// result (see the module docs).
    async fn complete_each(&self, reqs: &[CompleteRequest]) -> Vec<Result<()>> {
        let mut results: Vec<Result<()>> = (0..reqs.len()).map(|_| Err(Error::LeaseLost)).collect();
        let mut groups: BTreeMap<(QueueName, u32, String), Vec<usize>> = BTreeMap::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.shard_of(&req.token.queue, &req.token.key, false).await {
                Ok(shard) => {
                    let now = codes::now(self.config.time, req.now);
                    groups.entry((req.token.queue.clone(), shard, now)).or_default().push(i);
                }
                Err(e) => results[i] = Err(e),
            }
        }
        // Shards concurrently: with Redis frozen, a group spanning k shards fails after
        // one timeout, not k of them in a row.
        let outcomes =
            futures_util::future::join_all(groups.into_iter().map(|((queue, shard, _), indices)| async move {
                let group: Vec<&CompleteRequest> = indices.iter().map(|&i| &reqs[i]).collect();
                let outcome = self.complete_shard(&queue, shard, &group).await;
                (indices, outcome)
            }))
            .await;
        for (indices, outcome) in outcomes {
            match outcome {
                Ok(applied) => {
                    for (&i, ok) in indices.iter().zip(applied) {
                        results[i] = if ok { Ok(()) } else { Err(Error::LeaseLost) };
                    }
                }
                Err(e) => {
                    for &i in &indices {
                        results[i] = Err(e.clone());
                    }
                }
            }
        }
        results
    }

    /// Applies completions of one shard, at most [`SCRIPT_BATCH`] per script.
    async fn complete_shard(&self, queue: &QueueName, shard: u32, reqs: &[&CompleteRequest]) -> Result<Vec<bool>> {
        let mut applied = Vec::with_capacity(reqs.len());
        for chunk in reqs.chunks(SCRIPT_BATCH) {
            // Callers group by `now` (see `complete_each`): one `now` per script.
            let now = chunk.first().map_or(Timestamp::EPOCH, |r| r.now);
            let arming = self.heads.arming(queue, shard);
            let answers = self.on(queue, shard).complete(chunk, now).await?;
            // A retried or rescheduled task is scheduled again (in its lane, which the
            // token does not tell): the shard's heads are read afresh.
            // So is a shard holding groups: an ended lease may give its group room (this
            // process does not hear its own wake-ups).
            let rearmed =
                chunk.iter().zip(&answers).any(|(req, applied)| *applied && req.completion.next_due().is_some());
            if rearmed || self.heads.shard_grouped(queue, shard) {
                self.heads.forget(queue, shard);
            }
            arming.done();
            applied.extend(answers);
        }
        self.replicate(queue, shard).await?;
        Ok(applied)
    }
}
