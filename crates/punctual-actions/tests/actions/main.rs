//! The push actions against real receivers on loopback: HTTP servers for webhooks and
//! chat robots, an SMTP conversation for email, the machine's RabbitMQ and NATS (with
//! JetStream), private `redis-server`s for Redis streams, the egress policy, and
//! cancellation of a delivery waiting for its turn.
//!
//! One test binary, one module per concern: linked once, and tests from different
//! modules run side by side. Run one module with a filter:
//! `cargo test -p punctual-actions --test actions webhook::`.

mod common;

mod cancel_while_waiting;
mod chat;
mod egress;
mod email;
mod nats;
mod rabbitmq;
mod redis_stream;
mod webhook;
