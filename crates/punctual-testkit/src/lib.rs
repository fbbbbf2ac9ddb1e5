//! Test helpers shared by every backend: the store conformance suite (each guarantee of
//! DESIGN.md and each `Store` method's contract) and the proptest model test.

pub mod child;
pub mod conformance;
pub mod model;
pub mod redis;
pub mod server;
