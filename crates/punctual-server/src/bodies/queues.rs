//! The bodies of the queue routes: the list of queues with their counts, one queue's
//! detail (overdue, fire lag), and its recent activity for the dashboard.

use punctual_core::Timestamp;
use punctual_core::store::QueueStats;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema;

/// A queue's counts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueSummary {
    #[schema(example = "order.cancel")]
    pub(crate) name: String,
    pub(crate) scheduled: u64,
    pub(crate) leased: u64,
    pub(crate) dead: u64,
    /// Earliest due time of a scheduled task.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub(crate) next_due_at: Option<Timestamp>,
    /// Nothing of the queue is leased or delivered until it is resumed.
    pub(crate) paused: bool,
}

impl QueueSummary {
    pub(crate) fn new(s: QueueStats, paused: bool) -> QueueSummary {
        QueueSummary {
            name: s.name.to_string(),
            scheduled: s.scheduled,
            leased: s.leased,
            dead: s.dead,
            next_due_at: s.next_due_at,
            paused,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueListResponse {
    pub(crate) queues: Vec<QueueSummary>,
}

/// `GET /v1/queues/{queue}`: the counts, how overdue the oldest due task is, and the
/// recent fire lag.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueDetail {
    #[serde(flatten)]
    pub(crate) summary: QueueSummary,
    /// How long the earliest scheduled task has been due (0 when none is due).
    pub(crate) oldest_overdue_ms: u64,
    pub(crate) lag_ms: LagMs,
    /// The queue's rows in the outboxes this server drains, as last counted (every
    /// 5 s); absent when it drains none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) outbox: Option<OutboxLag>,
}

/// A queue's rows waiting in the outboxes a server drains: committed in the
/// application's database, not yet applied.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OutboxLag {
    pub(crate) rows_waiting: u64,
    /// How long the oldest of them has waited since it was inserted; null when none.
    pub(crate) oldest_age_ms: Option<u64>,
}

/// Fire lag (lease time − due time) of this server's recent leases of the queue;
/// null members when it has leased none yet.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LagMs {
    pub(crate) p50: Option<u64>,
    pub(crate) p99: Option<u64>,
}

/// `GET /v1/queues/{queue}/activity`: a bounded history of recent outcomes and the
/// lease rate, kept in memory for the dashboard.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ActivityResponse {
    /// Newest first; at most 100.
    pub(crate) recent: Vec<RecentOutcome>,
    /// The length of one throughput slot, in milliseconds (10,000).
    pub(crate) slot_ms: u64,
    /// Leases handed out per slot, oldest first; the last slot is the current one.
    pub(crate) fired: Vec<u64>,
}

/// One outcome of a try.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RecentOutcome {
    pub(crate) key: String,
    /// `done`, `retried`, `rescheduled`, `dead` or `expired` (the lease ran out).
    #[schema(value_type = schema::ActivityOutcome)]
    pub(crate) outcome: &'static str,
    /// When the outcome was applied.
    #[schema(value_type = schema::Timestamp)]
    pub(crate) at: Timestamp,
    #[schema(value_type = schema::Timestamp)]
    pub(crate) due_at: Timestamp,
    /// Fire lag of this try: lease time − due time.
    pub(crate) lag_ms: Option<u64>,
    /// Lease → outcome.
    pub(crate) duration_ms: Option<u64>,
    /// This try's ordinal (0 when unknown: an expired lease).
    pub(crate) attempt: u32,
    pub(crate) error: Option<String>,
}

impl From<crate::metrics::QueueActivity> for ActivityResponse {
    fn from(a: crate::metrics::QueueActivity) -> ActivityResponse {
        ActivityResponse {
            recent: a
                .recent
                .into_iter()
                .map(|o| RecentOutcome {
                    key: o.key.to_string(),
                    outcome: o.outcome.as_str(),
                    at: o.at,
                    due_at: o.due_at,
                    lag_ms: o.lag_ms,
                    duration_ms: o.duration_ms,
                    attempt: o.attempt,
                    error: o.error,
                })
                .collect(),
            slot_ms: u64::try_from(crate::metrics::RATE_SLOT.as_millis()).unwrap_or(u64::MAX),
            fired: a.fired_per_slot,
        }
    }
}

/// A group of a queue and its tasks by state.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupSummary {
    #[schema(example = "customer-42")]
    pub(crate) group: String,
    pub(crate) scheduled: u64,
    /// Live leases, and expired ones the reaper has not ended yet: what
    /// `group_concurrency` counts.
    pub(crate) leased: u64,
    pub(crate) dead: u64,
}

/// `GET /v1/queues/{queue}/groups`: a page of the queue's groups that have tasks, by name.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupList {
    pub(crate) groups: Vec<GroupSummary>,
    /// Pass back as `cursor` for the next page; null at the end.
    pub(crate) next_cursor: Option<String>,
}

impl GroupList {
    pub(crate) fn of(page: punctual_core::GroupsPage) -> GroupList {
        let groups = page
            .groups
            .into_iter()
            .map(|g| GroupSummary {
                group: g.group.to_string(),
                scheduled: g.scheduled,
                leased: g.leased,
                dead: g.dead,
            })
            .collect();
        GroupList { groups, next_cursor: page.next_cursor }
    }
}
