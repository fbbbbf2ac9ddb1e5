//! Reading requests: path segments, query strings and JSON bodies, each failure turned
//! into an [`ApiError`] that names the field at fault.
//!
//! Invariants: nothing here panics on any input; a body is parsed only after it was
//! read within the route's size limit (over it: 413); an empty body reads as `{}`, so
//! requests whose fields all have defaults may omit it, except where the route needs a
//! body ([`JsonBody`] with `REQUIRED`); JSON errors carry the path of the offending
//! value (`repeat.every`, `tasks[3].key`), or no field when the JSON itself is
//! malformed; a path segment or query value with a `%` not followed by two hex digits
//! is refused, naming it, never taken literally (`%zz` and `%25zz` would name one task).
//!
//! Its unit tests are in `tests`, a file of their own to keep this one short.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use axum::extract::rejection::{BytesRejection, RawPathParamsRejection};
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::{StatusCode, header, request::Parts};
use bytes::Bytes;
use punctual_core::Timestamp;
use punctual_core::time::parse_duration;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use crate::error::ApiError;

/// The route's path parameters, percent-decoded.
#[derive(Debug)]
pub(crate) struct Params(HashMap<String, String>);

impl Params {
    /// The parameter `name`; routes only ask for parameters they declare.
    pub(crate) fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params, ApiError> {
        if let Some(template) = parts.extensions.get::<MatchedPath>() {
            check_escapes(template.as_str(), parts.uri.path())?;
        }
        // The router has percent-decoded the values already.
        let raw = RawPathParams::from_request_parts(parts, state).await.map_err(|e| match e {
            RawPathParamsRejection::InvalidUtf8InPathParam(e) => {
                // Its text is "Invalid UTF-8 in `name`".
                let text = e.to_string();
                let name = text.split('`').nth(1).unwrap_or("path").to_owned();
                ApiError::invalid(&name, format!("the {name} in the path is not valid UTF-8 once percent-decoded"))
            }
            other => ApiError::internal(format!("path parameters: {other}")),
        })?;
        Ok(Params(raw.iter().map(|(name, value)| (name.to_owned(), value.to_owned())).collect()))
    }
}

/// Refuses a path parameter whose raw text has a `%` that starts no escape: the router
/// would take it literally. `template` is the route (`/v1/queues/{queue}/tasks/{key}`).
fn check_escapes(template: &str, path: &str) -> Result<(), ApiError> {
    for (segment, raw) in template.split('/').zip(path.split('/')) {
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}'))
            && !escapes_are_valid(raw)
        {
            return Err(ApiError::invalid(
                name,
                format!("the {name} in the path has a '%' that starts no escape: send '%' itself as %25"),
            ));
        }
    }
    Ok(())
}

/// Whether every `%` in `raw` is followed by two hex digits.
fn escapes_are_valid(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'%')
        .all(|(i, _)| bytes.get(i + 1..i + 3).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)))
}

/// A JSON body deserialized into `T` (a raw request struct); with `REQUIRED`, an empty
/// body is refused instead of read as `{}`.
#[derive(Debug)]
pub(crate) struct JsonBody<T, const REQUIRED: bool = false>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned, const REQUIRED: bool> FromRequest<S> for JsonBody<T, REQUIRED> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<JsonBody<T, REQUIRED>, ApiError> {
        if let Some(content_type) = req.headers().get(header::CONTENT_TYPE) {
            let text = content_type.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = text.split(';').next().unwrap_or("").trim();
            if !(essence == "application/json" || essence.ends_with("+json")) {
                return Err(ApiError::bad_request(format!(
                    "the body must be JSON: send it with 'Content-Type: application/json' (got '{essence}')"
                )));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(body_rejection)?;
        if REQUIRED && bytes.trim_ascii().is_empty() {
            return Err(ApiError::bad_request("this request needs a JSON body: send {} for all the defaults"));
        }
        parse_json(&bytes).map(JsonBody)
    }
}

fn body_rejection(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge { field: None, message: "the request body is over this route's size limit".into() }
    } else {
        ApiError::bad_request(format!("the request body could not be read: {}", rejection.body_text()))
    }
}

/// Parses `bytes` (empty: `{}`) as a `T`, naming the field of any error.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes: &[u8] = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => b"{}",
        Some(b'{') => bytes,
        // serde would read a struct from an array too; the API takes objects only.
        Some(_) => return Err(ApiError::bad_request("the body must be a JSON object")),
    };
    // Syntax first, so that every later error is about a value and can name its field.
    serde_json::from_slice::<de::IgnoredAny>(bytes)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(json_error)?;
    de.end().map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

/// Deserializes an already parsed JSON value (an item of a batch) as a `T`.
pub(crate) fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request("expected a JSON object"));
    }
    serde_path_to_error::deserialize(value).map_err(json_error)
}

fn json_error(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    if inner.is_syntax() || inner.is_eof() {
        // The syntax was checked before: what serde_json still calls one is a field's
        // array with more elements than the object it stands for has fields.
        if path != "." {
            return ApiError::invalid(
                path,
                "an array with more elements than this field takes; write it as a JSON object",
            );
        }
        return ApiError::bad_request(format!("the body is not valid JSON: {inner}"));
    }
    let message = inner.to_string();
    // A missing or repeated field is reported at its parent: name the field itself.
    let named = ["missing field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    let field = match (named, path.as_str()) {
        (Some(name), ".") => Some(name),
        (Some(name), parent) => Some(format!("{parent}.{name}")),
        (None, ".") => None,
        (None, _) => Some(path),
    };
    // serde_json appends " at line L column C"; the field says where instead.
    let message = match message.rfind(" at line ") {
        Some(at) if field.is_some() => message[..at].to_owned(),
        _ => message,
    };
    match field {
        Some(field) => ApiError::invalid(field, message),
        None => ApiError::bad_request(message),
    }
}

