//! What `punctual import redisson` makes of an element's value: the codecs that store
//! text or JSON, and the type hints Redisson's `JsonJacksonCodec` adds.
//!
//! `JsonJacksonCodec` writes with Jackson's default typing (`NON_FINAL`, class names as
//! properties): a value whose declared type is not final carries its class, an object
//! as an `"@class"` member (`{"@class": "com.example.Order", "id": 7}`) and anything
//! that is not an object as a pair of the class name and the value
//! (`["java.util.ArrayList", ["a", "b"]]`, `["java.lang.Long", 7]`,
//! `["java.util.UUID", "…"]`). [`strip_type_hints`] takes those out so the payload is the
//! JSON an application would write; the rules are exact, and stated on the function.

use serde_json::Value;

use super::{NotPayload, payload};
use crate::cli::{PayloadMode, RedissonCodec};

/// How to read each value: the checked flags of one run.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    codec: RedissonCodec,
    payload: PayloadMode,
    keep_type_hints: bool,
}

/// An element's value, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Read {
    /// The task's payload (`None` with `--payload none`).
    pub(crate) payload: Option<Value>,
    /// The value as JSON without type hints, where it is JSON: what `--key-field` looks in.
    pub(crate) json: Option<Value>,
}

impl Reading {
    /// Checks the flags together: `--payload value` is for `--codec string` alone, and
    /// `--key-field` needs JSON. The message says what to write instead.
    pub(crate) fn new(
        codec: RedissonCodec,
        payload: Option<PayloadMode>,
        keep_type_hints: bool,
        key_field: bool,
    ) -> Result<Reading, String> {
        let payload = payload.unwrap_or(match codec {
            RedissonCodec::String => PayloadMode::Value,
            RedissonCodec::JsonJackson => PayloadMode::Json,
        });
        match (codec, payload) {
            (RedissonCodec::JsonJackson, PayloadMode::Value) => {
                return Err("--payload value is for --codec string; with --codec json-jackson the payload is the \
                            element's JSON (--payload json, the default) or nothing (--payload none)"
                    .into());
            }
            (RedissonCodec::String, _) if keep_type_hints => {
                return Err("--keep-type-hints is for --codec json-jackson: StringCodec writes no type hints".into());
            }
            (RedissonCodec::String, PayloadMode::Value | PayloadMode::None) if key_field => {
                return Err(
                    "--key-field reads a field of the element's JSON: with --codec string add --payload json, \
                            for values that are JSON text"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(Reading { codec, payload, keep_type_hints })
    }

    /// Reads one value, or says why it does not decode with the codec.
    pub(crate) fn read(&self, value: &[u8]) -> Result<Read, String> {
        match self.codec {
            RedissonCodec::String => {
                let mode = if self.payload == PayloadMode::None { PayloadMode::Value } else { self.payload };
                let decoded = payload(mode, value).map_err(|e| match e {
                    NotPayload::NotText => "it is not UTF-8 text, as StringCodec writes".to_owned(),
                    NotPayload::NotJson(why) => format!("its text is not JSON (--payload json): {why}"),
                })?;
                let json = decoded.clone().filter(|_| mode == PayloadMode::Json);
                let payload = decoded.filter(|_| self.payload != PayloadMode::None);
                Ok(Read { payload, json })
            }
            RedissonCodec::JsonJackson => {
                let written: Value = serde_json::from_slice(value)
                    .map_err(|e| format!("it is not JSON, as JsonJacksonCodec writes: {e}"))?;
                let stripped = strip_type_hints(written.clone());
                let payload = match self.payload {
                    PayloadMode::None => None,
                    _ if self.keep_type_hints => Some(written),
                    _ => Some(stripped.clone()),
                };
                Ok(Read { payload, json: Some(stripped) })
            }
        }
    }
}

/// The JSON without Jackson's type hints, bottom up:
///
/// - in every object, a member `"@class"` whose value is a string is removed;
/// - every array of exactly two elements whose first is a string naming a Java class
///   — dotted Java identifiers (`java.util.ArrayList`, `com.example.Order$Line`) or an
///   array class (`[Ljava.lang.Object;`) — is replaced by its second element.
///
/// Nothing else changes. An application's own two-element array whose first element
/// is such a class name would be taken for a hint: `--keep-type-hints` keeps it.
pub(crate) fn strip_type_hints(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .filter(|(name, value)| !(name == "@class" && value.is_string()))
                .map(|(name, value)| (name, strip_type_hints(value)))
                .collect(),
        ),
        Value::Array(mut items) => {
            if items.len() == 2 && items[0].as_str().is_some_and(is_java_class_name) {
                return strip_type_hints(items.swap_remove(1));
            }
            Value::Array(items.into_iter().map(strip_type_hints).collect())
        }
        other => other,
    }
}

/// `java.util.ArrayList`, `com.example.Order$Line`, `[Ljava.lang.Object;`, `[[Lx.Y;`:
/// a class name as `Class.getName()` writes it, in a package (every class Jackson's
/// default typing names is: a class in no package would be a bare word).
fn is_java_class_name(text: &str) -> bool {
    let element = text.trim_start_matches('[');
    let name = if element.len() < text.len() {
        match element.strip_prefix('L').and_then(|e| e.strip_suffix(';')) {
            Some(name) => name,
            None => return false,
        }
    } else {
        element
    };
    let identifier = |part: &str| {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    name.split('.').count() >= 2 && name.split('.').all(identifier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `JsonJacksonCodec` wrote for a POJO `OrderCancel` (not final) holding a
    /// record, a `List`, a `Long`, a `Map`, a `UUID`, an `Object[]` and a `Date`.
    fn written() -> Value {
        json!({
            "@class": "com.example.OrderCancel",
            "amountCents": ["java.lang.Long", 1299],
            "customer": {"name": "Zhang Wei", "tier": "GOLD"},
            "extra": {"@class": "java.util.HashMap", "note": "gift", "ids": ["java.util.ArrayList", [1, 2]]},
            "id": ["java.util.UUID", "0b8e4fb2-6c0e-4cf7-9d0e-6a1f4f1b2c3d"],
            "items": ["java.util.ArrayList", [{"@class": "com.example.Line$Item", "sku": "A-1"}]],
            "orderId": 1234,
            "parts": ["[Ljava.lang.Object;", ["x", 2]],
            "placedAt": ["java.util.Date", 1_767_225_600_000_i64],
            "plain": ["just", "two"],
        })
    }

    #[test]
    fn jacksons_type_hints_are_stripped_and_nothing_else() {
        assert_eq!(
            strip_type_hints(written()),
            json!({
                "amountCents": 1299,
                "customer": {"name": "Zhang Wei", "tier": "GOLD"},
                "extra": {"note": "gift", "ids": [1, 2]},
                "id": "0b8e4fb2-6c0e-4cf7-9d0e-6a1f4f1b2c3d",
                "items": [{"sku": "A-1"}],
                "orderId": 1234,
                "parts": ["x", 2],
                "placedAt": 1_767_225_600_000_i64,
                "plain": ["just", "two"],
            })
        );
        // A root that is not an object: a List offered as the element.
        assert_eq!(strip_type_hints(json!(["java.util.ArrayList", ["a", "b"]])), json!(["a", "b"]));
        // An "@class" that is not a string is the application's own.
        assert_eq!(strip_type_hints(json!({"@class": 1})), json!({"@class": 1}));
    }

    #[test]
    fn class_names_are_told_from_other_text() {
        for name in ["java.util.ArrayList", "com.example.Order$Line", "[Ljava.lang.Object;", "[[Lx.Y;", "订单.类"] {
            assert!(is_java_class_name(name), "{name}");
        }
        for text in ["ArrayList", "just", "1.5", "a..b", "a.b c", "[I", "[Lx.Y", ".a", "a.", "order-1.x", ""] {
            assert!(!is_java_class_name(text), "{text}");
        }
    }

    #[test]
    fn each_codec_reads_its_values_and_names_what_does_not_decode() {
        let read = |codec, mode, keep, value: &[u8]| Reading::new(codec, mode, keep, false).unwrap().read(value);
        use RedissonCodec::{JsonJackson, String};
        assert_eq!(read(String, None, false, b"task-7").unwrap().payload, Some(json!("task-7")));
        let parsed = read(String, Some(PayloadMode::Json), false, br#"{"n":1}"#).unwrap();
        assert_eq!((parsed.payload, parsed.json), (Some(json!({"n": 1})), Some(json!({"n": 1}))));
        assert_eq!(read(String, Some(PayloadMode::None), false, b"x").unwrap(), Read { payload: None, json: None });
        assert!(read(String, None, false, b"\xff\x01").unwrap_err().contains("not UTF-8"));
        assert!(read(String, Some(PayloadMode::None), false, b"\xff").is_err(), "a value that does not decode");
        assert!(read(String, Some(PayloadMode::Json), false, b"nope").unwrap_err().contains("not JSON"));

        let text = serde_json::to_vec(&written()).unwrap();
        let stripped = read(JsonJackson, None, false, &text).unwrap();
        assert_eq!(stripped.payload, Some(strip_type_hints(written())));
        assert_eq!(stripped.json, stripped.payload);
        let kept = read(JsonJackson, None, true, &text).unwrap();
        assert_eq!((kept.payload, kept.json), (Some(written()), Some(strip_type_hints(written()))));
        // Kryo's bytes, say: not JSON.
        assert!(read(JsonJackson, None, false, b"\x01\x00\x8f").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn flags_that_do_not_go_together_are_refused() {
        use RedissonCodec::{JsonJackson, String};
        assert!(
            Reading::new(JsonJackson, Some(PayloadMode::Value), false, false).unwrap_err().contains("--codec string")
        );
        assert!(Reading::new(String, None, true, false).unwrap_err().contains("json-jackson"));
        assert!(Reading::new(String, None, false, true).unwrap_err().contains("--payload json"));
        assert!(Reading::new(String, Some(PayloadMode::Json), false, true).is_ok());
        assert!(Reading::new(JsonJackson, Some(PayloadMode::None), false, true).is_ok());
    }
}
