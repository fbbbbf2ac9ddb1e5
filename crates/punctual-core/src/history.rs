//! A task's history: what happened to it, event by event, kept by the store in the
//! same atomic write as each change it records, so that no event is kept without its
//! change and no change is made without its event.
//!
//! Rules every store keeps (the conformance suite checks them):
//! - a history belongs to a `(queue, key)`, not to one task: it outlives the task (a
//!   done or cancelled task's events stay), and a task created again under the key
//!   adds to it;
//! - events are kept in the order they happened, the [`HISTORY_LIMIT`] latest per key
//!   (older ones are dropped as new ones come);
//! - [`Store::history`](crate::Store::history) reads the events at or after
//!   `since` (the queue's retention before now), so an event is never shown after its
//!   retention, and [`Store::sweep_history`](crate::Store::sweep_history) deletes the
//!   histories nothing happened to since a cutoff;
//! - a write that changes nothing (a schedule kept, a cancel of no task) records
//!   nothing.
//!
//! What each store operation records, one event per task it changes:
//!
//! | operation | event | fields besides `at`, `by`, `state` |
//! |---|---|---|
//! | schedule, created | `created` | `due_at` |
//! | schedule, replaced | `replaced` | `due_at`, `changed` |
//! | cancel | `cancelled` | |
//! | cancel by tag | `cancelled` | `tag` |
//! | purge | `purged` | |
//! | lease | `leased` | `node` (the request's), `delivery_id`, `attempt` (the try: attempts + 1), `lease` (the fence), `until` |
//! | extend | `extended` | `lease`, `until` |
//! | release | `released` | `lease` |
//! | complete | `acked` | `lease`, `attempt`, `outcome`, `due_at` (when scheduled again), `error`, and the [`DeliveryReport`] |
//! | reap | `expired` | `lease`, `attempt`, `due_at` (when scheduled again), `error` |
//! | retry of a dead task | `retried` | `due_at` |
//! | delete of a dead task, sweep of dead tasks | `deleted` | |
//! | import | `imported` | `due_at` |
//!
//! `state` is the task's state after the event; `None` when the task is gone. An
//! outbox row applied ([`Store::apply_once`](crate::Store::apply_once)) records what
//! its call would. `at` is the operation's `now`; for a cancel, a cancel by tag, a
//! purge and a delete of a dead task, which take none, the store's clock.
//!
//! Stored form ([`encode`], [`decode`]): one compact JSON object per event, with the
//! short names below, fields at their empty value left out; the Redis scripts write
//! the same objects. An ack is about 70 bytes.
//!
//! | field | name | stored as |
//! |---|---|---|
//! | at | `t` | epoch ms |
//! | kind | `e` | the event's name |
//! | by | `by` | text |
//! | state | `s` | `scheduled`, `leased`, `dead`; left out when gone |
//! | node | `nd` | text |
//! | delivery_id | `di` | text ([`Task::delivery_id`]) |
//! | attempt | `n` | number |
//! | lease | `l` | number |
//! | due_at | `d` | epoch ms |
//! | until | `u` | epoch ms |
//! | outcome | `o` | `done`, `retry`, `reschedule`, `dead` |
//! | error | `x` | text, at most [`TEXT_LIMIT`] bytes |
//! | changed | `c` | list of field names |
//! | tag | `g` | text |
//! | report's took | `ms` | number |
//! | report's status | `st` | number |
//! | report's answer | `a` | text, at most [`TEXT_LIMIT`] bytes |

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use crate::model::Actor;
use crate::model::{Task, TaskState};
use crate::time::Timestamp;

/// The most events kept per `(queue, key)`; older ones go as new ones come.
pub const HISTORY_LIMIT: usize = 100;

/// The most bytes of an error or a delivery's answer kept in an event.
pub const TEXT_LIMIT: usize = 200;

/// How long a queue's history is kept unless its configuration says otherwise.
pub const DEFAULT_HISTORY_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

