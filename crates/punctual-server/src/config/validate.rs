//! Validation of the file and the flags into [`Settings`]: flags over the file over the
//! built-in defaults, each value checked, every error naming the file and the line at
//! fault (or "command line" for a flag). The `[queues]` and `[egress]` tables are
//! checked in `queues`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use punctual_actions::EgressPolicy;
use punctual_core::Limits;
use toml::Spanned;

use super::access::{access_tokens, check_token};
use super::calendars::calendar_tables;
use super::queues::{QueueTables, egress_policy, queue_tables};
use super::raw::{RawConfig, RawRedis};
use super::{Backend, ConfigError, RedisSettings, ServeArgs, Settings};
use crate::extract::ApiDuration;
use crate::tls::TlsFiles;

/// Validates the file (if any) and the flags into settings.
pub(crate) fn settings(args: &ServeArgs, file: Option<(&Path, &str)>) -> Result<Settings, ConfigError> {
    let (raw, source, text) = match file {
        Some((path, text)) => {
            let source = path.display().to_string();
            let raw: RawConfig = parse(&source, text)?;
            (raw, source, text)
        }
        None => (RawConfig::default(), String::new(), ""),
    };
    let at = |span: Range<usize>, message: String| ConfigError::new(&source, Some(line_of(text, &span)), message);

    let listen = match (&args.listen, &raw.listen) {
        (Some(flag), _) => check_listen(flag).map_err(ConfigError::flag)?,
        (None, Some(value)) => check_listen(value.get_ref()).map_err(|m| at(value.span(), m))?,
        (None, None) => "127.0.0.1:7575".to_owned(),
    };

    let backend = match (&args.data, &args.store) {
        (Some(dir), _) => Backend::Embedded(dir.clone()),
        (None, Some(url)) => backend_of(url).map_err(ConfigError::flag)?,
        (None, None) => match (&raw.data, &raw.store) {
            (Some(_), Some(store)) => {
                return Err(at(store.span(), "give data (the embedded store) or store (a URL), not both".into()));
            }
            (Some(dir), None) => {
                if dir.get_ref().is_empty() {
                    return Err(at(dir.span(), "data names a directory and cannot be empty".into()));
                }
                Backend::Embedded(PathBuf::from(dir.get_ref()))
            }
            (None, Some(url)) => backend_of(url.get_ref()).map_err(|m| at(url.span(), m))?,
            (None, None) => Backend::Embedded(PathBuf::from("./punctual-data")),
        },
    };

    // Each with its span when it comes from the file (scoped tokens name its line).
    let tokens: Vec<(String, Option<Range<usize>>)> = if args.tokens.is_empty() {
        let mut tokens = Vec::new();
        for token in raw.tokens.iter().flatten() {
            check_token(token.get_ref()).map_err(|m| at(token.span(), m))?;
            tokens.push((token.get_ref().clone(), Some(token.span())));
        }
        tokens
    } else {
        for token in &args.tokens {
            check_token(token).map_err(ConfigError::flag)?;
        }
        args.tokens.iter().map(|t| (t.clone(), None)).collect()
    };
    let access = access_tokens(&raw.access, &tokens, &at, &|span: &Range<usize>| line_of(text, span))?;
    let tokens = tokens.into_iter().map(|(token, _)| token).collect();

    let duration = |flag: Option<Duration>, value: &Option<Spanned<ApiDuration>>, name: &str, default: Duration| {
        let (d, span) = match (flag, value) {
            (Some(d), _) => (d, None),
            (None, Some(v)) => (v.get_ref().0, Some(v.span())),
            (None, None) => return Ok(default),
        };
        if d.is_zero() {
            let message = format!("{name} must be longer than 0");
            return Err(span.map_or_else(|| ConfigError::flag(message.clone()), |s| at(s, message.clone())));
        }
        Ok(d)
    };
    let count = |flag: Option<usize>, value: &Option<Spanned<i64>>, name: &str, default: usize| {
        let (n, span) = match (flag, value) {
            (Some(n), _) => (i64::try_from(n).unwrap_or(i64::MAX), None),
            (None, Some(v)) => (*v.get_ref(), Some(v.span())),
            (None, None) => return Ok(default),
        };
        match usize::try_from(n) {
            Ok(n) if n >= 1 => Ok(n),
            _ => {
                let message = format!("{name} must be at least 1, not {n}");
                Err(span.map_or_else(|| ConfigError::flag(message.clone()), |s| at(s, message.clone())))
            }
        }
    };

    let egress = egress_policy(raw.egress.as_ref(), &at)?;
    let targets_secret = targets_secrets(raw.targets.as_ref(), &at)?;
    let QueueTables { defaults: queues, shards, dead_retention, history_retention, actions } =
        queue_tables(&raw.queues, &egress, &at)?;
    let strict_queues = args.strict_queues || raw.strict_queues.as_ref().is_some_and(|s| *s.get_ref());
    if strict_queues && queues.is_empty() {
        let message = "strict_queues refuses every queue the config file does not declare, and it declares none: \
                       add a [queues.\"NAME\"] table for each queue";
        return Err(match &raw.strict_queues {
            Some(value) if !args.strict_queues => at(value.span(), message.into()),
            _ => ConfigError::flag(format!("--strict-queues: {message}")),
        });
    }

    let tls = tls_files(args, &raw, &at)?;
    let calendars = calendar_tables(&raw.calendars, &at)?;
    let outboxes = super::outbox::outbox_tables(&raw.outbox, &at)?;
    let telemetry = super::telemetry::telemetry_table(raw.telemetry.as_ref(), &|name| std::env::var(name).ok(), &at)?;

    Ok(Settings {
        listen,
        backend,
        tokens,
        access,
        log_format: args.log_format.or(raw.log_format.as_ref().map(|f| *f.get_ref())).unwrap_or_default(),
        grace_period: duration(args.grace_period, &raw.grace_period, "grace_period", Duration::from_secs(10))?,
        request_timeout: duration(
            args.request_timeout,
            &raw.request_timeout,
            "request_timeout",
            super::DEFAULT_REQUEST_TIMEOUT,
        )?,
        max_payload_bytes: count(
            args.max_payload_bytes,
            &raw.max_payload_bytes,
            "max_payload_bytes",
            Limits::default().max_payload_bytes,
        )?,
        max_batch: count(args.max_batch, &raw.max_batch, "max_batch", Limits::default().max_batch)?,
        max_body_bytes: count(
            args.max_body_bytes,
            &raw.max_body_bytes,
            "max_body_bytes",
            super::DEFAULT_MAX_BODY_BYTES,
        )?,
        max_overdue: match (args.max_overdue, &raw.max_overdue) {
            (None, None) => None,
            (flag, value) => Some(duration(flag, value, "max_overdue", Duration::ZERO)?),
        },
        strict_queues,
        queues,
        shards,
        dead_retention,
        history_retention,
        redis: redis_settings(raw.redis.as_ref(), &at)?,
        actions,
        egress,
        targets_secret,
        tls,
        calendars,
        outboxes,
        telemetry,
        config_file: file.map(|(path, _)| path.to_path_buf()),
    })
}

