//! The binary's end-to-end tests: each module starts real `punctual` processes (and,
//! where it says so, private `redis-server`s) and checks what only a process shows:
//! crashes, signals, outages, secrets, logs and the CLI itself. Route behaviour is
//! tested once, in process, in the server crate.
//!
//! One test binary, one module per concern: the workspace links it once, not once per
//! file, and tests from different modules run side by side, overlapping their waits
//! on processes. Each test starts its own processes, so none depends on another.
//! Run one module with a filter: `cargo test -p punctual-cli --test end_to_end crash::`.

mod common;

mod access;
mod auth;
mod backup;
mod bad_input;
mod bench_exec;
mod broker_nats;
mod broker_rabbitmq;
mod broker_redis_stream;
mod calendars;
mod cli;
mod cli_targets;
mod cluster_failover;
mod config;
mod config_reload;
mod crash;
mod cron_dst;
mod dead_retention;
mod declared_queues;
mod delivery_policy;
mod disk_full;
mod groups;
mod history;
mod import_keyspace;
mod import_redisson;
mod kill_under_load;
mod migrate;
mod observability;
mod outbox;
mod partition;
mod priorities;
mod push_actions;
mod queue_commands;
mod queue_settings;
mod redis_clock_skew;
mod redis_nodes;
mod redis_outage;
mod redis_reset;
mod redis_tls;
mod routes;
mod secrets;
mod sentinel_failover;
mod server_logs;
mod server_tls;
mod service_manager;
mod shared_rate;
mod sigterm;
mod targets;
mod traces;
mod weekend;
