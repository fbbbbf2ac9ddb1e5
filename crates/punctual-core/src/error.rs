//! The one error type of the core, shared by the [`Store`](crate::Store) seam and the
//! [`Engine`](crate::Engine). Each variant is something a caller can act on; the HTTP
//! layer maps each to exactly one status code.

use std::fmt;

/// What went wrong, in terms a caller can act on.
///
/// Not `#[non_exhaustive]`: the workspace's mappings of it (the HTTP error body) match
/// every variant, so a new variant is a compile error there instead of a silent 500.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bad input: `field` names what to fix, `reason` says how. Nothing was changed.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// The payload, serialized as JSON, is larger than the configured limit.
    #[error("payload: {size} bytes is over the limit of {limit} bytes")]
    PayloadTooLarge { size: usize, limit: usize },
    /// The queue has no such task (or no such dead task).
    #[error("{0} not found")]
    NotFound(String),
    /// The task exists and `if_exists` was `error`.
    #[error("{0}")]
    Conflict(String),
    /// The lease expired, was superseded by a newer lease, or its task was replaced,
    /// cancelled or completed meanwhile. Nothing was changed.
    #[error("the lease is no longer live: it expired, or its task was replaced, cancelled or completed")]
    LeaseLost,
    /// The store cannot be reached or cannot write (disk full, Redis down). Retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The engine is shutting down and takes no new work.
    #[error("punctual is shutting down")]
    ShuttingDown,
    /// A bug or corrupted data; the message is for logs, not for clients.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::Invalid`] for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl fmt::Display) -> Error {
        Error::Invalid { field: field.into(), reason: reason.to_string() }
    }

    /// Whether trying the same call again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }

    /// The input field this error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Invalid { field, .. } => Some(field),
            Error::PayloadTooLarge { .. } => Some("payload"),
            _ => None,
        }
    }
}

/// Result with the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
