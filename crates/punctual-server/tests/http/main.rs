//! The HTTP server in process: every route, error body, limit and header of
//! `../shared/API.md`, the OpenAPI document, metrics, long polls and shutdown, each
//! against a server on a loopback port of its own.
//!
//! One test binary, one module per concern: linked once, and tests from different
//! modules run side by side. Run one module with a filter:
//! `cargo test -p punctual-server --test http leases::`.

mod common;

mod auth;
mod bad_input;
mod calendars;
mod config_file;
mod dashboard;
mod declared_queues;
mod group_rate;
mod leases;
mod long_poll;
mod metrics;
mod observability;
mod openapi;
mod openapi_contract;
mod oversized_heads;
mod queue_settings;
mod refused_bodies;
mod routes;
mod shutdown;
mod tasks;
mod timing;
