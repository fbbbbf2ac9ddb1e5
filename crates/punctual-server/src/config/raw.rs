//! The configuration file as the user typed it: serde structs that mirror the TOML
//! (`deny_unknown_fields`: an unknown key is an error, not ignored), each value kept
//! with its position so that validation (`validate`, `queues`) can name its line.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::LogFormat;
use super::actions::RawAction;
use crate::extract::ApiDuration;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) listen: Option<Spanned<String>>,
    pub(super) data: Option<Spanned<String>>,
    pub(super) store: Option<Spanned<String>>,
    pub(super) tokens: Option<Vec<Spanned<String>>>,
    pub(super) log_format: Option<Spanned<LogFormat>>,
    pub(super) grace_period: Option<Spanned<ApiDuration>>,
    pub(super) request_timeout: Option<Spanned<ApiDuration>>,
    pub(super) max_payload_bytes: Option<Spanned<i64>>,
    pub(super) max_batch: Option<Spanned<i64>>,
    pub(super) max_body_bytes: Option<Spanned<i64>>,
    pub(super) redis: Option<Spanned<RawRedis>>,
    pub(super) max_overdue: Option<Spanned<ApiDuration>>,
    pub(super) strict_queues: Option<Spanned<bool>>,
    pub(super) tls_cert: Option<Spanned<String>>,
    pub(super) tls_key: Option<Spanned<String>>,
    pub(super) egress: Option<RawEgress>,
    pub(super) targets: Option<RawTargets>,
    #[serde(default)]
    pub(super) queues: BTreeMap<Spanned<String>, RawQueue>,
    #[serde(default)]
    pub(super) access: Vec<Spanned<RawAccess>>,
    /// Read as TOML tables, each checked as a calendar body (see `calendars`).
    #[serde(default)]
    pub(super) calendars: BTreeMap<Spanned<String>, Spanned<toml::Table>>,
    #[serde(default)]
    pub(super) outbox: Vec<Spanned<super::outbox::RawOutbox>>,
    pub(super) telemetry: Option<Spanned<super::telemetry::RawTelemetry>>,
}

/// `[[access]]`: a scoped token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAccess {
    /// What logs, history and audit call the token.
    pub(super) name: Option<Spanned<String>>,
    pub(super) token: Option<Spanned<String>>,
    /// The environment variable holding the token.
    pub(super) token_env: Option<Spanned<String>>,
    pub(super) permissions: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) queues: Option<Spanned<Vec<Spanned<String>>>>,
    /// The token's ingress limit, `"100/1s"`, counted by each server.
    pub(super) rate: Option<Spanned<String>>,
}

/// `[targets]`: tasks that carry their own HTTP target.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTargets {
    /// The environment variable holding the secret that signs target deliveries of
    /// queues without a webhook secret of their own.
    pub(super) secret_env: Option<Spanned<String>>,
    /// The secret before `secret_env`'s, which signs too while receivers move on.
    pub(super) previous_secret_env: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEgress {
    #[serde(default)]
    pub(super) allow: Vec<Spanned<String>>,
    pub(super) allow_private: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRedis {
    pub(super) prefix: Option<Spanned<String>>,
    pub(super) wait_replicas: Option<Spanned<i64>>,
    pub(super) timeout: Option<Spanned<ApiDuration>>,
    pub(super) shard_order_slack: Option<Spanned<ApiDuration>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQueue {
    pub(super) max_attempts: Option<Spanned<i64>>,
    pub(super) backoff: Option<Spanned<RawBackoff>>,
    pub(super) shards: Option<Spanned<i64>>,
    pub(super) group_concurrency: Option<Spanned<i64>>,
    pub(super) group_rate: Option<Spanned<String>>,
    pub(super) repeat: Option<Spanned<crate::bodies::RepeatBody>>,
    pub(super) dead_retention: Option<Spanned<ApiDuration>>,
    pub(super) history_retention: Option<Spanned<ApiDuration>>,
    pub(super) action: Option<Spanned<RawAction>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackoff {
    pub(super) initial: ApiDuration,
    pub(super) factor: f64,
    pub(super) max: ApiDuration,
}