/// `--tls-cert`/`tls_cert` and `--tls-key`/`tls_key`, each flag over its key: both or
/// neither. The files are read when the server starts (`tls`), not here.
fn tls_files(
    args: &ServeArgs,
    raw: &RawConfig,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<TlsFiles>, ConfigError> {
    let pick = |flag: &Option<PathBuf>, value: &Option<Spanned<String>>, name: &str| match (flag, value) {
        (Some(path), _) if path.as_os_str().is_empty() => {
            Err(ConfigError::flag(format!("--{} names a file and cannot be empty", name.replace('_', "-"))))
        }
        (Some(path), _) => Ok(Some((path.clone(), None))),
        (None, Some(v)) if v.get_ref().is_empty() => {
            Err(at(v.span(), format!("{name} names a file and cannot be empty")))
        }
        (None, Some(v)) => Ok(Some((PathBuf::from(v.get_ref()), Some(v.span())))),
        (None, None) => Ok(None),
    };
    let cert = pick(&args.tls_cert, &raw.tls_cert, "tls_cert")?;
    let key = pick(&args.tls_key, &raw.tls_key, "tls_key")?;
    let lonely = |span: Option<Range<usize>>, has: &str, lacks: &str| {
        let message = format!(
            "{has} is set but {lacks} is not: HTTPS needs both the certificate chain (--tls-cert, tls_cert) and its \
             private key (--tls-key, tls_key), or neither for plain HTTP"
        );
        span.map_or_else(|| ConfigError::flag(message.clone()), |s| at(s, message.clone()))
    };
    match (cert, key) {
        (Some((cert, _)), Some((key, _))) => Ok(Some(TlsFiles { cert, key })),
        (None, None) => Ok(None),
        (Some((_, span)), None) => Err(lonely(span, "tls_cert", "tls_key")),
        (None, Some((_, span))) => Err(lonely(span, "tls_key", "tls_cert")),
    }
}

fn redis_settings(
    raw: Option<&Spanned<RawRedis>>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<RedisSettings, ConfigError> {
    let mut settings = RedisSettings::default();
    let Some(raw) = raw else { return Ok(settings) };
    let raw = raw.get_ref();
    if let Some(prefix) = &raw.prefix {
        let valid = !prefix.get_ref().is_empty()
            && prefix.get_ref().len() <= 64
            && prefix.get_ref().bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
        if !valid {
            return Err(at(prefix.span(), "prefix is 1 to 64 of A-Z a-z 0-9 . _ : -".into()));
        }
        settings.prefix = prefix.get_ref().clone();
    }
    if let Some(n) = &raw.wait_replicas {
        settings.wait_replicas = u32::try_from(*n.get_ref())
            .ok()
            .filter(|n| *n <= 16)
            .ok_or_else(|| at(n.span(), format!("wait_replicas must be from 0 to 16, not {}", n.get_ref())))?;
    }
    if let Some(timeout) = &raw.timeout {
        if timeout.get_ref().0 < Duration::from_millis(100) {
            return Err(at(timeout.span(), "timeout must be at least 100ms".into()));
        }
        settings.timeout = timeout.get_ref().0;
    }
    if let Some(slack) = &raw.shard_order_slack {
        if slack.get_ref().0 > Duration::from_secs(3600) {
            return Err(at(slack.span(), "shard_order_slack must be at most 1h".into()));
        }
        settings.shard_order_slack = slack.get_ref().0;
    }
    Ok(settings)
}

/// One `[queues."name"]` table given as TOML text (the settings API renders its JSON
/// body so), validated exactly as in the file, against the server's egress policy;
/// the error's line is the line of `text` at fault.
pub(crate) fn queue_table(text: &str, egress: &EgressPolicy) -> Result<QueueTable, ConfigError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct OneQueue {
        queues: std::collections::BTreeMap<Spanned<String>, super::raw::RawQueue>,
    }
    let source = "settings";
    let raw: OneQueue = parse(source, text)?;
    let at = |span: Range<usize>, message: String| ConfigError::new(source, Some(line_of(text, &span)), message);
    let QueueTables { defaults, shards, actions, .. } = queue_tables(&raw.queues, egress, &at)?;
    Ok(QueueTable {
        defaults: defaults.into_values().next().unwrap_or_default(),
        shards: shards.into_values().next(),
        action: actions.into_iter().next().map(|(_, spec)| spec),
    })
}

/// What one queue's table gives.
#[derive(Debug)]
pub(crate) struct QueueTable {
    pub(crate) defaults: punctual_core::QueueDefaults,
    pub(crate) shards: Option<u32>,
    pub(crate) action: Option<punctual_actions::ActionSpec>,
}

/// `text`, the TOML of `source`, read into `T`; the error names its line.
fn parse<T: serde::de::DeserializeOwned>(source: &str, text: &str) -> Result<T, ConfigError> {
    toml::from_str(text)
        .map_err(|e| ConfigError::new(source, e.span().map(|span| line_of(text, &span)), e.message().trim()))
}

/// The 1-based line of the byte offset where `span` starts.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    let end = span.start.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
}

