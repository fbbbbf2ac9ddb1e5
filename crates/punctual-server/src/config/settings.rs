//! Queue settings given through the API (`/v1/queues/{queue}/settings`): the JSON body,
//! validated as the config file's `[queues."name"]` table is. The body is rendered
//! into that table's TOML, one field per line, and read by the config's own code
//! (`config::queue_table`), so the messages are the file's and the line at fault names
//! the JSON field (`action.url`, `defaults.backoff`).
//!
//! Invariants: no secret value enters a document — `action.secret`,
//! `action.previous_secret`,
//! `action.smtp.password`, a chat robot's `action.url` (itself a credential) and a
//! broker URL with a user or password are refused, the body names environment variables of the server instead — so nothing
//! stored, shown or logged from a document is secret. The stored document is the body
//! without its read-only fields (`queue`, `source`, `paused`, `version`,
//! `updated_at`, accepted so that what `GET` answers can be sent back as it is).
//!
//! The OpenAPI document's schema of an action ([`action_schema`]) is read off the same
//! tables as the validation (`actions`: the keys, which a kind takes, which it needs)
//! and the same refusal of secrets, so the two say one thing.

use punctual_actions::{ActionSpec, EgressPolicy, Rate};
use punctual_core::{QueueDefaults, QueueRecord};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::actions::{KEYS, Kind, takes};
use super::{ConfigError, QueueTable, queue_table};
use crate::bodies::schema::{count, duration_within, nullable, present, rate};
use crate::error::ApiError;

/// Whether `queue`'s settings, as this node last read them, say `"targets": false`.
pub(crate) fn refuses_targets<S: punctual_core::Store>(engine: &punctual_core::Engine<S>, queue: &str) -> bool {
    let records = engine.watch_queue_records();
    let records = records.borrow();
    let Some(document) = records.iter().find(|r| r.queue.as_str() == queue).and_then(|r| r.settings.as_deref()) else {
        return false;
    };
    serde_json::from_str::<Value>(document).is_ok_and(|settings| settings.get("targets") == Some(&Value::Bool(false)))
}

/// Fields of a settings body that are shown but not set.
const READ_ONLY: [&str; 5] = ["queue", "source", "paused", "version", "updated_at"];
/// Fields a settings body may set.
const SETTABLE: [&str; 8] =
    ["defaults", "action", "concurrency", "rate", "shards", "targets", "group_concurrency", "group_rate"];
/// Keys of `defaults`.
const DEFAULTS: [&str; 3] = ["max_attempts", "backoff", "repeat"];

/// A settings document, validated: what it stores and what it means.
#[derive(Debug)]
pub(crate) struct QueueSettings {
    /// The document as stored: the settable fields of the body.
    pub(crate) document: Map<String, Value>,
    pub(crate) defaults: QueueDefaults,
    /// With `concurrency` and `rate` applied.
    pub(crate) action: Option<ActionSpec>,
    pub(crate) concurrency: usize,
    pub(crate) rate: Option<String>,
    pub(crate) shards: Option<u32>,
    /// Whether tasks of the queue may carry their own HTTP target.
    pub(crate) targets: bool,
}

impl QueueSettings {
    /// Validates a body (a JSON object) against the server's egress policy.
    pub(crate) fn from_body(body: &Value, egress: &EgressPolicy) -> Result<QueueSettings, ApiError> {
        let Some(object) = body.as_object() else {
            return Err(ApiError::bad_request("the settings are a JSON object"));
        };
        let mut document = Map::new();
        for (field, value) in object {
            if SETTABLE.contains(&field.as_str()) {
                document.insert(field.clone(), value.clone());
            } else if !READ_ONLY.contains(&field.as_str()) {
                return Err(ApiError::invalid(
                    field.as_str(),
                    format!("unknown field; settings take {}", SETTABLE.join(", ")),
                ));
            }
        }
        QueueSettings::from_document(document, egress)
    }

