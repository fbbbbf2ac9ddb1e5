//! Secrets (signing keys, robot keys, SMTP passwords).
//!
//! Invariant: a [`Secret`]'s text is never formatted: `Debug` and `Display` print
//! `"<redacted>"`, so a secret cannot reach a log line through a config struct or an
//! error. The text is read only where it is used (signing, a URL parameter, SMTP AUTH).

use std::fmt;

use crate::error::ActionError;

/// A secret value, redacted whenever it is formatted.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `text`.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// Reads the environment variable `var`; `field` names the configuration key for
    /// the error when it is unset or empty.
    pub fn from_env(var: &str, field: &str) -> Result<Secret, ActionError> {
        match std::env::var(var) {
            Ok(text) if !text.is_empty() => Ok(Secret(text)),
            _ => Err(ActionError::MissingEnv { field: field.to_owned(), var: var.to_owned() }),
        }
    }

    /// The secret text, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("whsec-123");
        assert_eq!(format!("{s:?} {s} {:?}", Some(&s)), "<redacted> <redacted> Some(<redacted>)");
        assert_eq!(s.expose(), "whsec-123");
        let e = Secret::from_env("PUNCTUAL_TEST_SURELY_UNSET_VAR", "secret_env").unwrap_err();
        assert_eq!(e.to_string(), "secret_env: the environment variable PUNCTUAL_TEST_SURELY_UNSET_VAR is not set");
    }
}
