//! The dead-task routes (API.md "Dead tasks"): list them, retry one or many, delete one.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use punctual_core::{Store, TaskState};

use super::Answer;
use super::tasks::list;
use crate::bodies::schema;
use crate::bodies::{DeadRetryBody, ListQuery, RetriedResponse, TaskList};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params, QueryParams};
use crate::state::AppState;

#[utoipa::path(get, path = "/v1/queues/{queue}/dead", tag = "dead", summary = "Dead tasks",
    params(("queue" = schema::QueueName, Path),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Tasks per page, default 100"),
           ("cursor" = Option<schema::Cursor>, Query, description = "next_cursor of the previous page")),
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
