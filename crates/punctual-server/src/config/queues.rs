//! The `[queues."name"]` tables (a queue's task defaults, shards, dead-task and history
//! retention and push action) and the `[egress]` policy the actions are checked against: an action
//! is validated here, templates compiled, URLs parsed, secrets read from the
//! environment, so a bad one stops start-up with its line.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::time::Duration;

use punctual_actions::{ActionSpec, EgressPolicy};
use punctual_core::policy::Rate;
use punctual_core::{Backoff, QueueDefaults, QueueName};
use toml::Spanned;

use super::ConfigError;
use super::raw::{RawEgress, RawQueue};
use crate::extract::ApiDuration;

/// The shortest `dead_retention` or `history_retention`: a bare number is milliseconds,
/// and `dead_retention = 30` meant as days would delete every dead task at once.
const MIN_RETENTION: Duration = Duration::from_secs(60);

/// A retention `field` as given, refused under [`MIN_RETENTION`].
fn retention(
    field: &str,
    keep: &Spanned<ApiDuration>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<Duration, ConfigError> {
    let duration = keep.get_ref().0;
    if duration < MIN_RETENTION {
        let message = format!(
            "{field} is {}, under the 1m it must at least be: a bare number is milliseconds; write e.g. \"30d\"",
            punctual_core::time::format_duration(duration)
        );
        return Err(at(keep.span(), message));
    }
    Ok(duration)
}

/// What the `[queues."name"]` tables give, per queue.
pub(super) struct QueueTables {
    pub(super) defaults: HashMap<QueueName, QueueDefaults>,
    pub(super) shards: HashMap<QueueName, u32>,
    pub(super) dead_retention: HashMap<QueueName, Duration>,
    pub(super) history_retention: HashMap<QueueName, Duration>,
    /// In name order.
    pub(super) actions: Vec<(QueueName, ActionSpec)>,
}

/// Validates the queue tables in name order; the first error wins.
pub(super) fn queue_tables(
    tables: &BTreeMap<Spanned<String>, RawQueue>,
    egress: &EgressPolicy,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<QueueTables, ConfigError> {
    let mut queues = HashMap::new();
    let mut shards = HashMap::new();
    let mut dead_retention = HashMap::new();
    let mut history_retention = HashMap::new();
    let mut actions = Vec::new();
    for (name, queue) in tables {
        let queue_name = QueueName::new(name.get_ref().as_str()).map_err(|e| at(name.span(), e.to_string()))?;
        let mut defaults = QueueDefaults::default();
        if let Some(n) = &queue.max_attempts {
            defaults.max_attempts = u32::try_from(*n.get_ref()).ok().filter(|n| *n >= 1).ok_or_else(|| {
                at(n.span(), format!("max_attempts must be from 1 to {}, not {}", u32::MAX, n.get_ref()))
            })?;
        }
        if let Some(b) = &queue.backoff {
            let raw = b.get_ref();
            defaults.backoff =
                Backoff::new(raw.initial.0, raw.factor, raw.max.0).map_err(|e| at(b.span(), e.to_string()))?;
        }
        if let Some(repeat) = &queue.repeat {
            defaults.repeat = Some(repeat.get_ref().clone().into_repeat().map_err(|e| {
                let message = match e {
                    crate::error::ApiError::Invalid { field, message } => {
                        format!("{}: {message}", field.unwrap_or_else(|| "repeat".into()))
                    }
                    other => format!("repeat: {other:?}"),
                };
                at(repeat.span(), message)
            })?);
        }
        if let Some(n) = &queue.group_concurrency {
            defaults.group_concurrency =
                Some(u32::try_from(*n.get_ref()).ok().filter(|n| *n >= 1).ok_or_else(|| {
                    at(n.span(), format!("group_concurrency must be from 1 to {}, not {}", u32::MAX, n.get_ref()))
                })?);
        }
        if let Some(rate) = &queue.group_rate {
            let parsed = Rate::parse(rate.get_ref()).map_err(|m| at(rate.span(), format!("group_rate: {m}")))?;
            defaults.group_rate = Some(parsed);
        }
        if let Some(n) = &queue.shards {
            let n = u32::try_from(*n.get_ref())
                .ok()
                .filter(|n| (1..=1024).contains(n))
                .ok_or_else(|| at(n.span(), format!("shards must be from 1 to 1024, not {}", n.get_ref())))?;
            shards.insert(queue_name.clone(), n);
        }
        for (field, keep, kept) in [
            ("dead_retention", &queue.dead_retention, &mut dead_retention),
            ("history_retention", &queue.history_retention, &mut history_retention),
        ] {
            if let Some(keep) = keep {
                kept.insert(queue_name.clone(), retention(field, keep, at)?);
            }
        }
        if let Some(action) = &queue.action {
            let spec = action.get_ref().to_spec(egress).map_err(|e| {
                let mut error = at(e.span.unwrap_or(action.span()), e.message);
                error.missing = e.missing.map(|key| format!("action.{key}"));
                error
            })?;
            actions.push((queue_name.clone(), spec));
        }
        queues.insert(queue_name, defaults);
    }
    Ok(QueueTables { defaults: queues, shards, dead_retention, history_retention, actions })
}

pub(super) fn egress_policy(
    raw: Option<&RawEgress>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<EgressPolicy, ConfigError> {
    let mut policy = EgressPolicy::public_only();
    let Some(raw) = raw else { return Ok(policy) };
    for entry in &raw.allow {
        policy = policy.allow(entry.get_ref()).map_err(|e| at(entry.span(), e.to_string()))?;
    }
    Ok(policy.allow_private(raw.allow_private.unwrap_or(false)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use punctual_actions::EgressPolicy;
    use punctual_core::QueueName;

    use crate::config::testing::{error_line, file};
    use crate::config::{ServeArgs, settings};

    #[test]
    fn a_queue_can_give_its_tasks_a_default_repeat() {
        let s = file("[queues.\"flow.remind\"]\nrepeat = { every = \"24h\", times = 7 }\n").unwrap();
        let q = &s.queues[&QueueName::new("flow.remind").unwrap()];
        let expected = punctual_core::Repeat::every(Duration::from_secs(86_400)).unwrap().times(7).unwrap();
        assert_eq!(q.repeat, Some(expected));
        let cron = file("[queues.q]\nrepeat = { cron = \"0 9 * * MON-FRI\", tz = \"Asia/Shanghai\" }\n").unwrap();
        assert!(cron.queues[&QueueName::new("q").unwrap()].repeat.is_some());
        let (line, message) = error_line("[queues.q]\nmax_attempts = 3\nrepeat = { every = \"0ms\" }\n");
        assert_eq!(line, Some(3));
        assert!(message.starts_with("repeat.every:"), "{message}");
        let (line, message) = error_line("[queues.q]\nrepeat = { every = \"1h\", cron = \"* * * * *\" }\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("either every or cron"), "{message}");
    }

    #[test]
    fn the_action_of_api_md_is_read() {
        let text = r#"
[egress]
allow = ["127.0.0.1"]

[queues."order.cancel"]
max_attempts = 10

[queues."order.cancel".action]      # push: the server runs the handler
kind = "webhook"                    # webhook | email | wecom | dingtalk | feishu | slack
url = "http://127.0.0.1:8080/hooks/order-cancel"
secret = "whsec-x"
previous_secret = "whsec-before"
timeout = "10s"
concurrency = 32

[queues."flow.remind".action]
kind = "wecom"
secret_env = "PATH"
text = "{{ assignee }}: step {{ step }} is overdue since {{ due_local }}"
mention = ["{{ assignee_id }}"]
rate = "20/1m"
timezone = "Asia/Shanghai"

[queues."flow.mail".action]
kind = "email"
smtp = { host = "smtp.example.com", port = 2525, security = "plain", username = "u", password = "p" }
from = "Punctual <noreply@example.com>"
to = ["{{ email }}"]
subject = "Reminder"
text = "Hello {{ name }}"
html = "<p>Hello {{ name }}</p>"
"#;
        let s = file(text).unwrap();
        let names: Vec<&str> = s.actions.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["flow.mail", "flow.remind", "order.cancel"]);
        let (_, hook) = &s.actions[2];
        assert_eq!((hook.kind.name(), hook.concurrency, hook.timeout), ("webhook", 32, Duration::from_secs(10)));
        let (_, wecom) = &s.actions[1];
        assert_eq!(wecom.rate, Some(punctual_actions::Rate::parse("20/1m").unwrap()));
        assert_eq!(hook.final_statuses.as_slice(), &[400, 413, 415, 422], "the default");
        let custom = file(
            "[egress]\nallow = [\"127.0.0.1\"]\n[queues.q.action]\nkind = \"webhook\"\nurl = \"http://127.0.0.1/h\"\nfinal_statuses = [404, 400]\n",
        )
        .unwrap();
        assert_eq!(custom.actions[0].1.final_statuses.as_slice(), &[400, 404]);
        // Secrets never reach a log line.
        let debug = format!("{:?}", s.actions);
        assert!(!debug.contains("whsec-") && !debug.contains("\"p\""), "{debug}");
        let punctual_actions::ActionKind::Webhook(config) = &hook.kind else { panic!("a webhook") };
        let secrets = (config.secret.as_ref().map(|s| s.expose()), config.previous_secret.as_ref().map(|s| s.expose()));
        assert_eq!(secrets, (Some("whsec-x"), Some("whsec-before")), "both sign while the secret is rotated");
        assert_eq!(s.queues[&QueueName::new("order.cancel").unwrap()].max_attempts, 10);
    }

    #[test]
    fn an_action_on_a_refused_address_is_an_error_on_its_url_line_that_says_how_to_allow_it() {
        let hook = "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:8080/hooks\"\n";
        let (line, message) = error_line(hook);
        assert_eq!(line, Some(3));
        assert_eq!(message, "url: refused: 127.0.0.1 is a loopback address; add it to [egress] allow to permit it");
        for allow in ["[egress]\nallow = [\"127.0.0.1\"]\n", "[egress]\nallow = [\"127.0.0.0/8\", \"::1\"]\n"] {
            let s = file(&format!("{allow}{hook}")).unwrap();
            assert_eq!(s.actions.len(), 1, "{allow}");
        }
        // A host name is judged when it is resolved, on every connection, not here.
        assert!(file("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://localhost:8080/hooks\"\n").is_ok());

        let private = "[queues.q.action]\nkind = \"slack\"\ntext = \"hi\"\n\nurl = \"http://10.1.2.3/hook\"\n";
        let (line, message) = error_line(private);
        assert_eq!(line, Some(5));
        assert!(message.contains("10.1.2.3 is a private address"), "{message}");
        assert!(message.contains("or set allow_private = true"), "{message}");
        assert!(file(&format!("[egress]\nallow_private = true\n{private}")).is_ok());
        let metadata = "[egress]\nallow_private = true\n[queues.q.action]\nkind = \"webhook\"\n\
                        url = \"http://[::ffff:169.254.169.254]/latest\"\n";
        let (line, message) = error_line(metadata);
        assert_eq!(line, Some(5), "allow_private does not open link-local: {message}");
        assert!(message.contains("IPv4 169.254.169.254 in IPv6 form"), "{message}");
    }

    #[test]
    fn egress_entries_are_checked_with_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("[egress]\nallow = [\"127.0.0.1\",\n  \"10.0.0.0/33\"]\n", 3, "not a CIDR network"),
            ("[egress]\n\nallow = [\"10.1.2.3/8\"]\n", 3, "did you mean 10.0.0.0/8?"),
            ("[egress]\nallow = [\"http://hooks.internal\"]\n", 2, "is a URL"),
            ("[egress]\nallow = [\"\"]\n", 2, "cannot be empty"),
            ("[egress]\nallow = \"127.0.0.1\"\n", 2, "sequence"),
            ("[egress]\nallow_private = \"yes\"\n", 2, "bool"),
            ("[egress]\ndeny = [\"1.2.3.4\"]\n", 2, "unknown field `deny`"),
        ];
        for (text, line, needle) in cases {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
        let s =
            file("[egress]\nallow = [\"127.0.0.1\", \"fd00::/8\", \"hooks.internal.example\", \"*.corp\"]\n").unwrap();
        let expected = EgressPolicy::public_only()
            .allow("127.0.0.1")
            .and_then(|p| p.allow("fd00::/8"))
            .and_then(|p| p.allow("hooks.internal.example"))
            .and_then(|p| p.allow("*.corp"))
            .unwrap();
        assert_eq!(s.egress, expected);
        assert_eq!(settings(&ServeArgs::default(), None).unwrap().egress, EgressPolicy::public_only());
    }

    /// `punctual check-config` reports these; each names its line.
    pub(crate) const BROKEN_ACTIONS: &[(&str, usize, &str)] = &[
        ("[queues.q.action]\nkind = \"pigeon\"\n", 2, "unknown variant `pigeon`"),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ncolour = 1\n", 4, "unknown field `colour`"),
        ("[queues.q.action]\nkind = \"webhook\"\n\nurl = \"ftp://x/hook\"\n", 4, "must be an http:// or https:// URL"),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"not a url\"\n", 3, "is not a URL"),
        ("[queues.q.action]\nkind = \"webhook\"\n", 2, "needs a url"),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ntext = \"hi\"\n",
            4,
            "text does not apply to a webhook",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nsecret_env = \"PUNCTUAL_SURELY_UNSET_9\"\n",
            4,
            "the environment variable PUNCTUAL_SURELY_UNSET_9 is not set",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nprevious_secret = \"old\"\n",
            4,
            "set secret (or secret_env) too",
        ),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nprevious_secret = \"old\"\n",
            5,
            "previous_secret does not apply to a slack",
        ),
        ("[targets]\n\nprevious_secret_env = \"PATH\"\n", 3, "set secret_env too"),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nconcurrency = 0\n",
            4,
            "concurrency must be from 1",
        ),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\ntimeout = \"soon\"\n", 4, "soon"),
        ("[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nrate = \"20\"\n", 5, "not a rate"),
        ("[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\n\ntext = \"Hello {{ name \"\n", 5, "syntax error"),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nmention = [\"ok\",\n \"{% if %}\"]\n",
            6,
            "mention[1]",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = [400,\n  410]\n",
            5,
            "final_statuses[1]: 410 (Gone) always means done",
        ),
        (
            "[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = [302]\n",
            4,
            "final_statuses[0]: 302 is not a status that can be final: give statuses from 400 to 599",
        ),
        ("[queues.q.action]\nkind = \"webhook\"\nurl = \"http://x\"\nfinal_statuses = 404\n", 4, "sequence"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\nfinal_statuses = [404]\n",
            8,
            "final_statuses does not apply to an email action",
        ),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\nmention_mobiles = [\"1\"]\n",
            5,
            "does not apply to a slack",
        ),
        (
            "[queues.q.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\ntimezone = \"Mars/Base\"\n",
            5,
            "IANA",
        ),
        ("[queues.q.action]\nkind = \"wecom\"\ntext = \"hi\"\n", 2, "needs its key"),
        ("[queues.q.action]\nkind = \"dingtalk\"\ntext = \"hi\"\n", 2, "needs its webhook url"),
        ("[queues.q.action]\nkind = \"feishu\"\nurl = \"https://x\"\n", 2, "needs a text template"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\", security = \"ssl\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\n",
            3,
            "not an SMTP security",
        ),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"not an address\"\nto = [\"x@y.z\"]\nsubject = \"s\"\ntext = \"t\"\n",
            4,
            "is not an email address",
        ),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\" }\nfrom = \"a@b.c\"\nto = [\"x@y.z\",\n  \"{{ oops\"]\nsubject = \"s\"\ntext = \"t\"\n",
            6,
            "template to[1]",
        ),
        ("[queues.q.action]\nkind = \"email\"\nfrom = \"a@b.c\"\n", 2, "needs an [smtp] table"),
        (
            "[queues.q.action]\nkind = \"email\"\nsmtp = { host = \"h\", pasword = \"x\" }\n",
            3,
            "unknown field `pasword`",
        ),
    ];

    #[test]
    fn broken_actions_are_refused_with_their_line() {
        for (text, line, needle) in BROKEN_ACTIONS {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }
}
