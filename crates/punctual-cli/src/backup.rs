//! `punctual backup` and `punctual restore` over [`punctual_sqlite::backup`], which
//! keeps their invariants (a consistent copy, whole or absent; no restore into a store
//! in use); this renders what they did.

use std::path::Path;

use anyhow::{Context, Result, bail};
use punctual_core::Stopwatch;
use punctual_redis::redacted;
use punctual_sqlite::backup::StoreSummary;
use serde_json::json;

use crate::cli::backup::{BackupArgs, RestoreArgs};

pub(crate) async fn backup(args: &BackupArgs) -> Result<String> {
    let watch = Stopwatch::start();
    let summary = match &args.store {
        None => {
            eprintln!("backing up the store in {} to {}…", args.data.display(), args.to.display());
            punctual_sqlite::backup::backup(&args.data, &args.to).context("backup failed")?
        }
        Some(store) => {
            if args.to.exists() {
                bail!("{} exists; name a new file", args.to.display());
            }
            // Beside the file, so that the copy into it is on one file system.
            let parent = args.to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let export = tempfile::Builder::new()
                .prefix(".punctual-export-")
                .tempdir_in(parent)
                .with_context(|| format!("cannot make a directory in {} for the export", parent.display()))?;
            eprintln!("exporting {} to {}…", redacted(store), args.to.display());
            crate::migrate::export(store, export.path()).await.context("export failed")?;
            punctual_sqlite::backup::backup(export.path(), &args.to).context("backup of the export failed")?
        }
    };
    Ok(render("backed up", &summary, &args.to, watch.elapsed().as_secs_f64(), args.json))
}

pub(crate) fn restore(args: &RestoreArgs) -> Result<String> {
    eprintln!("restoring {} into {}…", args.from.display(), args.data.display());
    let watch = Stopwatch::start();
    let summary = punctual_sqlite::backup::restore(&args.from, &args.data, args.replace).context("restore failed")?;
    Ok(render("restored", &summary, &args.from, watch.elapsed().as_secs_f64(), args.json))
}

fn render(done: &str, summary: &StoreSummary, file: &Path, seconds: f64, as_json: bool) -> String {
    if as_json {
        return json!({
            "file": file.display().to_string(),
            "tasks": summary.tasks,
            "queues": summary.queues,
            "layout": summary.layout,
            "bytes": summary.bytes,
            "seconds": seconds,
        })
        .to_string();
    }
    format!(
        "{done} {} task{} of {} queue{} ({:.1} MiB, layout {}) in {seconds:.2} s: {}",
        summary.tasks,
        if summary.tasks == 1 { "" } else { "s" },
        summary.queues,
        if summary.queues == 1 { "" } else { "s" },
        summary.bytes as f64 / (1024.0 * 1024.0),
        summary.layout,
        file.display()
    )
}
