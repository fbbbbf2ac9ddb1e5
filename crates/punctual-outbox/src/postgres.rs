//! The drain's PostgreSQL side: a connection for the batches (each one transaction)
//! and one that `LISTEN`s on the table's channel, which the table's trigger notifies at
//! each commit that inserted rows. TLS when the server offers it (rustls, the
//! platform's roots; `sslmode` in the URL as libpq reads it).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, Client};
use tokio_util::sync::CancellationToken;

use crate::drain::{
    Applier, Backlog, BatchReport, DrainConfig, DrainStatus, QueueBacklog, Row, apply_rows, drain_session,
    first_of_each_key,
};
use crate::{OutboxError, TableName};

type Tls = tokio_postgres_rustls::MakeRustlsConnect;

/// TLS as libpq's `sslmode` asks (the URL's, `prefer` when absent): `verify-ca` and
/// `verify-full` check the server's certificate against the platform's roots;
/// `prefer` and `require` encrypt without checking it, as libpq does; `disable` sends
/// no TLS request at all (tokio-postgres reads the mode from the URL too).
fn tls(url: &str) -> Tls {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let config = if verifies(url) {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(Unchecked(provider))).with_no_client_auth()
    };
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// Whether the URL's `sslmode` asks for the certificate to be checked.
fn verifies(url: &str) -> bool {
    let query = url.split_once('?').map_or("", |(_, query)| query);
    query.split('&').any(|pair| matches!(pair, "sslmode=verify-ca" | "sslmode=verify-full"))
}

/// libpq's `prefer` and `require`: any certificate, the handshake's signatures still
/// checked.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connected client; its connection runs on a task of its own, and notifications
/// it receives wake `woken`.
pub(crate) async fn connect(url: &str, woken: Option<Arc<Notify>>) -> Result<Client, OutboxError> {
    let (client, mut connection) = tokio_postgres::connect(url, tls(url)).await.map_err(db)?;
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    if let Some(woken) = &woken {
                        woken.notify_one();
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "an outbox connection to PostgreSQL ended");
                    break;
                }
            }
        }
    });
    Ok(client)
}

/// Creates the outbox's tables (and trigger) unless they exist.
pub(crate) async fn init(url: &str, table: &TableName) -> Result<(), OutboxError> {
    let statements = crate::ddl(crate::Dialect::Postgres, table);
    execute(url, &statements.iter().map(String::as_str).collect::<Vec<_>>()).await
}

pub(crate) async fn execute(url: &str, statements: &[&str]) -> Result<(), OutboxError> {
    let client = connect(url, None).await?;
    for statement in statements {
        client.batch_execute(statement).await.map_err(db)?;
    }
    Ok(())
}

pub(crate) async fn query_texts(url: &str, query: &str) -> Result<Vec<Option<String>>, OutboxError> {
    let client = connect(url, None).await?;
    let rows = client.simple_query(query).await.map_err(db)?;
    Ok(rows
        .iter()
        .filter_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).map(str::to_owned)),
            _ => None,
        })
        .collect())
}

pub(crate) async fn session<A: Applier>(
    config: &DrainConfig,
    applier: &A,
    status: &DrainStatus,
    stop: &CancellationToken,
) -> Result<(), OutboxError> {
    let woken = Arc::new(Notify::new());
    let listener = connect(&config.url, Some(Arc::clone(&woken))).await?;
    listener.batch_execute(&format!("LISTEN {}", config.table.base())).await.map_err(db)?;
    let client = tokio::sync::Mutex::new(connect(&config.url, None).await?);
    let table = &config.table;
    drain_session(
        config,
        status,
        stop,
        || async {
            if listener.is_closed() {
                return Err(OutboxError::Database("the LISTEN connection closed".into()));
            }
            batch(&mut *client.lock().await, table, config.batch, applier).await
        },
        || async { backlog(&*client.lock().await, table).await },
        |poll: Duration| {
            let woken = Arc::clone(&woken);
            async move {
                let _ = tokio::time::timeout(poll, woken.notified()).await;
            }
        },
    )
    .await
}

