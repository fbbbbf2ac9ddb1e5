//! The routes of pull workers (API.md "Pull workers"): lease (a long poll whose
//! leases are released if the client never receives them, see `delivery`), ack one or
//! many (each lease's queue checked against the caller before any is applied), extend.

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use punctual_core::Store;

use super::{Answer, echoed};
use crate::bodies::schema;
use crate::bodies::{
    AckBody, AckItem, AckResult, AcksBody, AcksResponse, ExtendBody, ExtendResponse, LeaseBody, LeaseItem,
    LeaseResponse, check_batch_size,
};
use crate::config::access::Permission;
use crate::delivery::{DeliveryBody, Undelivered};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, Params, from_value};
use crate::shared::Caller;
use crate::state::AppState;
use crate::telemetry;

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
    tokio::spawn(punctual_core::history::on_behalf(async move {
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
    }));
    let (leases, undelivered) =
        answered.await.map_err(|_| ApiError::internal("the lease task ended without an answer"))??;
    let items: Vec<LeaseItem> = leases
        .into_iter()
        .map(|lease| LeaseItem {
            lease_id: state.inner.codec.encode(&lease.token),
            expires_at: lease.expires_at,
            attempt: lease.attempt,
            delivery_id: lease.delivery_id,
            scheduled_for: lease.scheduled_for,
            missed: lease.missed,
            task: lease.task,
        })
        .collect();
    let single = match items.as_slice() {
        [one] => Some((one.task.key.as_str(), one.delivery_id.as_str(), one.attempt)),
        _ => None,
    };
    telemetry::record_leases(items.len(), single);
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
    telemetry::record_task(token.queue.as_str(), token.key.as_str());
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
    telemetry::record_batch(body.acks.len());
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
    telemetry::record_task(token.queue.as_str(), token.key.as_str());
    let expires_at = state.inner.engine.extend(&token, body.lease_for()).await?;
    Ok(Json(ExtendResponse { lease_id: lease_id.to_owned(), expires_at }).into_response())
}