/// A query string deserialized into `T`.
#[derive(Debug)]
pub(crate) struct QueryParams<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<QueryParams<T>, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded_like(query).map(QueryParams)
    }
}

fn serde_urlencoded_like<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let mut pairs = serde_json::Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            let s = s.replace('+', " ");
            percent_encoding::percent_decode_str(&s).decode_utf8().map(|c| c.into_owned())
        };
        let name = decode(name)
            .ok()
            .filter(|_| escapes_are_valid(name))
            .ok_or_else(|| ApiError::bad_request("the query string is not valid UTF-8 with valid % escapes"))?;
        if !escapes_are_valid(value) {
            return Err(ApiError::invalid(&name, "the value has a '%' that starts no escape: send '%' itself as %25"));
        }
        let value = decode(value).map_err(|_| ApiError::invalid(&name, "the value is not valid UTF-8"))?;
        if pairs.insert(name.clone(), serde_json::Value::String(value)).is_some() {
            return Err(ApiError::invalid(name, "the parameter is given more than once"));
        }
    }
    from_value(serde_json::Value::Object(pairs))
}

/// A duration as the API takes it: a string (`"30s"`, `"1h 30m"`) or integer
/// milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiDuration(pub(crate) Duration);

impl<'de> serde::Deserialize<'de> for ApiDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ApiDuration, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ApiDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration: a string such as \"30s\" or \"1h 30m\", or integer milliseconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ApiDuration, E> {
                parse_duration(v).map(ApiDuration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ApiDuration, E> {
                Ok(ApiDuration(Duration::from_millis(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ApiDuration, E> {
                self.visit_u64(DURATION.int(v)?)
            }
            /// A whole number written as a float (`15.0`, as many JSON encoders write
            /// numbers) is that many milliseconds.
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ApiDuration, E> {
                self.visit_u64(DURATION.float(v)?)
            }
        }
        d.deserialize_any(V)
    }
}

/// A count (`max_attempts`, `times`, `max`): a whole number, also when written as a
/// float (`3.0`): JSON Schema's `integer`, which the document says, is both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiCount(pub(crate) u32);

impl<'de> serde::Deserialize<'de> for ApiCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ApiCount, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ApiCount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ApiCount, E> {
                u32::try_from(v).map(ApiCount).map_err(|_| E::custom(format!("{v} is over {}", u32::MAX)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ApiCount, E> {
                self.visit_u64(COUNT.int(v)?)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ApiCount, E> {
                self.visit_u64(COUNT.float(v)?)
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON number that must be whole and at least 0, and how one that is not is
/// refused: each text follows the number (`-3 is negative: …`).
struct Whole {
    negative: &'static str,
    fraction: &'static str,
}

const DURATION: Whole = Whole {
    negative: "is negative: a duration is at least 0",
    fraction: "is not whole milliseconds: write an integer or a string such as \"1s 500ms\"",
};
const COUNT: Whole = Whole { negative: "is negative", fraction: "is not a whole number" };
const TIME: Whole = Whole { negative: "is before 1970-01-01T00:00:00Z", fraction: "is not whole epoch milliseconds" };

impl Whole {
    fn int<E: de::Error>(&self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("{v} {}", self.negative)))
    }

    /// A float with no fraction is its whole number (`15.0` is 15).
    fn float<E: de::Error>(&self, v: f64) -> Result<u64, E> {
        if !v.is_finite() || v.fract() != 0.0 {
            return Err(E::custom(format!("{v} {}", self.fraction)));
        }
        if v < 0.0 {
            return Err(E::custom(format!("{v} {}", self.negative)));
        }
        // `as` saturates: a float beyond u64::MAX becomes u64::MAX, which every
        // caller refuses as too large on its own.
        Ok(v as u64)
    }
}

/// The smallest integer time taken: below it, a number can only be epoch seconds
/// (100,000,000,000 ms is 1973-03-03; as seconds, the year 5138).
pub(crate) const MIN_EPOCH_MS: u64 = 100_000_000_000;

/// An instant as the API takes it: RFC 3339 (before 1970 read as 1970, a time in the
/// past like any other) or integer epoch milliseconds (at least [`MIN_EPOCH_MS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiTime(pub(crate) Timestamp);

impl<'de> serde::Deserialize<'de> for ApiTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ApiTime, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ApiTime;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a time: an RFC 3339 string such as \"2026-11-30T09:00:00Z\", or integer epoch milliseconds",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ApiTime, E> {
                match v.trim().parse::<u64>() {
                    Ok(ms) => self.visit_u64(ms),
                    // API.md: a time in the past means now, also one before 1970.
                    Err(_) => Timestamp::parse_past_as_epoch(v).map(ApiTime).map_err(E::custom),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ApiTime, E> {
                if v < MIN_EPOCH_MS {
                    return Err(E::custom(format!(
                        "{v} can only be epoch seconds (as milliseconds it is before 1973): \
                         send epoch milliseconds or an RFC 3339 time such as \"2026-11-30T09:00:00Z\""
                    )));
                }
                // The text form checks the range (up to the year 9999).
                Timestamp::parse(&v.to_string()).map(ApiTime).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ApiTime, E> {
                self.visit_u64(TIME.int(v)?)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ApiTime, E> {
                self.visit_u64(TIME.float(v)?)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests;
