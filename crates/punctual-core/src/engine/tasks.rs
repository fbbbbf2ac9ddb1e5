//! The engine's calls about tasks at rest: schedule (validated, with the queue's
//! defaults), get, cancel, list, stats, and the dead tasks' retry and delete.

use std::sync::Arc;

use serde_json::Value;

use super::business_time;
use super::calendars::CalendarSet;
use super::config::{DEAD_BATCH, MAX_LIST_LIMIT};
use super::firings::OCCURRENCE_SUFFIX_BYTES;
use super::{Engine, ListOptions, QueueDefaults};
use crate::calendar::{Calendar, CalendarName};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::history::{Actor, HistoryEvent, acting};
use crate::model::{Group, IfExists, NewTask, Priority, QueueName, Tag, Task, TaskKey, TaskSpec, TaskState, When};
use crate::policy::{Overlap, Repeat, RepeatRule};
use crate::store::{
    DeadSelection, GroupsPage, GroupsRequest, HistoryRequest, ListRequest, Page, QueueStats, RetryDeadBatchRequest,
    RetryDeadRequest, ScheduleOutcome, Scheduled, Store,
};
use crate::target::Lane;
use crate::time::Timestamp;
use crate::transitions;

impl<S: Store> Engine<S> {
    /// Creates or updates one task. See [`Store::schedule`] for `if_exists`.
    pub async fn schedule(&self, queue: &str, key: &str, spec: TaskSpec) -> Result<Scheduled> {
        let queue = QueueName::new(queue)?;
        self.calendars_loaded().await?;
        let now = self.now();
        let task = self.intake(&queue, now).prepare(key, spec)?;
        let mut results = self.write(vec![task], now).await?;
        results.pop().ok_or_else(|| Error::Internal("store answered an empty batch".into()))?
    }

    /// Creates or updates many tasks of one queue. Each item succeeds or fails on its
    /// own (invalid items are refused, valid ones stored); more than
    /// [`Limits::max_batch`](crate::Limits::max_batch) items is an error of the whole call, field `tasks`.
    pub async fn schedule_many(&self, queue: &str, items: Vec<(String, TaskSpec)>) -> Result<Vec<Result<Scheduled>>> {
        let queue = QueueName::new(queue)?;
        let limit = self.inner.config.limits.max_batch;
        if items.len() > limit {
            return Err(Error::invalid("tasks", format!("{} tasks is over the batch limit of {limit}", items.len())));
        }
        self.calendars_loaded().await?;
        let now = self.now();
        let intake = self.intake(&queue, now);
        let mut results: Vec<Option<Result<Scheduled>>> = Vec::with_capacity(items.len());
        let mut valid = Vec::with_capacity(items.len());
        for (key, spec) in items {
            match intake.prepare(&key, spec) {
                Ok(task) => {
                    valid.push(task);
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut written = self.write(valid, now).await?.into_iter();
        Ok(results
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| {
                    written.next().unwrap_or_else(|| Err(Error::Internal("store answered too few results".into())))
                })
            })
            .collect())
    }

    pub(super) async fn write(&self, tasks: Vec<NewTask>, now: Timestamp) -> Result<Vec<Result<Scheduled>>> {
        self.check_running()?;
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        let results = self.inner.store.schedule(tasks, now).await?;
        self.written(results.iter().flatten());
        Ok(results)
    }

