//! The handlers of the `/v1` API, one per route of API.md. Each reads its request
//! through [`crate::extract`], validates it through [`crate::bodies`], calls the engine,
//! and answers the object API.md gives, or an [`ApiError`].

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use punctual_core::store::{QueueStats, ScheduleOutcome};
use punctual_core::{ListOptions, QueueName, Store, TaskState};
use serde_json::Value;

use crate::access::Permission;
use crate::bodies::schema;
use crate::bodies::*;
use crate::delivery::{DeliveryBody, Undelivered};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params, QueryParams, from_value};
use crate::shared::Caller;
use crate::state::AppState;

type Answer = Result<Response, ApiError>;

/// A batch item's `field` as its result echoes it: only a string (anything else, or
/// none, is null, as the result's schema says).
fn echoed(item: &Value, field: &str) -> Option<String> {
    item.get(field).and_then(Value::as_str).map(str::to_owned)
}

#[utoipa::path(put, path = "/v1/queues/{queue}/tasks/{key}", tag = "tasks",
    summary = "Create or update one task",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    request_body(content = schema::TaskBody, description = "A JSON body is required: {} is a task due now with no payload"),
    responses(
        (status = 201, description = "Created", body = ScheduleResponse),
        (status = 200, description = "Replaced or kept", body = ScheduleResponse),
        (status = 400, description = "Invalid input; the field names what to fix", body = ErrorBody),
        (status = 404, description = "strict_queues: the config file declares no such queue (the message names the nearest)", body = ErrorBody),
        (status = 409, description = "Exists and if_exists is error", body = ErrorBody),
        (status = 413, description = "The payload or the body is too large", body = ErrorBody)))]
pub(crate) async fn put_task<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<TaskBody, true>,
) -> Answer {
    let (queue, key) = (params.get("queue"), params.get("key"));
    state.schedulable(queue)?;
    if body.key.as_deref().is_some_and(|k| k != key) {
        return Err(ApiError::invalid("key", "the body's key differs from the key in the path; leave it out"));
    }
    let spec = body.into_spec()?;
    state.check_target(queue, &spec)?;
    let scheduled = state.inner.engine.schedule(queue, key, spec).await?;
    let status = if scheduled.outcome == ScheduleOutcome::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(ScheduleResponse { outcome: scheduled.outcome, task: scheduled.task })).into_response())
}

#[utoipa::path(post, path = "/v1/queues/{queue}/tasks", tag = "tasks",
    summary = "Create or update many tasks; each item is stored or refused on its own",
    params(("queue" = schema::QueueName, Path)),
    request_body = schema::BatchBody,
    responses(
        (status = 200, description = "One result per item, in order", body = BatchResponse),
        (status = 400, description = "Not a batch, or more items than the limit (field tasks)", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody)))]
