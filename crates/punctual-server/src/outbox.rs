//! Draining the `[[outbox]]` databases: each row is applied as the HTTP request it
//! stands for (docs/outbox.md) — `schedule` as `PUT /v1/queues/{queue}/tasks/{key}`
//! with its body, checked as that route checks it (strict queues, targets); `cancel`
//! and `cancel_tag` as their `DELETE`s — through `Engine::apply_once`, so the row's
//! effect and its mark are one atomic step of the store and a row read again changes
//! nothing.
//!
//! A row the API would answer 4xx (an unknown op, a bad body, a queue the server does
//! not serve) is refused: the drain moves it to the failed table with the API's
//! message, and it holds nothing up. One the store cannot take now (503) stays. What
//! each drain does is in `/metrics` (`punctual_outbox_*`) and, while its database
//! cannot be read, in `/readyz`'s `warnings`.

use std::sync::Arc;

use punctual_core::engine::OutboxCall;
use punctual_core::outbox::{OutboxName, OutboxRow};
use punctual_core::{Error, Store};
use punctual_outbox::{Applied, Applier, DrainStatus, Row};
use tokio_util::sync::CancellationToken;

use crate::bodies::TaskBody;
use crate::config::outbox::{Drained, OutboxSettings};
use crate::error::ApiError;
use crate::extract::from_value;
use crate::state::AppState;

/// Starts a drain of each outbox, until `stop`; what each does is told to `state`.
pub(crate) fn start<S: Store>(
    state: &AppState<S>,
    outboxes: &[OutboxSettings],
    stop: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut drains = Vec::with_capacity(outboxes.len());
    let mut shown = Vec::with_capacity(outboxes.len());
    for outbox in outboxes {
        let status = Arc::new(DrainStatus::default());
        let applier = Arc::new(RowApplier { state: state.clone(), outbox: outbox.name.clone() });
        tracing::info!(
            outbox = %outbox.name, table = %outbox.drain.table, database = %outbox.database(),
            "draining the outbox"
        );
        drains.push(tokio::spawn(punctual_outbox::drain::run(
            outbox.drain.clone(),
            applier,
            Arc::clone(&status),
            stop.clone(),
        )));
        shown.push(Drained {
            name: outbox.name.clone(),
            table: outbox.drain.table.to_string(),
            database: outbox.database(),
            status,
        });
    }
    state.show_outboxes(shown);
    drains
}

/// Applies rows through the engine, as the API would.
struct RowApplier<S: Store> {
    state: AppState<S>,
    outbox: OutboxName,
}

impl<S: Store> Applier for RowApplier<S> {
    async fn apply(&self, rows: &[Row]) -> Vec<Applied> {
        let mut answers: Vec<Option<Applied>> = Vec::with_capacity(rows.len());
        let mut calls = Vec::with_capacity(rows.len());
        for row in rows {
            match self.call(row) {
                Ok(call) => {
                    calls.push((OutboxRow::new(self.outbox.clone(), row.id), row.queue.clone(), call));
                    answers.push(None);
                }
                Err(refusal) => answers.push(Some(Applied::Refused(refusal))),
            }
        }
        let applied = match self.state.inner.engine.apply_once_many(calls).await {
            Ok(applied) => applied,
            Err(e) => {
                let why = e.to_string();
                return answers.into_iter().map(|a| a.unwrap_or_else(|| Applied::Unavailable(why.clone()))).collect();
            }
        };
        let mut applied = applied.into_iter();
        answers
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| match applied.next() {
                    Some(Ok(Some(_))) => Applied::Applied,
                    Some(Ok(None)) => Applied::Replayed,
                    Some(Err(e @ (Error::Unavailable(_) | Error::ShuttingDown | Error::Internal(_)))) => {
                        Applied::Unavailable(e.to_string())
                    }
                    Some(Err(e)) => Applied::Refused(refused(&ApiError::from(e))),
                    None => Applied::Unavailable("the engine answered too few rows".into()),
                })
            })
            .collect()
    }
}

impl<S: Store> RowApplier<S> {
    /// The call `row` stands for, checked as its route checks the request; or why the
    /// API would refuse it.
    fn call(&self, row: &Row) -> Result<OutboxCall, String> {
        match row.op.as_str() {
            "schedule" => {
                self.state.schedulable(&row.queue).map_err(|e| refused(&e))?;
                let text = row.body.as_deref().unwrap_or("{}");
                let value: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| format!("body: not JSON ({e})"))?;
                let body: TaskBody = from_value(value).map_err(|e| refused(&e))?;
                if body.key.as_deref().is_some_and(|k| k != row.key) {
                    return Err("key: the body's key differs from the row's key; leave it out".into());
                }
                let spec = body.into_spec().map_err(|e| refused(&e))?;
                self.state.check_target(&row.queue, &spec).map_err(|e| refused(&e))?;
                Ok(OutboxCall::Schedule { key: row.key.clone(), spec: Box::new(spec) })
            }
            "cancel" => Ok(OutboxCall::Cancel { key: row.key.clone() }),
            "cancel_tag" => Ok(OutboxCall::CancelTag { tag: row.key.clone() }),
            other => Err(format!("op: '{other}' is not an outbox op; use schedule, cancel or cancel_tag")),
        }
    }
}

/// The API's answer as one line: `field: message`, or the message.
fn refused(e: &ApiError) -> String {
    let detail = e.detail();
    match detail.field {
        Some(field) => format!("{field}: {}", detail.message),
        None => detail.message,
    }
}