    /// Tells what a schedule wrote: an event for each task written, and the wake-ups of
    /// the tasks scheduled.
    pub(super) fn written<'a>(&self, written: impl Iterator<Item = &'a Scheduled> + Clone) {
        for scheduled in written.clone() {
            let Some(task) = &scheduled.task else { continue };
            let created = match scheduled.outcome {
                ScheduleOutcome::Created => true,
                ScheduleOutcome::Replaced => false,
                ScheduleOutcome::Kept => continue,
            };
            self.publish(Event::Scheduled {
                queue: task.queue.clone(),
                key: task.key.clone(),
                due_at: task.due_at,
                version: task.version,
                created,
            });
        }
        for task in written.filter_map(|scheduled| scheduled.task.as_ref()) {
            if task.state == TaskState::Scheduled {
                let lane = task.lane();
                if lane == Lane::Target {
                    self.note_target_queue(&task.queue);
                }
                self.waker(&task.queue).lane(lane).offer(Some(task.due_at));
            }
        }
    }

    /// What the tasks of one schedule call into `queue` at `now` are checked against.
    pub(super) fn intake<'a>(&'a self, queue: &'a QueueName, now: Timestamp) -> Intake<'a> {
        let max_payload_bytes = self.inner.config.limits.max_payload_bytes;
        let by = acting();
        Intake { queue, defaults: self.defaults(queue), max_payload_bytes, calendars: self.calendars(), now, by }
    }

    /// The task, in any state.
    pub async fn get(&self, queue: &str, key: &str) -> Result<Option<Task>> {
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        self.inner.store.get(&queue, &key).await
    }

    /// The history of the queue's key (see [`crate::history`]): its events within the
    /// queue's history retention, oldest first, also once the task is gone.
    pub async fn history(&self, queue: &str, key: &str) -> Result<Vec<HistoryEvent>> {
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        let keep_ms = i64::try_from(self.history_retention(&queue).as_millis()).unwrap_or(i64::MAX);
        let since = Timestamp::from_millis(self.now().as_millis().saturating_sub(keep_ms));
        self.inner.store.history(HistoryRequest::new(queue, key, since)).await
    }

    /// Cancels the task in any state; a leased task neither retries nor repeats.
    /// `false` when there was no such task.
    pub async fn cancel(&self, queue: &str, key: &str) -> Result<bool> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        let cancelled = self.inner.store.cancel(&queue, &key, acting().as_ref()).await?;
        self.cancelled(queue, Some(key), u64::from(cancelled));
        Ok(cancelled)
    }

    /// Cancels every task of the queue carrying `tag`; how many.
    pub async fn cancel_tag(&self, queue: &str, tag: &str) -> Result<u64> {
        self.check_running()?;
        let (queue, tag) = (QueueName::new(queue)?, Tag::new(tag)?);
        let cancelled = self.inner.store.cancel_tag(&queue, &tag, acting().as_ref()).await?;
        self.cancelled(queue, None, cancelled);
        Ok(cancelled)
    }

    /// Tells that `count` tasks of `queue` were cancelled (`key`: the one, by key).
    pub(super) fn cancelled(&self, queue: QueueName, key: Option<TaskKey>, count: u64) {
        if count > 0 {
            // A task may have held its group's lease.
            self.lease_ended(&queue, true);
            self.publish(Event::Cancelled { queue, key, count });
        }
    }

    /// A page of the queue's tasks in due order, filtered by `options`.
    pub async fn list(&self, queue: &str, options: ListOptions) -> Result<Page> {
        let queue = QueueName::new(queue)?;
        let ListOptions { state, tag, limit, cursor } = options;
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(Error::invalid("limit", format!("{limit} is outside 1 to {MAX_LIST_LIMIT}")));
        }
        let mut request = ListRequest::new(queue, state, limit, cursor);
        if let Some(tag) = tag {
            request = request.tagged(Tag::new(tag)?);
        }
        self.inner.store.list(request).await
    }

    /// A page of the queue's groups that have tasks, by name, each counted by state.
    pub async fn groups(&self, queue: &str, limit: u32, cursor: Option<String>) -> Result<GroupsPage> {
        let queue = QueueName::new(queue)?;
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(Error::invalid("limit", format!("{limit} is outside 1 to {MAX_LIST_LIMIT}")));
        }
        self.inner.store.groups(GroupsRequest::new(queue, limit, cursor)).await
    }

    /// Counts for one queue (zero counts when unknown), or for every queue.
    pub async fn stats(&self, queue: Option<&str>) -> Result<Vec<QueueStats>> {
        let queue = queue.map(QueueName::new).transpose()?;
        self.inner.store.stats(queue.as_ref()).await
    }

    /// Puts a dead task back to work, due now with attempts reset.
    pub async fn retry_dead(&self, queue: &str, key: &str) -> Result<Task> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        let request = RetryDeadRequest::new(queue.clone(), key.clone(), self.now()).by(acting());
        let task = self.inner.store.retry_dead(request).await?;
        let task = task.ok_or_else(|| Error::NotFound(format!("dead task '{key}' in queue '{queue}'")))?;
        self.waker(&queue).lane(task.lane()).offer(Some(task.due_at));
        Ok(task)
    }

    /// Puts the queue's dead tasks back to work, due now with attempts reset: all of
    /// them, those carrying a tag, or those among some keys (at most
    /// [`Limits::max_batch`](crate::Limits::max_batch), field `keys`). In batches, each atomic; how many.
    pub async fn retry_dead_many(&self, queue: &str, selection: DeadSelection) -> Result<u64> {
        self.check_running()?;
        let queue = QueueName::new(queue)?;
        let walks = match selection {
            DeadSelection::Keys(mut keys) => {
                let limit = self.inner.config.limits.max_batch;
                if keys.len() > limit {
                    return Err(Error::invalid(
                        "keys",
                        format!("{} keys is over the batch limit of {limit}", keys.len()),
                    ));
                }
                keys.sort();
                keys.dedup();
                keys.chunks(DEAD_BATCH as usize).map(|chunk| DeadSelection::Keys(chunk.to_vec())).collect()
            }
            other => vec![other],
        };
        let now = self.now();
        let mut retried = 0;
        for selection in walks {
            let mut request = RetryDeadBatchRequest::new(queue.clone(), selection, DEAD_BATCH, now).by(acting());
            loop {
                let batch = self.inner.store.retry_dead_batch(request.clone()).await?;
                retried += batch.retried;
                if batch.retried > 0 {
                    self.waker(&queue).offer_both(Some(now));
                }
                match batch.next_cursor {
                    Some(cursor) => request = request.after(cursor),
                    None => break,
                }
            }
        }
        Ok(retried)
    }

    /// Deletes a dead task.
    pub async fn delete_dead(&self, queue: &str, key: &str) -> Result<()> {
        self.check_running()?;
        let (queue, key) = (QueueName::new(queue)?, TaskKey::new(key)?);
        if self.inner.store.delete_dead(&queue, &key, acting().as_ref()).await? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("dead task '{key}' in queue '{queue}'")))
        }
    }
}