pub(crate) async fn post_tasks<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<BatchBody>,
) -> Answer {
    let queue = params.get("queue");
    QueueName::new(queue)?;
    let undeclared = state.schedulable(queue).err();
    check_batch_size("tasks", body.tasks.len(), state.inner.engine.limits().max_batch)?;
    let mut results: Vec<BatchResult> = Vec::with_capacity(body.tasks.len());
    let mut valid = Vec::with_capacity(body.tasks.len());
    let mut positions = Vec::with_capacity(body.tasks.len());
    for (i, value) in body.tasks.into_iter().enumerate() {
        let key = echoed(&value, "key");
        if let Some(e) = &undeclared {
            results.push(BatchResult { key, outcome: None, error: Some(e.detail()) });
            continue;
        }
        let parsed = from_value::<TaskBody>(value).and_then(|item| {
            let key = item.key.clone().ok_or_else(|| ApiError::invalid("key", "each task of a batch needs its key"))?;
            let spec = item.into_spec()?;
            state.check_target(queue, &spec)?;
            Ok((key, spec))
        });
        match parsed {
            Ok(item) => {
                valid.push(item);
                positions.push(i);
                results.push(BatchResult { key, outcome: None, error: None });
            }
            Err(e) => {
                let error = Some(e.within(&format!("tasks[{i}]")).detail());
                results.push(BatchResult { key, outcome: None, error });
            }
        }
    }
    let written = state.inner.engine.schedule_many(queue, valid).await?;
    for (i, result) in positions.into_iter().zip(written) {
        match result {
            Ok(scheduled) => results[i].outcome = Some(scheduled.outcome),
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
           ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
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

async fn list<S: Store>(state: &AppState<S>, queue: &str, task_state: Option<TaskState>, query: &ListQuery) -> Answer {
    let options =
        ListOptions::default().state(task_state).tag(query.tag()).limit(query.limit()?).cursor(query.cursor());
    let page = state.inner.engine.list(queue, options).await?;
    Ok(Json(TaskList { tasks: page.tasks, next_cursor: page.next_cursor }).into_response())
}

#[utoipa::path(get, path = "/v1/queues", tag = "queues",
    summary = "Every queue holding a task, every queue of the config file and every queue with settings or paused \
        (zero counts while it holds none)",
    responses((status = 200, body = QueueListResponse)))]
pub(crate) async fn list_queues<S: Store>(State(state): State<AppState<S>>, Extension(caller): Caller) -> Answer {
    let engine = &state.inner.engine;
    let mut stats = state.inner.declared.with_counts(engine.stats(None).await?);
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
    Ok(Json(QueueDetail { summary, oldest_overdue_ms, lag_ms }).into_response())
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

#[utoipa::path(post, path = "/v1/queues/{queue}/lease", tag = "workers",
    summary = "Lease due tasks; with wait, hold the request open until one falls due (long poll)",
    params(("queue" = schema::QueueName, Path)),
    request_body(content = Option<schema::LeaseBody>, description = "Optional: no body takes every default"),
    responses((status = 200, description = "Leases (an empty list after wait)", body = LeaseResponse),
               (status = 400, description = "Invalid queue, max, lease or wait", body = ErrorBody),
               (status = 404, description = "strict_queues: the config file declares no such queue (the message names the nearest)", body = ErrorBody),
               (status = 409, description = "The queue has a push action: the server delivers its tasks (the message names the action)", body = ErrorBody)))]
pub(crate) async fn lease<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<LeaseBody>,
) -> Answer {
    let queue = params.get("queue").to_owned();
    state.leasable(&queue)?;
    let options = body.into_options();
    let engine = state.inner.engine.clone();
    // Cancelled when this handler is dropped (the client went away, or the request
    // timed out) or the server stops: the wait then ends at once.
    let cancel = state.inner.shutdown.child_token();
    let _stop_waiting = cancel.clone().drop_guard();
    let (answer, answered) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let result = if cancel.is_cancelled() {
            Ok(Vec::new())
        } else {
            engine.lease_cancellable(&queue, options, &cancel).await
        };
        let held = result.map(|leases| {
            let tokens = leases.iter().map(|l| l.token.clone()).collect();
            (leases, Undelivered::new(engine, tokens))
        });
        // If the handler is gone, the leases drop here and are released.
        let _ = answer.send(held);
    });
    let (leases, undelivered) =
        answered.await.map_err(|_| ApiError::internal("the lease task ended without an answer"))??;
    let items: Vec<LeaseItem> = leases
        .into_iter()
        .map(|lease| LeaseItem {
            lease_id: state.inner.codec.encode(&lease.token),
            expires_at: lease.expires_at,
            attempt: lease.attempt,
            delivery_id: lease.delivery_id,
            task: lease.task,
        })
        .collect();
    let json = serde_json::to_vec(&LeaseResponse { leases: items }).map_err(ApiError::internal)?;
    let body = DeliveryBody::new(json.into(), undelivered);
    Ok(([(header::CONTENT_TYPE, "application/json")], Body::new(body)).into_response())
}

fn decode_lease<S: Store>(state: &AppState<S>, lease_id: &str) -> Result<punctual_core::LeaseToken, ApiError> {
    state
        .inner
        .codec
        .decode(lease_id)
        .map_err(|_| ApiError::NotFound("no such lease: the lease id is unknown or malformed".into()))
}

