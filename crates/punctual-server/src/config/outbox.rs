//! The `[[outbox]]` tables: databases whose outbox table this server drains
//! (docs/outbox.md). Each names its database by `url` or by `url_env` (the
//! environment variable holding it, so a password stays out of the file), and may set
//! `table`, `batch`, `poll` and `name`.
//!
//! `name` is what the store's marks of its rows carry (`punctual_core::outbox`): two
//! outboxes must not share one, or a row of one would be taken for a row of the other
//! already applied. By default it is the table, host, port and database of the URL,
//! so another database, or another table, is another name; set it to keep marks
//! across a change of URL (a new host name for the same database).

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use punctual_core::outbox::OutboxName;
use std::sync::Arc;

use punctual_outbox::{Dialect, DrainConfig, DrainStatus, StatusSnapshot, TableName};
use serde::Deserialize;
use toml::Spanned;

use super::ConfigError;
use crate::extract::ApiDuration;

/// The most rows one batch may take.
const MAX_BATCH: i64 = 5000;

/// `[[outbox]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutbox {
    url: Option<Spanned<String>>,
    url_env: Option<Spanned<String>>,
    table: Option<Spanned<String>>,
    batch: Option<Spanned<i64>>,
    poll: Option<Spanned<ApiDuration>>,
    name: Option<Spanned<String>>,
}

/// One outbox to drain.
#[derive(Clone)]
pub(crate) struct OutboxSettings {
    pub(crate) name: OutboxName,
    pub(crate) drain: DrainConfig,
}

impl std::fmt::Debug for OutboxSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("OutboxSettings").field("name", &self.name).field("table", &self.drain.table).finish()
    }
}

impl OutboxSettings {
    /// The database, for messages: the URL without its user and password.
    pub(crate) fn database(&self) -> String {
        let (scheme, location) = location(&self.drain.url);
        format!("{scheme}://{location}")
    }
}

/// One outbox being drained, as `/metrics` and `/readyz` read it.
#[derive(Debug, Clone)]
pub(crate) struct Drained {
    pub(crate) name: OutboxName,
    pub(crate) table: String,
    /// The database without user and password.
    pub(crate) database: String,
    pub(crate) status: Arc<DrainStatus>,
}

impl Drained {
    pub(crate) fn snapshot(&self) -> StatusSnapshot {
        self.status.snapshot()
    }
}

