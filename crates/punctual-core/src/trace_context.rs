//! The W3C trace context a task keeps from the request that scheduled it, so that the
//! trace of that request goes on through every delivery of the task (README "Traces").
//!
//! Invariants: a [`TraceContext`] that exists is a valid W3C `traceparent` (its only
//! constructor checks the format of the W3C Trace Context recommendation, level 1),
//! kept as given: version `00` is exactly `00-<32 hex>-<16 hex>-<2 hex>` in lowercase,
//! with a trace id and a parent id that are not all zeros; a later version (`01` to
//! `fe`) starts the same way and may go on after a `-`. Version `ff` is refused, as the
//! recommendation says. Only `traceparent` is kept: `tracestate` holds vendors' notes
//! of one hop, which a receiver may drop, and is not worth a field of every task.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::names::string_newtype;

/// A W3C `traceparent`: the trace a task belongs to and the span that scheduled it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TraceContext(String);

/// The length of a version `00` traceparent.
const LENGTH_00: usize = 55;

impl TraceContext {
    /// The longest traceparent kept, in bytes: a later version may add fields, but not
    /// without bound.
    pub const MAX_BYTES: usize = 256;

    /// Validates `traceparent` (field `traceparent`).
    pub fn new(traceparent: impl Into<String>) -> Result<TraceContext> {
        let text = traceparent.into();
        check(&text).map_err(|reason| {
            Error::invalid("traceparent", format!("'{}' is not a W3C traceparent: {reason}", text.escape_default()))
        })?;
        Ok(TraceContext(text))
    }

    /// The trace's id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The id of the span that scheduled the task (the parent of its deliveries): 16
    /// lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.0[53..55], 16).is_ok_and(|flags| flags & 1 == 1)
    }
}
string_newtype!(TraceContext);

/// Why `text` is not a traceparent, if it is not.
fn check(text: &str) -> std::result::Result<(), &'static str> {
    if text.len() > TraceContext::MAX_BYTES {
        return Err("too long");
    }
    let bytes = text.as_bytes();
    if bytes.len() < LENGTH_00 {
        return Err("too short");
    }
    let hex = |range: std::ops::Range<usize>| bytes[range].iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let zeros = |range: std::ops::Range<usize>| bytes[range].iter().all(|&b| b == b'0');
    if !hex(0..2) || [2, 35, 52].iter().any(|&i| bytes[i] != b'-') {
        return Err("expected 00-<32 hex digits>-<16 hex digits>-<2 hex digits>");
    }
    if !hex(3..35) || !hex(36..52) || !hex(53..55) {
        return Err("the ids and flags are lowercase hex digits");
    }
    match &text[..2] {
        "ff" => return Err("version ff is invalid"),
        "00" if bytes.len() != LENGTH_00 => return Err("version 00 has exactly 55 characters"),
        // A later version: what follows the version 00 fields is its own, after a `-`.
        "00" => {}
        _ if bytes.len() > LENGTH_00 && (bytes[LENGTH_00] != b'-' || !text.is_ascii()) => {
            return Err("a later version's fields follow a '-'");
        }
        _ => {}
    }
    if text[LENGTH_00..].chars().any(char::is_control) {
        return Err("control characters");
    }
    if zeros(3..35) {
        return Err("the trace id is all zeros");
    }
    if zeros(36..52) {
        return Err("the parent id is all zeros");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_version_00_traceparent_is_kept_as_given_with_its_parts() {
        let context = TraceContext::new(VALID).unwrap();
        assert_eq!(context.as_str(), VALID);
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_id(), "00f067aa0ba902b7");
        assert!(context.sampled());
        let unsampled = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!unsampled.sampled());
        assert_eq!(serde_json::to_value(&context).unwrap(), serde_json::json!(VALID));
        assert_eq!(serde_json::from_value::<TraceContext>(serde_json::json!(VALID)).unwrap(), context);
    }

    #[test]
    fn anything_else_is_refused_with_the_field() {
        let zero_trace = format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32));
        let zero_parent = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", "0".repeat(16));
        let long = format!("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}", "a".repeat(300));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            zero_trace.as_str(),
            zero_parent.as_str(),
            long.as_str(),
        ] {
            let refused = TraceContext::new(bad).unwrap_err();
            assert_eq!(refused.field(), Some("traceparent"), "{bad}");
        }
        assert!(serde_json::from_value::<TraceContext>(serde_json::json!("00-1-2-3")).is_err());
    }

    #[test]
    fn a_later_version_is_read_by_its_version_00_fields() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
        let context = TraceContext::new(later).unwrap();
        assert_eq!(context.as_str(), later, "kept as given");
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(TraceContext::new("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_ok());
    }
}