#[utoipa::path(post, path = "/v1/leases/{lease_id}/ack", tag = "workers", summary = "Report how a leased try ended",
    params(("lease_id" = String, Path, description = "As given by lease")),
    request_body = schema::AckBody,
    responses((status = 204, description = "Applied"),
               (status = 400, description = "Invalid body, or a lease id that is not text", body = ErrorBody),
               (status = 404, description = "Unknown or malformed lease id", body = ErrorBody),
               (status = 409, description = "The lease expired, was superseded, or its task was replaced or cancelled; nothing changed", body = ErrorBody)))]
pub(crate) async fn ack<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<AckBody>,
) -> Answer {
    let token = decode_lease(&state, params.get("lease_id"))?;
    let outcome = body.into_outcome()?;
    state.inner.engine.ack(&token, outcome).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(post, path = "/v1/acks", tag = "workers", summary = "Many acks, each applied or refused on its own",
    request_body = schema::AcksBody,
    responses((status = 200, description = "One result per item, in order; a malformed item gets status 400", body = AcksResponse),
              (status = 400, description = "Not a batch of acks, or more than the limit (field acks)", body = ErrorBody),
              (status = 413, description = "The body is too large", body = ErrorBody)))]
pub(crate) async fn acks<S: Store>(
    State(state): State<AppState<S>>,
    Extension(caller): Caller,
    JsonBody(body): JsonBody<AcksBody>,
) -> Answer {
    check_batch_size("acks", body.acks.len(), state.inner.engine.limits().max_batch)?;
    let mut results = Vec::with_capacity(body.acks.len());
    let mut valid = Vec::with_capacity(body.acks.len());
    let mut positions = Vec::with_capacity(body.acks.len());
    for (i, value) in body.acks.into_iter().enumerate() {
        let lease_id = echoed(&value, "lease_id");
        let checked = from_value::<AckItem>(value).and_then(|item| {
            let token = decode_lease(&state, &item.lease_id)?;
            Ok((token, item.into_outcome()?))
        });
        match checked {
            Ok(ack) => {
                valid.push(ack);
                positions.push(i);
                results.push(AckResult { lease_id, status: 204, error: None });
            }
            Err(e) => {
                let e = e.within(&format!("acks[{i}]"));
                results.push(AckResult { lease_id, status: e.status().as_u16(), error: Some(e.detail()) });
            }
        }
    }
    // Refused as a whole, before any ack is applied, when one names a lease of a queue
    // the token may not work on.
    for (position, (token, _)) in positions.iter().zip(&valid) {
        if !caller.may(Permission::Work, token.queue.as_str()) {
            let refusal = caller.refusal(Permission::Work, token.queue.as_str());
            return Err(ApiError::Forbidden(format!("acks[{position}]: {refusal}; no ack was applied")));
        }
    }
    let applied = state.inner.engine.ack_many(valid).await?;
    for (i, result) in positions.into_iter().zip(applied) {
        if let Err(e) = result {
            let e = ApiError::from(e);
            results[i].status = e.status().as_u16();
            results[i].error = Some(e.detail());
        }
    }
    Ok(Json(AcksResponse { results }).into_response())
}

#[utoipa::path(post, path = "/v1/leases/{lease_id}/extend", tag = "workers", summary = "Extend a live lease from now",
    params(("lease_id" = String, Path, description = "As given by lease")),
    request_body(content = Option<schema::ExtendBody>, description = "Optional: no body extends by 30s"),
    responses((status = 200, body = ExtendResponse),
               (status = 400, description = "Invalid body, or a lease id that is not text", body = ErrorBody),
               (status = 404, description = "Unknown or malformed lease id", body = ErrorBody),
               (status = 409, description = "The lease is no longer live", body = ErrorBody)))]
