//! Templates of messages (chat text, email subject and bodies, recipients), with
//! minijinja.
//!
//! Invariants: undefined values are errors (strict mode), so a template naming a field
//! the payload lacks fails loudly instead of sending a message with a hole in it; a
//! template that fails to render makes the delivery [`Outcome::Fail`] with the error
//! as `last_error` (see the actions), never a panic and never a silent drop. Syntax is
//! checked when the action is built, so `check-config` and start-up catch it.
//!
//! What a template sees: every field of an object payload at the top level, then
//! these names (which win over payload fields of the same name): `payload`, `queue`,
//! `key`, `attempt`, `delivery_id`, `tags`, `due_at`, `fired_at` and `scheduled_for`
//! (RFC 3339 UTC), `missed` (the later occurrences this firing stands in for),
//! `due_local` and `fired_local` (the same instants in the action's time zone,
//! `2026-11-30 09:00 CST`). The filter `localtime` formats any RFC 3339 or epoch-ms
//! value in that zone: `{{ due_at | localtime("%m-%d %H:%M") }}`.
//!
//! [`Outcome::Fail`]: punctual_core::Outcome::Fail

use std::fmt;

use jiff::tz::TimeZone;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior, Value};
use punctual_core::{Delivery, Timestamp};
use serde_json::{Map, Value as Json};

use crate::error::ActionError;

/// The format of `due_local`, `fired_local` and `localtime` without an argument.
const LOCAL_FORMAT: &str = "%Y-%m-%d %H:%M %Z";

/// The compiled templates of one action, and its time zone.
pub(crate) struct Templates {
    env: Environment<'static>,
    zone: TimeZone,
}

impl fmt::Debug for Templates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.env.templates().map(|(name, _)| name).collect();
        f.debug_struct("Templates").field("names", &names).field("zone", &self.zone.iana_name()).finish()
    }
}

impl Templates {
    /// No templates yet; times shown in `zone`.
    pub(crate) fn new(zone: TimeZone) -> Templates {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Only the HTML body of an email escapes what it inserts.
        env.set_auto_escape_callback(|name| if name == "html" { AutoEscape::Html } else { AutoEscape::None });
        let filter_zone = zone.clone();
        env.add_filter("localtime", move |value: Value, format: Option<String>| {
            localtime(&value, format.as_deref().unwrap_or(LOCAL_FORMAT), &filter_zone)
        });
        Templates { env, zone }
    }

    /// Compiles `source` under `name` (the configuration key, used in error messages).
    pub(crate) fn add(&mut self, name: &str, source: &str) -> Result<(), ActionError> {
        self.env
            .add_template_owned(name.to_owned(), source.to_owned())
            .map_err(|e| ActionError::Template { field: name.to_owned(), reason: describe(&e) })
    }

    /// Renders the template `name`; the error is a sentence for `last_error`.
    pub(crate) fn render(&self, name: &str, context: &Value) -> Result<String, String> {
        let template = self.env.get_template(name).map_err(|e| describe(&e))?;
        template.render(context).map_err(|e| format!("template {name} cannot be rendered: {}", describe(&e)))
    }

    /// What templates of this action see for `delivery`, fired at `fired_at`.
    pub(crate) fn context(&self, delivery: &Delivery, fired_at: Timestamp) -> Value {
        let task = &delivery.task;
        let mut map = match &task.payload {
            Json::Object(fields) => fields.clone(),
            _ => Map::new(),
        };
        let local = |t: Timestamp| t.to_jiff().to_zoned(self.zone.clone()).strftime(LOCAL_FORMAT).to_string();
        let builtins = [
            ("payload", task.payload.clone()),
            ("queue", Json::from(task.queue.as_str())),
            ("key", Json::from(task.key.as_str())),
            ("attempt", Json::from(delivery.attempt)),
            ("delivery_id", Json::from(delivery.delivery_id.as_str())),
            ("tags", Json::from(task.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>())),
            ("priority", Json::from(task.priority.get())),
            ("due_at", Json::from(task.due_at.to_string())),
            ("fired_at", Json::from(fired_at.to_string())),
            ("due_local", Json::from(local(task.due_at))),
            ("fired_local", Json::from(local(fired_at))),
            ("scheduled_for", Json::from(delivery.scheduled_for.to_string())),
            ("missed", Json::from(delivery.missed)),
        ];
        for (name, value) in builtins {
            map.insert(name.to_owned(), value);
        }
        Value::from(Serde(Json::Object(map)))
    }
}