tokio::task_local! {
    static ACTING: Actor;
}

/// Runs `work` on behalf of `actor`: the engine's calls made within it record `actor`
/// in the history of what they change (see [`acting`]). The server wraps each
/// authenticated request so, in one place.
pub async fn acting_as<F: Future>(actor: Actor, work: F) -> F::Output {
    ACTING.scope(actor, work).await
}

/// `work`, to run in a task of its own, on behalf of the actor of the scope this is
/// called in (if any): a spawned task leaves the caller's scope behind.
pub fn on_behalf<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let actor = acting();
    async move {
        match actor {
            Some(actor) => ACTING.scope(actor, work).await,
            None => work.await,
        }
    }
}

/// The actor of the [`acting_as`] scope this runs in, if any.
pub fn acting() -> Option<Actor> {
    ACTING.try_with(Actor::clone).ok()
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Created,
    Replaced,
    Cancelled,
    Purged,
    Leased,
    Extended,
    Released,
    Acked,
    Expired,
    Retried,
    Deleted,
    Imported,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Created => "created",
            EventKind::Replaced => "replaced",
            EventKind::Cancelled => "cancelled",
            EventKind::Purged => "purged",
            EventKind::Leased => "leased",
            EventKind::Extended => "extended",
            EventKind::Released => "released",
            EventKind::Acked => "acked",
            EventKind::Expired => "expired",
            EventKind::Retried => "retried",
            EventKind::Deleted => "deleted",
            EventKind::Imported => "imported",
        }
    }
}

/// What a completion did, as an `acked` event tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckOutcome {
    /// Done for good: the task is gone.
    Done,
    /// The try failed and the task is scheduled again.
    Retry,
    /// A new occurrence is scheduled (a repeat, or the handler's "again later").
    Reschedule,
    /// The task gave up: dead.
    Dead,
}

impl AckOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AckOutcome::Done => "done",
            AckOutcome::Retry => "retry",
            AckOutcome::Reschedule => "reschedule",
            AckOutcome::Dead => "dead",
        }
    }
}

/// What a push delivery saw, kept with the `acked` event it ends in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DeliveryReport {
    /// How long the delivery took, ms.
    pub took_ms: Option<u64>,
    /// The HTTP status a webhook or target answered.
    pub status: Option<u16>,
    /// The first bytes of the answer's body, or the delivery's error.
    pub answer: Option<String>,
}

impl DeliveryReport {
    pub fn new(took_ms: Option<u64>, status: Option<u16>, answer: Option<String>) -> DeliveryReport {
        DeliveryReport { took_ms, status, answer: answer.map(|text| clip(&text).to_owned()) }
    }
}

/// One event of a task's history (see the module docs for which fields each kind
/// sets).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryEvent {
    pub at: Timestamp,
    pub kind: EventKind,
    pub by: Option<String>,
    /// The task's state after the event; `None` when it is gone.
    pub state: Option<TaskState>,
    /// The node that leased (a `leased` event).
    pub node: Option<String>,
    /// The lease's [`Task::delivery_id`] (a `leased` event).
    pub delivery_id: Option<String>,
    pub attempt: Option<u32>,
    pub lease: Option<u64>,
    pub due_at: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub outcome: Option<AckOutcome>,
    pub error: Option<String>,
    pub changed: Vec<String>,
    pub tag: Option<String>,
    pub report: Option<DeliveryReport>,
}

impl HistoryEvent {
    /// An event with no field but its time, kind, actor and the state after.
    pub fn new(at: Timestamp, kind: EventKind, by: Option<&Actor>, state: Option<TaskState>) -> HistoryEvent {
        HistoryEvent {
            at,
            kind,
            by: by.map(|by| by.as_str().to_owned()),
            state,
            node: None,
            delivery_id: None,
            attempt: None,
            lease: None,
            due_at: None,
            until: None,
            outcome: None,
            error: None,
            changed: Vec::new(),
            tag: None,
            report: None,
        }
    }

