//! The unit tests of `extract`: durations, counts and times in every form, escapes in
//! path segments, error fields, query strings, and (proptest) that no body panics.

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::*;
use crate::bodies::{ListQuery, TaskBody};

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
fn an_object_field_written_as_a_longer_array_names_the_field() {
    // serde reads a struct from an array; serde_json calls the elements left over
    // "trailing characters", a syntax error, though the body's syntax is fine (found by
    // proptest: `every_error_about_a_json_object_names_its_field`).
    let error = parse_json::<TaskBody>(br#"{"backoff": [0, 0, 0, null]}"#).unwrap_err().detail();
    assert_eq!(error.field.as_deref(), Some("backoff"), "{}", error.message);
    assert!(error.message.contains("JSON object"), "{}", error.message);
    let error = parse_json::<Item>(br#"{"items": [[1, 2]]}"#).unwrap_err().detail();
    assert_eq!(error.field.as_deref(), Some("items[0]"), "{}", error.message);
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
