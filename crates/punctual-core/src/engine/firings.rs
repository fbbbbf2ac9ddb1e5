//! What the engine makes of a store's leases before handing them out, by each task's
//! timing (docs/state-machine.md, "Misfire, overlap and jitter"):
//!
//! - a first try leased later than its `misfire_after` under misfire `skip` is
//!   completed at once, as a success that does not fire (a repeat moves to its next
//!   occurrence after now, a one-off task ends);
//! - a repeat under overlap `allow` fires each occurrence as a task of its own, keyed
//!   `<key>@<scheduled_for>` (RFC 3339), with the repeat's payload, tags and policies,
//!   written if absent and holding its key a while after it completes (so a repeat
//!   leased again after a crash writes it once), and moves to its next occurrence at
//!   once, whatever its try: occurrences run side by side, each with its own retries;
//! - every other lease fires, counting the occurrences it stands in for
//!   ([`Lease::missed`]).
//!
//! A completion that fails here leaves its lease to expire and the task to be leased
//! again: nothing is lost, and an occurrence's own task is written at most once.

use std::time::Duration;

use super::Engine;
use crate::calendar::Calendar;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{IfExists, NewTask, TaskKey};
use crate::outcome::Outcome;
use crate::policy::{Misfire, Overlap, Progress};
use crate::store::{CompleteRequest, Lease, Store};
use crate::time::Timestamp;
use crate::transitions::completion_in;
use crate::unique::Unique;

/// How long an occurrence's task holds its key past the repeat's lease (covering the
/// reaper's and a consumer's delay in leasing the repeat again).
const OCCURRENCE_HOLD: Duration = Duration::from_secs(60);

/// The bytes `@<scheduled_for>` adds to a key under overlap `allow`.
pub const OCCURRENCE_SUFFIX_BYTES: usize = "@2026-11-30T09:00:00.000Z".len();

impl<S: Store> Engine<S> {
    /// The leases of one store call that fire (see the module doc).
    pub(super) async fn firings(&self, leases: Vec<Lease>, now: Timestamp) -> Vec<Lease> {
        let mut fired = Vec::with_capacity(leases.len());
        let mut calendars = None;
        for mut lease in leases {
            let timing = &lease.task.timing;
            // A repeat under overlap allow never fires itself, whatever the try: a try
            // after the first means its lease expired after the occurrence's own task
            // was written, and that task fires in its place.
            let allow = timing.overlap == Overlap::Allow && lease.task.repeat.is_some();
            let first_try = lease.attempt == 1;
            if !allow && (!first_try || (timing.is_default() && lease.task.repeat.is_none())) {
                fired.push(lease);
                continue;
            }
            let calendars = calendars.get_or_insert_with(|| self.calendars());
            let calendar = timing.calendar.as_ref().and_then(|name| calendars.get(name.as_str()));
            let calendar = calendar.map(|entry| &*entry.calendar);
            let late = now.saturating_since(lease.task.due_at) > timing.misfire_after();
            if first_try && timing.misfire == Misfire::Skip && late {
                if let Some(next) = self.finish_unfired(&lease, now, calendar).await {
                    let (queue, key) = (lease.token.queue.clone(), lease.token.key.clone());
                    self.publish(Event::Misfired { queue, key, scheduled_for: lease.scheduled_for, next, at: now });
                }
                continue;
            }
            if allow {
                if self.write_occurrence(&lease, now).await.is_ok() {
                    self.finish_unfired(&lease, now, calendar).await;
                }
                continue;
            }
            if let Some(repeat) = &lease.task.repeat {
                let progress = Progress { now, leased_at: now, calendar, timing };
                lease.missed = repeat.missed(&lease.task.meta, &progress).unwrap_or(0);
            }
            fired.push(lease);
        }
        fired
    }

    /// Completes a lease that does not fire as a success at `now`: the task's next due
    /// time (`None` inside when it ended), or `None` when the completion failed.
    async fn finish_unfired(
        &self,
        lease: &Lease,
        now: Timestamp,
        calendar: Option<&Calendar>,
    ) -> Option<Option<Timestamp>> {
        let completion = completion_in(&lease.task, Outcome::Done, now, rand::random::<f64>(), calendar);
        let next = completion.next_due();
        let request = CompleteRequest::new(lease.token.clone(), completion, now);
        self.inner.store.complete(request).await.ok()?;
        self.waker(&lease.token.queue).lane(lease.task.lane()).offer(next);
        self.lease_ended(&lease.token.queue, lease.task.group.is_some());
        Some(next)
    }

    /// Writes the occurrence `lease` stands for as a task of its own, due now, unless
    /// it exists (see the module doc). Its dedupe window outlives the repeat's lease by
    /// [`OCCURRENCE_HOLD`]: should the repeat's completion fail and its lease expire,
    /// the repeat leased again writes nothing, even when the occurrence's task has
    /// completed meanwhile, so the occurrence fires once.
    async fn write_occurrence(&self, lease: &Lease, now: Timestamp) -> Result<()> {
        let repeat = &lease.task;
        let key = TaskKey::new(format!("{}@{}", repeat.key, lease.scheduled_for))?;
        let mut task = NewTask::new(repeat.queue.clone(), key, now);
        task.scheduled_for = lease.scheduled_for;
        task.payload = repeat.payload.clone();
        task.max_attempts = repeat.max_attempts;
        task.backoff = repeat.backoff;
        task.tags = repeat.tags.clone();
        task.priority = repeat.priority;
        task.group = repeat.group.clone();
        task.target = repeat.target.clone();
        task.traceparent = repeat.traceparent.clone();
        task.if_exists = IfExists::Keep;
        task.unique_for = Some(Unique::new(lease.expires_at.saturating_since(now) + OCCURRENCE_HOLD));
        match self.write(vec![task], now).await?.pop() {
            Some(written) => written.map(|_| ()),
            None => Err(Error::Internal("the store answered an empty batch".into())),
        }
    }
}
