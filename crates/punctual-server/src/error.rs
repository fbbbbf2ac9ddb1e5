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
    /// 403: the token lacks the permission; the message names it and the queue.
    Forbidden(String),
    /// 404.
    NotFound(String),
    /// 405: the path exists, the method does not (the router adds the `Allow` header).
    MethodNotAllowed(String),
    /// 408: the request body did not arrive within the request timeout.
    RequestTimeout { after: std::time::Duration },
    /// 409.
    Conflict(String),
    /// 413: the payload or the request body is too large.
    PayloadTooLarge { field: Option<String>, message: String },
    /// 414: the request line is longer than the server reads (see `head`).
    UriTooLong,
    /// 431: the request's head is larger than the server reads (see `head`).
    HeadersTooLarge,
    /// 429: the token's ingress limit (`[[access]] rate`) is reached; `Retry-After`
    /// says when one more request gets through.
    TooManyRequests { rate: punctual_core::policy::Rate, retry_after: std::time::Duration },
    /// 503: the store is down or the server is stopping; the detail is logged.
    Unavailable { detail: String },
    /// 503: the request did not complete in time (a slow client or a slow store).
    TimedOut { after: std::time::Duration },
    /// 500: a bug or corrupt data; the detail is logged.
    Internal { detail: String },
}

/// What kind of refusal or failure an error body reports; each code has one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    /// 400.
    InvalidArgument,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 408.
    RequestTimeout,
    /// 409.
    Conflict,
    /// 413.
    PayloadTooLarge,
    /// 414.
    UriTooLong,
    /// 431.
    HeadersTooLarge,
    /// 429.
    TooManyRequests,
    /// 500.
    Internal,
    /// 503.
    Unavailable,
}

impl ErrorCode {
    pub(crate) fn status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UriTooLong => StatusCode::URI_TOO_LONG,
            ErrorCode::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ErrorCode::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// The `error` member of an error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    pub(crate) code: ErrorCode,
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
        self.code().status()
    }

    pub(crate) fn code(&self) -> ErrorCode {
        match self {
            ApiError::Invalid { .. } => ErrorCode::InvalidArgument,
            ApiError::Unauthorized => ErrorCode::Unauthorized,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::MethodNotAllowed(_) => ErrorCode::MethodNotAllowed,
            ApiError::RequestTimeout { .. } => ErrorCode::RequestTimeout,
            ApiError::Conflict(_) => ErrorCode::Conflict,
            ApiError::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            ApiError::UriTooLong => ErrorCode::UriTooLong,
            ApiError::HeadersTooLarge => ErrorCode::HeadersTooLarge,
            ApiError::TooManyRequests { .. } => ErrorCode::TooManyRequests,
            ApiError::Unavailable { .. } | ApiError::TimedOut { .. } => ErrorCode::Unavailable,
            ApiError::Internal { .. } => ErrorCode::Internal,
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
        let (message, field) = match self {
            ApiError::Invalid { field, message } => (message.clone(), field.clone()),
            ApiError::Unauthorized => {
                ("a valid token is required: send the header 'Authorization: Bearer <token>'".to_owned(), None)
            }
            ApiError::Forbidden(message) | ApiError::NotFound(message) => (message.clone(), None),
            ApiError::MethodNotAllowed(message) => (message.clone(), None),
            ApiError::RequestTimeout { after } => {
                (format!("the request body did not arrive within {}", format_duration(*after)), None)
            }
            ApiError::Conflict(message) => (message.clone(), None),
            ApiError::PayloadTooLarge { field, message } => (message.clone(), field.clone()),
            ApiError::UriTooLong => {
                ("the request line is too long: the path and query string are at most 65,534 bytes".to_owned(), None)
            }
            ApiError::HeadersTooLarge => {
                ("the request's head (request line and headers) is over the limit of 408 KiB".to_owned(), None)
            }
            ApiError::TooManyRequests { rate, retry_after } => (
                format!(
                    "this token may make {rate} requests (its [[access]] rate); the next one gets through in {}",
                    format_duration(*retry_after)
                ),
                None,
            ),
            ApiError::Unavailable { detail } => {
                tracing::warn!(error = %detail, "answering 503");
                ("the service is unavailable at the moment; retry later".to_owned(), None)
            }
            ApiError::TimedOut { after } => {
                (format!("the request did not complete within {}; retry later", format_duration(*after)), None)
            }
            ApiError::Internal { detail } => {
                tracing::error!(error = %detail, "internal error");
                ("an internal error occurred; it has been logged".to_owned(), None)
            }
        };
        ErrorDetail { code: self.code(), message, field }
    }

    /// The whole error body as JSON text.
    pub(crate) fn body_json(&self) -> String {
        serde_json::to_string(&ErrorBody { error: self.detail() }).unwrap_or_default()
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
        if let ApiError::TooManyRequests { retry_after, .. } = self {
            // Whole seconds, rounded up: a client that waits them gets through.
            let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        }
        response
    }
}

/// Every variant by name, no wildcard: a new core error is a compile error here, not a
/// silent 500.
impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> ApiError {
        let message = e.to_string();
        match e {
            CoreError::Invalid { field, reason } => ApiError::Invalid { field: Some(field), message: reason },
            CoreError::PayloadTooLarge { .. } => ApiError::PayloadTooLarge { field: Some("payload".into()), message },
            CoreError::NotFound(_) => ApiError::NotFound(message),
            CoreError::Conflict(_) | CoreError::LeaseLost => ApiError::Conflict(message),
            CoreError::Unavailable(_) | CoreError::ShuttingDown => ApiError::Unavailable { detail: message },
            CoreError::Internal(_) => ApiError::Internal { detail: message },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_one_status_and_code_each() {
        let cases = [
            (CoreError::invalid("delay", "bad"), 400, ErrorCode::InvalidArgument, Some("delay")),
            (CoreError::PayloadTooLarge { size: 2, limit: 1 }, 413, ErrorCode::PayloadTooLarge, Some("payload")),
            (CoreError::NotFound("task".into()), 404, ErrorCode::NotFound, None),
            (CoreError::Conflict("exists".into()), 409, ErrorCode::Conflict, None),
            (CoreError::LeaseLost, 409, ErrorCode::Conflict, None),
            (CoreError::Unavailable("disk full at /secret/path".into()), 503, ErrorCode::Unavailable, None),
            (CoreError::ShuttingDown, 503, ErrorCode::Unavailable, None),
            (CoreError::Internal("row 7 is corrupt".into()), 500, ErrorCode::Internal, None),
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
