//! `--json` output: the server's JSON text, pretty-printed with its key order kept.
//!
//! Parsing into `serde_json::Value` would sort every object's keys (`attempts` before
//! `queue`), so the text is re-indented instead, exactly as `serde_json`'s pretty
//! printer lays it out (two spaces, `"key": value`, `{}` and `[]` for empty
//! containers). Outputs the CLI composes (several pages, several queues) are built as
//! text from the server's pieces with [`object`] and then re-indented the same way.

use serde_json::value::RawValue;

/// Re-indents JSON text. The input must be valid JSON (it is always text that has just
/// parsed); string contents are copied untouched.
pub(crate) fn pretty(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    out.push(c);
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
                let close = if c == '{' { '}' } else { ']' };
                if chars.next_if_eq(&close).is_some() {
                    out.push(c);
                    out.push(close);
                } else {
                    depth += 1;
                    out.push(c);
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// A JSON object, as compact text, from fields whose values are already JSON text.
pub(crate) fn object(fields: &[(&str, &str)]) -> String {
    let body: Vec<String> = fields.iter().map(|(name, value)| format!("{}:{value}", string(name))).collect();
    format!("{{{}}}", body.join(","))
}

/// A JSON array, as compact text, of raw JSON values.
pub(crate) fn array(items: &[Box<RawValue>]) -> String {
    let body: Vec<&str> = items.iter().map(|item| item.get()).collect();
    format!("[{}]", body.join(","))
}

/// A string as JSON text.
pub(crate) fn string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn the_layout_is_serde_jsons_pretty_layout() {
        let value = json!({
            "a": {"b": [1, 2.5, null, true], "c": {}, "d": []},
            "e": "with \"quotes\", {braces}, [brackets]: and \\ backslashes",
            "f": [{"g": "订单/1"}, []]
        });
        assert_eq!(pretty(&value.to_string()), serde_json::to_string_pretty(&value).unwrap());
        let spaced = "{ \"a\" : [ 1 , { } ] ,\n \"b\" : \"x y\" }";
        assert_eq!(pretty(spaced), "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": \"x y\"\n}");
    }

    #[test]
    fn key_order_is_kept() {
        let text = r#"{"queue":"q","key":"k","attempts":0}"#;
        assert_eq!(pretty(text), "{\n  \"queue\": \"q\",\n  \"key\": \"k\",\n  \"attempts\": 0\n}");
    }

    #[test]
    fn composed_objects_are_valid_json() {
        let items: Vec<Box<RawValue>> =
            vec![RawValue::from_string(r#"{"key":"a"}"#.into()).unwrap(), RawValue::from_string("2".into()).unwrap()];
        let text = object(&[("tasks", &array(&items)), ("next_cursor", "null"), ("q\"x", &string("订单 \"1\""))]);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value, json!({"tasks": [{"key": "a"}, 2], "next_cursor": null, "q\"x": "订单 \"1\""}));
    }
}
