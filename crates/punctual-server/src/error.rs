//! The one mapping from failures to the API's error body,
//! `{"error": {"code", "message", "field"}}`.
//!
//! Invariants: every non-2xx answer the server gives goes through
//! [`ApiError::into_response`] (routing misses, extractor rejections, timeouts and
//! panics included); the status and the `code` always agree as API.md lists them; the
//! detail of an internal or store failure is logged, never sent to the client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use punctual_core::Error as CoreError;
use punctual_core::time::format_duration;
use serde::Serialize;
use utoipa::ToSchema;

/// A refusal or failure, as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// 400: the input is wrong; `field` names what to fix when one field is at fault.
    Invalid { field: Option<String>, message: String },
    /// 401: no valid bearer token.
    Unauthorized,
    /// 404.
    NotFound(String),
    /// 409.
    Conflict(String),
    /// 413: the payload or the request body is too large.
    PayloadTooLarge { field: Option<String>, message: String },
    /// 503: the store is down or the server is stopping; the detail is logged.
    Unavailable { detail: String },
    /// 503: the request did not complete in time (a slow client or a slow store).
    TimedOut { after: std::time::Duration },
    /// 500: a bug or corrupt data; the detail is logged.
    Internal { detail: String },
}

/// The `error` member of an error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// `invalid_argument`, `unauthorized`, `not_found`, `conflict`, `payload_too_large`,
    /// `unavailable` or `internal`.
    #[schema(example = "invalid_argument")]
    pub(crate) code: &'static str,
    /// A sentence for people.
    pub(crate) message: String,
    /// The request field at fault, e.g. `delay` or `tasks[3].key`.
    pub(crate) field: Option<String>,
}

/// The body of every non-2xx answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    pub(crate) error: ErrorDetail,
}

impl ApiError {
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::Invalid { field: Some(field.into()), message: message.into() }
    }

    /// A 400 about the request as a whole.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::Invalid { field: None, message: message.into() }
    }

    pub(crate) fn internal(detail: impl std::fmt::Display) -> ApiError {
        ApiError::Internal { detail: detail.to_string() }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::Invalid { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unavailable { .. } | ApiError::TimedOut { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Prefixes the field with `prefix` (`key` in item 3 of `tasks` becomes
    /// `tasks[3].key`); an error without a field gets `prefix` itself.
    pub(crate) fn within(self, prefix: &str) -> ApiError {
        let join = |field: Option<String>| match field {
            Some(f) if f.starts_with('[') => Some(format!("{prefix}{f}")),
            Some(f) => Some(format!("{prefix}.{f}")),
            None => Some(prefix.to_owned()),
        };
        match self {
            ApiError::Invalid { field, message } => ApiError::Invalid { field: join(field), message },
            ApiError::PayloadTooLarge { field, message } => ApiError::PayloadTooLarge { field: join(field), message },
            other => other,
        }
    }

    /// Replaces the field of a 400 with `field`.
    pub(crate) fn within_field(self, field: &str) -> ApiError {
        match self {
            ApiError::Invalid { message, .. } => ApiError::invalid(field, message),
            other => other,
        }
    }

    /// The body's `error` member. Logs what clients must not see.
    pub(crate) fn detail(&self) -> ErrorDetail {
        let (code, message, field) = match self {
            ApiError::Invalid { field, message } => ("invalid_argument", message.clone(), field.clone()),
            ApiError::Unauthorized => (
                "unauthorized",
                "a valid token is required: send the header 'Authorization: Bearer <token>'".to_owned(),
                None,
            ),
            ApiError::NotFound(message) => ("not_found", message.clone(), None),
            ApiError::Conflict(message) => ("conflict", message.clone(), None),
            ApiError::PayloadTooLarge { field, message } => ("payload_too_large", message.clone(), field.clone()),
            ApiError::Unavailable { detail } => {
                tracing::warn!(error = %detail, "answering 503");
                ("unavailable", "the service is unavailable at the moment; retry later".to_owned(), None)
            }
            ApiError::TimedOut { after } => (
                "unavailable",
                format!("the request did not complete within {}; retry later", format_duration(*after)),
                None,
            ),
            ApiError::Internal { detail } => {
                tracing::error!(error = %detail, "internal error");
                ("internal", "an internal error occurred; it has been logged".to_owned(), None)
            }
        };
        ErrorDetail { code, message, field }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody { error: self.detail() };
        let mut response = (status, Json(body)).into_response();
        if self == ApiError::Unauthorized {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> ApiError {
        let message = e.to_string();
        match e {
            CoreError::Invalid { field, reason } => ApiError::Invalid { field: Some(field), message: reason },
            CoreError::PayloadTooLarge { .. } => ApiError::PayloadTooLarge { field: Some("payload".into()), message },
            CoreError::NotFound(_) => ApiError::NotFound(message),
            CoreError::Conflict(_) | CoreError::LeaseLost => ApiError::Conflict(message),
            CoreError::Unavailable(_) | CoreError::ShuttingDown => ApiError::Unavailable { detail: message },
            _ => ApiError::Internal { detail: message },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_one_status_and_code_each() {
        let cases = [
            (CoreError::invalid("delay", "bad"), 400, "invalid_argument", Some("delay")),
            (CoreError::PayloadTooLarge { size: 2, limit: 1 }, 413, "payload_too_large", Some("payload")),
            (CoreError::NotFound("task".into()), 404, "not_found", None),
            (CoreError::Conflict("exists".into()), 409, "conflict", None),
            (CoreError::LeaseLost, 409, "conflict", None),
            (CoreError::Unavailable("disk full at /secret/path".into()), 503, "unavailable", None),
            (CoreError::ShuttingDown, 503, "unavailable", None),
            (CoreError::Internal("row 7 is corrupt".into()), 500, "internal", None),
        ];
        for (core, status, code, field) in cases {
            let api = ApiError::from(core);
            let detail = api.detail();
            assert_eq!(api.status().as_u16(), status);
            assert_eq!(detail.code, code);
            assert_eq!(detail.field.as_deref(), field);
            assert!(!detail.message.contains("secret") && !detail.message.contains("row 7"), "{detail:?}");
        }
    }

    #[test]
    fn fields_nest_inside_batches() {
        let e = ApiError::invalid("repeat.every", "x").within("tasks[3]");
        assert_eq!(e.detail().field.as_deref(), Some("tasks[3].repeat.every"));
        let e = ApiError::bad_request("x").within("acks[0]");
        assert_eq!(e.detail().field.as_deref(), Some("acks[0]"));
        assert_eq!(ApiError::NotFound("x".into()).within("acks[0]").detail().field, None);
    }
}