    /// Reads a stored document (validated when it was stored; validated again, since
    /// an environment variable it names may have gone).
    pub(crate) fn from_document(
        document: Map<String, Value>,
        egress: &EgressPolicy,
    ) -> Result<QueueSettings, ApiError> {
        refuse_secrets(&document)?;
        let targets = match document.get("targets") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(allowed)) => *allowed,
            Some(_) => return Err(ApiError::invalid("targets", "targets is true or false")),
        };
        let rendered = render(&document)?;
        let QueueTable { defaults, shards, action } =
            queue_table(&rendered.text, egress).map_err(|e| rendered.error(&e))?;
        let (concurrency, rate) = match &action {
            Some(spec) => {
                (spec.concurrency, spec.rate.map(|_| document["rate"].as_str().unwrap_or_default().to_owned()))
            }
            None => pull_only_limits(&document)?,
        };
        Ok(QueueSettings { document, defaults, action, concurrency, rate, shards, targets })
    }

    /// The settings object of API.md for `record`'s queue.
    pub(crate) fn view(&self, record: &QueueRecord, source: Source) -> SettingsView {
        SettingsView {
            queue: record.queue.to_string(),
            source,
            defaults: DefaultsView {
                max_attempts: self.defaults.max_attempts,
                backoff: self.defaults.backoff,
                repeat: self.defaults.repeat.clone(),
            },
            action: self.document.get("action").cloned().unwrap_or(Value::Null),
            concurrency: self.concurrency,
            rate: self.rate.clone(),
            shards: self.shards.unwrap_or(1),
            targets: self.targets,
            group_concurrency: self.defaults.group_concurrency,
            group_rate: self.defaults.group_rate.map(|rate| rate.to_string()),
            paused: record.paused,
            version: record.version,
            updated_at: record.updated_at,
        }
    }
}

/// Where a queue's settings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Source {
    /// Set through the API, stored with the tasks.
    Api,
    /// The server's config file.
    Config,
}

/// `GET /v1/queues/{queue}/settings`.
#[derive(Debug, Serialize)]
pub(crate) struct SettingsView {
    pub(crate) queue: String,
    pub(crate) source: Source,
    pub(crate) defaults: DefaultsView,
    pub(crate) action: Value,
    pub(crate) concurrency: usize,
    pub(crate) rate: Option<String>,
    pub(crate) shards: u32,
    pub(crate) targets: bool,
    /// At most this many leased tasks per group; null: no limit.
    pub(crate) group_concurrency: Option<u32>,
    /// At most COUNT leases per group per DURATION; null: no rate.
    pub(crate) group_rate: Option<String>,
    pub(crate) paused: bool,
    pub(crate) version: u64,
    pub(crate) updated_at: punctual_core::Timestamp,
}

/// The task defaults in force.
#[derive(Debug, Serialize)]
pub(crate) struct DefaultsView {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: punctual_core::Backoff,
    pub(crate) repeat: Option<punctual_core::Repeat>,
}

