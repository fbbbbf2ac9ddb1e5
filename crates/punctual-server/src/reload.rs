//! SIGHUP: the server reads its configuration again (`serve --config FILE` with the
//! same flags). What takes effect at once: the access rules (`tokens`, `[[access]]`
//! with their permissions, queues and rates), for the next request, and the TLS
//! certificate, for the next connection. Everything else the file sets is read at
//! start only; a change to it is named in the log as waiting for a restart.
//!
//! Invariants: a file that no longer validates changes nothing (the rules in force
//! stay, the error is logged with its line); a reload never turns tokens on or off (a
//! server started open stays open until a restart, and one that needs tokens keeps
//! needing them), since clients and the OpenAPI document were told at start; a SIGHUP
//! never stops the server.

use punctual_core::Store;
use tokio::signal::unix::Signal;
use tokio_util::sync::CancellationToken;

use crate::config::access::Auth;
use crate::config::{self, ServeArgs, Settings};
use crate::state::AppState;
use crate::tls::Tls;

/// Reloads on each SIGHUP of `hangups` until `stop`; `running` is what the server
/// started with.
pub(crate) async fn on_hangup<S: Store>(
    mut hangups: Signal,
    state: AppState<S>,
    args: ServeArgs,
    running: Settings,
    tls: Option<Tls>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            got = hangups.recv() => if got.is_none() { return },
            () = stop.cancelled() => return,
        }
        if let Some(tls) = &tls {
            reload_certificate(tls);
        }
        reload_file(&state, &args, &running);
    }
}

fn reload_certificate(tls: &Tls) {
    let files = tls.files();
    match tls.reload() {
        Ok(()) => tracing::info!(
            certificate = %files.cert.display(),
            key = %files.key.display(),
            "SIGHUP: TLS certificate reloaded; new connections use it"
        ),
        Err(e) => tracing::error!(
            error = format!("{e:#}"),
            "SIGHUP: TLS certificate not reloaded; still serving the previous one"
        ),
    }
}

fn reload_file<S: Store>(state: &AppState<S>, args: &ServeArgs, running: &Settings) {
    let Some(file) = &args.config else {
        tracing::info!("SIGHUP: no config file to read again (serve --config FILE)");
        return;
    };
    let read = match config::load(args) {
        Ok(read) => read,
        Err(e) => {
            tracing::error!(file = %file.display(), "SIGHUP: {e}; nothing reloaded, the rules in force stay");
            return;
        }
    };
    let auth = Auth::new(&read.tokens, &read.access);
    if auth.required() == state.auth().required() {
        state.replace_auth(auth);
        tracing::info!(
            file = %file.display(),
            tokens = read.tokens.len(),
            scoped = read.access.len(),
            "SIGHUP: access rules reloaded; the next request is checked against them"
        );
    } else {
        let turn = if auth.required() { "on" } else { "off" };
        tracing::warn!(
            file = %file.display(),
            "SIGHUP: the file turns tokens {turn}, which takes a restart; the access rules in force stay"
        );
    }
    let waiting = needs_restart(running, &read);
    if !waiting.is_empty() {
        tracing::warn!(
            file = %file.display(),
            "SIGHUP: restart to apply the file's changes to {}; they are read at start only",
            waiting.join(", ")
        );
    }
}

/// What differs between the settings the server started with and `read`, besides the
/// access rules, by name. Secrets count by value (they never print): a changed one
/// takes a restart too. Calendars and outboxes, which have no equality of their own,
/// are compared as they print (vectors, in name or file order).
fn needs_restart(running: &Settings, read: &Settings) -> Vec<&'static str> {
    let prints_apart = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") != format!("{b:?}");
    let limits = |s: &Settings| {
        (s.request_timeout, s.max_payload_bytes, s.max_batch, s.max_body_bytes, s.max_overdue, s.grace_period)
    };
    let checks: [(&'static str, bool); 12] = [
        ("listen", running.listen != read.listen),
        ("the store (data, store)", running.backend != read.backend),
        ("[redis]", running.redis != read.redis),
        ("queues", running.queues != read.queues || running.strict_queues != read.strict_queues),
        ("queues' actions", running.actions != read.actions),
        ("shards", running.shards != read.shards),
        ("dead_retention", running.dead_retention != read.dead_retention),
        ("calendars", prints_apart(&running.calendars, &read.calendars)),
        ("[[outbox]]", prints_apart(&running.outboxes, &read.outboxes)),
        ("[egress] and [targets]", running.egress != read.egress || running.targets_secret != read.targets_secret),
        ("TLS files", running.tls != read.tls),
        ("limits", limits(running) != limits(read)),
    ];
    checks.into_iter().filter(|(_, changed)| *changed).map(|(name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Queues are kept in a hash map: two reads of one file hold them in another
    /// order, which must not read as a change (it did when they were compared as they
    /// print).
    #[test]
    fn a_file_read_again_unchanged_needs_no_restart_and_a_changed_queue_does() {
        let queues: String = (0..8).map(|n| format!("[queues.\"q{n}\"]\nmax_attempts = {}\n", n + 2)).collect();
        let read = |text: &str| config::settings(&ServeArgs::default(), Some((Path::new("f.toml"), text))).unwrap();
        let running = read(&queues);
        assert_eq!(needs_restart(&running, &read(&queues)), Vec::<&str>::new());
        let changed = queues.replace("max_attempts = 9", "max_attempts = 10");
        assert_eq!(needs_restart(&running, &read(&changed)), ["queues"]);
    }
}
