//! SIGHUP: the server reads its configuration again (`serve --config FILE` with the
//! same flags). What takes effect at once:
//! - the access rules (`tokens`, `[[access]]` with their permissions, queues and
//!   rates), for the next request;
//! - the queues (`[queues."name"]`: task defaults, `group_concurrency`, `group_rate`,
//!   `history_retention`, `dead_retention` and push actions), for the next schedule,
//!   lease, settings and history read and history sweep on this node (a queue whose
//!   `dead_retention` is new or changed has its dead tasks swept at once): a
//!   queue added to the file is declared, one removed no longer is (its tasks stay,
//!   and stored settings it has apply again), and `strict_queues` follows the file. A
//!   push action added, changed or removed starts, replaces or stops its worker; a
//!   worker replaced stops leasing first and its running deliveries get the grace
//!   period (`workers`);
//! - the calendars (`[calendars."name"]`, `holidays_ics` read again): added, changed
//!   and removed ones are served at once, winning over stored calendars of their
//!   names as at start, which are never written or removed (one a config calendar
//!   no longer shadows is served again within a second);
//! - the TLS certificate, for the next connection.
//!
//! Queues and calendars are applied by the call start-up makes
//! ([`AppState::apply_config_file`]), so a reload applies them as a restart would.
//! What the file sets besides is read at start only, and a change to it is named in
//! the log as waiting for a restart ([`needs_restart`]): `listen`, the store, `[redis]`,
//! a queue's `shards`, `[[outbox]]`, `[egress]` and `[targets]`,
//! the TLS files' paths, the limits, `[telemetry]`. Until then what the server started with stays
//! (the settings API shows the `shards` in use).
//!
//! Invariants: a file that no longer validates changes nothing (the rules, queues and
//! calendars in force stay, the error is logged with its line); a reload never turns
//! tokens on or off (a server started open stays open until a restart, and one that
//! needs tokens keeps needing them), since clients and the OpenAPI document were told
//! at start; a SIGHUP never stops the server.

use punctual_core::Store;
use tokio::signal::unix::Signal;
use tokio_util::sync::CancellationToken;

use punctual_core::audit::{AuditAction, AuditEntry};

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
        reload_file(&state, &args, &running).await;
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

async fn reload_file<S: Store>(state: &AppState<S>, args: &ServeArgs, running: &Settings) {
    let Some(file) = &args.config else {
        tracing::info!("SIGHUP: no config file to read again (serve --config FILE)");
        return;
    };
    let read = match config::load(args) {
        Ok(read) => read,
        Err(e) => {
            tracing::error!(file = %file.display(), "SIGHUP: {e}; nothing reloaded, the rules, queues and calendars in force stay");
            return;
        }
    };
    let auth = Auth::new(&read.tokens, &read.access);
    if auth.required() == state.auth().required() {
        state.replace_auth(auth);
        let engine = state.engine();
        let entry = AuditEntry::new(engine.clock().now(), None, AuditAction::AccessReload)
            .detail(serde_json::json!({"tokens": read.tokens.len(), "scoped": read.access.len()}));
        if let Err(e) = engine.record_audit(entry).await {
            tracing::warn!(error = %e, "SIGHUP: the access rules were reloaded, but the audit cannot say so");
        }
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
    // What takes a restart keeps what the server started with: the shards in use are
    // the store's, opened with them.
    let mut applied = read.clone();
    applied.shards.clone_from(&running.shards);
    state.apply_config_file(&applied).await;
    tracing::info!(
        file = %file.display(),
        queues = read.queues.len(),
        actions = read.actions.len(),
        strict_queues = read.strict_queues,
        calendars = read.calendars.len(),
        "SIGHUP: queues and calendars reloaded; the next schedule, lease and settings read take them"
    );
    let waiting = needs_restart(running, &read);
    if !waiting.is_empty() {
        tracing::warn!(
            file = %file.display(),
            "SIGHUP: restart to apply the file's changes to {}; they are read at start only",
            waiting.join(", ")
        );
    }
}

/// What differs between the settings the server started with and `read`, among what
/// a reload does not apply, by name. Secrets count by value (they never print): a
/// changed one takes a restart too. Outboxes, which have no equality of their own,
/// are compared as they print (a vector, in file order).
fn needs_restart(running: &Settings, read: &Settings) -> Vec<&'static str> {
    let prints_apart = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") != format!("{b:?}");
    let limits = |s: &Settings| {
        (s.request_timeout, s.max_payload_bytes, s.max_batch, s.max_body_bytes, s.max_overdue, s.grace_period)
    };
    let checks: [(&'static str, bool); 9] = [
        ("listen", running.listen != read.listen),
        ("the store (data, store)", running.backend != read.backend),
        ("[redis]", running.redis != read.redis),
        ("shards", running.shards != read.shards),
        ("[[outbox]]", prints_apart(&running.outboxes, &read.outboxes)),
        ("[egress] and [targets]", running.egress != read.egress || running.targets_secret != read.targets_secret),
        ("TLS files", running.tls != read.tls),
        ("[telemetry]", running.telemetry != read.telemetry),
        ("limits", limits(running) != limits(read)),
    ];
    checks.into_iter().filter(|(_, changed)| *changed).map(|(name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Queues' shards and retentions are kept in hash maps: two reads of one file hold
    /// them in another order, which must not read as a change (it did when they were
    /// compared as they print). A queue's policies, its retentions, its action and the
    /// calendars are reloaded, so a change to them takes no restart.
    #[test]
    fn a_file_read_again_needs_a_restart_only_for_what_a_reload_does_not_apply() {
        let queues: String = (0..8)
            .map(|n| {
                format!(
                    "[queues.\"q{n}\"]\nmax_attempts = {}\nshards = {}\ndead_retention = \"{}d\"\n",
                    n + 2,
                    n + 1,
                    n + 1
                )
            })
            .collect();
        let read = |text: &str| config::settings(&ServeArgs::default(), Some((Path::new("f.toml"), text))).unwrap();
        let running = read(&queues);
        assert_eq!(needs_restart(&running, &read(&queues)), Vec::<&str>::new());
        let reloaded = format!(
            "strict_queues = true\n{}[queues.\"new\"]\nmax_attempts = 4\nhistory_retention = \"3d\"\n\
             [queues.\"new\".action]\nkind = \"webhook\"\n\
             url = \"https://hooks.example.com/\"\n[calendars.office]\ntz = \"UTC\"\nhours = {{ mon = [\"09:00-17:00\"] }}\n",
            queues
                .replace("max_attempts = 9", "max_attempts = 10")
                .replace("dead_retention = \"3d\"", "dead_retention = \"4d\"")
        );
        assert_eq!(needs_restart(&running, &read(&reloaded)), Vec::<&str>::new());
        let resharded = queues.replace("shards = 8", "shards = 9");
        assert_eq!(needs_restart(&running, &read(&resharded)), ["shards"]);
    }
}
