//! The one error type of this crate: what can be wrong with an action's configuration.
//!
//! Failures while delivering are never errors: they become an
//! [`Outcome`](punctual_core::Outcome) (retry, fail), so a task always ends up
//! somewhere visible.

/// An action that cannot be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActionError {
    /// A value is wrong; `field` names the configuration key.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A template does not compile.
    #[error("template {field}: {reason}")]
    Template { field: String, reason: String },
    /// A secret names an environment variable that is not set.
    #[error("{field}: the environment variable {var} is not set")]
    MissingEnv { field: String, var: String },
}

impl ActionError {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ActionError {
        ActionError::Invalid { field: field.into(), reason: reason.into() }
    }

    /// The configuration key at fault.
    pub fn field(&self) -> &str {
        match self {
            ActionError::Invalid { field, .. }
            | ActionError::Template { field, .. }
            | ActionError::MissingEnv { field, .. } => field,
        }
    }
}