    /// `created` of `task` by `by`.
    pub fn created(task: &Task, by: Option<&Actor>, now: Timestamp) -> HistoryEvent {
        HistoryEvent { due_at: Some(task.due_at), ..HistoryEvent::new(now, EventKind::Created, by, Some(task.state)) }
    }

    /// `replaced` of `old` by `task`, written by `by`: which fields differ.
    pub fn replaced(old: &Task, task: &Task, by: Option<&Actor>, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            due_at: Some(task.due_at),
            changed: changed_fields(old, task),
            ..HistoryEvent::new(now, EventKind::Replaced, by, Some(task.state))
        }
    }

    /// `leased` of `task` as a lease on `node` left it.
    pub fn leased(task: &Task, by: Option<&Actor>, node: Option<&str>, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            node: node.map(str::to_owned),
            delivery_id: Some(task.delivery_id()),
            attempt: Some(task.attempts + 1),
            lease: Some(task.meta.fence),
            until: task.lease_expires_at,
            ..HistoryEvent::new(now, EventKind::Leased, by, Some(task.state))
        }
    }

    /// This event as done by `by`.
    pub fn by(mut self, by: Option<&Actor>) -> HistoryEvent {
        self.by = by.map(|by| by.as_str().to_owned());
        self
    }

    /// This event with what a push delivery saw.
    pub fn report(mut self, report: Option<&DeliveryReport>) -> HistoryEvent {
        self.report = report.cloned();
        self
    }

    /// `expired` of the lease `lease` on try `attempt`, leaving the task in `state`
    /// with `error` as its last error; scheduled again, it is due at once
    /// ([`transitions::expire`](crate::transitions::expire)).
    pub fn expired(attempt: u32, lease: u64, state: TaskState, error: &str, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            attempt: Some(attempt),
            lease: Some(lease),
            due_at: (state == TaskState::Scheduled).then_some(now),
            error: Some(clip(error).to_owned()),
            ..HistoryEvent::new(now, EventKind::Expired, None, Some(state))
        }
    }

    /// `extended` of the lease `lease` by `by`, now expiring `until`.
    pub fn extended(lease: u64, until: Timestamp, by: Option<&Actor>, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            lease: Some(lease),
            until: Some(until),
            ..HistoryEvent::new(now, EventKind::Extended, by, Some(TaskState::Leased))
        }
    }

    /// `released` of the lease `lease`: the task is scheduled again.
    pub fn released(lease: u64, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            lease: Some(lease),
            ..HistoryEvent::new(now, EventKind::Released, None, Some(TaskState::Scheduled))
        }
    }

    /// `retried` of a dead task by `by`: scheduled again, due at once.
    pub fn retried(by: Option<&Actor>, now: Timestamp) -> HistoryEvent {
        HistoryEvent { due_at: Some(now), ..HistoryEvent::new(now, EventKind::Retried, by, Some(TaskState::Scheduled)) }
    }

    /// `imported` of `task`, as this store keeps it.
    pub fn imported(task: &Task, now: Timestamp) -> HistoryEvent {
        HistoryEvent {
            due_at: Some(task.due_at),
            ..HistoryEvent::new(now, EventKind::Imported, None, Some(task.state))
        }
    }

    /// `cancelled` by `by`, by key (`tag` `None`) or by tag.
    pub fn cancelled(by: Option<&Actor>, tag: Option<&str>, now: Timestamp) -> HistoryEvent {
        HistoryEvent { tag: tag.map(str::to_owned), ..HistoryEvent::new(now, EventKind::Cancelled, by, None) }
    }
}

/// The first of `events` (oldest first) that are older than `oldest`, a key's oldest
/// event in a store (all of them when it has none): what
/// [`Store::import_histories`](crate::Store::import_histories) adds before that key's
/// own events.
pub fn older_than(events: &[HistoryEvent], oldest: Option<Timestamp>) -> &[HistoryEvent] {
    match oldest {
        None => events,
        Some(oldest) => &events[..events.partition_point(|event| event.at < oldest)],
    }
}

