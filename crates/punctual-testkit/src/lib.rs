//! Test helpers shared by every backend: the store conformance suite (each guarantee of
//! DESIGN.md and each `Store` method's contract) and the proptest model test; a
//! reference model of the cron rules ([`cron_model`]) with its generators
//! ([`cron_gen`]), which `punctual-core`'s tests include by path (the core cannot
//! depend on this crate); the real binary as a server ([`server`]) and the pull loops
//! that load it over HTTP ([`pull`], which `punctual-bench` runs too); the check that
//! a crate's modules import each other without a circle ([`module_graph`]).

pub mod api;
pub mod child;
pub mod conformance;
pub mod cron_gen;
pub mod cron_model;
pub mod databases;
pub mod model;
pub mod module_graph;
pub mod proxy;
pub mod pull;
pub mod redis;
pub mod server;

/// Waits on a real process (a server, `redis-server`) by looking again every 10 ms;
/// the tests of the engine itself wait on signals or paused time instead.
pub use punctual_private_redis::poll_until;

/// For `store_conformance!`'s test names.
#[doc(hidden)]
pub use paste as __paste;

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