pub(crate) async fn extend<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<ExtendBody>,
) -> Answer {
    let lease_id = params.get("lease_id");
    let token = decode_lease(&state, lease_id)?;
    let expires_at = state.inner.engine.extend(&token, body.lease_for()).await?;
    Ok(Json(ExtendResponse { lease_id: lease_id.to_owned(), expires_at }).into_response())
}

#[utoipa::path(get, path = "/v1/queues/{queue}/dead", tag = "dead", summary = "Dead tasks",
    params(("queue" = schema::QueueName, Path),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Tasks per page, default 100"),
           ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = TaskList),
              (status = 400, description = "Invalid queue, limit or cursor", body = ErrorBody)))]
pub(crate) async fn list_dead<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    QueryParams(query): QueryParams<ListQuery>,
) -> Answer {
    if query.state.is_some() {
        return Err(ApiError::invalid("state", "the dead list takes no state"));
    }
    if query.tag.is_some() {
        return Err(ApiError::invalid(
            "tag",
            "the dead list takes no tag: list GET /v1/queues/{queue}/tasks?state=dead&tag=… instead",
        ));
    }
    list(&state, params.get("queue"), Some(TaskState::Dead), &query).await
}

#[utoipa::path(post, path = "/v1/queues/{queue}/dead/{key}/retry", tag = "dead",
    summary = "Back to scheduled, due now, attempts reset (no body)",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    responses((status = 200, body = schema::Task),
              (status = 400, description = "Invalid queue or key", body = ErrorBody),
              (status = 404, description = "No such dead task", body = ErrorBody)))]
pub(crate) async fn retry_dead<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    let task = state.inner.engine.retry_dead(params.get("queue"), params.get("key")).await?;
    Ok(Json(task).into_response())
}

#[utoipa::path(post, path = "/v1/queues/{queue}/dead/retry", tag = "dead",
    summary = "Retry many dead tasks at once: every one ({}), those carrying a tag, or those among some keys",
    description = "Each goes back to scheduled, due now, attempts reset, as the retry of one does; keys naming no \
        dead task are passed over, and a key given twice counts once. In batches, each atomic: a task that dies \
        again meanwhile is not retried twice.",
    params(("queue" = schema::QueueName, Path)),
    request_body(content = schema::DeadRetryBody, description = "A JSON body is required: {} retries every dead task"),
    responses((status = 200, description = "How many were retried", body = RetriedResponse),
              (status = 400, description = "Invalid queue, tag or keys: both tag and keys, a null one, a key that \
                  is not text, more keys than the batch limit (field keys)", body = ErrorBody)))]
pub(crate) async fn retry_dead_many<S: Store>(
    State(state): State<AppState<S>>,
    params: Params,
    JsonBody(body): JsonBody<DeadRetryBody, true>,
) -> Answer {
    let engine = &state.inner.engine;
    let selection = body.into_selection(engine.limits().max_batch)?;
    let retried = engine.retry_dead_many(params.get("queue"), selection).await?;
    Ok(Json(RetriedResponse { retried }).into_response())
}

#[utoipa::path(delete, path = "/v1/queues/{queue}/dead/{key}", tag = "dead", summary = "Delete a dead task",
    params(("queue" = schema::QueueName, Path), ("key" = schema::TaskKey, Path)),
    responses((status = 204, description = "Deleted"),
              (status = 400, description = "Invalid queue or key", body = ErrorBody),
              (status = 404, description = "No such dead task", body = ErrorBody)))]
pub(crate) async fn delete_dead<S: Store>(State(state): State<AppState<S>>, params: Params) -> Answer {
    state.inner.engine.delete_dead(params.get("queue"), params.get("key")).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(get, path = "/v1/access", tag = "operations",
    summary = "What the calling token may do: its permissions and the queue patterns they hold on",
    description = "Any valid token may ask. A token of tokens (or a server without tokens) has every permission \
        on [\"*\"]. The dashboard shows only the controls this allows.",
    responses((status = 200, body = AccessResponse)))]
pub(crate) async fn access(Extension(caller): Caller) -> Answer {
    Ok(Json(AccessResponse::of(&caller)).into_response())
}