/// The names (as the API's task object has them) of the fields a caller wrote that
/// differ between `old` and `new`, in a fixed order.
pub fn changed_fields(old: &Task, new: &Task) -> Vec<String> {
    let mut changed = Vec::new();
    let mut differ = |name: &str, differs: bool| {
        if differs {
            changed.push(name.to_owned());
        }
    };
    differ("due_at", old.due_at != new.due_at);
    differ("payload", old.payload != new.payload);
    differ("tags", old.tags != new.tags);
    differ("priority", old.priority != new.priority);
    differ("group", old.group != new.group);
    differ("target", old.target != new.target);
    differ(
        "policies",
        old.max_attempts != new.max_attempts
            || old.backoff != new.backoff
            || old.repeat != new.repeat
            || old.unique_for != new.unique_for
            || old.timing != new.timing,
    );
    changed
}

/// `text` cut to at most [`TEXT_LIMIT`] bytes, at a character boundary.
pub fn clip(text: &str) -> &str {
    if text.len() <= TEXT_LIMIT {
        return text;
    }
    let mut end = TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The stored form of an event (see the module docs).
#[derive(Serialize, Deserialize)]
struct Stored {
    t: i64,
    e: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    di: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<AckOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "list_or_empty_object")]
    c: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    st: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<String>,
}

/// A list, or `{}`: Lua's JSON encoder cannot tell an empty list from an empty object.
fn list_or_empty_object<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrObject {
        List(Vec<String>),
        Object(serde::de::IgnoredAny),
    }
    Ok(match ListOrObject::deserialize(deserializer)? {
        ListOrObject::List(list) => list,
        ListOrObject::Object(_) => Vec::new(),
    })
}

/// The stored form of `event`.
pub fn encode(event: &HistoryEvent) -> String {
    let report = event.report.clone().unwrap_or_default();
    let stored = Stored {
        t: event.at.as_millis(),
        e: event.kind,
        by: event.by.clone(),
        s: event.state,
        nd: event.node.clone(),
        di: event.delivery_id.clone(),
        n: event.attempt,
        l: event.lease,
        d: event.due_at.map(Timestamp::as_millis),
        u: event.until.map(Timestamp::as_millis),
        o: event.outcome,
        x: event.error.clone(),
        c: event.changed.clone(),
        g: event.tag.clone(),
        ms: report.took_ms,
        st: report.status,
        a: report.answer,
    };
    serde_json::to_string(&stored).expect("a history event always serializes")
}

/// The stored form of `event`'s members after its time and kind, each after a `,`
/// (`""` for none): what a store that writes an event's opening itself (Redis' scripts,
/// which know the time) appends to it. The stored form always opens with the time and
/// the kind, in that order.
pub fn encode_members(event: &HistoryEvent) -> String {
    let mut text = encode(event);
    let kind = serde_json::to_string(&event.kind).expect("a kind always serializes");
    let opening = format!("{{\"t\":{},\"e\":{kind}", event.at.as_millis());
    debug_assert!(text.starts_with(&opening) && text.ends_with('}'), "{text} opens with {opening}");
    text.pop();
    text.split_off(opening.len())
}