/// The JSON Schema of `action` in a settings body (`ActionBody` of the OpenAPI
/// document), from the action tables: the keys and their types; per kind, the keys it
/// takes (another may only be null, which is absent) and those it needs; no secret
/// value (the keys [`refuse_secrets`] refuses are left out).
pub(crate) fn action_schema() -> Value {
    let mut properties = Map::new();
    properties.insert("kind".into(), json!({"enum": Kind::ALL.map(Kind::name)}));
    for key in KEYS.into_iter().filter(|key| !matches!(*key, "secret" | "previous_secret")) {
        properties.insert(key.into(), nullable(key_schema(key)));
    }
    let kinds: Vec<Value> = Kind::ALL
        .into_iter()
        .map(|kind| {
            // A key of another kind is refused unless null, or an empty list.
            let refused: Map<String, Value> = KEYS
                .into_iter()
                .filter(|key| !takes(kind, key))
                .map(|key| match key_schema(key)["type"] == "array" {
                    true => (key.into(), json!({"anyOf": [{"type": "null"}, {"type": "array", "maxItems": 0}]})),
                    false => (key.into(), json!({"type": "null"})),
                })
                .collect();
            let needs: Vec<Value> = kind
                .needs()
                .iter()
                .map(|needed| {
                    let keys = std::iter::once(needed.key).chain(needed.or.iter().copied());
                    let given = keys.filter(|key| !url_is_secret(kind.name()) || *key != "url").map(|key| {
                        // A list it needs needs an item (an email's recipients).
                        match key_schema(key)["type"] == "array" {
                            true => json!({"allOf": [present(key), {"properties": {key: {"minItems": 1}}}]}),
                            false => present(key),
                        }
                    });
                    json!({"anyOf": given.collect::<Vec<_>>()})
                })
                .collect();
            let mut then = json!({"properties": refused, "allOf": needs});
            if url_is_secret(kind.name()) {
                then["not"] = json!({"required": ["url"]});
            }
            json!({"if": {"required": ["kind"], "properties": {"kind": {"const": kind.name()}}}, "then": then})
        })
        .collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["kind"],
        "description": "Push: the server delivers the queue's tasks. The keys of the config file's action table \
            (README, \"Configuration file\"), each kind taking its own and needing some (a missing one is 400 \
            naming it, e.g. action.subject); a key of another kind may only be null (or an empty list). No secret value: secret_env, \
            smtp.password_env and url_env name environment variables of the server, which must be set (a chat \
            robot's url, which carries its token, is given by url_env only; a wecom robot's key by secret_env or \
            as key=… in that URL). URLs, templates, time zones, addresses and rates are checked as in the file.",
        "properties": properties,
        "allOf": kinds,
        "examples": [
            {"kind": "webhook", "url": "https://shop.example.com/hooks/cancel", "timeout": "10s"},
            {"kind": "nats", "url": "nats://nats.example.com:4222", "subject": "orders.{{ key }}"},
            {"kind": "email", "smtp": {"host": "smtp.example.com", "security": "starttls"}, "from": "a@example.com",
             "to": ["b@example.com"], "subject": "Task {{ key }}", "text": "Due at {{ due_at }}"},
        ],
    })
}

/// The JSON Schema of an action table's `key`, as the API takes it.
fn key_schema(key: &str) -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    match key {
        "timeout" => duration_within(1, None, "How long a delivery may take, more than 0 (default 10s)."),
        "concurrency" => count(1, 10_000, "Deliveries at once (or the settings' concurrency, not both)."),
        "final_statuses" => json!({"type": "array", "description": "Answers that send a task to dead at once.",
            "items": {"type": "integer", "minimum": 400, "maximum": 599, "not": {"const": 410}}}),
        "mention" | "mention_mobiles" | "to" | "cc" => strings,
        "mention_all" | "mandatory" => json!({"type": "boolean"}),
        "maxlen" => json!({"type": "integer", "minimum": 1, "maximum": i64::MAX}),
        "fields" => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        "smtp" => json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["host"],
            "properties": {
                "host": {"type": "string", "minLength": 1},
                "port": nullable(json!({"type": "integer", "minimum": 1, "maximum": 65_535})),
                "security": nullable(json!({"enum": ["plain", "starttls", "tls"]})),
                "username": nullable(json!({"type": "string"})),
                "password_env": nullable(json!({"type": "string"})),
            },
        }),
        "url" => json!({"type": "string", "description": "A broker's URL carries no user or password: url_env."}),
        "rate" => rate(),
        _ => json!({"type": "string"}),
    }
}

/// Whether a kind's `url` is a credential (a chat robot's carries its token).
fn url_is_secret(kind: &str) -> bool {
    matches!(kind, "wecom" | "dingtalk" | "feishu" | "slack")
}

/// A secret value in a body is refused: the server reads secrets from its environment.
fn refuse_secrets(document: &Map<String, Value>) -> Result<(), ApiError> {
    let Some(Value::Object(action)) = document.get("action") else { return Ok(()) };
    let refuse = |field: &str, instead: &str| {
        Err(ApiError::invalid(
            field,
            format!(
                "secrets are not sent to the API; name an environment variable of the server that holds it \
                 with {instead}"
            ),
        ))
    };
    if action.contains_key("secret") {
        return refuse("action.secret", "action.secret_env");
    }
    if action.contains_key("previous_secret") {
        return refuse("action.previous_secret", "action.previous_secret_env");
    }
    if let Some(Value::Object(smtp)) = action.get("smtp")
        && smtp.contains_key("password")
    {
        return refuse("action.smtp.password", "action.smtp.password_env");
    }
    let kind = action.get("kind").and_then(Value::as_str).unwrap_or_default();
    if url_is_secret(kind) && action.contains_key("url") {
        return refuse("action.url", "action.url_env (a chat robot's URL carries its token)");
    }
    let broker = matches!(action.get("kind").and_then(Value::as_str), Some("rabbitmq" | "nats" | "redis-stream"));
    if broker
        && let Some(Value::String(url)) = action.get("url")
        && has_credentials(url)
    {
        return refuse("action.url", "action.url_env (this URL carries credentials)");
    }
    Ok(())
}