/// The file's outboxes, in order.
pub(super) fn outbox_tables(
    raw: &[Spanned<RawOutbox>],
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Vec<OutboxSettings>, ConfigError> {
    let mut outboxes = Vec::with_capacity(raw.len());
    let mut names = BTreeSet::new();
    for entry in raw {
        let table_at = |message: String| at(entry.span(), format!("[[outbox]]: {message}"));
        let outbox = entry.get_ref();
        let url = match (&outbox.url, &outbox.url_env) {
            (Some(url), None) => url.get_ref().clone(),
            (None, Some(env)) => std::env::var(env.get_ref()).map_err(|_| {
                at(env.span(), format!("url_env: the environment variable {} is not set", env.get_ref()))
            })?,
            (Some(_), Some(_)) => return Err(table_at("give url or url_env, not both".into())),
            (None, None) => {
                return Err(table_at(
                    "url or url_env names the database: postgres://user@host/db or mysql://user:password@host/db"
                        .into(),
                ));
            }
        };
        let url_span = outbox.url.as_ref().or(outbox.url_env.as_ref()).map_or(entry.span(), Spanned::span);
        let dialect = Dialect::of_url(&url).map_err(|e| at(url_span.clone(), e.to_string()))?;
        let table = match &outbox.table {
            Some(table) => TableName::new(table.get_ref().clone()).map_err(|e| at(table.span(), e.to_string()))?,
            None => TableName::default(),
        };
        let batch = match &outbox.batch {
            Some(batch) if (1..=MAX_BATCH).contains(batch.get_ref()) => *batch.get_ref() as u32,
            Some(batch) => {
                return Err(at(batch.span(), format!("batch is 1 to {MAX_BATCH} rows, not {}", batch.get_ref())));
            }
            None => DrainConfig::DEFAULT_BATCH,
        };
        let poll = match &outbox.poll {
            Some(poll) if poll.get_ref().0.is_zero() => {
                return Err(at(poll.span(), "poll must be longer than 0".into()));
            }
            Some(poll) => poll.get_ref().0,
            None => DrainConfig::default_poll(dialect),
        };
        let name = match &outbox.name {
            Some(name) => OutboxName::new(name.get_ref().clone()).map_err(|e| at(name.span(), e.to_string()))?,
            None => default_name(&url, &table),
        };
        if !names.insert(name.clone()) {
            let span = outbox.name.as_ref().map_or(entry.span(), Spanned::span);
            return Err(at(
                span,
                format!("another [[outbox]] is named '{name}' too: give each a name of its own (name = \"…\")"),
            ));
        }
        let drain = DrainConfig { url, table, batch, poll: poll.min(Duration::from_secs(3600)) };
        outboxes.push(OutboxSettings { name, drain });
    }
    Ok(outboxes)
}

/// The scheme of `url` and where it points, `host[:port]/database`: without the user,
/// the password and the parameters.
fn location(url: &str) -> (&str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split('?').next().unwrap_or(rest);
    (scheme, rest.rsplit_once('@').map_or(rest, |(_, host)| host))
}

/// `<table>:<host>:<port>:<database>` of `url`, with what a name cannot hold made `_`.
fn default_name(url: &str, table: &TableName) -> OutboxName {
    let (_, location) = location(url);
    let (address, database) = location.split_once('/').unwrap_or((location, ""));
    let text = format!("{table}:{address}:{database}");
    let clean: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') { c } else { '_' })
        .take(OutboxName::MAX_LEN)
        .collect();
    OutboxName::new(clean).unwrap_or_else(|_| OutboxName::new(table.base()).expect("a table name is an outbox name"))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{error_line, file};

    #[test]
    fn an_outbox_table_is_read_with_its_defaults() {
        let text = "[[outbox]]\nurl = \"postgres://app:secret@db.internal:5432/shop?sslmode=require\"\n\n\
                    [[outbox]]\nurl = \"mysql://app:pw@10.0.0.7/billing\"\ntable = \"billing.outbox\"\nbatch = 200\n\
                    poll = \"250ms\"\nname = \"billing\"\n";
        let settings = file(text).unwrap();
        let [shop, billing] = settings.outboxes.as_slice() else { panic!("two outboxes") };
        assert_eq!(shop.name.as_str(), "punctual_outbox:db.internal:5432:shop");
        assert_eq!((shop.drain.batch, shop.drain.poll), (500, std::time::Duration::from_secs(1)));
        assert_eq!(shop.database(), "postgres://db.internal:5432/shop", "no password in messages");
        assert!(!format!("{shop:?}").contains("secret"));
        assert_eq!(billing.name.as_str(), "billing");
        assert_eq!(billing.drain.table.as_str(), "billing.outbox");
        assert_eq!((billing.drain.batch, billing.drain.poll), (200, std::time::Duration::from_millis(250)));
    }

    #[test]
    fn a_bad_outbox_table_names_its_line_and_what_to_do() {
        let (line, message) = error_line("\n[[outbox]]\ntable = \"x\"\n");
        assert_eq!(line, Some(2), "{message}");
        assert!(message.contains("url or url_env"), "{message}");
        let (line, message) = error_line("[[outbox]]\nurl = \"sqlite://x\"\n");
        assert_eq!(line, Some(2), "{message}");
        assert!(message.contains("postgres://"), "{message}");
        let (_, message) = error_line("[[outbox]]\nurl = \"postgres://h/db\"\nbatch = 0\n");
        assert!(message.contains("batch is 1 to 5000"), "{message}");
        let (_, message) = error_line("[[outbox]]\nurl_env = \"PUNCTUAL_NO_SUCH_VARIABLE\"\n");
        assert!(message.contains("PUNCTUAL_NO_SUCH_VARIABLE is not set"), "{message}");
        let (_, message) = error_line("[[outbox]]\nurl = \"postgres://h/db\"\ntable = \"a;b\"\n");
        assert!(message.contains("table name"), "{message}");
        let twice =
            "[[outbox]]\nurl = \"postgres://h/a\"\nname = \"x\"\n[[outbox]]\nurl = \"postgres://h/b\"\nname = \"x\"\n";
        let (line, message) = error_line(twice);
        assert_eq!(line, Some(6), "{message}");
        assert!(message.contains("named 'x' too"), "{message}");
        let (_, message) = error_line("[[outbox]]\nurl = \"postgres://h/db\"\ncolour = 1\n");
        assert!(message.contains("colour"), "{message}");
    }
}
