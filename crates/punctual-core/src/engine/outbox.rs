//! The engine's part of the outbox: an outbox row applied as the call it stands for
//! (schedule, cancel, cancel by tag), validated and with the queue's defaults as that
//! call is, and atomically with the row's mark ([`Store::apply_once`]); events and
//! wake-ups follow as they follow the call.

use super::Engine;
use crate::error::{Error, Result};
use crate::model::{QueueName, Tag, TaskKey, TaskSpec};
use crate::outbox::OutboxRow;
use crate::store::{ApplyOnceRequest, OnceEffect, OnceOp, Store};

/// What an outbox row asks, as the engine's calls take it.
#[derive(Debug, Clone)]
pub enum OutboxCall {
    /// [`Engine::schedule`] of `key`.
    Schedule { key: String, spec: Box<TaskSpec> },
    /// [`Engine::cancel`] of `key`.
    Cancel { key: String },
    /// [`Engine::cancel_tag`].
    CancelTag { tag: String },
}

impl<S: Store> Engine<S> {
    /// Applies `row`, which asks `call` of `queue`, as that call would, unless the row
    /// was applied before: then changes nothing and answers `None`. A call the engine
    /// or the store refuses answers its error and leaves the row unapplied.
    pub async fn apply_once(&self, row: OutboxRow, queue: &str, call: OutboxCall) -> Result<Option<OnceEffect>> {
        let mut answers = self.apply_once_many(vec![(row, queue.to_owned(), call)]).await?;
        answers.pop().unwrap_or_else(|| Err(Error::Internal("the store answered no row".into())))
    }

    /// [`Engine::apply_once`] of many rows, each on its own, in one store call; rows of
    /// one key apply in the order given. `Err` of the whole call: nothing was applied.
    pub async fn apply_once_many(
        &self,
        rows: Vec<(OutboxRow, String, OutboxCall)>,
    ) -> Result<Vec<Result<Option<OnceEffect>>>> {
        self.check_running()?;
        if rows.iter().any(|(_, _, call)| matches!(call, OutboxCall::Schedule { .. })) {
            self.calendars_loaded().await?;
        }
        let now = self.now();
        let mut answers: Vec<Option<Result<Option<OnceEffect>>>> = Vec::with_capacity(rows.len());
        let mut requests = Vec::with_capacity(rows.len());
        for (row, queue, call) in rows {
            match self.once_op(&queue, call, now) {
                Ok(op) => {
                    requests.push(ApplyOnceRequest::new(row, op, now));
                    answers.push(None);
                }
                Err(e) => answers.push(Some(Err(e))),
            }
        }
        // What the events need of each row: its queue, and the key a cancel names.
        let targets: Vec<(QueueName, Option<TaskKey>)> = requests
            .iter()
            .map(|req| match &req.op {
                OnceOp::Cancel { queue, key } => (queue.clone(), Some(key.clone())),
                op => (op.queue().clone(), None),
            })
            .collect();
        let mut applied = self.inner.store.apply_once_many(requests).await?.into_iter().zip(targets);
        Ok(answers
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| {
                    let Some((answer, (queue, key))) = applied.next() else {
                        return Err(Error::Internal("the store answered too few rows".into()));
                    };
                    if let Ok(Some(effect)) = &answer {
                        self.applied(queue, key, effect);
                    }
                    answer
                })
            })
            .collect())
    }

    /// The store's op for `call` of `queue`, checked and with the queue's defaults as
    /// the call it stands for.
    fn once_op(&self, queue: &str, call: OutboxCall, now: crate::time::Timestamp) -> Result<OnceOp> {
        let queue = QueueName::new(queue)?;
        Ok(match call {
            OutboxCall::Schedule { key, spec } => {
                OnceOp::Schedule(Box::new(self.intake(&queue, now).prepare(&key, *spec)?))
            }
            OutboxCall::Cancel { key } => OnceOp::Cancel { queue, key: TaskKey::new(key)? },
            OutboxCall::CancelTag { tag } => OnceOp::CancelTag { queue, tag: Tag::new(tag)? },
        })
    }

    /// Tells what a row applied to `queue` did (`key`: the task a cancel named), as its
    /// call tells it: events and wake-ups.
    fn applied(&self, queue: QueueName, key: Option<TaskKey>, effect: &OnceEffect) {
        match effect {
            OnceEffect::Scheduled(scheduled) => self.written(std::iter::once(&**scheduled)),
            OnceEffect::Cancelled(cancelled) => self.cancelled(queue, key, u64::from(*cancelled)),
            OnceEffect::CancelledTag(count) => self.cancelled(queue, None, *count),
        }
    }
}
