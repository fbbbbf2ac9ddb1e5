//! Reading requests: path segments, query strings and JSON bodies, each failure turned
//! into an [`ApiError`] that names the field at fault.
//!
//! Invariants: nothing here panics on any input; a body is parsed only after it was
//! read within the route's size limit (over it: 413); an empty body reads as `{}`, so
//! requests whose fields all have defaults may omit it; JSON errors carry the path of
//! the offending value (`repeat.every`, `tasks[3].key`), or no field when the JSON
//! itself is malformed.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use axum::extract::rejection::{BytesRejection, RawPathParamsRejection};
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
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

/// A JSON body deserialized into `T` (a raw request struct).
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<JsonBody<T>, ApiError> {
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
        return ApiError::bad_request(format!("the body is not valid JSON: {inner}"));
    }
    // serde_json appends " at line L column C"; the field says where instead.
    let message = inner.to_string();
    let message = match message.rfind(" at line ") {
        Some(at) if path != "." => message[..at].to_owned(),
        _ => message,
    };
    // A missing field is reported at its parent: name the field itself.
    let missing = message.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()).map(str::to_owned);
    match (missing, path.as_str()) {
        (Some(name), ".") => ApiError::invalid(name, message),
        (Some(name), parent) => ApiError::invalid(format!("{parent}.{name}"), message),
        (None, ".") => ApiError::bad_request(message),
        (None, _) => ApiError::invalid(path, message),
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
        let name = decode(name).map_err(|_| ApiError::bad_request("the query string is not valid UTF-8"))?;
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
                u64::try_from(v)
                    .map(|ms| ApiDuration(Duration::from_millis(ms)))
                    .map_err(|_| E::custom(format!("{v} is negative: a duration is at least 0")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ApiDuration, E> {
                Err(E::custom(format!(
                    "{v} is not whole milliseconds: write an integer or a string such as \"1s 500ms\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// An instant as the API takes it: RFC 3339 or integer epoch milliseconds.
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
                Timestamp::parse(v).map(ApiTime).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ApiTime, E> {
                // The text form checks the range (up to the year 9999).
                Timestamp::parse(&v.to_string()).map(ApiTime).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ApiTime, E> {
                Err(E::custom(format!("{v} is before 1970-01-01T00:00:00Z")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ApiTime, E> {
                Err(E::custom(format!("{v} is not whole epoch milliseconds")))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        delay: Option<ApiDuration>,
        at: Option<ApiTime>,
        #[serde(default)]
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    fn field(json: &str) -> Option<String> {
        parse_json::<Item>(json.as_bytes()).unwrap_err().detail().field
    }

    #[test]
    fn durations_and_times_in_every_form() {
        let item: Item = parse_json(br#"{"delay": "1h 30m", "at": "2026-11-30T09:00:00+08:00"}"#).unwrap();
        assert_eq!(item.delay, Some(ApiDuration(Duration::from_secs(5400))));
        assert_eq!(item.at.unwrap().0.to_string(), "2026-11-30T01:00:00.000Z");
        let item: Item = parse_json(br#"{"delay": 1500, "at": 1000}"#).unwrap();
        assert_eq!(item.delay, Some(ApiDuration(Duration::from_millis(1500))));
        assert_eq!(item.at.unwrap().0.as_millis(), 1000);
        let item: Item = parse_json(b"  ").unwrap();
        assert!(item.delay.is_none());
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field(r#"{"delay": "soon"}"#).as_deref(), Some("delay"));
        assert_eq!(field(r#"{"delay": -5}"#).as_deref(), Some("delay"));
        assert_eq!(field(r#"{"delay": 1.5}"#).as_deref(), Some("delay"));
        assert_eq!(field(r#"{"delay": true}"#).as_deref(), Some("delay"));
        assert_eq!(field(r#"{"at": "tomorrow"}"#).as_deref(), Some("at"));
        assert_eq!(field(r#"{"at": 99999999999999999}"#).as_deref(), Some("at"));
        assert_eq!(field(r#"{"items": [{"n": 1}, {"n": "x"}]}"#).as_deref(), Some("items[1].n"));
        assert_eq!(field(r#"{"dealy": "1s"}"#).as_deref(), Some("dealy"));
        assert_eq!(field(r#"{"items": [{}]}"#).as_deref(), Some("items[0].n"));
        assert_eq!(field(r#"{"delay": "1s""#), None);
        assert_eq!(field(r#"{} {}"#), None);
        assert_eq!(field(r#"[1]"#), None);
    }

    #[test]
    fn query_strings_decode_and_refuse_repeats() {
        #[derive(Debug, Deserialize)]
        struct Q {
            a: Option<String>,
        }
        let q: Q = serde_urlencoded_like("a=x%2Fy+z").unwrap();
        assert_eq!(q.a.as_deref(), Some("x/y z"));
        let e = serde_urlencoded_like::<Q>("a=1&a=2").unwrap_err();
        assert_eq!(e.detail().field.as_deref(), Some("a"));
    }
}