fn check_listen(addr: &str) -> Result<String, String> {
    let valid = addr.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(addr.to_owned())
    } else {
        Err(format!("'{addr}' is not an address to listen on: write HOST:PORT, e.g. 127.0.0.1:7575"))
    }
}

fn backend_of(url: &str) -> Result<Backend, String> {
    let schemes =
        ["redis://", "rediss://", "redis-cluster://", "rediss-cluster://", "redis-sentinel://", "rediss-sentinel://"];
    if schemes.iter().any(|scheme| url.starts_with(scheme)) {
        Ok(Backend::Redis(url.to_owned()))
    } else {
        Err(format!(
            "'{}' is not a store URL: use redis://HOST:PORT, redis-cluster://HOST:PORT,… \
             or redis-sentinel://HOST:PORT,…/NAME (rediss://, rediss-cluster://, rediss-sentinel:// over TLS), \
             or data (--data DIR) for the embedded store",
            punctual_redis::redacted(url)
        ))
    }
}

/// The secrets of `[targets]`: `secret_env`'s, and `previous_secret_env`'s after it
/// while receivers move to the new one (which needs the current one).
fn targets_secrets(
    targets: Option<&super::raw::RawTargets>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<punctual_actions::SigningSecrets>, ConfigError> {
    let Some(targets) = targets else { return Ok(None) };
    let read = |env: &Spanned<String>, key: &str| {
        punctual_actions::Secret::from_env(env.get_ref(), key).map_err(|e| at(env.span(), e.to_string()))
    };
    match (&targets.secret_env, &targets.previous_secret_env) {
        (None, None) => Ok(None),
        (None, Some(previous)) => Err(at(
            previous.span(),
            "previous_secret_env signs beside the current secret: set secret_env too".to_owned(),
        )),
        (Some(current), previous) => {
            let secrets = punctual_actions::SigningSecrets::new(read(current, "targets.secret_env")?);
            match previous {
                Some(previous) => Ok(Some(secrets.with_previous(read(previous, "targets.previous_secret_env")?))),
                None => Ok(Some(secrets)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use punctual_core::{Backoff, QueueName};

    use super::settings;
    use crate::config::testing::{error_line, file};
    use crate::config::{Backend, LogFormat, ServeArgs};

    #[test]
    fn defaults_without_a_file() {
        let s = settings(&ServeArgs::default(), None).unwrap();
        assert_eq!(s.listen, "127.0.0.1:7575");
        assert_eq!(s.backend, Backend::Embedded(PathBuf::from("./punctual-data")));
        assert!(s.tokens.is_empty());
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!((s.max_payload_bytes, s.max_batch), (65_536, 10_000));
        assert_eq!(s.grace_period, Duration::from_secs(10));
        assert_eq!(s.max_overdue, None, "the overdue bound of /readyz is off by default");
    }

    #[test]
    fn max_overdue_comes_from_the_file_or_the_flag() {
        assert_eq!(file("max_overdue = \"90s\"\n").unwrap().max_overdue, Some(Duration::from_secs(90)));
        let args = ServeArgs { max_overdue: Some(Duration::from_secs(5)), ..ServeArgs::default() };
        let s = settings(&args, Some((Path::new("f.toml"), "max_overdue = \"90s\"\n"))).unwrap();
        assert_eq!(s.max_overdue, Some(Duration::from_secs(5)));
        assert_eq!(error_line("\nmax_overdue = \"0s\"\n"), (Some(2), "max_overdue must be longer than 0".into()));
    }

    #[test]
    fn strict_queues_comes_from_the_file_or_the_flag_and_needs_declared_queues() {
        assert!(!file("[queues.q]\n").unwrap().strict_queues, "off by default");
        let s = file("strict_queues = true\n[queues.\"flow.remind\"]\n[queues.b.action]\nkind = \"slack\"\nurl = \"https://x\"\ntext = \"hi\"\n").unwrap();
        assert!(s.strict_queues);
        let mut declared: Vec<String> =
            crate::shared::HttpOptions::from(&s).queues.iter().map(ToString::to_string).collect();
        declared.sort();
        assert_eq!(declared, ["b", "flow.remind"], "every table, with or without an action");
        assert!(crate::shared::HttpOptions::from(&s).strict_queues);
        let args = ServeArgs { strict_queues: true, ..ServeArgs::default() };
        let s = settings(&args, Some((Path::new("f.toml"), "strict_queues = false\n[queues.q]\n"))).unwrap();
        assert!(s.strict_queues, "the flag turns it on over the file");
        let (line, message) = error_line("max_batch = 5\nstrict_queues = true\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("it declares none"), "{message}");
        let e = settings(&args, None).unwrap_err();
        assert!(e.to_string().starts_with("command line: --strict-queues: "), "{e}");
        assert_eq!(error_line("strict_queues = \"yes\"\n").0, Some(1));
    }

    #[test]
    fn the_example_of_api_md_without_its_action_is_read() {
        let s = file(
            r#"
listen = "127.0.0.1:7575"
data = "./punctual-data"            # or: store = "redis://127.0.0.1:6379"
tokens = ["s3cret"]

[queues."order.cancel"]             # defaults for tasks of this queue
max_attempts = 10
backoff = { initial = "1s", factor = 2.0, max = "1h" }
"#,
        )
        .unwrap();
        assert_eq!(s.tokens, vec!["s3cret".to_owned()]);
        let q = &s.queues[&QueueName::new("order.cancel").unwrap()];
        assert_eq!(q.max_attempts, 10);
        assert_eq!(q.backoff, Backoff::default());
    }

    #[test]
    fn errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("listen = \"127.0.0.1:7575\"\nlisten_port = 1\n", 2, "listen_port"),
            ("\n\nlisten = \"nowhere\"\n", 3, "HOST:PORT"),
            ("data = \"d\"\nstore = \"redis://x:1\"\n", 2, "not both"),
            ("store = \"mysql://x\"\n", 1, "not a store URL"),
            ("tokens = [\"ok\",\n  \"has space\"]\n", 2, "printable"),
            ("grace_period = \"soon\"\n", 1, "soon"),
            ("request_timeout = 0\n", 1, "longer than 0"),
            ("max_batch = 0\n", 1, "at least 1"),
            ("log_format = \"xml\"\n", 1, "xml"),
            ("[queues.\"bad/name\"]\nmax_attempts = 1\n", 1, "queue"),
            ("[queues.q]\nmax_attempts = 0\n", 2, "max_attempts"),
            ("[queues.q]\n\nbackoff = { initial = \"1s\", factor = 0.5, max = \"1h\" }\n", 3, "factor"),
            ("[queues.q]\nbackoff = { initial = \"1s\", factor = 2.0 }\n", 2, "max"),
            ("[queues.q]\nretries = 3\n", 2, "retries"),
            ("listen = \n", 1, ""),
        ];
        for (text, line, needle) in cases {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn flags_override_the_file() {
        let text = "listen = \"127.0.0.1:1\"\ndata = \"from-file\"\ntokens = [\"a\"]\nmax_batch = 5\n";
        let args = ServeArgs {
            listen: Some("0.0.0.0:2".into()),
            store: Some("redis://127.0.0.1:6379".into()),
            tokens: vec!["b".into()],
            ..ServeArgs::default()
        };
        let s = settings(&args, Some((Path::new("f.toml"), text))).unwrap();
        assert_eq!(s.listen, "0.0.0.0:2");
        assert_eq!(s.backend, Backend::Redis("redis://127.0.0.1:6379".into()));
        assert_eq!(s.tokens, vec!["b".to_owned()]);
        assert_eq!(s.max_batch, 5);
        let e = settings(&ServeArgs { max_batch: Some(0), ..ServeArgs::default() }, None).unwrap_err();
        assert_eq!(e.to_string(), "command line: max_batch must be at least 1, not 0");
    }

    #[test]
    fn a_redis_cluster_over_tls_is_a_store_and_the_refusal_of_others_names_it() {
        let s = file("store = \"rediss-cluster://10.0.0.1:7000,10.0.0.2:7000\"\n").unwrap();
        assert_eq!(s.backend, Backend::Redis("rediss-cluster://10.0.0.1:7000,10.0.0.2:7000".into()));
        let (line, message) = error_line("store = \"rediss-cluster:/h:1\"\n");
        assert_eq!(line, Some(1));
        assert!(message.contains("not a store URL") && message.contains("rediss-cluster://"), "{message}");
        assert!(message.contains("redis-sentinel://"), "{message}");
        let s = file("store = \"redis-sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster\"\n").unwrap();
        assert_eq!(s.backend, Backend::Redis("redis-sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster".into()));
    }

    #[test]
    fn tls_needs_both_the_certificate_and_the_key() {
        assert_eq!(file("").unwrap().tls, None, "plain HTTP by default");
        let both = file("tls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n").unwrap().tls.unwrap();
        assert_eq!((both.cert, both.key), (PathBuf::from("c.pem"), PathBuf::from("k.pem")));
        let (line, message) = error_line("\ntls_cert = \"c.pem\"\n");
        assert_eq!(line, Some(2));
        assert!(message.starts_with("tls_cert is set but tls_key is not"), "{message}");
        let args = ServeArgs { tls_key: Some("k.pem".into()), ..ServeArgs::default() };
        let e = settings(&args, None).unwrap_err();
        assert!(e.to_string().starts_with("command line: tls_key is set but tls_cert is not"), "{e}");
        // A flag completes (and overrides) the file.
        let args = ServeArgs { tls_key: Some("flag.pem".into()), ..ServeArgs::default() };
        let s = settings(&args, Some((Path::new("f.toml"), "tls_cert = \"c.pem\"\n"))).unwrap();
        assert_eq!(s.tls.unwrap().key, PathBuf::from("flag.pem"));
    }
}