/// Whether a URL's authority holds a user or password (`scheme://user:pass@host`).
fn has_credentials(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().is_some_and(|authority| authority.contains('@'))
}

/// `concurrency` and `rate` of a queue without an action: kept, checked, unused.
fn pull_only_limits(document: &Map<String, Value>) -> Result<(usize, Option<String>), ApiError> {
    let concurrency = match document.get("concurrency") {
        None | Some(Value::Null) => ActionSpec::DEFAULT_CONCURRENCY,
        Some(value) => {
            whole(value).and_then(|n| usize::try_from(n).ok()).filter(|n| (1..=10_000).contains(n)).ok_or_else(
                || ApiError::invalid("concurrency", format!("concurrency must be from 1 to 10000, not {value}")),
            )?
        }
    };
    let rate = match document.get("rate") {
        None | Some(Value::Null) => None,
        Some(Value::String(rate)) => {
            Rate::parse(rate).map_err(|m| ApiError::invalid("rate", m))?;
            Some(rate.clone())
        }
        Some(other) => {
            return Err(ApiError::invalid("rate", format!("rate is a string such as \"20/1m\", not {other}")));
        }
    };
    Ok((concurrency, rate))
}

/// A JSON number that is a whole number at least 0, also when written as a float.
fn whole(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && (0.0..9.0e15).contains(f)).map(|f| f as u64))
}

/// A document as the TOML of one `[queues]` table, and the JSON field of each line.
struct Rendered {
    text: String,
    fields: Vec<String>,
}

impl Rendered {
    fn line(&mut self, field: &str, line: String) {
        self.text.push_str(&line);
        self.text.push('\n');
        self.fields.push(field.to_owned());
    }

    fn value(&mut self, field: &str, key: &str, value: &Value) -> Result<(), ApiError> {
        let toml = toml_value(field, value)?;
        self.line(field, format!("{key} = {toml}"));
        Ok(())
    }

    /// The config error as the API's: the field is the key the body lacks, if that is
    /// the fault, else the field of the line at fault.
    fn error(&self, e: &ConfigError) -> ApiError {
        let line = e.line().and_then(|line| self.fields.get(line - 1)).filter(|f| !f.is_empty());
        let message = e.message().to_owned();
        match e.missing().or(line.map(String::as_str)) {
            Some(field) => ApiError::invalid(field, message),
            None => ApiError::bad_request(message),
        }
    }
}

fn render(document: &Map<String, Value>) -> Result<Rendered, ApiError> {
    let mut out = Rendered { text: String::new(), fields: Vec::new() };
    out.line("", "[queues.q]".into());
    match document.get("defaults") {
        None | Some(Value::Null) => {}
        Some(Value::Object(defaults)) => {
            for (key, value) in defaults {
                if !DEFAULTS.contains(&key.as_str()) {
                    let known = DEFAULTS.join(", ");
                    return Err(ApiError::invalid(
                        format!("defaults.{key}"),
                        format!("unknown field; defaults take {known}"),
                    ));
                }
                if !value.is_null() {
                    out.value(&format!("defaults.{key}"), key, value)?;
                }
            }
        }
        Some(_) => return Err(ApiError::invalid("defaults", "defaults is an object")),
    }
    for key in ["shards", "group_concurrency", "group_rate"] {
        if let Some(value) = document.get(key).filter(|v| !v.is_null()) {
            out.value(key, key, value)?;
        }
    }
    match document.get("action") {
        None | Some(Value::Null) => {}
        Some(Value::Object(action)) => {
            out.line("action", "[queues.q.action]".into());
            let mut tables = Vec::new();
            for (key, value) in action {
                match value {
                    Value::Null => {}
                    Value::Object(table) => tables.push((key, table)),
                    _ => out.value(&format!("action.{key}"), key, value)?,
                }
            }
            for key in ["concurrency", "rate"] {
                if let Some(value) = document.get(key).filter(|v| !v.is_null()) {
                    out.value(key, key, value)?;
                }
            }
            for (key, table) in tables {
                out.line(&format!("action.{key}"), format!("[queues.q.action.{key}]"));
                for (inner, value) in table.iter().filter(|(_, v)| !v.is_null()) {
                    out.value(&format!("action.{key}.{inner}"), inner, value)?;
                }
            }
        }
        Some(_) => return Err(ApiError::invalid("action", "action is an object, or null for pull workers")),
    }
    Ok(out)
}

