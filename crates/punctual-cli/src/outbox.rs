//! `punctual outbox init|status`, run against the database (no server needed).

use anyhow::{Context, Result};
use punctual_core::{Clock, SystemClock};
use punctual_outbox::TableName;
use serde_json::json;

use crate::UsageError;
use crate::cli::outbox::{OutboxArgs, OutboxCommand, OutboxTarget};

/// Runs `punctual outbox …`; the text to print.
pub(crate) async fn run(args: OutboxArgs) -> Result<String> {
    match args.command {
        OutboxCommand::Init(target) => {
            let table = table(&target)?;
            punctual_outbox::init(&target.url, &table).await.context("cannot create the outbox")?;
            Ok(format!(
                "the outbox table {table} and {} are ready; drain them with an [[outbox]] table in the server's \
                 config file",
                table.failed()
            ))
        }
        OutboxCommand::Status(args) => {
            let table = table(&args.target)?;
            let backlog = punctual_outbox::backlog(&args.target.url, &table).await.context("cannot read the outbox")?;
            let age_ms = backlog.oldest_ms.map(|at| SystemClock.now().as_millis().saturating_sub(at).max(0));
            if args.json {
                let answer = json!({
                    "table": table.as_str(),
                    "rows_waiting": backlog.waiting,
                    "oldest_age_ms": age_ms,
                    "failed": backlog.failed,
                });
                return Ok(serde_json::to_string_pretty(&answer)?);
            }
            let oldest = age_ms.map_or_else(|| "none".to_owned(), |ms| format!("{:.1} s ago", ms as f64 / 1000.0));
            Ok(format!(
                "table {table}: {} rows waiting, oldest written {oldest}; {} failed (in {})",
                backlog.waiting,
                backlog.failed,
                table.failed()
            ))
        }
    }
}

fn table(target: &OutboxTarget) -> Result<TableName> {
    punctual_outbox::Dialect::of_url(&target.url).map_err(|e| UsageError(format!("--url: {e}")))?;
    TableName::new(target.table.clone()).map_err(|e| UsageError(format!("--table: {e}")).into())
}
