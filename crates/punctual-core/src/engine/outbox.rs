//! The engine's part of the outbox: an outbox row applied as the call it stands for
//! (schedule, cancel, cancel by tag), validated and with the queue's defaults as that
//! call is, and atomically with the row's mark ([`Store::apply_once`]); events and
//! wake-ups follow as they follow the call.

use super::Engine;
use crate::error::Result;
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
        self.check_running()?;
        let queue = QueueName::new(queue)?;
        let op = match call {
            OutboxCall::Schedule { key, spec } => {
                self.calendars_loaded().await?;
                OnceOp::Schedule(Box::new(self.intake(&queue, self.now()).prepare(&key, *spec)?))
            }
            OutboxCall::Cancel { key } => OnceOp::Cancel { queue: queue.clone(), key: TaskKey::new(key)? },
            OutboxCall::CancelTag { tag } => OnceOp::CancelTag { queue: queue.clone(), tag: Tag::new(tag)? },
        };
        let key = match &op {
            OnceOp::Cancel { key, .. } => Some(key.clone()),
            _ => None,
        };
        let effect = self.inner.store.apply_once(ApplyOnceRequest::new(row, op, self.now())).await?;
        match &effect {
            Some(OnceEffect::Scheduled(scheduled)) => self.written(std::iter::once(&**scheduled)),
            Some(OnceEffect::Cancelled(cancelled)) => self.cancelled(queue, key, u64::from(*cancelled)),
            Some(OnceEffect::CancelledTag(count)) => self.cancelled(queue, None, *count),
            None => {}
        }
        Ok(effect)
    }
}