/// The tasks of one schedule call: all of one queue, with its defaults, and "now" the
/// same instant for each.
#[derive(Debug)]
pub(super) struct Intake<'a> {
    queue: &'a QueueName,
    defaults: QueueDefaults,
    max_payload_bytes: usize,
    /// The calendars business time is counted in, as this node last read them.
    calendars: Arc<CalendarSet>,
    now: Timestamp,
    /// Who schedules (see [`acting`]).
    by: Option<Actor>,
}

impl Intake<'_> {
    /// Validates one task and applies the queue's defaults.
    pub(super) fn prepare(&self, key: &str, spec: TaskSpec) -> Result<NewTask> {
        let key = TaskKey::new(key)?;
        let limit = self.max_payload_bytes;
        let size = payload_size(&spec.payload);
        if size > limit {
            return Err(Error::PayloadTooLarge { size, limit });
        }
        let max_attempts = spec.max_attempts.unwrap_or(self.defaults.max_attempts);
        if max_attempts == 0 {
            return Err(Error::invalid("max_attempts", "max_attempts must be at least 1"));
        }
        if spec.tags.len() > Tag::MAX_PER_TASK {
            return Err(Error::invalid(
                "tags",
                format!("{} tags is over the limit of {}", spec.tags.len(), Tag::MAX_PER_TASK),
            ));
        }
        let mut tags = spec.tags.into_iter().map(Tag::new).collect::<Result<Vec<_>>>()?;
        tags.sort();
        tags.dedup();
        let repeat = spec.repeat.or_else(|| self.defaults.repeat.clone());
        spec.timing.validate()?;
        if let (Some(jitter), Some(RepeatRule::Every(interval))) =
            (spec.timing.jitter, repeat.as_ref().map(Repeat::rule))
            && jitter >= *interval
        {
            return Err(Error::invalid(
                "jitter",
                "jitter must be shorter than the repeat's interval, or a jittered occurrence would pass the next",
            ));
        }
        if spec.timing.overlap == Overlap::Allow
            && repeat.is_some()
            && key.as_str().len() + OCCURRENCE_SUFFIX_BYTES > TaskKey::MAX_BYTES
        {
            return Err(Error::invalid(
                "overlap",
                format!(
                    "under overlap allow each occurrence runs as a task keyed <key>@<time>: the key may be at most {} bytes",
                    TaskKey::MAX_BYTES - OCCURRENCE_SUFFIX_BYTES
                ),
            ));
        }
        let calendar = spec.timing.calendar.as_ref().map(|name| self.calendar(name)).transpose()?;
        let scheduled_for = match (calendar, spec.when, &repeat) {
            (Some(calendar), when, repeat) => {
                business_time::scheduled_for(calendar, when, spec.align_next_open, repeat.as_ref(), self.now)?
            }
            (None, _, _) if spec.align_next_open => {
                return Err(Error::invalid("align", "align needs a calendar whose opening hours to align to"));
            }
            // "Now" with a repeat means its first occurrence.
            (None, When::Now, Some(repeat)) => business_time::first_occurrence(repeat, None, self.now)?,
            (None, when, _) => when.resolve(self.now),
        };
        // An `until` before the first occurrence would leave a task that never fires.
        if let Some(until) = repeat.as_ref().and_then(Repeat::until_limit)
            && scheduled_for > until
        {
            return Err(Error::invalid(
                "repeat.until",
                format!("{until} is before the first occurrence, due at {scheduled_for}: the task would never fire"),
            ));
        }
        let due_at = transitions::jittered(scheduled_for, &spec.timing, rand::random::<f64>());
        let mut task = NewTask::new(self.queue.clone(), key, due_at);
        task.by = self.by.clone();
        task.scheduled_for = scheduled_for;
        task.timing = spec.timing;
        task.payload = spec.payload;
        task.max_attempts = max_attempts;
        task.backoff = spec.backoff.unwrap_or(self.defaults.backoff);
        task.repeat = repeat;
        task.tags = tags;
        task.priority = Priority::new(spec.priority.into())?;
        task.group = spec.group.map(Group::new).transpose()?;
        if let Some(max_wait) = spec.debounce {
            if max_wait.is_zero() {
                return Err(Error::invalid("debounce.max_wait", "max_wait must be longer than 0"));
            }
            if spec.if_exists != IfExists::Replace {
                return Err(Error::invalid(
                    "debounce",
                    "a debounced schedule replaces the scheduled task: leave if_exists at replace",
                ));
            }
        }
        task.debounce = spec.debounce;
        if spec.unique_for.is_some_and(|unique| unique.window.is_zero()) {
            return Err(Error::invalid("unique_for", "a dedupe window must be longer than 0"));
        }
        task.unique_for = spec.unique_for;
        task.if_exists = spec.if_exists;
        task.target = spec.target;
        task.traceparent = spec.traceparent;
        Ok(task)
    }
}

impl Intake<'_> {
    /// The calendar named `name`, or a refusal naming `calendar` that says how to
    /// create it.
    fn calendar(&self, name: &CalendarName) -> Result<&Calendar> {
        self.calendars.get(name.as_str()).map(|entry| &*entry.calendar).ok_or_else(|| {
            Error::invalid(
                "calendar",
                format!("there is no calendar '{name}': create it with PUT /v1/calendars/{name}"),
            )
        })
    }
}

/// The size of a payload as JSON text.
fn payload_size(payload: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, payload);
    counter.0
}