/// Checks that `source` compiles as a template (syntax only: names are known only
/// when a task arrives). The error says what and where, e.g.
/// `syntax error: unexpected end of input (line 1)`.
pub fn check_template(source: &str) -> Result<(), String> {
    let mut templates = Templates::new(TimeZone::UTC);
    templates.add("template", source).map_err(|e| match e {
        ActionError::Template { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// A time zone by IANA name (`Asia/Shanghai`), or UTC.
pub(crate) fn zone(name: Option<&str>) -> Result<TimeZone, ActionError> {
    match name {
        None => Ok(TimeZone::UTC),
        Some(name) => TimeZone::get(name)
            .map_err(|e| ActionError::invalid("timezone", format!("'{name}' is not an IANA time zone ({e})"))),
    }
}

fn localtime(value: &Value, format: &str, zone: &TimeZone) -> Result<String, minijinja::Error> {
    let instant = if let Some(ms) = value.as_i64() {
        jiff::Timestamp::from_millisecond(ms).ok()
    } else {
        value.as_str().and_then(|text| text.parse::<jiff::Timestamp>().ok())
    };
    let instant = instant.ok_or_else(|| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("localtime needs an RFC 3339 time or epoch ms, not {value}"),
        )
    })?;
    Ok(instant.to_zoned(zone.clone()).strftime(format).to_string())
}

/// A minijinja error as one line: kind, detail and template line.
fn describe(e: &minijinja::Error) -> String {
    let mut text = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    if let Some(line) = e.line() {
        text.push_str(&format!(" (line {line})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &str, ctx: Json) -> Result<String, String> {
        let mut t = Templates::new(zone(Some("Asia/Shanghai")).unwrap());
        t.add("text", source).map_err(|e| e.to_string())?;
        t.render("text", &Value::from(Serde(ctx)))
    }

    #[test]
    fn strict_undefined_and_types_are_errors() {
        let ctx = serde_json::json!({"name": "Zhang Wei", "n": 3, "due_at": "2026-11-30T01:00:00.000Z"});
        assert_eq!(render("hi {{ name }} #{{ n + 1 }}", ctx.clone()).unwrap(), "hi Zhang Wei #4");
        let missing = render("hi {{ assignee }}", ctx.clone()).unwrap_err();
        assert!(missing.contains("undefined value") && missing.contains("line 1"), "{missing}");
        let bad_type = render("{{ name + 1 }}", ctx.clone()).unwrap_err();
        assert!(bad_type.contains("invalid operation"), "{bad_type}");
        assert_eq!(render("{{ due_at | localtime('%H:%M') }}", ctx.clone()).unwrap(), "09:00");
        assert_eq!(render("{{ due_at | localtime }}", ctx).unwrap(), "2026-11-30 09:00 CST");
    }

    #[test]
    fn syntax_errors_are_found_when_checking() {
        assert!(check_template("Hello {{ name }}").is_ok());
        let e = check_template("line one\nHello {{ name ").unwrap_err();
        assert!(e.contains("syntax error") && e.contains("line 2"), "{e}");
        let e = check_template("{% if x %}open").unwrap_err();
        assert!(e.contains("syntax error"), "{e}");
    }

    #[test]
    fn zones_are_iana_names() {
        assert!(zone(Some("Europe/Paris")).is_ok());
        let e = zone(Some("Mars/Olympus")).unwrap_err();
        assert_eq!(e.field(), "timezone");
    }
}
