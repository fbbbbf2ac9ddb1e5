//! The drain's MySQL and MariaDB side: one connection, each batch one transaction, the
//! table polled (MySQL has no notifications).

use std::collections::HashSet;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, IsolationLevel, Opts, TxOpts, Value};
use tokio_util::sync::CancellationToken;

use crate::drain::{
    Applier, Backlog, BatchReport, DrainConfig, DrainStatus, QueueBacklog, Row, apply_rows, drain_session,
    first_of_each_key,
};
use crate::{OutboxError, TableName};

/// A connection; `mariadb://` is read as `mysql://`.
pub(crate) async fn connect(url: &str) -> Result<Conn, OutboxError> {
    let url = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => format!("mysql://{rest}"),
        _ => url.to_owned(),
    };
    let opts = Opts::from_url(&url).map_err(|e| OutboxError::Url(format!("a MySQL URL punctual cannot read: {e}")))?;
    Conn::new(opts).await.map_err(db)
}

/// Creates the outbox's tables unless they exist.
pub(crate) async fn init(url: &str, table: &TableName) -> Result<(), OutboxError> {
    let statements = crate::ddl(crate::Dialect::MySql, table);
    execute(url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await
}

pub(crate) async fn execute(url: &str, statements: &[&str]) -> Result<(), OutboxError> {
    let mut conn = connect(url).await?;
    for statement in statements {
        conn.query_drop(*statement).await.map_err(db)?;
    }
    conn.disconnect().await.map_err(db)
}

pub(crate) async fn query_texts(url: &str, query: &str) -> Result<Vec<Option<String>>, OutboxError> {
    let mut conn = connect(url).await?;
    let rows: Vec<Option<String>> = conn.query(query).await.map_err(db)?;
    conn.disconnect().await.map_err(db)?;
    Ok(rows)
}

pub(crate) async fn session<A: Applier>(
    config: &DrainConfig,
    applier: &A,
    status: &DrainStatus,
    stop: &CancellationToken,
) -> Result<(), OutboxError> {
    let conn = tokio::sync::Mutex::new(connect(&config.url).await?);
    let table = &config.table;
    drain_session(
        config,
        status,
        stop,
        || async { batch(&mut *conn.lock().await, table, config.batch, applier).await },
        || async { backlog(&mut *conn.lock().await, table).await },
        |poll: Duration| tokio::time::sleep(poll),
    )
    .await
}

/// Drains one batch of `table` in one transaction.
async fn batch<A: Applier>(
    conn: &mut Conn,
    table: &TableName,
    size: u32,
    applier: &A,
) -> Result<BatchReport, OutboxError> {
    // Read committed: no gap locks, so the application's inserts never wait on a
    // drain's batch (and never deadlock with it).
    let mut opts = TxOpts::default();
    opts.with_isolation_level(IsolationLevel::ReadCommitted);
    let mut tx = conn.start_transaction(opts).await.map_err(db)?;
    let taken: Vec<(i64, String, String, String, Option<String>, i64)> = tx
        .exec(
            format!(
                "SELECT id, queue, `key`, op, CAST(body AS CHAR), CAST(UNIX_TIMESTAMP(created_at) * 1000 AS SIGNED) \
                 FROM {table} ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED"
            ),
            (size,),
        )
        .await
        .map_err(db)?;
    if taken.is_empty() {
        tx.commit().await.map_err(db)?;
        return Ok(BatchReport::default());
    }
    let rows: Vec<Row> = taken
        .into_iter()
        .map(|(id, queue, key, op, body, created_at_ms)| Row { id, queue, key, op, body, created_at_ms })
        .collect();
    let firsts = first_of_each_key(&rows);
    let mut params: Vec<Value> = Vec::with_capacity(firsts.len() * 3);
    let mut terms = Vec::with_capacity(firsts.len());
    for ((queue, key), first) in &firsts {
        terms.push("(queue = ? AND `key` = ? AND id < ?)");
        params.extend([Value::from(queue.as_str()), Value::from(key.as_str()), Value::from(*first)]);
    }
    let blocked: Vec<(String, String)> = tx
        .exec(format!("SELECT DISTINCT queue, `key` FROM {table} WHERE {}", terms.join(" OR ")), params)
        .await
        .map_err(db)?;
    let blocked: HashSet<(String, String)> = blocked.into_iter().collect();
    let outcome = apply_rows(rows, &blocked, applier).await;
    // One row a statement: a `DELETE … WHERE id IN (…)` locks rows between the ids
    // listed, which another drain holds, and the two deadlock.
    if !outcome.done.is_empty() {
        tx.exec_batch(format!("DELETE FROM {table} WHERE id = ?"), outcome.done.iter().map(|id| (*id,)))
            .await
            .map_err(db)?;
    }
    for (id, why) in &outcome.refused {
        let failed = table.failed();
        tx.exec_drop(
            format!(
                "INSERT INTO {failed} (id, queue, `key`, op, body, created_at, error) \
                 SELECT id, queue, `key`, op, body, created_at, ? FROM {table} WHERE id = ?"
            ),
            (why.as_str(), *id),
        )
        .await
        .map_err(db)?;
        tx.exec_drop(format!("DELETE FROM {table} WHERE id = ?"), (*id,)).await.map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    Ok(outcome.report)
}

/// Rows waiting, the oldest one's time, and failed rows.
pub(crate) async fn backlog(conn: &mut Conn, table: &TableName) -> Result<Backlog, OutboxError> {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let rows: Vec<(String, i64, Option<i64>)> = conn
        .query(format!(
            "SELECT queue, count(*), CAST(UNIX_TIMESTAMP(min(created_at)) * 1000 AS SIGNED) FROM {table} \
             GROUP BY queue ORDER BY queue"
        ))
        .await
        .map_err(db)?;
    let queues =
        rows.into_iter().map(|(queue, waiting, oldest_ms)| QueueBacklog { queue, waiting: count(waiting), oldest_ms });
    let failed: Option<i64> = conn.query_first(format!("SELECT count(*) FROM {}", table.failed())).await.map_err(db)?;
    Ok(Backlog::of(queues.collect(), count(failed.unwrap_or(0))))
}

/// What a MySQL error says, for the operator.
fn db(e: mysql_async::Error) -> OutboxError {
    match &e {
        // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
        mysql_async::Error::Server(server) if matches!(server.code, 1213 | 1205) => {
            OutboxError::Contended(format!("MySQL: {e}"))
        }
        _ => OutboxError::Database(format!("MySQL: {e}")),
    }
}
