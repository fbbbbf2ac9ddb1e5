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

/// The secrets that sign a queue's deliveries: the current one, and while it is being
/// rotated the previous one too. Each signs every delivery, the current one first
/// (`Punctual-Signature: t=…,v1=<current>,v1=<previous>`), so a receiver that checks
/// with either secret accepts it: receivers move to the new secret one by one, then
/// the previous one is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningSecrets {
    current: Secret,
    previous: Option<Secret>,
}

impl SigningSecrets {
    /// Signs with `current` alone.
    pub fn new(current: Secret) -> SigningSecrets {
        SigningSecrets { current, previous: None }
    }

    /// Signs with `previous` too, after the current one.
    pub fn with_previous(mut self, previous: Secret) -> SigningSecrets {
        self.previous = Some(previous);
        self
    }

    /// The current secret.
    pub fn current(&self) -> &Secret {
        &self.current
    }

    /// The previous secret, while there is one.
    pub fn previous(&self) -> Option<&Secret> {
        self.previous.as_ref()
    }

    /// Each secret, the current one first.
    pub(crate) fn each(&self) -> impl Iterator<Item = &Secret> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
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
