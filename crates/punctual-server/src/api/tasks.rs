//! The task routes (API.md "Scheduling"): schedule one task or a batch, read, list
//! and cancel tasks, one by one or by tag.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use punctual_core::store::ScheduleOutcome;
use punctual_core::{ListOptions, QueueName, Store, TaskState};

use super::{Answer, echoed};
use crate::bodies::schema;
use crate::bodies::{
    BatchBody, BatchResponse, BatchResult, CancelledResponse, CompletedBody, HistoryItem, HistoryResponse, ListQuery,
    ScheduleResponse, TaskBody, TaskList, check_batch_size,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params, QueryParams, from_value};
use crate::state::AppState;

#[utoipa::path(put, path = "/v1/queues/{queue}/tasks/{key}", tag = "tasks",
    summary = "Create or update one task",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the task keeps it (or, when the server exports traces, its schedule span's), and every delivery continues the trace. An invalid one is ignored.")),
    request_body(content = schema::TaskBody, description = "A JSON body is required: {} is a task due now with no payload"),
    responses(
        (status = 201, description = "Created", body = schema::ScheduleResponse),
        (status = 200, description = "Replaced or kept (by if_exists keep, or by a dedupe window: unique_for)",
            body = schema::ScheduleResponse),
        (status = 400, description = "Invalid input; the field names what to fix", body = ErrorBody),
        (status = 404, description = "strict_queues: the config file declares no such queue (the message names the nearest)", body = ErrorBody),
        (status = 409, description = "Exists and if_exists is error", body = ErrorBody),
        (status = 413, description = "The payload or the body is too large", body = ErrorBody)))]
pub(crate) async fn put_task<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody<TaskBody, true>,
) -> Answer {
    let (queue, key) = (params.get("queue"), params.get("key"));
    state.schedulable(queue)?;
    if body.key.as_deref().is_some_and(|k| k != key) {
        return Err(ApiError::invalid("key", "the body's key differs from the key in the path; leave it out"));
    }
    let mut spec = body.into_spec()?;
    state.check_target(queue, &spec)?;
    spec.traceparent = crate::telemetry::task_trace(&headers);
    let scheduled = state.inner.engine.schedule(queue, key, spec).await?;
    let status = if scheduled.outcome == ScheduleOutcome::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(ScheduleResponse::from(scheduled))).into_response())
}

#[utoipa::path(post, path = "/v1/queues/{queue}/tasks", tag = "tasks",
    summary = "Create or update many tasks; each item is stored or refused on its own",
    params(("queue" = schema::QueueName, Path),
        ("traceparent" = Option<String>, Header, description = "W3C trace context, kept by every task of the batch (see PUT).")),
    request_body = schema::BatchBody,
    responses(
        (status = 200, description = "One result per item, in order", body = BatchResponse),
        (status = 400, description = "Not a batch, or more items than the limit (field tasks)", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody)))]
pub(crate) async fn post_tasks<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody<BatchBody>,
) -> Answer {
    let queue = params.get("queue");
    QueueName::new(queue)?;
    let undeclared = state.schedulable(queue).err();
    crate::telemetry::record_batch(body.tasks.len());
    check_batch_size("tasks", body.tasks.len(), state.inner.engine.limits().max_batch)?;
    // Every task of the batch keeps the batch's trace.
    let trace = crate::telemetry::task_trace(&headers);
    let mut results: Vec<BatchResult> = Vec::with_capacity(body.tasks.len());
    let mut valid = Vec::with_capacity(body.tasks.len());
    let mut positions = Vec::with_capacity(body.tasks.len());
    for (i, value) in body.tasks.into_iter().enumerate() {
        let key = echoed(&value, "key");
        if let Some(e) = &undeclared {
            results.push(BatchResult { key, outcome: None, completed: None, error: Some(e.detail()) });
            continue;
        }
        let parsed = from_value::<TaskBody>(value).and_then(|item| {
            let key = item.key.clone().ok_or_else(|| ApiError::invalid("key", "each task of a batch needs its key"))?;
            let mut spec = item.into_spec()?;
            state.check_target(queue, &spec)?;
            spec.traceparent = trace.clone();
            Ok((key, spec))
        });
        match parsed {
            Ok(item) => {
                valid.push(item);
                positions.push(i);
                results.push(BatchResult { key, outcome: None, completed: None, error: None });
            }
            Err(e) => {
                let error = Some(e.within(&format!("tasks[{i}]")).detail());
                results.push(BatchResult { key, outcome: None, completed: None, error });
            }
        }
    }
    let written = state.inner.engine.schedule_many(queue, valid).await?;
    for (i, result) in positions.into_iter().zip(written) {
        match result {
            Ok(scheduled) => {
                results[i].outcome = Some(scheduled.outcome);
                results[i].completed = scheduled.completed.map(CompletedBody::from);
            }
            Err(e) => results[i].error = Some(ApiError::from(e).within(&format!("tasks[{i}]")).detail()),
        }
    }
    Ok(Json(BatchResponse { results }).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}/tasks/{key}", tag = "tasks", summary = "One task",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    responses((status = 200, body = schema::Task),
              (status = 400, description = "Invalid queue or key", body = ErrorBody),
              (status = 404, description = "No such task", body = ErrorBody)))]
