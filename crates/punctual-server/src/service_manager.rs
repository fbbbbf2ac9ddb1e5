//! Tells a service manager (systemd's `Type=notify`, see packaging/punctual.service)
//! when the server is ready and when it stops. Without `NOTIFY_SOCKET` in the
//! environment, as outside systemd, both do nothing.
//!
//! Invariant: `READY=1` is sent only once the store is open, the engine runs and the
//! listener accepts, so a unit ordered after punctual finds its API answering.

use sd_notify::NotifyState;

/// The server answers requests.
pub(crate) fn ready() {
    notify(&[NotifyState::Ready]);
}

/// The server takes no new connections and finishes those in flight.
pub(crate) fn stopping() {
    notify(&[NotifyState::Stopping]);
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify the service manager (NOTIFY_SOCKET)");
    }
}