/// A JSON value as a TOML value (inline), refusing what TOML cannot hold.
fn toml_value(field: &str, value: &Value) -> Result<toml::Value, ApiError> {
    Ok(match value {
        Value::Null => return Err(ApiError::invalid(field, "null is not a value here; leave the field out")),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            // A whole number written as a float (`16.0`) is JSON Schema's integer too.
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => toml::Value::Integer(f as i64),
            (None, Some(f)) => toml::Value::Float(f),
            (None, None) => return Err(ApiError::invalid(field, format!("{n} is out of range"))),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => {
            toml::Value::Array(items.iter().map(|item| toml_value(field, item)).collect::<Result<_, _>>()?)
        }
        Value::Object(map) => {
            let mut table = toml::map::Map::new();
            // A null member is absent, as everywhere in the API (`"repeat": {"cron": null, …}`).
            for (key, item) in map.iter().filter(|(_, item)| !item.is_null()) {
                table.insert(key.clone(), toml_value(&format!("{field}.{key}"), item)?);
            }
            toml::Value::Table(table)
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy() -> EgressPolicy {
        EgressPolicy::public_only().allow("127.0.0.1").unwrap()
    }

    fn refused(body: Value) -> (Option<String>, String) {
        match QueueSettings::from_body(&body, &policy()) {
            Err(ApiError::Invalid { field, message }) => (field, message),
            other => panic!("{body}: expected a 400, got {other:?}"),
        }
    }

    #[test]
    fn the_example_of_api_md_is_read_with_its_defaults_action_and_limits() {
        let body = json!({
            "defaults": {"max_attempts": 10, "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"}, "repeat": null},
            "action": {"kind": "webhook", "url": "http://127.0.0.1:8080/hook", "secret_env": "PATH", "timeout": "10s"},
            "concurrency": 16, "rate": "20/1m", "shards": 1, "paused": false, "version": 3,
        });
        let settings = QueueSettings::from_body(&body, &policy()).unwrap();
        assert_eq!(settings.defaults.max_attempts, 10);
        let action = settings.action.as_ref().expect("an action");
        assert_eq!((action.concurrency, action.kind.name()), (16, "webhook"));
        assert!(action.rate.is_some());
        assert_eq!((settings.concurrency, settings.rate.as_deref(), settings.targets), (16, Some("20/1m"), true));
        assert!(!settings.document.contains_key("paused") && !settings.document.contains_key("version"));
    }

    #[test]
    fn a_null_member_of_a_nested_table_is_absent() {
        let body = json!({"defaults": {"repeat": {"every": "1h", "cron": null, "times": null}, "backoff": null}});
        let settings = QueueSettings::from_body(&body, &policy()).unwrap();
        assert!(settings.defaults.repeat.is_some(), "{:?}", settings.defaults);
        let (field, _) = refused(json!({"defaults": {"backoff": {"initial": "1s", "factor": 2, "max": null}}}));
        assert_eq!(field.as_deref(), Some("defaults.backoff"), "a null member it needs is missing");
    }

    #[test]
    fn each_error_names_the_json_field_with_the_config_files_message() {
        let (field, message) = refused(json!({"defaults": {"max_attempts": 0}}));
        assert_eq!(field.as_deref(), Some("defaults.max_attempts"));
        assert!(message.contains("max_attempts must be from 1"), "{message}");
        let (field, _) = refused(json!({"action": {"kind": "webhook", "url": "ftp://x"}}));
        assert_eq!(field.as_deref(), Some("action.url"));
        let (field, message) = refused(json!({"action": {"kind": "webhook"}}));
        assert_eq!(
            (field.as_deref(), message.as_str()),
            (Some("action.url"), "a webhook action needs a url"),
            "the key at fault, which the body lacks (API.md: the field is the JSON path at fault)"
        );
        let (field, _) = refused(json!({"action": {"kind": "webhook", "url": "http://127.0.0.1/", "color": 1}}));
        assert_eq!(field.as_deref(), Some("action.color"));
        let (field, _) = refused(json!({"action": {"kind": "webhook", "url": "http://10.0.0.1/"}}));
        assert_eq!(field.as_deref(), Some("action.url"), "a refused address");
        let (field, _) = refused(json!({"concurrency": 0, "action": {"kind": "webhook", "url": "http://127.0.0.1/"}}));
        assert_eq!(field.as_deref(), Some("concurrency"));
        assert_eq!(refused(json!({"concurrency": 0})).0.as_deref(), Some("concurrency"), "without an action too");
        assert_eq!(refused(json!({"rate": "fast"})).0.as_deref(), Some("rate"));
        assert_eq!(refused(json!({"shards": 0})).0.as_deref(), Some("shards"));
        assert_eq!(refused(json!({"targets": "yes"})).0.as_deref(), Some("targets"));
        assert_eq!(refused(json!({"colour": 1})).0.as_deref(), Some("colour"));
        assert_eq!(refused(json!({"defaults": {"tries": 1}})).0.as_deref(), Some("defaults.tries"));
    }

    #[test]
    fn a_group_rate_is_a_rate_string_named_by_its_field() {
        for bad in [json!("fast"), json!("0/1m"), json!(5), json!("10/0s")] {
            let (field, message) = refused(json!({ "group_rate": bad }));
            assert_eq!(field.as_deref(), Some("group_rate"), "{bad}: {message}");
        }
        let file = "[queues.q]\ngroup_rate = \"ten a minute\"\n";
        let (line, message) = crate::config::testing::error_line(file);
        assert_eq!(line, Some(2), "{message}");
        assert!(message.contains("group_rate") && message.contains("COUNT/DURATION"), "{message}");
    }

    #[test]
    fn an_action_without_its_url_names_action_url_where_the_file_names_the_line_of_kind() {
        let actions = [
            json!({"kind": "webhook"}),
            json!({"kind": "nats", "subject": "orders"}),
            json!({"kind": "rabbitmq", "routing_key": "orders"}),
            json!({"kind": "redis-stream", "stream": "orders"}),
            json!({"kind": "dingtalk", "text": "hi"}),
        ];
        for action in actions {
            let (field, message) = refused(json!({ "action": action }));
            assert_eq!(field.as_deref(), Some("action.url"), "{action}: {message}");
            assert!(message.contains("url"), "{action}: {message}");
        }
        // The file has no line for a key it lacks: its error stays on the line of kind.
        let file = "[queues.q]\nmax_attempts = 3\n[queues.q.action]\nkind = \"nats\"\nsubject = \"orders\"\n";
        let (line, message) = crate::config::testing::error_line(file);
        assert_eq!((line, message.as_str()), (Some(4), "a nats action needs a url (or url_env)"));
    }

    /// An action of `kind` with every key it needs (a chat robot's url and key from an
    /// environment variable every process has: its value is never reached).
    fn complete(kind: Kind) -> Value {
        let chat = json!({"kind": kind.name(), "text": "hi", "url_env": "PATH", "secret_env": "PATH"});
        match kind {
            Kind::Webhook => json!({"kind": "webhook", "url": "http://127.0.0.1/"}),
            Kind::Email => json!({"kind": "email", "smtp": {"host": "127.0.0.1"}, "from": "a@example.com",
                "to": ["b@example.com"], "subject": "s", "text": "t"}),
            Kind::Wecom | Kind::Dingtalk | Kind::Feishu => chat,
            Kind::Slack => json!({"kind": "slack", "text": "hi", "url_env": "PATH"}),
            Kind::Rabbitmq => json!({"kind": "rabbitmq", "url": "amqp://127.0.0.1", "routing_key": "orders"}),
            Kind::Nats => json!({"kind": "nats", "url": "nats://127.0.0.1", "subject": "orders"}),
            Kind::RedisStream => json!({"kind": "redis-stream", "url": "redis://127.0.0.1", "stream": "orders"}),
        }
    }

    #[test]
    fn an_action_without_a_key_it_needs_names_that_key() {
        let mut checked = 0;
        for kind in Kind::ALL {
            for needed in kind.needs() {
                let mut action = complete(kind);
                for key in std::iter::once(needed.key).chain(needed.or.iter().copied()) {
                    action.as_object_mut().unwrap().remove(key);
                }
                let (field, message) = refused(json!({ "action": action }));
                assert_eq!(field, Some(format!("action.{}", needed.key)), "{action}: {message}");
                assert!(message.contains(needed.says), "{action}: {message}");
                checked += 1;
            }
        }
        assert_eq!(checked, 19, "every key of the table");
        let table = [
            (json!({"kind": "email", "from": "a@example.com"}), "action.smtp", "needs an [smtp] table"),
            (json!({"kind": "email", "smtp": {"host": "h"}}), "action.from", "needs from"),
            (json!({"kind": "email", "smtp": {"host": "h"}, "from": "a@b.c"}), "action.subject", "needs a subject"),
            (json!({"kind": "email", "smtp": {"host": "h"}, "from": "a@b.c", "subject": "s"}), "action.text", "text"),
            (
                json!({"kind": "email", "smtp": {"host": "h"}, "from": "a@b.c", "subject": "s", "text": "t"}),
                "action.to",
                "at least one recipient",
            ),
            (json!({"kind": "rabbitmq", "url": "amqp://h"}), "action.routing_key", "needs a routing_key"),
            (json!({"kind": "nats", "url": "nats://h"}), "action.subject", "needs a subject"),
            (json!({"kind": "redis-stream", "url": "redis://h"}), "action.stream", "needs a stream"),
            (json!({"kind": "slack", "url_env": "PATH"}), "action.text", "needs a text template"),
            (json!({"kind": "feishu"}), "action.text", "needs a text template"),
            (json!({"kind": "dingtalk", "text": "hi"}), "action.url", "needs its webhook url"),
            (json!({"kind": "wecom", "text": "hi"}), "action.secret_env", "needs its key"),
        ];
        for (action, field, says) in table {
            let (found, message) = refused(json!({ "action": action }));
            assert_eq!(found.as_deref(), Some(field), "{action}: {message}");
            assert!(message.contains(says), "{action}: {message}");
        }
    }

    #[test]
    fn secret_values_are_refused_and_environment_variables_taken() {
        let (field, message) =
            refused(json!({"action": {"kind": "webhook", "url": "http://127.0.0.1/", "secret": "s"}}));
        assert_eq!(field.as_deref(), Some("action.secret"));
        assert!(message.contains("secret_env"), "{message}");
        let smtp =
            json!({"kind": "email", "smtp": {"host": "127.0.0.1", "password": "p"}, "from": "a@b.c", "to": ["d@e.f"]});
        assert_eq!(refused(json!({"action": smtp})).0.as_deref(), Some("action.smtp.password"));
        let chat = json!({"kind": "slack", "url": "https://hooks.slack.com/services/T/B/x", "text": "hi"});
        assert_eq!(refused(json!({"action": chat})).0.as_deref(), Some("action.url"));
        let (field, message) = refused(
            json!({"action": {"kind": "webhook", "url": "http://127.0.0.1/", "secret_env": "PUNCTUAL_NOT_SET_ANYWHERE"}}),
        );
        assert_eq!(field.as_deref(), Some("action.secret_env"), "{message}");
        let rotating =
            json!({"kind": "webhook", "url": "http://127.0.0.1/", "secret_env": "PATH", "previous_secret": "s"});
        let (field, message) = refused(json!({ "action": rotating }));
        assert_eq!(field.as_deref(), Some("action.previous_secret"));
        assert!(message.contains("previous_secret_env"), "{message}");
        let lone = json!({"kind": "webhook", "url": "http://127.0.0.1/", "previous_secret_env": "PATH"});
        let (field, message) = refused(json!({ "action": lone }));
        assert_eq!(field.as_deref(), Some("action.previous_secret_env"), "{message}");
        assert!(message.contains("set secret (or secret_env) too"), "{message}");
    }
}
