//! The outbox: a table in the application's own database (PostgreSQL, or MySQL and
//! MariaDB) into which the application writes schedules and cancels inside its own
//! transactions, for punctual to apply (docs/outbox.md).
//!
//! Invariants: the DDL is kept once, in `sql/` (the files `punctual outbox init` runs
//! and the docs show); a table name is an SQL identifier (letters, digits and `_`, not
//! starting with a digit, optionally after a schema and a dot), so it is written into
//! statements as it is, never quoted and never from untrusted text.

use std::fmt;

pub mod drain;
mod mysql;
mod postgres;

pub use drain::{Applied, Applier, Backlog, BatchReport, DrainConfig, DrainStatus, QueueBacklog, Row, StatusSnapshot};

/// The table's name unless configured.
pub const DEFAULT_TABLE: &str = "punctual_outbox";

/// The databases an outbox lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL 12 or later.
    Postgres,
    /// MySQL 8.0 or later, MariaDB 10.6 or later.
    MySql,
}

impl Dialect {
    /// The dialect of a database URL: `postgres://`, `postgresql://`, `mysql://` or
    /// `mariadb://`.
    pub fn of_url(url: &str) -> Result<Dialect, OutboxError> {
        let scheme = url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("postgres" | "postgresql") => Ok(Dialect::Postgres),
            Some("mysql" | "mariadb") => Ok(Dialect::MySql),
            _ => Err(OutboxError::Url(format!(
                "'{}' is not a database URL punctual's outbox reads: use postgres://user@host/db or \
                 mysql://user:password@host/db",
                redacted(url)
            ))),
        }
    }
}

/// A URL without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) if at > scheme.len() + 3 => {
            let user = url[scheme.len() + 3..at].split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***{}", &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// An outbox table's name, checked to be an identifier (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName(String);