pub(crate) async fn get_task<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let (queue, key) = (params.get("queue"), params.get("key"));
    match state.inner.engine.get(queue, key).await? {
        Some(task) => Ok(Json(task).into_response()),
        None => Err(ApiError::NotFound(format!("no task '{key}' in queue '{queue}'"))),
    }
}

#[utoipa::path(get, path = "/v1/queues/{queue}/tasks/{key}/history", tag = "tasks",
    summary = "What happened to a task: its history, also once it is gone",
    description = "Every change to the key's tasks, oldest first: created, replaced (what changed), \
        cancelled (by key or tag, and by which token's name), purged, leased (the try, the lease), extended, \
        released, acked (the outcome, the handler's error, what a push delivery's far end answered), \
        expired, retried or deleted by hand; within the queue's history_retention (7 days unless \
        configured), at most the latest 100 per key.",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    responses((status = 200, body = HistoryResponse),
              (status = 400, description = "Invalid queue or key", body = ErrorBody),
              (status = 404, description = "No task and no history of the key within the retention", body = ErrorBody)))]
pub(crate) async fn task_history<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let (queue, key) = (params.get("queue"), params.get("key"));
    let engine = &state.inner.engine;
    let events = engine.history(queue, key).await?;
    if events.is_empty() && engine.get(queue, key).await?.is_none() {
        return Err(ApiError::NotFound(format!(
            "no task '{key}' in queue '{queue}', and nothing happened to one within the queue's history retention"
        )));
    }
    let retention_ms = u64::try_from(engine.history_retention(&QueueName::new(queue)?).as_millis()).unwrap_or(u64::MAX);
    let events = events.into_iter().map(HistoryItem::from).collect();
    Ok(Json(HistoryResponse { queue: queue.to_owned(), key: key.to_owned(), retention_ms, events }).into_response())
}

#[utoipa::path(delete, path = "/v1/queues/{queue}/tasks/{key}", tag = "tasks",
    summary = "Cancel a task in any state (a leased one neither retries nor repeats)",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    responses((status = 204, description = "Cancelled"),
              (status = 400, description = "Invalid queue or key", body = ErrorBody),
              (status = 404, description = "No such task", body = ErrorBody)))]
pub(crate) async fn delete_task<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let (queue, key) = (params.get("queue"), params.get("key"));
    if state.inner.engine.cancel(queue, key).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::NotFound(format!("no task '{key}' in queue '{queue}'")))
    }
}

#[utoipa::path(delete, path = "/v1/queues/{queue}/tags/{tag}", tag = "tasks",
    summary = "Cancel every task of the queue carrying the tag",
    params(("queue" = schema::QueueName, Path), ("tag" = schema::TagName, Path)),
    responses((status = 200, body = CancelledResponse),
              (status = 400, description = "Invalid queue or tag", body = ErrorBody)))]
pub(crate) async fn cancel_tag<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let cancelled = state.inner.engine.cancel_tag(params.get("queue"), params.get("tag")).await?;
    Ok(Json(CancelledResponse { cancelled }).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}/tasks", tag = "tasks", summary = "Tasks in due order",
    params(("queue" = schema::QueueName, Path),
           ("state" = Option<schema::TaskState>, Query, description = "Only tasks in this state"),
           ("tag" = Option<schema::TagName>, Query, description = "Only tasks carrying this tag (with state: both)"),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Tasks per page, default 100"),
           ("cursor" = Option<schema::Cursor>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = TaskList),
              (status = 400, description = "Invalid queue, state, tag, limit or cursor", body = ErrorBody)))]
pub(crate) async fn list_tasks<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    QueryParams(query): QueryParams<ListQuery>,
) -> Answer {
    let task_state = query.state.as_deref().filter(|s| !s.is_empty()).map(TaskState::parse).transpose()?;
    list(&state, params.get("queue"), task_state, &query).await
}

pub(super) async fn list<S: Store>(
    state: &AppState<S>,
    queue: &str,
    task_state: Option<TaskState>,
    query: &ListQuery,
) -> Answer {
    let options =
        ListOptions::default().state(task_state).tag(query.tag()).limit(query.limit()?).cursor(query.cursor());
    let page = state.inner.engine.list(queue, options).await?;
    Ok(Json(TaskList { tasks: page.tasks, next_cursor: page.next_cursor }).into_response())
}
