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

/// An instant as the API takes it: RFC 3339 or integer epoch milliseconds (at least
/// [`MIN_EPOCH_MS`]).
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
                    Err(_) => Timestamp::parse(v).map(ApiTime).map_err(E::custom),
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
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::Value;

    use super::*;
    use crate::api::{ListQuery, TaskBody};

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
        let item: Item = parse_json(br#"{"delay": 1500, "at": 1796040000000}"#).unwrap();
        assert_eq!(item.delay, Some(ApiDuration(Duration::from_millis(1500))));
        assert_eq!(item.at.unwrap().0.as_millis(), 1_796_040_000_000);
        let item: Item = parse_json(br#"{"at": "1796040000000"}"#).unwrap();
        assert_eq!(item.at.unwrap().0.as_millis(), 1_796_040_000_000);
        let item: Item = parse_json(b"  ").unwrap();
        assert!(item.delay.is_none());
    }

    /// Issue 14 (8): `{"lease": 15.0}` was refused as "15 is not whole milliseconds".
    #[test]
    fn whole_numbers_written_as_floats_are_whole() {
        let item: Item = parse_json(br#"{"delay": 15.0, "at": 1.79604e12}"#).unwrap();
        assert_eq!(item.delay, Some(ApiDuration(Duration::from_millis(15))));
        assert_eq!(item.at.unwrap().0.as_millis(), 1_796_040_000_000);
        assert_eq!(parse_json::<Item>(br#"{"delay": -0.0}"#).unwrap().delay, Some(ApiDuration(Duration::ZERO)));
        let message = |json: &str| parse_json::<Item>(json.as_bytes()).unwrap_err().detail().message;
        assert_eq!(
            message(r#"{"delay": 15.5}"#),
            r#"15.5 is not whole milliseconds: write an integer or a string such as "1s 500ms""#
        );
        assert_eq!(message(r#"{"delay": -3.0}"#), "-3 is negative: a duration is at least 0");
        assert!(message(r#"{"at": 1796040000000.5}"#).contains("not whole epoch milliseconds"));
        #[derive(Debug, Deserialize)]
        struct Counts {
            n: ApiCount,
        }
        assert_eq!(parse_json::<Counts>(br#"{"n": 3.0}"#).unwrap().n, ApiCount(3));
        for (json, says) in [
            (r#"{"n": 3.5}"#, "3.5 is not a whole number"),
            (r#"{"n": -1}"#, "-1 is negative"),
            (r#"{"n": -1.0}"#, "-1 is negative"),
            (r#"{"n": 4294967296}"#, "4294967296 is over 4294967295"),
        ] {
            assert_eq!(parse_json::<Counts>(json.as_bytes()).unwrap_err().detail().message, says, "{json}");
        }
    }

    /// An integer time below 100,000,000,000 can only be epoch seconds (API.md).
    #[test]
    fn integer_times_that_can_only_be_seconds_are_refused() {
        for json in [r#"{"at": 1796040000}"#, r#"{"at": 99999999999}"#, r#"{"at": "1796040000"}"#, r#"{"at": 0}"#] {
            let error = parse_json::<Item>(json.as_bytes()).unwrap_err().detail();
            assert_eq!(error.field.as_deref(), Some("at"), "{json}");
            assert!(error.message.contains("can only be epoch seconds"), "{json}: {}", error.message);
        }
        let item: Item = parse_json(br#"{"at": 100000000000}"#).unwrap();
        assert_eq!(item.at.unwrap().0.as_millis(), 100_000_000_000);
    }

    /// Issue 14 (9): `%zz` was taken literally, naming the same task as `%25zz`.
    #[test]
    fn a_percent_that_starts_no_escape_is_refused() {
        let route = "/v1/queues/{queue}/tasks/{key}";
        assert!(check_escapes(route, "/v1/queues/q/tasks/a%25zz%2Fb").is_ok());
        for (path, name) in [
            ("/v1/queues/q/tasks/%zz", "key"),
            ("/v1/queues/q/tasks/a%2", "key"),
            ("/v1/queues/q/tasks/%", "key"),
            ("/v1/queues/q%g0/tasks/k", "queue"),
        ] {
            assert_eq!(check_escapes(route, path).unwrap_err().detail().field.as_deref(), Some(name), "{path}");
        }
        #[derive(Debug, Deserialize)]
        struct Q {
            #[allow(dead_code)]
            cursor: Option<String>,
        }
        let e = serde_urlencoded_like::<Q>("cursor=%zz").unwrap_err();
        assert_eq!(e.detail().field.as_deref(), Some("cursor"));
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
        // Was: no field, and the message pointed at a line and column instead.
        let repeated = parse_json::<Item>(br#"{"delay": "1s", "delay": "2s"}"#).unwrap_err().detail();
        assert_eq!((repeated.field.as_deref(), repeated.message.as_str()), (Some("delay"), "duplicate field `delay`"));
        assert_eq!(field(r#"{"items": [{"n": 1, "n": 2}]}"#).as_deref(), Some("items[0].n"));
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

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
            ".*".prop_map(Value::String),
            // Strings close to what the fields take.
            "[0-9]{1,22}(ms|s|m|h|d| )?".prop_map(Value::String),
            "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})"
                .prop_map(Value::String),
            "([0-9*/,-]{1,4} ){4}[0-9A-Z*/,#L-]{1,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{0,8}", inner, 0..5)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    /// A JSON object as text, its fields drawn from `names` or anywhere, repeats allowed.
    fn object_text(names: &'static [&'static str], value: BoxedStrategy<String>) -> BoxedStrategy<String> {
        let name = prop_oneof![4 => prop::sample::select(names).prop_map(str::to_owned), 1 => "[a-z_]{1,8}"];
        prop::collection::vec((name, value), 0..6)
            .prop_map(|fields| {
                let fields: Vec<String> =
                    fields.iter().map(|(name, value)| format!("{}:{value}", Value::from(name.as_str()))).collect();
                format!("{{{}}}", fields.join(","))
            })
            .boxed()
    }

    /// Bodies of `PUT …/tasks/{key}`: the real fields, nested backoff and repeat, odd values.
    fn task_body_text() -> impl Strategy<Value = String> {
        let any_value = any_json().prop_map(|v| v.to_string()).boxed();
        let backoff = object_text(&["initial", "factor", "max"], any_value.clone());
        let repeat = object_text(&["every", "cron", "tz", "times", "until"], any_value.clone());
        let value = prop_oneof![3 => any_value, 1 => backoff, 1 => repeat].boxed();
        let fields = &["key", "delay", "due_at", "payload", "max_attempts", "backoff", "repeat", "tags", "if_exists"];
        object_text(fields, value)
    }

    proptest! {
        /// Any bytes at all: an error or a value, never a panic.
        #[test]
        fn any_body_bytes_are_read_or_refused(bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            any_json().prop_map(|v| v.to_string().into_bytes()),
            task_body_text().prop_map(String::into_bytes),
        ]) {
            if let Ok(body) = parse_json::<TaskBody>(&bytes) {
                let _ = body.into_spec();
            }
        }

        /// A well-formed JSON object is accepted or refused with the field at fault named.
        #[test]
        fn every_error_about_a_json_object_names_its_field(text in task_body_text()) {
            let error = match parse_json::<TaskBody>(text.as_bytes()) {
                Ok(body) => match body.into_spec() {
                    Ok(_) => return Ok(()),
                    Err(error) => error,
                },
                Err(error) => error,
            };
            let detail = error.detail();
            prop_assert!(detail.field.is_some(), "{}: {} names no field", text, detail.message);
        }

        /// Any value of a duration or a time: read, or refused naming that field.
        #[test]
        fn durations_and_times_of_any_value_name_their_field(
            value in any_json(),
            field in prop::sample::select(vec!["delay", "at"]),
        ) {
            let body = serde_json::json!({ field: value }).to_string();
            if let Err(error) = parse_json::<Item>(body.as_bytes()) {
                prop_assert_eq!(error.detail().field, Some(field.to_owned()), "{}", body);
            }
        }

        /// Any query string: read, or refused with the parameter named (unless the name
        /// itself cannot be read).
        #[test]
        fn any_query_string_is_read_or_names_its_parameter(
            query in prop_oneof![".*", "([a-z]{1,6}(=[a-zA-Z0-9%+&=]{0,8})?&?){0,5}", "(%[0-9A-Fa-f]{0,2}|[a-z=&+]){0,20}"],
        ) {
            if let Err(error) = serde_urlencoded_like::<ListQuery>(&query) {
                let detail = error.detail();
                prop_assert!(
                    detail.field.is_some() || detail.message.contains("query string is not valid UTF-8"),
                    "{}: {}", query, detail.message
                );
            }
            if let Ok(list) = serde_urlencoded_like::<ListQuery>(&query)
                && let Err(error) = list.limit()
            {
                prop_assert_eq!(error.detail().field, Some("limit".to_owned()));
            }
        }

        /// Values of any text, percent-encoded as a browser does, read back as given.
        #[test]
        fn query_values_round_trip_through_percent_encoding(
            (state, limit, cursor) in (".*", ".*", ".*"),
            plus_for_space in any::<bool>(),
        ) {
            let encode = |text: &str| {
                let encoded =
                    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string();
                if plus_for_space { encoded.replace("%20", "+") } else { encoded }
            };
            let query = format!("state={}&limit={}&cursor={}", encode(&state), encode(&limit), encode(&cursor));
            let list: ListQuery = serde_urlencoded_like(&query).unwrap();
            prop_assert_eq!(list.state, Some(state));
            prop_assert_eq!(list.limit, Some(limit));
            prop_assert_eq!(list.cursor, Some(cursor));
        }
    }
}