/// Drains one batch of `table` in one transaction.
async fn batch<A: Applier>(
    client: &mut Client,
    table: &TableName,
    size: u32,
    applier: &A,
) -> Result<BatchReport, OutboxError> {
    let tx = client.transaction().await.map_err(db)?;
    let taken = tx
        .query(
            &format!(
                "SELECT id, queue, key, op, body::text, (extract(epoch FROM created_at) * 1000)::bigint \
                 FROM {table} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
            ),
            &[&i64::from(size)],
        )
        .await
        .map_err(db)?;
    if taken.is_empty() {
        tx.commit().await.map_err(db)?;
        return Ok(BatchReport::default());
    }
    let rows: Vec<Row> = taken
        .iter()
        .map(|r| Row {
            id: r.get(0),
            queue: r.get(1),
            key: r.get(2),
            op: r.get(3),
            body: r.get(4),
            created_at_ms: r.get(5),
        })
        .collect();
    let firsts = first_of_each_key(&rows);
    let (queues, keys, ids): (Vec<&str>, Vec<&str>, Vec<i64>) = {
        let mut columns = (Vec::new(), Vec::new(), Vec::new());
        for ((queue, key), id) in &firsts {
            columns.0.push(queue.as_str());
            columns.1.push(key.as_str());
            columns.2.push(*id);
        }
        columns
    };
    let blocked: HashSet<(String, String)> = tx
        .query(
            &format!(
                "SELECT DISTINCT o.queue, o.key FROM {table} o \
                 JOIN unnest($1::text[], $2::text[], $3::int8[]) AS b(queue, key, first) \
                 ON o.queue = b.queue AND o.key = b.key AND o.id < b.first"
            ),
            &[&queues, &keys, &ids],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let outcome = apply_rows(rows, &blocked, applier).await;
    if !outcome.done.is_empty() {
        tx.execute(&format!("DELETE FROM {table} WHERE id = ANY($1)"), &[&outcome.done]).await.map_err(db)?;
    }
    for (id, why) in &outcome.refused {
        let failed = table.failed();
        tx.execute(
            &format!(
                "INSERT INTO {failed} (id, queue, key, op, body, created_at, error) \
                 SELECT id, queue, key, op, body, created_at, $2 FROM {table} WHERE id = $1"
            ),
            &[id, why],
        )
        .await
        .map_err(db)?;
        tx.execute(&format!("DELETE FROM {table} WHERE id = $1"), &[id]).await.map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    Ok(outcome.report)
}

/// Rows waiting, the oldest one's time, and failed rows.
pub(crate) async fn backlog(client: &Client, table: &TableName) -> Result<Backlog, OutboxError> {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let queues = client
        .query(
            &format!(
                "SELECT queue, count(*), (extract(epoch FROM min(created_at)) * 1000)::bigint FROM {table} \
                 GROUP BY queue ORDER BY queue"
            ),
            &[],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|r| QueueBacklog { queue: r.get(0), waiting: count(r.get(1)), oldest_ms: r.get(2) })
        .collect();
    let failed = client.query_one(&format!("SELECT count(*) FROM {}", table.failed()), &[]).await.map_err(db)?;
    Ok(Backlog::of(queues, count(failed.get(0))))
}

/// What a PostgreSQL error says, for the operator.
fn db(e: tokio_postgres::Error) -> OutboxError {
    match e.as_db_error() {
        // serialization_failure, deadlock_detected.
        Some(e) if matches!(e.code().code(), "40001" | "40P01") => {
            OutboxError::Contended(format!("PostgreSQL: {} ({})", e.message(), e.code().code()))
        }
        Some(e) => OutboxError::Database(format!("PostgreSQL: {} ({})", e.message(), e.code().code())),
        None => OutboxError::Database(format!("PostgreSQL: {e}")),
    }
}
