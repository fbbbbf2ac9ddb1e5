//! The API's request and response bodies (API.md), and the validation that turns raw
//! requests into core types.
//!
//! Two stages, like the config: serde reads a request into a raw struct here
//! (`deny_unknown_fields`, so a misspelt field is an error, not a silently ignored
//! option); `into_*` methods then check what serde cannot (exactly one of `delay` and
//! `due_at`, an ack's fields matching its outcome) and build the core type. Every
//! error names its field. The engine checks the rest (names, limits, policies).
//!
//! Response structs serialize to exactly API.md's objects; the core [`Task`](punctual_core::Task) already
//! does. Each type also describes itself for `/openapi.json`, with the JSON Schemas of
//! `schema` where utoipa's derive cannot say it.
//!
//! One submodule per resource: `tasks` (schedule, batch, list, cancel, dead retry),
//! `leases` (lease, acks, extend) and `queues` (counts, detail, activity); every type
//! is re-exported here, so handlers name them `crate::bodies::…`.

mod leases;
mod patterns;
mod queues;
pub(crate) mod schema;
mod tasks;

pub(crate) use leases::*;
pub(crate) use queues::*;
pub(crate) use tasks::*;

use crate::error::ApiError;

/// The longest `error` text kept from an ack; longer ones are cut at a character
/// boundary (a worker's ack must not fail because its stack trace is long).
pub(crate) const MAX_ERROR_BYTES: usize = 4096;

/// `400` on `field` when a batch holds more than `limit` items (the server's
/// `max_batch`): the one check of every batch, tasks, acks and keys alike.
pub(crate) fn check_batch_size(field: &str, items: usize, limit: usize) -> Result<(), ApiError> {
    if items > limit {
        return Err(ApiError::invalid(field, format!("{items} {field} is over the batch limit of {limit}")));
    }
    Ok(())
}

/// The helpers of the tests of the submodules.
#[cfg(test)]
mod testing {
    use crate::error::ApiError;

    pub(super) fn field_of(r: Result<impl std::fmt::Debug, ApiError>) -> Option<String> {
        r.unwrap_err().detail().field
    }
}