/// An event from its stored form.
pub fn decode(text: &str) -> Result<HistoryEvent> {
    let stored: Stored = serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("stored data cannot be read: history event {text:?}: {e}")))?;
    let report = (stored.ms.is_some() || stored.st.is_some() || stored.a.is_some()).then_some(DeliveryReport {
        took_ms: stored.ms,
        status: stored.st,
        answer: stored.a,
    });
    Ok(HistoryEvent {
        at: Timestamp::from_millis(stored.t),
        kind: stored.e,
        by: stored.by,
        state: stored.s,
        node: stored.nd,
        delivery_id: stored.di,
        attempt: stored.n,
        lease: stored.l,
        due_at: stored.d.map(Timestamp::from_millis),
        until: stored.u.map(Timestamp::from_millis),
        outcome: stored.o,
        error: stored.x,
        changed: stored.c,
        tag: stored.g,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewTask, QueueName, TaskKey};

    #[test]
    fn an_event_reads_back_as_it_was_written() {
        let mut event = HistoryEvent::new(
            Timestamp::from_millis(1_765_000_000_123),
            EventKind::Acked,
            Some(&Actor::new("billing")),
            Some(TaskState::Scheduled),
        );
        event.attempt = Some(2);
        event.lease = Some(7);
        event.due_at = Some(Timestamp::from_millis(1_765_000_060_000));
        event.outcome = Some(AckOutcome::Retry);
        event.error = Some("HTTP 503".into());
        event.report = Some(DeliveryReport::new(Some(41), Some(503), Some("busy".into())));
        assert_eq!(decode(&encode(&event)).unwrap(), event);
        let mut replaced = HistoryEvent::new(Timestamp::EPOCH, EventKind::Replaced, None, None);
        replaced.changed = vec!["due_at".into(), "payload".into()];
        assert_eq!(decode(&encode(&replaced)).unwrap(), replaced);
        let mut leased = HistoryEvent::new(Timestamp::EPOCH, EventKind::Leased, None, Some(TaskState::Leased));
        leased.node = Some("web-1:7575 (pid 42)".into());
        leased.delivery_id = Some("aaaaaaaaaaaaa-1f-2-3".into());
        assert_eq!(decode(&encode(&leased)).unwrap(), leased);
    }

    #[test]
    fn an_ack_takes_under_100_bytes() {
        let task = crate::transitions::create(
            NewTask::new(
                QueueName::new("reminders").unwrap(),
                TaskKey::new("order-1234567").unwrap(),
                Timestamp::EPOCH,
            ),
            crate::StoreId::from_bits(1),
            1,
            Timestamp::EPOCH,
        );
        let now = Timestamp::from_millis(1_765_000_000_123);
        let ack =
            crate::transitions::acked(&task, &crate::store::Completion::Done, now).by(Some(&Actor::new("worker-eu-1")));
        let stored = encode(&ack);
        assert!(stored.len() <= 100, "{} bytes: {stored}", stored.len());
    }

    #[test]
    fn an_events_members_are_its_stored_form_after_its_time_and_kind() {
        let mut event =
            HistoryEvent::new(Timestamp::from_millis(42), EventKind::Acked, Some(&Actor::new("billing")), None);
        event.lease = Some(7);
        event.report = Some(DeliveryReport::new(Some(41), Some(503), Some("busy".into())));
        let members = encode_members(&event);
        assert!(members.starts_with(",\"by\":\"billing\""), "{members}");
        assert_eq!(format!("{{\"t\":42,\"e\":\"acked\"{members}}}"), encode(&event));
        let bare = HistoryEvent::new(Timestamp::EPOCH, EventKind::Cancelled, None, None);
        assert_eq!(encode_members(&bare), "");
    }

    #[test]
    fn a_lua_empty_list_reads_as_no_change() {
        let event = decode(r#"{"t":5,"e":"replaced","c":{}}"#).unwrap();
        assert!(event.changed.is_empty());
    }

    #[test]
    fn long_text_is_clipped_at_a_character_boundary() {
        let text = "é".repeat(TEXT_LIMIT);
        let clipped = clip(&text);
        assert!(clipped.len() <= TEXT_LIMIT && clipped.len() >= TEXT_LIMIT - 1);
        assert_eq!(clip("short"), "short");
    }

    #[tokio::test]
    async fn the_actor_is_known_within_its_scope_only() {
        assert_eq!(acting(), None);
        let inside = acting_as(Actor::new("ops"), async { acting() }).await;
        assert_eq!(inside, Some(Actor::new("ops")));
    }
}
