//! Test helpers shared by every backend: the store conformance suite (each guarantee of
//! DESIGN.md and each `Store` method's contract) and the proptest model test; a
//! reference model of the cron rules ([`cron_model`]) with its generators
//! ([`cron_gen`]), which `punctual-core`'s tests include by path (the core cannot
//! depend on this crate).

pub mod api;
pub mod child;
pub mod conformance;
pub mod cron_gen;
pub mod cron_model;
pub mod model;
pub mod proxy;
pub mod redis;
pub mod server;

/// Calls `check` until it answers `Some`, at most until `timeout` has passed: the
/// answer, or `None` when time ran out.
///
/// The one place tests wait on a real process (a server, `redis-server`): such a
/// process cannot signal the test, so this looks again every 10 ms. Tests of the engine
/// itself wait on signals or paused time instead.
#[allow(clippy::disallowed_methods, reason = "waiting for a real process takes real time, not a Clock's")]
pub fn poll_until<T>(timeout: std::time::Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sends `signal` (`STOP`, `CONT`, …) to process `pid` with `kill`: freezing and
/// resuming a real server or `redis-server`. Fails the test when it cannot.
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}