impl TableName {
    pub fn new(name: impl Into<String>) -> Result<TableName, OutboxError> {
        let name = name.into();
        let parts: Vec<&str> = name.split('.').collect();
        let identifier = |part: &str| {
            part.len() <= 48
                && part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if parts.len() > 2 || !parts.iter().all(|part| identifier(part)) {
            return Err(OutboxError::Table(format!(
                "'{name}' is not a table name the outbox takes: letters, digits and _ (not first a digit), at most \
                 48 each, optionally schema.table"
            )));
        }
        Ok(TableName(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The table of the rows that could not be applied.
    pub fn failed(&self) -> String {
        format!("{}_failed", self.0)
    }

    /// The table's name without its schema: what the names derived from it (index,
    /// trigger, notification channel) start with.
    pub fn base(&self) -> &str {
        self.0.rsplit('.').next().unwrap_or(&self.0)
    }
}

impl Default for TableName {
    fn default() -> TableName {
        TableName(DEFAULT_TABLE.to_owned())
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The DDL that creates `table` (and its failed rows' table; in PostgreSQL, the
/// trigger that notifies at commit) in `dialect`, as statements to run in order.
pub fn ddl(dialect: Dialect, table: &TableName) -> Vec<String> {
    let source = match dialect {
        Dialect::Postgres => include_str!("../sql/postgres.sql"),
        Dialect::MySql => include_str!("../sql/mysql.sql"),
    };
    statements(source).into_iter().map(|statement| named(&statement, table)).collect()
}

/// `statement` with the default names made `table`'s: names derived from the table
/// (index, trigger, function, channel) take its base name, and the tables themselves,
/// where a statement names them (after `EXISTS` or `ON`), its whole name.
fn named(statement: &str, table: &TableName) -> String {
    let mut out = statement.replace(DEFAULT_TABLE, table.base());
    if table.as_str() == table.base() {
        return out;
    }
    let schema = &table.as_str()[..table.as_str().len() - table.base().len()];
    for name in [format!("{}_failed", table.base()), table.base().to_owned()] {
        for keyword in ["EXISTS ", "ON "] {
            out = qualify(&out, &format!("{keyword}{name}"), &format!("{keyword}{schema}{name}"));
        }
    }
    out
}

/// `text` with each `from` that is not followed by an identifier's character made `to`.
fn qualify(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The statements of an SQL file: split at each `;` that ends a line, outside a
/// `$$` body; comments dropped.
fn statements(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut current, mut in_body) = (String::new(), false);
    for line in source.lines() {
        if !in_body && line.trim_start().starts_with("--") {
            continue;
        }
        if line.matches("$$").count() % 2 == 1 {
            in_body = !in_body;
        }
        current.push_str(line);
        current.push('\n');
        if !in_body && line.trim_end().ends_with(';') {
            out.push(current.trim().trim_end_matches(';').to_owned());
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// What the outbox refuses or could not do.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("{0}")]
    Url(String),
    #[error("{0}")]
    Table(String),
    /// The database refused or did not answer.
    #[error("{0}")]
    Database(String),
    /// A transaction lost a lock conflict (a deadlock, a lock wait that timed out) and
    /// was undone: worth trying again at once.
    #[error("{0}")]
    Contended(String),
}

/// Creates `table` and its failed rows' table (in PostgreSQL, the trigger that
/// notifies at commit) in the database at `url`, unless they exist.
pub async fn init(url: &str, table: &TableName) -> Result<(), OutboxError> {
    match Dialect::of_url(url)? {
        Dialect::Postgres => postgres::init(url, table).await,
        Dialect::MySql => mysql::init(url, table).await,
    }
}

/// Runs `statements` in order on one connection to the database at `url` (so a
/// `BEGIN` … `COMMIT` among them is one transaction): for set-up and tests.
pub async fn execute(url: &str, statements: &[&str]) -> Result<(), OutboxError> {
    match Dialect::of_url(url)? {
        Dialect::Postgres => postgres::execute(url, statements).await,
        Dialect::MySql => mysql::execute(url, statements).await,
    }
}

/// The first column of each row `query` answers, as text, from the database at `url`.
pub async fn query_texts(url: &str, query: &str) -> Result<Vec<Option<String>>, OutboxError> {
    match Dialect::of_url(url)? {
        Dialect::Postgres => postgres::query_texts(url, query).await,
        Dialect::MySql => mysql::query_texts(url, query).await,
    }
}

/// The backlog of `table` in the database at `url`: rows waiting, the oldest one's
/// time, and rows failed.
pub async fn backlog(url: &str, table: &TableName) -> Result<drain::Backlog, OutboxError> {
    match Dialect::of_url(url)? {
        Dialect::Postgres => postgres::backlog(&postgres::connect(url, None).await?, table).await,
        Dialect::MySql => mysql::backlog(&mut mysql::connect(url).await?, table).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ddl_splits_into_its_statements_with_the_trigger_body_whole() {
        let postgres = ddl(Dialect::Postgres, &TableName::default());
        assert_eq!(postgres.len(), 6, "{postgres:#?}");
        assert!(postgres[0].starts_with("CREATE TABLE IF NOT EXISTS punctual_outbox ("));
        assert!(postgres[3].contains("pg_notify('punctual_outbox', '')") && postgres[3].ends_with("$$"));
        let mysql = ddl(Dialect::MySql, &TableName::default());
        assert_eq!(mysql.len(), 2);
        assert!(mysql.iter().all(|s| !s.contains("--")), "comments are dropped");
    }

    #[test]
    fn another_table_name_renames_every_derived_name() {
        let table = TableName::new("shop.outbox").unwrap();
        let postgres = ddl(Dialect::Postgres, &table).join("\n");
        assert!(!postgres.contains("punctual_outbox"), "{postgres}");
        assert!(postgres.contains("CREATE TABLE IF NOT EXISTS shop.outbox ("));
        assert!(postgres.contains("CREATE TABLE IF NOT EXISTS shop.outbox_failed ("));
        assert!(postgres.contains("CREATE INDEX IF NOT EXISTS outbox_by_key ON shop.outbox (queue, key, id)"));
        assert!(postgres.contains("pg_notify('outbox', '')"));
        assert!(postgres.contains("CREATE TRIGGER outbox_notify AFTER INSERT ON shop.outbox\n"));
        assert!(postgres.contains("DROP TRIGGER IF EXISTS outbox_notify ON shop.outbox"));
        let mysql = ddl(Dialect::MySql, &table).join("\n");
        assert!(mysql.contains("EXISTS shop.outbox (") && mysql.contains("EXISTS shop.outbox_failed ("));
        assert!(mysql.contains("KEY outbox_by_key (queue"), "{mysql}");
    }

    #[test]
    fn names_and_urls_are_checked() {
        assert!(TableName::new("orders_outbox").is_ok());
        for bad in ["", "1outbox", "out-box", "a.b.c", "x; DROP TABLE orders", "\"quoted\""] {
            assert!(TableName::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Dialect::of_url("postgres://u@h/db").unwrap(), Dialect::Postgres);
        assert_eq!(Dialect::of_url("mariadb://u:p@h/db").unwrap(), Dialect::MySql);
        let refused = Dialect::of_url("sqlite://u:secret@h/db").unwrap_err().to_string();
        assert!(refused.contains("u:***@h/db") && !refused.contains("secret"), "{refused}");
    }
}
