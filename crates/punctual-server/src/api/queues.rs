//! The queue routes: every queue with its counts (only those the caller may read),
//! one queue's detail (overdue, fire lag), and its recent activity for the dashboard.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use punctual_core::Store;
use punctual_core::store::QueueStats;

use super::Answer;
use crate::bodies::schema;
use crate::bodies::{ActivityResponse, GroupList, LagMs, ListQuery, QueueDetail, QueueListResponse, QueueSummary};
use crate::config::access::Permission;
use crate::error::ApiError;
use crate::error::ErrorBody;
use crate::extract::{Params, QueryParams};
use crate::shared::Caller;
use crate::state::AppState;

#[utoipa::path(get, path = "/v1/queues", tag = "queues",
    summary = "Every queue holding a task, every queue of the config file and every queue with settings or paused \
        (zero counts while it holds none)",
    responses((status = 200, body = QueueListResponse)))]
pub(crate) async fn list_queues<S: Store>(State(state): State<AppState<S>>, Extension(caller): Caller) -> Answer {
    let engine = &state.inner.engine;
    let mut stats = state.file_queues().declared.with_counts(engine.stats(None).await?);
    // A queue given settings or paused through the API is listed before its first task.
    let records = engine.watch_queue_records().borrow().clone();
    for record in records.iter().filter(|r| r.settings.is_some() || r.paused) {
        if let Err(at) = stats.binary_search_by(|s| s.name.as_str().cmp(record.queue.as_str())) {
            stats.insert(at, QueueStats::new(record.queue.clone(), 0, 0, 0, None));
        }
    }
    // A scoped token sees only the queues it may read.
    let queues = stats
        .into_iter()
        .filter(|s| caller.may(Permission::Read, s.name.as_str()))
        .map(|s| {
            let paused = engine.is_paused(&s.name);
            QueueSummary::new(s, paused)
        })
        .collect();
    Ok(Json(QueueListResponse { queues }).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}", tag = "queues",
    summary = "One queue's counts, overdue time and recent fire lag (zero counts when unknown)",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 200, body = QueueDetail), (status = 400, description = "Invalid queue", body = ErrorBody)))]
pub(crate) async fn get_queue<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let name = params.get("queue");
    let engine = &state.inner.engine;
    let stats = engine.stats(Some(name)).await?;
    let queue = punctual_core::QueueName::new(name)?;
    let stats = stats.into_iter().next().unwrap_or_else(|| QueueStats::new(queue.clone(), 0, 0, 0, None));
    let summary = QueueSummary::new(stats, engine.is_paused(&queue));
    let now = engine.clock().now();
    let oldest_overdue_ms = summary
        .next_due_at
        .filter(|due| *due <= now)
        .map_or(0, |due| u64::try_from(now.saturating_since(due).as_millis()).unwrap_or(u64::MAX));
    let lag = state.inner.metrics.recent_lag(&punctual_core::QueueName::new(name)?);
    let lag_ms = LagMs { p50: lag.map(|l| l.p50_ms), p99: lag.map(|l| l.p99_ms) };
    let outbox = outbox_lag(&state.outboxes(), name, now);
    Ok(Json(QueueDetail { summary, oldest_overdue_ms, lag_ms, outbox }).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}/activity", tag = "queues",
    summary = "Recent outcomes (bounded history, newest first) and leases per 10 s over the last 15 min",
    description = "Kept in memory by this server for the dashboard: at most 100 outcomes per queue, lost on \
        restart, and only of leases this server handed out or reaped. An unknown queue answers empty lists.",
    params(("queue" = schema::QueueName, Path)),
    responses((status = 200, body = ActivityResponse), (status = 400, description = "Invalid queue", body = ErrorBody)))]
pub(crate) async fn activity<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let queue = punctual_core::QueueName::new(params.get("queue"))?;
    let activity = state.inner.metrics.activity(&queue, state.inner.engine.clock().now());
    Ok(Json(ActivityResponse::from(activity)).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}/groups", tag = "queues",
    summary = "The queue's groups that have tasks, by name, each with its tasks by state",
    description = "A group's `leased` is what the queue's `group_concurrency` counts.",
    params(("queue" = schema::QueueName, Path),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Groups per page, default 100"),
           ("cursor" = Option<schema::Cursor>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = GroupList),
              (status = 400, description = "Invalid queue, limit or cursor", body = ErrorBody)))]
pub(crate) async fn list_groups<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    QueryParams(query): QueryParams<ListQuery>,
) -> Answer {
    if query.state.as_deref().is_some_and(|s| !s.is_empty()) || query.tag.as_deref().is_some_and(|t| !t.is_empty()) {
        let field = if query.state.as_deref().is_some_and(|s| !s.is_empty()) { "state" } else { "tag" };
        return Err(ApiError::invalid(field, "the group list takes only limit and cursor"));
    }
    let page = state.inner.engine.groups(params.get("queue"), query.limit()?, query.cursor()).await?;
    Ok(Json(GroupList::of(page)).into_response())
}

/// `queue`'s rows in the outboxes drained, summed; `None` when none is drained.
fn outbox_lag(
    outboxes: &[crate::config::outbox::Drained],
    queue: &str,
    now: punctual_core::Timestamp,
) -> Option<crate::bodies::OutboxLag> {
    if outboxes.is_empty() {
        return None;
    }
    let (mut rows_waiting, mut oldest) = (0, None::<i64>);
    for drained in outboxes {
        for backlog in drained.snapshot().queues.iter().filter(|b| b.queue == queue) {
            rows_waiting += backlog.waiting;
            oldest = match (oldest, backlog.oldest_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    let oldest_age_ms = oldest.map(|at| u64::try_from(now.as_millis().saturating_sub(at)).unwrap_or(0));
    Some(crate::bodies::OutboxLag { rows_waiting, oldest_age_ms })
}
